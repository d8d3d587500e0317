//! End-to-end conformance: the real `kubectl` binary against `nac sim apiserver` over HTTPS and
//! against a real kube-apiserver, with the same expectations.
//!
//! Every case runs twice (`NAME::emulator`, `NAME::real`), each time on a server of its own: an
//! emulator process (port 0, temporary data directory), or a real control plane from
//! `KUBEBUILDER_ASSETS` (etcd, kube-apiserver, kube-controller-manager; stopped when the case
//! ends). Both are driven only through `kubectl`, asserting on exit codes and on the text kubectl
//! prints, which is what a namespace owner sees. When `kubectl` is not installed every test
//! prints a SKIPPED line and returns (scripts/test.sh puts the bundle's kubectl on PATH).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::cluster::RealControlPlane;

/// How long one kubectl invocation may take before the test fails (its requests are bounded by
/// `--request-timeout=20s`; `kubectl wait` by its own `--timeout`).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);
/// How long the emulator may take to print its ready line.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long polled conditions may take.
const POLL_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// Path of `kubectl` on PATH, or `None` (the suite is then skipped).
fn kubectl_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
}

/// Returns false (after saying so) when the suite cannot run here.
fn kubectl_available() -> bool {
    if kubectl_path().is_some() {
        true
    } else {
        eprintln!("SKIPPED: kubectl not found on PATH (install kubectl to run this suite)");
        false
    }
}

/// What one command did.
#[derive(Debug)]
struct Out {
    args: String,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// Asserts success and returns stdout.
    #[track_caller]
    fn ok(&self) -> &str {
        assert_eq!(
            self.code, 0,
            "`{}` failed:\nstdout: {}\nstderr: {}",
            self.args, self.stdout, self.stderr
        );
        &self.stdout
    }

    /// Asserts failure with `code` and returns stderr.
    #[track_caller]
    fn fails(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "`{}` should exit {code}:\nstdout: {}\nstderr: {}",
            self.args, self.stdout, self.stderr
        );
        &self.stderr
    }

    /// Stdout parsed as JSON.
    #[track_caller]
    fn json(&self) -> Value {
        let text = self.ok();
        serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("`{}` printed no JSON ({e}): {text}", self.args))
    }
}

/// Reads a pipe to a string on a thread.
fn drain<R: Read + Send + 'static>(mut pipe: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs `command` to completion (killing it after `COMMAND_TIMEOUT`), feeding it `stdin`.
fn run(mut command: Command, stdin: Option<&str>) -> Out {
    let args = format!("{command:?}");
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {args}: {e}"));
    let writer = stdin.map(|input| {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        let input = input.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        })
    });
    let stdout = drain(child.stdout.take().expect("stdout is piped"));
    let stderr = drain(child.stderr.take().expect("stderr is piped"));
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for command") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{args}` did not finish within {COMMAND_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    Out {
        args,
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Asserts that `kubectl delete nab NAME -n NS` confirmed the deletion, in the words of the
/// kubectl that ran (1.35 and later add "from NS namespace").
#[track_caller]
fn assert_deleted(out: &Out, name: &str, ns: &str) {
    let line = out.ok().trim();
    let plain = format!(r#"nonadminbackup.oadp.openshift.io "{name}" deleted"#);
    assert!(
        line == plain || line == format!("{plain} from {ns} namespace"),
        "unexpected confirmation: {line}"
    );
}

/// Polls `probe` until it yields a value; panics with `what` after `POLL_TIMEOUT`.
#[track_caller]
fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + POLL_TIMEOUT;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server a case drives: a `nac sim apiserver` child process (killed when dropped) or a
/// real control plane of the case's own (stopped when dropped).
struct Emulator {
    child: Option<Child>,
    /// The real control plane, stopped when the case ends.
    plane: Option<RealControlPlane>,
    dir: tempfile::TempDir,
    url: String,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Emulator {
    /// Starts an emulator with users `alice` and `bob` (group `devs`).
    fn start() -> Emulator {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = std::fs::File::create(dir.path().join("emulator.log")).expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_nac"))
            .args(["sim", "apiserver", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .args(["--user", "alice", "--user", "bob:devs"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start nac sim apiserver");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        // Keeps draining stdout for the emulator's whole life so it can never block on the pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    // Nobody listens any more; keep draining.
                }
            }
        });
        let mut emulator = Emulator {
            child: Some(child),
            plane: None,
            dir,
            url: String::new(),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with("nac emulator ready at ") => break line,
                Ok(_) => continue,
                Err(e) => panic!(
                    "emulator printed no ready line ({e}); log:\n{}",
                    std::fs::read_to_string(emulator.dir.path().join("emulator.log"))
                        .unwrap_or_default()
                ),
            }
        };
        let url = line
            .trim_start_matches("nac emulator ready at ")
            .split_whitespace()
            .next()
            .expect("url in ready line")
            .to_string();
        assert!(
            url.starts_with("https://127.0.0.1:"),
            "unexpected ready line {line:?}"
        );
        assert!(
            line.ends_with(&format!(
                "(kubeconfigs in {})",
                emulator.dir.path().display()
            )),
            "ready line names the data dir: {line:?}"
        );
        for user in ["admin", "alice", "bob"] {
            let kubeconfig = emulator.kubeconfig(user);
            let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
            assert!(
                text.contains(&url),
                "{} points at {url}",
                kubeconfig.display()
            );
        }
        emulator.url = url;
        emulator
    }

    /// A real control plane of its own with kubeconfigs for admin, alice and bob (group
    /// `devs`), or `None` when this machine has none (see `support::cluster`).
    fn start_real() -> Option<Emulator> {
        let plane = RealControlPlane::start_own()?;
        let dir = tempfile::tempdir().expect("temp dir");
        for user in ["admin", "alice", "bob"] {
            let written = plane.write_kubeconfig(user, plane.token(user));
            std::fs::copy(&written, dir.path().join(format!("kubeconfig-{user}")))
                .expect("kubeconfig copied");
        }
        Some(Emulator {
            child: None,
            url: plane.server.clone(),
            plane: Some(plane),
            dir,
        })
    }

    /// Whether this is the real kube-apiserver.
    fn is_real(&self) -> bool {
        self.plane.is_some()
    }

    fn kubeconfig(&self, user: &str) -> PathBuf {
        self.dir.path().join(format!("kubeconfig-{user}"))
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A kubectl command as `user`, with its own discovery cache.
    fn command(&self, user: &str, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(self.kubeconfig(user))
            .arg("--cache-dir")
            .arg(self.dir.path().join("kube-cache"))
            .arg("--request-timeout=20s")
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", self.dir.path());
        c
    }

    /// Runs kubectl as `user`.
    fn kubectl(&self, user: &str, args: &[&str]) -> Out {
        run(self.command(user, args), None)
    }

    /// Runs kubectl as `user` with `input` on stdin.
    fn kubectl_stdin(&self, user: &str, args: &[&str], input: &str) -> Out {
        run(self.command(user, args), Some(input))
    }

    /// Installs NAC's CRDs with `kubectl apply -f deploy/base/crds/` and waits until the
    /// NonAdminBackup CRD is established.
    fn install_crds(&self) {
        let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base/crds");
        let out = self.kubectl(
            "admin",
            &["apply", "-f", crds.to_str().expect("utf-8 path")],
        );
        let text = out.ok();
        for plural in [
            "nonadminbackups",
            "nonadminrestores",
            "nonadminbackupstoragelocations",
            "nonadminbackupstoragelocationrequests",
            "nonadmindownloadrequests",
            "nonadminschedules",
        ] {
            let line = format!(
                "customresourcedefinition.apiextensions.k8s.io/{plural}.oadp.openshift.io created"
            );
            assert!(
                text.lines().any(|l| l == line),
                "apply printed {line:?}: {text}"
            );
        }
        let out = self.kubectl(
            "admin",
            &[
                "wait",
                "--for",
                "condition=established",
                "--timeout=60s",
                "crd/nonadminbackups.oadp.openshift.io",
            ],
        );
        assert_eq!(
            out.ok().trim(),
            "customresourcedefinition.apiextensions.k8s.io/nonadminbackups.oadp.openshift.io condition met"
        );
        // kube-apiserver publishes a CRD's OpenAPI v3 document some time after Established.
        // Until then kubectl finds no `fieldValidation` for the kind and validates on its own,
        // with other wording than the server's (seen in CI): wait for the document, as a user
        // running the suite's commands a moment later would see it.
        if self.is_real() {
            eventually("the CRDs' OpenAPI v3 document with fieldValidation", || {
                let out = self.kubectl(
                    "admin",
                    &[
                        "get",
                        "--raw",
                        "/openapi/v3/apis/oadp.openshift.io/v1alpha1",
                    ],
                );
                (out.code == 0
                    && out
                        .stdout
                        .contains("io.openshift.oadp.v1alpha1.NonAdminBackup")
                    && out.stdout.contains("fieldValidation"))
                .then_some(())
            });
        }
    }

    /// CRDs, namespaces team-a and team-b, NAC's rules aggregated into `admin`, and alice bound
    /// to `admin` in team-a; returns once alice's rights are effective.
    fn install_tenancy(&self) {
        self.install_crds();
        let out = self.kubectl_stdin("admin", &["apply", "-f", "-"], TENANCY_YAML);
        let text = out.ok();
        for line in [
            "namespace/team-a created",
            "namespace/team-b created",
            "clusterrole.rbac.authorization.k8s.io/nac-nonadmin-aggregate-to-admin created",
            "rolebinding.rbac.authorization.k8s.io/alice-admin created",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "apply printed {line:?}: {text}"
            );
        }
        // Aggregation is asynchronous in a real cluster: wait for the controller's result.
        eventually("NAC rules aggregated into ClusterRole admin", || {
            let out = self.kubectl("admin", &["get", "clusterrole", "admin", "-o", "json"]);
            let role = out.json();
            let rules = role["rules"].as_array().cloned().unwrap_or_default();
            rules
                .iter()
                .any(|r| {
                    r["apiGroups"]
                        .as_array()
                        .is_some_and(|g| g.contains(&"oadp.openshift.io".into()))
                        && r["resources"]
                            .as_array()
                            .is_some_and(|g| g.contains(&"nonadminbackups".into()))
                })
                .then_some(())
        });
        eventually("alice may create nonadminbackups in team-a", || {
            let out = self.kubectl(
                "alice",
                &["auth", "can-i", "create", "nonadminbackups", "-n", "team-a"],
            );
            (out.code == 0 && out.stdout.trim() == "yes").then_some(())
        });
    }

    /// `kubectl get nab NAME -n team-a -o json` as admin.
    fn nab(&self, name: &str) -> Value {
        self.kubectl("admin", &["get", "nab", name, "-n", "team-a", "-o", "json"])
            .json()
    }
}

const TENANCY_YAML: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-b
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: nac-nonadmin-aggregate-to-admin
  labels:
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
- apiGroups: ["oadp.openshift.io"]
  resources:
  - nonadminbackups
  - nonadminrestores
  - nonadminbackupstoragelocations
  - nonadminbackupstoragelocationrequests
  - nonadmindownloadrequests
  - nonadminschedules
  verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
- apiGroups: ["oadp.openshift.io"]
  resources:
  - nonadminbackups/status
  - nonadminrestores/status
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: alice-admin
  namespace: team-a
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: admin
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: alice
"#;

/// A NonAdminBackup manifest for team-a.
fn nab_yaml(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: {name}\n  namespace: team-a\nspec:\n{spec}"
    )
}

const BASIC_SPEC: &str = "  backupSpec:\n    includedNamespaces: [team-a]\n";

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

fn crds_install_and_are_discovered(emu: &Emulator) {
    emu.install_crds();

    let out = emu.kubectl("admin", &["api-resources", "--api-group=oadp.openshift.io"]);
    let text = out.ok();
    let header = text.lines().next().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
        "{text}"
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.contains(&vec![
            "nonadminbackups",
            "nab",
            "oadp.openshift.io/v1alpha1",
            "true",
            "NonAdminBackup"
        ]),
        "api-resources lists nonadminbackups with short name nab:\n{text}"
    );
    assert!(
        rows.iter().any(|r| r.first() == Some(&"nonadminrestores")),
        "api-resources lists nonadminrestores:\n{text}"
    );
    // Kinds without a short name leave that column empty, so look for the group anywhere.
    assert!(
        rows.iter()
            .all(|r| r.contains(&"oadp.openshift.io/v1alpha1")),
        "{text}"
    );
    assert!(
        rows.contains(&vec![
            "deletionactions",
            "oadp.openshift.io/v1alpha1",
            "false",
            "DeletionAction"
        ]),
        "api-resources lists the cluster-scoped deletionactions:\n{text}"
    );

    // `kubectl explain`-free check that the CRD object itself is served as stored.
    let crd = emu
        .kubectl(
            "admin",
            &[
                "get",
                "crd",
                "nonadminbackups.oadp.openshift.io",
                "-o",
                "json",
            ],
        )
        .json();
    assert_eq!(
        crd["spec"]["names"]["shortNames"],
        serde_json::json!(["nab"])
    );
    let established = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "CRD status reports Established: {crd}");

    // Velero's CRDs as `nac crds --velero` prints them, through stdin.
    let printed = run(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_nac"));
            c.args(["crds", "--velero"]);
            c
        },
        None,
    );
    let yaml = printed.ok().to_string();
    assert!(
        yaml.contains("name: backups.velero.io"),
        "nac crds --velero prints Velero's CRDs"
    );
    let out = emu.kubectl_stdin("admin", &["apply", "-f", "-"], &yaml);
    let text = out.ok();
    assert!(
        text.lines()
            .any(|l| l == "customresourcedefinition.apiextensions.k8s.io/backups.velero.io created"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l == "customresourcedefinition.apiextensions.k8s.io/nonadminbackups.oadp.openshift.io unchanged"),
        "re-applying NAC's CRDs is a no-op: {text}"
    );
    emu.kubectl(
        "admin",
        &[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "crd/backups.velero.io",
        ],
    )
    .ok();
    let out = emu.kubectl(
        "admin",
        &["api-resources", "--api-group=velero.io", "-o", "name"],
    );
    let names: Vec<&str> = out.ok().lines().collect();
    assert!(names.contains(&"backups.velero.io"), "{names:?}");
    assert!(
        names.contains(&"deletebackuprequests.velero.io"),
        "{names:?}"
    );
}

fn tenant_manages_nonadminbackups_with_kubectl(emu: &Emulator) {
    emu.install_tenancy();
    let manifest = nab_yaml("x", BASIC_SPEC);

    // apply: create, then a no-op, then a real change (the patch path).
    let out = emu.kubectl_stdin("alice", &["apply", "-f", "-"], &manifest);
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x created"
    );
    let out = emu.kubectl_stdin("alice", &["apply", "-f", "-"], &manifest);
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x unchanged"
    );
    let changed = nab_yaml(
        "x",
        "  backupSpec:\n    includedNamespaces: [team-a]\n    ttl: 48h0m0s\n",
    );
    let out = emu.kubectl_stdin("alice", &["apply", "-f", "-"], &changed);
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x configured"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["spec"]["backupSpec"]["ttl"], "48h0m0s");
    assert_eq!(
        nab["metadata"]["generation"], 2,
        "spec change bumps generation: {nab}"
    );
    assert!(
        nab["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .is_some_and(|s| s.contains("48h0m0s")),
        "apply records its last-applied configuration: {nab}"
    );

    // get: server-side printed table with the CRD's printer columns.
    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-a"]);
    let text = out.ok();
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "REQUEST-PHASE", "VELERO-PHASE", "AGE"],
        "{text}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row.first(), Some(&"x"), "{text}");
    assert!(
        row.last()
            .is_some_and(|age| age.ends_with('s') || age.ends_with('m')),
        "AGE column is a duration: {text}"
    );
    assert!(lines.next().is_none(), "one row only: {text}");
    // The full resource name and the singular work too.
    emu.kubectl(
        "alice",
        &["get", "nonadminbackups.oadp.openshift.io/x", "-n", "team-a"],
    )
    .ok();
    emu.kubectl(
        "alice",
        &["get", "nonadminbackup", "x", "-n", "team-a", "-o", "name"],
    )
    .ok();

    // -o json / -o jsonpath
    let nab = emu
        .kubectl("alice", &["get", "nab", "x", "-n", "team-a", "-o", "json"])
        .json();
    assert_eq!(nab["apiVersion"], "oadp.openshift.io/v1alpha1");
    assert_eq!(nab["kind"], "NonAdminBackup");
    assert_eq!(nab["metadata"]["namespace"], "team-a");
    assert!(
        nab["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(
        nab["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(
        nab["metadata"]["creationTimestamp"]
            .as_str()
            .is_some_and(|u| u.ends_with('Z'))
    );
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "x",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.backupSpec.includedNamespaces[0]}",
        ],
    );
    assert_eq!(out.ok(), "team-a");
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ],
    );
    assert_eq!(out.ok(), "x");

    // patch: merge and JSON patch.
    let out = emu.kubectl(
        "alice",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"spec":{"backupSpec":{"snapshotVolumes":false}}}"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    let out = emu.kubectl(
        "alice",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/backupSpec/includedResources","value":["configmaps"]},{"op":"replace","path":"/spec/backupSpec/ttl","value":"1h0m0s"}]"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["spec"]["backupSpec"]["snapshotVolumes"], false);
    assert_eq!(
        nab["spec"]["backupSpec"]["includedResources"],
        serde_json::json!(["configmaps"])
    );
    assert_eq!(nab["spec"]["backupSpec"]["ttl"], "1h0m0s");
    assert_eq!(
        nab["metadata"]["generation"], 4,
        "two more spec changes: {nab}"
    );
    // A JSON patch whose `test` fails is refused and changes nothing.
    let out = emu.kubectl(
        "alice",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/backupSpec/ttl","value":"2h"},{"op":"replace","path":"/spec/backupSpec/ttl","value":"3h"}]"#,
        ],
    );
    out.fails(1);
    assert_eq!(emu.nab("x")["spec"]["backupSpec"]["ttl"], "1h0m0s");

    // label / annotate, and a label selector.
    let out = emu.kubectl("alice", &["label", "nab", "x", "-n", "team-a", "tier=gold"]);
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x labeled"
    );
    let out = emu.kubectl(
        "alice",
        &["annotate", "nab", "x", "-n", "team-a", "note=hello world"],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x annotated"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["metadata"]["labels"]["tier"], "gold");
    assert_eq!(nab["metadata"]["annotations"]["note"], "hello world");
    assert_eq!(
        nab["metadata"]["generation"], 4,
        "metadata changes do not bump generation"
    );
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "-n",
            "team-a",
            "-l",
            "tier=gold",
            "-o",
            "name",
        ],
    );
    assert_eq!(out.ok().trim(), "nonadminbackup.oadp.openshift.io/x");
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "-n",
            "team-a",
            "-l",
            "tier!=gold",
            "-o",
            "name",
        ],
    );
    assert_eq!(out.ok().trim(), "");
    let out = emu.kubectl(
        "alice",
        &["get", "nab", "-n", "team-a", "-l", "tier=silver"],
    );
    assert_eq!(out.ok().trim(), "");
    assert_eq!(out.stderr.trim(), "No resources found in team-a namespace.");
    // Overwriting a label needs --overwrite, as in kubectl against a real cluster.
    let out = emu.kubectl(
        "alice",
        &["label", "nab", "x", "-n", "team-a", "tier=silver"],
    );
    assert!(
        out.fails(1).contains("'tier' already has a value (gold)"),
        "{}",
        out.stderr
    );
    let out = emu.kubectl("alice", &["label", "nab", "x", "-n", "team-a", "tier-"]);
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x unlabeled"
    );

    // delete, then NotFound.
    let out = emu.kubectl("alice", &["delete", "nab", "x", "-n", "team-a"]);
    assert_deleted(&out, "x", "team-a");
    let out = emu.kubectl("alice", &["get", "nab", "x", "-n", "team-a"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (NotFound): nonadminbackups.oadp.openshift.io "x" not found"#
    );
    let out = emu.kubectl("alice", &["delete", "nab", "x", "-n", "team-a"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (NotFound): nonadminbackups.oadp.openshift.io "x" not found"#
    );
    let out = emu.kubectl(
        "alice",
        &["delete", "nab", "x", "-n", "team-a", "--ignore-not-found"],
    );
    assert_eq!(out.ok().trim(), "");
}

/// Condition columns (`.status.conditions[?(@.type=='Valid')].status`) print the matching
/// condition's status, as kube-apiserver's table convertor does.
fn condition_printer_columns_show_the_matching_condition(emu: &Emulator) {
    emu.install_crds();
    let action = "apiVersion: oadp.openshift.io/v1alpha1\nkind: DeletionAction\nmetadata:\n  name: audit\nspec:\n  failurePolicy: Ignore\n  webhook:\n    url: https://audit.example.com/hook\n";
    let out = emu.kubectl_stdin("admin", &["apply", "-f", "-"], action);
    assert_eq!(
        out.ok().trim(),
        "deletionaction.oadp.openshift.io/audit created"
    );
    let columns = |emu: &Emulator| -> Vec<String> {
        emu.kubectl(
            "admin",
            &["get", "deletionactions", "audit", "--no-headers"],
        )
        .ok()
        .split_whitespace()
        .map(str::to_string)
        .collect()
    };
    // No status yet: the cell is empty (kube-apiserver sends a null cell, kubectl prints
    // nothing), so the age comes third.
    let before = columns(emu);
    assert_eq!(before.len(), 3, "{before:?}");
    assert_eq!(before[..2], ["audit", "Ignore"]);
    let status = r#"{"status":{"conditions":[
        {"type":"Ready","status":"False","reason":"Waiting","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"},
        {"type":"Valid","status":"True","reason":"Validated","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#;
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "deletionaction",
            "audit",
            "--subresource=status",
            "--type=merge",
            "-p",
            status,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "deletionaction.oadp.openshift.io/audit patched"
    );
    let after = columns(emu);
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after[..3], ["audit", "Ignore", "True"]);
}

fn auth_can_i_and_whoami(emu: &Emulator) {
    emu.install_tenancy();

    let out = emu.kubectl(
        "alice",
        &["auth", "can-i", "create", "nonadminbackups", "-n", "team-a"],
    );
    assert_eq!(out.ok().trim(), "yes");
    let out = emu.kubectl("alice", &["auth", "can-i", "create", "nab", "-n", "team-a"]);
    assert_eq!(
        out.ok().trim(),
        "yes",
        "short names resolve through discovery"
    );
    let out = emu.kubectl(
        "alice",
        &["auth", "can-i", "create", "nonadminbackups", "-n", "team-b"],
    );
    out.fails(1);
    assert_eq!(out.stdout.trim(), "no");
    let out = emu.kubectl(
        "alice",
        &[
            "auth",
            "can-i",
            "patch",
            "nonadminbackups",
            "--subresource=status",
            "-n",
            "team-a",
        ],
    );
    out.fails(1);
    assert_eq!(out.stdout.trim(), "no", "tenants cannot write status");
    // TYPE/NAME: patching the NonAdminBackup *named* "status" is a plain patch.
    let out = emu.kubectl(
        "alice",
        &[
            "auth",
            "can-i",
            "patch",
            "nonadminbackups/status",
            "-n",
            "team-a",
        ],
    );
    assert_eq!(out.ok().trim(), "yes");
    let out = emu.kubectl(
        "alice",
        &[
            "auth",
            "can-i",
            "get",
            "nonadminbackups",
            "--subresource=status",
            "-n",
            "team-a",
        ],
    );
    assert_eq!(out.ok().trim(), "yes");
    let out = emu.kubectl("alice", &["auth", "can-i", "create", "namespaces"]);
    out.fails(1);
    assert_eq!(out.stdout.trim(), "no");
    // `admin` brings the built-in rights of a namespace admin too.
    let out = emu.kubectl(
        "alice",
        &["auth", "can-i", "create", "secrets", "-n", "team-a"],
    );
    assert_eq!(out.ok().trim(), "yes");
    let out = emu.kubectl(
        "bob",
        &["auth", "can-i", "list", "nonadminbackups", "-n", "team-a"],
    );
    out.fails(1);
    assert_eq!(out.stdout.trim(), "no");
    let out = emu.kubectl("admin", &["auth", "can-i", "*", "*"]);
    assert_eq!(out.ok().trim(), "yes");
    // --list (SelfSubjectRulesReview).
    let out = emu.kubectl("alice", &["auth", "can-i", "--list", "-n", "team-a"]);
    let text = out.ok();
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "Resources",
            "Non-Resource",
            "URLs",
            "Resource",
            "Names",
            "Verbs"
        ],
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("nonadminbackups.oadp.openshift.io "))
        .unwrap_or_else(|| panic!("--list includes nonadminbackups:\n{text}"));
    for verb in [
        "create", "delete", "get", "list", "patch", "update", "watch",
    ] {
        assert!(row.contains(verb), "{verb} in {row:?}");
    }
    let out = emu.kubectl("alice", &["auth", "can-i", "--list", "-n", "team-b"]);
    let text = out.ok();
    assert!(
        !text.contains("nonadminbackups"),
        "alice has no NAC rights in team-b:\n{text}"
    );
    assert!(
        text.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{text}"
    );

    // whoami (SelfSubjectReview), when this kubectl has it.
    let help = emu.kubectl("alice", &["auth", "--help"]);
    if help.ok().contains("whoami") {
        let out = emu.kubectl("alice", &["auth", "whoami"]);
        let text = out.ok();
        let username = text
            .lines()
            .find(|l| l.starts_with("Username"))
            .unwrap_or_else(|| panic!("whoami shows a Username row:\n{text}"));
        assert_eq!(
            username.split_whitespace().collect::<Vec<_>>(),
            ["Username", "alice"]
        );
        let out = emu.kubectl("bob", &["auth", "whoami", "-o", "json"]);
        let review = out.json();
        assert_eq!(review["kind"], "SelfSubjectReview");
        assert_eq!(review["status"]["userInfo"]["username"], "bob");
        let groups = review["status"]["userInfo"]["groups"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(groups.contains(&"devs".into()), "{review}");
        assert!(groups.contains(&"system:authenticated".into()), "{review}");
        let out = emu.kubectl(
            "admin",
            &["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"],
        );
        assert!(out.ok().contains("system:masters"), "{}", out.stdout);
    } else {
        eprintln!("kubectl auth whoami not available in this kubectl; not checked");
    }
}

fn cross_namespace_access_is_forbidden(emu: &Emulator) {
    emu.install_tenancy();
    emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        &nab_yaml("mine", BASIC_SPEC),
    )
    .ok();

    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-b"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot list resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-b""#
    );
    let out = emu.kubectl("alice", &["get", "nab", "anything", "-n", "team-b"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io "anything" is forbidden: User "alice" cannot get resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-b""#
    );
    let out = emu.kubectl("alice", &["get", "nab", "--all-namespaces"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot list resource "nonadminbackups" in API group "oadp.openshift.io" at the cluster scope"#
    );
    let foreign =
        nab_yaml("intruder", BASIC_SPEC).replace("namespace: team-a", "namespace: team-b");
    let out = emu.kubectl_stdin("alice", &["create", "-f", "-"], &foreign);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): error when creating "STDIN": nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot create resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-b""#
    );
    let out = emu.kubectl("alice", &["get", "secrets", "-n", "team-b"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "team-b""#
    );
    // alice's own namespace works.
    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-a", "-o", "name"]);
    assert_eq!(out.ok().trim(), "nonadminbackup.oadp.openshift.io/mine");

    // bob has no bindings at all.
    for ns in ["team-a", "team-b"] {
        let out = emu.kubectl("bob", &["get", "nab", "-n", ns]);
        assert_eq!(
            out.fails(1).trim(),
            format!(
                r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "bob" cannot list resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "{ns}""#
            )
        );
    }
    let out = emu.kubectl("bob", &["delete", "nab", "mine", "-n", "team-a"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io "mine" is forbidden: User "bob" cannot delete resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-a""#
    );
    // Nothing bob tried changed anything.
    assert_eq!(emu.nab("mine")["metadata"]["name"], "mine");

    // A token nobody issued is 401, not 403.
    let forged = emu.path().join("kubeconfig-forged");
    let text = std::fs::read_to_string(emu.kubeconfig("bob")).expect("bob's kubeconfig");
    let token = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("token:"))
        .map(str::trim)
        .expect("kubeconfig has a token");
    assert!(!token.is_empty());
    std::fs::write(&forged, text.replace(token, "not-a-real-token"))
        .expect("write forged kubeconfig");
    let out = emu.kubectl("forged", &["get", "nab", "-n", "team-a"]);
    assert!(
        out.fails(1)
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        out.stderr
    );
}

fn status_subresource_is_isolated(emu: &Emulator) {
    emu.install_tenancy();
    emu.kubectl_stdin("alice", &["apply", "-f", "-"], &nab_yaml("x", BASIC_SPEC))
        .ok();
    let before = emu.nab("x");
    assert_eq!(before["metadata"]["generation"], 1);
    assert!(
        before.get("status").is_none_or(Value::is_null),
        "no status yet: {before}"
    );

    // Status through the status subresource.
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Created"}}"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["status"]["phase"], "Created");
    assert_eq!(
        nab["metadata"]["generation"], 1,
        "status writes do not bump generation"
    );
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "x",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.status.phase}",
        ],
    );
    assert_eq!(out.ok(), "Created");
    let out = emu.kubectl(
        "alice",
        &["get", "nab", "x", "-n", "team-a", "--no-headers"],
    );
    let row: Vec<&str> = out.ok().split_whitespace().collect();
    assert_eq!(
        row.get(..2),
        Some(&["x", "Created"][..]),
        "REQUEST-PHASE column: {row:?}"
    );
    // Tenants may read but not write status.
    let out = emu.kubectl(
        "alice",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Deleting"}}"#,
        ],
    );
    assert!(
        out.fails(1).contains(
            r#"User "alice" cannot patch resource "nonadminbackups/status" in API group "oadp.openshift.io" in the namespace "team-a""#
        ),
        "{}",
        out.stderr
    );
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "x",
            "-n",
            "team-a",
            "--subresource=status",
            "-o",
            "jsonpath={.status.phase}",
        ],
    );
    assert_eq!(out.ok(), "Created");

    // The main resource ignores status.
    let rv = emu.nab("x")["metadata"]["resourceVersion"].clone();
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Deleting"}}"#,
        ],
    );
    // Nothing changes, so kube-apiserver writes nothing and kubectl says so.
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched (no change)"
    );
    let nab = emu.nab("x");
    assert_eq!(
        nab["status"]["phase"], "Created",
        "main-resource patch left status alone"
    );
    assert_eq!(
        nab["metadata"]["resourceVersion"], rv,
        "a no-op patch is not a write"
    );
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"seen":"yes"}},"status":{"phase":"Deleting"}}"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["metadata"]["labels"]["seen"], "yes");
    assert_eq!(
        nab["status"]["phase"], "Created",
        "main-resource patch left status alone"
    );
    assert_eq!(
        nab["metadata"]["generation"], 1,
        "label changes do not bump generation"
    );

    // The status subresource ignores spec (and metadata other than what status may carry).
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"spec":{"backupSpec":{"ttl":"5h0m0s"}},"status":{"phase":"BackingOff"}}"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["status"]["phase"], "BackingOff");
    assert!(
        nab["spec"]["backupSpec"].get("ttl").is_none(),
        "status patch left spec alone: {nab}"
    );
    assert_eq!(nab["metadata"]["generation"], 1);

    // A spec change bumps generation and keeps status.
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"spec":{"backupSpec":{"ttl":"5h0m0s"}}}"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    let nab = emu.nab("x");
    assert_eq!(nab["spec"]["backupSpec"]["ttl"], "5h0m0s");
    assert_eq!(nab["metadata"]["generation"], 2);
    assert_eq!(nab["status"]["phase"], "BackingOff");

    // Status is schema-validated too.
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Bogus"}}"#,
        ],
    );
    let err = out.fails(1);
    assert!(
        err.contains(
            r#"The NonAdminBackup "x" is invalid: status.phase: Unsupported value: "Bogus""#
        ),
        "{err}"
    );
    assert_eq!(emu.nab("x")["status"]["phase"], "BackingOff");
}

fn finalizers_hold_deletion(emu: &Emulator) {
    emu.install_tenancy();
    emu.kubectl_stdin("alice", &["apply", "-f", "-"], &nab_yaml("x", BASIC_SPEC))
        .ok();
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["nac.oadp.openshift.io/test-hold"]}}"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );

    let out = emu.kubectl(
        "alice",
        &["delete", "nab", "x", "-n", "team-a", "--wait=false"],
    );
    assert_deleted(&out, "x", "team-a");
    let nab = emu.nab("x");
    let stamp = nab["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap_or_default();
    assert!(
        chrono_like_rfc3339(stamp),
        "object is kept, marked for deletion: {nab}"
    );
    assert_eq!(
        nab["metadata"]["finalizers"],
        serde_json::json!(["nac.oadp.openshift.io/test-hold"])
    );
    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-a", "-o", "name"]);
    assert_eq!(out.ok().trim(), "nonadminbackup.oadp.openshift.io/x");
    // Deleting again is accepted and changes nothing.
    let out = emu.kubectl(
        "alice",
        &["delete", "nab", "x", "-n", "team-a", "--wait=false"],
    );
    assert_deleted(&out, "x", "team-a");
    assert_eq!(emu.nab("x")["metadata"]["deletionTimestamp"], stamp);
    // kube-apiserver refuses new finalizers once deletion started.
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/metadata/finalizers/-","value":"late/one"}]"#,
        ],
    );
    let err = out.fails(1);
    assert!(
        err.contains("metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted"),
        "{err}"
    );
    // Spec changes during deletion are still allowed in kube; status too. Only check the object
    // is still there and held.
    assert_eq!(
        emu.nab("x")["metadata"]["finalizers"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    // Removing the last finalizer lets deletion finish.
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "x",
            "-n",
            "team-a",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ],
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/x patched"
    );
    eventually("x to be gone", || {
        let out = emu.kubectl("admin", &["get", "nab", "x", "-n", "team-a"]);
        (out.code != 0).then_some(out)
    });
    let out = emu.kubectl("alice", &["get", "nab", "x", "-n", "team-a"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (NotFound): nonadminbackups.oadp.openshift.io "x" not found"#
    );

    // `kubectl delete` that waits (the default) returns once the finalizer is gone.
    emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        &nab_yaml("second", BASIC_SPEC),
    )
    .ok();
    let out = emu.kubectl(
        "alice",
        &["delete", "nab", "second", "-n", "team-a", "--timeout=60s"],
    );
    assert_deleted(&out, "second", "team-a");
    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-a", "-o", "name"]);
    assert_eq!(out.ok().trim(), "");
}

/// `2024-01-02T03:04:05Z`-shaped.
fn chrono_like_rfc3339(s: &str) -> bool {
    s.len() == 20 && s.ends_with('Z') && s.as_bytes().get(10) == Some(&b'T')
}

/// A long-running `kubectl get -w -o json --output-watch-events`, killed when dropped; its JSON
/// documents arrive on `events`.
struct Watch {
    child: Child,
    events: mpsc::Receiver<Value>,
    stderr: std::thread::JoinHandle<String>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Watch {
    /// A watch printing JSON documents (`-o json`), each delivered parsed.
    fn start(emu: &Emulator, user: &str, args: &[&str]) -> Watch {
        Watch::spawn(emu, user, args, false)
    }

    /// A watch printing a table, each line delivered as a JSON string.
    fn start_lines(emu: &Emulator, user: &str, args: &[&str]) -> Watch {
        Watch::spawn(emu, user, args, true)
    }

    fn spawn(emu: &Emulator, user: &str, args: &[&str], lines: bool) -> Watch {
        let mut command = emu.command(user, args);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start kubectl get -w");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = drain(child.stderr.take().expect("stderr is piped"));
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            if lines {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(Value::String(line)).is_err() {
                        break;
                    }
                }
                return;
            }
            let stream =
                serde_json::Deserializer::from_reader(BufReader::new(stdout)).into_iter::<Value>();
            for value in stream {
                let Ok(value) = value else { break };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Watch {
            child,
            events,
            stderr,
        }
    }

    /// The next event, or a panic naming `what` after `POLL_TIMEOUT`.
    #[track_caller]
    fn next(&mut self, what: &str) -> Value {
        match self.events.recv_timeout(POLL_TIMEOUT) {
            Ok(v) => v,
            Err(e) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
                panic!(
                    "no watch event while waiting for {what} ({e}); kubectl stderr:\n{}",
                    stderr.join().unwrap_or_default()
                );
            }
        }
    }
}

/// (type, name, phase) of a watch event as kubectl prints it.
fn event_summary(event: &Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or_default().to_string(),
        event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn watch_sees_added_modified_deleted_in_order(emu: &Emulator) {
    emu.install_tenancy();
    // An object that exists before the watch: its ADDED event proves the initial list is done,
    // so everything after it comes from the watch itself.
    emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        &nab_yaml("before", BASIC_SPEC),
    )
    .ok();

    let mut watch = Watch::start(
        emu,
        "alice",
        &[
            "get",
            "nab",
            "-n",
            "team-a",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ],
    );
    let first = watch.next("the initial ADDED of `before`");
    assert_eq!(
        event_summary(&first),
        ("ADDED".into(), "before".into()),
        "{first}"
    );
    assert_eq!(first["object"]["kind"], "NonAdminBackup");

    let out = emu.kubectl_stdin("alice", &["create", "-f", "-"], &nab_yaml("w", BASIC_SPEC));
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/w created"
    );
    let out = emu.kubectl("alice", &["label", "nab", "w", "-n", "team-a", "step=two"]);
    out.ok();
    let out = emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "w",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Created"}}"#,
        ],
    );
    out.ok();
    let out = emu.kubectl("alice", &["delete", "nab", "w", "-n", "team-a"]);
    out.ok();

    let added = watch.next("ADDED w");
    assert_eq!(
        event_summary(&added),
        ("ADDED".into(), "w".into()),
        "{added}"
    );
    let labelled = watch.next("MODIFIED w (label)");
    assert_eq!(
        event_summary(&labelled),
        ("MODIFIED".into(), "w".into()),
        "{labelled}"
    );
    assert_eq!(labelled["object"]["metadata"]["labels"]["step"], "two");
    let status = watch.next("MODIFIED w (status)");
    assert_eq!(
        event_summary(&status),
        ("MODIFIED".into(), "w".into()),
        "{status}"
    );
    assert_eq!(status["object"]["status"]["phase"], "Created");
    let deleted = watch.next("DELETED w");
    assert_eq!(
        event_summary(&deleted),
        ("DELETED".into(), "w".into()),
        "{deleted}"
    );
    // resourceVersions increase along the stream.
    let rv = |e: &Value| {
        e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("numeric resourceVersion in {e}"))
    };
    assert!(
        rv(&added) < rv(&labelled) && rv(&labelled) < rv(&status) && rv(&status) < rv(&deleted)
    );
    // Nothing else arrived (e.g. no duplicate events), checked without waiting.
    assert!(watch.events.try_recv().is_err(), "no further events");

    // A label-selected watch sees an object enter and leave the selection.
    let mut selected = Watch::start(
        emu,
        "alice",
        &[
            "get",
            "nab",
            "-n",
            "team-a",
            "-l",
            "pick=me",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ],
    );
    // `before` does not match; enter via a label change.
    let out = emu.kubectl(
        "alice",
        &["label", "nab", "before", "-n", "team-a", "pick=me"],
    );
    out.ok();
    let entered = selected.next("ADDED before (label now matches)");
    assert_eq!(
        event_summary(&entered),
        ("ADDED".into(), "before".into()),
        "{entered}"
    );
    let out = emu.kubectl(
        "alice",
        &["label", "nab", "before", "-n", "team-a", "pick-"],
    );
    out.ok();
    let left = selected.next("DELETED before (label no longer matches)");
    assert_eq!(
        event_summary(&left),
        ("DELETED".into(), "before".into()),
        "{left}"
    );

    // The human-readable watch: server-side printed Table rows with an EVENT column.
    let mut table = Watch::start_lines(
        emu,
        "alice",
        &["get", "nab", "-n", "team-a", "-w", "--output-watch-events"],
    );
    let mut row = |what: &str| -> Vec<String> {
        let line = table.next(what);
        line.as_str()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        row("table header"),
        ["EVENT", "NAME", "REQUEST-PHASE", "VELERO-PHASE", "AGE"]
    );
    assert_eq!(row("ADDED before")[..2], ["ADDED", "before"]);
    emu.kubectl_stdin("alice", &["create", "-f", "-"], &nab_yaml("t", BASIC_SPEC))
        .ok();
    emu.kubectl(
        "admin",
        &[
            "patch",
            "nab",
            "t",
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Created"}}"#,
        ],
    )
    .ok();
    emu.kubectl("alice", &["delete", "nab", "t", "-n", "team-a"])
        .ok();
    assert_eq!(row("ADDED t")[..2], ["ADDED", "t"]);
    assert_eq!(row("MODIFIED t")[..3], ["MODIFIED", "t", "Created"]);
    assert_eq!(row("DELETED t")[..3], ["DELETED", "t", "Created"]);
}

fn schema_is_enforced_like_kube_apiserver(emu: &Emulator) {
    emu.install_tenancy();

    // Required field missing: 422 Invalid with the field path.
    let out = emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        &nab_yaml("x", "  deleteBackup: false\n"),
    );
    assert_eq!(
        out.fails(1).trim(),
        r#"The NonAdminBackup "x" is invalid: spec.backupSpec: Required value"#
    );
    let out = emu.kubectl("alice", &["get", "nab", "x", "-n", "team-a"]);
    out.fails(1);
    // Wrong type.
    let out = emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        &nab_yaml("x", "  backupSpec:\n    includedNamespaces: team-a\n"),
    );
    let err = out.fails(1);
    assert!(
        err.contains(r#"The NonAdminBackup "x" is invalid"#)
            && err.contains(r#"spec.backupSpec.includedNamespaces: Invalid value: "string": spec.backupSpec.includedNamespaces in body must be of type array: "string""#),
        "{err}"
    );
    // Enum.
    let out = emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        &nab_yaml(
            "x",
            "  backupSpec:\n    hooks:\n      resources:\n      - name: h\n        pre:\n        - exec:\n            command: [\"true\"]\n            onError: Sometimes\n",
        ),
    );
    let err = out.fails(1);
    assert!(
        err.contains(r#"spec.backupSpec.hooks.resources[0].pre[0].exec.onError: Unsupported value: "Sometimes": supported values: "Continue", "Fail""#),
        "{err}"
    );

    // Unknown field, strict validation: refused, naming the field.
    let with_unknown = nab_yaml(
        "u",
        "  backupSpec:\n    includedNamespaces: [team-a]\n  bogusField: 1\n",
    );
    let out = emu.kubectl_stdin(
        "alice",
        &["apply", "--validate=strict", "-f", "-"],
        &with_unknown,
    );
    let err = out.fails(1);
    assert!(err.contains(r#"unknown field "spec.bogusField""#), "{err}");
    let out = emu.kubectl("alice", &["get", "nab", "u", "-n", "team-a"]);
    out.fails(1);
    // Warn: accepted with a warning, field pruned.
    let out = emu.kubectl_stdin(
        "alice",
        &["create", "--validate=warn", "-f", "-"],
        &with_unknown,
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/u created"
    );
    assert!(
        out.stderr
            .contains(r#"Warning: unknown field "spec.bogusField""#),
        "warning printed: {}",
        out.stderr
    );
    emu.kubectl("alice", &["delete", "nab", "u", "-n", "team-a"])
        .ok();
    // Validation off: accepted, and the unknown field is pruned.
    let out = emu.kubectl_stdin(
        "alice",
        &["apply", "--validate=false", "-f", "-"],
        &with_unknown,
    );
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/u created"
    );
    assert_eq!(out.stderr.trim(), "", "no warning with validation off");
    let nab = emu
        .kubectl("alice", &["get", "nab", "u", "-n", "team-a", "-o", "json"])
        .json();
    assert!(
        nab["spec"].get("bogusField").is_none(),
        "unknown field pruned: {nab}"
    );
    assert_eq!(
        nab["spec"]["backupSpec"]["includedNamespaces"],
        serde_json::json!(["team-a"])
    );

    // An unknown top-level field in a patch is pruned as well.
    let out = emu.kubectl(
        "alice",
        &[
            "patch",
            "nab",
            "u",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"spec":{"alsoBogus":true}}"#,
        ],
    );
    out.ok();
    let nab = emu.nab("u");
    assert!(nab["spec"].get("alsoBogus").is_none(), "{nab}");
}

fn secrets_from_literals(emu: &Emulator) {
    emu.install_tenancy();

    let out = emu.kubectl(
        "alice",
        &[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            "team-a",
            "--from-literal=k=v",
            "--from-literal=other=hello",
        ],
    );
    assert_eq!(out.ok().trim(), "secret/s created");
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "secret",
            "s",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.k}",
        ],
    );
    assert_eq!(out.ok(), "dg==", "base64 of \"v\"");
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "secret",
            "s",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.other}",
        ],
    );
    assert_eq!(out.ok(), "aGVsbG8=");
    // A second create conflicts.
    let out = emu.kubectl(
        "alice",
        &[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            "team-a",
            "--from-literal=k=w",
        ],
    );
    assert_eq!(
        out.fails(1).trim(),
        r#"error: failed to create secret secrets "s" already exists"#
    );
    // stringData is folded into data.
    let out = emu.kubectl_stdin(
        "alice",
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: t\n  namespace: team-a\nstringData:\n  user: admin\n",
    );
    assert_eq!(out.ok().trim(), "secret/t created");
    let secret = emu
        .kubectl(
            "alice",
            &["get", "secret", "t", "-n", "team-a", "-o", "json"],
        )
        .json();
    assert_eq!(secret["data"]["user"], "YWRtaW4=");
    assert!(secret.get("stringData").is_none(), "{secret}");
    // bob cannot read it.
    let out = emu.kubectl("bob", &["get", "secret", "s", "-n", "team-a"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): secrets "s" is forbidden: User "bob" cannot get resource "secrets" in API group "" in the namespace "team-a""#
    );
}

fn secret_created_by_kubectl_is_defaulted_and_printed_like_kube(emu: &Emulator) {
    emu.install_tenancy();
    // `kubectl create secret` sends protobuf and no `type`; kube-apiserver defaults it to Opaque.
    let out = emu.kubectl(
        "alice",
        &[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            "team-a",
            "--from-literal=k=v",
            "--from-literal=other=hello",
        ],
    );
    assert_eq!(out.ok().trim(), "secret/s created");
    let secret = emu
        .kubectl(
            "alice",
            &["get", "secret", "s", "-n", "team-a", "-o", "json"],
        )
        .json();
    assert_eq!(secret["type"], "Opaque", "{secret}");
    assert!(
        secret["metadata"].get("generateName").is_none(),
        "empty fields are omitted as kube-apiserver does: {secret}"
    );
    // kube's table for secrets: NAME TYPE DATA AGE.
    let out = emu.kubectl("alice", &["get", "secret", "s", "-n", "team-a"]);
    let text = out.ok();
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "TYPE", "DATA", "AGE"], "{text}");
    let row: Vec<&str> = text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row.get(..3), Some(&["s", "Opaque", "2"][..]), "{text}");
}

fn admin_impersonates_with_as(emu: &Emulator) {
    emu.install_tenancy();
    // system:masters may impersonate; the request is then authorized as the impersonated user.
    let out = emu.kubectl(
        "admin",
        &[
            "auth", "can-i", "delete", "nab", "-n", "team-a", "--as", "alice",
        ],
    );
    assert_eq!(out.ok().trim(), "yes");
    let out = emu.kubectl(
        "admin",
        &[
            "auth", "can-i", "delete", "nab", "-n", "team-b", "--as", "alice",
        ],
    );
    out.fails(1);
    assert_eq!(out.stdout.trim(), "no", "evaluated for alice, not admin");
    let out = emu.kubectl("admin", &["get", "nab", "-n", "team-b", "--as", "alice"]);
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot list resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-b""#
    );
    let out = emu.kubectl(
        "admin",
        &[
            "auth",
            "whoami",
            "--as",
            "carol",
            "--as-group",
            "auditors",
            "-o",
            "json",
        ],
    );
    let review = out.json();
    assert_eq!(
        review["status"]["userInfo"]["username"], "carol",
        "{review}"
    );
    let groups = review["status"]["userInfo"]["groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(groups.contains(&"auditors".into()), "{review}");
    // Users without the impersonate verb cannot.
    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-a", "--as", "bob"]);
    let refused = out.fails(1).trim();
    if emu.is_real() {
        // kube-apiserver 1.36 tries constrained impersonation (KEP-5284) first and words the
        // refusal by the impersonated request; the emulator implements the classic check only
        // (README: differences that remain).
        assert_eq!(
            refused,
            r#"Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot impersonate-on:user-info:list resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-a""#
        );
    } else {
        assert_eq!(
            refused,
            r#"Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
    }
}

fn paging_diff_replace_conflicts_explain_and_generate_name(emu: &Emulator) {
    emu.install_tenancy();
    for name in ["n1", "n2", "n3"] {
        emu.kubectl_stdin("alice", &["apply", "-f", "-"], &nab_yaml(name, BASIC_SPEC))
            .ok();
    }

    // All namespaces (admin): the table gains a NAMESPACE column.
    let out = emu.kubectl("admin", &["get", "nab", "-A"]);
    let text = out.ok();
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "REQUEST-PHASE", "VELERO-PHASE", "AGE"],
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("team-a ")).count(),
        3,
        "{text}"
    );

    // Paging: kubectl follows `continue` tokens with --chunk-size.
    let out = emu.kubectl(
        "alice",
        &[
            "get",
            "nab",
            "-n",
            "team-a",
            "--chunk-size=1",
            "-o",
            "name",
            "-v=6",
        ],
    );
    assert_eq!(
        out.ok().lines().collect::<Vec<_>>(),
        [
            "nonadminbackup.oadp.openshift.io/n1",
            "nonadminbackup.oadp.openshift.io/n2",
            "nonadminbackup.oadp.openshift.io/n3"
        ]
    );
    assert!(out.stderr.contains("limit=1"), "{}", out.stderr);
    assert!(
        out.stderr.contains("continue="),
        "pages were followed: {}",
        out.stderr
    );

    // diff: a server-side dry run that persists nothing.
    let changed = nab_yaml(
        "n1",
        "  backupSpec:\n    includedNamespaces: [team-a]\n    ttl: 2h0m0s\n",
    );
    let out = emu.kubectl_stdin("alice", &["diff", "-f", "-"], &changed);
    assert_eq!(out.code, 1, "differences found: {out:?}");
    assert!(out.stdout.contains("+    ttl: 2h0m0s"), "{}", out.stdout);
    let nab = emu.nab("n1");
    assert!(
        nab["spec"]["backupSpec"].get("ttl").is_none(),
        "dry run persisted nothing: {nab}"
    );
    assert_eq!(nab["metadata"]["generation"], 1);
    let out = emu.kubectl_stdin("alice", &["diff", "-f", "-"], &nab_yaml("n1", BASIC_SPEC));
    assert_eq!(out.code, 0, "no differences: {out:?}");

    // replace with a stale resourceVersion: 409 Conflict.
    let mut stale = emu.nab("n1");
    emu.kubectl("alice", &["label", "nab", "n1", "-n", "team-a", "bump=1"])
        .ok();
    stale["spec"]["backupSpec"]["ttl"] = "3h0m0s".into();
    let out = emu.kubectl_stdin("alice", &["replace", "-f", "-"], &stale.to_string());
    assert_eq!(
        out.fails(1).trim(),
        r#"Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on nonadminbackups.oadp.openshift.io "n1": the object has been modified; please apply your changes to the latest version and try again"#
    );
    let mut fresh = emu.nab("n1");
    fresh["spec"]["backupSpec"]["ttl"] = "3h0m0s".into();
    let out = emu.kubectl_stdin("alice", &["replace", "-f", "-"], &fresh.to_string());
    assert_eq!(
        out.ok().trim(),
        "nonadminbackup.oadp.openshift.io/n1 replaced"
    );
    let nab = emu.nab("n1");
    assert_eq!(nab["spec"]["backupSpec"]["ttl"], "3h0m0s");
    assert_eq!(nab["metadata"]["labels"]["bump"], "1");
    assert_eq!(nab["metadata"]["generation"], 2);

    // explain reads the CRD schema through /openapi/v3.
    let out = emu.kubectl("alice", &["explain", "nab.spec.backupSpec.ttl"]);
    let text = out.ok();
    assert!(text.contains("KIND:       NonAdminBackup"), "{text}");
    assert!(text.contains("FIELD: ttl <string>"), "{text}");

    // generateName.
    let generated = "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  generateName: nightly-\n  namespace: team-a\nspec:\n  backupSpec: {}\n";
    let out = emu.kubectl_stdin("alice", &["create", "-f", "-"], generated);
    let line = out.ok().trim().to_string();
    let name = line
        .strip_prefix("nonadminbackup.oadp.openshift.io/nightly-")
        .and_then(|rest| rest.strip_suffix(" created"))
        .unwrap_or_else(|| panic!("generated name: {line}"));
    assert_eq!(name.len(), 5, "five random characters: {line}");
    assert!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
        "{line}"
    );

    // delete --all.
    let out = emu.kubectl("alice", &["delete", "nab", "--all", "-n", "team-a"]);
    assert_eq!(
        out.ok()
            .lines()
            .filter(|l| l.ends_with(" deleted") || l.ends_with(" deleted from team-a namespace"))
            .count(),
        4,
        "{}",
        out.stdout
    );
    let out = emu.kubectl("alice", &["get", "nab", "-n", "team-a", "-o", "name"]);
    assert_eq!(out.ok().trim(), "");
}

/// Runs each case as `NAME::emulator` and `NAME::real`, each on a server of its own.
macro_rules! on_both_servers {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[test]
            fn emulator() {
                if super::kubectl_available() {
                    super::$case(&super::Emulator::start());
                }
            }
            #[test]
            fn real() {
                if super::kubectl_available() {
                    if let Some(server) = super::Emulator::start_real() {
                        super::$case(&server);
                    }
                }
            }
        }
    )*};
}

on_both_servers!(
    crds_install_and_are_discovered,
    tenant_manages_nonadminbackups_with_kubectl,
    condition_printer_columns_show_the_matching_condition,
    auth_can_i_and_whoami,
    cross_namespace_access_is_forbidden,
    status_subresource_is_isolated,
    finalizers_hold_deletion,
    watch_sees_added_modified_deleted_in_order,
    schema_is_enforced_like_kube_apiserver,
    secrets_from_literals,
    secret_created_by_kubectl_is_defaulted_and_printed_like_kube,
    admin_impersonates_with_as,
    paging_diff_replace_conflicts_explain_and_generate_name,
);
