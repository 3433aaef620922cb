//! Sparky: an NEC compliance copilot for Slack and Discord teams.
//!
//! Layout: `core` (sessions, turn loop, confirmation gate), `llm` (provider-neutral chat and
//! wire formats), `tools` (registry and tool packs), `nec` (tables and calculations: the
//! workspace crate `sparky-nec` in `crates/sparky-nec/`, re-exported), `store` (Postgres and
//! SQLite), `platforms` (console, Discord, Slack adapters), `domain` (the shared vocabulary:
//! session keys, modes, policies), `services` (whole operations the command line runs).
//!
//! Layers, with arrows one way (each module's doc states its rule; `docs/module-graph.md`,
//! written by `python3 .ci/module-graph`, shows the edges the code has and the cycles left):
//!
//! ```text
//! platforms -> core -> tools -> domain engines (nec, project, jurisdiction, rag, report, intake)
//!                                 and store -> domain
//! ```
//!
//! `app`, `service` (the running `sparky serve`) and `main.rs` are the shell around them;
//! `config`, `telemetry`, `http_policy`, `retry_after`, `json_decode` and `pdf` (reading PDFs within limits) are the foundation any
//! layer may use.

pub mod app;
pub mod config;
pub mod core;
pub mod domain;
pub mod eval;
pub mod http_policy;
pub mod intake;
pub mod json_decode;
pub mod jurisdiction;
pub mod llm;
/// The NEC engine (tables and calculations), the workspace crate `sparky-nec`
/// (`crates/sparky-nec/`), under the name the bot's code has always used.
pub use sparky_nec as nec;
pub mod pdf;
pub mod platforms;
pub mod project;
pub mod rag;
pub mod report;
pub mod retry_after;
pub mod service;
pub mod services;
pub mod store;
pub mod telemetry;
pub mod tools;
