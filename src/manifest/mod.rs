//! Backup manifests (seed 002) and the Velero rules they rest on: what a backup takes
//! (`selection`), how Velero's tarball is laid out (`tarball`), how a restore orders and treats
//! items (`restore_plan`), and the manifest itself with its set view, owner graph, diffs, dry-runs,
//! restore previews and overlaps.
//!
//! Pure: this module uses only `api` and `policy` (no kube client, axum or sqlx), so the
//! gateway, the controllers, the history recorder and the Velero simulator share one reading of
//! Velero's rules — a dry-run or a restore preview agrees with what the backup or restore does.

pub mod build;
pub mod collect;
pub mod diff;
pub mod export;
pub mod fetch;
pub mod graph;
pub mod item;
pub mod overlap;
pub mod preview;
pub mod restore_plan;
pub mod selection;
pub mod tarball;
pub mod visibility;
