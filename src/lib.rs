//! Sparky: an NEC compliance copilot for Slack and Discord teams.
//!
//! Layout: `core` (sessions, turn loop, confirmation gate), `llm` (provider-neutral chat and
//! wire formats), `tools` (registry and tool packs), `nec` (tables and calculations),
//! `store` (Postgres and SQLite), `platforms` (console, Discord, Slack adapters).

pub mod app;
pub mod config;
pub mod core;
pub mod http_policy;
pub mod intake;
pub mod jurisdiction;
pub mod llm;
pub mod nec;
pub mod platforms;
pub mod project;
pub mod rag;
pub mod report;
pub mod serve;
pub mod server;
pub mod server_wait;
pub mod store;
pub mod telemetry;
pub mod tools;
