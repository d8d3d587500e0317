//! Velero 1.18 simulator: plays Velero against any API server with Velero's CRDs, really
//! writing backups to object storage and restoring from them.
pub mod backup_run;
pub mod clock;
pub mod cluster;
pub mod context;
pub mod engine;
pub mod failures;
pub mod layout;
pub mod operations;
pub mod options;
pub mod queue;
pub mod restore_run;
pub mod signed_url;
pub mod storage;
pub mod validation;
