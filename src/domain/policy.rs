//! Policies a project or the configuration chooses.

use serde::{Deserialize, Serialize};

/// Who may confirm a proposed change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmPolicy {
    /// Only the person whose message led to the action.
    Requester,
    /// Anyone who is a member of the project (or anyone, when no project is bound).
    AnyMember,
    /// Project members with the editor or owner role.
    Editors,
}
