//! Deletion actions at work (seed 003): the DeletionAction status controller (`Valid`), and the
//! executor the NonAdminBackup controller runs when a NAB being permanently deleted still has
//! actions to run — BEFORE its Velero DeleteBackupRequest exists.
//!
//! The executor downloads the backup's tarball through a Velero `DownloadRequest` (kind
//! `BackupContents`, in the OADP namespace), reads its items, and for each pending action in
//! alphanumeric order POSTs one [`request_body`] per matching item to the action's HTTPS webhook
//! (verified with its `caBundle`, bounded by its timeout); a 2xx answer is success. After each
//! action the outcome is written as the NAB's condition (so a restart resumes there). A failure
//! under `failurePolicy: Fail` stops the run, leaves the NAB Deleting and retries with backoff;
//! under `Ignore` it is recorded and the deletion goes on. Nothing is rolled back.
//!
//! All decisions are in [`super::deletion_action_decision`]; this file only does the I/O.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full, Limited};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use rand::Rng;
use serde_json::Value;

use super::deletion_action_decision::{
    self as decision, ActionOutcome, ContentsNeed, Next, Recorded, WebhookTarget, request_body,
};
use super::driver::{self, Applied, Reconciler};
use super::events::{self, Notice};
use super::{Context, ControllerError, writes};
use crate::api::nonadmin::deletion_action::reasons;
use crate::api::nonadmin::{DeletionAction, NonAdminBackup};
use crate::api::velero::{Backup, DownloadRequest, DownloadRequestPhase};
use crate::manifest::fetch::{ArtifactFetcher, HttpArtifactFetcher};
use crate::manifest::tarball::{BackupItem, read_backup_tarball};

/// This controller's name in metrics.
pub const CONTROLLER_NAME: &str = "deletionaction";
/// How often to look again while Velero prepares the download URL.
pub const DOWNLOAD_POLL: Duration = Duration::from_millis(500);
/// How long the tarball download may take (for the answer, then for the body).
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);
/// Most of a webhook's error answer read (the condition keeps less).
const MAX_ANSWER_BYTES: usize = 16 * 1024;
/// Writes of one condition tried again after a conflict (a tenant edit in between).
const CONFLICT_RETRIES: usize = 3;
const SOON: Duration = Duration::from_millis(20);

// ---------------------------------------------------------------------------------------------
// The DeletionAction status controller
// ---------------------------------------------------------------------------------------------

/// Keeps every DeletionAction's `Valid` condition and `observedGeneration` current, until the
/// task is dropped.
pub async fn run(context: Arc<Context>) {
    let actions: Api<DeletionAction> = Api::all(context.client.clone());
    let controller = super::velero_cache::lean_controller(actions, watcher::Config::default());
    driver::run(controller, ActionStatusReconciler, context).await;
}

/// One reconcile of a DeletionAction (through the [`driver`]): validate, write the status when
/// it changed.
pub async fn reconcile(
    action: Arc<DeletionAction>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    driver::reconcile(&ActionStatusReconciler, action, context).await
}

/// The DeletionAction status controller, run by the [`driver`]: the action alone decides its
/// `Valid` condition.
pub struct ActionStatusReconciler;

/// The one step of the status controller.
#[derive(Debug)]
pub enum ActionStatusStep {
    /// Write this status.
    WriteStatus(Box<crate::api::nonadmin::DeletionActionStatus>),
    /// The status is current.
    AwaitChange,
}

impl Reconciler for ActionStatusReconciler {
    type Object = DeletionAction;
    type Observed = Time;
    type Step = ActionStatusStep;
    const KIND: &'static str = CONTROLLER_NAME;

    fn api(&self, client: kube::Client, _: Option<&str>) -> Api<DeletionAction> {
        Api::all(client)
    }

    async fn observe(&self, _: &Context, _: &DeletionAction) -> Result<Time, ControllerError> {
        Ok(now())
    }

    fn decide(&self, _: &Context, action: &DeletionAction, now: &Time) -> ActionStatusStep {
        let status = decision::action_status(action, now);
        if decision::action_status_changed(action.status.as_ref(), &status) {
            ActionStatusStep::WriteStatus(Box::new(status))
        } else {
            ActionStatusStep::AwaitChange
        }
    }

    fn step_name(step: &ActionStatusStep) -> &'static str {
        match step {
            ActionStatusStep::WriteStatus(_) => "WriteStatus",
            ActionStatusStep::AwaitChange => "AwaitChange",
        }
    }

    fn notice(
        &self,
        _: &DeletionAction,
        _: &Time,
        _: &ActionStatusStep,
    ) -> Option<Notice<'static>> {
        None
    }

    async fn apply(
        &self,
        _: &Context,
        api: &Api<DeletionAction>,
        action: &DeletionAction,
        step: ActionStatusStep,
    ) -> Result<Applied, ControllerError> {
        match step {
            ActionStatusStep::WriteStatus(status) => {
                let mut next = action.clone();
                next.status = Some(*status);
                let name = action.metadata.name.clone().unwrap_or_default();
                api.replace_status(&name, &PostParams::default(), &next)
                    .await?;
                Ok(Applied::done(Action::await_change()))
            }
            ActionStatusStep::AwaitChange => Ok(Applied::unchanged(Action::await_change())),
        }
    }
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// Every DeletionAction of the cluster; none when the CRD is not installed (a cluster that never
/// had deletion actions deletes backups as before).
pub async fn list_actions(client: &kube::Client) -> Result<Vec<DeletionAction>, ControllerError> {
    let api: Api<DeletionAction> = Api::all(client.clone());
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

// ---------------------------------------------------------------------------------------------
// The executor
// ---------------------------------------------------------------------------------------------

/// Runs the `pending` actions (ordered) for `nab`, whose Velero Backup is `backup`; returns when
/// to reconcile the NAB again. Conditions are written after each action.
pub async fn execute(
    context: &Context,
    api: &Api<NonAdminBackup>,
    nab: &NonAdminBackup,
    backup: &Backup,
    pending: &[DeletionAction],
) -> Result<Action, ControllerError> {
    let items: Result<Vec<BackupItem>, String> = match decision::contents_need(backup) {
        ContentsNeed::WaitForBackup => {
            return Ok(Action::requeue(super::nab_decision::DELETION_POLL));
        }
        ContentsNeed::NoContents => Ok(Vec::new()),
        ContentsNeed::Download => match download_contents(context, nab, backup).await? {
            Download::Pending => return Ok(Action::requeue(DOWNLOAD_POLL)),
            Download::Ready(items) => Ok(items),
            Download::Failed(error) => Err(format!("cannot read the backup contents: {error}")),
        },
    };
    let backup_json = serde_json::to_value(backup)
        .map_err(|e| ControllerError::Invalid(format!("cannot serialize the backup: {e}")))?;
    let held: &[BackupItem] = items.as_deref().unwrap_or_default();
    let namespace = nab.metadata.namespace.clone().unwrap_or_default();
    // Only items of the NAB's own namespace (and the cluster-scoped kinds an action lists)
    // are ever sent: the tarball may be the tenant's forgery.
    let planned = decision::plan(pending, held, &namespace);
    let name = nab.metadata.name.clone().unwrap_or_default();
    let mut conditions = nab
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    for action in planned {
        if action.dropped.total() > 0 {
            tracing::warn!(
                nab = %format!("{namespace}/{name}"),
                action = %action.name,
                other_namespace = action.dropped.other_namespace,
                unlisted_cluster_scoped = action.dropped.unlisted_cluster_scoped,
                inconsistent = action.dropped.inconsistent,
                "deletion action: items of the backup outside its namespace not sent"
            );
        }
        let outcome = match (&action.run, &items) {
            (Err(invalid), _) => ActionOutcome::Failed {
                error: invalid.clone(),
            },
            (Ok(_), Err(unreadable)) => ActionOutcome::Failed {
                error: unreadable.clone(),
            },
            (Ok((_, matching)), Ok(_)) if matching.is_empty() => ActionOutcome::NoMatchingItems,
            (Ok((target, matching)), Ok(items)) => {
                let chosen: Vec<&BackupItem> =
                    matching.iter().filter_map(|i| items.get(*i)).collect();
                call_action(&action.name, target, &backup_json, &chosen).await
            }
        };
        let jitter = rand::rng().random_range(0.5..1.5);
        let recorded = decision::record(
            &action.name,
            action.failure_policy,
            &outcome,
            &conditions,
            jitter,
        );
        tracing::info!(
            nab = %format!("{}/{name}", nab.metadata.namespace.as_deref().unwrap_or_default()),
            action = %action.name,
            reason = recorded.reason,
            message = %recorded.message,
            "deletion action outcome"
        );
        match write_condition(api, &name, &recorded).await? {
            Some(written) => conditions = written,
            // The NAB is gone (its finalizer was removed by someone else): nothing left to do.
            None => return Ok(Action::await_change()),
        }
        events::publish_notice(&context.client, &events::reference(nab), notice(&recorded)).await;
        if let Next::RetryAfter(delay) = recorded.next {
            return Ok(Action::requeue(delay));
        }
    }
    Ok(Action::requeue(SOON))
}

/// The Event telling the tenant about an outcome (a skipped action is not news).
fn notice(recorded: &Recorded) -> Option<Notice<'static>> {
    let note = format!(
        "deletion action {}: {}",
        decision_action_name(&recorded.type_),
        recorded.message
    );
    match recorded.reason {
        reasons::SUCCEEDED => Some(Notice::normal("DeletionActionSucceeded", "Delete", note)),
        reasons::FAILED => Some(Notice::warning("DeletionActionFailed", "Delete", note)),
        reasons::IGNORED => Some(Notice::warning("DeletionActionIgnored", "Delete", note)),
        _ => None,
    }
}

fn decision_action_name(type_: &str) -> &str {
    crate::api::nonadmin::deletion_action::action_of_condition_type(type_).unwrap_or(type_)
}

/// Sets one condition on the NAB's freshest status; returns the conditions written, or `None`
/// when the NAB no longer exists. A conflict (the tenant changed the NAB meanwhile) is retried
/// on a fresh read, so a finished action is not called again because of it.
async fn write_condition(
    api: &Api<NonAdminBackup>,
    name: &str,
    recorded: &Recorded,
) -> Result<Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>, ControllerError>
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(fresh) = api.get_opt(name).await? else {
            return Ok(None);
        };
        let mut next = fresh.clone();
        let status = next.status.get_or_insert_with(Default::default);
        super::status::set_condition(
            &mut status.conditions,
            &recorded.type_,
            recorded.status,
            recorded.reason,
            &recorded.message,
            &now(),
        );
        let conditions = status.conditions.clone();
        if !super::nab_decision::status_changed(fresh.status.as_ref(), status) {
            return Ok(Some(conditions));
        }
        match api
            .replace_status(name, &PostParams::default(), &next)
            .await
        {
            Ok(_) => return Ok(Some(conditions)),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < CONFLICT_RETRIES => continue,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(error) => return Err(error.into()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Backup contents
// ---------------------------------------------------------------------------------------------

/// Where the download of the backup's tarball stands.
enum Download {
    /// Velero has not served the URL yet.
    Pending,
    /// The tarball's items.
    Ready(Vec<BackupItem>),
    /// The contents cannot be had (the text says why; never the URL).
    Failed(String),
}

/// Asks Velero for the tarball (a `BackupContents` DownloadRequest) and, once the URL is there,
/// downloads and reads it. The request is deleted as soon as its URL was used, so every attempt
/// works with a fresh URL (they expire).
async fn download_contents(
    context: &Context,
    nab: &NonAdminBackup,
    backup: &Backup,
) -> Result<Download, ControllerError> {
    let requests: Api<DownloadRequest> =
        Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let backup_name = backup.metadata.name.clone().unwrap_or_default();
    let request_name = decision::contents_request_name(&backup_name);
    let Some(request) = requests.get_opt(&request_name).await? else {
        let nacuuid = nab
            .status
            .as_ref()
            .and_then(|s| s.velero_backup.as_ref())
            .and_then(|v| v.nacuuid.clone())
            .unwrap_or_default();
        let mut request = decision::contents_request(backup, nab, &nacuuid);
        request.metadata.namespace = Some(context.oadp_namespace.clone());
        writes::create_if_absent(&requests, &request).await?;
        return Ok(Download::Pending);
    };
    let status = request.status.unwrap_or_default();
    let url = status.download_url.filter(|url| !url.is_empty());
    let Some(url) = url else {
        if status.phase == Some(DownloadRequestPhase::Processed) {
            // Velero processed it without a URL: the tarball is not in object storage.
            writes::delete_if_present(&requests, &request_name).await?;
            return Ok(Download::Failed(
                "Velero could not serve the backup tarball".to_string(),
            ));
        }
        return Ok(Download::Pending);
    };
    writes::delete_if_present(&requests, &request_name).await?;
    let fetcher = match HttpArtifactFetcher::new(DOWNLOAD_TIMEOUT) {
        Ok(fetcher) => fetcher,
        Err(error) => {
            return Ok(Download::Failed(format!(
                "cannot load the platform's CA roots: {error}"
            )));
        }
    };
    let bytes = match fetcher
        .fetch(&url, &context.fetch_scope(backup).await)
        .await
    {
        Ok(bytes) => bytes,
        Err(error) => return Ok(Download::Failed(error.to_string())),
    };
    // Reading a large tarball is CPU work: keep it off the reconcilers' threads.
    let read = tokio::task::spawn_blocking(move || read_backup_tarball(&bytes)).await;
    Ok(match read {
        Ok(Ok(items)) => Download::Ready(items),
        Ok(Err(error)) => Download::Failed(error.to_string()),
        Err(error) => Download::Failed(format!("reading the tarball stopped: {error}")),
    })
}

// ---------------------------------------------------------------------------------------------
// Webhook calls
// ---------------------------------------------------------------------------------------------

type Connector = hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;
type WebhookClient = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// Calls the action once per item, in item order, stopping at the first failure.
async fn call_action(
    action: &str,
    target: &WebhookTarget,
    backup: &Value,
    items: &[&BackupItem],
) -> ActionOutcome {
    let client = match webhook_client(target) {
        Ok(client) => client,
        Err(error) => return ActionOutcome::Failed { error },
    };
    let uri: http::Uri = match target.url.as_str().parse() {
        Ok(uri) => uri,
        Err(error) => {
            return ActionOutcome::Failed {
                error: format!("the webhook URL is not usable: {error}"),
            };
        }
    };
    for item in items {
        let body = request_body(action, backup, &item.object);
        let bytes = match serde_json::to_vec(&body) {
            Ok(bytes) => bytes,
            Err(error) => {
                return ActionOutcome::Failed {
                    error: format!("cannot serialize the request: {error}"),
                };
            }
        };
        if let Err(error) = post(action, &client, &uri, bytes, target.timeout).await {
            return ActionOutcome::Failed {
                error: format!("{}: {error}", decision::item_label(*item)),
            };
        }
    }
    ActionOutcome::Succeeded { calls: items.len() }
}

/// An HTTPS-only client trusting the action's CA bundle (or the platform's roots without one).
fn webhook_client(target: &WebhookTarget) -> Result<WebhookClient, String> {
    // ring, explicitly: no reliance on a process-wide default provider.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match &target.ca_pem {
        None => builder
            .with_provider_and_native_roots(provider)
            .map_err(|e| format!("cannot load the platform's CA roots: {e}"))?,
        Some(pem) => {
            use rustls::pki_types::{CertificateDer, pem::PemObject};
            let mut roots = rustls::RootCertStore::empty();
            for certificate in CertificateDer::pem_slice_iter(pem) {
                let certificate = certificate.map_err(|e| format!("caBundle: {e}"))?;
                roots
                    .add(certificate)
                    .map_err(|e| format!("caBundle: {e}"))?;
            }
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS: {e}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            builder.with_tls_config(config)
        }
    };
    let connector = builder.https_only().enable_http1().build();
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

/// POSTs `body` for `action`; Ok on a 2xx answer within `timeout`, else why not — for another
/// answer only its status code and a fixed text: the body goes to the controller's log.
async fn post(
    action: &str,
    client: &WebhookClient,
    uri: &http::Uri,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<(), String> {
    let request = Request::post(uri.clone())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let exchange = async {
        let response = client.request(request).await.map_err(|e| error_chain(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        // The answer's text helps the admin, who reads the controller's log; the tenant is
        // told the status only (the body may carry anything the webhook knows). A body that
        // does not arrive is no reason to hide the status.
        let text = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map(|collected| String::from_utf8_lossy(&collected.to_bytes()).into_owned())
            .unwrap_or_default();
        tracing::warn!(
            action = %action,
            status = status.as_u16(),
            answer = %decision::log_excerpt(&text),
            "deletion action webhook refused an item"
        );
        Err(decision::answer_failure(status.as_u16()))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("no answer within {}s", timeout.as_secs()))?
}

/// An error with its causes (hyper's own text says little: "client error (Connect)"; the cause
/// says "invalid peer certificate: UnknownIssuer").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn notices_name_the_action_and_leave_skips_out() {
        let recorded = |reason: &'static str| Recorded {
            type_: "deletionaction.oadp.openshift.io/a-cleanup".into(),
            status: false,
            reason,
            message: "attempt 1 failed: HTTP 500".into(),
            next: Next::Continue,
        };
        let failed = notice(&recorded(reasons::FAILED)).unwrap();
        assert_eq!(failed.reason, "DeletionActionFailed");
        assert_eq!(
            failed.note,
            "deletion action a-cleanup: attempt 1 failed: HTTP 500"
        );
        assert_eq!(
            notice(&recorded(reasons::SUCCEEDED)).unwrap().reason,
            "DeletionActionSucceeded"
        );
        assert_eq!(
            notice(&recorded(reasons::IGNORED)).unwrap().reason,
            "DeletionActionIgnored"
        );
        assert!(notice(&recorded(reasons::SKIPPED)).is_none());
    }

    #[test]
    fn error_chains_keep_the_causes_once() {
        let inner = std::io::Error::other("invalid peer certificate: UnknownIssuer");
        let outer = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, inner);
        assert_eq!(
            error_chain(&outer),
            "invalid peer certificate: UnknownIssuer"
        );
        #[derive(Debug, thiserror::Error)]
        #[error("client error (Connect)")]
        struct Outer(#[source] std::io::Error);
        let wrapped = Outer(std::io::Error::other("tls handshake failed"));
        assert_eq!(
            error_chain(&wrapped),
            "client error (Connect): tls handshake failed"
        );
    }
}
