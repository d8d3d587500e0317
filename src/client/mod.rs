//! A client of the gateway's REST API for CI pipelines (`nac backup ...`, `nac restore ...`):
//! where to connect and with which token, the calls, and what a finished backup or restore
//! means as a process exit code.
pub mod http;
pub mod outcome;
pub mod pipeline;

pub use http::{ClientError, GatewayClient};
pub use outcome::{ExitStatus, Outcome};
