//! Tenant objects through the caches and the caller's own token: list, get, validate and create, delete, patch a schedule, wait for a terminal phase.

use super::*;

/// List filters and paging.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListQuery {
    /// Request or Velero phase to keep (case-insensitive).
    pub phase: Option<String>,
    /// Label selector string.
    pub label_selector: Option<String>,
    /// Page size (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Continue token from the previous page.
    pub continue_token: Option<String>,
}

/// One page of a list.
#[derive(Clone, Debug)]
pub struct Page<K> {
    /// The objects.
    pub items: Vec<Arc<K>>,
    /// Token for the next page, when there is one.
    pub continue_token: Option<String>,
}

/// What a delete did.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct DeleteOutcome {
    /// Kind of the object.
    // A String in GraphQL since the start: kept so for existing dashboards.
    #[graphql(
        skip,
        derived(name = "kind", into = "&str", owned, with = "TenantObjectKind::as_str")
    )]
    pub kind: TenantObjectKind,
    /// Its name.
    pub name: String,
    /// True when the backup data in object storage is deleted too (backups always).
    pub permanent: bool,
    /// What happens now.
    pub message: String,
}

/// Whether `object` reached a phase it will not leave on its own.
pub trait Terminal {
    /// True at a terminal phase.
    fn is_terminal(&self) -> bool;
}

impl Terminal for NonAdminBackup {
    fn is_terminal(&self) -> bool {
        let status = self.status.as_ref();
        status.and_then(|s| s.phase) == Some(NonAdminPhase::BackingOff)
            || status
                .and_then(|s| s.velero_backup.as_ref())
                .and_then(|v| v.status.as_ref())
                .and_then(|s| s.phase.as_ref())
                .is_some_and(BackupPhase::is_terminal)
    }
}

impl Terminal for NonAdminRestore {
    fn is_terminal(&self) -> bool {
        let status = self.status.as_ref();
        status.and_then(|s| s.phase) == Some(NonAdminPhase::BackingOff)
            || status
                .and_then(|s| s.velero_restore.as_ref())
                .and_then(|v| v.status.as_ref())
                .and_then(|s| s.phase.as_ref())
                .is_some_and(RestorePhase::is_terminal)
    }
}

impl Terminal for NonAdminBackupStorageLocation {
    fn is_terminal(&self) -> bool {
        let phase = self.status.as_ref().and_then(|s| s.phase);
        phase == Some(NonAdminPhase::BackingOff)
            || (phase == Some(NonAdminPhase::Created) && self.velero_phase().is_some())
    }
}

impl Terminal for NonAdminSchedule {
    fn is_terminal(&self) -> bool {
        matches!(
            self.status.as_ref().and_then(|s| s.phase),
            Some(NonAdminPhase::BackingOff | NonAdminPhase::Created)
        )
    }
}

/// A kind the gateway can create from a request body.
pub trait Creatable: Cached {
    /// Checks a new object against the restrictions and the admin policy.
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        caller: &'a Caller,
        access: &'a Authorized,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>>;

    /// Turns a short-form body into the CR's JSON spec, when the kind has a shortcut.
    fn short_form_spec(_body: &serde_json::Map<String, Value>) -> Option<Value> {
        None
    }

    /// The spec used when a body has none.
    fn default_spec() -> Option<Value> {
        None
    }
}

fn rewrite_prefix(
    mut violations: Vec<PolicyViolation>,
    from: &str,
    to: &str,
) -> Vec<PolicyViolation> {
    for violation in &mut violations {
        if let Some(rest) = violation.field.strip_prefix(from) {
            violation.field = format!("{to}{rest}");
        }
        violation.message = violation.message.replace(from, to);
    }
    violations
}

impl Creatable for NonAdminBackup {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        _caller: &'a Caller,
        access: &'a Authorized,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let namespace = access.namespace();
            let policy = service.data.effective_policy(access);
            let mut violations = validate_backup_spec(namespace, &self.spec.backup_spec, &policy)
                .err()
                .unwrap_or_default();
            if let Some(location) = self.spec.backup_spec.storage_location.as_deref()
                && !location.is_empty()
                && service
                    .data
                    .referenced::<NonAdminBackupStorageLocation>(access, location)
                    .is_none()
            {
                // The controller's words; whether the location is approved and available yet
                // is the controller's to wait for.
                violations.push(crate::policy::storage_location::location_not_found(
                    location, namespace,
                ));
            }
            if self.spec.delete_backup == Some(true) {
                violations.push(PolicyViolation::new(
                    crate::policy::ViolationReason::Invalid,
                    "spec.deleteBackup",
                    "NonAdminBackup spec.deleteBackup can only be set on an existing backup (DELETE it instead)",
                ));
            }
            Ok(violations)
        })
    }

    fn default_spec() -> Option<Value> {
        Some(json!({"backupSpec": {}}))
    }
}

impl Creatable for NonAdminRestore {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        _caller: &'a Caller,
        access: &'a Authorized,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let namespace = access.namespace();
            let policy = service.data.effective_policy(access);
            let mut violations = validate_restore_spec(namespace, &self.spec.restore_spec, &policy)
                .err()
                .unwrap_or_default();
            if let Some(backup_name) = self.spec.restore_spec.backup_name.as_deref()
                && !backup_name.is_empty()
            {
                match service.data.referenced::<NonAdminBackup>(access, backup_name) {
                    None => violations.push(PolicyViolation::new(
                        crate::policy::ViolationReason::Invalid,
                        "spec.restoreSpec.backupName",
                        format!(
                            "NonAdminRestore spec.restoreSpec.backupName is invalid: nonadminbackups.oadp.openshift.io {backup_name:?} not found (NonAdminBackup {backup_name:?} not found in namespace {namespace})"
                        ),
                    )),
                    Some(backup) => {
                        let request_phase = backup.request_phase().map(NonAdminPhase::as_str);
                        let velero_phase = backup.velero_phase();
                        if let Err(violation) =
                            check_restore_source(request_phase, velero_phase.as_deref())
                        {
                            violations.push(violation);
                        }
                    }
                }
            }
            Ok(violations)
        })
    }

    fn short_form_spec(body: &serde_json::Map<String, Value>) -> Option<Value> {
        let backup_name = body.get("backupName")?;
        Some(json!({"restoreSpec": {"backupName": backup_name}}))
    }
}

impl Creatable for NonAdminBackupStorageLocation {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        caller: &'a Caller,
        access: &'a Authorized,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let namespace = access.namespace();
            let policy = service.data.effective_policy(access);
            let spec = &self.spec.backup_storage_location_spec;
            // Whether the credential Secret exists, asked with the caller's own token; when
            // the caller may not read Secrets the controller decides later.
            let secret_exists = match spec.credential.as_ref().map(|c| c.name.as_str()) {
                Some(name) if !name.is_empty() => {
                    let client = service.user_client(caller)?;
                    match Api::<Secret>::namespaced(client, namespace)
                        .get_opt(name)
                        .await
                    {
                        Ok(found) => found.is_some(),
                        Err(_) => true,
                    }
                }
                _ => true,
            };
            let mut violations = validate_bsl_spec(namespace, spec, &policy, secret_exists)
                .err()
                .unwrap_or_default();
            // A bucket of the shared backup pool is never a tenant's (seed 001): refused here,
            // before anything is created (the controller refuses it too). The pool is read
            // as the gateway; the refusal names only the caller's own field.
            let pool = service.pool_buckets().await?;
            if let Err(violation) = crate::policy::bsl::check_not_pool_bucket(spec, &pool) {
                violations.push(violation);
            }
            Ok(violations)
        })
    }
}

impl Creatable for NonAdminSchedule {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        _caller: &'a Caller,
        access: &'a Authorized,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let namespace = access.namespace();
            let policy = service.data.effective_policy(access);
            let mut violations = Vec::new();
            if let Err(violation) = crate::policy::schedule::validate_cron(&self.spec.schedule) {
                violations.push(violation);
            }
            let template =
                validate_backup_spec(namespace, &self.spec.template.backup_spec, &policy)
                    .err()
                    .unwrap_or_default();
            violations.extend(rewrite_prefix(
                template,
                "spec.backupSpec",
                "spec.template.backupSpec",
            ));
            Ok(violations)
        })
    }
}

/// Builds the object a create request describes: the CR's own JSON, or the short forms
/// `"name"`, `{"name": …, "spec": {…}}` (plus per-kind shortcuts).
pub fn object_from_body<K: Creatable>(namespace: &str, body: &Value) -> Result<K, GatewayError> {
    let kind = K::RESOURCE.kind();
    let api_version = format!(
        "{}/{}",
        crate::api::nonadmin::GROUP,
        crate::api::nonadmin::VERSION
    );
    let mut metadata = serde_json::Map::new();
    let spec = match body {
        Value::String(name) => {
            metadata.insert("name".into(), Value::String(name.clone()));
            K::default_spec()
        }
        Value::Object(map)
            if map.contains_key("metadata")
                || map.contains_key("apiVersion")
                || map.contains_key("kind") =>
        {
            if let Some(given) = map.get("apiVersion")
                && given.as_str() != Some(api_version.as_str())
            {
                return Err(GatewayError::invalid_field(
                    "apiVersion",
                    format!("apiVersion must be {api_version}"),
                ));
            }
            if let Some(given) = map.get("kind")
                && given.as_str() != Some(kind)
            {
                return Err(GatewayError::invalid_field(
                    "kind",
                    format!("kind must be {kind}"),
                ));
            }
            let given = match map.get("metadata") {
                None => serde_json::Map::new(),
                Some(Value::Object(given)) => given.clone(),
                Some(_) => {
                    return Err(GatewayError::invalid_field(
                        "metadata",
                        "metadata must be an object",
                    ));
                }
            };
            if let Some(ns) = given.get("namespace")
                && ns.as_str() != Some(namespace)
            {
                return Err(GatewayError::invalid_field(
                    "metadata.namespace",
                    format!("metadata.namespace must be {namespace} (the namespace in the path)"),
                ));
            }
            for key in ["name", "generateName", "labels", "annotations"] {
                if let Some(value) = given.get(key) {
                    metadata.insert(key.into(), value.clone());
                }
            }
            map.get("spec").cloned().or_else(K::default_spec)
        }
        Value::Object(map) => {
            const SHORT_KEYS: &[&str] = &[
                "name",
                "generateName",
                "labels",
                "annotations",
                "spec",
                "backupName",
            ];
            if let Some(unknown) = map.keys().find(|key| !SHORT_KEYS.contains(&key.as_str())) {
                return Err(GatewayError::invalid_field(
                    unknown,
                    format!(
                        "unknown field {unknown:?}; send the {kind} manifest or {{\"name\": …, \"spec\": {{…}}}}"
                    ),
                ));
            }
            for key in ["name", "generateName", "labels", "annotations"] {
                if let Some(value) = map.get(key) {
                    metadata.insert(key.into(), value.clone());
                }
            }
            map.get("spec")
                .cloned()
                .or_else(|| K::short_form_spec(map))
                .or_else(K::default_spec)
        }
        _ => {
            return Err(GatewayError::BadRequest(format!(
                "the body must be a {kind} manifest, {{\"name\": …, \"spec\": {{…}}}} or a JSON string naming it"
            )));
        }
    };
    let name = metadata.get("name").cloned();
    let generate_name = metadata.get("generateName").cloned();
    match (&name, &generate_name) {
        (Some(Value::String(name)), _) => {
            if !is_dns1123_subdomain(name) || name.is_empty() {
                return Err(GatewayError::invalid_field(
                    "metadata.name",
                    "metadata.name must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)",
                ));
            }
        }
        (None, Some(Value::String(prefix))) => {
            let probe = format!("{prefix}x");
            if prefix.len() > 200 || !is_dns1123_subdomain(&probe) {
                return Err(GatewayError::invalid_field(
                    "metadata.generateName",
                    "metadata.generateName must be a lowercase RFC 1123 prefix of at most 200 characters",
                ));
            }
        }
        (None, None) => {
            return Err(GatewayError::invalid_field(
                "metadata.name",
                "metadata.name (or metadata.generateName) is required",
            ));
        }
        _ => {
            return Err(GatewayError::invalid_field(
                "metadata.name",
                "metadata.name must be a string",
            ));
        }
    }
    metadata.insert("namespace".into(), Value::String(namespace.to_string()));
    let Some(spec) = spec else {
        return Err(GatewayError::invalid_field("spec", "spec is required"));
    };
    let document = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": Value::Object(metadata),
        "spec": spec,
    });
    serde_json::from_value::<K>(document).map_err(|error| {
        let message = error.to_string();
        let field = if message.contains("labels") || message.contains("annotations") {
            "metadata"
        } else {
            "spec"
        };
        GatewayError::invalid_field(field, format!("{kind} is not valid: {message}"))
    })
}

impl GatewayService {
    /// One page of `K` in `namespace`.
    pub async fn list<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        query: &ListQuery,
    ) -> Result<Page<K>, GatewayError> {
        let authorized = self
            .authorize(caller, "list", K::RESOURCE, namespace, None)
            .await?;
        self.ready()?;
        self.page_of::<K>(&authorized, query)
    }

    fn page_of<K: Cached>(
        &self,
        authorized: &Authorized,
        query: &ListQuery,
    ) -> Result<Page<K>, GatewayError> {
        let namespace = authorized.namespace();
        let limit = match query.limit {
            None => DEFAULT_LIMIT,
            Some(0) => {
                return Err(GatewayError::BadRequest("limit must be at least 1".into()));
            }
            Some(limit) => limit.min(MAX_LIMIT),
        };
        let phase = query.phase.as_deref().filter(|p| !p.is_empty());
        if phase.is_some_and(|p| p.len() > 64 || !p.chars().all(|c| c.is_ascii_alphanumeric())) {
            return Err(GatewayError::BadRequest(
                "phase must be a phase name".into(),
            ));
        }
        let selector_text = query.label_selector.as_deref().unwrap_or_default();
        let selector = selector::parse(selector_text)?;
        let filters = filter_digest(&[phase.unwrap_or_default(), selector_text]);
        let resource = K::RESOURCE.plural();
        let after = match query.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => Some(self.pages.check(token, namespace, resource, &filters)?),
            None => None,
        };
        let (items, more) = self
            .data
            .page::<K>(authorized, after.as_deref(), limit, |object| {
                phase.is_none_or(|p| object.phase_matches(p))
                    && selector.matches_option(object.meta().labels.as_ref())
            })?;
        let continue_token = match (more, items.last()) {
            (true, Some(last)) => {
                Some(
                    self.pages
                        .issue(namespace, resource, &filters, &name_of(&**last)),
                )
            }
            _ => None,
        };
        Ok(Page {
            items,
            continue_token,
        })
    }

    /// The object `name` of `K` in `namespace`.
    pub async fn get<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, GatewayError> {
        Ok(self.get_granted::<K>(caller, namespace, name).await?.1)
    }

    /// [`GatewayService::get`], with the caller's `get` grant for the reads that follow.
    pub(super) async fn get_granted<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<(Authorized, Arc<K>), GatewayError> {
        let authorized = self
            .authorize(caller, "get", K::RESOURCE, namespace, Some(name))
            .await?;
        self.ready()?;
        let object = self.cached::<K>(&authorized, name)?;
        Ok((authorized, object))
    }

    pub(super) fn cached<K: Cached>(
        &self,
        authorized: &Authorized,
        name: &str,
    ) -> Result<Arc<K>, GatewayError> {
        self.data.object::<K>(authorized, name)
    }

    /// Validates a create request of `K` in `namespace` from `body` without writing: the
    /// object that would be created, or 403/422.
    pub async fn validate_create<K: Creatable>(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
    ) -> Result<K, GatewayError> {
        Ok(self.validated::<K>(caller, namespace, body).await?.0)
    }

    /// The object a create request describes, validated, with the caller's `create` grant.
    async fn validated<K: Creatable>(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
    ) -> Result<(K, Authorized), GatewayError> {
        let authorized = self
            .authorize(caller, "create", K::RESOURCE, namespace, None)
            .await?;
        self.ready()?;
        let object = object_from_body::<K>(namespace, body)?;
        let violations = object.violations(self, caller, &authorized).await?;
        if !violations.is_empty() {
            return Err(GatewayError::from_violations(
                K::RESOURCE.kind(),
                &violations,
            ));
        }
        Ok((object, authorized))
    }

    /// Creates `K` in `namespace` from `body` with the caller's token (`dry_run`: the API
    /// server validates but stores nothing).
    pub async fn create<K: Creatable>(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
        dry_run: bool,
    ) -> Result<K, GatewayError> {
        Ok(self
            .create_granted::<K>(caller, namespace, body, dry_run)
            .await?
            .0)
    }

    /// [`GatewayService::create`], with the caller's `create` grant for reads that follow
    /// (a dry-run's policy and namespace).
    pub(super) async fn create_granted<K: Creatable>(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
        dry_run: bool,
    ) -> Result<(K, Authorized), GatewayError> {
        let (object, authorized) = self.validated::<K>(caller, namespace, body).await?;
        let client = self.user_client(caller)?;
        let params = PostParams {
            dry_run,
            ..PostParams::default()
        };
        let name = name_of(&object);
        let created = Api::<K>::namespaced(client, namespace)
            .create(&params, &object)
            .await
            .map_err(|error| {
                from_write_error(
                    error,
                    K::RESOURCE.kind(),
                    namespace,
                    &name,
                    "create",
                    K::RESOURCE.plural(),
                )
            })?;
        if !dry_run {
            self.data.record_write(created.clone());
            if let Some(kind) = operation_kind(K::RESOURCE) {
                self.note_requester(&authorized, kind, created.meta(), caller)
                    .await;
            }
        }
        Ok((created, authorized))
    }

    /// Deletes `name` of `K`. A backup is deleted permanently — Velero removes its data from
    /// object storage, then NAC removes the NonAdminBackup — by setting `spec.deleteBackup`.
    pub async fn delete<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<DeleteOutcome, GatewayError> {
        let kind = K::RESOURCE.kind();
        let client = self.user_client(caller)?;
        if K::RESOURCE == TenantResource::Backups {
            let authorized = self
                .authorize(caller, "patch", K::RESOURCE, namespace, Some(name))
                .await?;
            self.ready()?;
            self.cached::<K>(&authorized, name)?;
            let patch = json!({"spec": {"deleteBackup": true}});
            let patched = Api::<NonAdminBackup>::namespaced(client, namespace)
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|error| {
                    from_write_error(error, kind, namespace, name, "patch", K::RESOURCE.plural())
                })?;
            self.data.record_write(patched);
            return Ok(DeleteOutcome {
                kind: K::RESOURCE.object_kind(),
                name: name.to_string(),
                permanent: true,
                message: "permanent deletion requested: Velero deletes the backup and its data in object storage, then the NonAdminBackup is removed; this cannot be undone".into(),
            });
        }
        let authorized = self
            .authorize(caller, "delete", K::RESOURCE, namespace, Some(name))
            .await?;
        self.ready()?;
        self.cached::<K>(&authorized, name)?;
        Api::<K>::namespaced(client, namespace)
            .delete(name, &DeleteParams::default())
            .await
            .map_err(|error| {
                from_write_error(error, kind, namespace, name, "delete", K::RESOURCE.plural())
            })?;
        let message = match K::RESOURCE {
            TenantResource::Restores => {
                "the restore record is deleted; restored objects stay in the namespace"
            }
            TenantResource::StorageLocations => {
                "the storage location is deleted; backups already stored there are not touched"
            }
            TenantResource::Schedules => {
                "the schedule is deleted; backups it already made are kept"
            }
            TenantResource::Backups => "",
        };
        Ok(DeleteOutcome {
            kind: K::RESOURCE.object_kind(),
            name: name.to_string(),
            permanent: false,
            message: message.into(),
        })
    }

    /// Changes a schedule (`paused`, `schedule`, `skipImmediately`, `template`) with a JSON
    /// merge patch of its spec, validated like a new one.
    pub async fn patch_schedule(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        spec_patch: &Value,
    ) -> Result<NonAdminSchedule, GatewayError> {
        let authorized = self
            .authorize(
                caller,
                "patch",
                TenantResource::Schedules,
                namespace,
                Some(name),
            )
            .await?;
        self.ready()?;
        let current = self.cached::<NonAdminSchedule>(&authorized, name)?;
        let Value::Object(fields) = spec_patch else {
            return Err(GatewayError::invalid_field(
                "spec",
                "the body must be a JSON object with spec fields",
            ));
        };
        const PATCHABLE: &[&str] = &["paused", "schedule", "skipImmediately", "template"];
        if let Some(unknown) = fields.keys().find(|k| !PATCHABLE.contains(&k.as_str())) {
            return Err(GatewayError::invalid_field(
                &format!("spec.{unknown}"),
                format!(
                    "spec.{unknown} cannot be changed; patchable: paused, schedule, skipImmediately, template"
                ),
            ));
        }
        let mut merged = serde_json::to_value(&current.spec).map_err(|_| GatewayError::Upstream)?;
        json_merge(&mut merged, spec_patch);
        let mut candidate = (*current).clone();
        candidate.spec = serde_json::from_value(merged).map_err(|error| {
            GatewayError::invalid_field("spec", format!("NonAdminSchedule is not valid: {error}"))
        })?;
        let violations = candidate.violations(self, caller, &authorized).await?;
        if !violations.is_empty() {
            return Err(GatewayError::from_violations(
                "NonAdminSchedule",
                &violations,
            ));
        }
        let client = self.user_client(caller)?;
        let patched = Api::<NonAdminSchedule>::namespaced(client, namespace)
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec_patch})),
            )
            .await
            .map_err(|error| {
                from_write_error(
                    error,
                    "NonAdminSchedule",
                    namespace,
                    name,
                    "patch",
                    TenantResource::Schedules.plural(),
                )
            })?;
        self.data.record_write(patched.clone());
        Ok(patched)
    }

    /// Waits until `name` of `K` reaches a terminal phase or `timeout` passes (or the gateway
    /// stops); returns the object and whether it is terminal.
    pub async fn wait_terminal<K: Cached + Terminal>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<(Arc<K>, bool), GatewayError> {
        let authorized = self
            .authorize(caller, "get", K::RESOURCE, namespace, Some(name))
            .await?;
        self.ready()?;
        let deadline = tokio::time::Instant::now() + timeout.min(self.config.max_wait);
        let mut changes = self.data.changes_of(&authorized, name);
        loop {
            let object = self.cached::<K>(&authorized, name)?;
            if object.is_terminal() {
                return Ok((object, true));
            }
            // Access is re-checked while waiting, so a revoked binding ends the wait.
            self.authorize(caller, "get", K::RESOURCE, namespace, Some(name))
                .await?;
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if remaining.is_zero() {
                return Ok((object, false));
            }
            let wake = changes.next_of_object();
            tokio::select! {
                _ = tokio::time::timeout(remaining.min(Duration::from_secs(5)), wake) => {}
                // A stopping gateway answers as at the timeout: the client waits again,
                // elsewhere.
                () = self.shutdown().triggered() => return Ok((object, false)),
            }
        }
    }
}

/// RFC 7396 JSON merge patch.
pub fn json_merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(target_fields) = target {
                for (key, value) in fields {
                    if value.is_null() {
                        target_fields.remove(key);
                    } else {
                        json_merge(
                            target_fields.entry(key.clone()).or_insert(Value::Null),
                            value,
                        );
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn manifests_and_short_forms_build_the_same_object() {
        let manifest = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "nightly", "labels": {"app": "web"}},
            "spec": {"backupSpec": {"ttl": "24h0m0s"}}
        });
        let short = json!({"name": "nightly", "labels": {"app": "web"}, "spec": {"backupSpec": {"ttl": "24h0m0s"}}});
        let a: NonAdminBackup = object_from_body("team-a", &manifest).unwrap();
        let b: NonAdminBackup = object_from_body("team-a", &short).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.metadata.namespace.as_deref(), Some("team-a"));
        let named: NonAdminBackup = object_from_body("team-a", &json!("just-a-name")).unwrap();
        assert_eq!(named.metadata.name.as_deref(), Some("just-a-name"));
        let restore: NonAdminRestore =
            object_from_body("team-a", &json!({"name": "r", "backupName": "nightly"})).unwrap();
        assert_eq!(
            restore.spec.restore_spec.backup_name.as_deref(),
            Some("nightly")
        );
    }

    #[test]
    fn bad_bodies_are_refused_with_the_field() {
        let cases = [
            (
                json!({"metadata": {"name": "x", "namespace": "team-b"}, "spec": {"backupSpec": {}}}),
                "metadata.namespace",
            ),
            (
                json!({"apiVersion": "velero.io/v1", "metadata": {"name": "x"}}),
                "apiVersion",
            ),
            (
                json!({"kind": "NonAdminRestore", "metadata": {"name": "x"}}),
                "kind",
            ),
            (json!({"name": "Ünïcode"}), "metadata.name"),
            (json!({"name": "UPPER"}), "metadata.name"),
            (json!({"name": "a".repeat(300)}), "metadata.name"),
            (json!({"spec": {"backupSpec": {}}}), "metadata.name"),
            (json!({"name": "x", "bogus": 1}), "bogus"),
            (
                json!({"name": "x", "spec": {"backupSpec": {"ttl": 5}}}),
                "spec",
            ),
            (json!({"name": 7}), "metadata.name"),
        ];
        for (body, field) in cases {
            let error = object_from_body::<NonAdminBackup>("team-a", &body).unwrap_err();
            assert_eq!(error.status_code(), 422, "{body}");
            assert_eq!(error.field_errors()[0].field, field, "{body}");
        }
        assert_eq!(
            object_from_body::<NonAdminBackup>("team-a", &json!([1, 2]))
                .unwrap_err()
                .status_code(),
            400
        );
    }

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut target = json!({"a": 1, "b": {"c": 2, "d": 3}});
        json_merge(&mut target, &json!({"a": null, "b": {"c": 5}, "e": true}));
        assert_eq!(target, json!({"b": {"c": 5, "d": 3}, "e": true}));
    }

    #[test]
    fn schedule_template_violations_name_the_template_field() {
        let violations = rewrite_prefix(
            vec![PolicyViolation::new(
                crate::policy::ViolationReason::Restricted,
                "spec.backupSpec.includedNamespaces",
                "NonAdminBackup spec.backupSpec.includedNamespaces is restricted",
            )],
            "spec.backupSpec",
            "spec.template.backupSpec",
        );
        assert_eq!(
            violations[0].field,
            "spec.template.backupSpec.includedNamespaces"
        );
        assert!(
            violations[0]
                .message
                .contains("spec.template.backupSpec.includedNamespaces")
        );
    }
}
