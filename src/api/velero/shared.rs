//! Velero types used by both backups and restores.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::{UnknownFields, open_string_enum};

open_string_enum! {
    /// How Velero treats a failing hook.
    pub enum HookErrorMode {
        /// Log the error and go on with the remaining hooks; the backup or restore ends
        /// PartiallyFailed.
        Continue = "Continue",
        /// Stop running the following hooks; the backup or restore ends PartiallyFailed.
        Fail = "Fail",
    }
}

/// Counters of the hooks Velero ran for a backup or restore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookStatus {
    /// Hooks that were run, whether they succeeded or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks_attempted: Option<i64>,
    /// Hooks that ended with an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks_failed: Option<i64>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}
