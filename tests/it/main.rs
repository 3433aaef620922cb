//! Integration tests, one binary: a module per area, sharing the harnesses in `support`
//! (fake Slack, Discord and model servers; throwaway SQLite and Postgres databases).

mod support;
mod tools_fixture;

mod agent_core;
mod cli;
mod console_agent;
mod context_economy;
mod discord_gateway;
mod discord_http;
mod fuzz;
mod gate;
mod gate_crash;
mod injection;
mod intake;
mod jurisdiction;
mod llm_fixtures;
mod llm_providers;
mod outbound_policy;
mod rag_retrieval;
mod reports;
mod scale;
mod slack_http;
mod slack_payloads;
mod slack_socket;
mod store_pending;
mod store_projects;
mod store_retrieval;
mod store_schema;
mod store_sessions;
mod store_turn_writes;
mod tool_commands;
mod tools_cli;
mod tools_inspection;
mod tools_nec_engine;
mod tools_read;
mod tools_write;
mod workspaces;
