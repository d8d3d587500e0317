//! The OADP operator's DataProtectionApplication as NAC reads it (a [`DynamicObject`]; only
//! `spec.nonAdmin` matters), shared by the controllers and the gateway.
//!
//! NAC does not model OADP's types; it needs the DPA's [`ApiResource`], the choice of the DPA
//! whose `spec.nonAdmin` is in force, and how to tell "no DPA API here" (no CRD, no RBAC) from a
//! transient failure. All of that is pure; reading and watching the admin policy's sources (the
//! DPA and NAC's ConfigMap) is in [`policy_sources`].
pub mod policy_sources;

pub use policy_sources::{
    DPA_RECHECK, POLICY_CONFIG_MAP, PolicySources, read_policy_sources, watch_policy_sources,
};

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use serde_json::Value;

/// The OADP operator's DataProtectionApplication (`oadp.openshift.io/v1alpha1`, namespaced).
pub fn dpa_resource() -> ApiResource {
    ApiResource {
        group: "oadp.openshift.io".into(),
        version: "v1alpha1".into(),
        api_version: "oadp.openshift.io/v1alpha1".into(),
        kind: "DataProtectionApplication".into(),
        plural: "dataprotectionapplications".into(),
    }
}

/// `spec.nonAdmin` of the first DPA (oldest, then by name) with `spec.nonAdmin.enable: true`.
/// OADP allows one such DPA per cluster; the order only makes a misconfiguration deterministic.
pub fn enabled_non_admin<'a>(dpas: impl IntoIterator<Item = &'a DynamicObject>) -> Option<Value> {
    let mut enabled: Vec<&DynamicObject> = dpas
        .into_iter()
        .filter(|d| d.data.pointer("/spec/nonAdmin/enable") == Some(&Value::Bool(true)))
        .collect();
    enabled.sort_by_key(|d| {
        (
            d.metadata.creation_timestamp.as_ref().map(|t| t.0),
            d.metadata.name.clone(),
        )
    });
    enabled
        .first()
        .and_then(|d| d.data.pointer("/spec/nonAdmin"))
        .cloned()
}

/// Why a DPA read failed for good: the DPA API is not there for the reader (404: no CRD; 403:
/// no RBAC). None: something transient, worth retrying.
pub fn dpa_unavailable(error: &kube::Error) -> Option<&'static str> {
    match error {
        kube::Error::Api(s) if s.code == 404 => {
            Some("the DataProtectionApplication CRD is not installed")
        }
        kube::Error::Api(s) if s.code == 403 => {
            Some("NAC may not read DataProtectionApplications (check its RBAC)")
        }
        _ => None,
    }
}

/// [`dpa_unavailable`] for an error of a DPA watch.
pub fn watch_error_unavailable(error: &watcher::Error) -> Option<&'static str> {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => dpa_unavailable(e),
        watcher::Error::WatchError(s) if s.code == 404 => {
            Some("the DataProtectionApplication CRD is not installed")
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dpa(name: &str, created: i64, non_admin: Value) -> DynamicObject {
        let mut d = DynamicObject::new(name, &dpa_resource()).within("openshift-adp");
        d.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 + created).unwrap(),
        ));
        d.data = json!({"spec": {"nonAdmin": non_admin}});
        d
    }

    #[test]
    fn the_oldest_dpa_that_enables_non_admin_wins() {
        let off = dpa(
            "a-off",
            0,
            json!({"enable": false, "requireApprovalForBSL": true}),
        );
        let unset = dpa("b-unset", 0, json!({"requireApprovalForBSL": true}));
        let newer = dpa(
            "c-newer",
            5,
            json!({"enable": true, "backupSyncPeriod": "5m"}),
        );
        let older = dpa(
            "z-older",
            1,
            json!({"enable": true, "backupSyncPeriod": "3m"}),
        );
        let chosen = enabled_non_admin([&off, &unset, &newer, &older]).unwrap();
        assert_eq!(chosen["backupSyncPeriod"], "3m");
        assert_eq!(enabled_non_admin([&off, &unset]), None);
        assert_eq!(enabled_non_admin([]), None);
        let mut plain = DynamicObject::new("x", &dpa_resource());
        plain.data = json!({"spec": {}});
        assert_eq!(enabled_non_admin([&plain]), None);
    }

    #[test]
    fn missing_crd_and_missing_rights_mean_no_dpa_api() {
        let status = |code| {
            kube::Error::Api(
                serde_json::from_value(json!({"status": "Failure", "code": code, "message": "m",
                                              "reason": "r"}))
                .unwrap(),
            )
        };
        assert!(dpa_unavailable(&status(404)).is_some());
        assert!(dpa_unavailable(&status(403)).is_some());
        assert!(dpa_unavailable(&status(500)).is_none());
        assert!(watch_error_unavailable(&watcher::Error::InitialListFailed(status(404))).is_some());
        assert!(watch_error_unavailable(&watcher::Error::InitialListFailed(status(503))).is_none());
    }
}
