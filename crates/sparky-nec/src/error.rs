//! The single error type of the NEC engine.

use serde::Serialize;

/// Why a calculation could not be carried out. Every message names the input or table involved.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NecError {
    /// An input is impossible or outside the range the method supports.
    #[error("invalid {field}: {reason} (got {value})")]
    InvalidInput {
        /// Name of the input field.
        field: &'static str,
        /// The value that was given, as text.
        value: String,
        /// What is required instead.
        reason: String,
    },
    /// An input the calculation needs was not given; the engine does not guess it.
    #[error("missing {field}: {reason}")]
    MissingInput {
        /// Name of the input field.
        field: &'static str,
        /// Why it is needed and where to find it.
        reason: String,
    },
    /// A table has no row or cell for the requested key.
    #[error("{table} has no value for {key}")]
    NotInTable {
        /// The table, e.g. "NEC Table 310.16".
        table: &'static str,
        /// The key that was looked up.
        key: String,
    },
    /// The table cell exists in the published table but is not shipped, because it is not yet
    /// confirmed by two independent public sources (see `data/SOURCES.md`).
    #[error("{table}: no value is available for {key} (the shipped table holds only cells confirmed by two independent published sources; {hint})")]
    NotVerified {
        /// The table.
        table: &'static str,
        /// The key that was looked up.
        key: String,
        /// What the caller can do instead.
        hint: &'static str,
    },
    /// No table entry satisfies the requirements (e.g. no conductor large enough).
    #[error("no {what} satisfies the requirements: {reason}")]
    NoSolution {
        /// What was searched for.
        what: &'static str,
        /// Why nothing qualified.
        reason: String,
    },
    /// Embedded table data could not be parsed (a build defect, caught by the tests).
    #[error("embedded table {file} is malformed at line {line}: {message}")]
    Data {
        /// The CSV file.
        file: &'static str,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The IEEE 1584 model rejected the inputs.
    #[error("IEEE 1584-2018 model: {0}")]
    ArcFlashModel(String),
}

impl NecError {
    /// Shorthand for [`NecError::InvalidInput`].
    pub fn invalid(field: &'static str, value: impl ToString, reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            field,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`NecError::NotInTable`].
    pub fn not_in_table(table: &'static str, key: impl Into<String>) -> Self {
        Self::NotInTable {
            table,
            key: key.into(),
        }
    }
}

/// Accepts a finite number greater than zero.
pub(crate) fn positive(field: &'static str, v: f64) -> Result<f64, NecError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(NecError::invalid(
            field,
            v,
            "must be a finite number greater than 0",
        ))
    }
}

/// Accepts a finite number of zero or more.
pub(crate) fn non_negative(field: &'static str, v: f64) -> Result<f64, NecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(NecError::invalid(
            field,
            v,
            "must be a finite number of 0 or more",
        ))
    }
}

/// Accepts a finite number inside `lo..=hi`.
pub(crate) fn in_range(field: &'static str, v: f64, lo: f64, hi: f64) -> Result<f64, NecError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(v)
    } else {
        Err(NecError::invalid(
            field,
            v,
            format!("must be between {lo} and {hi}"),
        ))
    }
}
