//! NAC: self-service Velero backups for namespace owners — the library behind the `nac` binary.
#![forbid(unsafe_code)]

pub mod api;
pub mod cli;
pub mod client;
pub mod controllers;
pub mod gateway;
pub mod history;
pub mod manifest;
pub mod policy;
pub mod queue;
pub mod shutdown;
pub mod sim;
