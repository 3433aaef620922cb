//! The vocabulary every layer shares: session keys and sessions, modes, policies, and the
//! records persisted for them (conversation messages in their own versioned format).
//!
//! Rule: this folder imports nothing from the crate (only `std`, `serde`, `serde_json`,
//! `chrono`); every other module may import it. A type lives here when two layers would otherwise import each
//! other to name it.

pub mod digest;
pub mod message;
pub mod policy;
pub mod session;
pub mod workspace;

pub use message::{MessageRecord, ToolCallRecord, ToolResultRecord, MESSAGE_FORMAT};
pub use policy::ConfirmPolicy;
pub use session::{Mode, Session, SessionKey};
pub use workspace::Workspace;
