//! Velero `Schedule`: creates a Backup from a template on a cron schedule.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::backup::BackupSpec;
use crate::api::common::{UnknownFields, open_string_enum};

/// When to back up and what each backup looks like.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Schedule",
    namespaced,
    status = "ScheduleStatus",
    shortname = "sched",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.phase",
        description = "Status of the schedule"
    ),
    printcolumn(
        name = "Schedule",
        type_ = "string",
        json_path = ".spec.schedule",
        description = "A Cron expression defining when to run the Backup"
    ),
    printcolumn(
        name = "LastBackup",
        type_ = "date",
        json_path = ".status.lastBackup",
        description = "The last time a Backup was run for this schedule"
    ),
    printcolumn(
        name = "LastSkipped",
        type_ = "date",
        json_path = ".status.lastSkipped",
        description = "The last time a Backup was skipped for this schedule"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(name = "Paused", type_ = "boolean", json_path = ".spec.paused"),
    doc = "A Velero schedule of periodic backups."
)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    /// The spec of every backup the schedule creates.
    pub template: BackupSpec,
    /// Cron expression saying when to back up.
    pub schedule: String,
    /// Whether created backups get an owner reference to the schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_owner_references_in_backup: Option<bool>,
    /// Whether the schedule is paused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Skip a run that is due right away (new or unpaused schedule); unset follows the
    /// server's setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_immediately: Option<bool>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Lifecycle phase of a schedule.
    pub enum SchedulePhase {
        /// Not processed yet.
        New = "New",
        /// Valid and creating backups.
        Enabled = "Enabled",
        /// Rejected by validation; creates no backups.
        FailedValidation = "FailedValidation",
    }
}

/// What Velero reports about a schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    /// Current phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<SchedulePhase>,
    /// When the schedule last created a backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_backup: Option<Time>,
    /// When the schedule last skipped a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_skipped: Option<Time>,
    /// Why validation failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}
