//! One test cluster, two servers: every end-to-end case gets a cluster through this one API, either
//! the in-process emulator (a fresh one per test) or a real control plane (etcd, kube-apiserver and,
//! when present, kube-controller-manager from `KUBEBUILDER_ASSETS`, started once per test binary
//! on free loopback ports, static-token users, torn down by a watchdog when the binary exits even
//! after a panic or a kill: no orphan processes).
//!
//! On the real server the cases of one binary run one at a time (NAC's controllers reconcile
//! cluster-wide), each in namespaces of its own; what an earlier case left behind (its tenant
//! namespaces, NAC and Velero objects) is purged before the next starts. NAC is installed as an
//! admin would with `deploy/`: CRDs, the controller's and gateway's service accounts with exactly
//! that RBAC, the tenant ClusterRoles aggregated into `admin`/`edit`/`view` by the real
//! kube-controller-manager.
//!
//! `KUBEBUILDER_ASSETS` is envtest's convention (`setup-envtest use -p path`); `scripts/test.sh`
//! sets it from `../shared/k8s/install.sh` when that exists. Without it the real-server cases
//! print one line and return; with `CI=true` a missing control plane fails them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use nac::api::client_identity::Component;
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{self, OADP_NAMESPACE};
use serde_json::json;

/// Which server a case runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// NAC's in-process API emulator (`src/sim/apiserver`).
    Emulator,
    /// A real kube-apiserver with etcd (and kube-controller-manager).
    Real,
}

impl std::fmt::Display for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Server::Emulator => "emulator",
            Server::Real => "real kube-apiserver",
        })
    }
}

/// Users the real server knows by static token (the emulator adds any user on demand).
pub const USERS: &[&str] = &[
    "alice", "bob", "carol", "dave", "erin", "frank", "mallory", "viewer",
];

/// Label on every namespace a case creates, so the next case can purge it.
const HARNESS_LABEL: &str = "nac-test/harness";

/// A cluster for one test case.
pub struct TestCluster {
    pub server: Server,
    emulator: Option<ApiServer>,
    real: Option<&'static RealControlPlane>,
    admin: Client,
    /// Held for the whole case on the real server: cases of one binary take turns.
    _turn: Option<tokio::sync::MutexGuard<'static, ()>>,
}

static REAL_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
static REAL: OnceLock<Option<RealControlPlane>> = OnceLock::new();
static NAC_INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
static NEXT_NAME: AtomicU32 = AtomicU32::new(0);

fn init_crypto_and_logs() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Ok(filter) = std::env::var("NAC_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    }
}

impl TestCluster {
    /// A fresh emulator with NAC installed (`demo::install`: CRDs, `deploy/` RBAC, the demo's
    /// tenants team-a/team-b).
    pub async fn emulator() -> TestCluster {
        Self::emulator_with(EmulatorConfig::default()).await
    }

    /// [`TestCluster::emulator`] with the emulator configured by `config`.
    pub async fn emulator_with(config: EmulatorConfig) -> TestCluster {
        init_crypto_and_logs();
        let server = ApiServer::new(config).unwrap();
        let admin = server.client(&server.admin_token());
        demo::install(&admin).await.unwrap();
        TestCluster {
            server: Server::Emulator,
            emulator: Some(server),
            real: None,
            admin,
            _turn: None,
        }
    }

    /// The binary's real control plane with NAC installed and the previous case's objects
    /// purged, or `None` (after one line saying why) when no control plane can be found here.
    pub async fn real() -> Option<TestCluster> {
        init_crypto_and_logs();
        let real =
            tokio::task::spawn_blocking(|| REAL.get_or_init(RealControlPlane::start).as_ref())
                .await
                .unwrap()?;
        let turn = REAL_TURN.lock().await;
        let admin = real.client_as(&real.tokens["admin"], Component::Cli);
        NAC_INSTALLED
            .get_or_init(|| async {
                install_nac_on_real(&admin).await;
            })
            .await;
        purge_previous_case(&admin).await;
        Some(TestCluster {
            server: Server::Real,
            emulator: None,
            real: Some(real),
            admin,
            _turn: Some(turn),
        })
    }

    /// The real server's URL and its CA (PEM), for clients of a caller's own (benchmarks'
    /// raw connections); `None` on the emulator.
    pub fn real_endpoint(&self) -> Option<(&str, &str)> {
        self.real
            .map(|real| (real.server.as_str(), real.ca_pem.as_str()))
    }

    /// The cluster-admin's client.
    pub fn admin(&self) -> Client {
        self.admin.clone()
    }

    /// A client acting with `token` (as `nac/<version>`, like the emulator's own clients).
    pub fn client(&self, token: &str) -> Client {
        self.client_as(token, Component::Cli)
    }

    /// A client acting with `token` for `component` (its User-Agent and field manager), as
    /// that part of NAC builds its clients in production.
    pub fn client_as(&self, token: &str, component: Component) -> Client {
        match (&self.emulator, self.real) {
            (Some(server), _) => server.client_as(token, &component.identity()),
            (None, Some(real)) => real.client_as(token, component),
            _ => unreachable!("a test cluster has a server"),
        }
    }

    /// Makes clients for tokens, as the gateway makes one per caller (`nac-gateway/<version>`).
    pub fn client_factory(&self) -> impl Fn(&str) -> Client + Send + Sync + 'static {
        let emulator = self.emulator.clone();
        let real = self.real;
        let identity = Component::Gateway.identity();
        move |token: &str| match (&emulator, real) {
            (Some(server), _) => server.client_as(token, &identity),
            (None, Some(real)) => real.client_as(token, Component::Gateway),
            _ => unreachable!("a test cluster has a server"),
        }
    }

    /// The emulator, for cases that inspect or fault it (none on the real server).
    pub fn emulator_server(&self) -> Option<&ApiServer> {
        self.emulator.as_ref()
    }

    /// A bearer token for user `user` (one of [`USERS`] on the real server).
    pub fn user_token(&self, user: &str) -> String {
        match (&self.emulator, self.real) {
            (Some(server), _) => server.add_user(user, &[]),
            (None, Some(real)) => real
                .tokens
                .get(user)
                .unwrap_or_else(|| panic!("the real control plane has no static user {user}"))
                .clone(),
            _ => unreachable!(),
        }
    }

    /// A client for user `user`.
    pub fn user(&self, user: &str) -> Client {
        self.client(&self.user_token(user))
    }

    /// A day-long token of service account `ns/name` (TokenRequest, on both servers).
    pub async fn sa_token(&self, ns: &str, name: &str) -> String {
        super::sa_token(&self.admin, ns, name).await
    }

    /// The API server's URL and a kubeconfig file for `token` (real server only: the
    /// emulator's kubectl suite serves it over its own socket).
    pub fn kubeconfig(&self, name: &str, token: &str) -> Option<PathBuf> {
        self.real.map(|real| real.write_kubeconfig(name, token))
    }

    /// A kubeconfig whose user reads its token from `token_file` (real server only).
    pub fn kubeconfig_with_token_file(&self, name: &str, token_file: &Path) -> Option<PathBuf> {
        self.real
            .map(|real| real.write_kubeconfig_with_token_file(name, token_file))
    }

    /// Restarts the real server's kube-apiserver ([`RealControlPlane::restart_apiserver`]);
    /// `None` on the emulator.
    pub async fn restart_apiserver(&self, down: Duration) -> Option<Duration> {
        let real = self.real?;
        Some(
            tokio::task::spawn_blocking(move || real.restart_apiserver(down))
                .await
                .unwrap(),
        )
    }

    /// Compacts the real server's etcd to its current revision
    /// ([`RealControlPlane::compact_etcd`]); `None` on the emulator.
    pub async fn compact_etcd(&self) -> Option<u64> {
        let real = self.real?;
        Some(
            tokio::task::spawn_blocking(move || real.compact_etcd())
                .await
                .unwrap(),
        )
    }

    /// The directory of the control plane's binaries (`KUBEBUILDER_ASSETS`), real server only.
    pub fn assets(&self) -> Option<&Path> {
        self.real.map(|real| real.assets.as_path())
    }

    /// A namespace name no other case of this binary uses: `base` plus a short unique suffix,
    /// cut or padded (with `x`) to exactly `len` characters when `len` is given.
    pub fn unique_name(&self, base: &str, len: Option<usize>) -> String {
        let tag = format!("{:03}", NEXT_NAME.fetch_add(1, Ordering::Relaxed));
        match len {
            None => format!("{base}-{tag}"),
            Some(len) => {
                let room = len - tag.len() - 1;
                let mut head: String = base.chars().take(room).collect();
                while head.len() < room {
                    head.push('x');
                }
                format!("{head}-{tag}")
            }
        }
    }

    /// Creates namespace `ns` owned by `user` (bound to the aggregated `admin` ClusterRole, as
    /// a project's owner is) with the demo's small application in it.
    pub async fn tenant_namespace(&self, user: &str, ns: &str) {
        let namespaces: Api<Namespace> = Api::all(self.admin.clone());
        let object: Namespace = serde_json::from_value(json!({
            "metadata": {"name": ns, "labels": {HARNESS_LABEL: "true"}}
        }))
        .unwrap();
        namespaces
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating namespace {ns}: {e}"));
        self.bind(ns, user, "User", "admin").await;
        demo::seed_workload(&self.admin, ns).await.unwrap();
    }

    /// Binds `subject` (a `User`, or a `ServiceAccount` of `ns`) to ClusterRole `role` in `ns`,
    /// and returns once the server's authorizer grants it: the real server's RBAC authorizer reads
    /// bindings from an informer, so a request sent right after the create may still be refused
    /// (seen in CI: a `view` binding not yet in force when the caller's first request came).
    pub async fn bind(&self, ns: &str, subject: &str, kind: &str, role: &str) {
        let user = if kind == "ServiceAccount" {
            format!("system:serviceaccount:{ns}:{subject}")
        } else {
            subject.to_string()
        };
        let subject_json = if kind == "ServiceAccount" {
            json!({"kind": "ServiceAccount", "name": subject, "namespace": ns})
        } else {
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject})
        };
        self.create_binding(ns, subject_json, role).await;
        if self.server != Server::Real {
            return; // the emulator authorizes from the objects themselves
        }
        if let Some(rule) = self.first_granted_rule(role).await {
            self.wait_until_allowed(&user, ns, &rule, role).await;
        }
    }

    async fn create_binding(&self, ns: &str, subject: serde_json::Value, role: &str) {
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"generateName": format!("{role}-"), "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [subject]
        }))
        .unwrap();
        Api::<RoleBinding>::namespaced(self.admin.clone(), ns)
            .create(&PostParams::default(), &binding)
            .await
            .unwrap_or_else(|e| panic!("binding {role} in {ns}: {e}"));
    }

    /// One namespaced request ClusterRole `role` grants (verb, API group, resource), taken from
    /// its first rule naming them without wildcards; `None` when it has no such rule.
    async fn first_granted_rule(&self, role: &str) -> Option<(String, String, String)> {
        let roles: Api<ClusterRole> = Api::all(self.admin.clone());
        // Aggregated roles (`admin`, `view`) are filled in by kube-controller-manager; NAC's
        // rules were aggregated when it was installed, so any rule there is already final.
        let role = roles
            .get(role)
            .await
            .unwrap_or_else(|e| panic!("{role}: {e}"));
        role.rules.unwrap_or_default().into_iter().find_map(|rule| {
            let verb = rule.verbs.iter().find(|v| *v != "*")?.clone();
            let group = rule
                .api_groups
                .as_ref()?
                .iter()
                .find(|g| *g != "*")?
                .clone();
            let resource = rule
                .resources
                .as_ref()?
                .iter()
                .find(|r| *r != "*" && !r.contains('/'))?
                .clone();
            rule.resource_names
                .as_ref()
                .is_none_or(Vec::is_empty)
                .then_some((verb, group, resource))
        })
    }

    /// Waits until a SubjectAccessReview says `user` may do `rule` in `ns`.
    async fn wait_until_allowed(
        &self,
        user: &str,
        ns: &str,
        rule: &(String, String, String),
        role: &str,
    ) {
        let (verb, group, resource) = rule;
        let reviews: Api<SubjectAccessReview> = Api::all(self.admin.clone());
        let review: SubjectAccessReview = serde_json::from_value(json!({
            "spec": {
                "user": user,
                "resourceAttributes": {"namespace": ns, "verb": verb, "group": group, "resource": resource}
            }
        }))
        .unwrap();
        eventually_true(
            &format!("{user}'s {role} binding in {ns} to grant {verb} {resource}.{group}"),
            30,
            || {
                let reviews = reviews.clone();
                let review = review.clone();
                async move {
                    reviews
                        .create(&PostParams::default(), &review)
                        .await
                        .ok()
                        .and_then(|answer| answer.status)
                        .is_some_and(|status| status.allowed)
                }
            },
        )
        .await;
    }
}

/// Waits until `probe` answers `Some`, polling every 100 ms for up to `secs` seconds.
pub async fn eventually<T, F, Fut>(what: &str, secs: u64, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {secs} s waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `probe` answers `Ok`, polling every 50 ms for up to `secs` seconds; on timeout
/// panics naming `what` and what `probe` last saw instead (its last `Err`).
pub async fn eventually_seen<T, L, F, Fut>(what: &str, secs: u64, mut probe: F) -> T
where
    L: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, L>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let last = match probe().await {
            Ok(value) => return value,
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {secs} s waiting for {what}; last: {last}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `probe` answers `true`, polling every 50 ms for up to `secs` seconds.
pub async fn eventually_true<F, Fut>(what: &str, secs: u64, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_seen(what, secs, || {
        let answer = probe();
        async move { if answer.await { Ok(()) } else { Err("false") } }
    })
    .await
}

/// Waits until object `name` that `api` serves exists and `done` holds of it (as JSON), for up
/// to `secs` seconds; returns that JSON. On timeout the panic shows the object as last seen.
pub async fn wait_for_object<K>(
    api: &Api<K>,
    name: &str,
    secs: u64,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let last = std::sync::Mutex::new(serde_json::Value::Null);
    let what = format!("{}/{name}", api.resource_url());
    eventually_seen(&what, secs, || async {
        if let Some(object) = api.get_opt(name).await.unwrap() {
            let seen = serde_json::to_value(&object).unwrap();
            if done(&seen) {
                return Ok(seen);
            }
            *last.lock().unwrap() = seen;
        }
        Err(last.lock().unwrap().clone())
    })
    .await
}

/// Waits until object `name` that `api` serves is gone, for up to `secs` seconds; on timeout
/// the panic shows the object still there.
pub async fn wait_until_gone<K>(api: &Api<K>, name: &str, secs: u64)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let what = format!("{}/{name} to be gone", api.resource_url());
    eventually_seen(&what, secs, || async {
        match api.get_opt(name).await.unwrap() {
            None => Ok(()),
            Some(object) => Err(format!(
                "still exists: {}",
                serde_json::to_string(&object).unwrap()
            )),
        }
    })
    .await
}

/// Runs each named `async fn(TestCluster)` as two tests, `NAME::emulator` and `NAME::real`.
/// (`crate::` on purpose: it expands in the test binary that declares `mod support`.)
#[macro_export]
#[allow(clippy::crate_in_macro_def)]
macro_rules! on_both_servers {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn emulator() {
                super::$case(crate::support::cluster::TestCluster::emulator().await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn real() {
                if let Some(cluster) = crate::support::cluster::TestCluster::real().await {
                    super::$case(cluster).await;
                }
            }
        }
    )*};
}

// ---------------------------------------------------------------------------------------------
// The real control plane
// ---------------------------------------------------------------------------------------------

/// etcd + kube-apiserver (+ kube-controller-manager) started from `KUBEBUILDER_ASSETS`.
pub struct RealControlPlane {
    pub assets: PathBuf,
    pub dir: PathBuf,
    pub server: String,
    ca_pem: String,
    tokens: BTreeMap<String, String>,
    /// kube-apiserver's arguments, to start it again ([`RealControlPlane::restart_apiserver`]).
    apiserver_args: Vec<String>,
    /// etcd's client URL (plain HTTP on loopback), for [`RealControlPlane::compact_etcd`].
    etcd_url: String,
}

impl RealControlPlane {
    /// Starts the control plane, or says why it cannot (`None`); under `CI=true` a missing
    /// control plane is a failure.
    fn start() -> Option<RealControlPlane> {
        Self::assets().map(Self::start_from)
    }

    /// A control plane of the caller's own, stopped when dropped (for suites that need a
    /// pristine cluster per case, such as the kubectl suite), or `None` as [`Self::start`].
    pub fn start_own() -> Option<RealControlPlane> {
        Self::start()
    }

    /// `KUBEBUILDER_ASSETS` when it holds a kube-apiserver; otherwise one line saying so (a
    /// failure under `CI=true`).
    fn assets() -> Option<PathBuf> {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        match std::env::var_os("KUBEBUILDER_ASSETS") {
            Some(dir) if Path::new(&dir).join("kube-apiserver").is_file() => {
                Some(PathBuf::from(dir))
            }
            other => {
                let why = match other {
                    Some(dir) => format!(
                        "KUBEBUILDER_ASSETS={} holds no kube-apiserver",
                        Path::new(&dir).display()
                    ),
                    None => "KUBEBUILDER_ASSETS is not set".to_string(),
                };
                assert!(
                    !ci,
                    "CI=true but no real control plane: {why} (scripts/test.sh sets it from ../shared/k8s/install.sh)"
                );
                eprintln!(
                    "SKIPPED on the real server: {why} (point it at envtest's assets or ../shared/k8s/install.sh)"
                );
                None
            }
        }
    }

    /// The static token of `user` (`admin` or one of [`USERS`]).
    pub fn token(&self, user: &str) -> &str {
        self.tokens
            .get(user)
            .unwrap_or_else(|| panic!("the real control plane has no static user {user}"))
    }

    /// Starts a control plane from `assets`, a second time (fresh state and ports) when the
    /// first does not come up: on a loaded 2-core machine a kube-apiserver once stayed unready
    /// for its whole 120 s with nothing in its log to say why. What the first attempt's
    /// `/readyz?verbose` said is printed either way.
    fn start_from(assets: PathBuf) -> RealControlPlane {
        match Self::try_start_from(&assets) {
            Ok(plane) => plane,
            Err(first) => {
                eprintln!("the real control plane did not come up; starting a fresh one. {first}");
                Self::try_start_from(&assets).unwrap_or_else(|second| {
                    panic!("the real control plane did not come up twice.\nfirst: {first}\nsecond: {second}")
                })
            }
        }
    }

    fn try_start_from(assets: &Path) -> Result<RealControlPlane, String> {
        let assets = assets.to_path_buf();
        let dir = std::env::temp_dir().join(format!(
            "nac-control-plane-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(dir.join("certs")).unwrap();
        spawn_watchdog(&dir);
        let [etcd_port, peer_port, api_port, kcm_port] = free_ports();

        let key = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.join("sa.key"), key.serialize_pem()).unwrap();
        std::fs::write(dir.join("sa.pub"), key.public_key_pem()).unwrap();

        let mut tokens = BTreeMap::new();
        let mut csv = String::new();
        for user in std::iter::once("admin").chain(USERS.iter().copied()) {
            let token = hex::encode(rand::random::<[u8; 24]>());
            let groups = match user {
                "admin" => ",\"system:masters\"",
                "bob" => ",\"devs\"",
                _ => "",
            };
            csv.push_str(&format!("{token},{user},uid-{user}{groups}\n"));
            tokens.insert(user.to_string(), token);
        }
        std::fs::write(dir.join("tokens.csv"), csv).unwrap();

        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        spawn(
            &dir,
            "etcd",
            Command::new(assets.join("etcd")).args([
                "--data-dir",
                &dir.join("etcd").display().to_string(),
                "--listen-client-urls",
                &etcd_url,
                "--advertise-client-urls",
                &etcd_url,
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{peer_port}"),
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ]),
        );
        let etcd_up = poll_until(
            "etcd accepts connections",
            &dir,
            Duration::from_secs(30),
            || std::net::TcpStream::connect(("127.0.0.1", etcd_port)).is_ok(),
        );
        if let Err(why) = etcd_up {
            stop_processes(&dir);
            return Err(why);
        }
        let file = |name: &str| dir.join(name).display().to_string();
        let apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--secure-port={api_port}"),
            format!("--cert-dir={}", file("certs")),
            format!("--token-auth-file={}", file("tokens.csv")),
            "--authorization-mode=RBAC".to_string(),
            "--service-account-issuer=https://kubernetes.default.svc".to_string(),
            format!("--service-account-key-file={}", file("sa.pub")),
            format!("--service-account-signing-key-file={}", file("sa.key")),
            "--service-cluster-ip-range=10.96.0.0/16".to_string(),
            "--api-audiences=https://kubernetes.default.svc".to_string(),
        ];
        spawn(
            &dir,
            "apiserver",
            Command::new(assets.join("kube-apiserver")).args(&apiserver_args),
        );
        let server = format!("https://127.0.0.1:{api_port}");
        let crt = dir.join("certs/apiserver.crt");
        let mut plane = RealControlPlane {
            assets: assets.clone(),
            dir: dir.clone(),
            server,
            ca_pem: String::new(),
            tokens,
            apiserver_args,
            etcd_url: etcd_url.clone(),
        };
        // On failure `plane` is dropped here: its processes stop and its state goes.
        poll_until(
            "kube-apiserver's certificate",
            &dir,
            Duration::from_secs(60),
            || crt.is_file(),
        )?;
        plane.ca_pem = std::fs::read_to_string(&crt).unwrap();
        let admin_kubeconfig = plane.write_kubeconfig("admin", &plane.tokens["admin"].clone());
        plane.poll_ready()?;
        if assets.join("kube-controller-manager").is_file() {
            spawn(
                &dir,
                "kcm",
                Command::new(assets.join("kube-controller-manager")).args([
                    &format!("--kubeconfig={}", admin_kubeconfig.display()),
                    "--leader-elect=false",
                    "--controllers=*",
                    &format!("--service-account-private-key-file={}", file("sa.key")),
                    &format!("--root-ca-file={}", crt.display()),
                    "--bind-address=127.0.0.1",
                    &format!("--secure-port={kcm_port}"),
                ]),
            );
        } else {
            eprintln!(
                "note: {} has no kube-controller-manager: no namespace deletion, garbage collection or ClusterRole aggregation",
                assets.display()
            );
        }
        eprintln!(
            "real control plane: {} (kube-apiserver from {}, state in {})",
            plane.server,
            assets.display(),
            dir.display()
        );
        Ok(plane)
    }

    /// Waits until kube-apiserver answers `/readyz` with 200 (through kubectl, as an admin).
    fn wait_ready(&self) {
        if let Err(why) = self.poll_ready() {
            panic!("{why}");
        }
    }

    /// [`Self::wait_ready`], answering what went wrong (with `/readyz?verbose`) instead.
    fn poll_ready(&self) -> Result<(), String> {
        let admin_kubeconfig = self.dir.join("kubeconfig-admin");
        let kubectl = self.assets.join("kubectl");
        let readyz = |path: &str| {
            Command::new(&kubectl)
                .args(["--kubeconfig", &admin_kubeconfig.display().to_string()])
                .args(["get", "--raw", path])
                .stdin(Stdio::null())
                .output()
        };
        poll_until(
            "kube-apiserver /readyz",
            &self.dir,
            Duration::from_secs(120),
            || readyz("/readyz").is_ok_and(|out| out.status.success()),
        )
        .map_err(|why| match readyz("/readyz?verbose") {
            Ok(out) => format!(
                "{why}--- /readyz?verbose\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(error) => format!("{why}--- /readyz?verbose: kubectl failed: {error}"),
        })
    }

    /// Stops kube-apiserver as a node's kubelet would (SIGTERM; SIGKILL after 20 s), keeps it
    /// down for `down`, starts it again on the same etcd, port and certificates, and waits for
    /// `/readyz`. Blocking; returns how long it took from the stop's start to ready again.
    pub fn restart_apiserver(&self, down: Duration) -> Duration {
        let started = Instant::now();
        let pid = std::fs::read_to_string(self.dir.join("apiserver.pid")).unwrap();
        let pid = pid.trim();
        // Exited means gone or a zombie: this process started it and never waits on it.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
            })
        };
        let _ = Command::new("kill").args(["-TERM", pid]).status();
        while alive() {
            if started.elapsed() > Duration::from_secs(20) {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(down);
        spawn(
            &self.dir,
            "apiserver",
            Command::new(self.assets.join("kube-apiserver")).args(&self.apiserver_args),
        );
        self.wait_ready();
        started.elapsed()
    }

    /// Compacts etcd's history up to its current revision, as etcd's periodic compaction
    /// does (through etcd's JSON gateway: `etcdctl compact` without etcdctl). A watch resumed
    /// from an older resourceVersion then gets 410 Gone. Blocking; returns the revision.
    pub fn compact_etcd(&self) -> u64 {
        let post = |path: &str, body: &str| -> serde_json::Value {
            use std::io::{Read, Write};
            let address = self.etcd_url.trim_start_matches("http://");
            let mut stream = std::net::TcpStream::connect(address).unwrap();
            write!(
                stream,
                "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            let (head, body) = answer.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 200"), "etcd {path}: {answer}");
            let body = if head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked")
            {
                String::from_utf8(crate::support::dechunk(body.as_bytes())).unwrap()
            } else {
                body.to_string()
            };
            serde_json::from_str(&body).unwrap()
        };
        // Any key: only the header's revision matters.
        let range = post("/v3/kv/range", r#"{"key":"Lw=="}"#);
        let revision: u64 = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("no revision in {range}"));
        post(
            "/v3/kv/compaction",
            &format!(r#"{{"revision":"{revision}","physical":true}}"#),
        );
        revision
    }

    /// A client for `token` sending `component`'s identity, built as NAC's own clients are.
    pub fn client_as(&self, token: &str, component: Component) -> Client {
        let mut config = kube::Config::new(self.server.parse().unwrap());
        use rustls::pki_types::pem::PemObject;
        let certs: Vec<Vec<u8>> =
            rustls::pki_types::CertificateDer::pem_slice_iter(self.ca_pem.as_bytes())
                .map(|c| c.unwrap().to_vec())
                .collect();
        config.root_cert = Some(certs);
        config.auth_info.token = Some(token.to_string().into());
        config.read_timeout = Some(Duration::from_secs(60));
        component.identity().client(config).unwrap()
    }

    /// Writes `kubeconfig-NAME` for `token` and returns its path.
    pub fn write_kubeconfig(&self, name: &str, token: &str) -> PathBuf {
        self.write_kubeconfig_for(name, &format!("token: {token}"))
    }

    /// A kubeconfig whose user reads its token from `token_file` (as a pod's projected,
    /// rotated service-account token is read): clients reload it.
    pub fn write_kubeconfig_with_token_file(&self, name: &str, token_file: &Path) -> PathBuf {
        self.write_kubeconfig_for(name, &format!("tokenFile: {}", token_file.display()))
    }

    /// A kubeconfig for this server whose user `name` has the one credential line `user`.
    fn write_kubeconfig_for(&self, name: &str, user: &str) -> PathBuf {
        use base64::Engine;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let path = self.dir.join(format!("kubeconfig-{name}"));
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {name}\n  user:\n    {user}\ncontexts:\n- name: real\n  context:\n    cluster: real\n    user: {name}\ncurrent-context: real\n",
            server = self.server
        );
        std::fs::write(&path, yaml).unwrap();
        path
    }
}

impl Drop for RealControlPlane {
    /// Stops the processes and removes the state (the binary's shared control plane lives in
    /// a static and is never dropped: its watchdog stops it).
    fn drop(&mut self) {
        stop_processes(&self.dir);
    }
}

/// Four free loopback ports.
fn free_ports() -> [u16; 4] {
    let listeners: Vec<std::net::TcpListener> = (0..4)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    [ports[0], ports[1], ports[2], ports[3]]
}

/// Starts `command` with its output in `dir/NAME.log` and its pid in `dir/NAME.pid` (which
/// the watchdog reads).
// The children are never waited on here: the watchdog stops them once the binary is gone.
#[allow(clippy::zombie_processes)]
fn spawn(dir: &Path, name: &str, command: &mut Command) {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    std::fs::write(dir.join(format!("{name}.pid")), child.id().to_string()).unwrap();
}

/// A shell that outlives nothing: once this test binary's process is gone (finished, panicked
/// or killed) it stops every process whose pid file is in `dir` and removes `dir`.
#[allow(clippy::zombie_processes)]
fn spawn_watchdog(dir: &Path) {
    // SIGKILL: the state is thrown away, and a kube-apiserver asked to stop gracefully can wait
    // on its (already stopped) etcd for a long time.
    let script = r#"
        while kill -0 "$0" 2>/dev/null; do sleep 0.3; done
        for f in "$1"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
        rm -rf "$1"
    "#;
    Command::new("sh")
        .args(["-c", script])
        .arg(std::process::id().to_string())
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start the control plane's watchdog (sh)");
}

/// Stops the processes started in `dir` and removes its state; SIGKILL, as the watchdog does
/// (a graceful stop can hang without etcd).
fn stop_processes(dir: &Path) {
    for name in ["kcm", "apiserver", "etcd"] {
        if let Ok(pid) = std::fs::read_to_string(dir.join(format!("{name}.pid"))) {
            let _ = Command::new("sh")
                .args(["-c", "kill -9 \"$0\" 2>/dev/null", pid.trim()])
                .status();
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Polls `ready` until it holds; on timeout answers what it waited for with the tail of the
/// control plane's logs.
fn poll_until(
    what: &str,
    dir: &Path,
    limit: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    while !ready() {
        if Instant::now() >= deadline {
            let mut logs = String::new();
            for name in ["etcd", "apiserver", "kcm"] {
                if let Ok(text) = std::fs::read_to_string(dir.join(format!("{name}.log"))) {
                    let tail: Vec<&str> = text.lines().rev().take(15).collect();
                    logs.push_str(&format!("--- {name}.log (last lines)\n"));
                    for line in tail.into_iter().rev() {
                        logs.push_str(line);
                        logs.push('\n');
                    }
                }
            }
            return Err(format!(
                "the real control plane did not come up: {what} within {limit:?}\n{logs}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// NAC on the real server
// ---------------------------------------------------------------------------------------------

/// Installs NAC as an admin would: the CRDs (waiting until the server serves them), then
/// `demo::install` (namespaces, `deploy/` RBAC, Velero's service account, the default BSL),
/// then waits for kube-controller-manager to aggregate the tenant roles into `admin`.
async fn install_nac_on_real(admin: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for crd in nac::api::crds::nac_crds()
        .into_iter()
        .chain(nac::api::crds::velero_crds())
    {
        match crds.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("installing CRD {:?}: {e}", crd.metadata.name),
        }
        let name = crd.metadata.name.clone().unwrap();
        eventually(&format!("CRD {name} Established"), 30, || {
            let crds = crds.clone();
            let name = name.clone();
            async move {
                let crd = crds.get(&name).await.ok()?;
                crd.status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
                    .then_some(())
            }
        })
        .await;
    }
    demo::install(admin)
        .await
        .unwrap_or_else(|e| panic!("installing NAC on the real server: {e}"));
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    eventually(
        "kube-controller-manager to aggregate NAC's tenant roles into admin",
        60,
        || {
            let roles = roles.clone();
            async move {
                let admin_role = roles.get("admin").await.ok()?;
                admin_role
                    .rules?
                    .iter()
                    .any(|r| {
                        r.resources
                            .as_ref()
                            .is_some_and(|rs| rs.iter().any(|r| r == "nonadminbackups"))
                    })
                    .then_some(())
            }
        },
    )
    .await;
}

/// The kinds an earlier case may have left behind, with whether they are namespaced.
fn leftover_kinds() -> Vec<(ApiResource, bool)> {
    let kind = |group: &str, version: &str, kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    };
    let nac = |k: &str, p: &str| kind("oadp.openshift.io", "v1alpha1", k, p);
    let velero = |k: &str, p: &str| kind("velero.io", "v1", k, p);
    vec![
        (nac("NonAdminBackup", "nonadminbackups"), true),
        (nac("NonAdminRestore", "nonadminrestores"), true),
        (nac("NonAdminSchedule", "nonadminschedules"), true),
        (
            nac("NonAdminDownloadRequest", "nonadmindownloadrequests"),
            true,
        ),
        (
            nac(
                "NonAdminBackupStorageLocation",
                "nonadminbackupstoragelocations",
            ),
            true,
        ),
        (
            nac(
                "NonAdminBackupStorageLocationRequest",
                "nonadminbackupstoragelocationrequests",
            ),
            true,
        ),
        (nac("DeletionAction", "deletionactions"), false),
        // A case's admin policy (the DPA CRD is installed only by the cases that use it).
        (
            kind(
                "oadp.openshift.io",
                "v1alpha1",
                "DataProtectionApplication",
                "dataprotectionapplications",
            ),
            true,
        ),
        (nac("BackupEntry", "backupentries"), false),
        (nac("BackupBucket", "backupbuckets"), false),
        (velero("Backup", "backups"), true),
        (velero("Restore", "restores"), true),
        (velero("Schedule", "schedules"), true),
        (velero("DeleteBackupRequest", "deletebackuprequests"), true),
        (velero("DownloadRequest", "downloadrequests"), true),
        (
            velero("BackupStorageLocation", "backupstoragelocations"),
            true,
        ),
    ]
}

/// Removes what earlier cases left: every NAC and Velero object (finalizers dropped: their
/// controllers are gone with the case) but the admin's default BSL, the credentials NAC copied
/// into the OADP namespace, the Events of the shared namespaces, and the cases' namespaces.
async fn purge_previous_case(admin: &Client) {
    for (resource, namespaced) in leftover_kinds() {
        let api: Api<DynamicObject> = Api::all_with(admin.clone(), &resource);
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for object in list.items {
            let name = object.metadata.name.clone().unwrap_or_default();
            let ns = object.metadata.namespace.clone();
            if resource.kind == "BackupStorageLocation"
                && ns.as_deref() == Some(OADP_NAMESPACE)
                && name == demo::DEFAULT_LOCATION
            {
                continue;
            }
            let api: Api<DynamicObject> = match (&ns, namespaced) {
                (Some(ns), true) => Api::namespaced_with(admin.clone(), ns, &resource),
                _ => Api::all_with(admin.clone(), &resource),
            };
            if object
                .metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| !f.is_empty())
            {
                let _ = api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                    )
                    .await;
            }
            let _ = api.delete(&name, &DeleteParams::default()).await;
        }
    }
    // Events about earlier cases' objects (the real server keeps them for an hour; a case that
    // reuses an object name would read them).
    for ns in demo::TENANTS
        .iter()
        .map(|t| t.namespace)
        .chain([OADP_NAMESPACE])
    {
        let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(admin.clone(), ns);
        let _ = events
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await;
    }
    // Leader-election Leases of the OADP namespace: an earlier case's holder (another identity,
    // or a lease taken for a minute) would keep this case's controllers waiting.
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(admin.clone(), OADP_NAMESPACE);
    let _ = leases
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await;
    // The credentials NAC copied into the OADP namespace for earlier cases' locations.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(admin.clone(), OADP_NAMESPACE);
    let managed = format!(
        "{}={}",
        nac::api::nonadmin::labels::MANAGED_BY,
        nac::api::nonadmin::labels::MANAGED_BY_VALUE
    );
    if let Ok(copies) = secrets.list(&ListParams::default().labels(&managed)).await {
        for secret in copies.items {
            if let Some(name) = secret.metadata.name {
                let _ = secrets.delete(&name, &DeleteParams::default()).await;
            }
        }
    }
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ours = namespaces
        .list(&ListParams::default().labels(&format!("{HARNESS_LABEL}=true")))
        .await
        .unwrap();
    for ns in ours.items {
        if ns.metadata.deletion_timestamp.is_none() {
            let name = ns.metadata.name.unwrap_or_default();
            let _ = namespaces.delete(&name, &DeleteParams::default()).await;
        }
    }
}
