//! `NonAdminSchedule` (`nas`): a tenant's cron schedule of backups, backed by one Velero
//! Schedule; each run shows up as a child NonAdminBackup.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::NonAdminPhase;
use crate::api::common::tolerant_copy_schema;
use crate::api::velero::{BackupPhase, BackupSpec, ScheduleStatus};

/// The schedule a tenant asks for.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "NonAdminSchedule",
    namespaced,
    status = "NonAdminScheduleStatus",
    shortname = "nas",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Request-Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Velero-Phase",
        type_ = "string",
        json_path = ".status.veleroSchedule.status.phase"
    ),
    // A string, not a date: kubectl prints future dates as `<invalid>`; this shows the timestamp.
    printcolumn(name = "Next-Run", type_ = "string", json_path = ".status.nextRun"),
    printcolumn(name = "Paused", type_ = "boolean", json_path = ".spec.paused"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A namespace owner's schedule of periodic backups."
)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminScheduleSpec {
    /// Standard 5-field cron expression saying when to back up.
    pub schedule: String,
    /// Stops future runs while true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Skip the run that is due right away; NAC resets it once handed to Velero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_immediately: Option<bool>,
    /// What each run backs up.
    pub template: NonAdminScheduleTemplate,
}

/// The backup each run of a NonAdminSchedule creates. Metadata is not exposed: NAC owns the
/// Velero Schedule's metadata so generated backups always keep their tenant ownership.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminScheduleTemplate {
    /// The Velero backup spec of every run, validated like a NonAdminBackup's.
    pub backup_spec: BackupSpec,
}

/// What NAC reports about a NonAdminSchedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminScheduleStatus {
    /// The Velero Schedule backing this request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub velero_schedule: Option<RelatedVeleroSchedule>,
    /// Next run, from the cron expression and the Velero Schedule's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run: Option<Time>,
    /// The newest backup the schedule created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_backup: Option<ScheduledBackup>,
    /// Up to five most recent backups, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_backups: Vec<ScheduledBackup>,
    /// One-word summary of the request's lifecycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<NonAdminPhase>,
    /// Detailed conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl NonAdminScheduleStatus {
    /// How many runs `recentBackups` keeps.
    pub const RECENT_BACKUPS_LIMIT: usize = 5;
}

/// Identifies the Velero Schedule of a NonAdminSchedule and mirrors its status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedVeleroSchedule {
    /// Copy of the Velero Schedule's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<ScheduleStatus>>")]
    pub status: Option<ScheduleStatus>,
    /// Value of the Velero Schedule's `openshift.io/oadp-nas-origin-nacuuid` label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nacuuid: Option<String>,
    /// Name of the Velero Schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the Velero Schedule (the OADP namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// One backup created by a schedule run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledBackup {
    /// Name of the child NonAdminBackup.
    pub name: String,
    /// Name of the Velero Backup.
    pub velero_backup_name: String,
    /// Current phase of the Velero Backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<BackupPhase>>")]
    pub phase: Option<BackupPhase>,
    /// When the backup started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When the backup finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    /// When Velero will remove the backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Time>,
}
