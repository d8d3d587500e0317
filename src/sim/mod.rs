//! Simulators for machines without a cluster: the Kubernetes API emulator and the demo seeding.
//! No production path imports this module; only the `demo`/`sim` commands and tests wire it in.
pub mod apiserver;
pub mod deletion_receiver;
pub mod demo;
pub mod velero;
