//! `nac backup ...` and `nac restore ...`: arguments for CI pipelines, wired to
//! [`crate::client`]; where the server and token come from.
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client::pipeline::{self, JobKind, Output};
use crate::client::{ClientError, ExitStatus, GatewayClient, Outcome};

/// How to reach the gateway.
#[derive(Debug, Args, Clone)]
pub struct Connection {
    /// The gateway's URL (e.g. http://127.0.0.1:8080 for `nac demo`).
    #[arg(
        long,
        env = "NAC_SERVER",
        global = true,
        default_value = "http://127.0.0.1:8080"
    )]
    pub server: String,
    /// Bearer token (default: $NAC_TOKEN, else the current kubeconfig user's token).
    #[arg(long, env = "NAC_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// Kubeconfig to take the token from (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// PEM file of the CA that signed the gateway's certificate (https only).
    #[arg(long, global = true)]
    pub certificate_authority: Option<PathBuf>,
    /// Namespace of the backups or restores.
    #[arg(short, long, global = true, default_value = "default")]
    pub namespace: String,
    /// Output: table, json, yaml or name.
    #[arg(short, long, global = true, default_value = "table")]
    pub output: Output,
}

/// Waiting for a job to finish.
#[derive(Debug, Args, Clone)]
pub struct WaitArgs {
    /// Return only when the job finished; the exit code tells how (0 Completed,
    /// 3 PartiallyFailed, 4 Failed or refused, 5 still running at --timeout, 1 error).
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits, e.g. 90s, 10m, 1h.
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// `nac backup ...`.
#[derive(Debug, Args)]
pub struct BackupCommand {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub action: BackupAction,
}

/// `nac restore ...`.
#[derive(Debug, Args)]
pub struct RestoreCommand {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub action: RestoreAction,
}

/// What to do with backups.
#[derive(Debug, Subcommand)]
pub enum BackupAction {
    /// Back up the namespace (a NonAdminBackup).
    Create {
        /// Name of the backup.
        name: String,
        /// Resources to include, e.g. configmaps,deployments (default: all).
        #[arg(long, value_delimiter = ',')]
        include_resources: Vec<String>,
        /// Resources to leave out.
        #[arg(long, value_delimiter = ',')]
        exclude_resources: Vec<String>,
        /// Only objects matching this label selector, e.g. app=web.
        #[arg(long)]
        selector: Option<String>,
        /// How long Velero keeps the backup, e.g. 720h0m0s.
        #[arg(long)]
        ttl: Option<String>,
        /// A NonAdminBackupStorageLocation of the namespace (default: the admin's default).
        #[arg(long)]
        storage_location: Option<String>,
        /// The whole `backupSpec` as a JSON or YAML file (flags above then add to it).
        #[arg(long, short = 'f')]
        from_file: Option<PathBuf>,
        /// Retrying with the same key never creates a second backup.
        #[arg(long)]
        idempotency_key: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    #[command(flatten)]
    Common(JobAction),
    /// Delete a backup permanently: its data in the bucket, its Velero objects, the NonAdminBackup.
    Delete { name: String },
}

/// What to do with restores.
#[derive(Debug, Subcommand)]
pub enum RestoreAction {
    /// Restore the namespace from one of its backups (a NonAdminRestore).
    Create {
        /// Name of the restore.
        name: String,
        /// The NonAdminBackup to restore from.
        #[arg(long)]
        from_backup: String,
        /// Resources to include (default: all in the backup).
        #[arg(long, value_delimiter = ',')]
        include_resources: Vec<String>,
        /// Resources to leave out.
        #[arg(long, value_delimiter = ',')]
        exclude_resources: Vec<String>,
        /// Retrying with the same key never creates a second restore.
        #[arg(long)]
        idempotency_key: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    #[command(flatten)]
    Common(JobAction),
    /// Delete a restore (the restored objects stay).
    Delete { name: String },
}

/// What backups and restores have alike.
#[derive(Debug, Subcommand)]
pub enum JobAction {
    /// Show one.
    Get { name: String },
    /// List the namespace's.
    List {
        /// Only this phase (New, BackingOff, Created, Deleting, or a Velero phase).
        #[arg(long)]
        phase: Option<String>,
        /// Only those with these labels.
        #[arg(long, short = 'l')]
        selector: Option<String>,
    },
    /// Wait until it finished; the exit code tells how.
    Wait {
        name: String,
        #[arg(long, default_value = "30m", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Print its Velero log.
    Logs { name: String },
}

/// `90s`, `10m`, `1h`, `1h30m`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number
            .parse()
            .map_err(|_| format!("{text:?} is not a duration like 90s, 10m or 1h"))?;
        number.clear();
        total += n * match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(format!("{text:?} is not a duration like 90s, 10m or 1h")),
        };
    }
    if !number.is_empty() {
        return Err(format!("{text:?} needs a unit: s, m or h"));
    }
    if total == 0 {
        return Err(format!("{text:?} is not a positive duration"));
    }
    Ok(Duration::from_secs(total))
}

/// The token: --token / $NAC_TOKEN, else the current kubeconfig user's.
fn token(connection: &Connection) -> Result<String, ClientError> {
    if let Some(t) = connection.token.as_ref().filter(|t| !t.is_empty()) {
        return Ok(t.clone());
    }
    let config = match &connection.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path),
        None => kube::config::Kubeconfig::read(),
    }
    .map_err(|e| ClientError::Config(format!("no --token or NAC_TOKEN, and no kubeconfig: {e}")))?;
    let context_name = config.current_context.clone().unwrap_or_default();
    let user = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone())
        .unwrap_or_default();
    let auth = config
        .auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref())
        .ok_or_else(|| {
            ClientError::Config(format!(
                "no --token or NAC_TOKEN, and the kubeconfig's current context has no user {user:?}"
            ))
        })?;
    if let Some(t) = &auth.token {
        use secrecy::ExposeSecret;
        return Ok(t.expose_secret().to_string());
    }
    if let Some(file) = &auth.token_file {
        return std::fs::read_to_string(file)
            .map(|t| t.trim().to_string())
            .map_err(|e| ClientError::Config(format!("token file {file}: {e}")));
    }
    Err(ClientError::Config(format!(
        "no --token or NAC_TOKEN, and kubeconfig user {user:?} has no bearer token"
    )))
}

fn read_spec(path: &Path) -> Result<Value, ClientError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ClientError::Config(format!("{}: {e}", path.display())))?;
    serde_yaml::from_str(&text)
        .map_err(|e| ClientError::Config(format!("{}: not JSON or YAML: {e}", path.display())))
}

fn put_list(spec: &mut Value, key: &str, values: &[String]) {
    if !values.is_empty() {
        spec[key] = json!(values);
    }
}

fn print(objects: &[Value], output: Output) {
    if let Err(e) = super::write_stdout(&pipeline::render(objects, output)) {
        eprintln!("error: cannot write to standard output: {e}");
    }
}

/// Reports a finished (or timed-out) job on stderr and returns its exit code.
fn finish(kind: JobKind, namespace: &str, object: &Value, output: Output) -> ExitCode {
    print(std::slice::from_ref(object), output);
    let outcome = Outcome::of(object);
    let name = object["metadata"]["name"].as_str().unwrap_or("");
    eprintln!(
        "{}",
        outcome.describe(&format!("{} {namespace}/{name}", kind.noun()))
    );
    ExitCode::from(outcome.exit_status().code())
}

fn fail(error: ClientError) -> ExitCode {
    eprintln!("error: {error}");
    if let ClientError::Problem { errors, .. } = &error {
        for e in errors {
            eprintln!("  {e}");
        }
    }
    ExitCode::from(ExitStatus::Error.code())
}

/// Runs `nac backup ...`.
pub async fn backup(command: BackupCommand) -> ExitCode {
    match run_backup(command).await {
        Ok(code) => code,
        Err(e) => fail(e),
    }
}

/// Runs `nac restore ...`.
pub async fn restore(command: RestoreCommand) -> ExitCode {
    match run_restore(command).await {
        Ok(code) => code,
        Err(e) => fail(e),
    }
}

fn connect(c: &Connection) -> Result<GatewayClient, ClientError> {
    GatewayClient::new(&c.server, &token(c)?, c.certificate_authority.as_deref())
}

async fn run_backup(command: BackupCommand) -> Result<ExitCode, ClientError> {
    let c = &command.connection;
    let client = connect(c)?;
    let kind = JobKind::Backup;
    let ns = c.namespace.as_str();
    match command.action {
        BackupAction::Create {
            name,
            include_resources,
            exclude_resources,
            selector,
            ttl,
            storage_location,
            from_file,
            idempotency_key,
            wait,
        } => {
            let mut spec = match &from_file {
                Some(path) => read_spec(path)?,
                None => json!({}),
            };
            if !spec.is_object() {
                return Err(ClientError::Config(
                    "--from-file must hold a backupSpec object".into(),
                ));
            }
            put_list(&mut spec, "includedResources", &include_resources);
            put_list(&mut spec, "excludedResources", &exclude_resources);
            if let Some(s) = selector {
                spec["labelSelector"] = label_selector(&s)?;
            }
            if let Some(t) = ttl {
                spec["ttl"] = json!(t);
            }
            if let Some(l) = storage_location {
                spec["storageLocation"] = json!(l);
            }
            let object = pipeline::create(
                &client,
                kind,
                ns,
                &name,
                json!({"backupSpec": spec}),
                idempotency_key.as_deref(),
                wait.wait.then_some(wait.timeout),
            )
            .await?;
            if wait.wait {
                Ok(finish(kind, ns, &object, c.output))
            } else {
                print(&[object], c.output);
                Ok(ExitCode::SUCCESS)
            }
        }
        BackupAction::Common(action) => common(&client, kind, ns, c.output, action).await,
        BackupAction::Delete { name } => {
            let answer = pipeline::delete(&client, kind, ns, &name).await?;
            eprintln!(
                "backup {ns}/{name}: permanent deletion requested (data, Velero objects and the NonAdminBackup)"
            );
            if c.output != Output::Table {
                print(&[answer], c.output);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn run_restore(command: RestoreCommand) -> Result<ExitCode, ClientError> {
    let c = &command.connection;
    let client = connect(c)?;
    let kind = JobKind::Restore;
    let ns = c.namespace.as_str();
    match command.action {
        RestoreAction::Create {
            name,
            from_backup,
            include_resources,
            exclude_resources,
            idempotency_key,
            wait,
        } => {
            let mut spec = json!({"backupName": from_backup});
            put_list(&mut spec, "includedResources", &include_resources);
            put_list(&mut spec, "excludedResources", &exclude_resources);
            let object = pipeline::create(
                &client,
                kind,
                ns,
                &name,
                json!({"restoreSpec": spec}),
                idempotency_key.as_deref(),
                wait.wait.then_some(wait.timeout),
            )
            .await?;
            if wait.wait {
                Ok(finish(kind, ns, &object, c.output))
            } else {
                print(&[object], c.output);
                Ok(ExitCode::SUCCESS)
            }
        }
        RestoreAction::Common(action) => common(&client, kind, ns, c.output, action).await,
        RestoreAction::Delete { name } => {
            let answer = pipeline::delete(&client, kind, ns, &name).await?;
            eprintln!("restore {ns}/{name} deleted (the restored objects stay)");
            if c.output != Output::Table {
                print(&[answer], c.output);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn common(
    client: &GatewayClient,
    kind: JobKind,
    ns: &str,
    output: Output,
    action: JobAction,
) -> Result<ExitCode, ClientError> {
    match action {
        JobAction::Get { name } => {
            print(&[pipeline::get(client, kind, ns, &name).await?], output);
            Ok(ExitCode::SUCCESS)
        }
        JobAction::List { phase, selector } => {
            let items =
                pipeline::list(client, kind, ns, phase.as_deref(), selector.as_deref()).await?;
            print(&items, output);
            Ok(ExitCode::SUCCESS)
        }
        JobAction::Wait { name, timeout } => {
            let object = pipeline::wait_until_final(client, kind, ns, &name, timeout).await?;
            Ok(finish(kind, ns, &object, output))
        }
        JobAction::Logs { name } => {
            pipeline::logs(client, kind, ns, &name, &mut std::io::stdout()).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `app=web,tier=db` as a Kubernetes LabelSelector (equality terms only).
fn label_selector(text: &str) -> Result<Value, ClientError> {
    let mut labels = serde_json::Map::new();
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = term.split_once('=').ok_or_else(|| {
            ClientError::Config(format!(
                "--selector {text:?}: use key=value terms separated by commas"
            ))
        })?;
        labels.insert(
            key.trim().to_string(),
            json!(value.trim_start_matches('=').trim()),
        );
    }
    Ok(json!({"matchLabels": labels}))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl_timeouts() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5d").is_err());
    }

    #[test]
    fn selectors_become_match_labels() {
        assert_eq!(
            label_selector("app=web, tier==db").unwrap(),
            json!({"matchLabels": {"app": "web", "tier": "db"}})
        );
        assert!(label_selector("app").is_err());
    }

    #[test]
    fn the_token_comes_from_the_kubeconfig_when_not_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: ci}\nclusters:\n- name: k\n  cluster: {server: 'https://127.0.0.1:6443'}\nusers:\n- name: ci\n  user: {token: from-kubeconfig}\n",
        )
        .unwrap();
        let mut connection = Connection {
            server: "http://127.0.0.1:8080".into(),
            token: None,
            kubeconfig: Some(path),
            certificate_authority: None,
            namespace: "team-a".into(),
            output: Output::Table,
        };
        assert_eq!(token(&connection).unwrap(), "from-kubeconfig");
        connection.token = Some("explicit".into());
        assert_eq!(token(&connection).unwrap(), "explicit");
    }
}
