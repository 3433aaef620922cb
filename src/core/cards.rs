//! Where each confirmation card is shown: the platform message posted for a pending action,
//! remembered in the store so that whoever resolves the action later (another input, another
//! replica, a restarted process) edits that card instead of posting anew.

use std::sync::Arc;

use super::CoreError;
use crate::store::Store;

/// The platform messages of confirmation cards.
#[derive(Clone)]
pub struct ConfirmationCards {
    store: Arc<dyn Store>,
}

impl ConfirmationCards {
    /// Cards remembered in `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Remembers that the card of `action_id` is the platform message `message_ref`.
    pub async fn remember(&self, action_id: &str, message_ref: &str) -> Result<(), CoreError> {
        self.store
            .set_pending_message_ref(action_id, message_ref)
            .await?;
        Ok(())
    }

    /// The platform message showing the card of `action_id`; `None` when none was
    /// remembered or the store cannot answer (the outcome is then posted as a new message).
    pub async fn shown_in(&self, action_id: &str) -> Option<String> {
        match self.store.pending(action_id).await {
            Ok(Some(a)) => a.message_ref,
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "could not look up a confirmation card");
                None
            }
        }
    }
}
