//! Label and annotation keys Velero reads and writes (from Velero's `labels_annotations.go`).

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
