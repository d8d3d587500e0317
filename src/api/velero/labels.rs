//! Label and annotation keys Velero reads and writes (from Velero's `labels_annotations.go`).
//!
//! Also the one rule turning a name into a label value ([`valid_label_value`]), which every
//! place that labels or selects by a name must use so writer and reader agree.

use sha2::{Digest, Sha256};

/// Longest label value Kubernetes accepts (`validation.DNS1035LabelMaxLength`).
pub const MAX_LABEL_VALUE_LENGTH: usize = 63;
/// Hex digits of the SHA-256 that replace the cut tail.
const HASH_DIGITS: usize = 6;

/// Velero's `label.GetValidName` (`pkg/label/label.go`): a value longer than 63 bytes keeps
/// its first 57 bytes followed by the first 6 hex digits of its SHA-256; shorter ones are
/// returned unchanged.
///
/// Velero labels by this (e.g. `velero.io/backup-name` on a DeleteBackupRequest) and selects by
/// it, so NAC must produce the very same value. Go cuts at a byte; a name that is not a DNS
/// name could put a multibyte character across byte 57, so the cut moves back to the previous
/// character boundary (never reached by real object names, which are ASCII).
pub fn valid_label_value(name: &str) -> String {
    if name.len() <= MAX_LABEL_VALUE_LENGTH {
        return name.to_owned();
    }
    let digest = hex::encode(Sha256::digest(name.as_bytes()));
    let mut cut = MAX_LABEL_VALUE_LENGTH - HASH_DIGITS;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{}", &name[..cut], &digest[..HASH_DIGITS])
}

/// Names the backup an object (restore, deletion request, pod volume backup...) belongs to.
pub const BACKUP_NAME: &str = "velero.io/backup-name";
/// UID of the backup an object belongs to.
pub const BACKUP_UID: &str = "velero.io/backup-uid";
/// Names the restore an object belongs to.
pub const RESTORE_NAME: &str = "velero.io/restore-name";
/// UID of the restore an object belongs to.
pub const RESTORE_UID: &str = "velero.io/restore-uid";
/// Names the schedule that created a backup.
pub const SCHEDULE_NAME: &str = "velero.io/schedule-name";
/// Names the BackupStorageLocation a backup is stored in.
pub const STORAGE_LOCATION: &str = "velero.io/storage-location";
/// UID of a pod.
pub const POD_UID: &str = "velero.io/pod-uid";
/// UID of a PersistentVolumeClaim.
pub const PVC_UID: &str = "velero.io/pvc-uid";
/// `<namespace>/<name>` of a PersistentVolumeClaim.
pub const PVC_NAMESPACE_NAME: &str = "velero.io/pvc-namespace-name";
/// Per-backup/restore timeout for pod volume operations.
pub const POD_VOLUME_OPERATION_TIMEOUT_ANNOTATION: &str = "velero.io/pod-volume-timeout";
/// Namespace a backup repository stores data for.
pub const VOLUME_NAMESPACE: &str = "velero.io/volume-namespace";
/// Type of a backup repository.
pub const REPOSITORY_TYPE: &str = "velero.io/repository-type";
/// Names the DataUpload a data mover pod serves.
pub const DATA_UPLOAD: &str = "velero.io/data-upload";
/// Names the DataDownload a data mover pod serves.
pub const DATA_DOWNLOAD: &str = "velero.io/data-download";
/// Names the PodVolumeBackup a pod serves.
pub const POD_VOLUME_BACKUP: &str = "velero.io/pod-volume-backup";
/// Names the PodVolumeRestore a pod serves.
pub const POD_VOLUME_RESTORE: &str = "velero.io/pod-volume-restore";
/// ID of an asynchronous plugin operation.
pub const ASYNC_OPERATION_ID: &str = "velero.io/async-operation-id";
/// Explains what Velero uses a resource for.
pub const RESOURCE_USAGE: &str = "velero.io/resource-usage";
/// Global resource timeout handed to plugins.
pub const RESOURCE_TIMEOUT_ANNOTATION: &str = "velero.io/resource-timeout";
/// Kubernetes git version of the cluster a backup was taken from.
pub const SOURCE_CLUSTER_K8S_GIT_VERSION_ANNOTATION: &str =
    "velero.io/source-cluster-k8s-gitversion";
/// Kubernetes major version of the cluster a backup was taken from.
pub const SOURCE_CLUSTER_K8S_MAJOR_VERSION_ANNOTATION: &str =
    "velero.io/source-cluster-k8s-major-version";
/// Kubernetes minor version of the cluster a backup was taken from.
pub const SOURCE_CLUSTER_K8S_MINOR_VERSION_ANNOTATION: &str =
    "velero.io/source-cluster-k8s-minor-version";
/// Pod annotation listing volumes to back up with file-system backup.
pub const VOLUMES_TO_BACKUP_ANNOTATION: &str = "backup.velero.io/backup-volumes";
/// Pod annotation listing volumes to leave out of file-system backup.
pub const VOLUMES_TO_EXCLUDE_ANNOTATION: &str = "backup.velero.io/backup-volumes-excludes";
/// Label that keeps an object out of every backup.
pub const EXCLUDE_FROM_BACKUP: &str = "velero.io/exclude-from-backup";
/// Annotation plugins set to skip an object.
pub const SKIP_FROM_BACKUP_ANNOTATION: &str = "velero.io/skip-from-backup";
/// Default label key grouping PVCs into a volume group snapshot.
pub const DEFAULT_VOLUME_GROUP_SNAPSHOT_LABEL_KEY: &str = "velero.io/volume-group";
/// Forces additional items returned by plugins into the backup.
pub const MUST_INCLUDE_ADDITIONAL_ITEMS_ANNOTATION: &str =
    "backup.velero.io/must-include-additional-items";
/// Marks a dynamically provisioned PV restored by Velero.
pub const DYNAMIC_PV_RESTORE: &str = "velero.io/dynamic-pv-restore";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_up_to_63_bytes_are_unchanged() {
        assert_eq!(valid_label_value(""), "");
        assert_eq!(valid_label_value("short label value"), "short label value");
        let exactly = "a".repeat(63);
        assert_eq!(valid_label_value(&exactly), exactly);
    }

    #[test]
    fn longer_values_are_cut_to_57_bytes_and_a_hash() {
        for len in [64, 78, 253] {
            let long = "b".repeat(len);
            let value = valid_label_value(&long);
            assert_eq!(value.len(), 63);
            assert_eq!(&value[..57], &long[..57]);
            let digest = hex::encode(Sha256::digest(long.as_bytes()));
            assert_eq!(&value[57..], &digest[..6]);
        }
        // Same prefix, different tails: different values.
        let a = format!("{}-20260101000000", "x".repeat(60));
        let b = format!("{}-20260101000001", "x".repeat(60));
        assert_ne!(valid_label_value(&a), valid_label_value(&b));
    }

    #[test]
    fn matches_velero_own_example() {
        // pkg/label/label_test.go, TestGetValidLabelName.
        assert_eq!(
            valid_label_value(
                "this_is_a_very_long_label_value_that_will_be_rejected_by_Kubernetes"
            ),
            "this_is_a_very_long_label_value_that_will_be_rejected_by_8d0722"
        );
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        // 56 ASCII bytes, then a 3-byte character spanning bytes 56..59.
        let name = format!("{}€{}", "a".repeat(56), "z".repeat(20));
        let value = valid_label_value(&name);
        assert!(value.len() <= 63);
        assert!(value.starts_with(&"a".repeat(56)));
        assert!(!value.contains('€'));
        let all_wide = "é".repeat(40);
        assert!(valid_label_value(&all_wide).len() <= 63);
    }
}
