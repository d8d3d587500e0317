//! The admin policy's two sources in the OADP namespace, read and watched once for the
//! controllers and the gateway: the enabled DataProtectionApplication's `spec.nonAdmin` and
//! NAC's own ConfigMap ([`POLICY_CONFIG_MAP`]). What the sources *mean* is the policy's
//! (`NacPolicy::from_sources`); here they are only fetched.
//!
//! [`watch_policy_sources`] reports the sources once both were read (so nobody runs without
//! the DPA's enforcement because the ConfigMap happened to be read first), then on every actual
//! change; a (re)list is buffered until complete, so an object deleted meanwhile is noticed.
//! Clusters without OADP's DPA CRD (or without the RBAC to read DPAs) run on the ConfigMap
//! alone: that is said once in the log, and the DPAs are looked for again every
//! [`DPA_RECHECK`], quietly.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{dpa_resource, dpa_unavailable, enabled_non_admin, watch_error_unavailable};

/// Name of NAC's policy ConfigMap in the OADP namespace.
pub const POLICY_CONFIG_MAP: &str = "nac-policy";
/// Key of NAC's policy ConfigMap holding the policy document.
pub const POLICY_CONFIGMAP_KEY: &str = "policy.yaml";
/// How often to look again for DataProtectionApplications when their CRD is not served (or
/// they may not be read).
pub const DPA_RECHECK: Duration = Duration::from_secs(60);

/// The admin policy's sources as read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicySources {
    /// The enabled DPA's `spec.nonAdmin` (None: no such DPA, or no DPA API).
    pub dpa_non_admin: Option<Value>,
    /// The ConfigMap's data (None: no ConfigMap).
    pub config_map_data: Option<BTreeMap<String, String>>,
}

/// Reads both sources now (start-up, tests). No DPA API counts as no DPA.
pub async fn read_policy_sources(
    client: &kube::Client,
    oadp_namespace: &str,
) -> Result<PolicySources, kube::Error> {
    let config: Api<ConfigMap> = Api::namespaced(client.clone(), oadp_namespace);
    let map = config.get_opt(POLICY_CONFIG_MAP).await?;
    let dpas: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), oadp_namespace, &dpa_resource());
    let dpa_non_admin = match dpas.list(&ListParams::default()).await {
        Ok(list) => enabled_non_admin(&list.items),
        Err(error) if dpa_unavailable(&error).is_some() => None,
        Err(error) => return Err(error),
    };
    Ok(PolicySources {
        dpa_non_admin,
        config_map_data: map.map(|m| m.data.unwrap_or_default()),
    })
}

/// Watches both sources until the returned future is dropped, calling `on_change` once both
/// were read and then whenever they change (never twice in a row with the same sources).
pub async fn watch_policy_sources(
    client: kube::Client,
    oadp_namespace: &str,
    mut on_change: impl FnMut(&PolicySources),
) {
    let (updates, mut received) = mpsc::unbounded_channel();
    let config_map = watch_config_map(
        Api::namespaced(client.clone(), oadp_namespace),
        updates.clone(),
    );
    let dpas = watch_dpas(
        Api::namespaced_with(client, oadp_namespace, &dpa_resource()),
        updates,
    );
    let apply = async {
        let mut sources = SourcesState::default();
        while let Some(update) = received.recv().await {
            if let Some(changed) = sources.apply(update) {
                on_change(changed);
            }
        }
    };
    tokio::join!(config_map, dpas, apply);
}

/// What changed in one of the two sources.
#[derive(Debug, PartialEq)]
enum SourceUpdate {
    /// The ConfigMap's data (None: no ConfigMap).
    ConfigMap(Option<BTreeMap<String, String>>),
    /// The enabled DPA's `spec.nonAdmin` (None: no such DPA, or no DPA API).
    Dpa(Option<Value>),
}

/// The sources as known so far, and which were last reported.
#[derive(Debug, Default)]
struct SourcesState {
    config_map: Option<Option<BTreeMap<String, String>>>,
    dpa: Option<Option<Value>>,
    reported: Option<PolicySources>,
}

impl SourcesState {
    /// Takes one update; the sources to report, if both were read and they changed.
    fn apply(&mut self, update: SourceUpdate) -> Option<&PolicySources> {
        match update {
            SourceUpdate::ConfigMap(data) => self.config_map = Some(data),
            SourceUpdate::Dpa(non_admin) => self.dpa = Some(non_admin),
        }
        let (Some(data), Some(non_admin)) = (&self.config_map, &self.dpa) else {
            return None;
        };
        let sources = PolicySources {
            dpa_non_admin: non_admin.clone(),
            config_map_data: data.clone(),
        };
        if self.reported.as_ref() == Some(&sources) {
            return None;
        }
        self.reported = Some(sources);
        self.reported.as_ref()
    }
}

/// The ConfigMap's data from its watch events; a (re)list is held until complete.
#[derive(Debug, Default)]
struct ConfigMapEvents {
    listing: Option<Option<BTreeMap<String, String>>>,
}

impl ConfigMapEvents {
    /// The ConfigMap's data after `event` (outer None: nothing to report yet).
    fn on(&mut self, event: Event<ConfigMap>) -> Option<Option<BTreeMap<String, String>>> {
        match event {
            Event::Init => {
                self.listing = Some(None);
                None
            }
            Event::InitApply(map) => {
                self.listing = Some(Some(map.data.unwrap_or_default()));
                None
            }
            Event::InitDone => Some(self.listing.take().flatten()),
            Event::Apply(map) => Some(Some(map.data.unwrap_or_default())),
            Event::Delete(_) => Some(None),
        }
    }
}

/// The DPAs from their watch events; a (re)list replaces what was known once complete.
#[derive(Debug, Default)]
struct DpaEvents {
    known: BTreeMap<String, DynamicObject>,
    listing: Option<BTreeMap<String, DynamicObject>>,
}

impl DpaEvents {
    /// The enabled DPA's `spec.nonAdmin` after `event` (outer None: a list is under way).
    fn on(&mut self, event: Event<DynamicObject>) -> Option<Option<Value>> {
        let name = |d: &DynamicObject| d.metadata.name.clone().unwrap_or_default();
        match event {
            Event::Init => self.listing = Some(BTreeMap::new()),
            Event::InitApply(d) => {
                if let Some(listing) = self.listing.as_mut() {
                    listing.insert(name(&d), d);
                }
            }
            Event::InitDone => self.known = self.listing.take().unwrap_or_default(),
            Event::Apply(d) => {
                self.known.insert(name(&d), d);
            }
            Event::Delete(d) => {
                self.known.remove(&name(&d));
            }
        }
        if self.listing.is_some() {
            return None;
        }
        Some(enabled_non_admin(self.known.values()))
    }
}

async fn watch_config_map(api: Api<ConfigMap>, updates: mpsc::UnboundedSender<SourceUpdate>) {
    let config = watcher::Config::default().fields(&format!("metadata.name={POLICY_CONFIG_MAP}"));
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut events = ConfigMapEvents::default();
    while let Some(event) = stream.next().await {
        let update = match event {
            Ok(event) => events.on(event),
            Err(error) => {
                tracing::debug!(error = %error, "watching the NAC policy ConfigMap");
                None
            }
        };
        if let Some(data) = update
            && updates.send(SourceUpdate::ConfigMap(data)).is_err()
        {
            return;
        }
    }
}

async fn watch_dpas(api: Api<DynamicObject>, updates: mpsc::UnboundedSender<SourceUpdate>) {
    let mut said_unavailable = false;
    loop {
        let mut stream = watcher::watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut events = DpaEvents::default();
        let unavailable = loop {
            let Some(event) = stream.next().await else {
                return;
            };
            let update = match event {
                Ok(event) => events.on(event),
                Err(error) => match watch_error_unavailable(&error) {
                    Some(why) => break why,
                    None => {
                        tracing::debug!(error = %error, "watching DataProtectionApplications");
                        None
                    }
                },
            };
            let Some(non_admin) = update else {
                continue;
            };
            if said_unavailable {
                tracing::info!(
                    "DataProtectionApplications are readable; their spec.nonAdmin applies"
                );
                said_unavailable = false;
            }
            if updates.send(SourceUpdate::Dpa(non_admin)).is_err() {
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

    fn data(text: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("policy.yaml".to_owned(), text.to_owned())])
    }

    fn map(text: &str) -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": POLICY_CONFIG_MAP},
                                      "data": {"policy.yaml": text}}))
        .unwrap()
    }

    fn dpa(name: &str, enable: bool) -> DynamicObject {
        let mut d = DynamicObject::new(name, &dpa_resource()).within("openshift-adp");
        d.data = json!({"spec": {"nonAdmin": {"enable": enable, "from": name}}});
        d
    }

    #[test]
    fn sources_are_reported_once_both_were_read_and_then_only_on_change() {
        let mut state = SourcesState::default();
        assert_eq!(state.apply(SourceUpdate::ConfigMap(Some(data("a")))), None);
        let both = state.apply(SourceUpdate::Dpa(None)).cloned();
        assert_eq!(
            both,
            Some(PolicySources {
                dpa_non_admin: None,
                config_map_data: Some(data("a")),
            })
        );
        // The same again (a relist, a recheck without a DPA API): not reported.
        assert_eq!(state.apply(SourceUpdate::Dpa(None)), None);
        assert_eq!(state.apply(SourceUpdate::ConfigMap(Some(data("a")))), None);
        // A change of either is.
        let dpa = json!({"enable": true});
        assert_eq!(
            state
                .apply(SourceUpdate::Dpa(Some(dpa.clone())))
                .map(|s| s.dpa_non_admin.clone()),
            Some(Some(dpa))
        );
        assert_eq!(
            state
                .apply(SourceUpdate::ConfigMap(None))
                .map(|s| s.config_map_data.clone()),
            Some(None)
        );
    }

    #[test]
    fn the_dpa_alone_is_not_enough() {
        let mut state = SourcesState::default();
        assert_eq!(state.apply(SourceUpdate::Dpa(Some(json!({})))), None);
        assert!(state.apply(SourceUpdate::ConfigMap(None)).is_some());
    }

    #[test]
    fn a_config_map_relist_is_held_until_complete() {
        let mut events = ConfigMapEvents::default();
        assert_eq!(events.on(Event::Init), None);
        assert_eq!(events.on(Event::InitApply(map("a"))), None);
        assert_eq!(events.on(Event::InitDone), Some(Some(data("a"))));
        assert_eq!(events.on(Event::Apply(map("b"))), Some(Some(data("b"))));
        // Deleted while the watch was down: the relist finds nothing.
        assert_eq!(events.on(Event::Init), None);
        assert_eq!(events.on(Event::InitDone), Some(None));
        assert_eq!(events.on(Event::Apply(map("c"))), Some(Some(data("c"))));
        assert_eq!(events.on(Event::Delete(map("c"))), Some(None));
    }

    #[test]
    fn dpa_relists_replace_what_was_known() {
        let mut events = DpaEvents::default();
        assert_eq!(events.on(Event::Init), None);
        assert_eq!(events.on(Event::InitApply(dpa("one", true))), None);
        assert_eq!(
            events.on(Event::InitDone),
            Some(Some(json!({"enable": true, "from": "one"})))
        );
        assert_eq!(events.on(Event::Apply(dpa("one", false))), Some(None));
        assert_eq!(
            events.on(Event::Apply(dpa("two", true))),
            Some(Some(json!({"enable": true, "from": "two"})))
        );
        // A relist without "two" (deleted meanwhile) forgets it once complete.
        assert_eq!(events.on(Event::Init), None);
        assert_eq!(events.on(Event::InitApply(dpa("one", true))), None);
        assert_eq!(
            events.on(Event::InitDone),
            Some(Some(json!({"enable": true, "from": "one"})))
        );
        assert_eq!(events.on(Event::Delete(dpa("one", true))), Some(None));
    }
}
