//! The whole system for the manifest suites: the in-process emulator with the demo, the Velero
//! simulator and NAC's controllers, the history recorder and the manifest builder (quick
//! pacing) over a SQLite history, and the gateway over the same history. The including file
//! declares `mod gateway_support` (from `support/gateway.rs`) and `mod support`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use nac::history::SharedHistory;
use nac::history::manifests::ManifestBuilder;
use nac::history::recorder::Recorder;
use nac::manifest::fetch::HttpArtifactFetcher;
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac::sim::velero::options::SimulatorOptions;
use serde_json::Value;

use crate::gateway_support::{self, Answer, Auth};
use crate::support;
use crate::support::nac_stack::{self, Tasks};

pub struct Env {
    pub server: ApiServer,
    pub admin: kube::Client,
    pub router: axum::Router,
    pub alice: String,
    pub bob: String,
    /// A user with no rights anywhere.
    pub nobody: String,
    pub history: SharedHistory,
    _history_dir: tempfile::TempDir,
    _velero: gateway_support::Velero,
    _tasks: Tasks,
}

/// The whole system, with the simulated Velero's options adjusted by `adjust`.
pub async fn env_with(adjust: impl FnOnce(&mut SimulatorOptions)) -> Env {
    let (server, admin) = gateway_support::emulator(EmulatorConfig::default()).await;
    let velero = gateway_support::start_velero_and_controllers_with(&server, &admin, adjust).await;
    let (history, history_dir) = support::sqlite_history().await;
    let controller =
        server.client(&support::sa_token(&admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await);
    let recorder = Recorder::new(
        controller.clone(),
        OADP_NAMESPACE,
        history.clone(),
        nac_stack::quick_recorder_config(),
    );
    let builder = ManifestBuilder::new(
        controller,
        OADP_NAMESPACE,
        history.clone(),
        Arc::new(HttpArtifactFetcher::new(Duration::from_secs(20)).unwrap()),
        nac_stack::quick_manifest_builder_config(),
    );
    let tasks = Tasks(vec![
        tokio::spawn(recorder.run()),
        tokio::spawn(builder.run()),
    ]);
    let router =
        gateway_support::start_gateway(&server, &admin, history.clone(), gateway_support::config())
            .await;
    let tokens = gateway_support::tokens(&server, &admin).await;
    Env {
        server,
        admin,
        router,
        alice: tokens.alice,
        bob: tokens.bob,
        nobody: tokens.nobody,
        history,
        _history_dir: history_dir,
        _velero: velero,
        _tasks: tasks,
    }
}

/// A REST call with a bearer token.
pub async fn call(
    env: &Env,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Answer {
    gateway_support::call(&env.router, method, path, Auth::Bearer(token), body, &[]).await
}

/// A REST GET with a bearer token.
pub async fn get(env: &Env, path: &str, token: &str) -> Answer {
    call(env, Method::GET, path, token, None).await
}

/// Polls `path` as `token` until `done` holds for its answer, for up to `secs` seconds;
/// returns that answer.
pub async fn wait_for_answer(
    env: &Env,
    path: &str,
    token: &str,
    secs: u64,
    done: impl Fn(&Answer) -> bool,
) -> Answer {
    let what = format!("{path} to get there");
    support::cluster::eventually_seen(&what, secs, || async {
        let answer = get(env, path, token).await;
        if done(&answer) {
            Ok(answer)
        } else {
            Err(format!(
                "{path} never got there; last answer {} {}",
                answer.status,
                answer.text()
            ))
        }
    })
    .await
}
