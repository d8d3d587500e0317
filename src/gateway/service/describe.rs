//! Describing one backup or restore (status, conditions, effective spec, progress, deletion, resource list), the admin policy in force, and artifacts fetched through NonAdminDownloadRequests.

use super::*;

/// Downloadable artifacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactKind {
    /// The Velero log.
    Log,
    /// Errors and warnings.
    Results,
    /// The list of resources backed up or restored.
    ResourceList,
}

impl ArtifactKind {
    fn target(self, resource: TenantResource) -> Option<DownloadTargetKind> {
        match (resource, self) {
            (TenantResource::Backups, ArtifactKind::Log) => Some(DownloadTargetKind::BackupLog),
            (TenantResource::Backups, ArtifactKind::Results) => {
                Some(DownloadTargetKind::BackupResults)
            }
            (TenantResource::Backups, ArtifactKind::ResourceList) => {
                Some(DownloadTargetKind::BackupResourceList)
            }
            (TenantResource::Restores, ArtifactKind::Log) => Some(DownloadTargetKind::RestoreLog),
            (TenantResource::Restores, ArtifactKind::Results) => {
                Some(DownloadTargetKind::RestoreResults)
            }
            (TenantResource::Restores, ArtifactKind::ResourceList) => {
                Some(DownloadTargetKind::RestoreResourceList)
            }
            _ => None,
        }
    }
}

/// An artifact as the caller may read it.
#[derive(Clone, Debug, PartialEq)]
pub enum Artifact {
    /// Velero's log (text), without the lines about items the caller may not list.
    Log(String),
    /// A JSON artifact.
    Json(JsonArtifact),
}

/// A JSON artifact: Velero's results, or a backup's resource list (without the entries the
/// caller may not list).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JsonArtifact {
    /// `artifact=results`.
    Results(VeleroResults),
    /// `artifact=resource-list`.
    ResourceList(ResourceList),
}

impl utoipa::PartialSchema for JsonArtifact {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::ToSchema as _;
        // anyOf, not oneOf: an empty object is both an empty resource list and results
        // without messages.
        any_of_components(
            "Velero's results (`artifact=results`) or a backup's resource list \
             (`artifact=resource-list`).",
            &[&VeleroResults::name(), &ResourceList::name()],
        )
    }
}

impl utoipa::ToSchema for JsonArtifact {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema as _;
        schemas.push((VeleroResults::name().into(), VeleroResults::schema()));
        <VeleroResults as utoipa::ToSchema>::schemas(schemas);
        schemas.push((ResourceList::name().into(), ResourceList::schema()));
    }
}

/// A description's `effectiveSpec`: Velero's BackupSpec or RestoreSpec (components the CRDs'
/// schemas register, `rest::schema`).
fn effective_spec_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    any_of_components(
        "The spec Velero runs with (the tenant's, with the administrator's values filled \
         in): a backup's BackupSpec or a restore's RestoreSpec.",
        &["BackupSpec", "RestoreSpec"],
    )
}

/// A schema that is any of the named components, described.
fn any_of_components(
    description: &str,
    components: &[&str],
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{AnyOfBuilder, Schema};
    use utoipa::openapi::{Ref, RefOr};
    let any_of = components
        .iter()
        .fold(AnyOfBuilder::new(), |any_of, name| {
            any_of.item(Ref::from_schema_name(*name))
        })
        .description(Some(description));
    RefOr::T(Schema::AnyOf(any_of.build()))
}

/// Items done and total, as Velero counts them.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ProgressView {
    /// A backup's.
    Backup(BackupProgressView),
    /// A restore's.
    Restore(RestoreProgressView),
}

/// A backup's progress (null: Velero has not said yet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupProgressView {
    /// Items Velero expects to back up.
    #[schema(required = true)]
    pub total_items: Option<i64>,
    /// Items backed up so far.
    #[schema(required = true)]
    pub items_backed_up: Option<i64>,
    /// Volume snapshots attempted.
    #[schema(required = true)]
    pub volume_snapshots_attempted: Option<i64>,
    /// Volume snapshots completed.
    #[schema(required = true)]
    pub volume_snapshots_completed: Option<i64>,
}

/// A restore's progress (null: Velero has not said yet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreProgressView {
    /// Items Velero expects to restore.
    #[schema(required = true)]
    pub total_items: Option<i64>,
    /// Items restored so far.
    #[schema(required = true)]
    pub items_restored: Option<i64>,
}

/// Admin rules for one kind of spec, as field path → value.
// The maps are `Json` (transparent in serde) so that GraphQL types them `JSON`, as it always
// has, not `JSONObject`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "Rules")]
pub struct RulesView {
    /// Values the tenant must use (filled in when unset).
    #[schema(value_type = Object)]
    pub enforced: Json<BTreeMap<String, Value>>,
    /// Values used when the tenant sets none.
    #[schema(value_type = Object)]
    pub defaults: Json<BTreeMap<String, Value>>,
    /// Largest values allowed.
    #[schema(value_type = Object)]
    pub maximum: Json<BTreeMap<String, Value>>,
    /// Allow-lists.
    #[schema(value_type = Object)]
    pub allowed: Json<BTreeMap<String, Vec<Value>>>,
}

impl RulesView {
    fn of(rules: &SpecRules) -> Self {
        RulesView {
            enforced: Json(
                rules
                    .enforced()
                    .iter()
                    .map(|(path, value)| (path.to_string(), value.clone()))
                    .collect(),
            ),
            defaults: Json(
                rules
                    .defaults()
                    .iter()
                    .map(|(path, value)| (path.to_string(), value.clone()))
                    .collect(),
            ),
            maximum: Json(
                rules
                    .maxima()
                    .iter()
                    .map(|(path, maximum)| (path.to_string(), maximum.to_json()))
                    .collect(),
            ),
            allowed: Json(
                rules
                    .allowed()
                    .iter()
                    .map(|(path, values)| (path.to_string(), values.clone()))
                    .collect(),
            ),
        }
    }
}

/// The admin policy in force in a namespace.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "Policy")]
pub struct PolicyView {
    /// The namespace.
    pub namespace: String,
    /// Rules for `spec.backupSpec` (paths relative to it).
    pub backup: RulesView,
    /// Rules for `spec.restoreSpec`.
    pub restore: RulesView,
    /// Rules for `spec.backupStorageLocationSpec`.
    pub storage_location: RulesView,
    /// Whether a new storage location waits for the administrator's approval.
    pub require_approval_for_storage_locations: bool,
    /// Restrictions that always apply, whatever the administrator configured.
    pub restrictions: Vec<String>,
}

/// Deletion state of a backup.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "DeletionInfo")]
pub struct DeletionView {
    /// Whether permanent deletion was requested.
    pub requested: bool,
    /// Phase of the Velero DeleteBackupRequest.
    // A String in GraphQL since the start, as every phase: kept so for existing dashboards.
    #[graphql(
        skip,
        derived(name = "phase", into = "Option<String>", owned, with = "phase_text")
    )]
    pub phase: Option<DeleteBackupRequestPhase>,
    /// Errors of the deletion attempts.
    pub errors: Vec<String>,
}

/// `velero backup describe --details` for a tenant's backup or restore.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct Description {
    /// `NonAdminBackup` or `NonAdminRestore`.
    // A String in GraphQL since the start: kept so for existing dashboards.
    #[graphql(
        skip,
        derived(name = "kind", into = "&str", owned, with = "TenantObjectKind::as_str")
    )]
    pub kind: TenantObjectKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// NAC's request phase.
    #[graphql(
        skip,
        derived(
            name = "request_phase",
            into = "Option<String>",
            owned,
            with = "phase_text"
        )
    )]
    pub request_phase: Option<NonAdminPhase>,
    /// Velero's phase.
    #[graphql(
        skip,
        derived(
            name = "velero_phase",
            into = "Option<String>",
            owned,
            with = "phase_text"
        )
    )]
    pub velero_phase: Option<VeleroPhase>,
    /// Position in the Velero queue while pending or running.
    pub queue_position: Option<u64>,
    /// Expected start and finish while pending or running (from the history).
    pub eta: Option<QueueEta>,
    /// Conditions (Accepted, Queued, Deleting).
    #[schema(value_type = Vec<Object>)]
    // `Json`: one `JSON` in GraphQL, not a list of them, as it always has been.
    pub conditions: Json<Vec<Value>>,
    /// The spec Velero runs with (the tenant's, with the administrator's values filled in).
    #[schema(schema_with = effective_spec_schema)]
    pub effective_spec: Value,
    /// Items done and total.
    // `Json`: one `JSON` in GraphQL, as it always has been.
    #[schema(value_type = ProgressView)]
    pub progress: Json<ProgressView>,
    /// When Velero started.
    pub started: Option<String>,
    /// When Velero finished.
    pub completed: Option<String>,
    /// When the backup expires.
    pub expiration: Option<String>,
    /// Errors counted by Velero.
    pub errors: i64,
    /// Warnings counted by Velero.
    pub warnings: i64,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Why validation failed.
    pub validation_errors: Vec<String>,
    /// Permanent deletion (backups).
    pub deletion: Option<DeletionView>,
    /// The resources backed up or restored (with `details=true`, once finished).
    // `Json`: GraphQL's `JSON`, as it always has been.
    #[schema(value_type = Option<ResourceList>)]
    pub resource_list: Option<Json<ResourceList>>,
    /// Why the resource list is missing although asked for.
    pub resource_list_unavailable: Option<String>,
}

impl GatewayService {
    /// The decompressed artifact of a backup or restore, fetched through a
    /// NonAdminDownloadRequest created with the caller's token.
    pub async fn artifact(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
        name: &str,
        artifact: ArtifactKind,
    ) -> Result<Artifact, GatewayError> {
        let target = artifact
            .target(resource)
            .ok_or_else(|| GatewayError::BadRequest("no such artifact for this resource".into()))?;
        let authorized = self
            .authorize(caller, "get", resource, namespace, Some(name))
            .await?;
        let download_grant = self
            .authz
            .require(
                caller.identity(),
                AccessCheck::new("create", "nonadmindownloadrequests", namespace),
            )
            .await?;
        self.ready()?;
        let finished = match resource {
            TenantResource::Backups => self
                .cached::<NonAdminBackup>(&authorized, name)?
                .is_terminal(),
            TenantResource::Restores => self
                .cached::<NonAdminRestore>(&authorized, name)?
                .is_terminal(),
            _ => false,
        };
        if !finished {
            return Err(GatewayError::ArtifactUnavailable(format!(
                "{} {name:?} has not finished; its {} is available once it has",
                resource.kind(),
                target.as_str()
            )));
        }
        let bytes = self.download(caller, &download_grant, name, target).await?;
        self.readable_artifact(caller, artifact, decompress(bytes)?)
            .await
    }

    /// The backup tarball (`<backup>.tar.gz`, as stored) of NonAdminBackup `name`, fetched
    /// through a NonAdminDownloadRequest created with the caller's token: the backup must have
    /// finished and the caller may get it and create download requests.
    pub async fn backup_contents_tarball(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<u8>, GatewayError> {
        let authorized = self
            .authorize(
                caller,
                "get",
                TenantResource::Backups,
                namespace,
                Some(name),
            )
            .await?;
        let download_grant = self
            .authz
            .require(
                caller.identity(),
                AccessCheck::new("create", "nonadmindownloadrequests", namespace),
            )
            .await?;
        self.ready()?;
        if !self
            .cached::<NonAdminBackup>(&authorized, name)?
            .is_terminal()
        {
            return Err(GatewayError::ArtifactUnavailable(format!(
                "NonAdminBackup {name:?} has not finished; its contents are available once it has"
            )));
        }
        self.download(
            caller,
            &download_grant,
            name,
            DownloadTargetKind::BackupContents,
        )
        .await
    }

    /// The bytes behind a NonAdminDownloadRequest for `target` of `name`, made with the
    /// caller's token (authorization is the callers').
    async fn download(
        &self,
        caller: &Caller,
        download_grant: &Authorized,
        name: &str,
        target: DownloadTargetKind,
    ) -> Result<Vec<u8>, GatewayError> {
        let namespace = download_grant.namespace();
        let client = self.user_client(caller)?;
        let requests: Api<NonAdminDownloadRequest> = Api::namespaced(client, namespace);
        let prefix: String = name.chars().take(40).collect();
        let request: NonAdminDownloadRequest = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1",
            "kind": "NonAdminDownloadRequest",
            "metadata": {"generateName": format!("{}-download-", prefix.trim_end_matches(['.', '-']))},
            "spec": {"target": {"kind": target.as_str(), "name": name}},
        }))
        .map_err(|_| GatewayError::Upstream)?;
        let created = requests
            .create(&PostParams::default(), &request)
            .await
            .map_err(|error| {
                from_write_error(
                    error,
                    "NonAdminDownloadRequest",
                    namespace,
                    name,
                    "create",
                    "nonadmindownloadrequests",
                )
            })?;
        self.note_requester(
            download_grant,
            OperationKind::Download,
            &created.metadata,
            caller,
        )
        .await;
        let request_name = name_of(&created);
        let outcome = self.await_download_url(&requests, &request_name).await;
        // The request has done its job either way; the controller also expires it.
        let cleanup = requests.clone();
        tokio::spawn(async move {
            if let Err(error) = cleanup
                .delete(&request_name, &DeleteParams::default())
                .await
            {
                tracing::debug!(error = %error, "could not delete a download request");
            }
        });
        let url = outcome?;
        // Downloads of a tenant's own storage location stay at its endpoint (issue 17).
        let rules = self.data.storage_endpoint_rules();
        let scope = crate::gateway::storage_scope::download_scope(
            &self.reader,
            namespace,
            name,
            &target,
            &rules,
        )
        .await?;
        Ok(self.fetcher.fetch(&url, &scope).await?)
    }

    async fn await_download_url(
        &self,
        requests: &Api<NonAdminDownloadRequest>,
        request_name: &str,
    ) -> Result<String, GatewayError> {
        let deadline = tokio::time::Instant::now() + self.config.artifact_timeout;
        loop {
            let current = requests.get_opt(request_name).await.map_err(|error| {
                tracing::warn!(error = %error, "reading a download request failed");
                GatewayError::Upstream
            })?;
            if let Some(status) = current.and_then(|r| r.status) {
                if let Some(url) = status
                    .velero
                    .as_ref()
                    .and_then(|v| v.status.as_ref())
                    .and_then(|s| s.download_url.clone())
                    .filter(|u| !u.is_empty())
                {
                    return Ok(url);
                }
                if status.phase == Some(NonAdminPhase::BackingOff) {
                    let reason = status
                        .conditions
                        .iter()
                        // A refusal (False) or, as upstream writes a NADR's, a True
                        // condition whose type is the problem (`NonAdminBackupNotAvailable`).
                        .find(|c| c.status == "False" || c.type_ != conditions::types::PROCESSED)
                        .map(|c| c.message.clone())
                        .unwrap_or_else(|| "the download request was refused".into());
                    return Err(GatewayError::ArtifactUnavailable(reason));
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(GatewayError::ArtifactUnavailable(
                    "the artifact was not ready in time; retry later".into(),
                ));
            }
            tokio::time::sleep(self.config.artifact_poll).await;
        }
    }

    /// The admin policy in force in `namespace`.
    pub async fn policy(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<PolicyView, GatewayError> {
        let Some(grant) = self.namespace_grant(caller, namespace).await? else {
            return Err(GatewayError::Forbidden {
                verb: "list",
                resource: TenantResource::Backups.plural(),
                namespace: namespace.to_string(),
            });
        };
        self.ready()?;
        let policy = self.data.effective_policy(&grant);
        Ok(PolicyView {
            namespace: namespace.to_string(),
            backup: RulesView::of(policy.rules(SpecKind::Backup)),
            restore: RulesView::of(policy.rules(SpecKind::Restore)),
            storage_location: RulesView::of(policy.rules(SpecKind::BackupStorageLocation)),
            require_approval_for_storage_locations: policy.settings.require_approval_for_bsl,
            restrictions: vec![
                format!(
                    "backups and restores stay in namespace {namespace} (includedNamespaces, excludedNamespaces and namespaceMapping are restricted)"
                ),
                "cluster-scoped resources are never backed up or restored".into(),
                "volume snapshot locations are chosen by the administrator".into(),
                "NAC's and Velero's own kinds and labels are reserved".into(),
            ],
        })
    }

    /// Describes a backup: status, conditions, effective spec, progress, errors and warnings,
    /// deletion, and with `details` the resource list.
    pub async fn describe_backup(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        details: bool,
    ) -> Result<Description, GatewayError> {
        let (authorized, nab) = self
            .get_granted::<NonAdminBackup>(caller, namespace, name)
            .await?;
        let status = nab.status.clone().unwrap_or_default();
        let velero = status.velero_backup.clone().unwrap_or_default();
        let velero_status = velero.status.clone().unwrap_or_default();
        let effective_spec = match &velero.spec {
            Some(spec) => serde_json::to_value(spec),
            None => serde_json::to_value(&nab.spec.backup_spec),
        }
        .unwrap_or(Value::Null);
        let queued = self
            .queued_with_eta(&authorized, QueueKind::Backup, name, velero.name.as_deref())
            .await;
        let deletion = (nab.spec.delete_backup == Some(true)
            || status.velero_delete_backup_request.is_some())
        .then(|| {
            let request_status = status
                .velero_delete_backup_request
                .as_ref()
                .and_then(|r| r.status.clone())
                .unwrap_or_default();
            DeletionView {
                requested: nab.spec.delete_backup == Some(true),
                phase: request_status.phase,
                errors: request_status.errors.unwrap_or_default(),
            }
        });
        let mut description = Description {
            kind: TenantObjectKind::NonAdminBackup,
            namespace: namespace.to_string(),
            name: name.to_string(),
            request_phase: status.phase,
            velero_phase: velero_status.phase.clone().map(VeleroPhase::Backup),
            queue_position: queued.as_ref().map(|item| item.position),
            eta: queued.and_then(|item| item.eta),
            conditions: Json(conditions_json(&status.conditions)),
            effective_spec,
            progress: Json(ProgressView::Backup(BackupProgressView {
                total_items: velero_status.progress.as_ref().and_then(|p| p.total_items),
                items_backed_up: velero_status
                    .progress
                    .as_ref()
                    .and_then(|p| p.items_backed_up),
                volume_snapshots_attempted: velero_status.volume_snapshots_attempted,
                volume_snapshots_completed: velero_status.volume_snapshots_completed,
            })),
            started: time_text(velero_status.start_timestamp.as_ref()),
            completed: time_text(velero_status.completion_timestamp.as_ref()),
            expiration: time_text(velero_status.expiration.as_ref()),
            errors: velero_status.errors.unwrap_or(0),
            warnings: velero_status.warnings.unwrap_or(0),
            failure_reason: velero_status.failure_reason.clone(),
            validation_errors: velero_status.validation_errors.clone().unwrap_or_default(),
            deletion,
            resource_list: None,
            resource_list_unavailable: None,
        };
        if details {
            self.attach_resource_list(
                caller,
                namespace,
                TenantResource::Backups,
                name,
                &mut description,
            )
            .await;
        }
        Ok(description)
    }

    /// Describes a restore, like [`Self::describe_backup`].
    pub async fn describe_restore(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        details: bool,
    ) -> Result<Description, GatewayError> {
        let (authorized, nar) = self
            .get_granted::<NonAdminRestore>(caller, namespace, name)
            .await?;
        let status = nar.status.clone().unwrap_or_default();
        let velero = status.velero_restore.clone().unwrap_or_default();
        let velero_status = velero.status.clone().unwrap_or_default();
        let queued = self
            .queued_with_eta(
                &authorized,
                QueueKind::Restore,
                name,
                velero.name.as_deref(),
            )
            .await;
        let mut description = Description {
            kind: TenantObjectKind::NonAdminRestore,
            namespace: namespace.to_string(),
            name: name.to_string(),
            request_phase: status.phase,
            velero_phase: velero_status.phase.clone().map(VeleroPhase::Restore),
            queue_position: queued.as_ref().map(|item| item.position),
            eta: queued.and_then(|item| item.eta),
            conditions: Json(conditions_json(&status.conditions)),
            effective_spec: serde_json::to_value(&nar.spec.restore_spec).unwrap_or(Value::Null),
            progress: Json(ProgressView::Restore(RestoreProgressView {
                total_items: velero_status.progress.as_ref().and_then(|p| p.total_items),
                items_restored: velero_status
                    .progress
                    .as_ref()
                    .and_then(|p| p.items_restored),
            })),
            started: time_text(velero_status.start_timestamp.as_ref()),
            completed: time_text(velero_status.completion_timestamp.as_ref()),
            expiration: None,
            errors: velero_status.errors.unwrap_or(0),
            warnings: velero_status.warnings.unwrap_or(0),
            failure_reason: velero_status.failure_reason.clone(),
            validation_errors: velero_status.validation_errors.clone().unwrap_or_default(),
            deletion: None,
            resource_list: None,
            resource_list_unavailable: None,
        };
        if details {
            self.attach_resource_list(
                caller,
                namespace,
                TenantResource::Restores,
                name,
                &mut description,
            )
            .await;
        }
        Ok(description)
    }

    async fn attach_resource_list(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
        name: &str,
        description: &mut Description,
    ) {
        match self
            .artifact(
                caller,
                namespace,
                resource,
                name,
                ArtifactKind::ResourceList,
            )
            .await
        {
            Ok(Artifact::Json(JsonArtifact::ResourceList(list))) => {
                description.resource_list = Some(Json(list));
            }
            Ok(_) => {}
            Err(error) => description.resource_list_unavailable = Some(error.to_string()),
        }
    }

    /// The approval state of a storage location (`Approved`, `Pending`, `Rejected`, or
    /// `NotRequired`).
    pub fn approval_state(location: &NonAdminBackupStorageLocation) -> &'static str {
        let condition = location.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == conditions::types::CLUSTER_ADMIN_APPROVED)
        });
        match condition {
            None => "NotRequired",
            Some(c) if c.status == "True" => "Approved",
            Some(c) if c.reason == conditions::reasons::BSL_SPEC_REJECTED => "Rejected",
            Some(_) => "Pending",
        }
    }

    /// Field errors of a failed validation, for transports that show them.
    pub fn field_errors(error: &GatewayError) -> Vec<FieldError> {
        error.field_errors().to_vec()
    }
}
