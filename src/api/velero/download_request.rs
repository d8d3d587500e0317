//! Velero `DownloadRequest`: asks Velero for a pre-signed URL to a backup or restore artifact
//! (logs, results, resource lists, ...).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::{UnknownFields, open_string_enum};

/// What to download.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "DownloadRequest",
    namespaced,
    status = "DownloadRequestStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A request to download an artifact of a backup or restore from object storage."
)]
#[serde(rename_all = "camelCase")]
pub struct DownloadRequestSpec {
    /// The artifact.
    pub target: DownloadTarget,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// A kind of artifact and the backup or restore it belongs to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadTarget {
    /// Kind of artifact.
    pub kind: DownloadTargetKind,
    /// Name of the backup or restore the artifact belongs to.
    pub name: String,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Kinds of downloadable artifacts.
    pub enum DownloadTargetKind {
        /// The backup's log.
        BackupLog = "BackupLog",
        /// The backup tarball.
        BackupContents = "BackupContents",
        /// Native volume snapshots taken by the backup.
        BackupVolumeSnapshots = "BackupVolumeSnapshots",
        /// Asynchronous item operations of the backup.
        BackupItemOperations = "BackupItemOperations",
        /// List of resources in the backup.
        BackupResourceList = "BackupResourceList",
        /// Errors and warnings of the backup.
        BackupResults = "BackupResults",
        /// The restore's log.
        RestoreLog = "RestoreLog",
        /// Errors and warnings of the restore.
        RestoreResults = "RestoreResults",
        /// List of resources the restore restored.
        RestoreResourceList = "RestoreResourceList",
        /// Asynchronous item operations of the restore.
        RestoreItemOperations = "RestoreItemOperations",
        /// CSI VolumeSnapshots of the backup (deprecated by BackupVolumeInfos).
        CsiBackupVolumeSnapshots = "CSIBackupVolumeSnapshots",
        /// CSI VolumeSnapshotContents of the backup (deprecated by BackupVolumeInfos).
        CsiBackupVolumeSnapshotContents = "CSIBackupVolumeSnapshotContents",
        /// How each volume of the backup was backed up.
        BackupVolumeInfos = "BackupVolumeInfos",
        /// How each volume of the restore was restored.
        RestoreVolumeInfo = "RestoreVolumeInfo",
    }
}

impl DownloadTargetKind {
    /// True for artifacts of a restore (whose target name is a restore), false for backups'.
    pub fn is_restore_artifact(&self) -> bool {
        matches!(
            self,
            Self::RestoreLog
                | Self::RestoreResults
                | Self::RestoreResourceList
                | Self::RestoreItemOperations
                | Self::RestoreVolumeInfo
        )
    }
}

open_string_enum! {
    /// Lifecycle phase of a download request.
    pub enum DownloadRequestPhase {
        /// Not processed yet.
        New = "New",
        /// The URL is ready (or the artifact does not exist).
        Processed = "Processed",
    }
}

/// What Velero reports about a download request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadRequestStatus {
    /// Current phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<DownloadRequestPhase>,
    /// Pre-signed URL of the artifact.
    #[serde(rename = "downloadURL", skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// When the request expires and may be deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Time>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_kind_is_classified() {
        assert_eq!(DownloadTargetKind::KNOWN_VALUES.len(), 14);
        let restore_kinds: Vec<_> = DownloadTargetKind::KNOWN_VALUES
            .iter()
            .filter(|kind| DownloadTargetKind::from(**kind).is_restore_artifact())
            .collect();
        assert_eq!(restore_kinds.len(), 5);
        assert!(restore_kinds.iter().all(|kind| kind.starts_with("Restore")));
        assert_eq!(
            DownloadTargetKind::from("CSIBackupVolumeSnapshots"),
            DownloadTargetKind::CsiBackupVolumeSnapshots
        );
    }
}
