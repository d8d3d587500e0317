//! A `nac` command run as its own process (as a pod runs it), and kubeconfigs for it on either
//! server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nac::sim::demo::OADP_NAMESPACE;

use crate::support::cluster::TestCluster;

/// A running `nac` process: killed when dropped; its stderr (the log) kept in a file.
pub struct Nac {
    child: Child,
    log: PathBuf,
    name: String,
}

impl Nac {
    pub fn start(name: &str, dir: &Path, args: &[&str], env: &[(&str, String)]) -> Nac {
        let log = dir.join(format!("{name}.log"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_nac"));
        command
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("NAC_SHUTDOWN_GRACE_PERIOD")
            .env("NAC_LOG", "info,nac=info")
            .env(
                "NAC_DATABASE_URL",
                nac::history::sqlite_url_for(&dir.join(format!("{name}.db"))),
            )
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        for (key, value) in env {
            command.env(key, value);
        }
        Nac {
            child: command.spawn().unwrap(),
            log,
            name: name.to_string(),
        }
    }

    /// The first line of standard output (the command's "running" line); standard output is
    /// drained afterwards.
    pub fn first_line(&mut self) -> String {
        self.first_lines(1).remove(0)
    }

    /// The first `n` lines of standard output; standard output is drained afterwards.
    pub fn first_lines(&mut self, n: usize) -> Vec<String> {
        let stdout = self.child.stdout.take().unwrap();
        let mut reader = BufReader::new(stdout);
        let lines = (0..n)
            .map(|_| {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                line
            })
            .collect();
        std::thread::spawn(move || for _ in reader.lines() {});
        lines
    }

    /// The process id (for figures read from `/proc/<pid>`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, as a node failure or the OOM killer ends a pod: no handler runs, nothing is
    /// released; returns once the process is gone.
    pub fn sigkill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM {}", self.child.id());
    }

    /// Waits up to `limit` for the process to exit; its exit code and how long that took.
    pub async fn exited(&mut self, limit: Duration) -> (Option<i32>, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status.code(), start.elapsed());
            }
            assert!(
                start.elapsed() < limit,
                "{} did not exit within {limit:?}; its log:\n{}",
                self.name,
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Nac {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A controller replica and the address of its `/healthz`, `/readyz` and `/metrics`.
pub fn controller_replica(dir: &Path, kubeconfig: &Path, identity: &str) -> (Nac, String) {
    controller_replica_with(dir, kubeconfig, identity, &[])
}

/// [`controller_replica`] with `extra` arguments (a `--database-url`, say).
pub fn controller_replica_with(
    dir: &Path,
    kubeconfig: &Path,
    identity: &str,
    extra: &[&str],
) -> (Nac, String) {
    let mut args = vec![
        "controller",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--oadp-namespace",
        OADP_NAMESPACE,
        "--shutdown-grace-period",
        "10s",
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    let mut nac = Nac::start(identity, dir, &args, &[("POD_NAME", identity.to_string())]);
    let lines = nac.first_lines(2);
    assert!(lines[1].contains("nac controller running"), "{lines:?}");
    let health = lines[0]
        .split_whitespace()
        .find_map(|word| word.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("no health address in {lines:?}"))
        .to_string();
    (nac, health)
}

/// A `nac gateway` process as the gateway's service account (plus `extra` arguments),
/// listening on a free loopback port; its address once `/readyz` answers 200 (its caches
/// are synced). Its kubeconfig's server task, if any (the emulator's socket), is returned too.
pub async fn gateway_process(
    cluster: &TestCluster,
    dir: &Path,
    extra: &[&str],
) -> (Nac, String, Option<tokio::task::JoinHandle<()>>) {
    let token = cluster
        .sa_token(OADP_NAMESPACE, nac::sim::demo::GATEWAY_SERVICE_ACCOUNT)
        .await;
    let (config, serving) = kubeconfig(cluster, dir, "gateway", &token).await;
    let (gateway, addr) = gateway_with_kubeconfig(dir, &config, "gateway", extra).await;
    (gateway, addr, serving)
}

/// A `nac gateway` process named `name` (its log is `<name>.log`) with the given kubeconfig
/// (plus `extra` arguments), listening on a free loopback port; its address once `/readyz`
/// answers 200.
pub async fn gateway_with_kubeconfig(
    dir: &Path,
    config: &Path,
    name: &str,
    extra: &[&str],
) -> (Nac, String) {
    let mut args = vec![
        "gateway",
        "--kubeconfig",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--oadp-namespace",
        OADP_NAMESPACE,
    ];
    args.extend_from_slice(extra);
    let mut gateway = Nac::start(name, dir, &args, &[]);
    let line = gateway.first_line();
    let addr = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    crate::support::cluster::eventually("the gateway to be ready", 30, || async {
        let (status, _) = crate::support::http_get(&format!("http://{addr}/readyz")).await;
        (status == 200).then_some(())
    })
    .await;
    (gateway, addr)
}

/// A kubeconfig for the controller's service account (as its pod has), and two replica
/// identities named after `role_a` and `role_b`, unique in the test binary.
pub async fn controller_kubeconfig(
    cluster: &TestCluster,
    dir: &Path,
    (role_a, role_b): (&str, &str),
) -> (PathBuf, Option<tokio::task::JoinHandle<()>>, String, String) {
    let token = cluster
        .sa_token(OADP_NAMESPACE, nac::sim::demo::CONTROLLER_SERVICE_ACCOUNT)
        .await;
    let (config, serving) = kubeconfig(cluster, dir, "controller", &token).await;
    let suffix = cluster.unique_name("x", None);
    (
        config,
        serving,
        format!("{role_a}-{suffix}"),
        format!("{role_b}-{suffix}"),
    )
}

/// A kubeconfig for `token` on the case's server: the real server's own, or the emulator
/// served on a loopback socket by this test (the task serving it is returned, to keep).
pub async fn kubeconfig(
    cluster: &TestCluster,
    dir: &Path,
    name: &str,
    token: &str,
) -> (PathBuf, Option<tokio::task::JoinHandle<()>>) {
    if let Some(path) = cluster.kubeconfig(name, token) {
        return (path, None);
    }
    let router = cluster.emulator_server().unwrap().router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let path = dir.join(format!("kubeconfig-{name}"));
    let text = nac::sim::apiserver::kubeconfig::render(&url, None, name, token, OADP_NAMESPACE);
    std::fs::write(&path, text).unwrap();
    (path, Some(task))
}

/// Stops each process with SIGTERM and asserts it exits 0 within 30 s (its log otherwise).
pub async fn stop_cleanly(processes: &mut [(&mut Nac, &str)]) {
    for (process, name) in processes.iter_mut() {
        process.sigterm();
        let (code, _) = process.exited(Duration::from_secs(30)).await;
        assert_eq!(code, Some(0), "the {name}'s log:\n{}", process.log_text());
    }
}

/// A `nac controller` as the controller's service account and a `nac gateway` reading the
/// history it writes (one SQLite file), both in `dir`: the controller, the gateway and the
/// gateway's address.
pub async fn controller_and_gateway(cluster: &TestCluster, dir: &Path) -> (Nac, Nac, String) {
    let (config, _, name, _) = controller_kubeconfig(cluster, dir, ("controller", "unused")).await;
    let (controller, _) = controller_replica(dir, &config, &name);
    let history = nac::history::sqlite_url_for(&dir.join(format!("{name}.db")));
    let (gateway, addr, _) = gateway_process(cluster, dir, &["--database-url", &history]).await;
    (controller, gateway, addr)
}
