//! Shared test harnesses.
#![allow(dead_code)]

pub mod bot;
pub mod context_workload;
pub mod corpus;
pub mod db;
pub mod eval_models;
pub mod fake_discord;
pub mod fake_llm;
pub mod fake_slack;
pub mod pdf_bombs;
pub mod settled;
