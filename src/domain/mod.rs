//! The vocabulary every layer shares: session keys and sessions, modes, policies, and the
//! records persisted for them.
//!
//! Rule: this folder imports nothing from the crate (only `std`, `serde`, `chrono`); every
//! other module may import it. A type lives here when two layers would otherwise import each
//! other to name it.

pub mod policy;
pub mod session;
pub mod workspace;

pub use policy::ConfirmPolicy;
pub use session::{Mode, Session, SessionKey};
pub use workspace::Workspace;
