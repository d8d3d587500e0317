//! Which items of a backup a reader may see: an item appears in a manifest, contents page, diff,
//! owner graph, dry-run or restore preview only for a caller who may read its resource where it
//! lives — `list` it in its namespace (cluster-wide for cluster-scoped kinds), or `get` the
//! Namespace object itself — exactly what Kubernetes RBAC would let them read directly. Reading a
//! NonAdminBackup is not enough: the aggregated `view` role may read backups but not Secrets.
//!
//! What is left out is counted per resource and namespace, never named. Pure: the caller asks
//! the API server about each [`ReadCheck`] and passes the answers in as a [`Readable`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::api::velero::artifacts::ResourceList;

use super::diff::ManifestDiff;
use super::item::{ItemIdentity, ManifestItem};
use super::overlap::OperationOverlap;
use super::preview::PreviewEntry;

/// The permission reading one item needs: the resource attributes of a SubjectAccessReview.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReadCheck {
    /// `list`, or `get` for one named object.
    pub verb: &'static str,
    /// API group; empty for the core group.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Namespace; empty for a cluster-wide check.
    pub namespace: String,
    /// Object name for `get`; empty for `list`.
    pub name: String,
}

impl ReadCheck {
    /// What reading the item `name` of `resource` in `group`, in `namespace` (none:
    /// cluster-scoped), needs. A Namespace object is read with `get` on itself — a
    /// RoleBinding in the namespace grants that, so tenants see their own namespace in their
    /// backups; anything else with `list` where it lives.
    pub fn of(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> Self {
        if group.is_empty() && resource == "namespaces" {
            return ReadCheck {
                verb: "get",
                group: String::new(),
                resource: resource.to_owned(),
                namespace: name.to_owned(),
                name: name.to_owned(),
            };
        }
        ReadCheck {
            verb: "list",
            group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.unwrap_or_default().to_owned(),
            name: String::new(),
        }
    }

    /// The sentence a reader sees for items this check denied ("you may not list secrets in
    /// team-a").
    fn denial(&self) -> String {
        let resource = if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        if self.verb == "get" {
            format!("you may not get {} {}", resource, self.name)
        } else if self.namespace.is_empty() {
            format!("you may not list {resource} cluster-wide")
        } else {
            format!("you may not list {resource} in {}", self.namespace)
        }
    }
}

/// Something a backup holds: a manifest item or a restore preview's entry.
pub trait BackedUpItem {
    /// API group.
    fn group(&self) -> &str;
    /// Plural resource.
    fn resource(&self) -> &str;
    /// Kind.
    fn kind(&self) -> &str;
    /// Namespace in the backup; none when cluster-scoped.
    fn namespace(&self) -> Option<&str>;
    /// Name.
    fn name(&self) -> &str;

    /// What reading it needs.
    fn read_check(&self) -> ReadCheck {
        ReadCheck::of(self.group(), self.resource(), self.namespace(), self.name())
    }
}

impl BackedUpItem for ManifestItem {
    fn group(&self) -> &str {
        &self.group
    }
    fn resource(&self) -> &str {
        &self.resource
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl BackedUpItem for PreviewEntry {
    fn group(&self) -> &str {
        &self.group
    }
    fn resource(&self) -> &str {
        &self.resource
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl BackedUpItem for ItemIdentity {
    fn group(&self) -> &str {
        // A resource never has a dot; a group may.
        self.group_resource
            .split_once('.')
            .map_or("", |(_, group)| group)
    }
    fn resource(&self) -> &str {
        self.group_resource
            .split_once('.')
            .map_or(self.group_resource.as_str(), |(resource, _)| resource)
    }
    fn kind(&self) -> &str {
        // An identity carries no kind; its resource names it.
        self.resource()
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// The distinct checks reading `items` needs (one SubjectAccessReview each).
pub fn read_checks<'a, T: BackedUpItem + 'a>(
    items: impl IntoIterator<Item = &'a T>,
) -> BTreeSet<ReadCheck> {
    items.into_iter().map(BackedUpItem::read_check).collect()
}

/// Items left out of an answer, per resource and namespace: counted, never named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct HiddenItems {
    /// API group; empty for the core group.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Kind.
    pub kind: String,
    /// Namespace; absent for cluster-scoped items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// How many items are hidden.
    pub count: u64,
    /// Why, in a sentence: `3 Secret items hidden: you may not list secrets in team-a`.
    pub message: String,
}

/// The checks a reader passed: what of a backup they may see.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Readable {
    granted: BTreeSet<ReadCheck>,
}

impl Readable {
    /// A reader who passed exactly `granted`.
    pub fn granted(granted: impl IntoIterator<Item = ReadCheck>) -> Self {
        Readable {
            granted: granted.into_iter().collect(),
        }
    }

    /// Whether the reader may see `item`.
    pub fn may_read<T: BackedUpItem>(&self, item: &T) -> bool {
        self.granted.contains(&item.read_check())
    }

    /// `items` split into what the reader may see (in their order) and what is hidden.
    pub fn split<T: BackedUpItem>(&self, items: Vec<T>) -> (Vec<T>, Vec<HiddenItems>) {
        let mut hidden = HiddenCounter::default();
        let visible = items
            .into_iter()
            .filter(|item| {
                let readable = self.may_read(item);
                if !readable {
                    hidden.count(item);
                }
                readable
            })
            .collect();
        (visible, hidden.finish())
    }

    /// A diff as the reader may see it: added, removed and changed items they may not read
    /// are left out and counted (an item changed between two backups is one item).
    pub fn diff(&self, diff: ManifestDiff) -> (ManifestDiff, Vec<HiddenItems>) {
        let mut hidden = HiddenCounter::default();
        let mut keep = |item: &ManifestItem| {
            let readable = self.may_read(item);
            if !readable {
                hidden.count(item);
            }
            readable
        };
        let added = diff.added.into_iter().filter(|item| keep(item)).collect();
        let removed = diff.removed.into_iter().filter(|item| keep(item)).collect();
        let changed = diff
            .changed
            .into_iter()
            .filter(|changed| keep(&changed.after))
            .collect();
        (
            ManifestDiff {
                added,
                removed,
                changed,
                unchanged: diff.unchanged,
            },
            hidden.finish(),
        )
    }
}

impl Readable {
    /// Overlaps as the reader may see them: shared objects they may not read are not named
    /// (the overlap's `total` still counts them, as the contents' counts do).
    pub fn overlaps(&self, overlaps: Vec<OperationOverlap>) -> Vec<OperationOverlap> {
        overlaps
            .into_iter()
            .map(|mut overlap| {
                overlap.items.retain(|identity| self.may_read(identity));
                overlap.truncated = (overlap.items.len() as u64) < overlap.total;
                overlap
            })
            .collect()
    }
}

/// The value of `key=` in a Velero (logrus) log line: up to the next space, or quoted.
fn log_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = line;
    loop {
        let at = rest.find(key)?;
        let starts_field = at == 0 || rest.as_bytes()[at - 1] == b' ';
        let after = &rest[at + key.len()..];
        if starts_field && let Some(value) = after.strip_prefix('=') {
            return Some(match value.strip_prefix('"') {
                Some(quoted) => quoted.split('"').next().unwrap_or_default(),
                None => value.split(' ').next().unwrap_or_default(),
            });
        }
        rest = after;
    }
}

/// What reading the item a log line is about needs (`resource=` with `namespace=`/`name=`, as
/// Velero logs each item it backs up or restores); `None` for lines about no item.
pub fn log_line_check(line: &str) -> Option<ReadCheck> {
    let group_resource = log_field(line, "resource").filter(|value| !value.is_empty())?;
    let (resource, group) = group_resource
        .split_once('.')
        .unwrap_or((group_resource, ""));
    let namespace = log_field(line, "namespace").filter(|value| !value.is_empty());
    let name = log_field(line, "name").unwrap_or_default();
    Some(ReadCheck::of(group, resource, namespace, name))
}

/// The checks reading a Velero log's item lines needs.
pub fn log_checks(text: &str) -> BTreeSet<ReadCheck> {
    text.lines().filter_map(log_line_check).collect()
}

/// A Velero log as the reader may see it: lines about items they may not list are left out
/// and a last line says how many.
pub fn readable_log(text: &str, readable: &Readable) -> String {
    let mut hidden = 0u64;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if log_line_check(line).is_some_and(|check| !readable.granted.contains(&check)) {
            hidden += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if hidden > 0 {
        out.push_str(&format!(
            "({hidden} log lines about items you may not list are not shown)\n"
        ));
    }
    out
}

/// The check each entry of a Velero resource list (`{"apps/v1/Deployment": ["ns/name"]}`)
/// needs, given `plural_of(group, kind)`; entries of unknown kinds get none (and are hidden).
fn resource_list_entries<'a>(
    list: &'a serde_json::Map<String, serde_json::Value>,
    plural_of: &'a dyn Fn(&str, &str) -> Option<String>,
) -> impl Iterator<Item = (&'a str, &'a str, Option<ReadCheck>)> + 'a {
    list.iter().flat_map(move |(key, names)| {
        let (api_version, kind) = key.rsplit_once('/').unwrap_or(("", key.as_str()));
        let group = api_version
            .rsplit_once('/')
            .map_or("", |(group, _version)| group);
        let plural = plural_of(group, kind);
        names
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(move |entry| {
                let (namespace, name) = match entry.split_once('/') {
                    Some((namespace, name)) => (Some(namespace), name),
                    None => (None, entry),
                };
                let check = plural
                    .as_deref()
                    .map(|plural| ReadCheck::of(group, plural, namespace, name));
                (key.as_str(), entry, check)
            })
    })
}

/// The checks reading a resource list needs.
pub fn resource_list_checks(
    list: &serde_json::Map<String, serde_json::Value>,
    plural_of: &dyn Fn(&str, &str) -> Option<String>,
) -> BTreeSet<ReadCheck> {
    resource_list_entries(list, plural_of)
        .filter_map(|(_, _, check)| check)
        .collect()
}

/// A resource list as the reader may see it: entries they may not list are left out (a kind
/// with none left disappears).
pub fn readable_resource_list(
    list: &serde_json::Map<String, serde_json::Value>,
    plural_of: &dyn Fn(&str, &str) -> Option<String>,
    readable: &Readable,
) -> ResourceList {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, entry, check) in resource_list_entries(list, plural_of) {
        if check.is_some_and(|check| readable.granted.contains(&check)) {
            out.entry(key.to_owned())
                .or_default()
                .push(entry.to_owned());
        }
    }
    ResourceList(out)
}

/// Group, resource and namespace of hidden items.
type HiddenKey = (String, String, Option<String>);

/// Counts hidden items per [`HiddenKey`], with their kind and the check they failed.
#[derive(Default)]
struct HiddenCounter {
    counts: BTreeMap<HiddenKey, (String, ReadCheck, u64)>,
}

impl HiddenCounter {
    fn count<T: BackedUpItem>(&mut self, item: &T) {
        let key = (
            item.group().to_owned(),
            item.resource().to_owned(),
            item.namespace().map(str::to_owned),
        );
        self.counts
            .entry(key)
            .or_insert_with(|| (item.kind().to_owned(), item.read_check(), 0))
            .2 += 1;
    }

    fn finish(self) -> Vec<HiddenItems> {
        self.counts
            .into_iter()
            .map(|((group, resource, namespace), (kind, check, count))| {
                let noun = if count == 1 { "item" } else { "items" };
                // A hidden Namespace object names itself in its check; say only the kind.
                let why = if check.verb == "get" {
                    format!("you may not get that {kind}")
                } else {
                    check.denial()
                };
                HiddenItems {
                    message: format!("{count} {kind} {noun} hidden: {why}"),
                    group,
                    resource,
                    kind,
                    namespace,
                    count,
                }
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::manifest::diff::diff_manifests;
    use crate::manifest::item::Manifest;

    fn item(group: &str, resource: &str, kind: &str, ns: Option<&str>, name: &str) -> ManifestItem {
        ManifestItem {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            resource: resource.into(),
            namespace: ns.map(Into::into),
            name: name.into(),
            labels: Default::default(),
            annotations: Default::default(),
            owners: Vec::new(),
            uid: None,
        }
    }

    fn backup() -> Vec<ManifestItem> {
        vec![
            item("", "configmaps", "ConfigMap", Some("team-a"), "settings"),
            item("", "namespaces", "Namespace", None, "team-a"),
            item("", "secrets", "Secret", Some("team-a"), "db-creds"),
            item("", "secrets", "Secret", Some("team-a"), "tls"),
            item("", "persistentvolumes", "PersistentVolume", None, "pv-1"),
            item("apps", "deployments", "Deployment", Some("team-a"), "web"),
        ]
    }

    /// What the aggregated `view` role grants in team-a: everything listed here but Secrets.
    fn viewer() -> Readable {
        Readable::granted([
            ReadCheck::of("", "configmaps", Some("team-a"), ""),
            ReadCheck::of("", "namespaces", None, "team-a"),
            ReadCheck::of("apps", "deployments", Some("team-a"), ""),
        ])
    }

    #[test]
    fn checks_are_list_where_the_item_lives_and_get_for_the_namespace_itself() {
        let checks = read_checks(&backup());
        assert_eq!(checks.len(), 5, "two Secrets need one check: {checks:?}");
        assert!(checks.contains(&ReadCheck {
            verb: "get",
            group: String::new(),
            resource: "namespaces".into(),
            namespace: "team-a".into(),
            name: "team-a".into(),
        }));
        assert!(checks.contains(&ReadCheck {
            verb: "list",
            group: String::new(),
            resource: "persistentvolumes".into(),
            namespace: String::new(),
            name: String::new(),
        }));
    }

    #[test]
    fn a_viewer_sees_no_secret_and_learns_only_how_many() {
        let (visible, hidden) = viewer().split(backup());
        let names: Vec<_> = visible.iter().map(|item| item.name.as_str()).collect();
        assert_eq!(names, ["settings", "team-a", "web"]);
        let messages: Vec<_> = hidden.iter().map(|h| h.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "1 PersistentVolume item hidden: you may not list persistentvolumes cluster-wide",
                "2 Secret items hidden: you may not list secrets in team-a",
            ]
        );
        let text = serde_json::to_string(&hidden).unwrap();
        assert!(!text.contains("db-creds") && !text.contains("tls") && !text.contains("pv-1"));
    }

    #[test]
    fn a_forged_item_of_another_namespace_is_hidden_without_its_name() {
        let mut items = backup();
        items.push(item(
            "",
            "configmaps",
            "ConfigMap",
            Some("team-b"),
            "their-config",
        ));
        let (visible, hidden) = viewer().split(items);
        assert!(visible.iter().all(|item| item.name != "their-config"));
        assert!(
            hidden
                .iter()
                .any(|h| h.namespace.as_deref() == Some("team-b")
                    && h.message
                        == "1 ConfigMap item hidden: you may not list configmaps in team-b")
        );
    }

    #[test]
    fn another_namespace_object_is_hidden_without_naming_it() {
        let items = vec![item("", "namespaces", "Namespace", None, "team-b")];
        let (visible, hidden) = viewer().split(items);
        assert!(visible.is_empty());
        assert_eq!(
            hidden[0].message,
            "1 Namespace item hidden: you may not get that Namespace"
        );
        assert!(!hidden[0].message.contains("team-b"));
    }

    #[test]
    fn diffs_leave_out_and_count_what_the_reader_may_not_list() {
        let before = Manifest::from_items(backup());
        let mut after_items = backup();
        after_items.retain(|item| item.name != "tls");
        after_items.push(item("", "secrets", "Secret", Some("team-a"), "new-secret"));
        after_items.push(item("", "configmaps", "ConfigMap", Some("team-a"), "more"));
        let after = Manifest::from_items(after_items);
        let (diff, hidden) = viewer().diff(diff_manifests(&before, &after));
        assert_eq!(diff.added.len(), 1);
        assert_eq!(diff.added[0].name, "more");
        assert!(diff.removed.is_empty());
        assert_eq!(
            hidden[0].count, 2,
            "one Secret added, one removed: {hidden:?}"
        );
    }

    #[test]
    fn log_lines_about_unlistable_items_are_left_out_and_counted() {
        let log = concat!(
            "time=\"2026-11-26T10:00:00Z\" level=info msg=\"Backing up backup\" backup=openshift-adp/x\n",
            "time=\"2026-11-26T10:00:01Z\" level=info msg=\"Backed up item\" name=db-creds namespace=team-a resource=secrets\n",
            "time=\"2026-11-26T10:00:01Z\" level=info msg=\"Backed up item\" name=settings namespace=team-a resource=configmaps\n",
            "time=\"2026-11-26T10:00:01Z\" level=info msg=\"Backed up item\" name=web namespace=team-a resource=deployments.apps\n",
            "time=\"2026-11-26T10:00:01Z\" level=info msg=\"Backed up item\" name=team-a namespace= resource=namespaces\n",
        );
        let checks = log_checks(log);
        assert_eq!(checks.len(), 4);
        let shown = readable_log(log, &viewer());
        assert!(!shown.contains("db-creds"), "{shown}");
        assert!(shown.contains("name=settings") && shown.contains("name=web"));
        assert!(
            shown.contains("name=team-a"),
            "the own namespace line stays: {shown}"
        );
        assert!(shown.contains("Backing up backup"));
        assert!(shown.ends_with("(1 log lines about items you may not list are not shown)\n"));
        assert_eq!(log_field("a=1 xname=2 name=\"b c\"", "name"), Some("b c"));
    }

    #[test]
    fn resource_lists_keep_only_listable_entries() {
        let list: serde_json::Map<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({
                "v1/Secret": ["team-a/db-creds", "team-a/tls"],
                "v1/ConfigMap": ["team-a/settings"],
                "apps/v1/Deployment": ["team-a/web"],
                "v1/Namespace": ["team-a"],
                "example.com/v1/Widget": ["team-a/w"]
            }))
            .unwrap();
        let plural_of = |group: &str, kind: &str| -> Option<String> {
            match (group, kind) {
                ("", "Secret") => Some("secrets".into()),
                ("", "ConfigMap") => Some("configmaps".into()),
                ("", "Namespace") => Some("namespaces".into()),
                ("apps", "Deployment") => Some("deployments".into()),
                _ => None,
            }
        };
        assert_eq!(resource_list_checks(&list, &plural_of).len(), 4);
        let shown = readable_resource_list(&list, &plural_of, &viewer());
        assert_eq!(
            serde_json::to_value(shown).unwrap(),
            serde_json::json!({
                "v1/ConfigMap": ["team-a/settings"],
                "apps/v1/Deployment": ["team-a/web"],
                "v1/Namespace": ["team-a"]
            })
        );
    }

    #[test]
    fn everything_granted_hides_nothing() {
        let all = Readable::granted(read_checks(&backup()));
        let (visible, hidden) = all.split(backup());
        assert_eq!(visible.len(), 6);
        assert!(hidden.is_empty());
    }
}
