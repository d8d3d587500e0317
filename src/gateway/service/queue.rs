//! Queue views: the caller's pending and running items with live positions, cluster totals, and ETAs from the history.

use super::*;

/// Which queue an item waits in (Velero has one per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueueItemKind {
    /// A backup (a tenant's or a schedule run's).
    Backup,
    /// A restore.
    Restore,
}

impl QueueItemKind {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backup => "backup",
            Self::Restore => "restore",
        }
    }
}

impl From<QueueKind> for QueueItemKind {
    fn from(kind: QueueKind) -> Self {
        match kind {
            QueueKind::Backup => Self::Backup,
            QueueKind::Restore => Self::Restore,
        }
    }
}

/// Whether a queue item waits or runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueueState {
    /// Waiting to start.
    Pending,
    /// Being worked on.
    Running,
}

impl QueueState {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
        }
    }
}

/// One item of a queue view.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct QueueItem {
    /// `backup` or `restore`.
    // GraphQL's `kind` and `state` have always been Strings: kept so for existing dashboards.
    #[graphql(
        skip,
        derived(name = "kind", into = "&str", owned, with = "QueueItemKind::as_str")
    )]
    pub kind: QueueItemKind,
    /// Namespace of the tenant object.
    pub namespace: String,
    /// Name of the tenant object.
    pub name: String,
    /// Velero phase (none: not started).
    #[graphql(
        skip,
        derived(name = "phase", into = "Option<String>", owned, with = "phase_text")
    )]
    pub phase: Option<VeleroPhase>,
    /// `pending` or `running`.
    #[graphql(
        skip,
        derived(name = "state", into = "&str", owned, with = "QueueState::as_str")
    )]
    pub state: QueueState,
    /// 1-based position in its queue (1: being served or next).
    pub position: u64,
    /// Estimated seconds until it finishes, from recent durations (once there is history).
    pub eta_seconds: Option<u64>,
    /// Expected start and finish from the durations of the namespace's recent comparable
    /// operations in the history (backups and schedule runs for a backup, restores for a
    /// restore); none with too few of them, or when the history is unavailable.
    pub eta: Option<QueueEta>,
}

/// The caller's items in one namespace.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct NamespaceQueue {
    /// The namespace.
    pub namespace: String,
    /// Pending and running items, in queue order.
    pub items: Vec<QueueItem>,
}

/// Anonymous counts of one queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct QueueCounts {
    /// Waiting to start (every tenant's, and the admin's).
    pub pending: u64,
    /// Being worked on.
    pub running: u64,
    /// Mean duration of recent finished operations, in seconds.
    pub mean_duration_seconds: Option<f64>,
}

/// The cluster's queues: others only as counts, the caller's own items by name.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct ClusterQueue {
    /// Velero Backups.
    pub backups: QueueCounts,
    /// Velero Restores.
    pub restores: QueueCounts,
    /// The caller's own pending and running items, in the namespaces they may list.
    pub mine: Vec<QueueItem>,
}

impl GatewayService {
    /// The queue item of `name`, an object of the namespace `access` covers whose status
    /// names the Velero object `velero_name`; `None` when it is not queued or running.
    fn queue_item(
        &self,
        access: &Authorized,
        kind: QueueKind,
        name: &str,
        velero_name: Option<&str>,
    ) -> Option<QueueItem> {
        let queued = self.data.queue_entry(access, kind, velero_name?)?;
        let activity = queued.entry.activity();
        if !activity.is_active() {
            return None;
        }
        let position = queued.position;
        let phase = match &queued.entry.phase {
            crate::queue::VeleroPhase::Backup(phase) => phase.clone().map(VeleroPhase::Backup),
            crate::queue::VeleroPhase::Restore(phase) => phase.clone().map(VeleroPhase::Restore),
        };
        Some(QueueItem {
            kind: kind.into(),
            namespace: access.namespace().to_string(),
            name: name.to_string(),
            phase,
            state: if activity == Activity::Running {
                QueueState::Running
            } else {
                QueueState::Pending
            },
            position,
            eta_seconds: queued
                .mean_seconds
                .map(|mean| (mean * position as f64).round() as u64),
            eta: None,
        })
    }

    /// [`GatewayService::queue_item`] with its ETA from the history.
    pub(super) async fn queued_with_eta(
        &self,
        access: &Authorized,
        kind: QueueKind,
        name: &str,
        velero_name: Option<&str>,
    ) -> Option<QueueItem> {
        let mut item = self.queue_item(access, kind, name, velero_name)?;
        self.attach_etas(access, std::slice::from_mut(&mut item))
            .await;
        Some(item)
    }

    /// The queued and running items of one namespace: its backups under the `list
    /// nonadminbackups` grant `backups`, its restores under `restores` (either may be missing),
    /// with ETAs, in queue order per kind.
    async fn items_in(
        &self,
        backups: Option<&Authorized>,
        restores: Option<&Authorized>,
    ) -> Vec<QueueItem> {
        let mut items = Vec::new();
        if let Some(access) = backups {
            items.extend(
                self.queued_of::<NonAdminBackup>(access, QueueKind::Backup, |nab| {
                    nab.status.as_ref()?.velero_backup.as_ref()?.name.clone()
                })
                .await,
            );
        }
        if let Some(access) = restores {
            items.extend(
                self.queued_of::<NonAdminRestore>(access, QueueKind::Restore, |nar| {
                    nar.status.as_ref()?.velero_restore.as_ref()?.name.clone()
                })
                .await,
            );
        }
        items.sort_by(|a, b| {
            a.kind
                .cmp(&b.kind)
                .then(a.position.cmp(&b.position))
                .then(a.name.cmp(&b.name))
        });
        items
    }

    /// The queued and running `K` of the namespace `access` covers (their Velero object named
    /// by `velero_name`), with ETAs.
    async fn queued_of<K: Cached>(
        &self,
        access: &Authorized,
        kind: QueueKind,
        velero_name: impl Fn(&K) -> Option<String>,
    ) -> Vec<QueueItem> {
        let mut found = Vec::new();
        for object in self.data.objects::<K>(access).unwrap_or_default() {
            let velero = velero_name(&object);
            found.extend(self.queue_item(access, kind, &name_of(&*object), velero.as_deref()));
        }
        self.attach_etas(access, &mut found).await;
        found
    }

    /// The grants to list backups and restores in `namespace` (either may be missing).
    pub(super) async fn queue_grants(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<(Option<Authorized>, Option<Authorized>), GatewayError> {
        let backups = self
            .authz
            .grant(
                caller.identity(),
                AccessCheck::new("list", TenantResource::Backups.plural(), namespace),
            )
            .await?;
        let restores = self
            .authz
            .grant(
                caller.identity(),
                AccessCheck::new("list", TenantResource::Restores.plural(), namespace),
            )
            .await?;
        Ok((backups, restores))
    }

    /// The caller's pending and running backups and restores in `namespace`, with live
    /// positions.
    pub async fn namespace_queue(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<NamespaceQueue, GatewayError> {
        let (backups, restores) = self.queue_grants(caller, namespace).await?;
        if backups.is_none() && restores.is_none() {
            return Err(GatewayError::Forbidden {
                verb: "list",
                resource: TenantResource::Backups.plural(),
                namespace: namespace.to_string(),
            });
        }
        self.ready()?;
        let items = self.items_in(backups.as_ref(), restores.as_ref()).await;
        Ok(NamespaceQueue {
            namespace: namespace.to_string(),
            items,
        })
    }

    /// The cluster's queues: totals only, plus the caller's own items.
    pub async fn cluster_queue(&self, caller: &Caller) -> Result<ClusterQueue, GatewayError> {
        self.ready()?;
        let counts = |kind: QueueKind| {
            let mut counts = QueueCounts::default();
            for entry in self.data.queue_totals(kind) {
                match entry.activity() {
                    Activity::Running => counts.running += 1,
                    Activity::Pending => counts.pending += 1,
                    Activity::Finished => {}
                }
            }
            counts.mean_duration_seconds = self.data.mean_duration(kind);
            counts
        };
        let mut mine = Vec::new();
        for access in self.namespaces(caller).await? {
            // The same checks "my namespaces" just made (cached): their grants read the items.
            let (backups, restores) = self.queue_grants(caller, &access.name).await?;
            mine.extend(self.items_in(backups.as_ref(), restores.as_ref()).await);
        }
        Ok(ClusterQueue {
            backups: counts(QueueKind::Backup),
            restores: counts(QueueKind::Restore),
            mine,
        })
    }
}
