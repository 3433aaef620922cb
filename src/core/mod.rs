//! The agent core: sessions, the turn loop and the confirmation gate. Platform-independent:
//! adapters turn platform events into [`agent::Input`] and render [`effects::Effect`]s.
//!
//! Layer: the core, under `platforms`. It may import `tools`, the domain engines (`nec`, `project`,
//! `jurisdiction`, `report`, `rag`), `store`, `llm`, `config` and `domain`, and never a platform.

#![warn(clippy::too_many_lines)]

pub mod activity;
pub mod addressing;
pub mod agent;
pub mod allow;
pub mod assistant;
pub mod audit_log;
pub mod cards;
pub mod commands;
pub mod context;
pub mod edit;
pub mod edit_form;
pub mod effects;
pub mod figures;
pub mod gate;
pub mod history;
pub mod home;
pub mod inbound;
pub mod inflight;
pub mod lease;
pub mod ledger;
pub mod limits;
pub mod mention;
pub mod modes;
pub mod outbox;
mod passages;
pub mod project_form;
pub(crate) mod repeats;
pub mod request;
pub mod runner;
pub mod session;
pub mod starters;
pub mod suggest;
pub mod summary;
pub mod tool_router;
mod turn;
pub mod window;
pub mod write_intent;

// Moved under the core (tool results carry files and the turn's project read; the model's
// view of untrusted text is the model layer's); their core paths stay valid.
pub use crate::llm::untrusted;
pub use crate::tools::{attachment, turn_project};

pub use agent::{Agent, CoreError, Input, InputAction, ModelSettings};
pub use attachment::FileAttachment;
pub use cards::ConfirmationCards;
pub use effects::{Citation, CollectSink, Effect, EffectSink, Outcome};
pub use inbound::{FileIntake, FileRef};
pub use mention::UserRef;
pub use outbox::{OutboundMessage, Outbox};
