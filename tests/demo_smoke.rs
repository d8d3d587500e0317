//! What a newcomer does first: `nac demo` with no arguments (its data in the user's data
//! directory), then `kubectl --kubeconfig <data>/kubeconfig-admin -n openshift-adp create -f` a
//! Velero Backup, which runs to Completed; Ctrl-C stops the demo and a second start resumes the
//! same state. Drives the real binary and the real kubectl.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Demo {
    child: Child,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

/// Starts `nac demo` with XDG_DATA_HOME pointing at `xdg` and waits for its banner.
fn start_demo(xdg: &Path) -> (Demo, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nac"))
        .args(["demo", "--apiserver-listen", "127.0.0.1:0"])
        .env("XDG_DATA_HOME", xdg)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut banner = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        banner.push_str(&line);
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    // Keep draining stdout so the demo never blocks on a full pipe.
    std::thread::spawn(move || for _ in reader.lines() {});
    assert!(
        banner.contains("Press Ctrl-C"),
        "demo did not start: {banner}"
    );
    (Demo { child }, banner)
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
    let (demo, banner) = start_demo(xdg.path());
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
    let (_demo, _) = start_demo(xdg.path());
    wait_phase(&admin, "smoke", "Completed");
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
