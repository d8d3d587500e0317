//! Velero's object-store layout: which key each backup and restore artifact lives under.
//!
//! Mirrors Velero 1.18's `pkg/persistence/object_store_layout.go` (and the download-target switch
//! of `object_store.go`'s `GetDownloadURL`) name for name, so a bucket written by the simulator
//! reads like one written by Velero and the other way round.
//!
//! Every `*_key` method returns a key *relative to the location's prefix*, which is what
//! [`super::storage::BackupStore`] takes; [`ObjectLayout::full_key`] gives the key in the
//! bucket, prefix included, exactly as Velero writes it.

use std::collections::BTreeSet;

use crate::api::velero::DownloadTargetKind;

/// Top-level directories Velero accepts under a location's prefix. Anything else there makes
/// Velero report the location unavailable ("Backup store contains invalid top-level
/// directories"), because the prefix is probably shared with something that is not Velero.
pub const VALID_TOP_LEVEL_DIRS: &[&str] = &[
    "backups", "restores", "restic", "metadata", "plugins", "kopia",
];

/// Directory (relative to the prefix) holding one directory per backup.
pub const BACKUPS_DIR: &str = "backups";
/// Directory (relative to the prefix) holding one directory per restore.
pub const RESTORES_DIR: &str = "restores";

/// Why a download target cannot be mapped to a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A kind this version of Velero does not know.
    #[error("unsupported download target kind {0:?}")]
    UnsupportedTargetKind(String),
    /// A backup or restore name that would not stay inside its own directory.
    #[error("invalid backup or restore name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// The keys of Velero's persisted files under one location's prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectLayout {
    /// The location's prefix without leading or trailing slashes; empty for none.
    prefix: String,
}

impl ObjectLayout {
    /// The layout under `prefix`; leading and trailing slashes are dropped as Velero does.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.trim_matches('/').to_owned(),
        }
    }

    /// The prefix without surrounding slashes; empty when the location has none.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key in the bucket of a key relative to the prefix.
    pub fn full_key(&self, relative_key: &str) -> String {
        if self.prefix.is_empty() {
            relative_key.to_owned()
        } else {
            format!("{}/{relative_key}", self.prefix)
        }
    }

    /// The key relative to the prefix of a key in the bucket, or `None` when it lies outside.
    pub fn relative_key<'a>(&self, full_key: &'a str) -> Option<&'a str> {
        if self.prefix.is_empty() {
            return Some(full_key);
        }
        full_key
            .strip_prefix(self.prefix.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
    }

    /// `backups/<backup>/`: everything Velero keeps for one backup.
    pub fn backup_dir(&self, backup: &str) -> String {
        format!("{BACKUPS_DIR}/{backup}/")
    }

    /// `restores/<restore>/`: everything Velero keeps for one restore.
    pub fn restore_dir(&self, restore: &str) -> String {
        format!("{RESTORES_DIR}/{restore}/")
    }

    /// `backups/<b>/velero-backup.json`: the Backup object itself, read by backup sync.
    pub fn backup_metadata_key(&self, backup: &str) -> String {
        format!("{BACKUPS_DIR}/{backup}/velero-backup.json")
    }

    /// `backups/<b>/<b>.tar.gz`: the backed-up Kubernetes objects.
    pub fn backup_contents_key(&self, backup: &str) -> String {
        backup_file(backup, ".tar.gz")
    }

    /// `backups/<b>/<b>-logs.gz`: the gzip'd backup log.
    pub fn backup_log_key(&self, backup: &str) -> String {
        backup_file(backup, "-logs.gz")
    }

    /// `backups/<b>/<b>-results.gz`: the gzip'd warnings and errors of the backup.
    pub fn backup_results_key(&self, backup: &str) -> String {
        backup_file(backup, "-results.gz")
    }

    /// `backups/<b>/<b>-resource-list.json.gz`: `group/version/Kind` → `ns/name` list.
    pub fn backup_resource_list_key(&self, backup: &str) -> String {
        backup_file(backup, "-resource-list.json.gz")
    }

    /// `backups/<b>/<b>-podvolumebackups.json.gz`: the backup's PodVolumeBackups.
    pub fn pod_volume_backups_key(&self, backup: &str) -> String {
        backup_file(backup, "-podvolumebackups.json.gz")
    }

    /// `backups/<b>/<b>-volumesnapshots.json.gz`: native volume snapshots.
    pub fn backup_volume_snapshots_key(&self, backup: &str) -> String {
        backup_file(backup, "-volumesnapshots.json.gz")
    }

    /// `backups/<b>/<b>-itemoperations.json.gz`: asynchronous item operations.
    pub fn backup_item_operations_key(&self, backup: &str) -> String {
        backup_file(backup, "-itemoperations.json.gz")
    }

    /// `backups/<b>/<b>-volumeinfo.json.gz`: how each volume was backed up.
    pub fn backup_volume_info_key(&self, backup: &str) -> String {
        backup_file(backup, "-volumeinfo.json.gz")
    }

    /// `backups/<b>/<b>-csi-volumesnapshots.json.gz`.
    pub fn csi_volume_snapshots_key(&self, backup: &str) -> String {
        backup_file(backup, "-csi-volumesnapshots.json.gz")
    }

    /// `backups/<b>/<b>-csi-volumesnapshotcontents.json.gz`.
    pub fn csi_volume_snapshot_contents_key(&self, backup: &str) -> String {
        backup_file(backup, "-csi-volumesnapshotcontents.json.gz")
    }

    /// `backups/<b>/<b>-csi-volumesnapshotclasses.json.gz`.
    pub fn csi_volume_snapshot_classes_key(&self, backup: &str) -> String {
        backup_file(backup, "-csi-volumesnapshotclasses.json.gz")
    }

    /// `restores/<r>/restore-<r>-logs.gz`: the gzip'd restore log.
    pub fn restore_log_key(&self, restore: &str) -> String {
        format!("{RESTORES_DIR}/{restore}/restore-{restore}-logs.gz")
    }

    /// `restores/<r>/restore-<r>-results.gz`: the gzip'd warnings and errors of the restore.
    pub fn restore_results_key(&self, restore: &str) -> String {
        format!("{RESTORES_DIR}/{restore}/restore-{restore}-results.gz")
    }

    /// `restores/<r>/restore-<r>-resource-list.json.gz`: what the restore restored.
    pub fn restore_resource_list_key(&self, restore: &str) -> String {
        format!("{RESTORES_DIR}/{restore}/restore-{restore}-resource-list.json.gz")
    }

    /// `restores/<r>/restore-<r>-itemoperations.json.gz`.
    pub fn restore_item_operations_key(&self, restore: &str) -> String {
        format!("{RESTORES_DIR}/{restore}/restore-{restore}-itemoperations.json.gz")
    }

    /// `restores/<r>/<r>-volumeinfo.json.gz`: how each volume was restored.
    ///
    /// Unlike the restore's other files this one has no `restore-` in front: that is how
    /// Velero's `getRestoreVolumeInfoKey` names it.
    pub fn restore_volume_info_key(&self, restore: &str) -> String {
        format!("{RESTORES_DIR}/{restore}/{restore}-volumeinfo.json.gz")
    }

    /// The key a DownloadRequest for `kind` of the backup or restore `name` points at.
    ///
    /// Fails for kinds Velero does not know (it answers "unsupported download target kind")
    /// and for names that are not a single path segment, which a DownloadRequest written by a
    /// user could otherwise use to point outside the backup's directory.
    pub fn download_target_key(
        &self,
        kind: &DownloadTargetKind,
        name: &str,
    ) -> Result<String, LayoutError> {
        check_name(name)?;
        let key = match kind {
            DownloadTargetKind::BackupContents => self.backup_contents_key(name),
            DownloadTargetKind::BackupLog => self.backup_log_key(name),
            DownloadTargetKind::BackupVolumeSnapshots => self.backup_volume_snapshots_key(name),
            DownloadTargetKind::BackupItemOperations => self.backup_item_operations_key(name),
            DownloadTargetKind::BackupResourceList => self.backup_resource_list_key(name),
            DownloadTargetKind::BackupResults => self.backup_results_key(name),
            DownloadTargetKind::BackupVolumeInfos => self.backup_volume_info_key(name),
            DownloadTargetKind::CsiBackupVolumeSnapshots => self.csi_volume_snapshots_key(name),
            DownloadTargetKind::CsiBackupVolumeSnapshotContents => {
                self.csi_volume_snapshot_contents_key(name)
            }
            DownloadTargetKind::RestoreLog => self.restore_log_key(name),
            DownloadTargetKind::RestoreResults => self.restore_results_key(name),
            DownloadTargetKind::RestoreResourceList => self.restore_resource_list_key(name),
            DownloadTargetKind::RestoreItemOperations => self.restore_item_operations_key(name),
            DownloadTargetKind::RestoreVolumeInfo => self.restore_volume_info_key(name),
            DownloadTargetKind::Other(other) => {
                return Err(LayoutError::UnsupportedTargetKind(other.clone()));
            }
        };
        Ok(key)
    }

    /// Names of the backups present in a listing of keys relative to the prefix, sorted.
    ///
    /// Like Velero's `ListBackups` (common prefixes under `backups/`), any object under
    /// `backups/<name>/` makes `<name>` a backup; keys elsewhere are ignored.
    pub fn backup_names<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        names_under(BACKUPS_DIR, keys)
    }

    /// Names of the restores present in a listing of keys relative to the prefix, sorted.
    pub fn restore_names<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        names_under(RESTORES_DIR, keys)
    }

    /// Top-level directories in a listing of keys relative to the prefix that Velero would
    /// reject, sorted. Objects directly under the prefix are no directories: Velero only looks
    /// at common prefixes, so it tolerates them and so does this.
    pub fn invalid_top_level_dirs<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a str>,
    ) -> Vec<String> {
        let invalid: BTreeSet<&str> = keys
            .into_iter()
            .filter_map(|key| key.split_once('/').map(|(top, _)| top))
            .filter(|top| !top.is_empty() && !VALID_TOP_LEVEL_DIRS.contains(top))
            .collect();
        invalid.into_iter().map(str::to_owned).collect()
    }
}

/// `backups/<b>/<b><suffix>`: how Velero names every per-backup file but the metadata.
fn backup_file(backup: &str, suffix: &str) -> String {
    format!("{BACKUPS_DIR}/{backup}/{backup}{suffix}")
}

fn names_under<'a>(dir: &str, keys: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let names: BTreeSet<&str> = keys
        .into_iter()
        .filter_map(|key| key.strip_prefix(dir)?.strip_prefix('/'))
        // Only `<name>/<something>` counts: a bare object `backups/<name>` is no directory.
        .filter_map(|rest| rest.split_once('/').map(|(name, _)| name))
        .filter(|name| !name.is_empty())
        .collect();
    names.into_iter().map(str::to_owned).collect()
}

fn check_name(name: &str) -> Result<(), LayoutError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name == "." || name == ".." {
        "it is a relative path component"
    } else if name.contains('/') || name.contains('\\') {
        "it contains a path separator"
    } else if name.chars().any(char::is_control) {
        "it contains a control character"
    } else {
        return Ok(());
    };
    Err(LayoutError::InvalidName {
        name: name.to_owned(),
        reason,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn backup_keys_match_velero() {
        let layout = ObjectLayout::new("");
        let b = "nightly";
        assert_eq!(layout.backup_dir(b), "backups/nightly/");
        assert_eq!(
            layout.backup_metadata_key(b),
            "backups/nightly/velero-backup.json"
        );
        assert_eq!(
            layout.backup_contents_key(b),
            "backups/nightly/nightly.tar.gz"
        );
        assert_eq!(layout.backup_log_key(b), "backups/nightly/nightly-logs.gz");
        assert_eq!(
            layout.backup_results_key(b),
            "backups/nightly/nightly-results.gz"
        );
        assert_eq!(
            layout.backup_resource_list_key(b),
            "backups/nightly/nightly-resource-list.json.gz"
        );
        assert_eq!(
            layout.pod_volume_backups_key(b),
            "backups/nightly/nightly-podvolumebackups.json.gz"
        );
        assert_eq!(
            layout.backup_volume_snapshots_key(b),
            "backups/nightly/nightly-volumesnapshots.json.gz"
        );
        assert_eq!(
            layout.backup_item_operations_key(b),
            "backups/nightly/nightly-itemoperations.json.gz"
        );
        assert_eq!(
            layout.backup_volume_info_key(b),
            "backups/nightly/nightly-volumeinfo.json.gz"
        );
        assert_eq!(
            layout.csi_volume_snapshots_key(b),
            "backups/nightly/nightly-csi-volumesnapshots.json.gz"
        );
        assert_eq!(
            layout.csi_volume_snapshot_contents_key(b),
            "backups/nightly/nightly-csi-volumesnapshotcontents.json.gz"
        );
        assert_eq!(
            layout.csi_volume_snapshot_classes_key(b),
            "backups/nightly/nightly-csi-volumesnapshotclasses.json.gz"
        );
    }

    #[test]
    fn restore_keys_match_velero() {
        let layout = ObjectLayout::new("");
        let r = "nightly-20260101";
        assert_eq!(layout.restore_dir(r), "restores/nightly-20260101/");
        assert_eq!(
            layout.restore_log_key(r),
            "restores/nightly-20260101/restore-nightly-20260101-logs.gz"
        );
        assert_eq!(
            layout.restore_results_key(r),
            "restores/nightly-20260101/restore-nightly-20260101-results.gz"
        );
        assert_eq!(
            layout.restore_resource_list_key(r),
            "restores/nightly-20260101/restore-nightly-20260101-resource-list.json.gz"
        );
        assert_eq!(
            layout.restore_item_operations_key(r),
            "restores/nightly-20260101/restore-nightly-20260101-itemoperations.json.gz"
        );
        assert_eq!(
            layout.restore_volume_info_key(r),
            "restores/nightly-20260101/nightly-20260101-volumeinfo.json.gz"
        );
    }

    #[test]
    fn prefix_is_trimmed_and_applied_only_by_full_key() {
        let layout = ObjectLayout::new("/clusters/prod/");
        assert_eq!(layout.prefix(), "clusters/prod");
        let key = layout.backup_log_key("b");
        assert_eq!(key, "backups/b/b-logs.gz");
        assert_eq!(layout.full_key(&key), "clusters/prod/backups/b/b-logs.gz");
        assert_eq!(
            layout.relative_key("clusters/prod/backups/b/b-logs.gz"),
            Some("backups/b/b-logs.gz")
        );
        assert_eq!(layout.relative_key("clusters/production/backups"), None);
        assert_eq!(layout.relative_key("other/backups/b/b-logs.gz"), None);

        let bare = ObjectLayout::new("");
        assert_eq!(bare.full_key("backups/b/b-logs.gz"), "backups/b/b-logs.gz");
        assert_eq!(bare.relative_key("x/y"), Some("x/y"));
    }

    #[test]
    fn every_download_target_kind_has_a_key() {
        let layout = ObjectLayout::new("p");
        let expected = [
            ("BackupLog", "backups/n/n-logs.gz"),
            ("BackupContents", "backups/n/n.tar.gz"),
            (
                "BackupVolumeSnapshots",
                "backups/n/n-volumesnapshots.json.gz",
            ),
            ("BackupItemOperations", "backups/n/n-itemoperations.json.gz"),
            ("BackupResourceList", "backups/n/n-resource-list.json.gz"),
            ("BackupResults", "backups/n/n-results.gz"),
            ("RestoreLog", "restores/n/restore-n-logs.gz"),
            ("RestoreResults", "restores/n/restore-n-results.gz"),
            (
                "RestoreResourceList",
                "restores/n/restore-n-resource-list.json.gz",
            ),
            (
                "RestoreItemOperations",
                "restores/n/restore-n-itemoperations.json.gz",
            ),
            (
                "CSIBackupVolumeSnapshots",
                "backups/n/n-csi-volumesnapshots.json.gz",
            ),
            (
                "CSIBackupVolumeSnapshotContents",
                "backups/n/n-csi-volumesnapshotcontents.json.gz",
            ),
            ("BackupVolumeInfos", "backups/n/n-volumeinfo.json.gz"),
            ("RestoreVolumeInfo", "restores/n/n-volumeinfo.json.gz"),
        ];
        assert_eq!(expected.len(), DownloadTargetKind::KNOWN_VALUES.len());
        for (kind, key) in expected {
            let kind = DownloadTargetKind::from(kind);
            assert!(kind.is_known(), "{kind:?}");
            assert_eq!(layout.download_target_key(&kind, "n").unwrap(), key);
            // Restore artifacts live under restores/, backup artifacts under backups/.
            assert_eq!(kind.is_restore_artifact(), key.starts_with("restores/"));
        }
    }

    #[test]
    fn download_target_rejects_unknown_kinds_and_escaping_names() {
        let layout = ObjectLayout::new("");
        assert_eq!(
            layout.download_target_key(&DownloadTargetKind::from("BackupSecrets"), "n"),
            Err(LayoutError::UnsupportedTargetKind("BackupSecrets".into()))
        );
        for name in ["", ".", "..", "a/b", "../x", "a\\b", "a\nb"] {
            let result = layout.download_target_key(&DownloadTargetKind::BackupLog, name);
            assert!(
                matches!(result, Err(LayoutError::InvalidName { .. })),
                "{name:?}: {result:?}"
            );
        }
    }

    #[test]
    fn backup_names_come_from_directories_under_backups() {
        let layout = ObjectLayout::new("ignored-for-relative-keys");
        let keys = [
            "backups/b2/velero-backup.json",
            "backups/b1/b1.tar.gz",
            "backups/b1/velero-backup.json",
            "backups/stray-object",
            "backups//empty-name",
            "backupsX/b3/velero-backup.json",
            "restores/r1/restore-r1-logs.gz",
            "metadata/revision",
        ];
        assert_eq!(layout.backup_names(keys), ["b1", "b2"]);
        assert_eq!(layout.restore_names(keys), ["r1"]);
    }

    #[test]
    fn invalid_top_level_dirs_follow_velero() {
        let layout = ObjectLayout::new("");
        let keys = [
            "backups/b/velero-backup.json",
            "restores/r/x",
            "kopia/ns/repo",
            "restic/ns/config",
            "metadata/revision",
            "plugins/x",
            "lost+found/x",
            "README",
        ];
        assert_eq!(layout.invalid_top_level_dirs(keys), ["lost+found"]);
        assert!(layout.invalid_top_level_dirs(["backups/a/b"]).is_empty());
    }
}
