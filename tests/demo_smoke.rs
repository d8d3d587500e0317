//! What a newcomer does first: `nac demo` with no arguments (its data in the user's data
//! directory), then `kubectl --kubeconfig <data>/kubeconfig-admin -n openshift-adp create -f` a
//! Velero Backup, which runs to Completed; Ctrl-C stops the demo and a second start resumes the
//! same state. Drives the real binary and the real kubectl.
//!
//! Issue 8 in the demo: completed backups get a manifest, the sample backups' diff shows the
//! change between them, backup and restore dry-runs answer, and permanently deleting a
//! NonAdminBackup calls the demo's DeletionAction receiver (after a restart, so on the port it
//! was re-registered with) with that backup's items and records the action on the NAB.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/demo.rs"]
mod demo;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

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
    gateway_request(address, "GET", path, token, None)
}

/// The raw HTTP/1.1 request `method path` with a bearer token (and a JSON body).
fn request_text(method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> String {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    format!("{head}\r\n{body}")
}

/// (status, body) of a raw HTTP/1.1 response read to its end.
fn parse_response(raw: &[u8]) -> (u16, String) {
    let raw = String::from_utf8_lossy(raw);
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

/// A request to the gateway over a plain TCP socket: (status, body).
fn gateway_request(
    address: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .write_all(request_text(method, path, Some(token), body).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

/// A GET over HTTPS to `base` (`https://127.0.0.1:PORT`), verified by the PEM CA in `ca_file`:
/// (status, body).
fn https_get(base: &str, path: &str, ca_file: &Path, token: Option<&str>) -> (u16, String) {
    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    let address = base.strip_prefix("https://").unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let host = address.rsplit_once(':').unwrap().0.to_string();
    let connection =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from(host).unwrap())
            .unwrap();
    let socket = std::net::TcpStream::connect(address).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, socket);
    tls.write_all(request_text("GET", path, token, None).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    // A server may close without TLS close_notify once the response is complete.
    if let Err(e) = tls.read_to_end(&mut raw) {
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
    }
    parse_response(&raw)
}

/// Polls a gateway GET until it answers 200; returns the body as JSON.
fn wait_gateway_json(address: &str, path: &str, token: &str, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (status, body) = gateway_get(address, path, token);
        if status == 200 {
            return serde_json::from_str(&body).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "{path} never answered 200: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `group/kind/namespace/name` of manifest items (or of the receiver's calls).
fn item_keys(items: &Value) -> BTreeSet<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}/{}/{}/{}",
                i["group"].as_str().unwrap(),
                i["kind"].as_str().unwrap(),
                i["namespace"].as_str().unwrap_or("-"),
                i["name"].as_str().unwrap()
            )
        })
        .collect()
}

/// `type=reason` of every condition of every state a `kubectl get -w -o json` printed.
fn condition_states(watched: &str) -> BTreeSet<String> {
    serde_json::Deserializer::from_str(watched)
        .into_iter::<Value>()
        // The last object may still be arriving.
        .map_while(Result::ok)
        .flat_map(|nab| {
            nab["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| {
            format!(
                "{}={}",
                c["type"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn has_item(items: &Value, resource: &str, name: &str) -> bool {
    items
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["resource"] == resource && i["name"] == name)
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
    // The completed backup got its manifest (built from the tarball by the history's builder);
    // waiting for it also leaves the builder idle before the Ctrl-C below.
    let manifest = wait_gateway_json(
        &gateway,
        "/api/v1/namespaces/team-a/backups/mine/manifest",
        &token,
        60,
    );
    assert_eq!(manifest["kind"], "BackupManifest", "{manifest}");
    assert!(
        has_item(&manifest["items"], "configmaps", "web-config"),
        "{manifest}"
    );
    assert!(
        has_item(&manifest["items"], "deployments", "web"),
        "{manifest}"
    );
    let mine_items = item_keys(&manifest["items"]);
    let mine_velero = manifest["backup"]["veleroBackup"]
        .as_str()
        .unwrap()
        .to_string();
    // The sample backups the demo takes of team-a differ by what changed in between (waited
    // for before the Ctrl-C: Velero fails a backup that a restart interrupts).
    let diff = {
        wait_gateway_json(
            &gateway,
            "/api/v1/namespaces/team-a/backups/sample-2/manifest",
            &token,
            90,
        );
        wait_gateway_json(
            &gateway,
            "/api/v1/namespaces/team-a/backups/sample-2/diff?against=sample-1",
            &token,
            30,
        )
    };
    assert!(
        has_item(&diff["added"], "configmaps", "web-feature-flags"),
        "{diff}"
    );
    assert!(
        diff["changed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["identity"]["name"] == "web-config"
                && c["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f == "labels")),
        "{diff}"
    );

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

    // Dry-runs answer and create nothing.
    let (status, body) = gateway_request(
        &gateway,
        "POST",
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        &token,
        Some(r#"{"name":"just-looking","spec":{"backupSpec":{}}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let dry: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(dry["kind"], "BackupDryRun", "{dry}");
    assert!(
        has_item(&dry["items"], "configmaps", "web-feature-flags"),
        "{dry}"
    );
    assert_eq!(
        dry["totalItems"].as_u64().unwrap() as usize,
        dry["items"].as_array().unwrap().len()
    );
    let (status, _) = gateway_get(
        &gateway,
        "/api/v1/namespaces/team-a/backups/just-looking",
        &token,
    );
    assert_eq!(status, 404, "a dry-run creates nothing");
    let (status, body) = gateway_request(
        &gateway,
        "POST",
        "/api/v1/namespaces/team-a/restores?dryRun=true",
        &token,
        Some(r#"{"name":"undo","spec":{"restoreSpec":{"backupName":"mine"}}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let preview: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(preview["kind"], "RestorePreview", "{preview}");
    let entries = preview["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["resource"] == "configmaps" && e["name"] == "web-config"),
        "{preview}"
    );

    // Deletion actions: the demo's DeletionAction, re-pointed at the restarted receiver.
    let (ok, out) = kubectl(&admin, &["get", "deletionactions"], None);
    assert!(ok && out.contains("audit-deleted-items"), "{out}");
    let receiver = demo
        .banner
        .lines()
        .find(|l| l.contains("deletion-action receiver"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("https://")))
        .expect("the receiver's URL in the banner")
        .to_string();
    let ca_file = data.join("deletion-receiver").join("ca.crt");
    let receiver_token =
        std::fs::read_to_string(data.join("deletion-receiver").join("token")).unwrap();
    let (status, _) = https_get(&receiver, "/calls", &ca_file, None);
    assert_eq!(status, 401, "the calls need the receiver's read token");
    // Every state of the NAB while it is deleted, from a watch (it is gone at the end).
    let mut watch = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&alice)
        .args(["get", "nab", "mine", "-w", "-o", "json"])
        .env("KUBECACHEDIR", data.join("kube-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let states = Arc::new(Mutex::new(String::new()));
    {
        let states = states.clone();
        let stdout = watch.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                states.lock().unwrap().push_str(&line);
                states.lock().unwrap().push('\n');
            }
        });
    }
    // The watch is established once it printed the current state.
    let deadline = Instant::now() + Duration::from_secs(20);
    while states.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "kubectl get -w printed nothing");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (ok, out) = kubectl(
        &alice,
        &[
            "patch",
            "nab",
            "mine",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"deleteBackup":true}}"#,
        ],
        None,
    );
    assert!(ok, "{out}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, out) = kubectl(&alice, &["get", "nab", "mine", "-o", "name"], None);
        if out.contains("NotFound") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the NAB was not deleted: {out}; states: {:?}",
            condition_states(&states.lock().unwrap())
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // The watch may deliver the last states just after the NAB is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = "deletionaction.oadp.openshift.io/audit-deleted-items=Succeeded";
    while !condition_states(&states.lock().unwrap()).contains(want) {
        assert!(
            Instant::now() < deadline,
            "no {want} condition in the NAB's states: {:?}",
            condition_states(&states.lock().unwrap())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    // The receiver got every item of the backup, once, for that backup.
    let (status, body) = https_get(
        &receiver,
        "/calls?nonAdminBackup=team-a/mine",
        &ca_file,
        Some(receiver_token.trim()),
    );
    assert_eq!(status, 200, "{body}");
    let calls: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(calls["kind"], "DeletionActionCallList", "{calls}");
    let items = calls["items"].as_array().unwrap();
    assert_eq!(items.len(), mine_items.len(), "{calls}");
    assert_eq!(item_keys(&calls["items"]), mine_items, "{calls}");
    assert!(
        items
            .iter()
            .all(|c| c["backup"] == mine_velero.as_str() && c["action"] == "audit-deleted-items"),
        "{calls}"
    );
}
