//! "My namespaces": which namespaces the caller may use, one access check per candidate, paged with sealed continue tokens, drawing from a per-request budget.

use super::*;

/// The answer of `GET /api/v1/namespaces`.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct NamespaceList {
    /// The namespaces the caller may use (may list backups in), by name.
    pub items: Vec<NamespaceAccess>,
    /// Present when more namespaces remain to be checked: pass it as `continue` for the next
    /// page. A page can hold fewer than `limit` items (even none) and still have one: one
    /// request checks at most a bounded number of namespaces.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// What a page of "my namespaces" asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamespaceQuery {
    /// Most namespaces returned (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Continue token from the previous page.
    pub continue_token: Option<String>,
    /// Whether to report the permissions in each namespace (each costs 25 access checks); the
    /// names alone cost one check per namespace of the cluster.
    pub details: bool,
}

/// Access checks the permissions of one namespace take beyond the check that lists it.
pub const DETAIL_CHECKS: usize = REPORTED_VERBS.len() * TenantResource::ALL.len();

/// Purpose of the sealed `continue` tokens of "my namespaces".
const NAMESPACE_TOKEN: &str = "namespaces-continue";

/// What a namespace listing's `continue` token holds (sealed: the last namespace checked may
/// be one the caller may not see).
#[derive(serde::Serialize, serde::Deserialize)]
struct NamespaceCursor {
    /// The caller the token was issued to.
    user: String,
    /// The last namespace checked.
    after: String,
}

/// A namespace the caller may use and what they may do in it.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceAccess {
    /// The namespace.
    pub name: String,
    /// Allowed verbs per resource (`backups`, `restores`, `storage-locations`, `schedules`).
    pub permissions: BTreeMap<String, Vec<String>>,
    /// Whether the caller may download logs and results (create NonAdminDownloadRequests).
    pub can_download: bool,
}

impl GatewayService {
    pub async fn detect_openshift_projects(&self, reader: &kube::Client) -> bool {
        let served = crate::gateway::projects::served(reader).await;
        self.openshift_projects
            .store(served, std::sync::atomic::Ordering::Release);
        tracing::info!(served, "OpenShift projects for my namespaces");
        served
    }

    /// Whether "my namespaces" starts from the caller's OpenShift projects list.
    pub fn uses_openshift_projects(&self) -> bool {
        self.openshift_projects
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// The caller's OpenShift projects, listed with their own token; `None` when projects are
    /// not served or the list fails (then the namespace cache is used).
    async fn project_names(&self, caller: &Caller) -> Option<Vec<String>> {
        if !self.uses_openshift_projects() {
            return None;
        }
        let client = match self.user_client(caller) {
            Ok(client) => client,
            Err(error) => {
                tracing::debug!(error = %error, "no client for the caller; using the namespace cache");
                return None;
            }
        };
        match crate::gateway::projects::names(client).await {
            Ok(names) => Some(names),
            Err(error) => {
                tracing::debug!(error = %error, "projects list failed; using the namespace cache");
                None
            }
        }
    }

    /// A grant showing the caller may use `namespace` (list or create backups, or list
    /// restores), `None` when they may not.
    pub(super) async fn namespace_grant(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<Option<Authorized>, GatewayError> {
        for check in [
            AccessCheck::new("list", TenantResource::Backups.plural(), namespace),
            AccessCheck::new("create", TenantResource::Backups.plural(), namespace),
            AccessCheck::new("list", TenantResource::Restores.plural(), namespace),
        ] {
            if let Some(grant) = self.authz.grant(caller.identity(), check).await? {
                return Ok(Some(grant));
            }
        }
        Ok(None)
    }

    /// The check that puts a namespace in "my namespaces": may the caller list its backups
    /// (every NAC tenant role — view, edit, admin, backup-creator — grants it). One check per
    /// namespace of the cluster; a caller with access nowhere costs that and nothing more.
    fn listing_check(namespace: &str) -> AccessCheck {
        AccessCheck::new("list", TenantResource::Backups.plural(), namespace)
    }

    /// `namespace`, which the caller may use, as "my namespaces" shows it: its permissions
    /// only when `details` ([`DETAIL_CHECKS`] more checks: every reported verb on every
    /// resource, and downloads).
    async fn namespace_access(
        &self,
        caller: &Caller,
        namespace: String,
        details: bool,
        budget: &AccessBudget,
    ) -> Result<NamespaceAccess, CheckError> {
        let identity = caller.identity();
        let mut permissions = BTreeMap::new();
        let mut can_download = false;
        if details {
            for resource in TenantResource::ALL {
                let mut verbs = Vec::new();
                for verb in REPORTED_VERBS {
                    let check = AccessCheck::new(verb, resource.plural(), &namespace);
                    if budget.allowed(&self.authz, identity, &check).await? {
                        verbs.push(verb.to_string());
                    }
                }
                if !verbs.is_empty() {
                    permissions.insert(resource.segment().to_string(), verbs);
                }
            }
            let download = AccessCheck::new("create", "nonadmindownloadrequests", &namespace);
            can_download = budget.allowed(&self.authz, identity, &download).await?;
        }
        Ok(NamespaceAccess {
            name: namespace,
            permissions,
            can_download,
        })
    }

    /// A fresh budget of access checks for one request ([`ServiceConfig::review_budget`]).
    pub fn review_budget(&self) -> AccessBudget {
        AccessBudget::new(self.config.review_budget)
    }

    fn seal_namespace_cursor(&self, caller: &Caller, after: String) -> String {
        let cursor = NamespaceCursor {
            user: caller.username().to_string(),
            after,
        };
        let payload = serde_json::to_vec(&cursor).unwrap_or_default();
        self.pages.sealer().seal(NAMESPACE_TOKEN, &payload)
    }

    fn open_namespace_cursor(&self, caller: &Caller, token: &str) -> Result<String, GatewayError> {
        self.pages
            .sealer()
            .open(NAMESPACE_TOKEN, token)
            .and_then(|payload| serde_json::from_slice::<NamespaceCursor>(&payload).ok())
            .filter(|cursor| cursor.user == caller.username())
            .map(|cursor| cursor.after)
            .ok_or_else(|| {
                GatewayError::BadRequest("the continue token is not valid for this list".into())
            })
    }

    /// Candidates for "my namespaces", by name: on OpenShift the caller's projects (listed
    /// with their token), else every namespace in the cache.
    async fn namespace_candidates(&self, caller: &Caller) -> Vec<String> {
        let mut names: Vec<String> = match self.project_names(caller).await {
            Some(names) => names,
            None => self.data.namespace_candidates(),
        };
        names.sort();
        names.dedup();
        names
    }

    /// The error of a request that needs every namespace the caller may use when they are more
    /// than one request may check.
    fn too_many_namespaces(&self, budget: &AccessBudget) -> GatewayError {
        GatewayError::BadRequest(format!(
            "this request would check access to more namespaces than one request may ({} access checks); name the namespaces instead, or list them page by page with GET /api/v1/namespaces?continue=",
            budget.limit()
        ))
    }

    /// Checks candidates in name order after `continue_token` until `limit` usable namespaces
    /// are found, the candidates run out or `budget` does; a `continue_token` in the answer
    /// when candidates remain. Candidates are probed (one check each) a few at a time, keeping
    /// enough of the budget for the details of the usable ones found (and one more), so every
    /// page makes progress; then the usable ones get their details, in order.
    async fn namespace_scan(
        &self,
        caller: &Caller,
        continue_token: Option<&str>,
        limit: usize,
        details: bool,
        budget: &AccessBudget,
    ) -> Result<NamespaceList, GatewayError> {
        /// Probes in flight at once.
        const PROBES_AT_ONCE: usize = 16;
        self.ready()?;
        let after = continue_token
            .map(|token| self.open_namespace_cursor(caller, token))
            .transpose()?;
        let mut names = self.namespace_candidates(caller).await;
        if let Some(after) = &after {
            names.retain(|name| name > after);
        }
        let total = names.len();
        let per_item = if details { DETAIL_CHECKS } else { 0 };
        let identity = caller.identity();
        // Probing: (name, usable) in name order.
        let mut probed: Vec<(String, bool)> = Vec::new();
        let mut usable = 0usize;
        let mut rest = names.into_iter().peekable();
        'probing: while rest.peek().is_some() && usable < limit {
            let reserve = per_item * (usable + 1);
            let take = budget
                .remaining()
                .saturating_sub(reserve)
                .min(PROBES_AT_ONCE);
            if take == 0 {
                break;
            }
            let chunk: Vec<String> = rest.by_ref().take(take).collect();
            let checks: Vec<AccessCheck> =
                chunk.iter().map(|name| Self::listing_check(name)).collect();
            let answers = futures::future::join_all(
                checks
                    .iter()
                    .map(|check| budget.allowed(&self.authz, identity, check)),
            )
            .await;
            for (name, answer) in chunk.into_iter().zip(answers) {
                match answer {
                    Ok(allowed) => {
                        probed.push((name, allowed));
                        if allowed {
                            usable += 1;
                            if usable >= limit {
                                break 'probing;
                            }
                        }
                    }
                    // Another field of the same request spent the rest.
                    Err(CheckError::Exhausted(_)) => break 'probing,
                    Err(CheckError::Failed(error)) => return Err(error),
                }
            }
        }
        // Details of the usable ones, in order, as far as the budget goes.
        let usable_names: Vec<String> = probed
            .iter()
            .filter(|(_, allowed)| *allowed)
            .map(|(name, _)| name.clone())
            .collect();
        let mut detailed = futures::stream::iter(usable_names)
            .map(|name| async move { self.namespace_access(caller, name, details, budget).await })
            .buffered(4);
        let mut items = Vec::new();
        let mut accounted = 0usize;
        let mut last = None;
        for (name, allowed) in &probed {
            if *allowed {
                match detailed.next().await {
                    Some(Ok(access)) => items.push(access),
                    Some(Err(CheckError::Failed(error))) => return Err(error),
                    Some(Err(CheckError::Exhausted(_))) | None => break,
                }
            }
            accounted += 1;
            last = Some(name.clone());
        }
        drop(detailed);
        if accounted == total {
            return Ok(NamespaceList {
                items,
                continue_token: None,
            });
        }
        match last {
            Some(after) => Ok(NamespaceList {
                items,
                continue_token: Some(self.seal_namespace_cursor(caller, after)),
            }),
            // Other fields of the same request spent the budget: ask again from here (a request
            // of its own has room for one namespace at least).
            None if budget.limit() > per_item => Ok(NamespaceList {
                items,
                continue_token: Some(self.seal_namespace_cursor(caller, after.unwrap_or_default())),
            }),
            // Not even one namespace fits in a whole budget.
            None => Err(self.too_many_namespaces(budget)),
        }
    }

    /// One page of the namespaces the caller may use (may list backups in), with their
    /// permissions when `query.details`. Bounded per request: at most `budget`'s access
    /// checks; when candidates remain the page carries a `continue` token (possibly with fewer
    /// than `limit` items, even none).
    pub async fn namespace_page(
        &self,
        caller: &Caller,
        query: &NamespaceQuery,
        budget: &AccessBudget,
    ) -> Result<NamespaceList, GatewayError> {
        let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        self.namespace_scan(
            caller,
            query.continue_token.as_deref(),
            limit,
            query.details,
            budget,
        )
        .await
    }

    /// Every namespace the caller may use, by name, within `budget`; 400 explaining when
    /// they cannot all be checked in one request.
    pub async fn usable_namespaces(
        &self,
        caller: &Caller,
        budget: &AccessBudget,
    ) -> Result<Vec<String>, GatewayError> {
        let list = self
            .namespace_scan(caller, None, usize::MAX, false, budget)
            .await?;
        if list.continue_token.is_some() {
            return Err(self.too_many_namespaces(budget));
        }
        Ok(list.items.into_iter().map(|access| access.name).collect())
    }

    /// Every namespace the caller may use, with their permissions in each, within one
    /// request's budget of access checks (400 explaining when that does not suffice).
    pub async fn namespaces(&self, caller: &Caller) -> Result<Vec<NamespaceAccess>, GatewayError> {
        let budget = self.review_budget();
        let list = self
            .namespace_scan(caller, None, usize::MAX, true, &budget)
            .await?;
        if list.continue_token.is_some() {
            return Err(self.too_many_namespaces(&budget));
        }
        Ok(list.items)
    }
}
