//! Installing NAC as a cluster admin does (README, "Installing NAC"), on the real control plane.
//!
//! For each overlay (`deploy/overlays/openshift`, `deploy/overlays/kubernetes`), on a control
//! plane of its own (`KUBEBUILDER_ASSETS`):
//! 1. what the cluster has before NAC: Velero's CRDs and its service account, a default
//!    BackupStorageLocation in `openshift-adp`; for OpenShift also OADP's DataProtectionApplication
//!    CRD, `openshift-config-managed` and the OpenShift and Prometheus-operator APIs the overlay
//!    uses (`deploy/dev/openshift-crds/`, trimmed CRDs); the README's Secrets (a Postgres history
//!    store of its own);
//! 2. `kubectl apply -k` with `--dry-run=server`, then for real;
//! 3. the controller and the gateway started exactly as their Deployments would start them: the
//!    args and environment of the rendered Deployment (`kubectl kustomize`), Secret keys and the
//!    pod name resolved as the kubelet does, the mounted Secrets written to files at the paths the
//!    environment names, no other environment, and a kubeconfig holding a token of the
//!    Deployment's ServiceAccount (TokenRequest, `kubectl create token`); as many replicas as the
//!    Deployment asks for, with their probes' paths on the ports the binary listens on (one
//!    controller ready, the leader; every gateway ready); the Velero simulator beside them;
//! 4. a tenant's backup (a NonAdminBackup with kubectl), restore (`nac restore create --wait`
//!    through the gateway, a deleted object comes back) and gateway reads (`nac backup get`, the
//!    history the controller recorded in Postgres), a list page continued on another gateway
//!    replica (the shared paging key), and every `nac_*` metric the monitoring component uses is
//!    one the binaries export;
//! 5. the README's uninstall keeping the backups: tenants' schedules, restores and download
//!    requests deleted while the controller runs, the controller stopped, NAC's finalizers removed,
//!    `kubectl delete -k`; no CRD or namespace is left stuck, OADP's namespace, the Velero Backups
//!    and their data stay;
//! 6. the upgrade: the previous release's manifests (`tests/fixtures/install/`, as admins applied
//!    them before the kustomize tree) with a tenant's backup made under them, then the overlay
//!    over them (dry run, then for real): the objects survive, the Deployments take the new
//!    spec, and NAC started again from it takes the old backup to Completed.
//!
//! `rendered_manifests_follow_the_rules` needs only kubectl: every container of both overlays
//! has resources, probes on `/healthz` and `/readyz` at the port it listens on, the hardened
//! securityContext, one image, only environment variables the binary reads; the openshift overlay
//! fixes no user or group; Deployment selectors and CRD schemas stay compatible with the
//! previous release.
//!
//! Without `KUBEBUILDER_ASSETS` the live cases print why and return (under `CI=true` they fail).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/postgres.rs"]
mod postgres_support;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use support::cluster::RealControlPlane;

/// The OADP namespace the overlays install into.
const OADP: &str = "openshift-adp";
/// How long a polled condition may take.
const WAIT: Duration = Duration::from_secs(120);
/// How long one kubectl or `nac` CLI invocation may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// The two live cases take turns: each starts a control plane, Postgres and three `nac`
/// processes, which is plenty for the machines CI runs on.
static TURN: Mutex<()> = Mutex::new(());

fn repo(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

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

    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("`{}` printed no JSON ({e}): {}", self.args, self.stdout))
    }
}

/// Runs `command` to completion (killed after [`COMMAND_TIMEOUT`]), feeding it `stdin`.
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
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{args}` did not finish within {COMMAND_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        args,
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// kubectl with one kubeconfig and a discovery cache of its own.
#[derive(Clone)]
struct Kubectl {
    bin: PathBuf,
    kubeconfig: Option<PathBuf>,
    cache: PathBuf,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        if let Some(kubeconfig) = &self.kubeconfig {
            c.arg("--kubeconfig").arg(kubeconfig);
        }
        c.arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .env_remove("KUBECONFIG")
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        c
    }

    fn run(&self, args: &[&str]) -> Out {
        run(self.command(args), None)
    }

    fn stdin(&self, args: &[&str], input: &str) -> Out {
        run(self.command(args), Some(input))
    }

    /// The same kubectl as another user.
    fn as_user(&self, kubeconfig: PathBuf) -> Kubectl {
        Kubectl {
            kubeconfig: Some(kubeconfig),
            ..self.clone()
        }
    }
}

/// kubectl for the checks that need no cluster: the control plane's, else the one on PATH.
fn local_kubectl(cache: &Path) -> Option<Kubectl> {
    let from_assets = std::env::var_os("KUBEBUILDER_ASSETS")
        .map(|dir| PathBuf::from(dir).join("kubectl"))
        .filter(|p| p.is_file());
    let from_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    };
    let bin = from_assets.or_else(from_path);
    if bin.is_none() {
        assert!(!ci(), "CI=true but no kubectl (KUBEBUILDER_ASSETS or PATH)");
        eprintln!("SKIPPED: no kubectl in KUBEBUILDER_ASSETS or on PATH");
    }
    bin.map(|bin| Kubectl {
        bin,
        kubeconfig: None,
        cache: cache.to_path_buf(),
    })
}

/// Polls `probe` every 250 ms until it yields a value; panics with `what` after [`WAIT`].
#[track_caller]
fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// How a started container is reached: plain HTTP, or HTTPS verified against the service CA
/// for the Service's DNS name (as OpenShift's router and Prometheus verify it).
#[derive(Clone)]
enum Transport {
    Http,
    Https {
        config: std::sync::Arc<rustls::ClientConfig>,
        server_name: String,
        ca_file: PathBuf,
    },
}

/// An HTTP/1.1 GET over `transport` (status, body), or `None` when nothing answers.
fn get_over(
    transport: &Transport,
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
    let mut raw = Vec::new();
    match transport {
        Transport::Http => {
            let mut stream = stream;
            stream.write_all(request.as_bytes()).ok()?;
            stream.read_to_end(&mut raw).ok()?;
        }
        Transport::Https {
            config,
            server_name,
            ..
        } => {
            let name = rustls::pki_types::ServerName::try_from(server_name.clone()).ok()?;
            let connection = rustls::ClientConnection::new(config.clone(), name).ok()?;
            let mut tls = rustls::StreamOwned::new(connection, stream);
            tls.write_all(request.as_bytes()).ok()?;
            // The server may close without close_notify after a `Connection: close` answer.
            match tls.read_to_end(&mut raw) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
                Err(_) => return None,
            }
        }
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = support::dechunk(&body);
    }
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

// ---------------------------------------------------------------------------------------------
// Rendered manifests
// ---------------------------------------------------------------------------------------------

/// The objects `kubectl kustomize DIR` renders.
fn render(kubectl: &Kubectl, dir: &str) -> Vec<Value> {
    let text = kubectl.run(&["kustomize", dir]).ok().to_string();
    yaml_documents(&text)
}

fn yaml_documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn of_kind<'a>(objects: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    objects.iter().filter(move |o| o["kind"] == kind)
}

/// The image `deploy/base/kustomization.yaml` sets for `nac` (newName:newTag).
fn base_image() -> String {
    let text = std::fs::read_to_string(repo("deploy/base/kustomization.yaml")).unwrap();
    let kustomization: Value = yaml_documents(&text).remove(0);
    let image = kustomization["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "nac")
        .expect("deploy/base/kustomization.yaml sets the image `nac`");
    format!(
        "{}:{}",
        image["newName"].as_str().unwrap(),
        image["newTag"].as_str().unwrap()
    )
}

/// The container port a probe's `port` (a name or a number) means.
fn probe_port(container: &Value, probe: &str) -> u16 {
    let port = &container[probe]["httpGet"]["port"];
    match port {
        Value::Number(n) => u16::try_from(n.as_u64().unwrap()).unwrap(),
        Value::String(name) => container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_u64())
            .map(|p| u16::try_from(p).unwrap())
            .unwrap_or_else(|| panic!("{probe} names no declared port {name}")),
        other => panic!("{probe} has no httpGet port: {other}"),
    }
}

/// The flag (`--listen`, `--metrics-listen`) whose address the probes' port is, and that port.
fn listen_flag(container: &Value) -> (String, u16) {
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let role = args[0];
    let flag = match role {
        "controller" => "--metrics-listen",
        "gateway" => "--listen",
        other => panic!("unexpected role {other}"),
    };
    let addr: SocketAddr = args
        .iter()
        .find_map(|a| a.strip_prefix(&format!("{flag}=")))
        .unwrap_or_else(|| panic!("`nac {role}` is started without {flag}=ADDR"))
        .parse()
        .unwrap();
    (flag.to_string(), addr.port())
}

/// Environment variables `nac ROLE` reads: clap's `[env: NAME]` of `nac ROLE --help`, and the
/// ones the code reads directly (`env::var("NAME")` outside the simulators).
fn variables_read(role: &str) -> BTreeSet<String> {
    let help = run(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_nac"));
            c.args([role, "--help"]);
            c
        },
        None,
    );
    let mut names: BTreeSet<String> = help
        .ok()
        .split("[env: ")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect()
        })
        .collect();
    let mut stack = vec![repo("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("sim") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for pattern in ["env::var(\"", "env::var_os(\""] {
                    for rest in text.split(pattern).skip(1) {
                        names.insert(rest.chars().take_while(|c| *c != '"').collect());
                    }
                }
            }
        }
    }
    names
}

/// Seconds of a Go duration made of whole hours, minutes and seconds (`25s`, `1m30s`).
fn seconds_of(duration: &str) -> u64 {
    let (mut total, mut number) = (0, 0);
    for c in duration.chars() {
        match c {
            '0'..='9' => number = number * 10 + u64::from(c.to_digit(10).unwrap()),
            'h' => (total, number) = (total + number * 3600, 0),
            'm' => (total, number) = (total + number * 60, 0),
            's' => (total, number) = (total + number, 0),
            other => panic!("unexpected {other:?} in the duration {duration:?}"),
        }
    }
    total
}

/// The names of the Secrets a pod template needs (env and volumes).
fn secrets_used(pod: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for container in pod["containers"].as_array().unwrap() {
        for env in container["env"].as_array().into_iter().flatten() {
            if let Some(name) = env["valueFrom"]["secretKeyRef"]["name"].as_str() {
                names.insert(name.to_string());
            }
        }
    }
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        if let Some(name) = volume["secret"]["secretName"].as_str() {
            names.insert(name.to_string());
        }
    }
    names
}

/// Every rule of the README for one overlay's rendering.
fn check_rendered(overlay: &str, objects: &[Value]) {
    let image = base_image();
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let deployments: Vec<&Value> = of_kind(objects, "Deployment").collect();
    assert_eq!(
        deployments.len(),
        2,
        "{overlay}: the controller and the gateway"
    );
    for deployment in deployments {
        let name = deployment["metadata"]["name"].as_str().unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        let at = format!("{overlay}: Deployment {name}");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30, "{at}");
        for container in pod["containers"].as_array().unwrap() {
            let grace = container["env"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["name"] == "NAC_SHUTDOWN_GRACE_PERIOD")
                .and_then(|e| e["value"].as_str())
                .map_or(25, seconds_of);
            assert!(
                grace < 30,
                "{at}: NAC_SHUTDOWN_GRACE_PERIOD ({grace} s) must end before the kubelet kills the pod"
            );
        }
        let account = pod["serviceAccountName"].as_str().unwrap();
        find(objects, "ServiceAccount", account);
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{at}");
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
            "{at}"
        );
        if overlay == "openshift" {
            for field in ["runAsUser", "runAsGroup", "fsGroup"] {
                assert!(
                    pod["securityContext"][field].is_null(),
                    "{at}: restricted-v2 assigns {field}; the overlay must not fix it"
                );
            }
        }
        for secret in secrets_used(pod) {
            assert!(
                readme.contains(&format!("`{secret}`")),
                "{at} needs the Secret {secret}: the README must say how to create it"
            );
        }
        let containers = pod["containers"].as_array().unwrap();
        assert!(pod["initContainers"].is_null(), "{at}");
        for container in containers {
            let cname = container["name"].as_str().unwrap();
            let at = format!("{at}, container {cname}");
            assert_eq!(
                container["image"],
                image.as_str(),
                "{at}: one image for all"
            );
            assert!(
                container["command"].is_null(),
                "{at}: the image's entrypoint is nac"
            );
            let resources = &container["resources"];
            for (section, key) in [
                ("requests", "cpu"),
                ("requests", "memory"),
                ("limits", "memory"),
            ] {
                assert!(resources[section][key].is_string(), "{at}: {section}.{key}");
            }
            assert_eq!(
                container["livenessProbe"]["httpGet"]["path"], "/healthz",
                "{at}"
            );
            assert_eq!(
                container["readinessProbe"]["httpGet"]["path"], "/readyz",
                "{at}"
            );
            let (flag, listen) = listen_flag(container);
            for probe in ["livenessProbe", "readinessProbe"] {
                assert_eq!(
                    probe_port(container, probe),
                    listen,
                    "{at}: {probe} must target the port of {flag}"
                );
            }
            let sc = &container["securityContext"];
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{at}");
            assert_eq!(sc["readOnlyRootFilesystem"], true, "{at}");
            assert_eq!(sc["runAsNonRoot"], true, "{at}");
            assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{at}");
            assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{at}");
            if overlay == "openshift" {
                assert!(
                    sc["runAsUser"].is_null() && sc["runAsGroup"].is_null(),
                    "{at}"
                );
            }
            let role = container["args"][0].as_str().unwrap();
            let read = variables_read(role);
            for env in container["env"].as_array().unwrap() {
                let var = env["name"].as_str().unwrap();
                assert!(
                    read.contains(var),
                    "{at}: `nac {role}` never reads {var} (it reads {read:?})"
                );
            }
            // The process writes no files, so it needs no writable volume; what it mounts is
            // read-only configuration.
            for mount in container["volumeMounts"].as_array().into_iter().flatten() {
                assert_eq!(mount["readOnly"], true, "{at}: {mount}");
            }
        }
    }
    // The gateway's replicas share the keys that sign sessions and paging tokens.
    let gateway = find(objects, "Deployment", "nac-gateway");
    let env: Vec<&str> = gateway["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for var in [
        "NAC_DATABASE_URL",
        "NAC_SESSION_KEY_FILE",
        "NAC_GATEWAY_PAGING_KEY_FILE",
    ] {
        assert!(env.contains(&var), "{overlay}: the gateway needs {var}");
    }
    if overlay == "openshift" {
        let route = find(objects, "Route", "nac-gateway");
        let host = route["spec"]["host"].as_str().unwrap();
        let client = find(objects, "OAuthClient", "nac-console");
        assert_eq!(
            client["redirectURIs"],
            json!([format!("https://{host}/api/v1/session/oauth/callback")])
        );
        assert!(
            client["secret"].is_null(),
            "the OAuthClient's secret is never in the manifests"
        );
        for var in ["NAC_OAUTH_CLIENT_ID", "NAC_OAUTH_CLIENT_SECRET_FILE"] {
            assert!(env.contains(&var), "the gateway needs {var} on OpenShift");
        }
        let public_url = gateway["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "NAC_PUBLIC_URL")
            .expect("NAC_PUBLIC_URL")["value"]
            .clone();
        assert_eq!(public_url, json!(format!("https://{host}")));
        for kind in ["ServiceMonitor", "PrometheusRule"] {
            assert!(of_kind(objects, kind).next().is_some(), "openshift: {kind}");
        }
        // HTTPS to the gateway with the service-serving certificate: the router re-encrypts,
        // the probes and Prometheus speak HTTPS.
        assert_eq!(route["spec"]["tls"]["termination"], "reencrypt");
        let service = find(objects, "Service", "nac-gateway");
        assert_eq!(
            service["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"],
            "nac-gateway-serving-cert"
        );
        for var in ["NAC_TLS_CERT_FILE", "NAC_TLS_KEY_FILE"] {
            assert!(env.contains(&var), "the gateway needs {var} on OpenShift");
        }
        let monitor = find(objects, "ServiceMonitor", "nac-gateway");
        assert_eq!(monitor["spec"]["endpoints"][0]["scheme"], "https");
        assert_eq!(
            monitor["spec"]["endpoints"][0]["tlsConfig"]["serverName"],
            "nac-gateway.openshift-adp.svc"
        );
    } else {
        for kind in ["ServiceMonitor", "PrometheusRule", "Route", "OAuthClient"] {
            assert!(
                of_kind(objects, kind).next().is_none(),
                "the kubernetes overlay applies where {kind} may not exist"
            );
        }
        find(objects, "Ingress", "nac-gateway");
    }
    for object in objects {
        assert!(
            object["kind"] != "Namespace",
            "{overlay}: NAC never creates (nor, on uninstall, deletes) a namespace"
        );
    }
}

/// The previous release's objects, from its fixture.
fn previous_release(overlay: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo(&format!(
        "tests/fixtures/install/v0.1.0-{overlay}.yaml"
    )))
    .unwrap();
    yaml_documents(&text)
}

/// Every property path of a CRD version's schema with its type.
fn schema_paths(schema: &Value, at: String, out: &mut BTreeMap<String, String>) {
    let kind = schema["type"].as_str().unwrap_or("").to_string();
    out.insert(at.clone(), kind);
    if let Some(props) = schema["properties"].as_object() {
        for (name, sub) in props {
            schema_paths(sub, format!("{at}.{name}"), out);
        }
    }
    if schema["items"].is_object() {
        schema_paths(&schema["items"], format!("{at}[]"), out);
    }
    if schema["additionalProperties"].is_object() {
        schema_paths(&schema["additionalProperties"], format!("{at}{{}}"), out);
    }
}

/// Applying this release over the previous one works without deleting anything: the Deployment
/// selectors are unchanged (immutable), and every CRD version and field of the previous
/// release is still served with the same type (additive changes only).
fn check_upgrade_compatibility(overlay: &str, objects: &[Value]) {
    let previous = previous_release(overlay);
    for old in of_kind(&previous, "Deployment") {
        let name = old["metadata"]["name"].as_str().unwrap();
        let new = find(objects, "Deployment", name);
        assert_eq!(
            old["spec"]["selector"], new["spec"]["selector"],
            "{overlay}: Deployment {name}'s selector is immutable"
        );
    }
    for old in of_kind(&previous, "CustomResourceDefinition") {
        let name = old["metadata"]["name"].as_str().unwrap();
        let new = find(objects, "CustomResourceDefinition", name);
        assert_eq!(old["spec"]["scope"], new["spec"]["scope"], "{name}");
        assert_eq!(old["spec"]["names"]["kind"], new["spec"]["names"]["kind"]);
        for old_version in old["spec"]["versions"].as_array().unwrap() {
            let version = old_version["name"].as_str().unwrap();
            let new_version = new["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == version)
                .unwrap_or_else(|| panic!("{name}: version {version} is gone"));
            assert_eq!(new_version["served"], true, "{name} {version}");
            let (mut before, mut after) = (BTreeMap::new(), BTreeMap::new());
            schema_paths(
                &old_version["schema"]["openAPIV3Schema"],
                String::new(),
                &mut before,
            );
            schema_paths(
                &new_version["schema"]["openAPIV3Schema"],
                String::new(),
                &mut after,
            );
            for (path, kind) in before {
                assert_eq!(
                    after.get(&path),
                    Some(&kind),
                    "{name} {version}: field {path} ({kind}) must stay as it was"
                );
            }
        }
        let storage = |crd: &Value| {
            crd["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
        };
        assert_eq!(
            storage(old),
            storage(new),
            "{name}: a new storage version needs a conversion, not just a manifest"
        );
    }
}

#[test]
fn rendered_manifests_follow_the_rules() {
    let cache = tempfile::tempdir().unwrap();
    let Some(kubectl) = local_kubectl(cache.path()) else {
        return;
    };
    for overlay in ["openshift", "kubernetes"] {
        let objects = render(&kubectl, &format!("deploy/overlays/{overlay}"));
        check_rendered(overlay, &objects);
        check_upgrade_compatibility(overlay, &objects);
    }
}

// ---------------------------------------------------------------------------------------------
// The live install
// ---------------------------------------------------------------------------------------------

/// What OADP (or a Velero install) has put into the cluster before NAC: the OADP namespace,
/// Velero's service account (cluster-admin, as OADP installs it) and the admin's default
/// BackupStorageLocation, here on the simulator's local object store.
const VELERO_INSTALL: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: openshift-adp
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: velero
  namespace: openshift-adp
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: velero
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
  - kind: ServiceAccount
    name: velero
    namespace: openshift-adp
"#;

const DEFAULT_LOCATION: &str = r#"
apiVersion: velero.io/v1
kind: BackupStorageLocation
metadata:
  name: default
  namespace: openshift-adp
spec:
  provider: nac.openshift.io/local
  default: true
  objectStorage:
    bucket: velero
    prefix: velero
"#;

/// A tenant's namespace owned by alice, with something to back up.
fn tenant_yaml(ns: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: alice-admin
  namespace: {ns}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: admin
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: User
    name: alice
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: {ns}
  labels:
    app: web
data:
  greeting: hello from {ns}
"#
    )
}

fn nab_yaml(ns: &str, name: &str) -> String {
    format!(
        "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  backupSpec: {{}}\n"
    )
}

/// The `nac` processes of one run, killed when dropped; their logs' tails are printed when the
/// case fails.
struct Processes {
    children: Vec<(String, Child, PathBuf)>,
}

impl Processes {
    fn stop(&mut self) {
        for (_, child, _) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.children.clear();
    }

    /// Stops the replicas whose names start with `prefix` as the kubelet does: SIGTERM, then
    /// `grace` to exit; asserts each stopped on its own and cleanly (status 0).
    fn terminate(&mut self, prefix: &str, grace: Duration) {
        let (mut stopping, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.children)
            .into_iter()
            .partition(|(name, _, _)| name.starts_with(prefix));
        self.children = rest;
        for (_, child, _) in &stopping {
            let status = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let deadline = Instant::now() + grace;
        for (name, child, log) in &mut stopping {
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{name} did not stop within the pod's grace period ({grace:?}) after SIGTERM:\n{}",
                        std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            assert!(
                status.success(),
                "{name} stopped uncleanly after SIGTERM ({status}):\n{}",
                std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
            );
        }
    }

    fn log_tail(&self, name: &str) -> String {
        self.children
            .iter()
            .find(|(n, _, _)| n == name)
            .and_then(|(_, _, log)| std::fs::read_to_string(log).ok())
            .map(|text| {
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(40)..].join("\n")
            })
            .unwrap_or_default()
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for (name, _, _) in &self.children {
                eprintln!("--- {name} (last lines)\n{}", self.log_tail(name));
            }
        }
        self.stop();
    }
}

/// A running replica: where its probes and API answer.
struct Started {
    addr: SocketAddr,
    /// The readiness probe's path.
    ready: String,
    /// HTTP, or HTTPS with the service-serving certificate.
    transport: Transport,
}

impl Started {
    /// A GET on this container's port, over its transport.
    fn get(&self, path: &str, token: Option<&str>) -> Option<(u16, String)> {
        get_over(&self.transport, self.addr, path, token)
    }

    /// Its URL, for clients (`nac backup …`).
    fn url(&self) -> String {
        match &self.transport {
            Transport::Http => format!("http://{}", self.addr),
            Transport::Https { .. } => format!("https://localhost:{}", self.addr.port()),
        }
    }

    /// The readiness probe's answer (status), `None` when nothing answers.
    fn readiness(&self) -> Option<u16> {
        self.get(&self.ready, None).map(|(status, _)| status)
    }

    /// A controller replica's `nac_controller_leading` (1 on the leader, 0 on a standby).
    fn leading(&self) -> Option<u8> {
        let (_, text) = self.get("/metrics", None)?;
        text.lines()
            .find_map(|line| line.strip_prefix("nac_controller_leading "))?
            .trim()
            .parse()
            .ok()
    }
}

/// One overlay's live case.
struct Install<'a> {
    overlay: &'static str,
    plane: &'a RealControlPlane,
    admin: Kubectl,
    alice: Kubectl,
    work: PathBuf,
    object_store: PathBuf,
    database_url: String,
    /// The service CA this test plays (OpenShift's issues service-serving certificates).
    service_ca: std::sync::OnceLock<(PathBuf, rcgen::Issuer<'static, rcgen::KeyPair>)>,
}

impl Install<'_> {
    fn dir(&self) -> String {
        format!("deploy/overlays/{}", self.overlay)
    }

    /// The cluster before NAC, and the README's Secrets.
    fn prerequisites(&self) {
        let mut crds = vec!["deploy/dev/velero-crds"];
        if self.overlay == "openshift" {
            crds.extend(["deploy/dev/oadp-crds", "deploy/dev/openshift-crds"]);
        }
        for dir in crds {
            self.admin.run(&["apply", "-f", dir]).ok();
        }
        self.admin
            .run(&[
                "wait",
                "--for=condition=Established",
                "crd",
                "--all",
                "--timeout=60s",
            ])
            .ok();
        self.admin.stdin(&["apply", "-f", "-"], VELERO_INSTALL).ok();
        if self.overlay == "openshift" {
            self.admin
                .run(&["create", "namespace", "openshift-config-managed"])
                .ok();
        }
        self.admin
            .stdin(&["apply", "-f", "-"], DEFAULT_LOCATION)
            .ok();
        // README, "Installing NAC": the Secrets the pods need, created before the first apply.
        self.admin
            .run(&[
                "-n",
                OADP,
                "create",
                "secret",
                "generic",
                "nac-history-database",
                &format!("--from-literal=url={}", self.database_url),
            ])
            .ok();
        let key = hex::encode(rand::random::<[u8; 32]>());
        self.admin
            .run(&[
                "-n",
                OADP,
                "create",
                "secret",
                "generic",
                "nac-gateway-session",
                &format!("--from-literal=key={key}"),
            ])
            .ok();
        if self.overlay == "openshift" {
            self.admin
                .run(&[
                    "-n",
                    OADP,
                    "create",
                    "secret",
                    "generic",
                    "nac-oauth-client",
                    &format!("--from-literal=secret={}", self.oauth_secret()),
                ])
                .ok();
        }
    }

    fn oauth_secret(&self) -> String {
        "s3cr3t-for-the-install-test".to_string()
    }

    /// `kubectl apply -k` with a server-side dry run first.
    fn apply_overlay(&self) {
        let dir = self.dir();
        let dry = self
            .admin
            .run(&["apply", "-k", &dir, "--dry-run=server"])
            .ok()
            .to_string();
        assert!(dry.contains("deployment.apps/nac-gateway"), "{dry}");
        let applied = self.admin.run(&["apply", "-k", &dir]).ok().to_string();
        eprintln!("[{}] kubectl apply -k {dir}:\n{applied}", self.overlay);
        self.admin
            .run(&[
                "wait",
                "--for=condition=Established",
                "crd",
                "--all",
                "--timeout=60s",
            ])
            .ok();
        if self.overlay == "openshift" {
            // README: the OAuthClient's secret is set once, outside the manifests, and later
            // applies keep it.
            self.admin
                .run(&[
                    "patch",
                    "oauthclient",
                    "nac-console",
                    "--type=merge",
                    "-p",
                    &json!({"secret": self.oauth_secret()}).to_string(),
                ])
                .ok();
            self.admin.run(&["apply", "-k", &dir]).ok();
            let client = self
                .admin
                .run(&["get", "oauthclient", "nac-console", "-o", "json"])
                .json();
            assert_eq!(client["secret"], self.oauth_secret().as_str());
        }
    }

    /// Waits until kube-controller-manager has aggregated NAC's tenant roles into `admin`.
    fn wait_for_tenant_rights(&self, ns: &str) {
        eventually(
            "alice may create nonadminbackups (aggregated roles)",
            || {
                let out = self
                    .alice
                    .run(&["auth", "can-i", "create", "nonadminbackups", "-n", ns]);
                (out.code == 0 && out.stdout.trim() == "yes").then_some(())
            },
        );
    }

    /// A kubeconfig holding a token of `namespace/account` (TokenRequest).
    fn service_account_kubeconfig(&self, namespace: &str, account: &str) -> PathBuf {
        let token = self
            .admin
            .run(&[
                "-n",
                namespace,
                "create",
                "token",
                account,
                "--duration=24h",
            ])
            .ok()
            .trim()
            .to_string();
        self.plane
            .write_kubeconfig(&format!("sa-{namespace}-{account}"), &token)
    }

    /// Starts `nac sim velero` as Velero's service account and waits for the default location.
    fn start_velero(&self, processes: &mut Processes) {
        let kubeconfig = self.service_account_kubeconfig(OADP, "velero");
        let log = self.work.join("velero.log");
        let child = Command::new(env!("CARGO_BIN_EXE_nac"))
            .args([
                "sim",
                "velero",
                "--namespace",
                OADP,
                "--bsl-interval-secs",
                "1",
            ])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--object-store-root")
            .arg(&self.object_store)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(self.work.join("velero.err")).unwrap())
            .spawn()
            .unwrap();
        processes.children.push(("velero".into(), child, log));
        eventually("the default BackupStorageLocation to be Available", || {
            let out = self.admin.run(&[
                "-n",
                OADP,
                "get",
                "backupstoragelocation",
                "default",
                "-o",
                "jsonpath={.status.phase}",
            ]);
            (out.code == 0 && out.stdout == "Available").then_some(())
        });
    }

    /// Starts the container of Deployment `name` as the kubelet would: its args and
    /// environment, its mounted Secrets, its ServiceAccount's token; waits until it is ready.
    /// Starts as many replicas of Deployment `name` as it asks for (each answering its
    /// liveness probe); see [`Install::start_replica`].
    fn start_deployment(
        &self,
        objects: &[Value],
        name: &str,
        processes: &mut Processes,
    ) -> Vec<Started> {
        let replicas = find(objects, "Deployment", name)["spec"]["replicas"]
            .as_u64()
            .unwrap_or(1);
        (0..replicas)
            .map(|replica| self.start_replica(objects, name, replica, processes))
            .collect()
    }

    fn start_replica(
        &self,
        objects: &[Value],
        name: &str,
        replica: u64,
        processes: &mut Processes,
    ) -> Started {
        let deployment = find(objects, "Deployment", name);
        let namespace = deployment["metadata"]["namespace"].as_str().unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        let pod_name = format!("{name}-7d9f8c6b5-x2k4{replica}");
        let root = self.work.join(format!("pod-{pod_name}"));
        std::fs::create_dir_all(&root).unwrap();

        // Volumes: each mounted Secret (or ConfigMap) becomes a directory of files.
        let mut mounts: Vec<(String, PathBuf)> = Vec::new();
        for mount in container["volumeMounts"].as_array().into_iter().flatten() {
            let volume_name = mount["name"].as_str().unwrap();
            let volume = pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == volume_name)
                .unwrap();
            let dir = root.join(volume_name);
            std::fs::create_dir_all(&dir).unwrap();
            let (kind, object) = if let Some(secret) = volume["secret"]["secretName"].as_str() {
                ("secret", secret)
            } else if let Some(map) = volume["configMap"]["name"].as_str() {
                ("configmap", map)
            } else {
                panic!("{name}: unexpected volume {volume}");
            };
            let data = self
                .admin
                .run(&["-n", namespace, "get", kind, object, "-o", "json"])
                .json()["data"]
                .clone();
            for (key, value) in data.as_object().unwrap() {
                let bytes = if kind == "secret" {
                    base64::engine::general_purpose::STANDARD
                        .decode(value.as_str().unwrap())
                        .unwrap()
                } else {
                    value.as_str().unwrap().as_bytes().to_vec()
                };
                std::fs::write(dir.join(key), bytes).unwrap();
            }
            mounts.push((mount["mountPath"].as_str().unwrap().to_string(), dir));
        }
        let relocate = |value: &str| -> String {
            for (mount_path, dir) in &mounts {
                if let Some(rest) = value.strip_prefix(mount_path.as_str()) {
                    return format!("{}{rest}", dir.display());
                }
            }
            value.to_string()
        };

        // Environment, resolved as the kubelet does; nothing else is passed on.
        let mut env: Vec<(String, String)> = Vec::new();
        for var in container["env"].as_array().into_iter().flatten() {
            let key = var["name"].as_str().unwrap().to_string();
            let value = if let Some(value) = var["value"].as_str() {
                relocate(value)
            } else if let Some(secret) = var["valueFrom"]["secretKeyRef"].as_object() {
                let data = self
                    .admin
                    .run(&[
                        "-n",
                        namespace,
                        "get",
                        "secret",
                        secret["name"].as_str().unwrap(),
                        "-o",
                        "json",
                    ])
                    .json();
                let encoded = data["data"][secret["key"].as_str().unwrap()]
                    .as_str()
                    .unwrap_or_else(|| panic!("{name}: the Secret has no key {secret:?}"))
                    .to_string();
                String::from_utf8(
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .unwrap(),
                )
                .unwrap()
            } else if let Some(field) = var["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                match field {
                    "metadata.name" => pod_name.clone(),
                    "metadata.namespace" => namespace.to_string(),
                    other => panic!("{name}: unsupported fieldRef {other}"),
                }
            } else {
                panic!("{name}: unsupported env {var}");
            };
            env.push((key, value));
        }

        // Args, with the listening address moved to a free loopback port (the probes' port).
        let (flag, port) = listen_flag(container);
        let local = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let args: Vec<String> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let arg = a.as_str().unwrap();
                if arg.starts_with(&format!("{flag}=")) {
                    assert!(arg.ends_with(&format!(":{port}")));
                    format!("{flag}={local}")
                } else {
                    relocate(arg)
                }
            })
            .collect();
        let account = pod["serviceAccountName"].as_str().unwrap();
        let kubeconfig = self.service_account_kubeconfig(namespace, account);
        let log = self.work.join(format!("{pod_name}.log"));
        eprintln!(
            "[{}] starting {name}: nac {} (env {:?}, service account {namespace}/{account})",
            self.overlay,
            args.join(" "),
            env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>()
        );
        let child = Command::new(env!("CARGO_BIN_EXE_nac"))
            .args(&args)
            .env_clear()
            .envs(env)
            .env("KUBECONFIG", &kubeconfig)
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(self.work.join(format!("{pod_name}.err"))).unwrap())
            .spawn()
            .unwrap();
        processes.children.push((pod_name.clone(), child, log));
        let live = container["livenessProbe"]["httpGet"]["path"]
            .as_str()
            .unwrap();
        let ready = container["readinessProbe"]["httpGet"]["path"]
            .as_str()
            .unwrap();
        let transport = match container["readinessProbe"]["httpGet"]["scheme"].as_str() {
            Some("HTTPS") => {
                assert_eq!(container["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
                self.service_ca_client(&format!("{name}.{namespace}.svc"))
            }
            _ => Transport::Http,
        };
        eventually(&format!("{pod_name} to answer its liveness probe"), || {
            if let Some((_, child, _)) = processes
                .children
                .iter_mut()
                .find(|(n, _, _)| *n == pod_name)
                && let Ok(Some(status)) = child.try_wait()
            {
                let err = std::fs::read_to_string(self.work.join(format!("{pod_name}.err")))
                    .unwrap_or_default();
                panic!("{pod_name} exited ({status}):\n{err}");
            }
            let (live_status, _) = get_over(&transport, local, live, None)?;
            (live_status == 200).then_some(())
        });
        Started {
            addr: local,
            ready: ready.to_string(),
            transport,
        }
    }

    /// README, "Uninstalling": NAC's finalizers off every NAC object left, once the controller
    /// is stopped (the same loop as the README's shell commands).
    fn remove_finalizers(&self) {
        for kind in [
            "nonadminbackups",
            "nonadminbackupstoragelocations",
            "nonadminrestores",
            "nonadminschedules",
            "nonadmindownloadrequests",
        ] {
            let listed = self
                .admin
                .run(&[
                    "get",
                    kind,
                    "--all-namespaces",
                    "-o",
                    "jsonpath={range .items[*]}{.metadata.namespace} {.metadata.name}{\"\\n\"}{end}",
                ])
                .ok()
                .to_string();
            for line in listed.lines().filter(|l| !l.trim().is_empty()) {
                let (ns, name) = line.split_once(' ').unwrap();
                self.admin
                    .run(&[
                        "-n",
                        ns,
                        "patch",
                        kind,
                        name,
                        "--type=merge",
                        "-p",
                        r#"{"metadata":{"finalizers":null}}"#,
                    ])
                    .ok();
            }
        }
        let buckets = self
            .admin
            .run(&["get", "backupbuckets", "-o", "name"])
            .ok()
            .to_string();
        for bucket in buckets.lines().filter(|l| !l.trim().is_empty()) {
            self.admin
                .run(&[
                    "patch",
                    bucket,
                    "--type=merge",
                    "-p",
                    r#"{"metadata":{"finalizers":null}}"#,
                ])
                .ok();
        }
    }

    /// The `nac` CLI against the gateway as alice.
    fn nac_as_alice(&self, gateway: &Started, args: &[&str]) -> Out {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nac"));
        c.args(args)
            .env_remove("KUBECONFIG")
            .env("NAC_SERVER", gateway.url())
            .env("NAC_TOKEN", self.plane.token("alice"));
        if let Transport::Https { ca_file, .. } = &gateway.transport {
            c.arg("--certificate-authority").arg(ca_file);
        }
        run(c, None)
    }

    /// What OpenShift's service CA operator does for a Service annotated
    /// `service.beta.openshift.io/serving-cert-secret-name`: a `kubernetes.io/tls` Secret of
    /// that name with a certificate for `<service>.<namespace>.svc` (and `.cluster.local`),
    /// signed by the service CA. The real control plane has no such operator; this test is it.
    fn issue_service_serving_certificates(&self, objects: &[Value]) {
        for service in of_kind(objects, "Service") {
            let Some(secret) = service["metadata"]["annotations"]
                ["service.beta.openshift.io/serving-cert-secret-name"]
                .as_str()
            else {
                continue;
            };
            let (name, namespace) = (
                service["metadata"]["name"].as_str().unwrap(),
                service["metadata"]["namespace"].as_str().unwrap(),
            );
            let ca = self.service_ca();
            let key = rcgen::KeyPair::generate().unwrap();
            let params = rcgen::CertificateParams::new(vec![
                format!("{name}.{namespace}.svc"),
                format!("{name}.{namespace}.svc.cluster.local"),
                "localhost".to_string(),
            ])
            .unwrap();
            let cert = params.signed_by(&key, &ca.1).unwrap();
            let dir = self.work.join(format!("serving-cert-{name}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
            std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
            self.admin
                .run(&[
                    "-n",
                    namespace,
                    "create",
                    "secret",
                    "tls",
                    secret,
                    &format!("--cert={}", dir.join("tls.crt").display()),
                    &format!("--key={}", dir.join("tls.key").display()),
                ])
                .ok();
        }
    }

    /// The service CA (its PEM file, and the issuer of serving certificates), made once.
    fn service_ca(&self) -> &(PathBuf, rcgen::Issuer<'static, rcgen::KeyPair>) {
        self.service_ca.get_or_init(|| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let cert = params.self_signed(&key).unwrap();
            let file = self.work.join("service-ca.crt");
            std::fs::write(&file, cert.pem()).unwrap();
            (file, rcgen::Issuer::new(params, key))
        })
    }

    /// HTTPS trusting only the service CA, verifying `server_name`.
    fn service_ca_client(&self, server_name: &str) -> Transport {
        let (ca_file, _) = self.service_ca();
        let mut roots = rustls::RootCertStore::empty();
        let pem = std::fs::read(ca_file).unwrap();
        for cert in
            <rustls::pki_types::CertificateDer as rustls::pki_types::pem::PemObject>::pem_slice_iter(
                &pem,
            )
        {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Transport::Https {
            config: std::sync::Arc::new(config),
            server_name: server_name.to_string(),
            ca_file: ca_file.clone(),
        }
    }

    /// Waits until NonAdminBackup `ns/name`'s Velero backup has Completed.
    fn wait_backup_completed(&self, ns: &str, name: &str) {
        eventually(&format!("NonAdminBackup {ns}/{name} Completed"), || {
            let out = self
                .alice
                .run(&["-n", ns, "get", "nab", name, "-o", "json"]);
            if out.code != 0 {
                return None;
            }
            let nab: Value = serde_json::from_str(&out.stdout).ok()?;
            (nab["status"]["veleroBackup"]["status"]["phase"] == "Completed").then_some(())
        });
    }
}

/// Waits until every controller replica is ready (the leader, and the others as hot standbys
/// that read the Lease: a 2-replica Deployment shows 2/2), exactly one of them reporting that it
/// leads, and every gateway replica is ready (caches loaded).
fn wait_ready(controllers: &[Started], gateways: &[Started]) {
    eventually("every controller replica ready, one leading", || {
        let ready = controllers.iter().all(|c| c.readiness() == Some(200));
        let leading: Vec<u8> = controllers
            .iter()
            .map(Started::leading)
            .collect::<Option<_>>()?;
        (ready
            && leading.iter().filter(|l| **l == 1).count() == 1
            && leading.iter().filter(|l| **l == 0).count() == controllers.len() - 1)
            .then_some(())
    });
    eventually("every gateway replica to be ready", || {
        gateways
            .iter()
            .all(|g| g.readiness() == Some(200))
            .then_some(())
    });
}

/// Names of the metrics a `/metrics` text declares or shows.
fn exported_metrics(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            names.insert(name.to_string());
            if kind == "histogram" {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        } else if !line.starts_with('#') {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The `nac_*` metric names the monitoring component's alerts and dashboard use.
fn metrics_used_by_monitoring() -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for file in [
        "deploy/components/monitoring/prometheusrule.yaml",
        "deploy/components/monitoring/dashboards/nac.json",
    ] {
        let text = std::fs::read_to_string(repo(file)).unwrap();
        for (i, _) in text.match_indices("nac_") {
            let before = text[..i].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            used.insert(name);
        }
    }
    used
}

fn install_case(overlay: &'static str) {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let Some(plane) = RealControlPlane::start_own() else {
        return;
    };
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let admin = Kubectl {
        bin: plane.assets.join("kubectl"),
        kubeconfig: Some(plane.write_kubeconfig("install-admin", plane.token("admin"))),
        cache: work.path().join("kube-cache"),
    };
    let alice = admin.as_user(plane.write_kubeconfig("install-alice", plane.token("alice")));
    let object_store = work.path().join("object-store");
    std::fs::create_dir_all(&object_store).unwrap();
    let database_url = postgres_support::PgCluster::shared().fresh_database();
    let install = Install {
        overlay,
        plane: &plane,
        admin,
        alice,
        work: work.path().to_path_buf(),
        object_store,
        database_url,
        service_ca: std::sync::OnceLock::new(),
    };
    let lap = |what: &str| {
        eprintln!(
            "[{overlay}] {what} at {:.1} s",
            started.elapsed().as_secs_f64()
        )
    };

    // 1-2. Prerequisites, then the overlay.
    install.prerequisites();
    lap("prerequisites installed");
    install.apply_overlay();
    lap("overlay applied (dry run, then for real)");
    let objects = render(&install.admin, &install.dir());
    check_rendered(overlay, &objects);
    install.issue_service_serving_certificates(&objects);

    // 3. Velero, the controller and the gateway as their Deployments start them.
    let tenant = "tenant-a";
    install
        .admin
        .stdin(&["apply", "-f", "-"], &tenant_yaml(tenant))
        .ok();
    install.wait_for_tenant_rights(tenant);
    let mut processes = Processes {
        children: Vec::new(),
    };
    install.start_velero(&mut processes);
    let controllers = install.start_deployment(&objects, "nac-controller", &mut processes);
    let gateways = install.start_deployment(&objects, "nac-gateway", &mut processes);
    wait_ready(&controllers, &gateways);
    let gateway = &gateways[0];
    lap("Velero simulator, controller (one leads) and gateway replicas ready");

    // 4. A tenant's backup, restore and gateway reads.
    for name in ["backup-1", "backup-2"] {
        install
            .alice
            .stdin(&["apply", "-f", "-"], &nab_yaml(tenant, name))
            .ok();
    }
    install.wait_backup_completed(tenant, "backup-1");
    install.wait_backup_completed(tenant, "backup-2");
    lap("backup-1 and backup-2 Completed");
    install
        .admin
        .run(&["-n", tenant, "delete", "configmap", "web-config"])
        .ok();
    let restore = install.nac_as_alice(
        gateway,
        &[
            "restore",
            "create",
            "restore-1",
            "--from-backup",
            "backup-1",
            "-n",
            tenant,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    restore.ok();
    let restored = install
        .admin
        .run(&["-n", tenant, "get", "configmap", "web-config", "-o", "json"])
        .json();
    assert_eq!(restored["data"]["greeting"], format!("hello from {tenant}"));
    lap("restore-1 Completed through the gateway, web-config back");
    let read = install
        .nac_as_alice(
            gateway,
            &["backup", "get", "backup-1", "-n", tenant, "-o", "json"],
        )
        .json();
    assert_eq!(read["metadata"]["name"], "backup-1");
    assert_eq!(
        read["status"]["veleroBackup"]["status"]["phase"],
        "Completed"
    );
    // The history the leader recorded in Postgres, read by the gateway from the same store.
    eventually("the gateway to serve backup-1's history", || {
        let (status, body) = gateway.get(
            &format!("/api/v1/namespaces/{tenant}/history"),
            Some(install.plane.token("alice")),
        )?;
        (status == 200 && body.contains("backup-1") && body.contains("restore-1")).then_some(())
    });
    lap("gateway reads (backup get, history) answered");

    // Several gateway replicas: a list page fetched from one continues on another (the shared
    // paging key of `nac-gateway-session`), and the console's session settings say whether
    // OpenShift sign-in is configured.
    let token = install.plane.token("alice");
    let (status, first) = gateways[0]
        .get(
            &format!("/api/v1/namespaces/{tenant}/backups?limit=1"),
            Some(token),
        )
        .unwrap();
    assert_eq!(status, 200, "{first}");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["items"][0]["metadata"]["name"], "backup-1");
    let next = first["metadata"]["continue"].as_str().unwrap();
    let last = gateways.last().unwrap();
    let (status, second) = last
        .get(
            &format!("/api/v1/namespaces/{tenant}/backups?limit=1&continue={next}"),
            Some(token),
        )
        .unwrap();
    assert_eq!(status, 200, "the next page from another replica: {second}");
    let second: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(second["items"][0]["metadata"]["name"], "backup-2");
    for replica in &gateways {
        let (status, settings) = replica.get("/api/v1/session/config", None).unwrap();
        assert_eq!(status, 200);
        let settings: Value = serde_json::from_str(&settings).unwrap();
        assert_eq!(settings["oauth"], overlay == "openshift", "{settings}");
    }
    lap("a page continued on another gateway replica");

    // Every nac_* metric the alerts and the dashboard use is exported.
    let mut exported = BTreeSet::new();
    for replica in controllers.iter().chain(&gateways) {
        let (status, text) = replica.get("/metrics", None).unwrap();
        assert_eq!(status, 200);
        exported.extend(exported_metrics(&text));
    }
    let missing: Vec<String> = metrics_used_by_monitoring()
        .into_iter()
        .filter(|m| !exported.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "monitoring uses metrics nac does not export: {missing:?}"
    );

    // 5. Uninstall, keeping the backups (README, "Uninstalling"): while the controller runs,
    // the tenants' schedules, restores and download requests go (NAC removes their Velero
    // objects); then the controller stops, NAC's finalizers come off what is left, and
    // `kubectl delete -k` removes NAC.
    install
        .admin
        .run(&[
            "delete",
            "nonadminschedules,nonadminrestores,nonadmindownloadrequests",
            "--all",
            "--all-namespaces",
            "--timeout=120s",
        ])
        .ok();
    install
        .admin
        .run(&[
            "-n",
            OADP,
            "scale",
            "deployment/nac-controller",
            "--replicas=0",
        ])
        .ok();
    // The pods go as the kubelet stops them: SIGTERM, then terminationGracePeriodSeconds.
    for name in ["nac-controller", "nac-gateway"] {
        let grace = find(&objects, "Deployment", name)["spec"]["template"]["spec"]
            ["terminationGracePeriodSeconds"]
            .as_u64()
            .unwrap();
        processes.terminate(name, Duration::from_secs(grace));
    }
    lap("controller and gateway replicas stopped on SIGTERM within the grace period");
    processes.stop();
    install.remove_finalizers();
    let deleted = install
        .admin
        .run(&["delete", "-k", &install.dir(), "--timeout=120s"])
        .ok()
        .to_string();
    eprintln!("[{overlay}] kubectl delete -k:\n{deleted}");
    let crds = install
        .admin
        .run(&["get", "crd", "-o", "name"])
        .ok()
        .to_string();
    for line in crds.lines() {
        assert!(
            !line.ends_with(".oadp.openshift.io") || line.contains("dataprotectionapplications"),
            "NAC's CRD left behind: {line}"
        );
    }
    install
        .admin
        .run(&["delete", "namespace", tenant, "--timeout=90s"])
        .ok();
    let namespaces = install
        .admin
        .run(&["get", "namespaces", "-o", "json"])
        .json();
    for ns in namespaces["items"].as_array().unwrap() {
        assert_eq!(
            ns["status"]["phase"], "Active",
            "namespace {} is stuck",
            ns["metadata"]["name"]
        );
    }
    assert!(
        namespaces["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|ns| ns["metadata"]["name"] == OADP),
        "uninstalling NAC leaves OADP's namespace"
    );
    let data_kept = walk_files(&install.object_store)
        .iter()
        .any(|p| p.to_string_lossy().contains("/backups/"));
    assert!(data_kept, "the backups' data stays in the bucket");
    let velero_backups = install
        .admin
        .run(&["-n", OADP, "get", "backups.velero.io", "-o", "name"])
        .ok()
        .to_string();
    assert_eq!(
        velero_backups.lines().count(),
        2,
        "backup-1's and backup-2's Velero Backups stay: {velero_backups}"
    );
    lap("uninstalled: no CRD or namespace stuck, OADP's namespace and the data kept");

    // 6. Upgrade: the previous release with a tenant's backup made under it, then this one.
    let fixture = format!("tests/fixtures/install/v0.1.0-{overlay}.yaml");
    install.admin.run(&["apply", "-f", &fixture]).ok();
    install
        .admin
        .run(&[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ])
        .ok();
    let tenant = "tenant-b";
    install
        .admin
        .stdin(&["apply", "-f", "-"], &tenant_yaml(tenant))
        .ok();
    install.wait_for_tenant_rights(tenant);
    install
        .alice
        .stdin(&["apply", "-f", "-"], &nab_yaml(tenant, "before-upgrade"))
        .ok();
    lap("previous release applied, a backup requested under it");
    install.apply_overlay();
    lap("upgraded (dry run, then for real)");
    let live = install
        .admin
        .run(&["-n", OADP, "get", "deployment", "nac-gateway", "-o", "json"])
        .json();
    let rendered = find(&objects, "Deployment", "nac-gateway");
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["env"],
        rendered["spec"]["template"]["spec"]["containers"][0]["env"],
        "the gateway takes the new environment"
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["volumes"],
        rendered["spec"]["template"]["spec"]["volumes"],
        "the previous release's volumes are replaced"
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["securityContext"],
        rendered["spec"]["template"]["spec"]["securityContext"]
    );
    let mut processes = Processes {
        children: Vec::new(),
    };
    install.start_velero(&mut processes);
    let controllers = install.start_deployment(&objects, "nac-controller", &mut processes);
    let gateways = install.start_deployment(&objects, "nac-gateway", &mut processes);
    wait_ready(&controllers, &gateways);
    install.wait_backup_completed(tenant, "before-upgrade");
    let read = install
        .nac_as_alice(
            &gateways[0],
            &[
                "backup",
                "get",
                "before-upgrade",
                "-n",
                tenant,
                "-o",
                "json",
            ],
        )
        .json();
    assert_eq!(
        read["status"]["veleroBackup"]["status"]["phase"],
        "Completed"
    );
    lap("the upgraded NAC completed the backup requested under the previous release");
}

/// Every file under `dir`.
fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn openshift_overlay_installs_runs_uninstalls_and_upgrades() {
    install_case("openshift");
}

#[test]
fn kubernetes_overlay_installs_runs_uninstalls_and_upgrades() {
    install_case("kubernetes");
}
