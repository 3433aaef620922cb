//! Why a project analysis could not answer: the project lacks a number, names nothing that
//! exists, or holds values the rules refuse. The messages name the equipment and the field,
//! so whoever reads them (a person, the model, a report) knows what to record or fix.

use crate::nec::NecError;

/// An analysis or invariant failure over a project's data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalysisError {
    /// The proposed or recorded values break a rule (out of range, inconsistent).
    #[error("invalid arguments: {0}")]
    Invalid(String),
    /// A named thing (panel, feeder, circuit) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The project lacks data the calculation needs.
    #[error("missing data: {0}")]
    MissingData(String),
    /// The change conflicts with what the project already has (a name or slot taken).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The calculation could not be made (no solution, unreadable table data).
    #[error("{0}")]
    Failed(String),
}

impl From<NecError> for AnalysisError {
    /// The engine's message already names the input; only the kind is decided here.
    fn from(e: NecError) -> Self {
        match e {
            NecError::MissingInput { .. } | NecError::NotVerified { .. } => {
                Self::MissingData(e.to_string())
            }
            NecError::InvalidInput { .. }
            | NecError::NotInTable { .. }
            | NecError::ArcFlashModel(_) => Self::Invalid(e.to_string()),
            NecError::NoSolution { .. } | NecError::Data { .. } => Self::Failed(e.to_string()),
        }
    }
}
