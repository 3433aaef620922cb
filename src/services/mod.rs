//! Services over the store that the command line runs: whole operations (reading a file,
//! checking it, writing a project) that are neither a domain rule nor a platform's concern.
//!
//! Rule: a service may import the domain, the domain engines (`project`, `nec`,
//! `jurisdiction`) and the store; nothing below it imports a service.

pub mod project_files;
