//! A session's history between the model and the store: the model's messages become stored
//! records ([`crate::domain::message`]) on the way in and model messages again on the way
//! out, so the store never holds a provider's types.

use crate::domain::message::MessageRecord;
use crate::llm::ChatMessage;
use crate::store::{NewMessage, StoredMessage};

/// The history row for `message`: its record, and its token estimate as the model was sent
/// it (pictures included, though they are not stored).
pub fn new_message(
    message: &ChatMessage,
    author: Option<String>,
    event_id: Option<String>,
) -> NewMessage {
    NewMessage {
        message: MessageRecord::from(message),
        tokens: i64::try_from(message.estimated_tokens()).unwrap_or(i64::MAX),
        author,
        event_id,
    }
}

/// A stored message read back for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct PastMessage {
    /// Database id (increasing within a session).
    pub id: i64,
    /// Author of a user message.
    pub author: Option<String>,
    /// The message as the model is sent it.
    pub message: ChatMessage,
    /// Its token estimate, worked out once when it is read.
    pub tokens: usize,
}

impl PastMessage {
    /// A message the running turn wrote, not read back from the store (`id` 0).
    pub fn written(message: ChatMessage) -> Self {
        Self {
            id: 0,
            author: None,
            tokens: message.estimated_tokens(),
            message,
        }
    }
}

impl From<StoredMessage> for PastMessage {
    fn from(m: StoredMessage) -> Self {
        let message: ChatMessage = m.message.into();
        Self {
            id: m.id,
            author: m.author,
            tokens: message.estimated_tokens(),
            message,
        }
    }
}
