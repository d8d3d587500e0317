//! Where the admin policy comes from: the OADP operator's DataProtectionApplication
//! (`spec.nonAdmin` of the first DPA in the OADP namespace that enables non-admin backups) and
//! NAC's own ConfigMap there, both watched so changes apply without a restart. An invalid source
//! leaves the previous policy in force (and says why in the log) rather than dropping every
//! restriction.
//!
//! Reading and watching the sources is [`crate::api::oadp::policy_sources`] (the gateway
//! watches the same way); here the sources become the controllers' policy.
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

use super::{Context, ControllerError};
pub use crate::api::oadp::{
    DPA_RECHECK, POLICY_CONFIG_MAP, PolicySources, dpa_resource, enabled_non_admin,
};
use crate::api::oadp::{read_policy_sources, watch_policy_sources};
use crate::policy::NacPolicy;

/// Installs the policy of the DPA's `spec.nonAdmin` and the ConfigMap's data (either absent);
/// an invalid combination leaves the previous policy and is logged. Whether it was installed.
pub fn install_sources(
    policy: &RwLock<NacPolicy>,
    dpa_non_admin: Option<&Value>,
    config_map_data: Option<&BTreeMap<String, String>>,
) -> bool {
    match NacPolicy::from_sources(dpa_non_admin, config_map_data) {
        Ok(p) => match policy.write() {
            Ok(mut current) => {
                *current = p;
                true
            }
            Err(_) => false,
        },
        Err(e) => {
            // The message names the source and key (`DPA spec.nonAdmin...`, `ConfigMap key...`).
            tracing::warn!(error = %e, "ignoring invalid NAC policy; the previous policy stays");
            false
        }
    }
}

/// Installs the policy described by the ConfigMap `map` alone (none: the default policy).
/// Start-up uses it before the sources are watched; [`load`] and [`watch`] add the DPA.
pub fn install(policy: &RwLock<NacPolicy>, map: Option<&ConfigMap>) {
    let data = map.map(|m| m.data.clone().unwrap_or_default());
    install_sources(policy, None, data.as_ref());
}

/// Reads the DPAs and the ConfigMap now and installs their policy (start-up, tests).
pub async fn load(context: &Context) -> Result<(), ControllerError> {
    let sources = read_policy_sources(&context.client, &context.oadp_namespace).await?;
    install_sources(
        &context.policy,
        sources.dpa_non_admin.as_ref(),
        sources.config_map_data.as_ref(),
    );
    Ok(())
}

/// Reloads the policy whenever the ConfigMap or a DPA changes, until the task is dropped.
/// Nothing is installed until both sources were read once, so a start-up never runs without the
/// DPA's enforcement because the ConfigMap happened to be read first.
pub async fn watch(context: Arc<Context>) {
    watch_policy_sources(
        context.client.clone(),
        &context.oadp_namespace,
        |sources: &PolicySources| {
            install_sources(
                &context.policy,
                sources.dpa_non_admin.as_ref(),
                sources.config_map_data.as_ref(),
            );
        },
    )
    .await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn both_sources_make_the_policy_and_an_invalid_one_keeps_the_previous() {
        let policy = RwLock::new(NacPolicy::default());
        let non_admin = json!({"enable": true, "enforceBackupSpec": {"ttl": "48h0m0s"},
                               "requireApprovalForBSL": true});
        let data = BTreeMap::from([(
            crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY.to_string(),
            "garbageCollectionPeriod: 1h\n".to_string(),
        )]);
        assert!(install_sources(&policy, Some(&non_admin), Some(&data)));
        let settings = policy.read().unwrap().settings();
        assert!(settings.require_approval_for_bsl);
        assert_eq!(
            settings.garbage_collection_period,
            Duration::from_secs(3600)
        );
        let installed = policy.read().unwrap().clone();
        assert_eq!(
            installed,
            NacPolicy::from_sources(Some(&non_admin), Some(&data)).unwrap()
        );
        let broken = json!({"enable": true, "enforceBackupSpec": {"ttl": "soon"}});
        assert!(!install_sources(&policy, Some(&broken), Some(&data)));
        assert_eq!(*policy.read().unwrap(), installed);
        // The ConfigMap alone (start-up before the DPA is read).
        let map: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": POLICY_CONFIG_MAP}})).unwrap();
        install(&policy, Some(&map));
        assert_eq!(*policy.read().unwrap(), NacPolicy::default());
    }
}
