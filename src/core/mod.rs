//! The agent core: sessions, the turn loop and the confirmation gate. Platform-independent.

pub mod session;
