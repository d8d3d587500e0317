//! Runs the parsed subcommands.
use std::path::Path;

use crate::api::crds;
use crate::sim::apiserver::{ApiServer, EmulatorConfig, kubeconfig, persist, tls};
use crate::sim::demo;

use super::{ApiserverArgs, Command, CrdsArgs, DemoArgs, EmulatorArgs, SimCommand};

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
}

pub(super) async fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Crds(args) => crds_command(&args),
        Command::Sim(SimCommand::Apiserver(args)) => apiserver_command(args).await,
        Command::Demo(args) => demo_command(args).await,
    }
}

fn crds_command(args: &CrdsArgs) -> Result<(), CliError> {
    print!("{}", crds::all_crds_yaml(args.velero)?);
    Ok(())
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

async fn serve_emulator(args: &EmulatorArgs, data_dir: &Path) -> Result<Served, CliError> {
    let server = ApiServer::new(EmulatorConfig {
        data_dir: Some(data_dir.to_path_buf()),
        audit_log: args.audit_log.clone(),
        ..EmulatorConfig::default()
    })?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| CliError::Listen {
            addr: args.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| CliError::Listen {
        addr: args.listen,
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

async fn wait_for_shutdown(served: Served) -> Result<(), CliError> {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = served.task => {}
    }
    served.server.save()?;
    Ok(())
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
    let served = serve_emulator(&args.emulator, &args.data_dir).await?;
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

async fn demo_command(args: DemoArgs) -> Result<(), CliError> {
    std::fs::create_dir_all(&args.data_dir).map_err(|source| CliError::Write {
        path: args.data_dir.clone(),
        source,
    })?;
    let data_dir = std::fs::canonicalize(&args.data_dir).unwrap_or_else(|_| args.data_dir.clone());
    let args = DemoArgs { data_dir, ..args };
    let served = serve_emulator(&args.emulator, &args.data_dir).await?;
    write_kubeconfig(
        &served,
        &args.data_dir,
        "admin",
        &served.server.admin_token(),
        "default",
    )?;
    let admin = served.server.client(&served.server.admin_token());
    demo::install(&admin).await?;
    let mut lines = Vec::new();
    for tenant in demo::TENANTS {
        let token = served.server.add_user(tenant.user, &[]);
        write_kubeconfig(
            &served,
            &args.data_dir,
            tenant.user,
            &token,
            tenant.namespace,
        )?;
        lines.push(format!(
            "  {:<6} owns namespace {:<7} KUBECONFIG={}",
            tenant.user,
            tenant.namespace,
            args.data_dir
                .join(format!("kubeconfig-{}", tenant.user))
                .display()
        ));
    }
    served.server.save()?;
    println!("NAC demo cluster ready at {}", served.url);
    println!(
        "  admin  (cluster-admin)         KUBECONFIG={}",
        args.data_dir.join("kubeconfig-admin").display()
    );
    for l in lines {
        println!("{l}");
    }
    println!(
        "Try: KUBECONFIG={} kubectl get nab",
        args.data_dir.join("kubeconfig-alice").display()
    );
    println!(
        "Press Ctrl-C to stop; state is kept in {}.",
        args.data_dir.display()
    );
    wait_for_shutdown(served).await
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
