//! Session identity and modes: defined in [`crate::domain::session`], re-exported here so the
//! core's callers keep their paths.

pub use crate::domain::session::*;
