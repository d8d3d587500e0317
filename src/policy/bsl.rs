//! NonAdminBackupStorageLocation: validating `spec.backupStorageLocationSpec`, its credential,
//! the object-store prefix, and building the Velero `BackupStorageLocationSpec`.
//!
//! Upstream (`migtools/oadp-non-admin`, `ValidateBslSpec` and the NABSL controller): no
//! `default: true`, credential name and key required, the Secret must exist in the tenant's
//! namespace, admin-enforced fields (`enforceBSLSpec`) filled where unset, the credential
//! pointed at the copy in the OADP namespace, and the prefix forced to `<namespace>` or
//! `<namespace>/<prefix>` (`ComputePrefixForObjectStorage`) so backup sync can tell tenants
//! apart. The backup sync period must stay below NAC's (oadp-operator PR 1638 checks this for
//! the default location; NAC checks tenant locations too).
//!
//! NAC adds, for issue 4: `..`/`.` prefix segments refused (a tenant must never reach another
//! tenant's prefix); credential files that borrow the Velero pod's cloud identity refused
//! ([`check_bsl_credential`]); `objectStorage.caCertRef` refused (it names a Secret in the OADP
//! namespace, which the tenant does not own); `config` keys that make the plugin read the
//! Velero pod's own files or environment refused
//! ([`crate::policy::credentials::POD_IDENTITY_CONFIG_KEYS`]); and endpoint
//! allow-lists through the policy's `allowed` rules (e.g. `config.s3Url`).
//!
//! NAC adds, for issue 17: every URL of the location's `config` (`s3Url`, `publicUrl`,
//! `storageAccountURI`, ... see [`crate::policy::endpoints`]) must pass the administrator's
//! storage-endpoint rule (no loopback, metadata, private or cluster-internal endpoints unless
//! listed in `storageEndpoints.allow`), because NAC itself downloads what Velero signs with
//! them; and an AWS credential must hold static keys for the profile Velero uses
//! ([`check_static_credentials`]) unless the administrator sets `allowAmbientIdentity`.

use k8s_openapi::api::core::v1::SecretKeySelector;

use crate::api::common::GoDuration;
use crate::api::velero::BackupStorageLocationSpec;
use crate::policy::config::{EffectivePolicy, SpecKind};
use crate::policy::credentials::{
    aws_profile_has_static_keys, is_pod_identity_config_key, pod_identity_markers,
};
use crate::policy::endpoints::{EndpointRefusal, StorageEndpoints, UrlProblem, config_urls};
use crate::policy::rules::as_duration;
use crate::policy::{PolicyViolation, ViolationReason, into_result};

const PREFIX: &str = "spec.backupStorageLocationSpec";
const KIND: &str = "NonAdminBackupStorageLocation";

/// The object-store prefix of a tenant's Velero BSL: `<namespace>` or
/// `<namespace>/<tenant prefix>`, with repeated, leading and trailing slashes removed.
///
/// Namespace names cannot contain `/`, so two tenants' prefixes never equal or contain each
/// other; `.` and `..` segments (which some stores and tools resolve) and backslashes are
/// refused.
pub fn velero_bsl_prefix(
    namespace: &str,
    tenant_prefix: Option<&str>,
) -> Result<String, PolicyViolation> {
    let field = format!("{PREFIX}.objectStorage.prefix");
    let segments: Vec<&str> = tenant_prefix
        .unwrap_or_default()
        .split('/')
        .filter(|segment| !segment.is_empty())
        .collect();
    for segment in &segments {
        let refused = *segment == ".."
            || *segment == "."
            || segment.contains('\\')
            || segment.chars().any(char::is_control);
        if refused {
            return Err(PolicyViolation::new(
                ViolationReason::Restricted,
                &field,
                format!(
                    "{KIND} {field} is restricted, can not contain {segment:?} (prefixes always stay under {namespace}/)"
                ),
            ));
        }
    }
    Ok(std::iter::once(namespace)
        .chain(segments)
        .collect::<Vec<_>>()
        .join("/"))
}

/// Validates a NonAdminBackupStorageLocation's spec in `namespace`. `secret_exists` tells
/// whether the credential Secret named by the spec exists in `namespace` (the caller looked).
/// Returns every violation.
pub fn validate_bsl_spec(
    namespace: &str,
    spec: &BackupStorageLocationSpec,
    policy: &EffectivePolicy,
    secret_exists: bool,
) -> Result<(), Vec<PolicyViolation>> {
    let mut violations = Vec::new();
    let missing = |field: &str| {
        let path = format!("{PREFIX}.{field}");
        PolicyViolation::new(
            ViolationReason::Missing,
            &path,
            format!("{KIND} {path} is not set"),
        )
    };

    if spec.default == Some(true) {
        violations.push(PolicyViolation::new(
            ViolationReason::Restricted,
            format!("{PREFIX}.default"),
            format!("{KIND} cannot be used as a default BSL"),
        ));
    }
    // Upstream's texts name the field `spec.bslSpec.…`; ours follow with the CRD's path.
    let credential_missing = |field: &str, upstream: &str| {
        let path = format!("{PREFIX}.{field}");
        PolicyViolation::new(
            ViolationReason::Missing,
            &path,
            format!("{KIND} {upstream} ({path} is not set)"),
        )
    };
    const NAME_OR_KEY: &str =
        "spec.bslSpec.credential.name or spec.bslSpec.credential.key is not set";
    match &spec.credential {
        None => violations.push(credential_missing(
            "credential",
            "spec.bslSpec.credential is not set",
        )),
        Some(credential) if credential.name.is_empty() || credential.key.is_empty() => {
            if credential.name.is_empty() {
                violations.push(credential_missing("credential.name", NAME_OR_KEY));
            }
            if credential.key.is_empty() {
                violations.push(credential_missing("credential.key", NAME_OR_KEY));
            }
        }
        Some(credential) if !secret_exists => violations.push(PolicyViolation::new(
            ViolationReason::Invalid,
            format!("{PREFIX}.credential.name"),
            // Upstream's message, which embeds the API server's not-found text.
            format!(
                "BSL credentials secret not found: secrets \"{}\" not found",
                credential.name
            ),
        )),
        Some(_) => {}
    }
    if spec.provider.is_empty() {
        violations.push(missing("provider"));
    }
    if spec.object_storage.bucket.is_empty() {
        violations.push(missing("objectStorage.bucket"));
    }
    if spec.object_storage.ca_cert_ref.is_some() {
        let path = format!("{PREFIX}.objectStorage.caCertRef");
        violations.push(PolicyViolation::new(
            ViolationReason::Restricted,
            &path,
            format!("{KIND} {path} is restricted, it names a Secret in the OADP namespace; use objectStorage.caCert"),
        ));
    }
    for key in spec.config.iter().flatten().map(|(key, _)| key) {
        if is_pod_identity_config_key(key) {
            let path = format!("{PREFIX}.config.{key}");
            violations.push(PolicyViolation::new(
                ViolationReason::Restricted,
                &path,
                format!(
                    "{KIND} {path} is restricted, it makes Velero use the Velero pod's own files, environment or identity"
                ),
            ));
        }
    }

    let rules = policy.rules(SpecKind::BackupStorageLocation);
    match serde_json::to_value(spec) {
        Ok(tenant) => {
            violations.extend(rules.enforced_differences(&tenant, PREFIX));
            let mut filled = tenant;
            rules.fill(&mut filled);
            violations.extend(rules.limit_violations(&filled, PREFIX));
            let prefix = filled
                .pointer("/objectStorage/prefix")
                .and_then(|prefix| prefix.as_str());
            if let Err(violation) = velero_bsl_prefix(namespace, prefix) {
                violations.push(violation);
            }
            if let Some(violation) = sync_period_violation(filled.get("backupSyncPeriod"), policy) {
                violations.push(violation);
            }
            // The config Velero will get (administrator values filled in).
            let provider = filled
                .get("provider")
                .and_then(|provider| provider.as_str())
                .unwrap_or_default();
            let config: std::collections::BTreeMap<String, String> = filled
                .get("config")
                .and_then(|config| config.as_object())
                .map(|config| {
                    config
                        .iter()
                        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            violations.extend(endpoint_violations(
                provider,
                &config,
                &policy.storage_endpoints,
            ));
        }
        Err(error) => violations.push(unreadable(&error)),
    }
    into_result(violations)
}

/// A tenant location must sync from its bucket more often than NAC's backup sync runs, or
/// NAC looks for backups Velero has not synced yet. Zero (sync off) on either side is fine.
fn sync_period_violation(
    value: Option<&serde_json::Value>,
    policy: &EffectivePolicy,
) -> Option<PolicyViolation> {
    let value = value.filter(|value| !crate::policy::rules::is_unset(value))?;
    let field = format!("{PREFIX}.backupSyncPeriod");
    let Some(period) = as_duration(value) else {
        return Some(PolicyViolation::new(
            ViolationReason::Invalid,
            &field,
            format!(
                "{KIND} {field} ({}) is not a valid duration",
                crate::policy::rules::display_value(value)
            ),
        ));
    };
    let nac = policy.settings.backup_sync_period;
    if period.is_zero() || nac.is_zero() || period < nac {
        return None;
    }
    Some(PolicyViolation::new(
        ViolationReason::Invalid,
        &field,
        format!(
            "{KIND} {field} ({}) can not be greater or equal the non-admin backupSyncPeriod ({})",
            GoDuration::from_std(period),
            GoDuration::from_std(nac)
        ),
    ))
}

/// The URLs of a location's `config` that the storage-endpoint rule refuses.
fn endpoint_violations(
    provider: &str,
    config: &std::collections::BTreeMap<String, String>,
    rules: &StorageEndpoints,
) -> Vec<PolicyViolation> {
    config_urls(provider, config)
        .into_iter()
        .filter_map(|found| {
            let refusal = rules.check_url(&found.url).err()?;
            let path = format!("{PREFIX}.config.{}", found.key);
            let (reason, hint) = match &refusal {
                EndpointRefusal::Url(UrlProblem::NotAUrl) => (ViolationReason::Invalid, ""),
                EndpointRefusal::Url(_) => (ViolationReason::Restricted, ""),
                EndpointRefusal::NotListed => (
                    ViolationReason::NotAllowed,
                    " (nac-policy storageEndpoints.allow)",
                ),
                EndpointRefusal::Name { .. } | EndpointRefusal::Address { .. } => (
                    ViolationReason::Restricted,
                    "; NAC downloads from tenant storage inside the cluster, so it must be at a public address unless the administrator lists the endpoint in nac-policy storageEndpoints.allow",
                ),
            };
            Some(PolicyViolation::new(
                reason,
                &path,
                format!("{KIND} {path} is restricted, {refusal}{hint}"),
            ))
        })
        .collect()
}

fn unreadable(error: &serde_json::Error) -> PolicyViolation {
    PolicyViolation::new(
        ViolationReason::Invalid,
        PREFIX,
        format!("{KIND} {PREFIX} could not be checked against the administrator's policy: {error}"),
    )
}

/// Checks the content of the tenant's credential (the Secret value under `credential.key`):
/// refuses files that would use the Velero pod's own cloud identity.
pub fn check_bsl_credential(secret_text: &str) -> Result<(), PolicyViolation> {
    let markers = pod_identity_markers(secret_text);
    if markers.is_empty() {
        return Ok(());
    }
    let found = markers
        .iter()
        .map(|marker| marker.description())
        .collect::<Vec<_>>()
        .join(", ");
    Err(PolicyViolation::new(
        ViolationReason::Restricted,
        format!("{PREFIX}.credential"),
        format!(
            "{KIND} {PREFIX}.credential is restricted, the credential would use the Velero pod's own cloud identity ({found}); provide long-term credentials of your own"
        ),
    ))
}

/// Checks that an AWS credential (the Secret value under `credential.key`) holds static keys
/// for the profile Velero will use (`config.profile`, else `default`), directly or through
/// `source_profile`: without them the AWS SDK falls back to the Velero pod's environment, web
/// identity, or its node's instance metadata, i.e. the administrator's identity. Other
/// providers, and administrators who set `allowAmbientIdentity`, pass.
pub fn check_static_credentials(
    spec: &BackupStorageLocationSpec,
    secret_text: &str,
    policy: &EffectivePolicy,
) -> Result<(), PolicyViolation> {
    let provider = spec.provider.trim().to_ascii_lowercase();
    let aws = provider == "aws" || provider == "velero.io/aws";
    if !aws || policy.settings.allow_ambient_identity {
        return Ok(());
    }
    let profile = spec
        .config
        .as_ref()
        .and_then(|config| config.get("profile"))
        .map(String::as_str)
        .filter(|profile| !profile.is_empty())
        .unwrap_or("default");
    if aws_profile_has_static_keys(secret_text, profile) {
        return Ok(());
    }
    Err(PolicyViolation::new(
        ViolationReason::Restricted,
        format!("{PREFIX}.credential"),
        format!(
            "{KIND} {PREFIX}.credential is restricted, the AWS credential holds no static keys (aws_access_key_id and aws_secret_access_key) for profile {profile:?}, so Velero would use the Velero pod's or its node's own identity; provide long-term keys of your own"
        ),
    ))
}

/// Builds the Velero `BackupStorageLocationSpec` for a validated tenant location in
/// `namespace`: administrator values filled in, never the default location, the credential
/// pointing at NAC's copy `secret_name_in_oadp_namespace` / `key`, the prefix forced under the
/// namespace, and refused `config` keys and `caCertRef` dropped.
pub fn build_velero_bsl_spec(
    namespace: &str,
    spec: &BackupStorageLocationSpec,
    policy: &EffectivePolicy,
    secret_name_in_oadp_namespace: &str,
    key: &str,
) -> Result<BackupStorageLocationSpec, PolicyViolation> {
    let mut document = serde_json::to_value(spec).map_err(|error| unreadable(&error))?;
    policy
        .rules(SpecKind::BackupStorageLocation)
        .fill(&mut document);
    let mut velero: BackupStorageLocationSpec =
        serde_json::from_value(document).map_err(|error| unreadable(&error))?;

    velero.default = None;
    velero.credential = Some(SecretKeySelector {
        name: secret_name_in_oadp_namespace.to_owned(),
        key: key.to_owned(),
        optional: None,
    });
    velero.object_storage.prefix = Some(velero_bsl_prefix(
        namespace,
        velero.object_storage.prefix.as_deref(),
    )?);
    velero.object_storage.ca_cert_ref = None;
    if let Some(config) = velero.config.as_mut() {
        config.retain(|key, _| !is_pod_identity_config_key(key));
    }
    Ok(velero)
}

/// A bucket of the administrator's shared backup pool (a `BackupBucket`), as far as tenant
/// locations are concerned: which provider and bucket it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolBucketRef {
    /// Velero object-store provider, e.g. `aws`.
    pub provider: String,
    /// Bucket name.
    pub bucket: String,
}

/// Velero adds `velero.io/` to provider names without a `/`, so `aws` and `velero.io/aws`
/// are the same plugin.
fn same_provider(a: &str, b: &str) -> bool {
    let normal = |p: &str| {
        if p.contains('/') {
            p.to_ascii_lowercase()
        } else {
            format!("velero.io/{}", p.to_ascii_lowercase())
        }
    };
    normal(a.trim()) == normal(b.trim())
}

/// Whether two locations name the same bucket (provider and bucket, slashes trimmed as
/// Velero trims them).
pub fn same_bucket(provider_a: &str, bucket_a: &str, provider_b: &str, bucket_b: &str) -> bool {
    same_provider(provider_a, provider_b)
        && bucket_a.trim_matches('/') == bucket_b.trim_matches('/')
}

/// Refuses a tenant location on a bucket of the shared pool: the tenant's credential would
/// reach every other tenant's entry in it, and its prefix would sit beside (or, for an empty
/// prefix, above) theirs. Backups without a storage location already go to the pool.
pub fn check_not_pool_bucket(
    spec: &BackupStorageLocationSpec,
    pool: &[PoolBucketRef],
) -> Result<(), PolicyViolation> {
    let hit = pool.iter().any(|b| {
        same_bucket(
            &spec.provider,
            &spec.object_storage.bucket,
            &b.provider,
            &b.bucket,
        )
    });
    if !hit {
        return Ok(());
    }
    let field = format!("{PREFIX}.objectStorage.bucket");
    Err(PolicyViolation::new(
        ViolationReason::Restricted,
        &field,
        format!(
            "{KIND} {field} is restricted, the bucket belongs to the cluster's shared backup pool; use a bucket of your own (backups without a storage location are already stored in the pool)"
        ),
    ))
}

/// Whether two object-store prefixes nest: one equals the other or lies under it, compared
/// path segment by path segment (`a/b` is under `a`, `ab` is not). The empty prefix (the
/// bucket's root) contains every other one.
pub fn prefixes_nest(a: &str, b: &str) -> bool {
    let segments = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (a, b) = (segments(a), segments(b));
    let shorter = a.len().min(b.len());
    a[..shorter] == b[..shorter]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY;
    use crate::policy::config::NacPolicy;

    fn spec(value: Value) -> BackupStorageLocationSpec {
        serde_json::from_value(value).unwrap()
    }

    fn valid() -> Value {
        json!({
            "provider": "aws",
            "objectStorage": {"bucket": "team-a-backups", "prefix": "velero"},
            "credential": {"name": "cloud-credentials", "key": "cloud"},
            "config": {"region": "eu-central-1"}
        })
    }

    fn with(patch: Value) -> BackupStorageLocationSpec {
        let mut value = valid();
        json_patch_merge(&mut value, patch);
        spec(value)
    }

    fn json_patch_merge(target: &mut Value, patch: Value) {
        match (target, patch) {
            (Value::Object(target), Value::Object(patch)) => {
                for (key, value) in patch {
                    if value.is_null() {
                        target.remove(&key);
                    } else {
                        json_patch_merge(target.entry(key).or_insert(Value::Null), value);
                    }
                }
            }
            (target, patch) => *target = patch,
        }
    }

    fn messages(result: Result<(), Vec<PolicyViolation>>) -> Vec<String> {
        result
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn none() -> EffectivePolicy {
        EffectivePolicy::default()
    }

    fn policy(yaml: &str) -> EffectivePolicy {
        let data = BTreeMap::from([(POLICY_CONFIGMAP_KEY.to_owned(), yaml.to_owned())]);
        NacPolicy::from_sources(None, Some(&data))
            .unwrap()
            .for_namespace(&BTreeMap::new())
    }

    #[test]
    fn valid_location_passes() {
        assert_eq!(
            validate_bsl_spec("team-a", &spec(valid()), &none(), true),
            Ok(())
        );
    }

    #[test]
    fn upstream_rules() {
        assert_eq!(
            messages(validate_bsl_spec(
                "team-a",
                &with(json!({"default": true})),
                &none(),
                true
            )),
            ["NonAdminBackupStorageLocation cannot be used as a default BSL"]
        );
        assert_eq!(
            messages(validate_bsl_spec(
                "team-a",
                &with(json!({"credential": null})),
                &none(),
                true
            )),
            // Upstream's text (its `bslSpec` path), then the CRD's path.
            [
                "NonAdminBackupStorageLocation spec.bslSpec.credential is not set (spec.backupStorageLocationSpec.credential is not set)"
            ]
        );
        assert_eq!(
            messages(validate_bsl_spec(
                "team-a",
                &with(json!({"credential": {"name": "", "key": ""}})),
                &none(),
                true
            )),
            [
                "NonAdminBackupStorageLocation spec.bslSpec.credential.name or spec.bslSpec.credential.key is not set (spec.backupStorageLocationSpec.credential.name is not set)",
                "NonAdminBackupStorageLocation spec.bslSpec.credential.name or spec.bslSpec.credential.key is not set (spec.backupStorageLocationSpec.credential.key is not set)",
            ]
        );
        assert_eq!(
            messages(validate_bsl_spec("team-a", &spec(valid()), &none(), false)),
            ["BSL credentials secret not found: secrets \"cloud-credentials\" not found"]
        );
        assert_eq!(
            messages(validate_bsl_spec(
                "team-a",
                &with(json!({"provider": "", "objectStorage": {"bucket": ""}})),
                &none(),
                true
            )),
            [
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.provider is not set",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.objectStorage.bucket is not set",
            ]
        );
    }

    #[test]
    fn malicious_prefix_traversal_is_refused() {
        for prefix in ["../team-b", "a/../../team-b", "./x", "a\\..\\b"] {
            let attack = with(json!({"objectStorage": {"prefix": prefix}}));
            let violations = validate_bsl_spec("team-a", &attack, &none(), true).unwrap_err();
            assert_eq!(violations.len(), 1, "{prefix}");
            assert_eq!(
                violations[0].field,
                "spec.backupStorageLocationSpec.objectStorage.prefix"
            );
            assert!(
                violations[0]
                    .message
                    .contains("prefixes always stay under team-a/")
            );
        }
    }

    #[test]
    fn prefix_is_forced_under_the_namespace() {
        assert_eq!(velero_bsl_prefix("team-a", None).unwrap(), "team-a");
        assert_eq!(velero_bsl_prefix("team-a", Some("")).unwrap(), "team-a");
        assert_eq!(velero_bsl_prefix("team-a", Some("/")).unwrap(), "team-a");
        assert_eq!(
            velero_bsl_prefix("team-a", Some("velero")).unwrap(),
            "team-a/velero"
        );
        assert_eq!(
            velero_bsl_prefix("team-a", Some("//velero//prod/")).unwrap(),
            "team-a/velero/prod"
        );
        assert_eq!(
            velero_bsl_prefix("team-a", Some("/team-b")).unwrap(),
            "team-a/team-b",
            "an absolute-looking prefix still stays under the namespace"
        );
        assert_eq!(
            velero_bsl_prefix("team-a", Some("a..b")).unwrap(),
            "team-a/a..b"
        );
        assert!(velero_bsl_prefix("team-a", Some("..")).is_err());
    }

    #[test]
    fn caller_controlled_secrets_and_pod_files_are_refused() {
        let attack = with(json!({
            "objectStorage": {"caCertRef": {"name": "admin-secret", "key": "ca"}},
            "config": {"credentialsFile": "/credentials/cloud", "storageAccountKeyEnvVar": "AZURE_STORAGE_ACCOUNT_ACCESS_KEY"}
        }));
        let found = messages(validate_bsl_spec("team-a", &attack, &none(), true));
        assert_eq!(found.len(), 3);
        assert!(found[0].contains("objectStorage.caCertRef is restricted"));
        assert!(found[1].contains("config.credentialsFile is restricted"));
        assert!(found[2].contains("config.storageAccountKeyEnvVar is restricted"));
    }

    #[test]
    fn sts_credential_file_is_refused() {
        let sts = "[default]\nrole_arn = arn:aws:iam::1:role/velero\nweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\n";
        let error = check_bsl_credential(sts).unwrap_err();
        assert_eq!(error.field, "spec.backupStorageLocationSpec.credential");
        assert_eq!(
            error.message,
            "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.credential is restricted, the credential would use the Velero pod's own cloud identity (a service-account token path, AWS web identity token file (STS)); provide long-term credentials of your own"
        );
        assert_eq!(
            check_bsl_credential("[default]\naws_access_key_id=a\naws_secret_access_key=b\n"),
            Ok(())
        );
    }

    #[test]
    fn reproduction_a_public_url_at_the_metadata_service_is_refused() {
        // Issue 17, finding 2: Velero signs download URLs with publicUrl, and NAC fetches them
        // from inside the cluster; this location must never be accepted.
        let attack = with(json!({"config": {
            "region": "eu-central-1",
            "s3Url": "https://s3.eu-central-1.amazonaws.com",
            "publicUrl": "http://169.254.169.254/latest/meta-data"
        }}));
        let violations = validate_bsl_spec("team-a", &attack, &none(), true).unwrap_err();
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(
            violations[0].field,
            "spec.backupStorageLocationSpec.config.publicUrl"
        );
    }

    #[test]
    fn internal_endpoints_odd_schemes_and_passwords_are_refused_with_the_field_named() {
        let cases = [
            (
                "s3Url",
                "http://127.0.0.1:9000",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url is restricted, 127.0.0.1 is a loopback address; NAC downloads from tenant storage inside the cluster, so it must be at a public address unless the administrator lists the endpoint in nac-policy storageEndpoints.allow",
            ),
            (
                "publicUrl",
                "http://minio.velero.svc.cluster.local:9000",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.publicUrl is restricted, minio.velero.svc.cluster.local is a cluster-internal name; NAC downloads from tenant storage inside the cluster, so it must be at a public address unless the administrator lists the endpoint in nac-policy storageEndpoints.allow",
            ),
            (
                "s3Url",
                "file:///var/run/secrets/kubernetes.io/serviceaccount/token",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url is restricted, it uses the scheme \"file\"; only http and https are allowed",
            ),
            (
                "s3Url",
                "https://key:secret@s3.example.com",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url is restricted, a URL may not carry a user name or password",
            ),
            (
                "publicUrl",
                "http://0x7f.0.0.1",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.publicUrl is restricted, the host \"0x7f.0.0.1\" is an IP address in an unusual notation (write IPv4 addresses as four decimal numbers)",
            ),
            (
                "s3Url",
                "minio:9000",
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url is restricted, it is not an http or https URL",
            ),
        ];
        for (key, url, message) in cases {
            let attack = with(json!({"config": {key: url}}));
            assert_eq!(
                messages(validate_bsl_spec("team-a", &attack, &none(), true)),
                [message],
                "{url}"
            );
        }
        // Azure and GCP URL keys, and URL-looking values under any key of any provider.
        let azure = with(json!({"provider": "velero.io/azure", "config": {
            "storageAccount": "sa", "storageAccountURI": "http://[::ffff:169.254.169.254]/"
        }}));
        let violations = validate_bsl_spec("team-a", &azure, &none(), true).unwrap_err();
        assert_eq!(
            violations[0].field,
            "spec.backupStorageLocationSpec.config.storageAccountURI"
        );
        let gcp =
            with(json!({"provider": "gcp", "config": {"universeDomain": "svc.cluster.local"}}));
        assert!(validate_bsl_spec("team-a", &gcp, &none(), true).is_err());
        let other = with(
            json!({"provider": "example.com/store", "config": {"endpoint": "gopher://10.0.0.1:70/"}}),
        );
        assert!(validate_bsl_spec("team-a", &other, &none(), true).is_err());
    }

    #[test]
    fn administrator_enforced_urls_are_checked_too() {
        let policy = policy(
            "rules:\n  - bsl:\n      defaults:\n        config.publicUrl: http://169.254.169.254\n",
        );
        let violations = validate_bsl_spec("team-a", &spec(valid()), &policy, true).unwrap_err();
        assert_eq!(
            violations[0].field,
            "spec.backupStorageLocationSpec.config.publicUrl"
        );
    }

    #[test]
    fn the_allow_list_admits_listed_internal_endpoints_and_only_those() {
        let policy = policy(
            "storageEndpoints:\n  allow:\n    - http://minio.velero.svc:9000\n    - \"*.s3.amazonaws.com\"\n",
        );
        let in_cluster = with(json!({"config": {"s3Url": "http://minio.velero.svc:9000"}}));
        assert_eq!(
            validate_bsl_spec("team-a", &in_cluster, &policy, true),
            Ok(())
        );
        let aws = with(json!({"config": {"s3Url": "https://bucket.s3.amazonaws.com"}}));
        assert_eq!(validate_bsl_spec("team-a", &aws, &policy, true), Ok(()));
        let elsewhere = with(json!({"config": {"s3Url": "https://storage.example.com"}}));
        let violations = validate_bsl_spec("team-a", &elsewhere, &policy, true).unwrap_err();
        assert_eq!(violations[0].reason, ViolationReason::NotAllowed);
        assert_eq!(
            violations[0].message,
            "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url is restricted, it is not one of the storage endpoints the administrator allows (nac-policy storageEndpoints.allow)"
        );
        // A location without URLs (AWS's own endpoints) needs no entry.
        assert_eq!(
            validate_bsl_spec("team-a", &spec(valid()), &policy, true),
            Ok(())
        );
    }

    #[test]
    fn an_aws_credential_without_static_keys_is_refused_unless_ambient_identity_is_allowed() {
        let location = spec(valid());
        let keyless = "[default]\nregion = eu-central-1\n";
        let error = check_static_credentials(&location, keyless, &none()).unwrap_err();
        assert_eq!(error.field, "spec.backupStorageLocationSpec.credential");
        assert_eq!(
            error.message,
            "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.credential is restricted, the AWS credential holds no static keys (aws_access_key_id and aws_secret_access_key) for profile \"default\", so Velero would use the Velero pod's or its node's own identity; provide long-term keys of your own"
        );
        let keys = "[default]\naws_access_key_id=a\naws_secret_access_key=b\n";
        assert_eq!(check_static_credentials(&location, keys, &none()), Ok(()));
        // The profile Velero uses is the one that must hold them.
        let other_profile = with(json!({"config": {"region": "r", "profile": "backups"}}));
        assert!(check_static_credentials(&other_profile, keys, &none()).is_err());
        // Other providers' files are not AWS files.
        let gcp = with(json!({"provider": "gcp"}));
        assert_eq!(check_static_credentials(&gcp, "{}", &none()), Ok(()));
        let allowed = policy("allowAmbientIdentity: true\n");
        assert!(allowed.settings.allow_ambient_identity);
        assert_eq!(
            check_static_credentials(&location, keyless, &allowed),
            Ok(())
        );
    }

    #[test]
    fn sync_period_must_stay_below_nacs() {
        let slow = with(json!({"backupSyncPeriod": "2m"}));
        assert_eq!(
            messages(validate_bsl_spec("team-a", &slow, &none(), true)),
            [
                "NonAdminBackupStorageLocation spec.backupStorageLocationSpec.backupSyncPeriod (2m0s) can not be greater or equal the non-admin backupSyncPeriod (2m0s)"
            ]
        );
        for ok in ["1m", "0s", "30s"] {
            let location = with(json!({"backupSyncPeriod": ok}));
            assert_eq!(
                validate_bsl_spec("team-a", &location, &none(), true),
                Ok(()),
                "{ok}"
            );
        }
        let garbage = with(json!({"backupSyncPeriod": "often"}));
        assert!(
            messages(validate_bsl_spec("team-a", &garbage, &none(), true))[0]
                .contains("is not a valid duration")
        );
        let mut disabled = none();
        disabled.settings.backup_sync_period = std::time::Duration::ZERO;
        let slow = with(json!({"backupSyncPeriod": "1h"}));
        assert_eq!(validate_bsl_spec("team-a", &slow, &disabled, true), Ok(()));
    }

    #[test]
    fn forged_enforced_values_and_endpoint_allow_list() {
        let policy = policy(
            "rules:\n  - bsl:\n      enforce:\n        config.region: eu-central-1\n        provider: aws\n      allowed:\n        config.s3Url: [\"https://s3.internal.example\", null]\n",
        );
        let forged = with(json!({"provider": "gcp", "config": {"region": "us-east-1"}}));
        assert_eq!(
            messages(validate_bsl_spec("team-a", &forged, &policy, true)),
            [
                "the administrator has restricted spec.backupStorageLocationSpec.config.region field value to eu-central-1",
                "the administrator has restricted spec.backupStorageLocationSpec.provider field value to aws",
            ]
        );
        let exfiltration = with(json!({"config": {"s3Url": "https://attacker.example"}}));
        assert_eq!(
            messages(validate_bsl_spec("team-a", &exfiltration, &policy, true)),
            [
                "the administrator has restricted spec.backupStorageLocationSpec.config.s3Url to one of: https://s3.internal.example, null; got https://attacker.example"
            ]
        );
        let internal = with(json!({"config": {"s3Url": "https://s3.internal.example"}}));
        assert_eq!(
            validate_bsl_spec("team-a", &internal, &policy, true),
            Ok(())
        );
        assert_eq!(
            validate_bsl_spec("team-a", &spec(valid()), &policy, true),
            Ok(())
        );
    }

    #[test]
    fn enforced_prefix_still_lands_under_the_namespace() {
        let policy =
            policy("rules:\n  - bsl:\n      enforce:\n        objectStorage.prefix: non-admin\n");
        let tenant = with(json!({"objectStorage": {"prefix": null}}));
        assert_eq!(validate_bsl_spec("team-a", &tenant, &policy, true), Ok(()));
        let built = build_velero_bsl_spec("team-a", &tenant, &policy, "team-a-nabsl-uuid", "cloud")
            .unwrap();
        assert_eq!(
            built.object_storage.prefix.as_deref(),
            Some("team-a/non-admin")
        );
    }

    #[test]
    fn build_points_at_the_copied_secret_and_drops_what_is_refused() {
        let tenant = with(json!({
            "default": true,
            "objectStorage": {"prefix": "/velero/", "caCertRef": {"name": "x", "key": "y"}, "caCert": "Q0E="},
            "config": {"region": "eu-central-1", "credentialsFile": "/credentials/cloud"},
            "accessMode": "ReadOnly",
            "futureField": "kept"
        }));
        let built = build_velero_bsl_spec("team-a", &tenant, &none(), "team-a-nabsl-uuid", "cloud")
            .unwrap();
        assert_eq!(built.default, None);
        let credential = built.credential.unwrap();
        assert_eq!(credential.name, "team-a-nabsl-uuid");
        assert_eq!(credential.key, "cloud");
        assert_eq!(
            built.object_storage.prefix.as_deref(),
            Some("team-a/velero")
        );
        assert_eq!(built.object_storage.ca_cert_ref, None);
        assert_eq!(built.object_storage.ca_cert.as_deref(), Some("Q0E="));
        let config = built.config.unwrap();
        assert_eq!(config.keys().collect::<Vec<_>>(), ["region"]);
        assert_eq!(built.access_mode.unwrap().as_str(), "ReadOnly");
        assert_eq!(built.unknown_fields["futureField"], json!("kept"));
        assert_eq!(built.provider, "aws");
    }

    #[test]
    fn build_refuses_a_traversal_prefix() {
        let attack = with(json!({"objectStorage": {"prefix": "../team-b"}}));
        let error = build_velero_bsl_spec("team-a", &attack, &none(), "s", "k").unwrap_err();
        assert_eq!(error.reason, ViolationReason::Restricted);
    }
    #[test]
    fn pool_buckets_are_refused_to_tenants() {
        let pool = [PoolBucketRef {
            provider: "aws".into(),
            bucket: "shared-pool-1".into(),
        }];
        let own = spec(valid());
        assert_eq!(check_not_pool_bucket(&own, &pool), Ok(()));
        for (provider, bucket) in [
            ("aws", "shared-pool-1"),
            ("velero.io/aws", "shared-pool-1"),
            ("aws", "/shared-pool-1/"),
        ] {
            let mut s = spec(valid());
            s.provider = provider.into();
            s.object_storage.bucket = bucket.into();
            let refused = check_not_pool_bucket(&s, &pool).unwrap_err();
            assert_eq!(refused.reason, ViolationReason::Restricted);
            assert_eq!(
                refused.field,
                "spec.backupStorageLocationSpec.objectStorage.bucket"
            );
            assert!(refused.message.contains("shared backup pool"), "{refused}");
        }
        // Same bucket name at another provider is another bucket.
        let mut gcp = spec(valid());
        gcp.provider = "gcp".into();
        gcp.object_storage.bucket = "shared-pool-1".into();
        assert_eq!(check_not_pool_bucket(&gcp, &pool), Ok(()));
    }

    #[test]
    fn prefixes_nest_by_whole_segments() {
        assert!(prefixes_nest("", "team-a--1a2b3"));
        assert!(prefixes_nest("team-a--1a2b3", "team-a--1a2b3/"));
        assert!(prefixes_nest("team-a--1a2b3/backups", "team-a--1a2b3"));
        assert!(!prefixes_nest("team-a--1a2b3", "team-a--1a2b3x"));
        assert!(!prefixes_nest("team-a--1a2b3", "team-b--1a2b3"));
        assert!(!prefixes_nest("velero", "team-a--1a2b3"));
    }
}
