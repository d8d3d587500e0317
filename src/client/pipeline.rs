//! The pipeline operations on backups and restores over the gateway's REST API: create, get,
//! list (every page), wait until finished, stream logs, delete — and how results are printed.
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use super::http::{ClientError, GatewayClient};
use super::outcome::Outcome;

/// Which kind of job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Backup,
    Restore,
}

impl JobKind {
    /// The REST collection (`backups`, `restores`).
    pub fn collection(self) -> &'static str {
        match self {
            JobKind::Backup => "backups",
            JobKind::Restore => "restores",
        }
    }

    /// The word for messages.
    pub fn noun(self) -> &'static str {
        match self {
            JobKind::Backup => "backup",
            JobKind::Restore => "restore",
        }
    }
}

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Output {
    /// Columns for people.
    #[default]
    Table,
    /// The objects as JSON.
    Json,
    /// The objects as YAML.
    Yaml,
    /// Names only, one per line.
    Name,
}

impl std::str::FromStr for Output {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" | "wide" => Ok(Output::Table),
            "json" => Ok(Output::Json),
            "yaml" => Ok(Output::Yaml),
            "name" => Ok(Output::Name),
            other => Err(format!(
                "unknown output format {other:?} (json, yaml, name or table)"
            )),
        }
    }
}

/// The longest a single long-poll asks the gateway to hold (it caps waits itself too).
const POLL_SLICE: Duration = Duration::from_secs(300);

/// Characters escaped in a path segment (RFC 3986 unreserved ones stay as they are).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn path(kind: JobKind, namespace: &str, name: Option<&str>) -> String {
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, SEGMENT).to_string();
    match name {
        None => format!(
            "/api/v1/namespaces/{}/{}",
            enc(namespace),
            kind.collection()
        ),
        Some(n) => format!(
            "/api/v1/namespaces/{}/{}/{}",
            enc(namespace),
            kind.collection(),
            enc(n)
        ),
    }
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs().max(1))
}

/// Creates a job from its tenant-object spec (`{"backupSpec": ...}` / `{"restoreSpec": ...}`);
/// with `wait`, returns once it finished or `timeout` ran out.
pub async fn create(
    client: &GatewayClient,
    kind: JobKind,
    namespace: &str,
    name: &str,
    spec: Value,
    idempotency_key: Option<&str>,
    wait: Option<Duration>,
) -> Result<Value, ClientError> {
    let body = json!({"metadata": {"name": name}, "spec": spec});
    let query = match wait {
        Some(t) => format!("?wait=true&timeout={}", seconds(t.min(POLL_SLICE))),
        None => String::new(),
    };
    let started = Instant::now();
    let answer = client
        .call(
            Method::POST,
            &format!("{}{query}", path(kind, namespace, None)),
            Some(&body),
            idempotency_key,
        )
        .await?;
    match wait {
        Some(t) if !Outcome::of(&answer.body).is_final() => {
            wait_until_final(
                client,
                kind,
                namespace,
                name,
                t.saturating_sub(started.elapsed()),
            )
            .await
        }
        _ => Ok(answer.body),
    }
}

/// One job.
pub async fn get(
    client: &GatewayClient,
    kind: JobKind,
    namespace: &str,
    name: &str,
) -> Result<Value, ClientError> {
    Ok(client
        .call(Method::GET, &path(kind, namespace, Some(name)), None, None)
        .await?
        .body)
}

/// Every job of the namespace (all pages), optionally of one phase or matching a label selector.
pub async fn list(
    client: &GatewayClient,
    kind: JobKind,
    namespace: &str,
    phase: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<Value>, ClientError> {
    let mut items = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("limit", "200");
        if let Some(p) = phase {
            query.append_pair("phase", p);
        }
        if let Some(s) = selector {
            query.append_pair("labelSelector", s);
        }
        if let Some(c) = &next {
            query.append_pair("continue", c);
        }
        let answer = client
            .call(
                Method::GET,
                &format!("{}?{}", path(kind, namespace, None), query.finish()),
                None,
                None,
            )
            .await?;
        let page = answer.body["items"]
            .as_array()
            .ok_or_else(|| ClientError::InvalidResponse("a list without items".into()))?;
        items.extend(page.iter().cloned());
        next = answer.body["metadata"]["continue"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if next.is_none() {
            return Ok(items);
        }
    }
}

/// Waits until the job finished (or `timeout` ran out), long-polling the gateway.
pub async fn wait_until_final(
    client: &GatewayClient,
    kind: JobKind,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> Result<Value, ClientError> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let query = format!("?wait=true&timeout={}", seconds(left.min(POLL_SLICE)));
        let object = client
            .call(
                Method::GET,
                &format!("{}{query}", path(kind, namespace, Some(name))),
                None,
                None,
            )
            .await?
            .body;
        if Outcome::of(&object).is_final() || Instant::now() >= deadline {
            return Ok(object);
        }
        // The gateway answered early (it caps its waits): ask again after a breath.
        tokio::time::sleep(Duration::from_millis(200).min(left)).await;
    }
}

/// Streams the job's Velero log into `out`.
pub async fn logs(
    client: &GatewayClient,
    kind: JobKind,
    namespace: &str,
    name: &str,
    out: &mut (impl std::io::Write + Send),
) -> Result<u64, ClientError> {
    client
        .stream_to(&format!("{}/logs", path(kind, namespace, Some(name))), out)
        .await
}

/// Deletes the job (for a backup: the permanent deletion of its data); returns the gateway's
/// account of what it did.
pub async fn delete(
    client: &GatewayClient,
    kind: JobKind,
    namespace: &str,
    name: &str,
) -> Result<Value, ClientError> {
    Ok(client
        .call(
            Method::DELETE,
            &path(kind, namespace, Some(name)),
            None,
            None,
        )
        .await
        .map_err(|error| explain_refused_delete(kind, namespace, error))?
        .body)
}

/// A refused (403) backup deletion says which permission it takes: deleting a backup sets
/// `spec.deleteBackup` on the NonAdminBackup, i.e. `patch` on `nonadminbackups` — which the CI
/// role (`nac-nonadmin-backup-creator`) deliberately does not grant.
fn explain_refused_delete(kind: JobKind, namespace: &str, error: ClientError) -> ClientError {
    match error {
        ClientError::Problem {
            status,
            title,
            detail,
            mut errors,
        } if status == http::StatusCode::FORBIDDEN && kind == JobKind::Backup => {
            errors.push(format!(
                "deleting a backup needs the permission to patch nonadminbackups (group oadp.openshift.io) in namespace {namespace}: it sets spec.deleteBackup on the NonAdminBackup"
            ));
            errors.push(
                "the CI role nac-nonadmin-backup-creator does not grant it on purpose; a namespace admin or editor can delete the backup".to_string(),
            );
            ClientError::Problem {
                status,
                title,
                detail,
                errors,
            }
        }
        other => other,
    }
}

/// Prints `objects` as asked (pure; returns the text).
pub fn render(objects: &[Value], output: Output) -> String {
    match output {
        Output::Json => {
            let value = if objects.len() == 1 {
                objects[0].clone()
            } else {
                json!({"items": objects})
            };
            serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
        }
        Output::Yaml => {
            let value = if objects.len() == 1 {
                objects[0].clone()
            } else {
                json!({"items": objects})
            };
            serde_yaml::to_string(&value).unwrap_or_default()
        }
        Output::Name => objects
            .iter()
            .map(|o| format!("{}\n", o["metadata"]["name"].as_str().unwrap_or("")))
            .collect(),
        Output::Table => {
            let mut out = format!(
                "{:<40} {:<12} {:<16} {:>5}\n",
                "NAME", "PHASE", "VELERO-PHASE", "QUEUE"
            );
            for o in objects {
                let status = &o["status"];
                let velero = if status.get("veleroRestore").is_some() {
                    &status["veleroRestore"]["status"]["phase"]
                } else {
                    &status["veleroBackup"]["status"]["phase"]
                };
                let queue = status["queueInfo"]["estimatedQueuePosition"]
                    .as_i64()
                    .filter(|p| *p > 0)
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "-".into());
                out.push_str(&format!(
                    "{:<40} {:<12} {:<16} {:>5}\n",
                    o["metadata"]["name"].as_str().unwrap_or(""),
                    status["phase"].as_str().unwrap_or("-"),
                    velero.as_str().unwrap_or("-"),
                    queue
                ));
            }
            out
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_gateways_and_names_are_escaped() {
        assert_eq!(
            path(JobKind::Backup, "team-a", None),
            "/api/v1/namespaces/team-a/backups"
        );
        assert_eq!(
            path(JobKind::Restore, "team-a", Some("a/b c")),
            "/api/v1/namespaces/team-a/restores/a%2Fb%20c"
        );
    }

    #[test]
    fn tables_show_phase_velero_phase_and_queue_position() {
        let objects = vec![
            json!({"metadata": {"name": "nightly"}, "status": {"phase": "Created",
                "veleroBackup": {"status": {"phase": "New"}}, "queueInfo": {"estimatedQueuePosition": 3}}}),
            json!({"metadata": {"name": "done"}, "status": {"phase": "Created",
                "veleroBackup": {"status": {"phase": "Completed"}}, "queueInfo": {"estimatedQueuePosition": 0}}}),
        ];
        let table = render(&objects, Output::Table);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[1].starts_with("nightly") && lines[1].ends_with(" 3"),
            "{table}"
        );
        assert!(
            lines[2].contains("Completed") && lines[2].ends_with(" -"),
            "{table}"
        );
        assert_eq!(render(&objects, Output::Name), "nightly\ndone\n");
        let one: Value = serde_json::from_str(&render(&objects[..1], Output::Json)).unwrap();
        assert_eq!(one["metadata"]["name"], "nightly");
        assert!(render(&objects, Output::Yaml).contains("items:"));
        assert!("xml".parse::<Output>().is_err());
    }

    #[test]
    fn a_refused_backup_deletion_names_the_permission_it_takes() {
        let refused = || {
            super::super::http::problem(
                http::StatusCode::FORBIDDEN,
                &json!({"title": "Forbidden", "status": 403,
                        "detail": "you may not patch nonadminbackups in namespace team-a"}),
            )
        };
        let ClientError::Problem { errors, .. } =
            explain_refused_delete(JobKind::Backup, "team-a", refused())
        else {
            panic!("not a problem")
        };
        assert!(
            errors[0].contains("patch nonadminbackups") && errors[0].contains("namespace team-a"),
            "{errors:?}"
        );
        assert!(errors[1].contains("nac-nonadmin-backup-creator"));
        // Restores (plain deletes) and other errors pass through as they came.
        let ClientError::Problem { errors, .. } =
            explain_refused_delete(JobKind::Restore, "team-a", refused())
        else {
            panic!("not a problem")
        };
        assert!(errors.is_empty());
        let missing = super::super::http::problem(http::StatusCode::NOT_FOUND, &Value::Null);
        assert_eq!(
            explain_refused_delete(JobKind::Backup, "team-a", missing).to_string(),
            "404 Not Found: Not Found"
        );
    }
}
