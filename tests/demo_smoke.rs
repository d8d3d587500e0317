//! What a newcomer does first: `nac demo` with no arguments (its data in the user's data
//! directory), then `kubectl --kubeconfig <data>/kubeconfig-admin -n openshift-adp create -f` a
//! Velero Backup, which runs to Completed; Ctrl-C stops the demo and a second start resumes the
//! same state. Drives the real binary and the real kubectl.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/demo.rs"]
mod demo;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kubectl_available() -> bool {
    let found = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "SKIPPED: kubectl not found on PATH (install kubectl to run the demo smoke test)"
        );
    }
    found
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let mut cmd = Command::new("kubectl");
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=20s")
        .args(args);
    cmd.env(
        "KUBECACHEDIR",
        kubeconfig.parent().unwrap().join("kube-cache"),
    );
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A GET with a bearer token over a plain TCP socket: (status, body).
fn gateway_get(address: &str, path: &str, token: &str) -> (u16, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Waits until team-a's history (through the gateway) lists the completed operation `name`.
fn wait_history_shows(address: &str, token: &str, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = gateway_get(
            address,
            "/api/v1/namespaces/team-a/history?kind=backup&phase=Completed",
            token,
        );
        if status == 200 && body.contains(&format!("\"{name}\"")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "history never showed {name} Completed: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn nac_migrate_applies_the_schema_once_and_explains_bad_urls() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("h.db").display());
    for _ in 0..2 {
        let out = Command::new(env!("CARGO_BIN_EXE_nac"))
            .args(["migrate", "--database-url", &url])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("migrated"));
    }
    assert!(dir.path().join("h.db").exists());
    // The URL may also come from the environment; a bad one is named without its password.
    let out = Command::new(env!("CARGO_BIN_EXE_nac"))
        .arg("migrate")
        .env("NAC_DATABASE_URL", "mysql://nac:s3cret@db/nac")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("unsupported database URL"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

fn wait_phase(kubeconfig: &Path, name: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        let (_, out) = kubectl(
            kubeconfig,
            &[
                "-n",
                "openshift-adp",
                "get",
                "backup.velero.io",
                name,
                "-o",
                "jsonpath={.status.phase}",
            ],
            None,
        );
        if out.trim() == want {
            return;
        }
        last = out;
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("backup {name} did not reach {want}; last: {last}");
}

#[test]
fn newcomer_demo_backup_runs_to_completed_and_state_survives_a_restart() {
    if !kubectl_available() {
        return;
    }
    let xdg = tempfile::tempdir().unwrap();
    let data = xdg.path().join("nac").join("demo");
    let demo = demo::start(xdg.path(), &[]);
    let banner = demo.banner.clone();
    let admin = data.join("kubeconfig-admin");
    for user in ["admin", "alice", "bob", "ci-bot"] {
        assert!(
            data.join(format!("kubeconfig-{user}")).exists(),
            "kubeconfig-{user} in {}: {banner}",
            data.display()
        );
    }
    let backup = "apiVersion: velero.io/v1\nkind: Backup\nmetadata:\n  name: smoke\nspec:\n  includedNamespaces: [team-a]\n";
    let (ok, out) = kubectl(
        &admin,
        &["-n", "openshift-adp", "create", "-f", "-"],
        Some(backup),
    );
    assert!(ok, "{out}");
    wait_phase(&admin, "smoke", "Completed");
    // The CI bot may create NonAdminBackups in team-a and nothing in team-b.
    let ci = data.join("kubeconfig-ci-bot");
    let (yes, _) = kubectl(
        &ci,
        &["auth", "can-i", "create", "nonadminbackups", "-n", "team-a"],
        None,
    );
    let (no, _) = kubectl(
        &ci,
        &["auth", "can-i", "create", "nonadminbackups", "-n", "team-b"],
        None,
    );
    assert!(yes && !no);

    // A tenant's NonAdminBackup goes through NAC's controllers to a completed Velero backup.
    let alice = data.join("kubeconfig-alice");
    let nab = "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: mine\nspec:\n  backupSpec: {}\n";
    let (ok, out) = kubectl(&alice, &["apply", "-f", "-"], Some(nab));
    assert!(ok, "{out}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, out) = kubectl(
            &alice,
            &[
                "get",
                "nab",
                "mine",
                "-o",
                "jsonpath={.status.phase}/{.status.veleroBackup.status.phase}",
            ],
            None,
        );
        if out.trim() == "Created/Completed" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "NonAdminBackup did not complete: {out}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let (ok, out) = kubectl(&alice, &["get", "nab"], None);
    assert!(
        ok && out.contains("REQUEST-PHASE") && out.contains("Created") && out.contains("Completed"),
        "{out}"
    );
    // The demo's gateway answers alice's token with her backup, and refuses team-b.
    let (gateway, token) = demo::gateway_and_token(&banner, "alice");
    let (status, body) = gateway_get(&gateway, "/api/v1/namespaces/team-a/backups", &token);
    assert!(
        status == 200 && body.contains("\"mine\""),
        "{status} {body}"
    );
    let (status, _) = gateway_get(&gateway, "/api/v1/namespaces/team-b/backups", &token);
    assert_eq!(status, 403);
    // The embedded history store (SQLite in the data directory) recorded the run; team-b's
    // history is refused.
    assert!(
        data.join("history.db").exists(),
        "history.db in {}",
        data.display()
    );
    wait_history_shows(&gateway, &token, "mine");
    let (status, _) = gateway_get(&gateway, "/api/v1/namespaces/team-b/history", &token);
    assert_eq!(status, 403);
    // bob sees nothing of team-a.
    let bob = data.join("kubeconfig-bob");
    let (ok, out) = kubectl(&bob, &["get", "nab", "-n", "team-a"], None);
    assert!(!ok && out.contains("forbidden"), "{out}");

    // Ctrl-C, then a second start resumes the same state.
    let mut demo = demo;
    let pid = demo.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    let exit = loop {
        if let Some(status) = demo.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "demo did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(exit.success(), "clean shutdown: {exit:?}");
    drop(demo);
    let demo = demo::start(xdg.path(), &[]);
    wait_phase(&admin, "smoke", "Completed");
    // The history outlives the process.
    let (gateway, token) = demo::gateway_and_token(&demo.banner, "alice");
    wait_history_shows(&gateway, &token, "mine");
    let (ok, out) = kubectl(
        &admin,
        &[
            "-n",
            "openshift-adp",
            "get",
            "bsl",
            "default",
            "-o",
            "jsonpath={.spec.default}",
        ],
        None,
    );
    assert!(ok && out.trim() == "true", "{out}");
}
