//! Kubernetes API emulator: the real Kubernetes REST wire protocol served by an axum `Router`,
//! usable in-process (`ApiServer::client`) or on a port over HTTPS for `kubectl` and `nac demo`.
pub mod audit;
pub mod discovery;
pub mod errors;
pub mod faults;
pub mod kubeconfig;
pub mod managed_fields;
pub mod openapi;
pub mod openapi_v2;
pub mod patch;
pub mod persist;
pub mod projects;
pub mod protobuf;
pub mod rbac;
pub mod registry;
pub mod request;
pub mod reviews;
pub mod schema;
pub mod selectors;
pub mod server;
pub mod state;
pub mod store;
pub mod table;
pub mod tls;
pub mod validation;
pub mod watch;

pub use server::{ApiServer, EmulatorConfig, EmulatorError};
