//! Resource kinds no tenant backup or restore may carry, whatever the tenant or the
//! administrator's policy says.
//!
//! A tenant's backup covers only its namespace, but Velero also pulls in cluster-scoped
//! objects related to it (the ServiceAccount action adds the ClusterRoles and
//! ClusterRoleBindings naming the namespace's service accounts; custom resources bring their
//! CRDs), and a restore applies whatever the backup contains. Backups on a tenant's own
//! NonAdminBackupStorageLocation are written by the tenant's own credentials, so their
//! contents must be treated as forged. Every kind below would let a restore act outside the
//! namespace, so it is excluded from every backup and restore NAC creates.
//!
//! Names are fully qualified (`clusterroles.rbac.authorization.k8s.io`) so Velero resolves
//! them unambiguously; Velero skips names a cluster does not serve (OpenShift-only kinds on
//! plain Kubernetes), so the list is safe everywhere.

/// A resource kind NAC always excludes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExcludedKind {
    /// Plural resource name, e.g. `clusterroles`.
    pub resource: &'static str,
    /// API group, e.g. `rbac.authorization.k8s.io`.
    pub group: &'static str,
    /// Singular name and short names, which Velero's resource resolution also accepts.
    pub aliases: &'static [&'static str],
    /// Why a tenant must never back it up or restore it.
    pub reason: &'static str,
}

impl ExcludedKind {
    /// `resource.group`, the form NAC writes into Velero's filters.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.resource, self.group)
    }

    /// Whether a filter entry a tenant wrote (`clusterroles`, `ClusterRole`,
    /// `clusterroles.rbac`, `clusterroles.v1.rbac.authorization.k8s.io`, `scc`, ...) names this
    /// kind. Deliberately generous: a false match only refuses a tenant's filter entry.
    pub fn is_named_by(&self, entry: &str) -> bool {
        let entry = entry.trim().to_ascii_lowercase();
        let (name, group_part) = entry.split_once('.').unwrap_or((entry.as_str(), ""));
        let names_kind = name == self.resource || self.aliases.contains(&name);
        if !names_kind {
            return false;
        }
        if group_part.is_empty() {
            return true;
        }
        // `resource.group`, `resource.version.group` or a shortened group: match when the
        // kind's group's first label appears among the entry's labels.
        let group_head = self.group.split('.').next().unwrap_or(self.group);
        group_part.split('.').any(|label| label == group_head)
    }
}

/// NAC's own namespaced kinds (`oadp.openshift.io`). Restoring one would replay a request
/// (a NonAdminBackup starts a new backup, a NonAdminBackupStorageLocation re-creates a location
/// and copies a Secret without review) and a restored object could carry another object's
/// NACUUID; the backup sync recreates NonAdminBackups properly instead.
pub const NAC_OWN_KINDS: &[ExcludedKind] = &[
    own_kind("nonadminbackups", &["nonadminbackup", "nab"]),
    own_kind("nonadminrestores", &["nonadminrestore", "nar"]),
    own_kind(
        "nonadminbackupstoragelocations",
        &["nonadminbackupstoragelocation", "nabsl"],
    ),
    own_kind(
        "nonadminbackupstoragelocationrequests",
        &["nonadminbackupstoragelocationrequest", "nabslrequest"],
    ),
    own_kind(
        "nonadmindownloadrequests",
        &["nonadmindownloadrequest", "nadr"],
    ),
    own_kind("nonadminschedules", &["nonadminschedule", "nas"]),
];

const fn own_kind(resource: &'static str, aliases: &'static [&'static str]) -> ExcludedKind {
    ExcludedKind {
        resource,
        group: "oadp.openshift.io",
        aliases,
        reason: "NAC's own request kinds are never backed up or restored by tenants",
    }
}

/// Cluster-scoped kinds whose restore would reach beyond the tenant's namespace.
pub const SENSITIVE_CLUSTER_KINDS: &[ExcludedKind] = &[
    ExcludedKind {
        resource: "securitycontextconstraints",
        group: "security.openshift.io",
        aliases: &["securitycontextconstraint", "scc"],
        reason: "an SCC decides which pods may run privileged or use host resources",
    },
    ExcludedKind {
        resource: "clusterroles",
        group: "rbac.authorization.k8s.io",
        aliases: &["clusterrole"],
        reason: "a ClusterRole grants permissions cluster-wide",
    },
    ExcludedKind {
        resource: "clusterrolebindings",
        group: "rbac.authorization.k8s.io",
        aliases: &["clusterrolebinding"],
        reason: "a ClusterRoleBinding grants a ClusterRole to anyone it names, cluster-wide",
    },
    ExcludedKind {
        resource: "priorityclasses",
        group: "scheduling.k8s.io",
        aliases: &["priorityclass", "pc"],
        reason: "a high PriorityClass lets pods preempt other tenants' pods",
    },
    ExcludedKind {
        resource: "customresourcedefinitions",
        group: "apiextensions.k8s.io",
        aliases: &["customresourcedefinition", "crd", "crds"],
        reason: "a CRD defines or redefines an API for the whole cluster (NAC's own included)",
    },
    ExcludedKind {
        resource: "mutatingwebhookconfigurations",
        group: "admissionregistration.k8s.io",
        aliases: &["mutatingwebhookconfiguration"],
        reason: "a mutating webhook sees and rewrites API requests cluster-wide",
    },
    ExcludedKind {
        resource: "validatingwebhookconfigurations",
        group: "admissionregistration.k8s.io",
        aliases: &["validatingwebhookconfiguration"],
        reason: "a validating webhook sees (and can refuse) API requests cluster-wide",
    },
    ExcludedKind {
        resource: "validatingadmissionpolicies",
        group: "admissionregistration.k8s.io",
        aliases: &["validatingadmissionpolicy"],
        reason: "admission policies apply to requests cluster-wide",
    },
    ExcludedKind {
        resource: "validatingadmissionpolicybindings",
        group: "admissionregistration.k8s.io",
        aliases: &["validatingadmissionpolicybinding"],
        reason: "admission policy bindings apply to requests cluster-wide",
    },
    ExcludedKind {
        resource: "mutatingadmissionpolicies",
        group: "admissionregistration.k8s.io",
        aliases: &["mutatingadmissionpolicy"],
        reason: "admission policies rewrite requests cluster-wide",
    },
    ExcludedKind {
        resource: "mutatingadmissionpolicybindings",
        group: "admissionregistration.k8s.io",
        aliases: &["mutatingadmissionpolicybinding"],
        reason: "admission policy bindings apply to requests cluster-wide",
    },
    ExcludedKind {
        resource: "apiservices",
        group: "apiregistration.k8s.io",
        aliases: &["apiservice"],
        reason: "an APIService sends a whole API group to a service of the tenant's choosing",
    },
    ExcludedKind {
        resource: "storageclasses",
        group: "storage.k8s.io",
        aliases: &["storageclass", "sc"],
        reason: "StorageClasses (and the default class) serve every namespace",
    },
    ExcludedKind {
        resource: "csidrivers",
        group: "storage.k8s.io",
        aliases: &["csidriver"],
        reason: "a CSIDriver object changes how a driver mounts volumes for every pod",
    },
    ExcludedKind {
        resource: "runtimeclasses",
        group: "node.k8s.io",
        aliases: &["runtimeclass"],
        reason: "a RuntimeClass picks the container runtime handler for every pod naming it",
    },
    ExcludedKind {
        resource: "certificatesigningrequests",
        group: "certificates.k8s.io",
        aliases: &["certificatesigningrequest", "csr"],
        reason: "a restored CSR asks for a client certificate for any identity it names",
    },
    ExcludedKind {
        resource: "clusterresourcequotas",
        group: "quota.openshift.io",
        aliases: &["clusterresourcequota", "clusterquota"],
        reason: "a ClusterResourceQuota limits many namespaces at once",
    },
    ExcludedKind {
        resource: "oauthclients",
        group: "oauth.openshift.io",
        aliases: &["oauthclient"],
        reason: "an OAuthClient with a tenant-chosen redirect URI can collect users' tokens",
    },
    // Upstream NAC excludes both KubeVirt cluster kinds from every non-admin backup: a VM's
    // backup pulls in the cluster instancetype and preference it names, and restoring them
    // would redefine them for every namespace's VMs.
    ExcludedKind {
        resource: "virtualmachineclusterinstancetypes",
        group: "instancetype.kubevirt.io",
        aliases: &[
            "virtualmachineclusterinstancetype",
            "vmclusterinstancetype",
            "vmclusterinstancetypes",
            "vmcf",
            "vmcfs",
        ],
        reason: "a VirtualMachineClusterInstancetype sizes the VMs of every namespace naming it",
    },
    ExcludedKind {
        resource: "virtualmachineclusterpreferences",
        group: "instancetype.kubevirt.io",
        aliases: &["virtualmachineclusterpreference", "vmcp", "vmcps"],
        reason: "a VirtualMachineClusterPreference sets defaults for the VMs of every namespace naming it",
    },
];

/// Excluded from restores only, as upstream does: a VolumeSnapshotClass is cluster-scoped and
/// names the driver and credentials used for every snapshot of its class.
pub const RESTORE_ONLY_KINDS: &[ExcludedKind] = &[ExcludedKind {
    resource: "volumesnapshotclasses",
    group: "snapshot.storage.k8s.io",
    aliases: &["volumesnapshotclass", "vsclass", "vsclasses"],
    reason: "a VolumeSnapshotClass is cluster-wide snapshot configuration",
}];

/// Every kind excluded from backups.
pub fn backup_excluded_kinds() -> impl Iterator<Item = &'static ExcludedKind> {
    NAC_OWN_KINDS.iter().chain(SENSITIVE_CLUSTER_KINDS)
}

/// Every kind excluded from restores.
pub fn restore_excluded_kinds() -> impl Iterator<Item = &'static ExcludedKind> {
    backup_excluded_kinds().chain(RESTORE_ONLY_KINDS)
}

/// The excluded kind a tenant's filter entry names, if any.
pub fn excluded_kind_named_by<'a>(
    mut kinds: impl Iterator<Item = &'a ExcludedKind>,
    entry: &str,
) -> Option<&'a ExcludedKind> {
    kinds.find(|kind| kind.is_named_by(entry))
}

/// `list` with every name of `additions` appended once, keeping the tenant's entries first
/// and in order.
pub fn with_appended(list: Option<Vec<String>>, additions: &[String]) -> Vec<String> {
    let mut list = list.unwrap_or_default();
    for addition in additions {
        if !list
            .iter()
            .any(|entry| entry.eq_ignore_ascii_case(addition))
        {
            list.push(addition.clone());
        }
    }
    list
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn find(entry: &str) -> Option<&'static str> {
        excluded_kind_named_by(restore_excluded_kinds(), entry).map(|kind| kind.resource)
    }

    #[test]
    fn recognises_every_spelling() {
        for entry in [
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            "clusterroles.rbac.authorization.k8s.io",
            "clusterroles.rbac",
            "clusterroles.v1.rbac.authorization.k8s.io",
            " clusterroles ",
        ] {
            assert_eq!(find(entry), Some("clusterroles"), "{entry}");
        }
        assert_eq!(find("scc"), Some("securitycontextconstraints"));
        assert_eq!(find("crds"), Some("customresourcedefinitions"));
        assert_eq!(find("nab"), Some("nonadminbackups"));
        assert_eq!(
            find("nonadminbackups.oadp.openshift.io"),
            Some("nonadminbackups")
        );
        assert_eq!(find("vsclass"), Some("volumesnapshotclasses"));
    }

    #[test]
    fn leaves_ordinary_kinds_alone() {
        for entry in [
            "deployments.apps",
            "roles.rbac.authorization.k8s.io",
            "rolebindings",
            "persistentvolumeclaims",
            "clusterroles.mycompany.io",
            "*",
        ] {
            assert_eq!(find(entry), None, "{entry}");
        }
    }

    #[test]
    fn volumesnapshotclasses_only_for_restores() {
        assert!(excluded_kind_named_by(backup_excluded_kinds(), "volumesnapshotclasses").is_none());
        assert!(
            excluded_kind_named_by(restore_excluded_kinds(), "volumesnapshotclasses").is_some()
        );
    }

    #[test]
    fn qualified_names_and_scopes() {
        let qualified: Vec<String> = SENSITIVE_CLUSTER_KINDS
            .iter()
            .map(ExcludedKind::qualified)
            .collect();
        for required in [
            "securitycontextconstraints.security.openshift.io",
            "clusterroles.rbac.authorization.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
            "priorityclasses.scheduling.k8s.io",
            "customresourcedefinitions.apiextensions.k8s.io",
        ] {
            assert!(qualified.iter().any(|name| name == required), "{required}");
        }
        assert!(
            NAC_OWN_KINDS
                .iter()
                .all(|kind| kind.group == "oadp.openshift.io"
                    && kind.resource.starts_with("nonadmin"))
        );
        assert!(
            SENSITIVE_CLUSTER_KINDS
                .iter()
                .all(|kind| !kind.reason.is_empty())
        );
    }

    #[test]
    fn kubevirt_cluster_kinds_are_always_excluded_as_upstream_does() {
        for (entry, resource) in [
            (
                "virtualmachineclusterinstancetypes",
                "virtualmachineclusterinstancetypes",
            ),
            (
                "VirtualMachineClusterInstancetype",
                "virtualmachineclusterinstancetypes",
            ),
            ("vmcf", "virtualmachineclusterinstancetypes"),
            (
                "virtualmachineclusterpreferences.instancetype.kubevirt.io",
                "virtualmachineclusterpreferences",
            ),
            ("vmcp", "virtualmachineclusterpreferences"),
        ] {
            assert_eq!(
                excluded_kind_named_by(backup_excluded_kinds(), entry).map(|k| k.resource),
                Some(resource),
                "{entry}"
            );
            assert_eq!(find(entry), Some(resource), "{entry}");
        }
        let qualified: Vec<String> = backup_excluded_kinds()
            .map(ExcludedKind::qualified)
            .collect();
        for required in [
            "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
            "virtualmachineclusterpreferences.instancetype.kubevirt.io",
        ] {
            assert!(qualified.iter().any(|name| name == required), "{required}");
        }
        // The namespaced KubeVirt kinds stay a tenant's own.
        for entry in [
            "virtualmachineinstancetypes",
            "virtualmachinepreferences",
            "virtualmachines",
        ] {
            assert_eq!(find(entry), None, "{entry}");
        }
    }

    #[test]
    fn appends_once_keeping_tenant_entries_first() {
        let merged = with_appended(
            Some(vec![
                "secrets".into(),
                "ClusterRoles.rbac.authorization.k8s.io".into(),
            ]),
            &[
                "clusterroles.rbac.authorization.k8s.io".into(),
                "priorityclasses.scheduling.k8s.io".into(),
            ],
        );
        assert_eq!(
            merged,
            [
                "secrets",
                "ClusterRoles.rbac.authorization.k8s.io",
                "priorityclasses.scheduling.k8s.io"
            ]
        );
        assert_eq!(with_appended(None, &["a".into()]), ["a"]);
    }
}
