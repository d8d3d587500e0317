//! Credential files (and BSL `config` keys) that would make Velero act with its *own* cloud
//! identity instead of the tenant's.
//!
//! NAC copies a tenant's credential Secret into the OADP namespace and Velero hands the file to
//! the object-store plugin. Short-lived, federated credential formats do not contain a secret:
//! they point at something only the Velero pod has (its projected service-account token, its
//! environment, the node's metadata service, a program on its filesystem). A tenant writing
//! such a file would borrow the administrator's identity, typically with access to every
//! tenant's backups (`migtools/oadp-non-admin`, `docs/nonadminbsl_credential_requirements.md`:
//! "long-term credentials are the only supported option for NonAdminBSL"). Upstream documents
//! this; NAC refuses such files, and the `config` keys ([`POD_IDENTITY_CONFIG_KEYS`]) that
//! point the plugin at the pod's files or environment.

use serde_json::Value;

/// Something in a credential file that relies on the Velero pod's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodIdentityMarker {
    /// AWS `web_identity_token_file` (usually with `role_arn`): STS web identity with the
    /// projected token in the Velero pod.
    AwsWebIdentityTokenFile,
    /// AWS `credential_source` (`Environment`, `Ec2InstanceMetadata`, `EcsContainer`): the
    /// role is assumed with the pod's environment or the node's metadata credentials.
    AwsCredentialSource,
    /// AWS `credential_process`: runs a program inside the Velero pod.
    AwsCredentialProcess,
    /// AWS SSO settings: tokens cached on the Velero pod's filesystem.
    AwsSso,
    /// AWS container credential endpoints (`AWS_CONTAINER_CREDENTIALS_*_URI`): EKS Pod
    /// Identity / ECS task role of the pod.
    AwsContainerCredentials,
    /// GCP `"type": "external_account"`: workload identity federation, reading the pod's token
    /// or a metadata URL.
    GcpExternalAccount,
    /// GCP `credential_source`: where an external account reads its subject token.
    GcpCredentialSource,
    /// Azure `AZURE_FEDERATED_TOKEN_FILE`: workload identity with the pod's token.
    AzureFederatedTokenFile,
    /// Azure `AZURE_CLIENT_CERTIFICATE_PATH`: a certificate file on the Velero pod.
    AzureCertificateFile,
    /// Azure settings without a client secret or storage key: the plugin falls back to the
    /// pod's managed or workload identity.
    AzureNoSecret,
    /// A path under `/var/run/secrets/` (projected service-account tokens).
    ServiceAccountTokenPath,
    /// A cloud instance-metadata endpoint (`169.254.169.254`, `metadata.google.internal`,
    /// `fd00:ec2::254`).
    MetadataEndpoint,
}

impl PodIdentityMarker {
    /// Human-readable description, used in the refusal message.
    pub fn description(self) -> &'static str {
        match self {
            Self::AwsWebIdentityTokenFile => "AWS web identity token file (STS)",
            Self::AwsCredentialSource => "AWS credential_source",
            Self::AwsCredentialProcess => "AWS credential_process",
            Self::AwsSso => "AWS SSO",
            Self::AwsContainerCredentials => "AWS container credentials endpoint",
            Self::GcpExternalAccount => "GCP external_account (workload identity federation)",
            Self::GcpCredentialSource => "GCP credential_source",
            Self::AzureFederatedTokenFile => "Azure workload identity (AZURE_FEDERATED_TOKEN_FILE)",
            Self::AzureCertificateFile => "Azure certificate file path",
            Self::AzureNoSecret => "Azure settings without a client secret or storage key",
            Self::ServiceAccountTokenPath => "a service-account token path",
            Self::MetadataEndpoint => "a cloud metadata endpoint",
        }
    }
}

/// Whether a credential file (the Secret value NAC would copy) would use the Velero pod's own
/// cloud identity.
pub fn credential_borrows_pod_identity(secret_text: &str) -> bool {
    !pod_identity_markers(secret_text).is_empty()
}

/// Everything in `secret_text` that relies on the Velero pod's identity, without duplicates.
pub fn pod_identity_markers(secret_text: &str) -> Vec<PodIdentityMarker> {
    let mut markers = Vec::new();
    let mut add = |marker| {
        if !markers.contains(&marker) {
            markers.push(marker);
        }
    };

    let lowered = secret_text.to_ascii_lowercase();
    if lowered.contains("/var/run/secrets/") {
        add(PodIdentityMarker::ServiceAccountTokenPath);
    }
    if [
        "169.254.169.254",
        "metadata.google.internal",
        "fd00:ec2::254",
    ]
    .iter()
    .any(|endpoint| lowered.contains(endpoint))
    {
        add(PodIdentityMarker::MetadataEndpoint);
    }

    // GCP credential files are JSON.
    if let Ok(document @ Value::Object(_)) = serde_json::from_str::<Value>(secret_text) {
        gcp_markers(&document, &mut add);
        return markers;
    }

    // AWS (INI) and Azure (KEY=value) files: look at every `key = value` line.
    let keys: Vec<String> = secret_text
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with(['#', ';', '[']))
        .filter_map(|line| line.split_once(['=', ':']))
        .map(|(key, _)| {
            key.trim()
                .trim_start_matches("export ")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let has = |name: &str| keys.iter().any(|key| key == name);
    if has("web_identity_token_file") || has("aws_web_identity_token_file") {
        add(PodIdentityMarker::AwsWebIdentityTokenFile);
    }
    if has("credential_source") {
        add(PodIdentityMarker::AwsCredentialSource);
    }
    if has("credential_process") {
        add(PodIdentityMarker::AwsCredentialProcess);
    }
    if keys.iter().any(|key| key.starts_with("sso_")) {
        add(PodIdentityMarker::AwsSso);
    }
    if has("aws_container_credentials_full_uri") || has("aws_container_credentials_relative_uri") {
        add(PodIdentityMarker::AwsContainerCredentials);
    }
    if has("azure_federated_token_file") {
        add(PodIdentityMarker::AzureFederatedTokenFile);
    }
    if has("azure_client_certificate_path") {
        add(PodIdentityMarker::AzureCertificateFile);
    }
    let azure = keys.iter().any(|key| key.starts_with("azure_"));
    let azure_secret = has("azure_client_secret") || has("azure_storage_account_access_key");
    if azure && !azure_secret && !has("azure_client_certificate_path") {
        add(PodIdentityMarker::AzureNoSecret);
    }
    markers
}

/// Whether `profile` of an AWS shared-credentials file holds static keys
/// (`aws_access_key_id` and `aws_secret_access_key`, both non-empty), itself or through the
/// `source_profile` of a `role_arn` (role chaining from static keys). Sections are read as the
/// SDK reads both files Velero hands it: `[name]` and `[profile name]` are the same profile;
/// keys outside a section count for nothing.
pub fn aws_profile_has_static_keys(secret_text: &str, profile: &str) -> bool {
    use std::collections::BTreeMap;
    let mut sections: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in secret_text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            let name = header.strip_prefix("profile ").map_or(header, str::trim);
            current = Some(name.to_owned());
            sections.entry(name.to_owned()).or_default();
            continue;
        }
        let (Some(section), Some((key, value))) = (&current, line.split_once('=')) else {
            continue;
        };
        sections
            .entry(section.clone())
            .or_default()
            .insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let mut name = profile.to_owned();
    let mut seen = Vec::new();
    while !seen.contains(&name) && seen.len() < 8 {
        let Some(section) = sections.get(&name) else {
            return false;
        };
        let set = |key: &str| section.get(key).is_some_and(|value| !value.is_empty());
        if set("aws_access_key_id") && set("aws_secret_access_key") {
            return true;
        }
        let source = section.get("source_profile").filter(|_| set("role_arn"));
        let Some(source) = source else {
            return false;
        };
        seen.push(std::mem::replace(&mut name, source.clone()));
    }
    false
}

/// Walks a GCP credential document (impersonation nests the source credentials).
fn gcp_markers(value: &Value, add: &mut impl FnMut(PodIdentityMarker)) {
    match value {
        Value::Object(object) => {
            if object.get("type").and_then(Value::as_str) == Some("external_account") {
                add(PodIdentityMarker::GcpExternalAccount);
            }
            if object.contains_key("credential_source") {
                add(PodIdentityMarker::GcpCredentialSource);
            }
            for child in object.values() {
                gcp_markers(child, add);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| gcp_markers(item, add)),
        _ => {}
    }
}

/// BSL `config` keys a tenant may not set, because they make the object-store plugin use
/// something of the Velero pod's instead of the tenant's credential:
/// - `credentialsFile` (AWS, GCP, Azure): path of a credentials file on the Velero pod (the
///   administrator's own credentials live there);
/// - `customerKeyEncryptionFile` (AWS SSE-C): a key file read from the Velero pod;
/// - `storageAccountKeyEnvVar` (Azure): names a Velero pod environment variable holding a
///   storage account key;
/// - `enableSharedConfig` (AWS): loads the pod's shared AWS configuration (profiles that can
///   assume roles with the pod's identity).
pub const POD_IDENTITY_CONFIG_KEYS: &[&str] = &[
    "credentialsFile",
    "customerKeyEncryptionFile",
    "storageAccountKeyEnvVar",
    "enableSharedConfig",
];

/// Whether a BSL `config` key is one of [`POD_IDENTITY_CONFIG_KEYS`] (in any case).
pub fn is_pod_identity_config_key(key: &str) -> bool {
    POD_IDENTITY_CONFIG_KEYS
        .iter()
        .any(|refused| refused.eq_ignore_ascii_case(key))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const AWS_STATIC: &str =
        "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = secret\n";
    const AWS_STS: &str = "[default]\nsts_regional_endpoints = regional\nrole_arn = arn:aws:iam::123:role/velero\nweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\n";
    const GCP_KEY: &str = r#"{"type": "service_account", "project_id": "p", "private_key_id": "k", "private_key": "-----BEGIN PRIVATE KEY-----\n", "client_email": "sa@p.iam.gserviceaccount.com"}"#;
    const GCP_WIF: &str = r#"{"type": "external_account", "audience": "//iam.googleapis.com/x", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.googleapis.com/v1/token", "credential_source": {"file": "/var/run/secrets/openshift/serviceaccount/token", "format": {"type": "text"}}}"#;
    const AZURE_SECRET: &str = "AZURE_SUBSCRIPTION_ID=s\nAZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_CLIENT_SECRET=x\nAZURE_RESOURCE_GROUP=rg\nAZURE_CLOUD_NAME=AzurePublicCloud\n";
    const AZURE_WI: &str = "AZURE_SUBSCRIPTION_ID=s\nAZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_FEDERATED_TOKEN_FILE=/var/run/secrets/openshift/serviceaccount/token\n";

    #[test]
    fn long_term_credentials_are_accepted() {
        for text in [
            AWS_STATIC,
            GCP_KEY,
            AZURE_SECRET,
            "AZURE_STORAGE_ACCOUNT_ACCESS_KEY=k\n",
        ] {
            assert!(!credential_borrows_pod_identity(text), "{text}");
        }
        let chained = "[default]\naws_access_key_id = a\naws_secret_access_key = b\n[profile velero]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n";
        assert!(
            !credential_borrows_pod_identity(chained),
            "role chaining from static keys"
        );
    }

    #[test]
    fn aws_sts_file_is_refused() {
        assert_eq!(
            pod_identity_markers(AWS_STS),
            [
                PodIdentityMarker::ServiceAccountTokenPath,
                PodIdentityMarker::AwsWebIdentityTokenFile
            ]
        );
        let elsewhere = "[default]\nrole_arn = arn\nweb_identity_token_file = /tmp/token\n";
        assert!(credential_borrows_pod_identity(elsewhere));
    }

    #[test]
    fn aws_pod_identity_variants_are_refused() {
        let cases = [
            (
                "[default]\nrole_arn = a\ncredential_source = Ec2InstanceMetadata\n",
                PodIdentityMarker::AwsCredentialSource,
            ),
            (
                "[default]\ncredential_process = /usr/bin/get-creds\n",
                PodIdentityMarker::AwsCredentialProcess,
            ),
            (
                "[default]\nsso_start_url = https://x\nsso_role_name = r\n",
                PodIdentityMarker::AwsSso,
            ),
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials\n",
                PodIdentityMarker::AwsContainerCredentials,
            ),
            (
                "export AWS_WEB_IDENTITY_TOKEN_FILE=/token\n",
                PodIdentityMarker::AwsWebIdentityTokenFile,
            ),
            (
                "[default]\nCREDENTIAL_SOURCE = Environment\n",
                PodIdentityMarker::AwsCredentialSource,
            ),
        ];
        for (text, marker) in cases {
            assert!(pod_identity_markers(text).contains(&marker), "{text}");
        }
    }

    #[test]
    fn gcp_workload_identity_is_refused() {
        let markers = pod_identity_markers(GCP_WIF);
        assert!(markers.contains(&PodIdentityMarker::GcpExternalAccount));
        assert!(markers.contains(&PodIdentityMarker::GcpCredentialSource));
        let metadata_url = r#"{"type": "external_account", "credential_source": {"url": "http://metadata.google.internal/computeMetadata/v1/token"}}"#;
        assert!(pod_identity_markers(metadata_url).contains(&PodIdentityMarker::MetadataEndpoint));
        let impersonated = r#"{"type": "impersonated_service_account", "service_account_impersonation_url": "https://x", "source_credentials": {"type": "external_account", "credential_source": {"file": "/token"}}}"#;
        assert!(credential_borrows_pod_identity(impersonated));
        let user = r#"{"type": "external_account_authorized_user", "refresh_token": "r"}"#;
        assert!(
            !credential_borrows_pod_identity(user),
            "a user's refresh token is their own"
        );
    }

    #[test]
    fn azure_workload_identity_and_fallbacks_are_refused() {
        assert!(
            pod_identity_markers(AZURE_WI).contains(&PodIdentityMarker::AzureFederatedTokenFile)
        );
        let managed = "AZURE_SUBSCRIPTION_ID=s\nAZURE_RESOURCE_GROUP=rg\nAZURE_CLIENT_ID=c\n";
        assert_eq!(
            pod_identity_markers(managed),
            [PodIdentityMarker::AzureNoSecret]
        );
        let certificate = "AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_CLIENT_CERTIFICATE_PATH=/etc/azure/cert.pem\n";
        assert_eq!(
            pod_identity_markers(certificate),
            [PodIdentityMarker::AzureCertificateFile]
        );
    }

    #[test]
    fn aws_files_need_static_keys_for_the_profile_in_use() {
        assert!(aws_profile_has_static_keys(AWS_STATIC, "default"));
        assert!(!aws_profile_has_static_keys(AWS_STATIC, "other"));
        // No keys at all: the SDK's default chain would use the pod's or node's identity.
        for text in [
            "",
            "[default]\nregion = eu-central-1\n",
            "[default]\naws_access_key_id = AKIA\n",
            "[default]\naws_access_key_id = AKIA\naws_secret_access_key =\n",
            "aws_access_key_id = AKIA\naws_secret_access_key = s\n",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\n",
            "[default]\nrole_arn = arn\nsource_profile = default\n",
            "[a]\nrole_arn = x\nsource_profile = b\n[b]\nrole_arn = y\nsource_profile = a\n",
        ] {
            assert!(!aws_profile_has_static_keys(text, "default"), "{text:?}");
        }
        let chained = "[base]\naws_access_key_id = a\naws_secret_access_key = b\n[profile velero]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n";
        assert!(aws_profile_has_static_keys(chained, "velero"));
        let config_style = "[profile backups]\nAWS_ACCESS_KEY_ID=a\nAWS_SECRET_ACCESS_KEY=b\n";
        assert!(aws_profile_has_static_keys(config_style, "backups"));
    }

    #[test]
    fn comments_do_not_count_and_descriptions_exist() {
        let commented = "# web_identity_token_file = x\n; credential_process = y\n[default]\naws_access_key_id=a\naws_secret_access_key=b\n";
        assert!(!credential_borrows_pod_identity(commented));
        assert!(!credential_borrows_pod_identity(""));
        assert_eq!(
            PodIdentityMarker::AwsWebIdentityTokenFile.description(),
            "AWS web identity token file (STS)"
        );
    }
}
