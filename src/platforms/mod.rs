//! Platform adapters: translate platform events into core inputs and render core effects.
//! They hold no business rules.

pub mod console;
pub mod discord;
pub mod render;
pub mod replay;
pub mod slack;
pub mod surface;
