//! CustomResourceDefinitions generated from the Rust types, and their YAML rendering for
//! `deploy/base/crds/` (NAC's), `deploy/dev/velero-crds/` (Velero's, for tests and `nac demo`)
//! and the `nac crds` command.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::CustomResourceExt;

use super::StatusSubresource;
use super::nonadmin::{
    BackupBucket, BackupEntry, NonAdminBackup, NonAdminBackupStorageLocation,
    NonAdminBackupStorageLocationRequest, NonAdminDownloadRequest, NonAdminRestore,
    NonAdminSchedule,
};
use super::velero::{
    Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore, Schedule,
    ServerStatusRequest,
};

/// Failure to render a CRD.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The CRD could not be serialized as YAML.
    #[error("cannot render CRD {name} as YAML: {source}")]
    Yaml {
        /// `metadata.name` of the CRD.
        name: String,
        /// The serializer's error.
        #[source]
        source: serde_yaml::Error,
    },
}

/// NAC's own CRDs (`oadp.openshift.io`), in a stable order.
pub fn nac_crds() -> Vec<CustomResourceDefinition> {
    vec![
        crd_of::<NonAdminBackup>(),
        crd_of::<NonAdminRestore>(),
        crd_of::<NonAdminBackupStorageLocation>(),
        crd_of::<NonAdminBackupStorageLocationRequest>(),
        crd_of::<NonAdminDownloadRequest>(),
        crd_of::<NonAdminSchedule>(),
        crd_of::<super::nonadmin::DeletionAction>(),
        crd_of::<BackupBucket>(),
        crd_of::<BackupEntry>(),
    ]
}

/// Velero's CRDs (`velero.io`) for the kinds NAC uses, in a stable order. Production clusters
/// get Velero's own; these serve tests, the emulator and `nac demo`.
pub fn velero_crds() -> Vec<CustomResourceDefinition> {
    vec![
        crd_of::<Backup>(),
        crd_of::<Restore>(),
        crd_of::<BackupStorageLocation>(),
        crd_of::<DeleteBackupRequest>(),
        crd_of::<DownloadRequest>(),
        crd_of::<Schedule>(),
        crd_of::<ServerStatusRequest>(),
    ]
}

/// The CRD of `K`, tidied: kube's derive always declares the status subresource when the kind
/// has a status, so it is removed where the real CRD has none (see [`StatusSubresource`]); and
/// optional enums list `null` among their values, which `nullable: true` already allows.
fn crd_of<K: CustomResourceExt + StatusSubresource>() -> CustomResourceDefinition {
    let mut crd = K::crd();
    for version in &mut crd.spec.versions {
        if !K::HAS_STATUS_SUBRESOURCE
            && let Some(subresources) = version.subresources.as_mut()
        {
            subresources.status = None;
            if subresources.scale.is_none() {
                version.subresources = None;
            }
        }
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|validation| validation.open_api_v3_schema.as_mut())
        {
            visit_schemas_mut(schema, &mut |schema| {
                drop_null_enum_value(schema);
                drop_unrecognized_integer_format(schema);
            });
        }
    }
    crd
}

fn drop_null_enum_value(schema: &mut JSONSchemaProps) {
    if let Some(values) = schema.enum_.as_mut() {
        values.retain(|value| !value.0.is_null());
    }
}

/// schemars names unsigned and small integers' formats (`uint32`, `uint8`, `int16` …), which
/// Kubernetes does not know (the API server warns `unrecognized format "uint32"`): the format
/// goes, the `minimum: 0` schemars adds for unsigned types stays.
fn drop_unrecognized_integer_format(schema: &mut JSONSchemaProps) {
    if schema
        .format
        .as_deref()
        .is_some_and(|format| format.starts_with("uint") || matches!(format, "int8" | "int16"))
    {
        schema.format = None;
    }
}

/// Calls `visit` on `schema` and every schema nested in it.
fn visit_schemas_mut(schema: &mut JSONSchemaProps, visit: &mut dyn FnMut(&mut JSONSchemaProps)) {
    visit(schema);
    let maps = [
        schema.properties.as_mut(),
        schema.pattern_properties.as_mut(),
        schema.definitions.as_mut(),
    ];
    for map in maps.into_iter().flatten() {
        for child in map.values_mut() {
            visit_schemas_mut(child, visit);
        }
    }
    let lists = [
        schema.all_of.as_mut(),
        schema.any_of.as_mut(),
        schema.one_of.as_mut(),
    ];
    for list in lists.into_iter().flatten() {
        for child in list {
            visit_schemas_mut(child, visit);
        }
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(child)) => visit_schemas_mut(child, visit),
        Some(JSONSchemaPropsOrArray::Schemas(children)) => {
            for child in children {
                visit_schemas_mut(child, visit);
            }
        }
        None => {}
    }
    for child in [
        schema.additional_properties.as_mut(),
        schema.additional_items.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        if let JSONSchemaPropsOrBool::Schema(child) = child {
            visit_schemas_mut(child, visit);
        }
    }
    if let Some(child) = schema.not.as_mut() {
        visit_schemas_mut(child, visit);
    }
}

/// controller-gen style file name: `<group>_<plural>.yaml`.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// One CRD as a YAML document (without a leading `---`).
pub fn render_yaml(crd: &CustomResourceDefinition) -> Result<String, CrdError> {
    serde_yaml::to_string(crd).map_err(|source| CrdError::Yaml {
        name: crd.metadata.name.clone().unwrap_or_default(),
        source,
    })
}

/// All NAC CRDs, and Velero's too when `include_velero`, as one multi-document YAML stream.
pub fn all_crds_yaml(include_velero: bool) -> Result<String, CrdError> {
    let mut crds = nac_crds();
    if include_velero {
        crds.extend(velero_crds());
    }
    let mut stream = String::new();
    for crd in &crds {
        stream.push_str("---\n");
        stream.push_str(&render_yaml(crd)?);
    }
    Ok(stream)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn all_schemas(crd: &CustomResourceDefinition) -> Vec<JSONSchemaProps> {
        let mut found = Vec::new();
        for version in &crd.spec.versions {
            if let Some(mut schema) = version
                .schema
                .clone()
                .and_then(|validation| validation.open_api_v3_schema)
            {
                visit_schemas_mut(&mut schema, &mut |s| found.push(s.clone()));
            }
        }
        found
    }

    #[test]
    fn integer_formats_are_ones_kubernetes_knows_and_unsigned_keeps_its_minimum() {
        for crd in nac_crds().iter().chain(velero_crds().iter()) {
            for schema in all_schemas(crd) {
                if let Some(format) = schema.format.as_deref() {
                    assert!(
                        !format.starts_with("uint") && !matches!(format, "int8" | "int16"),
                        "{}: format {format}",
                        crd.spec.names.kind
                    );
                }
            }
        }
        let bucket = crd_of::<BackupBucket>();
        let max_entries = all_schemas(&bucket)
            .into_iter()
            .find_map(|s| s.properties.and_then(|p| p.get("maxEntries").cloned()))
            .expect("BackupBucket has spec.maxEntries");
        assert_eq!(max_entries.type_.as_deref(), Some("integer"));
        assert_eq!(max_entries.format, None);
        assert_eq!(max_entries.minimum, Some(0.0));
    }

    #[test]
    fn only_past_times_are_date_columns() {
        // kubectl prints a `date` column as an age, `<invalid>` for a future time: a column that
        // may hold a future time (next run, purge after) is a string.
        for crd in nac_crds() {
            for column in crd
                .spec
                .versions
                .iter()
                .flat_map(|v| v.additional_printer_columns.iter().flatten())
            {
                if column.type_ == "date" {
                    assert_eq!(
                        column.json_path, ".metadata.creationTimestamp",
                        "{} column {}",
                        crd.spec.names.kind, column.name
                    );
                }
            }
        }
    }

    #[test]
    fn file_names_follow_controller_gen() {
        let names: Vec<_> = nac_crds().iter().map(crd_file_name).collect();
        assert!(names.contains(&"oadp.openshift.io_nonadminbackups.yaml".to_owned()));
        let names: Vec<_> = velero_crds().iter().map(crd_file_name).collect();
        assert!(names.contains(&"velero.io_backups.yaml".to_owned()));
    }

    #[test]
    fn status_subresource_mirrors_velero() {
        let has_status = |crd: &CustomResourceDefinition| {
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
        };
        for crd in velero_crds() {
            let expected = matches!(
                crd.spec.names.kind.as_str(),
                "DeleteBackupRequest" | "ServerStatusRequest"
            );
            assert_eq!(has_status(&crd), expected, "{}", crd.spec.names.kind);
        }
        assert!(nac_crds().iter().all(has_status));
    }

    #[test]
    fn stream_has_one_document_per_crd() {
        let nac_only = all_crds_yaml(false).unwrap();
        assert_eq!(nac_only.matches("---\n").count(), nac_crds().len());
        let everything = all_crds_yaml(true).unwrap();
        assert_eq!(
            everything.matches("\n---\n").count() + 1,
            nac_crds().len() + velero_crds().len()
        );
        for document in everything.split("---\n").filter(|d| !d.is_empty()) {
            let crd: CustomResourceDefinition = serde_yaml::from_str(document).unwrap();
            assert!(crd.metadata.name.is_some());
        }
    }
}
