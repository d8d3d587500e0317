//! Where the admin policy comes from: NAC's ConfigMap in the OADP namespace, watched so changes
//! apply without a restart. A ConfigMap that does not parse leaves the previous policy in force
//! (and says why in the log) rather than dropping every restriction.
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};

use super::Context;
use crate::policy::NacPolicy;

/// Name of NAC's policy ConfigMap in the OADP namespace.
pub const POLICY_CONFIG_MAP: &str = "nac-policy";

/// Installs the policy described by `map` (none: the default policy).
pub fn install(policy: &RwLock<NacPolicy>, map: Option<&ConfigMap>) {
    let parsed = match map {
        None => Ok(NacPolicy::default()),
        Some(m) => NacPolicy::from_sources(None, Some(&m.data.clone().unwrap_or_default())),
    };
    match parsed {
        Ok(p) => {
            if let Ok(mut current) = policy.write() {
                *current = p;
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "ignoring invalid NAC policy ConfigMap; the previous policy stays")
        }
    }
}

/// Reloads the policy whenever its ConfigMap changes, until the task is dropped.
pub async fn watch(context: Arc<Context>) {
    let api: Api<ConfigMap> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={POLICY_CONFIG_MAP}"));
    let mut stream = watcher::watcher(api, config).boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(map)) | Ok(Event::InitApply(map)) => {
                install(&context.policy, Some(&map))
            }
            Ok(Event::Delete(_)) => install(&context.policy, None),
            _ => {}
        }
    }
}
