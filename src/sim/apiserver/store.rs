//! The emulator's object store: objects by key, one global resourceVersion, a bounded event history
//! for watches resuming from a resourceVersion, and an owner index for garbage collection.
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use super::registry::ResourceKey;

/// Identifies one stored object. Ordered so that a resource's objects (and one namespace's
/// objects within it) form a contiguous range.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectKey {
    pub group: String,
    pub resource: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    /// Key of `name` in `namespace` of `resource`.
    pub fn new(resource: &ResourceKey, namespace: &str, name: &str) -> Self {
        ObjectKey {
            group: resource.group.clone(),
            resource: resource.resource.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The resource this object belongs to.
    pub fn resource_key(&self) -> ResourceKey {
        ResourceKey {
            group: self.group.clone(),
            resource: self.resource.clone(),
        }
    }
}

/// Kind of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    /// Wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded for watchers.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub resource_version: u64,
    pub key: ObjectKey,
    pub event_type: EventType,
    /// The object after the change (for deletions: as it was, with the deletion's resourceVersion).
    pub object: Arc<Value>,
    /// The object before the change, for selector transitions.
    pub previous: Option<Arc<Value>>,
}

/// Why a watch cannot start at the resourceVersion asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    pub requested: u64,
    pub oldest_available: u64,
}

/// Object storage with change history.
#[derive(Debug)]
pub struct Store {
    objects: BTreeMap<ObjectKey, Arc<Value>>,
    resource_version: u64,
    history: VecDeque<Arc<StoredEvent>>,
    history_capacity: usize,
    /// The resourceVersion before the oldest retained event: watches from at least this are served.
    history_floor: u64,
    sender: broadcast::Sender<Arc<StoredEvent>>,
    owners: HashMap<String, BTreeSet<ObjectKey>>,
    uids: HashMap<String, ObjectKey>,
}

/// Reads `metadata.uid`.
pub fn uid_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/uid").and_then(Value::as_str)
}

fn owner_uids(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Store {
    /// An empty store keeping `history_capacity` events for resuming watches.
    pub fn new(history_capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(history_capacity.max(16));
        Store {
            objects: BTreeMap::new(),
            resource_version: 1,
            history: VecDeque::new(),
            history_capacity: history_capacity.max(1),
            history_floor: 1,
            sender,
            owners: HashMap::new(),
            uids: HashMap::new(),
        }
    }

    /// The newest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<Value>> {
        self.objects.get(key).cloned()
    }

    /// The key of the object with `uid`, if it exists.
    pub fn key_of_uid(&self, uid: &str) -> Option<&ObjectKey> {
        self.uids.get(uid)
    }

    /// Objects whose ownerReferences name `uid`.
    pub fn dependents_of(&self, uid: &str) -> Vec<ObjectKey> {
        self.owners
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Objects of `resource`, in one namespace or all, in key order, starting after `after` (a name,
    /// or `namespace/name` when listing across namespaces).
    pub fn list(
        &self,
        resource: &ResourceKey,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = (&ObjectKey, &Arc<Value>)> {
        let low = ObjectKey::new(resource, namespace.unwrap_or(""), "");
        let resource = resource.clone();
        let namespace = namespace.map(str::to_string);
        let after = after.cloned();
        self.objects
            .range(low..)
            .take_while(move |(k, _)| {
                k.group == resource.group
                    && k.resource == resource.resource
                    && namespace.as_ref().is_none_or(|ns| &k.namespace == ns)
            })
            .filter(move |(k, _)| after.as_ref().is_none_or(|a| *k > a))
    }

    /// Every object, in key order (persistence).
    pub fn all(&self) -> impl Iterator<Item = (&ObjectKey, &Arc<Value>)> {
        self.objects.iter()
    }

    /// Whether any object of a namespaced resource lives in `namespace` (namespace finalization).
    pub fn namespace_is_empty(&self, namespace: &str) -> bool {
        !self.objects.keys().any(|k| k.namespace == namespace)
    }

    /// Keys of every object in `namespace`.
    pub fn keys_in_namespace(&self, namespace: &str) -> Vec<ObjectKey> {
        self.objects
            .keys()
            .filter(|k| k.namespace == namespace)
            .cloned()
            .collect()
    }

    /// A receiver of every future change.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoredEvent>> {
        self.sender.subscribe()
    }

    /// Retained events after `resource_version`, or [`TooOld`] when some were already dropped.
    pub fn events_since(&self, resource_version: u64) -> Result<Vec<Arc<StoredEvent>>, TooOld> {
        if resource_version < self.history_floor {
            return Err(TooOld {
                requested: resource_version,
                oldest_available: self.history_floor,
            });
        }
        Ok(self
            .history
            .iter()
            .filter(|e| e.resource_version > resource_version)
            .cloned()
            .collect())
    }

    /// Stores `object` (create or replace), stamping the next resourceVersion, and records the event.
    pub fn put(&mut self, key: ObjectKey, mut object: Value) -> Arc<Value> {
        self.resource_version += 1;
        let rv = self.resource_version;
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let object = Arc::new(object);
        let previous = self.objects.insert(key.clone(), object.clone());
        if let Some(prev) = &previous {
            self.unindex(&key, prev);
        }
        self.index(&key, &object);
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(StoredEvent {
            resource_version: rv,
            key,
            event_type,
            object: object.clone(),
            previous,
        });
        object
    }

    /// Removes an object, recording a DELETED event carrying a fresh resourceVersion.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<Arc<Value>> {
        let previous = self.objects.remove(key)?;
        self.unindex(key, &previous);
        self.resource_version += 1;
        let rv = self.resource_version;
        let mut object = (*previous).clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let object = Arc::new(object);
        self.record(StoredEvent {
            resource_version: rv,
            key: key.clone(),
            event_type: EventType::Deleted,
            object: object.clone(),
            previous: Some(previous),
        });
        Some(object)
    }

    /// Loads objects as persisted, without events (start-up).
    pub fn restore(&mut self, resource_version: u64, objects: Vec<(ObjectKey, Value)>) {
        for (key, object) in objects {
            let object = Arc::new(object);
            self.index(&key, &object);
            self.objects.insert(key, object);
        }
        self.resource_version = resource_version.max(self.resource_version);
        self.history.clear();
        self.history_floor = self.resource_version;
    }

    fn record(&mut self, event: StoredEvent) {
        let event = Arc::new(event);
        if self.history.len() == self.history_capacity
            && let Some(dropped) = self.history.pop_front()
        {
            self.history_floor = dropped.resource_version;
        }
        self.history.push_back(event.clone());
        // No receivers is normal (nobody watching).
        let _ = self.sender.send(event);
    }

    fn index(&mut self, key: &ObjectKey, object: &Value) {
        if let Some(uid) = uid_of(object) {
            self.uids.insert(uid.to_string(), key.clone());
        }
        for owner in owner_uids(object) {
            self.owners.entry(owner).or_default().insert(key.clone());
        }
    }

    fn unindex(&mut self, key: &ObjectKey, object: &Value) {
        if let Some(uid) = uid_of(object)
            && self.uids.get(uid) == Some(key)
        {
            self.uids.remove(uid);
        }
        for owner in owner_uids(object) {
            if let Some(set) = self.owners.get_mut(&owner) {
                set.remove(key);
                if set.is_empty() {
                    self.owners.remove(&owner);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res() -> ResourceKey {
        ResourceKey {
            group: "".into(),
            resource: "configmaps".into(),
        }
    }

    #[test]
    fn put_stamps_increasing_resource_versions_and_events() {
        let mut s = Store::new(10);
        let k = ObjectKey::new(&res(), "a", "x");
        let o1 = s.put(k.clone(), json!({"metadata": {"name": "x", "uid": "u1"}}));
        let o2 = s.put(k.clone(), json!({"metadata": {"name": "x", "uid": "u1"}}));
        let rv1: u64 = o1["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let rv2: u64 = o2["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(rv2 > rv1);
        let events = s.events_since(rv1).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event_type, EventType::Modified);
        let deleted = s.remove(&k).unwrap();
        assert!(
            deleted["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
                > rv2
        );
        assert!(s.key_of_uid("u1").is_none());
    }

    #[test]
    fn history_overflow_makes_old_versions_too_old() {
        let mut s = Store::new(3);
        let start = s.resource_version();
        for i in 0..5 {
            s.put(
                ObjectKey::new(&res(), "a", &format!("o{i}")),
                json!({"metadata": {}}),
            );
        }
        assert!(s.events_since(start).is_err());
        let recent = s.resource_version() - 2;
        assert_eq!(s.events_since(recent).unwrap().len(), 2);
    }

    #[test]
    fn list_is_scoped_to_resource_and_namespace() {
        let mut s = Store::new(10);
        s.put(ObjectKey::new(&res(), "a", "x"), json!({"metadata": {}}));
        s.put(ObjectKey::new(&res(), "b", "y"), json!({"metadata": {}}));
        let other = ResourceKey {
            group: "".into(),
            resource: "secrets".into(),
        };
        s.put(ObjectKey::new(&other, "a", "z"), json!({"metadata": {}}));
        assert_eq!(s.list(&res(), Some("a"), None).count(), 1);
        assert_eq!(s.list(&res(), None, None).count(), 2);
        let first = ObjectKey::new(&res(), "a", "x");
        assert_eq!(s.list(&res(), None, Some(&first)).count(), 1);
    }

    #[test]
    fn owner_index_tracks_dependents() {
        let mut s = Store::new(10);
        let k = ObjectKey::new(&res(), "a", "child");
        s.put(
            k.clone(),
            json!({"metadata": {"uid": "c", "ownerReferences": [{"uid": "p", "name": "parent"}]}}),
        );
        assert_eq!(s.dependents_of("p"), vec![k.clone()]);
        s.put(k.clone(), json!({"metadata": {"uid": "c"}}));
        assert!(s.dependents_of("p").is_empty());
    }
}
