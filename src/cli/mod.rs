//! Command-line interface: parses arguments and wires the parts together; holds no logic of its own.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod pipeline;
mod run;

/// NAC: self-service Velero backups for Kubernetes/OpenShift namespace owners.
#[derive(Debug, Parser)]
#[command(name = "nac", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the whole system on this machine: a Kubernetes API emulator with NAC's and Velero's
    /// CRDs, the Velero simulator, NAC's controllers, demo tenants with their own kubeconfigs and
    /// sample workloads.
    Demo(DemoArgs),
    /// Run NAC's reconcilers against a cluster (turns tenants' non-admin objects into Velero's).
    Controller(ControllerArgs),
    /// Run NAC's gateway: the REST API (and live streams) for namespace owners and CI pipelines.
    Gateway(GatewayArgs),
    /// Run the gateway and the controllers in one process (small installs).
    Serve(ServeArgs),
    /// Print the CustomResourceDefinitions (NAC's; with --velero also Velero's) as YAML.
    Crds(CrdsArgs),
    /// Print the gateway's OpenAPI document (checked in at openapi/openapi.json).
    Openapi,
    /// Print the gateway's GraphQL schema as SDL (checked in at schema/schema.graphql).
    GraphqlSchema,
    /// Apply the history store's migrations to the configured database (the other commands
    /// also apply them at start).
    Migrate(MigrateArgs),
    /// Back up a namespace through the gateway, for CI pipelines (create, get, list, wait, logs, delete).
    Backup(pipeline::BackupCommand),
    /// Restore a namespace through the gateway, for CI pipelines (create, get, list, wait, logs, delete).
    Restore(pipeline::RestoreCommand),
    /// Simulators for machines without a cluster.
    #[command(subcommand)]
    Sim(SimCommand),
}

/// `nac sim ...`.
#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Serve the Kubernetes API emulator.
    Apiserver(ApiserverArgs),
    /// Play Velero 1.18 against a cluster that has Velero's CRDs (the emulator or a real one).
    Velero(VeleroArgs),
}

/// Knobs of the Velero simulator, shared by `nac sim velero` and `nac demo`.
#[derive(Debug, Args, Clone)]
pub struct SimulatorArgs {
    /// Velero's `--concurrent-backups`.
    #[arg(long, default_value_t = 1)]
    pub concurrent_backups: usize,
    /// Simulated time spent on each backed-up or restored item, in milliseconds (makes queues form).
    #[arg(long, value_name = "MS")]
    pub item_delay_ms: Option<u64>,
    /// Run the simulator's clock this many times faster than real time (TTLs, schedules, URL expiry).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Outcome of backups and restores without the sim.velero.nac.openshift.io/outcome annotation:
    /// succeed, fail, partially-fail, hang or slow.
    #[arg(long, default_value = "succeed")]
    pub outcome: String,
    /// Address of the simulator's object-store download endpoint (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub download_listen: SocketAddr,
    /// How often BackupStorageLocations are validated and synced, in seconds (Velero: 60).
    #[arg(long, default_value_t = 60)]
    pub bsl_interval_secs: u64,
}

/// Options of `nac controller`.
#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// Kubeconfig of the controller's identity (default: $KUBECONFIG, ~/.kube/config or the
    /// in-cluster service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The OADP namespace, where Velero and NAC's admin-side objects live.
    #[arg(long, default_value = "openshift-adp")]
    pub oadp_namespace: String,
    /// Serve `/healthz`, `/readyz` and `/metrics` (Prometheus text) on this address.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub history: HistoryOptions,
    #[command(flatten)]
    pub pool: PoolOptions,
    /// Root directory of the local object-store provider (nac.openshift.io/local): the same
    /// directory the Velero simulator keeps its buckets under (`nac sim velero
    /// --object-store-root`). Without it, BackupBuckets on that provider are never listed and
    /// their purges wait for Velero's next sync; S3 buckets need nothing.
    #[arg(long, env = "NAC_OBJECT_STORE_ROOT", value_name = "DIR")]
    pub object_store_root: Option<PathBuf>,
    #[command(flatten)]
    pub shutdown: ShutdownOptions,
}

/// The gateway's own HTTPS: a PEM certificate chain and key (OpenShift's service-serving
/// certificate Secret mounted as files, cert-manager's, or any pair). Both or neither.
#[derive(Debug, Args, Clone)]
pub struct TlsOptions {
    /// Serve HTTPS with this PEM certificate chain (leaf first); re-read when the file changes,
    /// so a rotated certificate is served without a restart.
    #[arg(
        long,
        env = "NAC_TLS_CERT_FILE",
        value_name = "FILE",
        requires = "tls_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,
    /// The PEM private key of --tls-cert-file.
    #[arg(
        long,
        env = "NAC_TLS_KEY_FILE",
        value_name = "FILE",
        requires = "tls_cert_file"
    )]
    pub tls_key_file: Option<PathBuf>,
}

impl TlsOptions {
    /// The files to serve HTTPS with, when given.
    pub fn serving_files(&self) -> Option<crate::gateway::tls::ServingFiles> {
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(cert), Some(key)) => Some(crate::gateway::tls::ServingFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        }
    }
}

/// How a long-running command stops, shared by `nac controller`, `nac gateway`, `nac serve`
/// and `nac demo`.
#[derive(Debug, Args, Clone)]
pub struct ShutdownOptions {
    /// How long a stop may take (Go duration). On SIGTERM (how Kubernetes stops a pod) or
    /// SIGINT the controllers start no new reconcile, let the writes in flight finish and
    /// release the leader Lease; the gateway stops accepting, ends its event streams and
    /// subscriptions with a `shutdown` reason and lets open requests finish. Past this the
    /// process exits with status 1. Keep it below the pod's terminationGracePeriodSeconds (30 s
    /// by default).
    #[arg(
        long,
        env = "NAC_SHUTDOWN_GRACE_PERIOD",
        default_value = "25s",
        value_name = "DURATION"
    )]
    pub shutdown_grace_period: String,
}

/// Settings of the shared backup pool (BackupBuckets and BackupEntries), for the commands that
/// run the controllers.
#[derive(Debug, Args, Clone)]
pub struct PoolOptions {
    /// How long the backups of a deleted namespace stay in the shared backup pool before they
    /// are deleted (Go duration); a namespace's `oadp.openshift.io/backup-deletion-grace-period`
    /// label overrides it.
    #[arg(long, env = "NAC_BACKUP_DELETION_GRACE_PERIOD", default_value = "720h")]
    pub backup_deletion_grace_period: String,
}

/// Gateway settings shared by `nac gateway`, `nac serve` and `nac demo`.
#[derive(Debug, Args, Clone)]
pub struct GatewayOptions {
    /// Audience the callers' tokens must be valid for (repeatable; none: the API server's own).
    #[arg(long = "audience", value_name = "AUDIENCE")]
    pub audiences: Vec<String>,
    /// Seconds an accepted token's TokenReview is remembered.
    #[arg(long, default_value_t = 30)]
    pub token_ttl_secs: u64,
    /// Seconds a refused token is remembered.
    #[arg(long, default_value_t = 5)]
    pub token_failure_ttl_secs: u64,
    /// Seconds an allowed SubjectAccessReview is remembered (at most 30: a removed RoleBinding
    /// takes effect within it).
    #[arg(long, default_value_t = 30)]
    pub allow_ttl_secs: u64,
    /// Seconds a denied SubjectAccessReview is remembered.
    #[arg(long, default_value_t = 5)]
    pub deny_ttl_secs: u64,
    /// Requests a user may make at once (the rate limiter's bucket).
    #[arg(long, default_value_t = 200)]
    pub rate_limit_burst: u32,
    /// Requests per second a user's bucket refills with.
    #[arg(long, default_value_t = 50.0)]
    pub rate_limit_per_second: f64,
    /// Requests with a token not yet known to be good (it needs a TokenReview, or was refused)
    /// a client address may make at once; beyond, 429 without a TokenReview.
    #[arg(long, default_value_t = 30)]
    pub pre_auth_burst: u32,
    /// Requests per second a client address's pre-authentication bucket refills with.
    #[arg(long, default_value_t = 5.0)]
    pub pre_auth_per_second: f64,
    /// Live streams (Server-Sent Events and GraphQL subscriptions together) one user may hold
    /// open on this replica; beyond, a new one is refused with 429 `too-many-streams`.
    #[arg(long, default_value_t = crate::gateway::events::slots::DEFAULT_MAX_STREAMS_PER_USER)]
    pub max_streams_per_user: usize,
    /// Take the client address from the last X-Forwarded-For entry instead of the TCP peer
    /// (only behind a proxy that sets it; anyone else can forge it).
    #[arg(long)]
    pub trust_forwarded_for: bool,
    /// File holding a 32-byte (or longer) key that signs paging tokens, shared by replicas
    /// (default: a random key per process).
    #[arg(long, env = "NAC_GATEWAY_PAGING_KEY_FILE")]
    pub paging_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionOptions,
}

/// Web console sign-in, shared by `nac gateway`, `nac serve` and `nac demo`.
#[derive(Debug, Args, Clone)]
pub struct SessionOptions {
    /// Seconds a console session lasts from sign-in (the session cookie's Max-Age).
    #[arg(
        long = "session-ttl",
        env = "NAC_SESSION_TTL",
        default_value_t = 3600,
        value_name = "SECONDS"
    )]
    pub session_ttl: u64,
    /// File holding a 32-byte (or longer) key that signs console session cookies and OAuth
    /// state. Default: a random key per process. Give every replica the same file: an OAuth
    /// sign-in may come back to another replica than the one it started on. Sessions themselves
    /// (and the cluster tokens they hold) stay in the memory of the replica that created them,
    /// so the load balancer must keep a browser on one replica (the Route and Ingress of
    /// deploy/overlays do); elsewhere the browser is asked to sign in again.
    #[arg(long, env = "NAC_SESSION_KEY_FILE", value_name = "FILE")]
    pub session_key_file: Option<PathBuf>,
    /// OpenShift OAuth sign-in for the console: the OAuthClient's name (needs
    /// --oauth-client-secret-file and --public-url).
    #[arg(long, env = "NAC_OAUTH_CLIENT_ID", value_name = "NAME")]
    pub oauth_client_id: Option<String>,
    /// File holding the OAuthClient's secret.
    #[arg(long, env = "NAC_OAUTH_CLIENT_SECRET_FILE", value_name = "FILE")]
    pub oauth_client_secret_file: Option<PathBuf>,
    /// The URL browsers reach the gateway at (e.g. https://nac.apps.example.com); the OAuth
    /// redirect URI is <URL>/api/v1/session/oauth/callback.
    #[arg(long, env = "NAC_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Where the OAuth server is discovered (its /.well-known/oauth-authorization-server).
    /// Default: the API server's, as the OpenShift console does.
    #[arg(long, env = "NAC_OAUTH_ISSUER_URL", value_name = "URL")]
    pub oauth_issuer_url: Option<String>,
    /// PEM CA certificates to trust for the OAuth server instead of the platform's roots (the
    /// cluster's ingress CA).
    #[arg(long, env = "NAC_OAUTH_CA_FILE", value_name = "FILE")]
    pub oauth_ca_file: Option<PathBuf>,
}

/// Where the history store lives, shared by `nac controller`, `nac gateway`, `nac serve`,
/// `nac demo` and `nac migrate`.
#[derive(Debug, Args, Clone)]
pub struct HistoryOptions {
    /// Database of the history store: `postgres://USER:PASSWORD@HOST:PORT/DB` (production; every
    /// gateway replica and the controller share it) or `sqlite://FILE` (default: SQLite at
    /// `history.db` in the data directory).
    #[arg(
        long,
        env = "NAC_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub database_url: Option<String>,
    /// Days a finished or deleted operation's history is kept before the purge removes it.
    #[arg(long, default_value_t = crate::history::retention::DEFAULT_RETENTION_DAYS)]
    pub history_retention_days: u32,
}

/// Options of `nac migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub history: HistoryOptions,
}

/// Options of `nac gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// Kubeconfig of the gateway's identity (default: $KUBECONFIG, ~/.kube/config or the
    /// in-cluster service account). It only reads and reviews; writes use the callers' tokens.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Address to serve HTTP on (HTTPS with --tls-cert-file and --tls-key-file).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The OADP namespace, where Velero and NAC's admin-side objects live.
    #[arg(long, default_value = "openshift-adp")]
    pub oadp_namespace: String,
    #[command(flatten)]
    pub tls: TlsOptions,
    #[command(flatten)]
    pub gateway: GatewayOptions,
    #[command(flatten)]
    pub history: HistoryOptions,
    #[command(flatten)]
    pub shutdown: ShutdownOptions,
}

/// Options of `nac serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Kubeconfig (default: $KUBECONFIG, ~/.kube/config or the in-cluster service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Address to serve the gateway on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The OADP namespace.
    #[arg(long, default_value = "openshift-adp")]
    pub oadp_namespace: String,
    /// Serve the controllers' `/healthz`, `/readyz` and `/metrics` on this address.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub gateway: GatewayOptions,
    #[command(flatten)]
    pub history: HistoryOptions,
    #[command(flatten)]
    pub pool: PoolOptions,
    /// Root directory of the local object-store provider (nac.openshift.io/local): the same
    /// directory the Velero simulator keeps its buckets under (`nac sim velero
    /// --object-store-root`). Without it, BackupBuckets on that provider are never listed and
    /// their purges wait for Velero's next sync; S3 buckets need nothing.
    #[arg(long, env = "NAC_OBJECT_STORE_ROOT", value_name = "DIR")]
    pub object_store_root: Option<PathBuf>,
    #[command(flatten)]
    pub shutdown: ShutdownOptions,
}

/// Options of `nac sim velero`.
#[derive(Debug, Args)]
pub struct VeleroArgs {
    /// Kubeconfig of an identity with Velero's permissions (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The Velero namespace to watch.
    #[arg(long, default_value = "openshift-adp")]
    pub namespace: String,
    /// Where buckets of the local object-store provider (nac.openshift.io/local) live.
    #[arg(long)]
    pub object_store_root: PathBuf,
    #[command(flatten)]
    pub simulator: SimulatorArgs,
}

/// Options of `nac crds`.
#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Also print Velero's CRDs (for clusters or emulators without Velero).
    #[arg(long)]
    pub velero: bool,
}

/// Options shared by the commands that serve the emulator.
#[derive(Debug, Args, Clone)]
pub struct EmulatorArgs {
    /// Serve plain HTTP instead of HTTPS.
    #[arg(long)]
    pub plain_http: bool,
    /// Append an audit log of every request (JSON lines) to this file.
    #[arg(long)]
    pub audit_log: Option<PathBuf>,
    /// Also serve OpenShift's `project.openshift.io/v1` projects (each user's list holds the
    /// namespaces they may view).
    #[arg(long)]
    pub openshift: bool,
}

/// Options of `nac sim apiserver`.
#[derive(Debug, Args)]
pub struct ApiserverArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub emulator: EmulatorArgs,
    /// Where state, certificates and kubeconfigs are kept.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// A user to create, as NAME or NAME:GROUP1,GROUP2; gets DATA_DIR/kubeconfig-NAME. Repeatable.
    #[arg(long = "user", value_name = "NAME[:GROUP,...]")]
    pub users: Vec<String>,
}

/// Options of `nac demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Run on an existing cluster instead of the built-in emulator: the kubeconfig of a
    /// cluster-admin there (a kind cluster, envtest's or `../shared/k8s` control plane). NAC, the
    /// demo's namespaces and RBAC are installed into it; the tenants are service accounts
    /// (team-a/alice, team-b/bob), since an existing cluster has no demo users to sign in as.
    #[arg(long, value_name = "ADMIN_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the emulated Kubernetes API server (port 0 picks a free port; unused with
    /// --kubeconfig).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub apiserver_listen: SocketAddr,
    #[command(flatten)]
    pub emulator: EmulatorArgs,
    /// Where the demo keeps its state, object store and kubeconfigs, kept across restarts
    /// (default: $XDG_DATA_HOME/nac/demo, else ~/.local/share/nac/demo).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    #[command(flatten)]
    pub simulator: SimulatorArgs,
    /// Address of NAC's gateway (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub gateway_listen: SocketAddr,
    /// Address of the controllers' `/healthz`, `/readyz` and `/metrics` (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub metrics_listen: SocketAddr,
    #[command(flatten)]
    pub history: HistoryOptions,
    #[command(flatten)]
    pub session: SessionOptions,
    #[command(flatten)]
    pub pool: PoolOptions,
    #[command(flatten)]
    pub shutdown: ShutdownOptions,
}

/// Entry point of the binary.
/// Writes `text` to standard output. A reader that went away (`nac crds | head`) is not an
/// error: the output is simply not wanted any more (the default `print!` would panic).
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    // kube uses ring; make it the process-wide rustls provider before anything builds a TLS config.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Pipeline commands answer with exit codes that tell how a backup or restore ended.
    let command = match cli.command {
        Command::Backup(c) => return runtime.block_on(pipeline::backup(c)),
        Command::Restore(c) => return runtime.block_on(pipeline::restore(c)),
        other => other,
    };
    match runtime.block_on(run::run(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The log filter's directives: `NAC_LOG`, else `RUST_LOG` (what Rust tooling and many
/// Kubernetes manifests set), else `warn`. An empty variable counts as unset.
fn log_directives(nac_log: Option<&str>, rust_log: Option<&str>) -> String {
    [nac_log, rust_log]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|directives| !directives.is_empty())
        .unwrap_or("warn")
        .to_string()
}

fn init_tracing() {
    let nac_log = std::env::var("NAC_LOG").ok();
    let rust_log = std::env::var("RUST_LOG").ok();
    let directives = log_directives(nac_log.as_deref(), rust_log.as_deref());
    let filter = tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("warning: ignoring the log filter {directives:?} ({e}); logging warnings");
        tracing_subscriber::EnvFilter::new("warn")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::{Cli, Command, log_directives};
    use clap::Parser;

    #[test]
    fn controller_and_serve_take_the_local_object_store_root() {
        let cli = Cli::try_parse_from(["nac", "controller", "--object-store-root", "/srv/store"]);
        let Ok(Cli {
            command: Command::Controller(args),
        }) = cli
        else {
            panic!("nac controller --object-store-root does not parse: {cli:?}");
        };
        assert_eq!(
            args.object_store_root.as_deref(),
            Some(std::path::Path::new("/srv/store"))
        );
        let cli = Cli::try_parse_from(["nac", "serve", "--object-store-root", "/srv/store"]);
        let Ok(Cli {
            command: Command::Serve(args),
        }) = cli
        else {
            panic!("nac serve --object-store-root does not parse: {cli:?}");
        };
        assert_eq!(
            args.object_store_root.as_deref(),
            Some(std::path::Path::new("/srv/store"))
        );
        // The whole command line is valid (no clashing flags under clap's debug checks).
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn every_long_running_role_takes_the_shutdown_grace_period() {
        for role in ["controller", "gateway", "serve", "demo"] {
            let cli = Cli::try_parse_from(["nac", role, "--shutdown-grace-period", "10s"]);
            let grace = match cli {
                Ok(Cli {
                    command: Command::Controller(args),
                }) => args.shutdown.shutdown_grace_period,
                Ok(Cli {
                    command: Command::Gateway(args),
                }) => args.shutdown.shutdown_grace_period,
                Ok(Cli {
                    command: Command::Serve(args),
                }) => args.shutdown.shutdown_grace_period,
                Ok(Cli {
                    command: Command::Demo(args),
                }) => args.shutdown.shutdown_grace_period,
                other => panic!("nac {role} --shutdown-grace-period does not parse: {other:?}"),
            };
            assert_eq!(grace, "10s");
        }
    }

    #[test]
    fn nac_log_wins_rust_log_is_the_fallback_and_warn_the_default() {
        assert_eq!(log_directives(Some("debug"), Some("info")), "debug");
        assert_eq!(log_directives(None, Some("info")), "info");
        assert_eq!(log_directives(Some(""), Some("info")), "info");
        assert_eq!(log_directives(Some("  "), None), "warn");
        assert_eq!(log_directives(None, None), "warn");
        assert_eq!(
            log_directives(Some("warn,nac::gateway=debug"), None),
            "warn,nac::gateway=debug"
        );
    }
}
