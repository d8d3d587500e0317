//! Where the admin policy comes from: the OADP operator's DataProtectionApplication
//! (`spec.nonAdmin` of the first DPA in the OADP namespace that enables non-admin backups) and
//! NAC's own ConfigMap there, both watched so changes apply without a restart. An invalid source
//! leaves the previous policy in force (and says why in the log) rather than dropping every
//! restriction.
//!
//! The DPA is read as a [`DynamicObject`]: NAC needs only `spec.nonAdmin`, not OADP's types.
//! Clusters without OADP's DPA CRD (or without the RBAC to read DPAs) run on the ConfigMap
//! alone: that is said once in the log, and the CRD is looked for again now and then, quietly.
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Context, ControllerError};
pub use crate::api::oadp::{dpa_resource, enabled_non_admin};
use crate::api::oadp::{dpa_unavailable, watch_error_unavailable};
use crate::policy::NacPolicy;

/// Name of NAC's policy ConfigMap in the OADP namespace.
pub const POLICY_CONFIG_MAP: &str = "nac-policy";
/// How often to look again for DataProtectionApplications when their CRD is not served.
pub const DPA_RECHECK: Duration = Duration::from_secs(60);

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
    let config: Api<ConfigMap> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let map = config.get_opt(POLICY_CONFIG_MAP).await?;
    let dpas: Api<DynamicObject> = Api::namespaced_with(
        context.client.clone(),
        &context.oadp_namespace,
        &dpa_resource(),
    );
    let non_admin = match dpas.list(&ListParams::default()).await {
        Ok(list) => enabled_non_admin(&list.items),
        Err(e) if dpa_unavailable(&e).is_some() => None,
        Err(e) => return Err(e.into()),
    };
    let data = map.map(|m| m.data.unwrap_or_default());
    install_sources(&context.policy, non_admin.as_ref(), data.as_ref());
    Ok(())
}

/// The DPA's `spec.nonAdmin` and the ConfigMap's data, as last installed.
type Sources = (Option<Value>, Option<BTreeMap<String, String>>);

/// What changed in one of the two sources.
#[derive(Debug)]
enum SourceUpdate {
    /// The ConfigMap's data (None: no ConfigMap).
    ConfigMap(Option<BTreeMap<String, String>>),
    /// The enabled DPA's `spec.nonAdmin` (None: no such DPA, or no DPA API).
    Dpa(Option<Value>),
}

/// Reloads the policy whenever the ConfigMap or a DPA changes, until the task is dropped.
/// Nothing is installed until both sources were read once, so a start-up never runs without the
/// DPA's enforcement because the ConfigMap happened to be read first.
pub async fn watch(context: Arc<Context>) {
    let (updates, mut received) = mpsc::unbounded_channel();
    let config_map = watch_config_map(context.clone(), updates.clone());
    let dpas = watch_dpas(context.clone(), updates);
    let apply = async {
        let mut config_map: Option<Option<BTreeMap<String, String>>> = None;
        let mut dpa: Option<Option<Value>> = None;
        let mut installed: Option<Sources> = None;
        while let Some(update) = received.recv().await {
            match update {
                SourceUpdate::ConfigMap(data) => config_map = Some(data),
                SourceUpdate::Dpa(non_admin) => dpa = Some(non_admin),
            }
            let (Some(data), Some(non_admin)) = (&config_map, &dpa) else {
                continue;
            };
            let sources = (non_admin.clone(), data.clone());
            // Unchanged sources are not installed (nor re-reported) again.
            if installed.as_ref() != Some(&sources) {
                install_sources(&context.policy, non_admin.as_ref(), data.as_ref());
                installed = Some(sources);
            }
        }
    };
    tokio::join!(config_map, dpas, apply);
}

async fn watch_config_map(context: Arc<Context>, updates: mpsc::UnboundedSender<SourceUpdate>) {
    let api: Api<ConfigMap> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={POLICY_CONFIG_MAP}"));
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    // A (re)list is buffered until it is complete, so a ConfigMap deleted meanwhile is noticed.
    let mut listing: Option<Option<BTreeMap<String, String>>> = None;
    while let Some(event) = stream.next().await {
        let update = match event {
            Ok(Event::Init) => {
                listing = Some(None);
                continue;
            }
            Ok(Event::InitApply(map)) => {
                listing = Some(Some(map.data.unwrap_or_default()));
                continue;
            }
            Ok(Event::InitDone) => listing.take().flatten(),
            Ok(Event::Apply(map)) => Some(map.data.unwrap_or_default()),
            Ok(Event::Delete(_)) => None,
            Err(e) => {
                tracing::debug!(error = %e, "watching the NAC policy ConfigMap");
                continue;
            }
        };
        if updates.send(SourceUpdate::ConfigMap(update)).is_err() {
            return;
        }
    }
}

async fn watch_dpas(context: Arc<Context>, updates: mpsc::UnboundedSender<SourceUpdate>) {
    let api: Api<DynamicObject> = Api::namespaced_with(
        context.client.clone(),
        &context.oadp_namespace,
        &dpa_resource(),
    );
    let mut said_unavailable = false;
    loop {
        let mut stream = watcher::watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut known: BTreeMap<String, DynamicObject> = BTreeMap::new();
        let mut listing: Option<BTreeMap<String, DynamicObject>> = None;
        let unavailable = loop {
            let Some(event) = stream.next().await else {
                return;
            };
            match event {
                Ok(Event::Init) => listing = Some(BTreeMap::new()),
                Ok(Event::InitApply(d)) => {
                    if let Some(l) = listing.as_mut() {
                        l.insert(d.metadata.name.clone().unwrap_or_default(), d);
                    }
                }
                Ok(Event::InitDone) => known = listing.take().unwrap_or_default(),
                Ok(Event::Apply(d)) => {
                    known.insert(d.metadata.name.clone().unwrap_or_default(), d);
                }
                Ok(Event::Delete(d)) => {
                    known.remove(d.metadata.name.as_deref().unwrap_or_default());
                }
                Err(e) => match watch_error_unavailable(&e) {
                    Some(why) => break why,
                    None => {
                        tracing::debug!(error = %e, "watching DataProtectionApplications");
                        continue;
                    }
                },
            }
            if listing.is_some() {
                continue;
            }
            if said_unavailable {
                tracing::info!(
                    "DataProtectionApplications are readable; their spec.nonAdmin applies"
                );
                said_unavailable = false;
            }
            if updates
                .send(SourceUpdate::Dpa(enabled_non_admin(known.values())))
                .is_err()
            {
                return;
            }
        };
        // No DPA API: the ConfigMap alone decides. Said once, then looked for again quietly.
        if !said_unavailable {
            tracing::info!(
                reason = unavailable,
                "no DataProtectionApplication policy; using the NAC ConfigMap only"
            );
            said_unavailable = true;
        }
        if updates.send(SourceUpdate::Dpa(None)).is_err() {
            return;
        }
        drop(stream);
        tokio::time::sleep(DPA_RECHECK).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_sources_make_the_policy_and_an_invalid_one_keeps_the_previous() {
        let policy = RwLock::new(NacPolicy::default());
        let non_admin = json!({"enable": true, "enforceBackupSpec": {"ttl": "48h0m0s"},
                               "requireApprovalForBSL": true});
        let data = BTreeMap::from([(
            crate::policy::config::POLICY_CONFIGMAP_KEY.to_string(),
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
