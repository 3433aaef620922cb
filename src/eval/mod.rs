//! `sparky eval answers`: a conversation set run through the real agent against the
//! configured model, each turn graded against what a right answer must contain
//! (docs/eval.md).
//!
//! Layer: the shell, beside `app`. It builds an agent the way `app` does, on a temporary
//! store, and reads the core's effects as any front end would.
//!
//! One job per file: [`set`] loads the conversations, [`observe`] records the model's calls,
//! [`run`] drives the agent, [`grade`] judges a turn, [`report`] sums up.

pub mod grade;
pub mod observe;
pub mod report;
pub mod run;
pub mod set;

pub use report::Report;
pub use run::{run, run_with, RunError, ToolMode};
pub use set::ConversationSet;
