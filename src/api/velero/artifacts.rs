//! The JSON artifacts Velero uploads beside a backup or restore: its results (`pkg/util/results`:
//! errors and warnings, each split into Velero's own, the cluster's and per namespace) and a
//! backup's resource list (`<apiVersion>/<Kind>` → `<namespace>/<name>` entries).
//!
//! Read from object storage, so from a source NAC does not control: parsing keeps exactly
//! these fields, and what does not parse is not passed on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One severity of Velero's results (`results.Result`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VeleroResultSet {
    /// Messages about Velero itself.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub velero: Vec<String>,
    /// Messages about cluster-scoped resources.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub cluster: Vec<String>,
    /// Messages per namespace.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub namespaces: BTreeMap<String, Vec<String>>,
}

impl VeleroResultSet {
    /// How many messages.
    pub fn len(&self) -> usize {
        self.velero.len()
            + self.cluster.len()
            + self.namespaces.values().map(Vec::len).sum::<usize>()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Velero's results of a backup or restore (`<name>-results.gz`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VeleroResults {
    /// Errors.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub errors: VeleroResultSet,
    /// Warnings.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub warnings: VeleroResultSet,
}

impl VeleroResults {
    /// Parses Velero's results file; `None` when it is not that shape.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

/// A backup's resource list (`<backup>-resource-list.json.gz`): for each `<apiVersion>/<Kind>`
/// (`v1/Secret`, `apps/v1/Deployment`), the `<namespace>/<name>` (or, cluster-scoped, `<name>`)
/// of each item backed up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct ResourceList(pub BTreeMap<String, Vec<String>>);

/// Velero writes `null` for an empty list or map (Go's nil slice): read it as empty.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn velero_s_results_with_nulls_and_missing_parts_parse() {
        let results = VeleroResults::parse(
            br#"{"errors": {"velero": null, "namespaces": {"team-a": ["Error backing up item resource: /pods name: /web error: /boom"]}}, "warnings": null}"#,
        )
        .unwrap();
        assert_eq!(results.errors.len(), 1);
        assert!(results.warnings.is_empty());
        assert_eq!(
            serde_json::to_value(&results).unwrap(),
            serde_json::json!({
                "errors": {"namespaces": {"team-a": ["Error backing up item resource: /pods name: /web error: /boom"]}},
                "warnings": {}
            })
        );
    }

    #[test]
    fn what_is_not_velero_s_shape_does_not_parse() {
        assert_eq!(VeleroResults::parse(b"not json"), None);
        assert_eq!(VeleroResults::parse(br#"{"errors": ["flat"]}"#), None);
        assert_eq!(
            VeleroResults::parse(br#"{"errors": {"velero": [1]}}"#),
            None
        );
    }

    #[test]
    fn a_resource_list_is_a_map_of_kinds_to_entries() {
        let list: ResourceList = serde_json::from_str(
            r#"{"v1/Secret": ["team-a/db"], "apps/v1/Deployment": ["team-a/web"]}"#,
        )
        .unwrap();
        assert_eq!(list.0["v1/Secret"], ["team-a/db"]);
        assert!(serde_json::from_str::<ResourceList>(r#"{"v1/Secret": "team-a/db"}"#).is_err());
    }
}
