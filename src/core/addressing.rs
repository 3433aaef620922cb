//! Whether a message is for Sparky: the one rule every platform follows.
//!
//! * A direct message always is.
//! * A message that mentions Sparky always is (in a channel or in a thread).
//! * A reply in a thread without a mention is when the thread already is a conversation with
//!   Sparky: Sparky started the thread, or the thread has a session with history. Threads
//!   between people that merely happen to be in an enabled channel are left alone, and
//!   looking them up creates nothing.
//! * A top-level channel message without a mention is only when the platform is set not to
//!   require mentions (Discord's `require_mention = false`; Slack sends top-level messages
//!   only as mentions).
//!
//! Adapters say where a message arrived and whether it mentions the bot; the core decides.

use super::session::SessionKey;
use super::Agent;
use crate::store::Store;

/// Where a message arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A direct message to the bot.
    Direct,
    /// A top-level message in a channel; `mention_required` is the platform's setting.
    Channel {
        /// Whether top-level messages need a mention.
        mention_required: bool,
    },
    /// A reply in a thread.
    Thread {
        /// Whether Sparky started the thread (its own threads are its conversations).
        started_by_sparky: bool,
    },
}

impl Agent {
    /// Whether the message at `place` in the thread `key` belongs to a conversation with
    /// Sparky ([`belongs`] on the agent's store).
    pub async fn belongs(&self, key: &SessionKey, place: Place, mentioned: bool) -> bool {
        belongs(self.store.as_ref(), key, place, mentioned).await
    }
}

/// Whether the message at `place` in the thread `key` belongs to a conversation with Sparky.
/// A store that cannot answer means "no" for unmentioned thread replies (staying quiet is the
/// safe side) and is logged.
pub async fn belongs(store: &dyn Store, key: &SessionKey, place: Place, mentioned: bool) -> bool {
    if mentioned {
        return true;
    }
    match place {
        Place::Direct => true,
        Place::Channel { mention_required } => !mention_required,
        Place::Thread { started_by_sparky } => {
            if started_by_sparky {
                return true;
            }
            match store.thread_has_history(key).await {
                Ok(has) => has,
                Err(e) => {
                    tracing::warn!(error = %e, "could not look up the thread's conversation");
                    false
                }
            }
        }
    }
}
