//! The agent core: sessions, the turn loop and the confirmation gate. Platform-independent:
//! adapters turn platform events into [`agent::Input`] and render [`effects::Effect`]s.

pub mod agent;
pub mod attachment;
pub mod commands;
pub mod context;
pub mod effects;
pub mod gate;
pub mod lease;
pub mod limits;
pub mod mention;
pub mod modes;
pub mod request;
pub mod runner;
pub mod session;
pub mod turn_project;
pub mod untrusted;
pub mod window;

pub use agent::{Agent, CoreError, Input, InputAction};
pub use attachment::FileAttachment;
pub use effects::{Citation, CollectSink, Effect, EffectSink, Outcome};
pub use mention::UserRef;
