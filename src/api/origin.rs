//! Origin metadata: the labels and annotations that tie a Velero object (Backup, Restore,
//! BackupStorageLocation and its Secret, DownloadRequest, Schedule, DeleteBackupRequest) in the
//! OADP namespace to the tenant object it was made for, and reading them back.
//!
//! Labels identify (they are selectable: `openshift.io/oadp: "True"`,
//! `app.kubernetes.io/managed-by: oadp-nac-controller`, `openshift.io/oadp-<kind>-origin-nacuuid`);
//! annotations record the tenant object's name and namespace (seed 000, upstream
//! `GetNonAdminLabels` / `GetNonAdmin*Annotations`).
//!
//! Reading them back follows upstream's `CheckVeleroBackupMetadata` (both NAC labels with their
//! exact values, a non-empty NACUUID label and origin annotations), and goes further because the
//! backup sync *creates* tenant objects from what it reads: the origin namespace must be a valid
//! namespace name and the origin name a valid object name, so a crafted annotation (for example
//! on a backup planted in a tenant's own bucket) can never point anywhere else.

use std::collections::BTreeMap;

use crate::api::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::api::nonadmin::labels;

/// Longest label/annotation value upstream accepts when reading origin metadata
/// (`validation.DNS1123SubdomainMaxLength`).
const MAX_ORIGIN_VALUE_LENGTH: usize = 253;

/// The kind of tenant object a Velero object was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OriginKind {
    /// A NonAdminBackup (Velero Backup, DeleteBackupRequest).
    NonAdminBackup,
    /// A NonAdminRestore (Velero Restore).
    NonAdminRestore,
    /// A NonAdminBackupStorageLocation (Velero BSL, its Secret, its approval request).
    NonAdminBackupStorageLocation,
    /// A NonAdminDownloadRequest (Velero DownloadRequest).
    NonAdminDownloadRequest,
    /// A NonAdminSchedule (Velero Schedule and the backups it makes).
    NonAdminSchedule,
}

impl OriginKind {
    /// Every kind, in the order [`origin_of`] tries them.
    pub const ALL: [Self; 5] = [
        Self::NonAdminBackup,
        Self::NonAdminRestore,
        Self::NonAdminBackupStorageLocation,
        Self::NonAdminDownloadRequest,
        Self::NonAdminSchedule,
    ];

    /// The tenant kind's name, e.g. `NonAdminBackup`.
    pub fn kind(self) -> &'static str {
        match self {
            Self::NonAdminBackup => "NonAdminBackup",
            Self::NonAdminRestore => "NonAdminRestore",
            Self::NonAdminBackupStorageLocation => "NonAdminBackupStorageLocation",
            Self::NonAdminDownloadRequest => "NonAdminDownloadRequest",
            Self::NonAdminSchedule => "NonAdminSchedule",
        }
    }

    /// The label holding the tenant object's NACUUID.
    pub fn nacuuid_label(self) -> &'static str {
        match self {
            Self::NonAdminBackup => labels::NAB_ORIGIN_NACUUID,
            Self::NonAdminRestore => labels::NAR_ORIGIN_NACUUID,
            Self::NonAdminBackupStorageLocation => labels::NABSL_ORIGIN_NACUUID,
            Self::NonAdminDownloadRequest => labels::NADR_ORIGIN_NACUUID,
            Self::NonAdminSchedule => labels::NAS_ORIGIN_NACUUID,
        }
    }

    /// The annotation holding the tenant object's name.
    pub fn name_annotation(self) -> &'static str {
        match self {
            Self::NonAdminBackup => labels::NAB_ORIGIN_NAME_ANNOTATION,
            Self::NonAdminRestore => labels::NAR_ORIGIN_NAME_ANNOTATION,
            Self::NonAdminBackupStorageLocation => labels::NABSL_ORIGIN_NAME_ANNOTATION,
            Self::NonAdminDownloadRequest => labels::NADR_ORIGIN_NAME_ANNOTATION,
            Self::NonAdminSchedule => labels::NAS_ORIGIN_NAME_ANNOTATION,
        }
    }

    /// The annotation holding the tenant object's namespace.
    pub fn namespace_annotation(self) -> &'static str {
        match self {
            Self::NonAdminBackup => labels::NAB_ORIGIN_NAMESPACE_ANNOTATION,
            Self::NonAdminRestore => labels::NAR_ORIGIN_NAMESPACE_ANNOTATION,
            Self::NonAdminBackupStorageLocation => labels::NABSL_ORIGIN_NAMESPACE_ANNOTATION,
            Self::NonAdminDownloadRequest => labels::NADR_ORIGIN_NAMESPACE_ANNOTATION,
            Self::NonAdminSchedule => labels::NAS_ORIGIN_NAMESPACE_ANNOTATION,
        }
    }
}

/// The tenant object a Velero object was made for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// Kind of the tenant object.
    pub kind: OriginKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its NACUUID (also the Velero object's name), except for a NonAdminDownloadRequest: its
    /// label holds the NADR's bare UID, as upstream writes it, while the Velero
    /// DownloadRequest is named `nadr-<uid>`.
    pub nacuuid: String,
}

impl Origin {
    /// The labels a Velero object made for this origin carries.
    pub fn labels(&self) -> BTreeMap<String, String> {
        origin_labels(self.kind, &self.nacuuid)
    }

    /// The annotations a Velero object made for this origin carries.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        origin_annotations(self.kind, &self.namespace, &self.name)
    }
}

/// The labels on every object NAC creates (`openshift.io/oadp: "True"` and
/// `app.kubernetes.io/managed-by: oadp-nac-controller`).
pub fn nac_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::OADP.to_owned(), labels::OADP_VALUE.to_owned()),
        (
            labels::MANAGED_BY.to_owned(),
            labels::MANAGED_BY_VALUE.to_owned(),
        ),
    ])
}

/// [`nac_labels`] plus the NACUUID label of `kind`.
pub fn origin_labels(kind: OriginKind, nacuuid: &str) -> BTreeMap<String, String> {
    let mut labels = nac_labels();
    labels.insert(kind.nacuuid_label().to_owned(), nacuuid.to_owned());
    labels
}

/// The origin name and namespace annotations of `kind`.
pub fn origin_annotations(
    kind: OriginKind,
    namespace: &str,
    name: &str,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (kind.namespace_annotation().to_owned(), namespace.to_owned()),
        (kind.name_annotation().to_owned(), name.to_owned()),
    ])
}

/// Whether `labels` carry both NAC labels with NAC's values (upstream checks both before it
/// treats an object as its own).
pub fn is_managed_by_nac(labels: &BTreeMap<String, String>) -> bool {
    labels.get(labels::OADP).map(String::as_str) == Some(labels::OADP_VALUE)
        && labels.get(labels::MANAGED_BY).map(String::as_str) == Some(labels::MANAGED_BY_VALUE)
}

/// The origin of a Velero object from its labels and annotations, trying the kinds in
/// [`OriginKind::ALL`] order (a scheduled backup carries both a NonAdminSchedule and, once
/// adopted, a NonAdminBackup origin; the backup comes first).
///
/// `None` unless the object is NAC's (see [`is_managed_by_nac`]) and one kind's metadata is
/// complete and well-formed.
pub fn origin_of(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Option<Origin> {
    OriginKind::ALL
        .into_iter()
        .find_map(|kind| origin_of_kind(kind, labels, annotations))
}

/// The origin of `kind` recorded on a Velero object, if complete and well-formed.
pub fn origin_of_kind(
    kind: OriginKind,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Option<Origin> {
    if !is_managed_by_nac(labels) {
        return None;
    }
    let nacuuid = valid_value(labels.get(kind.nacuuid_label()))?;
    let namespace = valid_value(annotations.get(kind.namespace_annotation()))?;
    let name = valid_value(annotations.get(kind.name_annotation()))?;
    // The sync creates objects in `namespace` named `name`: refuse anything that is not a
    // namespace name / object name rather than trusting the annotation.
    if !is_dns1123_label(namespace) || !is_dns1123_subdomain(name) {
        return None;
    }
    Some(Origin {
        kind,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        nacuuid: nacuuid.to_owned(),
    })
}

/// Upstream's `checkLabelAnnotationValueIsValid`: present, non-empty, shorter than 253.
fn valid_value(value: Option<&String>) -> Option<&str> {
    value
        .map(String::as_str)
        .filter(|value| !value.is_empty() && value.len() <= MAX_ORIGIN_VALUE_LENGTH)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const UUID: &str = "team-a-nightly-0d0b7b2c-ee76-412d-a867-2c23b8aa51ab";

    fn backup_origin() -> Origin {
        Origin {
            kind: OriginKind::NonAdminBackup,
            namespace: "team-a".into(),
            name: "nightly".into(),
            nacuuid: UUID.into(),
        }
    }

    #[test]
    fn builders_write_seed_000_metadata() {
        let origin = backup_origin();
        let labels = origin.labels();
        assert_eq!(labels["openshift.io/oadp"], "True");
        assert_eq!(
            labels["app.kubernetes.io/managed-by"],
            "oadp-nac-controller"
        );
        assert_eq!(labels["openshift.io/oadp-nab-origin-nacuuid"], UUID);
        assert_eq!(labels.len(), 3);
        let annotations = origin.annotations();
        assert_eq!(annotations["openshift.io/oadp-nab-origin-name"], "nightly");
        assert_eq!(
            annotations["openshift.io/oadp-nab-origin-namespace"],
            "team-a"
        );
    }

    #[test]
    fn every_kind_round_trips() {
        for kind in OriginKind::ALL {
            let origin = Origin {
                kind,
                ..backup_origin()
            };
            assert_eq!(
                origin_of(&origin.labels(), &origin.annotations()),
                Some(origin.clone()),
                "{}",
                kind.kind()
            );
        }
    }

    #[test]
    fn a_download_request_origin_carries_the_bare_uid() {
        let uid = "0d0b7b2c-ee76-412d-a867-2c23b8aa51ab";
        let labels = origin_labels(OriginKind::NonAdminDownloadRequest, uid);
        assert_eq!(labels["openshift.io/oadp-nadr-origin-nacuuid"], uid);
        let annotations = origin_annotations(OriginKind::NonAdminDownloadRequest, "team-a", "logs");
        let origin = origin_of(&labels, &annotations).expect("a NADR origin");
        assert_eq!(origin.kind, OriginKind::NonAdminDownloadRequest);
        assert_eq!(origin.nacuuid, uid);
    }

    #[test]
    fn restore_uses_nar_keys() {
        let labels = origin_labels(OriginKind::NonAdminRestore, UUID);
        assert_eq!(labels["openshift.io/oadp-nar-origin-nacuuid"], UUID);
        let annotations = origin_annotations(OriginKind::NonAdminRestore, "ns", "r");
        assert_eq!(annotations["openshift.io/oadp-nar-origin-namespace"], "ns");
    }

    #[test]
    fn foreign_objects_have_no_origin() {
        let origin = backup_origin();
        let annotations = origin.annotations();
        let mut labels = origin.labels();
        labels.insert(labels::MANAGED_BY.into(), "someone-else".into());
        assert_eq!(origin_of(&labels, &annotations), None);

        let mut labels = origin.labels();
        labels.remove(labels::OADP);
        assert_eq!(origin_of(&labels, &annotations), None);

        let mut labels = origin.labels();
        labels.insert(labels::OADP.into(), "true".into());
        assert_eq!(
            origin_of(&labels, &annotations),
            None,
            "value is case-sensitive"
        );
    }

    #[test]
    fn incomplete_metadata_has_no_origin() {
        let origin = backup_origin();
        let mut annotations = origin.annotations();
        annotations.insert(
            labels::NAB_ORIGIN_NAMESPACE_ANNOTATION.into(),
            String::new(),
        );
        assert_eq!(origin_of(&origin.labels(), &annotations), None);

        let mut annotations = origin.annotations();
        annotations.remove(labels::NAB_ORIGIN_NAME_ANNOTATION);
        assert_eq!(origin_of(&origin.labels(), &annotations), None);

        let mut labels = origin.labels();
        labels.insert(labels::NAB_ORIGIN_NACUUID.into(), "x".repeat(254));
        assert_eq!(origin_of(&labels, &origin.annotations()), None);
    }

    #[test]
    fn names_at_the_kubernetes_limit_have_an_origin() {
        let origin = backup_origin();
        let name = format!("nightly.{}", "b".repeat(245));
        let mut annotations = origin.annotations();
        annotations.insert(labels::NAB_ORIGIN_NAME_ANNOTATION.into(), name.clone());
        let found = origin_of(&origin.labels(), &annotations).expect("a 253-character name");
        assert_eq!(found.name, name);
    }

    #[test]
    fn crafted_origin_namespace_is_refused() {
        let origin = backup_origin();
        for forged in ["../kube-system", "Team-A", "team a", "team-a/other"] {
            let mut annotations = origin.annotations();
            annotations.insert(
                labels::NAB_ORIGIN_NAMESPACE_ANNOTATION.into(),
                forged.into(),
            );
            assert_eq!(origin_of(&origin.labels(), &annotations), None, "{forged}");
        }
        let mut annotations = origin.annotations();
        annotations.insert(labels::NAB_ORIGIN_NAME_ANNOTATION.into(), "a/b".into());
        assert_eq!(origin_of(&origin.labels(), &annotations), None);
    }

    #[test]
    fn backup_origin_wins_over_schedule_origin() {
        let schedule = Origin {
            kind: OriginKind::NonAdminSchedule,
            name: "hourly".into(),
            ..backup_origin()
        };
        let mut labels = schedule.labels();
        labels.extend(backup_origin().labels());
        let mut annotations = schedule.annotations();
        annotations.extend(backup_origin().annotations());
        assert_eq!(origin_of(&labels, &annotations), Some(backup_origin()));
        assert_eq!(
            origin_of_kind(OriginKind::NonAdminSchedule, &labels, &annotations),
            Some(schedule)
        );
    }
}
