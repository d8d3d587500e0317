//! Runs the parsed subcommands.
use std::path::Path;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::api::client_identity::Component;
use crate::api::crds;
use crate::sim::apiserver::{ApiServer, EmulatorConfig, kubeconfig, persist, tls};
use crate::sim::demo;
use crate::sim::velero::engine::VeleroSimulator;
use crate::sim::velero::options::{Outcome, SimulatorOptions};
use crate::sim::velero::signed_url::UrlSigner;

use super::{
    ApiserverArgs, Command, ControllerArgs, CrdsArgs, DemoArgs, EmulatorArgs, GatewayArgs,
    GatewayOptions, HistoryOptions, MigrateArgs, PoolOptions, ServeArgs, SessionOptions,
    ShutdownOptions, SimCommand, SimulatorArgs, VeleroArgs,
};
use crate::gateway::artifacts::HttpArtifactFetcher;
use crate::gateway::auth::{OAuthClient, OAuthConfig, SessionConfig};
use crate::gateway::clients::{FnUserClients, KubeConfigClients, SharedUserClients};
use crate::gateway::{Gateway, GatewayConfig};
use crate::history::SharedHistory;
use crate::history::manifests::{ManifestBuilder, ManifestBuilderConfig};
use crate::history::recorder::{Recorder, RecorderConfig};
use crate::shutdown::Shutdown;

/// Errors a command ends with.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Emulator(#[from] crate::sim::apiserver::EmulatorError),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error(transparent)]
    Crd(#[from] crds::CrdError),
    #[error("cannot listen on {addr}: {source} (choose another address with --listen)")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("invalid --user {0:?}: expected NAME or NAME:GROUP1,GROUP2")]
    User(String),
    #[error("demo set-up failed: {0}")]
    Demo(#[from] demo::DemoError),
    #[error(transparent)]
    DeletionReceiver(#[from] crate::sim::deletion_receiver::ReceiverError),
    #[error("invalid --outcome {0:?}: expected succeed, fail, partially-fail, hang or slow")]
    Outcome(String),
    #[error("cannot connect to the cluster: {0}")]
    Kube(String),
    #[error("no data directory: set --data-dir (neither XDG_DATA_HOME nor HOME is set)")]
    NoDataDir,
    #[error("gateway: {0}")]
    Gateway(String),
    #[error("cannot write to standard output: {0}")]
    Stdout(std::io::Error),
    #[error("invalid --backup-deletion-grace-period {value:?}: {reason}")]
    GracePeriod { value: String, reason: String },
    #[error("{0}")]
    History(#[from] crate::history::HistoryError),
    #[error("invalid --shutdown-grace-period {value:?}: {reason}")]
    ShutdownGrace { value: String, reason: String },
    #[error("cannot listen for SIGTERM and SIGINT: {0}")]
    Signals(std::io::Error),
    #[error("stopped, but not cleanly: {0}")]
    Unclean(String),
}

pub(super) async fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Crds(args) => crds_command(&args),
        Command::Openapi => {
            print!("{}", crate::gateway::rest::openapi::openapi_json());
            Ok(())
        }
        Command::GraphqlSchema => {
            print!("{}", crate::gateway::graphql::sdl());
            Ok(())
        }
        Command::Migrate(args) => migrate_command(args).await,
        Command::Gateway(args) => gateway_command(args).await,
        Command::Serve(args) => serve_command(args).await,
        Command::Sim(SimCommand::Apiserver(args)) => apiserver_command(args).await,
        Command::Sim(SimCommand::Velero(args)) => velero_command(args).await,
        Command::Controller(args) => controller_command(args).await,
        Command::Demo(args) => demo_command(args).await,
        // Answered by `cli::main` itself, with their own exit codes.
        Command::Backup(_) | Command::Restore(_) => Ok(()),
    }
}

fn crds_command(args: &CrdsArgs) -> Result<(), CliError> {
    super::write_stdout(&crds::all_crds_yaml(args.velero)?).map_err(CliError::Stdout)
}

/// Parses `NAME[:GROUP,...]`.
fn parse_user(spec: &str) -> Result<(String, Vec<String>), CliError> {
    let (name, groups) = match spec.split_once(':') {
        Some((n, g)) => (
            n,
            g.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        None => (spec, Vec::new()),
    };
    if name.is_empty() || name.contains('/') {
        return Err(CliError::User(spec.to_string()));
    }
    Ok((name.to_string(), groups))
}

/// A running emulator on a socket.
struct Served {
    server: ApiServer,
    url: String,
    ca_pem: Option<String>,
    task: tokio::task::JoinHandle<()>,
}

async fn serve_emulator(
    listen: SocketAddr,
    args: &EmulatorArgs,
    data_dir: &Path,
) -> Result<Served, CliError> {
    let server = ApiServer::new(EmulatorConfig {
        data_dir: Some(data_dir.to_path_buf()),
        audit_log: args.audit_log.clone(),
        openshift_projects: args.openshift,
        ..EmulatorConfig::default()
    })?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| CliError::Listen {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| CliError::Listen {
        addr: listen,
        source,
    })?;
    let router = server.router();
    let (url, ca_pem, task) = if args.plain_http {
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "emulator stopped");
            }
        });
        (format!("http://{addr}"), None, task)
    } else {
        let pki = tls::Pki::load_or_generate(data_dir)?;
        let config = pki.server_config()?;
        let task = tokio::spawn(tls::serve_tls(listener, router, config));
        (format!("https://{addr}"), Some(pki.ca_cert_pem), task)
    };
    tokio::spawn(
        server
            .clone()
            .persist_periodically(std::time::Duration::from_millis(500)),
    );
    Ok(Served {
        server,
        url,
        ca_pem,
        task,
    })
}

fn write_kubeconfig(
    served: &Served,
    dir: &Path,
    user: &str,
    token: &str,
    namespace: &str,
) -> Result<(), CliError> {
    let path = dir.join(format!("kubeconfig-{user}"));
    let text = kubeconfig::render(
        &served.url,
        served.ca_pem.as_deref(),
        user,
        token,
        namespace,
    );
    persist::write_private(&path, text.as_bytes())
        .map_err(|source| CliError::Write { path, source })
}

/// Serves until SIGTERM or SIGINT (or the emulator stops), then saves its state.
async fn wait_for_shutdown(served: Served) -> Result<(), CliError> {
    tokio::select! {
        signal = crate::shutdown::signal() => {
            signal.map_err(CliError::Signals)?;
        }
        _ = served.task => {}
    }
    served.server.save()?;
    Ok(())
}

/// The process's stop with the grace period of `--shutdown-grace-period` (not yet listening
/// for signals: [`Shutdown::on_signals`] once the command is serving, so a signal during the
/// start-up ends the process at once, as it has nothing to finish).
fn shutdown_of(options: &ShutdownOptions) -> Result<Shutdown, CliError> {
    let grace = crate::api::common::GoDuration::new(options.shutdown_grace_period.clone())
        .parse()
        .map_err(|e| CliError::ShutdownGrace {
            value: options.shutdown_grace_period.clone(),
            reason: e.to_string(),
        })?;
    Ok(Shutdown::new(grace))
}

/// Exit status 0 only for a clean stop: the controllers' writes finished and their Lease was
/// released, the gateway's requests and streams ended, within the grace period.
fn stopped_cleanly(
    controllers: Option<Option<crate::controllers::leader::Stopped>>,
    gateway: Option<bool>,
) -> Result<(), CliError> {
    let mut problems = Vec::new();
    if let Some(Some(stopped)) = controllers {
        if !stopped.drained {
            problems
                .push("the controllers' writes in flight did not finish within the grace period");
        }
        if !stopped.released {
            problems.push("the leader Lease was not released (it expires by itself)");
        }
    }
    if gateway == Some(false) {
        problems.push("the gateway's open requests did not finish within the grace period");
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::Unclean(problems.join("; ")))
    }
}

async fn apiserver_command(args: ApiserverArgs) -> Result<(), CliError> {
    std::fs::create_dir_all(&args.data_dir).map_err(|source| CliError::Write {
        path: args.data_dir.clone(),
        source,
    })?;
    let users = args
        .users
        .iter()
        .map(|u| parse_user(u))
        .collect::<Result<Vec<_>, _>>()?;
    let served = serve_emulator(args.listen, &args.emulator, &args.data_dir).await?;
    write_kubeconfig(
        &served,
        &args.data_dir,
        "admin",
        &served.server.admin_token(),
        "default",
    )?;
    for (name, groups) in &users {
        let token = served.server.add_user(name, groups);
        write_kubeconfig(&served, &args.data_dir, name, &token, "default")?;
    }
    println!(
        "nac emulator ready at {} (kubeconfigs in {})",
        served.url,
        args.data_dir.display()
    );
    wait_for_shutdown(served).await
}

/// Where `nac demo` keeps its state when not told.
fn default_data_dir() -> Result<PathBuf, CliError> {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("nac").join("demo"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".local/share/nac/demo"))
        .ok_or(CliError::NoDataDir)
}

fn simulator_options(
    args: &SimulatorArgs,
    namespace: &str,
    local_root: PathBuf,
    download_base: url::Url,
    default_item_delay: Duration,
) -> Result<SimulatorOptions, CliError> {
    let mut options = SimulatorOptions::new(namespace, local_root, download_base);
    options.concurrent_backups = args.concurrent_backups.max(1);
    options.item_delay = args
        .item_delay_ms
        .map(Duration::from_millis)
        .unwrap_or(default_item_delay);
    options.time_scale = args.time_scale;
    options.default_outcome =
        Outcome::parse(&args.outcome).ok_or_else(|| CliError::Outcome(args.outcome.clone()))?;
    options.bsl_validation_interval = Duration::from_secs(args.bsl_interval_secs.max(1));
    options.backup_sync_interval = Duration::from_secs(args.bsl_interval_secs.max(1));
    // The AWS plugin's SDK takes the server's region from its environment, as Velero's does.
    options.aws_region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()));
    Ok(options)
}

/// Binds the simulator's download endpoint and returns its base URL and serving task.
async fn serve_downloads(
    simulator_args: &SimulatorArgs,
) -> Result<(tokio::net::TcpListener, url::Url), CliError> {
    let addr = simulator_args.download_listen;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| CliError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| CliError::Listen { addr, source })?;
    let base =
        url::Url::parse(&format!("http://{bound}/")).map_err(|e| CliError::Kube(e.to_string()))?;
    Ok((listener, base))
}

fn start_simulator(
    client: kube::Client,
    options: SimulatorOptions,
    listener: tokio::net::TcpListener,
) {
    let simulator = VeleroSimulator::new(client, options, Arc::new(UrlSigner::random()));
    let router = simulator.download_router();
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "download endpoint stopped");
        }
    });
    tokio::spawn(simulator.run());
}

/// A client from `--kubeconfig`, or the usual places (KUBECONFIG, ~/.kube/config, in-cluster),
/// identified as `component`.
async fn client_from(
    kubeconfig: Option<&Path>,
    component: Component,
) -> Result<kube::Client, CliError> {
    let config = config_from(kubeconfig).await?;
    identified_client(config, component)
}

/// A client for `config` sending `component`'s User-Agent and field manager.
fn identified_client(config: kube::Config, component: Component) -> Result<kube::Client, CliError> {
    component
        .identity()
        .client(config)
        .map_err(|e| CliError::Kube(e.to_string()))
}

/// The kube configuration from `--kubeconfig`, or the usual places.
async fn config_from(kubeconfig: Option<&Path>) -> Result<kube::Config, CliError> {
    match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| CliError::Kube(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(|e| CliError::Kube(e.to_string()))
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| CliError::Kube(e.to_string())),
    }
}

/// The gateway's configuration from the command line.
fn gateway_config(
    options: &GatewayOptions,
    oadp_namespace: &str,
) -> Result<GatewayConfig, CliError> {
    let mut config = GatewayConfig {
        oadp_namespace: oadp_namespace.to_string(),
        ..GatewayConfig::default()
    };
    config.authn.audiences = options.audiences.clone();
    config.authn.success_ttl = Duration::from_secs(options.token_ttl_secs);
    config.authn.failure_ttl = Duration::from_secs(options.token_failure_ttl_secs);
    config.authz.allow_ttl = Duration::from_secs(options.allow_ttl_secs);
    config.authz.deny_ttl = Duration::from_secs(options.deny_ttl_secs);
    config.rate_limit.burst = options.rate_limit_burst.max(1);
    config.rate_limit.per_second = options.rate_limit_per_second;
    config.pre_auth_limit.burst = options.pre_auth_burst.max(1);
    config.pre_auth_limit.per_second = options.pre_auth_per_second;
    config.trust_forwarded_for = options.trust_forwarded_for;
    config.service.max_streams_per_user = options.max_streams_per_user.max(1);
    if let Some(path) = &options.paging_key_file {
        let bytes = std::fs::read(path)
            .map_err(|e| CliError::Gateway(format!("cannot read {}: {e}", path.display())))?;
        if bytes.len() < 32 {
            return Err(CliError::Gateway(format!(
                "{} must hold at least 32 bytes",
                path.display()
            )));
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(&<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        config.paging_key = Some(key);
    }
    config.session = session_config(&options.session)?;
    Ok(config)
}

/// The console sign-in settings from the command line.
fn session_config(options: &SessionOptions) -> Result<SessionConfig, CliError> {
    let read = |flag: &str, path: &Path| {
        std::fs::read(path)
            .map_err(|e| CliError::Gateway(format!("{flag} {}: {e}", path.display())))
    };
    let mut config = SessionConfig {
        ttl: Duration::from_secs(options.session_ttl.max(1)),
        ..SessionConfig::default()
    };
    if let Some(path) = &options.session_key_file {
        let bytes = read("--session-key-file", path)?;
        if bytes.len() < 32 {
            return Err(CliError::Gateway(format!(
                "--session-key-file {} must hold at least 32 bytes",
                path.display()
            )));
        }
        // Its own derivation, so the same file may also serve as --paging-key-file.
        let mut key = [0u8; 32];
        key.copy_from_slice(&<sha2::Sha256 as sha2::Digest>::digest(
            [b"nac session key\0".as_slice(), &bytes].concat(),
        ));
        config.key = Some(key);
    }
    config.oauth = match (
        &options.oauth_client_id,
        &options.oauth_client_secret_file,
        &options.public_url,
    ) {
        (None, None, _) => None,
        (Some(client_id), Some(secret_file), Some(public_url)) => {
            let secret = String::from_utf8(read("--oauth-client-secret-file", secret_file)?)
                .map_err(|_| {
                    CliError::Gateway("--oauth-client-secret-file must hold text".into())
                })?;
            let ca_pem = match &options.oauth_ca_file {
                Some(path) => Some(read("--oauth-ca-file", path)?),
                None => None,
            };
            let oauth = OAuthConfig {
                client_id: client_id.trim().to_string(),
                client_secret: secret.trim().to_string().into(),
                public_url: public_url.trim().to_string(),
                issuer_url: options.oauth_issuer_url.clone(),
                ca_pem,
            };
            // Refuse unusable settings now rather than at the first sign-in.
            OAuthClient::new(oauth.clone()).map_err(|e| CliError::Gateway(e.to_string()))?;
            Some(oauth)
        }
        _ => {
            return Err(CliError::Gateway(
                "OpenShift OAuth sign-in needs --oauth-client-id, --oauth-client-secret-file and --public-url together".into(),
            ));
        }
    };
    Ok(config)
}

/// The history store `options` name, migrated: `--database-url`, else SQLite at
/// `data_dir/history.db` (default data directory: `$XDG_DATA_HOME/nac`, else
/// ~/.local/share/nac).
async fn open_history(
    options: &HistoryOptions,
    data_dir: Option<&Path>,
) -> Result<SharedHistory, CliError> {
    let url = match &options.database_url {
        Some(url) => url.clone(),
        None => {
            let dir = match data_dir {
                Some(dir) => dir.to_path_buf(),
                None => default_data_dir()?
                    .parent()
                    .map(Path::to_path_buf)
                    .ok_or(CliError::NoDataDir)?,
            };
            std::fs::create_dir_all(&dir).map_err(|source| CliError::Write {
                path: dir.clone(),
                source,
            })?;
            crate::history::sqlite_url_for(&dir.join("history.db"))
        }
    };
    Ok(crate::history::open(&url).await?)
}

async fn migrate_command(args: MigrateArgs) -> Result<(), CliError> {
    let store = open_history(&args.history, None).await?;
    println!("history store migrated ({:?})", store.backend());
    Ok(())
}

/// What runs beside the controllers while this replica leads: the history recorder (one writer
/// per cluster), the retention purge and the backup manifest builder.
/// On shutdown the recorder writes what it has buffered before the replica lets its Lease go
/// (it holds the shutdown meanwhile); the purge and the manifest builder just stop.
fn history_jobs(
    client: kube::Client,
    oadp_namespace: &str,
    store: SharedHistory,
    retention_days: u32,
    endpoint_rules: Arc<dyn crate::manifest::fetch::EndpointRules>,
    shutdown: Shutdown,
) -> impl Fn() -> futures::future::BoxFuture<'static, ()> + use<> {
    let oadp_namespace = oadp_namespace.to_string();
    // Backup tarballs can be large: a longer timeout than the gateway's artifacts.
    let fetcher: Option<Arc<dyn crate::manifest::fetch::ArtifactFetcher>> =
        match HttpArtifactFetcher::new(Duration::from_secs(300)) {
            Ok(fetcher) => Some(Arc::new(fetcher)),
            Err(error) => {
                tracing::error!(error = %error, "cannot load CA roots: backup manifests will not be built");
                None
            }
        };
    move || {
        let recorder = Recorder::new(
            client.clone(),
            &oadp_namespace,
            store.clone(),
            RecorderConfig::default(),
        );
        let purge = crate::history::retention::run(
            store.clone(),
            retention_days,
            crate::history::retention::PURGE_INTERVAL,
        );
        let manifests = fetcher.clone().map(|fetcher| {
            ManifestBuilder::new(
                client.clone(),
                &oadp_namespace,
                store.clone(),
                fetcher,
                ManifestBuilderConfig::default(),
            )
            .with_endpoint_rules(endpoint_rules.clone())
        });
        let shutdown = shutdown.clone();
        Box::pin(async move {
            let Some(_writing) = shutdown.begin() else {
                return;
            };
            let manifests = async move {
                if let Some(builder) = manifests {
                    builder.run().await;
                }
            };
            let recording = recorder.run_until(shutdown.triggered());
            tokio::select! {
                () = recording => {}
                _ = async { tokio::join!(purge, manifests) } => {}
            }
        })
    }
}

/// What the gateway serves on.
enum GatewayListener {
    Http(tokio::net::TcpListener),
    Https(crate::gateway::tls::TlsListener),
}

/// Binds `addr` (HTTPS with `tls`), starts the gateway's caches and serves it until `shutdown` has stopped it;
/// returns the bound address and the serving task (true when it stopped cleanly). With
/// `ready_within`, returns only once the caches have synced (or that long has passed): the demo
/// prints its banner then, so the first command a user copies from it is not answered 503.
async fn start_gateway(
    reader: kube::Client,
    users: SharedUserClients,
    history: crate::history::SharedHistory,
    config: GatewayConfig,
    (addr, tls): (SocketAddr, Option<crate::gateway::tls::ServingFiles>),
    ready_within: Option<Duration>,
    shutdown: Shutdown,
) -> Result<(SocketAddr, tokio::task::JoinHandle<bool>), CliError> {
    let fetcher = HttpArtifactFetcher::new(Duration::from_secs(60))
        .map_err(|e| CliError::Gateway(format!("cannot load CA roots: {e}")))?;
    let gateway = Gateway::new(reader, users, Arc::new(fetcher), history, config);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| CliError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| CliError::Listen { addr, source })?;
    // A certificate that cannot be used stops start-up, before anything is served.
    let listener = match tls {
        Some(files) => {
            let certificate = crate::gateway::tls::ReloadingCertificate::new(files)
                .map_err(|e| CliError::Gateway(e.to_string()))?;
            GatewayListener::Https(
                crate::gateway::tls::TlsListener::new(
                    listener,
                    Arc::new(certificate),
                    crate::gateway::tls::RELOAD_CHECK_PERIOD,
                )
                .map_err(|e| CliError::Gateway(e.to_string()))?,
            )
        }
        None => GatewayListener::Http(listener),
    };
    gateway.start();
    let serving = {
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let served = match listener {
                GatewayListener::Http(plain) => gateway.serve(plain, shutdown).await,
                GatewayListener::Https(tls) => gateway.serve(tls, shutdown).await,
            };
            match served {
                Ok(clean) => clean,
                Err(e) => {
                    tracing::error!(error = %e, "gateway stopped");
                    false
                }
            }
        })
    };
    if let Some(limit) = ready_within
        && !gateway.wait_ready(limit).await
    {
        tracing::warn!(
            seconds = limit.as_secs(),
            "the gateway's caches have not synced yet; it answers 503 until they have"
        );
    }
    Ok((bound, serving))
}

/// Waits for the gateway's serving task; whether it stopped cleanly.
async fn gateway_stopped(serving: tokio::task::JoinHandle<bool>) -> bool {
    serving.await.unwrap_or(false)
}

async fn gateway_command(args: GatewayArgs) -> Result<(), CliError> {
    let config = config_from(args.kubeconfig.as_deref()).await?;
    let reader = identified_client(config.clone(), Component::Gateway)?;
    let users: SharedUserClients = Arc::new(KubeConfigClients::new(
        config,
        Duration::from_secs(60),
        10_000,
    ));
    let shutdown = shutdown_of(&args.shutdown)?;
    let (bound, serving) = start_gateway(
        reader,
        users,
        open_history(&args.history, None).await?,
        gateway_config(&args.gateway, &args.oadp_namespace)?,
        (args.listen, args.tls.serving_files()),
        None,
        shutdown.clone(),
    )
    .await?;
    shutdown.on_signals().map_err(CliError::Signals)?;
    let scheme = if args.tls.serving_files().is_some() {
        "https"
    } else {
        "http"
    };
    println!("nac gateway on {scheme}://{bound} (API documentation at {scheme}://{bound}/docs)");
    let served = gateway_stopped(serving).await;
    stopped_cleanly(None, Some(served))
}

async fn serve_command(args: ServeArgs) -> Result<(), CliError> {
    let config = config_from(args.kubeconfig.as_deref()).await?;
    // One process, two roles: the gateway and the controllers each write as themselves.
    let gateway_client = identified_client(config.clone(), Component::Gateway)?;
    let client = identified_client(config.clone(), Component::Controller)?;
    let users: SharedUserClients = Arc::new(KubeConfigClients::new(
        config,
        Duration::from_secs(60),
        10_000,
    ));
    let history = open_history(&args.history, None).await?;
    let shutdown = shutdown_of(&args.shutdown)?;
    let (bound, serving) = start_gateway(
        gateway_client,
        users,
        history.clone(),
        gateway_config(&args.gateway, &args.oadp_namespace)?,
        (args.listen, None),
        None,
        shutdown.clone(),
    )
    .await?;
    let context = Arc::new(
        crate::controllers::Context::new(client, &args.oadp_namespace)
            .with_pool(pool_config(
                &args.pool,
                local_object_store(args.object_store_root.as_deref()),
            )?)
            .with_shutdown(shutdown.clone()),
    );
    if let Some(addr) = args.metrics_listen {
        let bound = serve_controller_health(&context, addr).await?;
        println!("nac controller health and metrics on http://{bound}");
    }
    let jobs = history_jobs(
        context.client.clone(),
        &args.oadp_namespace,
        history,
        args.history.history_retention_days,
        context.policy.clone(),
        shutdown.clone(),
    );
    shutdown.on_signals().map_err(CliError::Signals)?;
    println!(
        "nac serve: gateway on http://{bound}, controllers running (OADP namespace {})",
        args.oadp_namespace
    );
    let (stopped, served) = tokio::join!(
        crate::controllers::run_leading_with(context, jobs),
        gateway_stopped(serving)
    );
    stopped_cleanly(Some(stopped), Some(served))
}

/// The local object-store provider rooted at `root`, when given (`--object-store-root`).
fn local_object_store(
    root: Option<&std::path::Path>,
) -> Option<(&'static str, std::path::PathBuf)> {
    root.map(|root| {
        (
            crate::api::velero::LOCAL_OBJECT_STORE_PROVIDER,
            root.to_path_buf(),
        )
    })
}

/// The shared backup pool's settings from the command line; `local` names a provider whose
/// buckets are directories under a root (the simulator's, in the demo).
fn pool_config(
    options: &PoolOptions,
    local: Option<(&str, std::path::PathBuf)>,
) -> Result<crate::controllers::bucket::PoolConfig, CliError> {
    let grace = crate::api::common::GoDuration::new(options.backup_deletion_grace_period.clone())
        .parse()
        .map_err(|e| CliError::GracePeriod {
            value: options.backup_deletion_grace_period.clone(),
            reason: e.to_string(),
        })?;
    let lister = match local {
        Some((provider, root)) => {
            crate::controllers::bucket_store::ObjectStoreLister::with_local_provider(provider, root)
        }
        None => crate::controllers::bucket_store::ObjectStoreLister::new(),
    };
    Ok(crate::controllers::bucket::PoolConfig {
        default_grace_period: grace,
        lister: Arc::new(lister),
        ..Default::default()
    })
}

/// Serves the controllers' `/healthz`, `/readyz` and `/metrics` on `addr`; returns the bound
/// address (port 0 picks a free one).
async fn serve_controller_health(
    context: &Arc<crate::controllers::Context>,
    addr: SocketAddr,
) -> Result<SocketAddr, CliError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| CliError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| CliError::Listen { addr, source })?;
    let router = crate::controllers::health::router(crate::controllers::health::Health {
        context: context.clone(),
        ready: crate::controllers::leader::leading_flag(),
        lease_reads: crate::controllers::leader::lease_reads(),
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(bound)
}

async fn controller_command(args: ControllerArgs) -> Result<(), CliError> {
    let shutdown = shutdown_of(&args.shutdown)?;
    let client = client_from(args.kubeconfig.as_deref(), Component::Controller).await?;
    let history = open_history(&args.history, None).await?;
    let context = Arc::new(
        crate::controllers::Context::new(client, &args.oadp_namespace)
            .with_pool(pool_config(
                &args.pool,
                local_object_store(args.object_store_root.as_deref()),
            )?)
            .with_shutdown(shutdown.clone()),
    );
    if let Some(addr) = args.metrics_listen {
        let bound = serve_controller_health(&context, addr).await?;
        println!("nac controller health and metrics on http://{bound}");
    }
    shutdown.on_signals().map_err(CliError::Signals)?;
    println!(
        "nac controller running (OADP namespace {}, history store {:?})",
        args.oadp_namespace,
        history.backend()
    );
    let jobs = history_jobs(
        context.client.clone(),
        &args.oadp_namespace,
        history,
        args.history.history_retention_days,
        context.policy.clone(),
        shutdown.clone(),
    );
    let stopped = crate::controllers::run_leading_with(context, jobs).await;
    stopped_cleanly(Some(stopped), None)
}

async fn velero_command(args: VeleroArgs) -> Result<(), CliError> {
    let client = client_from(args.kubeconfig.as_deref(), Component::VeleroSimulator).await?;
    std::fs::create_dir_all(&args.object_store_root).map_err(|source| CliError::Write {
        path: args.object_store_root.clone(),
        source,
    })?;
    let (listener, base) = serve_downloads(&args.simulator).await?;
    let options = simulator_options(
        &args.simulator,
        &args.namespace,
        args.object_store_root.clone(),
        base.clone(),
        Duration::ZERO,
    )?;
    start_simulator(client, options, listener);
    println!(
        "nac velero simulator watching namespace {} (downloads at {base}, local buckets in {})",
        args.namespace,
        args.object_store_root.display()
    );
    crate::shutdown::signal().await.map_err(CliError::Signals)?;
    Ok(())
}

/// A long-lived token for a service account of the demo.
async fn service_account_token(
    admin: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<String, CliError> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let api: kube::Api<ServiceAccount> = kube::Api::namespaced(admin.clone(), namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(365 * 24 * 3600),
            ..Default::default()
        },
        ..Default::default()
    };
    let issued = api
        .create_token_request(name, &kube::api::PostParams::default(), &request)
        .await
        .map_err(|e| CliError::Kube(e.to_string()))?;
    issued
        .status
        .map(|s| s.token)
        .ok_or_else(|| CliError::Kube("the API server issued no token".into()))
}

/// The cluster `nac demo` runs on: its own emulator, or an existing cluster (`--kubeconfig`).
enum DemoCluster {
    Emulated(Box<Served>),
    Existing {
        /// The admin's configuration; other identities replace only its credentials.
        config: Box<kube::Config>,
        /// The CA the API server's certificate is checked against, for the demo's kubeconfigs.
        ca_pem: Option<String>,
    },
}

impl DemoCluster {
    /// Connects to the cluster of `kubeconfig` (an admin's), or starts the emulator.
    async fn start(args: &DemoArgs, data_dir: &Path) -> Result<DemoCluster, CliError> {
        match &args.kubeconfig {
            None => Ok(DemoCluster::Emulated(Box::new(
                serve_emulator(args.apiserver_listen, &args.emulator, data_dir).await?,
            ))),
            Some(path) => {
                let config = config_from(Some(path)).await?;
                let ca_pem = config
                    .root_cert
                    .as_ref()
                    .map(|certs| certs.iter().map(|der| pem_certificate(der)).collect());
                Ok(DemoCluster::Existing {
                    config: Box::new(config),
                    ca_pem,
                })
            }
        }
    }

    /// The API server's URL.
    fn url(&self) -> String {
        match self {
            DemoCluster::Emulated(served) => served.url.clone(),
            DemoCluster::Existing { config, .. } => config
                .cluster_url
                .to_string()
                .trim_end_matches('/')
                .to_string(),
        }
    }

    /// What the banner calls the API server.
    fn describe(&self) -> &'static str {
        match self {
            DemoCluster::Emulated(_) => "Kubernetes API (emulated)  ",
            DemoCluster::Existing { .. } => "Kubernetes API (existing)  ",
        }
    }

    /// A client as the holder of `token`, identified as `component`.
    fn client_as(&self, token: &str, component: Component) -> Result<kube::Client, CliError> {
        match self {
            DemoCluster::Emulated(served) => {
                Ok(served.server.client_as(token, &component.identity()))
            }
            DemoCluster::Existing { config, .. } => {
                identified_client(with_token(config, token), component)
            }
        }
    }

    /// The admin's client (as NAC's command line).
    fn admin(&self) -> Result<kube::Client, CliError> {
        match self {
            DemoCluster::Emulated(served) => Ok(served.server.client(&served.server.admin_token())),
            DemoCluster::Existing { config, .. } => {
                identified_client((**config).clone(), Component::Cli)
            }
        }
    }

    /// The admin's token, for `kubeconfig-admin` (an existing cluster's admin keeps their own
    /// kubeconfig: none is written).
    fn admin_token(&self) -> Option<String> {
        match self {
            DemoCluster::Emulated(served) => Some(served.server.admin_token()),
            DemoCluster::Existing { .. } => None,
        }
    }

    /// A token of a demo tenant: a user of the emulator, or the tenant's service account
    /// ([`demo::install_tenant_service_accounts`]) on an existing cluster.
    async fn tenant_token(
        &self,
        admin: &kube::Client,
        tenant: &demo::Tenant,
    ) -> Result<String, CliError> {
        match self {
            DemoCluster::Emulated(served) => Ok(served.server.add_user(tenant.user, &[])),
            DemoCluster::Existing { .. } => {
                service_account_token(admin, tenant.namespace, tenant.user).await
            }
        }
    }

    /// Writes `DIR/kubeconfig-USER` for `token`.
    fn write_kubeconfig(
        &self,
        dir: &Path,
        user: &str,
        token: &str,
        namespace: &str,
    ) -> Result<(), CliError> {
        let ca_pem = match self {
            DemoCluster::Emulated(served) => {
                return write_kubeconfig(served, dir, user, token, namespace);
            }
            DemoCluster::Existing { ca_pem, .. } => ca_pem.as_deref(),
        };
        let path = dir.join(format!("kubeconfig-{user}"));
        let text = kubeconfig::render(&self.url(), ca_pem, user, token, namespace);
        persist::write_private(&path, text.as_bytes())
            .map_err(|source| CliError::Write { path, source })
    }

    /// Saves the emulator's state (nothing to do on an existing cluster).
    fn save(&self) -> Result<(), CliError> {
        match self {
            DemoCluster::Emulated(served) => Ok(served.server.save()?),
            DemoCluster::Existing { .. } => Ok(()),
        }
    }

    /// Runs until `shutdown` starts (SIGTERM or Ctrl-C), or the emulator stops (which then
    /// starts it).
    async fn until_stopped(&mut self, shutdown: &Shutdown) {
        match self {
            DemoCluster::Emulated(served) => {
                tokio::select! {
                    () = shutdown.triggered() => {}
                    _ = &mut served.task => {
                        shutdown.trigger();
                    }
                }
            }
            DemoCluster::Existing { .. } => shutdown.triggered().await,
        }
    }
}

/// `config` with its credentials replaced by a bearer token.
fn with_token(config: &kube::Config, token: &str) -> kube::Config {
    let mut config = config.clone();
    config.auth_info = kube::config::AuthInfo {
        token: Some(secrecy::SecretString::from(token.to_string())),
        ..Default::default()
    };
    config
}

/// A DER certificate as PEM.
fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

async fn demo_command(args: DemoArgs) -> Result<(), CliError> {
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => default_data_dir()?,
    };
    std::fs::create_dir_all(&data_dir).map_err(|source| CliError::Write {
        path: data_dir.clone(),
        source,
    })?;
    let data_dir = std::fs::canonicalize(&data_dir).unwrap_or(data_dir);
    let cluster = DemoCluster::start(&args, &data_dir).await?;
    if let Some(token) = cluster.admin_token() {
        cluster.write_kubeconfig(&data_dir, "admin", &token, "default")?;
    }
    let admin = cluster.admin()?;
    demo::install(&admin).await?;
    if matches!(cluster, DemoCluster::Existing { .. }) {
        demo::install_tenant_service_accounts(&admin).await?;
    }
    demo::install_backup_pool(&admin).await?;
    let receiver_dir = data_dir.join("deletion-receiver");
    let receiver = crate::sim::deletion_receiver::start(
        &receiver_dir,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        crate::sim::deletion_receiver::DEFAULT_CAPACITY,
    )
    .await?;
    demo::install_deletion_action(&admin, &receiver.hook_url, &receiver.ca_pem).await?;
    let mut lines = Vec::new();
    let mut tokens = Vec::new();
    for tenant in demo::TENANTS {
        let token = cluster.tenant_token(&admin, tenant).await?;
        tokens.push((tenant.user, token.clone()));
        cluster.write_kubeconfig(&data_dir, tenant.user, &token, tenant.namespace)?;
        lines.push(format!(
            "  {:<7} admin of {:<7}   KUBECONFIG={}",
            tenant.user,
            tenant.namespace,
            data_dir
                .join(format!("kubeconfig-{}", tenant.user))
                .display()
        ));
    }
    let ci = demo::CI_BOT;
    let ci_token = service_account_token(&admin, ci.namespace, ci.user).await?;
    cluster.write_kubeconfig(&data_dir, ci.user, &ci_token, ci.namespace)?;
    tokens.push((ci.user, ci_token.clone()));
    lines.push(format!(
        "  {:<7} CI in {:<7}      KUBECONFIG={}",
        ci.user,
        ci.namespace,
        data_dir.join(format!("kubeconfig-{}", ci.user)).display()
    ));

    let velero_token =
        service_account_token(&admin, demo::OADP_NAMESPACE, demo::VELERO_SERVICE_ACCOUNT).await?;
    let object_store = data_dir.join("object-store");
    std::fs::create_dir_all(&object_store).map_err(|source| CliError::Write {
        path: object_store.clone(),
        source,
    })?;
    let (listener, download_base) = serve_downloads(&args.simulator).await?;
    // Tenant locations on the simulator's store are downloaded from this loopback endpoint.
    demo::install_policy(&admin, &download_base).await?;
    let options = simulator_options(
        &args.simulator,
        demo::OADP_NAMESPACE,
        object_store.clone(),
        download_base.clone(),
        Duration::from_millis(100),
    )?;
    start_simulator(
        cluster.client_as(&velero_token, Component::VeleroSimulator)?,
        options,
        listener,
    );
    let controller_token = service_account_token(
        &admin,
        demo::OADP_NAMESPACE,
        demo::CONTROLLER_SERVICE_ACCOUNT,
    )
    .await?;
    // The demo's shared backup pool lives on the simulator's local object store, which the
    // pool controller reads directly to rebuild entries.
    let shutdown = shutdown_of(&args.shutdown)?;
    let context = Arc::new(
        crate::controllers::Context::new(
            cluster.client_as(&controller_token, Component::Controller)?,
            demo::OADP_NAMESPACE,
        )
        .with_pool(pool_config(
            &args.pool,
            Some((
                crate::sim::velero::storage::LOCAL_PROVIDER,
                object_store.clone(),
            )),
        )?)
        .with_shutdown(shutdown.clone()),
    );
    let metrics = serve_controller_health(&context, args.metrics_listen).await?;
    let history = open_history(&args.history, Some(&data_dir)).await?;
    let jobs = history_jobs(
        context.client.clone(),
        demo::OADP_NAMESPACE,
        history.clone(),
        args.history.history_retention_days,
        context.policy.clone(),
        shutdown.clone(),
    );
    let controllers = tokio::spawn(crate::controllers::run_leading_with(context, jobs));
    let gateway_token =
        service_account_token(&admin, demo::OADP_NAMESPACE, demo::GATEWAY_SERVICE_ACCOUNT).await?;
    let users: SharedUserClients = match &cluster {
        DemoCluster::Emulated(served) => {
            let emulator = served.server.clone();
            let identity = Component::Gateway.identity();
            Arc::new(FnUserClients(move |token: &str| {
                emulator.client_as(token, &identity)
            }))
        }
        DemoCluster::Existing { config, .. } => Arc::new(KubeConfigClients::new(
            (**config).clone(),
            Duration::from_secs(60),
            10_000,
        )),
    };
    let (gateway_addr, serving) = start_gateway(
        cluster.client_as(&gateway_token, Component::Gateway)?,
        users,
        history,
        GatewayConfig {
            oadp_namespace: demo::OADP_NAMESPACE.to_string(),
            session: session_config(&args.session)?,
            ..GatewayConfig::default()
        },
        (args.gateway_listen, None),
        Some(Duration::from_secs(120)),
        shutdown.clone(),
    )
    .await?;
    cluster.save()?;
    // The sample backups of team-a (taken once, as alice, in the background: a backup takes
    // seconds and the banner should not wait for them).
    if let Some((_, alice_token)) = tokens.first() {
        let (admin, tenant) = (
            admin.clone(),
            cluster.client_as(alice_token, Component::Cli)?,
        );
        tokio::spawn(async move {
            if let Err(error) = demo::seed_sample_backups(&admin, &tenant).await {
                tracing::warn!(error = %error, "the demo's sample backups were not taken");
            }
        });
    }

    // The admin's kubeconfig: the demo's own, or the one it was given for an existing cluster.
    let admin_kubeconfig = args
        .kubeconfig
        .clone()
        .unwrap_or_else(|| data_dir.join("kubeconfig-admin"));
    println!("NAC demo is running:");
    println!("  {} {}", cluster.describe(), cluster.url());
    println!(
        "  Velero 1.18 (simulated)     namespace {}, default BackupStorageLocation on {}",
        demo::OADP_NAMESPACE,
        object_store.display()
    );
    println!("  object-store downloads      {download_base}");
    println!(
        "  shared backup pool          BackupBuckets {} (maxEntries 1 each): team-a and team-b get entries in different buckets",
        demo::POOL_BUCKETS.join(", ")
    );
    println!(
        "  NAC controllers             every non-admin kind → Velero (as openshift-adp/nac-controller); metrics http://{metrics}/metrics"
    );
    println!(
        "  NAC web console             http://{gateway_addr}/  (sign in by pasting a token from below)"
    );
    println!(
        "  NAC gateway                 http://{gateway_addr}  (REST, SSE, GraphQL at /graphql; API documentation at /docs)"
    );
    println!(
        "  history store               {} (--database-url postgres://… for Postgres)",
        match &args.history.database_url {
            Some(url) => crate::history::redact_url(url),
            None => format!("SQLite {}", data_dir.join("history.db").display()),
        }
    );
    println!(
        "  deletion-action receiver    {}  (DeletionAction {}, failurePolicy Ignore; CA {}, read token {})",
        receiver.base_url,
        demo::DELETION_ACTION,
        receiver.ca_file.display(),
        receiver.token_file.display()
    );
    println!(
        "  sample backups              {} of {} (taken in the background; the second after a change)",
        demo::SAMPLE_BACKUPS.join(", "),
        demo::SAMPLE_NAMESPACE
    );
    println!("Users:");
    println!(
        "  admin   cluster-admin         KUBECONFIG={}",
        admin_kubeconfig.display()
    );
    for l in lines {
        println!("{l}");
    }
    println!("Gateway tokens (Authorization: Bearer TOKEN):");
    for (user, token) in &tokens {
        println!("  {user:<7} {token}");
    }
    println!("Try:");
    if let Some((user, _)) = tokens.first() {
        println!("  open http://{gateway_addr}/ in a browser and paste {user}'s token");
    }
    println!("  export KUBECONFIG={}", admin_kubeconfig.display());
    println!(
        "  kubectl -n {} create -f - <<< '{{\"apiVersion\":\"velero.io/v1\",\"kind\":\"Backup\",\"metadata\":{{\"name\":\"team-a-1\"}},\"spec\":{{\"includedNamespaces\":[\"team-a\"]}}}}'",
        demo::OADP_NAMESPACE
    );
    println!(
        "  kubectl -n {} get backups.velero.io -w",
        demo::OADP_NAMESPACE
    );
    println!(
        "  export KUBECONFIG={}",
        data_dir.join("kubeconfig-alice").display()
    );
    println!(
        "  kubectl apply -f - <<< '{{\"apiVersion\":\"oadp.openshift.io/v1alpha1\",\"kind\":\"NonAdminBackup\",\"metadata\":{{\"name\":\"mine\"}},\"spec\":{{\"backupSpec\":{{}}}}}}'"
    );
    println!("  kubectl get nab -w");
    if let Some((_, token)) = tokens.first() {
        println!(
            "  curl -H 'Authorization: Bearer {token}' http://{gateway_addr}/api/v1/namespaces/team-a/backups"
        );
        println!(
            "  curl -H 'Authorization: Bearer {token}' http://{gateway_addr}/api/v1/namespaces/team-a/history"
        );
    }
    if let Some((_, token)) = tokens.first() {
        let [first, second] = demo::SAMPLE_BACKUPS;
        let backups = format!(
            "http://{gateway_addr}/api/v1/namespaces/{}",
            demo::SAMPLE_NAMESPACE
        );
        println!("  curl -H 'Authorization: Bearer {token}' {backups}/backups/{first}/manifest");
        println!(
            "  curl -H 'Authorization: Bearer {token}' '{backups}/backups/{second}/diff?against={first}'"
        );
        println!(
            "  curl -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' -d '{{\"name\":\"next\",\"spec\":{{\"backupSpec\":{{}}}}}}' '{backups}/backups?dryRun=true'"
        );
        println!(
            "  curl -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' -d '{{\"name\":\"undo\",\"spec\":{{\"restoreSpec\":{{\"backupName\":\"{first}\"}}}}}}' '{backups}/restores?dryRun=true'"
        );
    }
    println!(
        "  kubectl --kubeconfig {} get deletionactions",
        admin_kubeconfig.display()
    );
    println!(
        "  kubectl --kubeconfig {} -n {} patch nab {} --type merge -p '{{\"spec\":{{\"deleteBackup\":true}}}}'",
        data_dir.join("kubeconfig-alice").display(),
        demo::SAMPLE_NAMESPACE,
        demo::SAMPLE_BACKUPS[0]
    );
    println!(
        "  curl --cacert {} -H \"Authorization: Bearer $(cat {})\" {}{}",
        receiver.ca_file.display(),
        receiver.token_file.display(),
        receiver.base_url,
        crate::sim::deletion_receiver::CALLS_PATH
    );
    if let Some((_, token)) = tokens.iter().find(|(user, _)| *user == demo::CI_BOT.user) {
        println!(
            "  NAC_SERVER=http://{gateway_addr} NAC_TOKEN={token} nac backup create ci-1 -n team-a --wait"
        );
    }
    shutdown.on_signals().map_err(CliError::Signals)?;
    println!(
        "Press Ctrl-C to stop; state is kept in {}.",
        data_dir.display()
    );
    let mut cluster = cluster;
    cluster.until_stopped(&shutdown).await;
    // The controllers and the gateway stop (on the emulator, still serving), then its state
    // is saved.
    let (stopped, served) = tokio::join!(controllers, gateway_stopped(serving));
    cluster.save()?;
    stopped_cleanly(Some(stopped.unwrap_or(None)), Some(served))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn user_specs() {
        assert_eq!(parse_user("alice").unwrap(), ("alice".into(), vec![]));
        assert_eq!(
            parse_user("bob:devs,ops").unwrap(),
            ("bob".into(), vec!["devs".to_string(), "ops".to_string()])
        );
        assert!(parse_user(":x").is_err());
    }
}
