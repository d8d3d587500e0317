//! Reading the shared pool's buckets directly (seed 001's "the cluster stays the source of
//! truth"): the top-level prefixes of a bucket and whether Velero backups are stored under
//! one, so entries lost from the API are rebuilt from what the buckets hold and a purge can
//! tell that nothing is left. S3 (Velero's `aws` provider, also S3-compatible stores through
//! `s3Url`) through `object_store`; optionally a provider whose buckets are directories under
//! a local root (the Velero simulator's local provider, for `nac demo` and tests). Read only:
//! nothing here writes to a bucket.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use super::bucket_decision::ListedPrefix;

/// Provider names of Velero's AWS plugin.
const AWS_PROVIDERS: &[&str] = &["aws", "velero.io/aws"];

/// How to reach one bucket: the BackupBucket's spec and its credential file.
#[derive(Clone, PartialEq, Eq)]
pub struct BucketAccess {
    /// Velero provider name.
    pub provider: String,
    /// Bucket name.
    pub bucket: String,
    /// Region (the spec's, else `config.region`).
    pub region: Option<String>,
    /// The provider config (`s3Url`, `s3ForcePathStyle`, `profile`, ...).
    pub config: BTreeMap<String, String>,
    /// The credential file (an AWS shared-credentials file for `aws`).
    pub credentials: Option<String>,
}

impl std::fmt::Debug for BucketAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        f.debug_struct("BucketAccess")
            .field("provider", &self.provider)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// Why a bucket could not be listed; the text never holds secret values.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// NAC cannot read this provider's buckets (the entries' BSLs remain the source).
    #[error("listing buckets of provider {0:?} is not supported")]
    Unsupported(String),
    /// The settings or credentials are unusable.
    #[error("cannot list bucket {bucket:?}: {reason}")]
    Config {
        /// Bucket name.
        bucket: String,
        /// What is wrong.
        reason: String,
    },
    /// The store answered with an error.
    #[error("cannot list bucket {bucket:?}: {source}")]
    Store {
        /// Bucket name.
        bucket: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
}

/// Lists buckets of the pool.
pub trait BucketLister: Send + Sync + std::fmt::Debug {
    /// The top-level prefixes of the bucket, with whether backups are stored under each.
    fn top_level<'a>(
        &'a self,
        access: &'a BucketAccess,
    ) -> BoxFuture<'a, Result<Vec<ListedPrefix>, ListError>>;

    /// Whether backups are stored under `prefix` of the bucket.
    fn has_backups<'a>(
        &'a self,
        access: &'a BucketAccess,
        prefix: &'a str,
    ) -> BoxFuture<'a, Result<bool, ListError>>;
}

/// The `object_store` lister: S3, and optionally one local provider.
#[derive(Debug, Clone, Default)]
pub struct ObjectStoreLister {
    /// A provider whose buckets are directories under a root: (provider name, root).
    pub local: Option<(String, PathBuf)>,
}

impl ObjectStoreLister {
    /// A lister for S3 only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also lists buckets of `provider` as directories under `root`.
    pub fn with_local_provider(provider: &str, root: PathBuf) -> Self {
        Self {
            local: Some((provider.to_owned(), root)),
        }
    }

    /// The store of the bucket; None for a local bucket that does not exist (it is empty).
    fn store(&self, access: &BucketAccess) -> Result<Option<Box<dyn ObjectStore>>, ListError> {
        let bucket = access.bucket.trim_matches('/');
        if let Some((provider, root)) = &self.local
            && *provider == access.provider
        {
            let dir = root.join(bucket);
            if bucket.contains('/') || bucket.contains("..") || bucket.is_empty() {
                return Err(ListError::Config {
                    bucket: bucket.to_owned(),
                    reason: "not a bucket name".to_owned(),
                });
            }
            if !dir.is_dir() {
                return Ok(None);
            }
            let store =
                LocalFileSystem::new_with_prefix(&dir).map_err(|source| ListError::Store {
                    bucket: bucket.to_owned(),
                    source,
                })?;
            return Ok(Some(Box::new(store)));
        }
        if !AWS_PROVIDERS.contains(&access.provider.as_str()) {
            return Err(ListError::Unsupported(access.provider.clone()));
        }
        Ok(Some(Box::new(s3_store(access)?)))
    }
}

impl BucketLister for ObjectStoreLister {
    fn top_level<'a>(
        &'a self,
        access: &'a BucketAccess,
    ) -> BoxFuture<'a, Result<Vec<ListedPrefix>, ListError>> {
        Box::pin(async move {
            let Some(store) = self.store(access)? else {
                return Ok(Vec::new());
            };
            let listing = store
                .list_with_delimiter(None)
                .await
                .map_err(|source| store_error(access, source))?;
            let mut prefixes = Vec::new();
            for dir in listing.common_prefixes {
                let prefix = dir.as_ref().trim_matches('/').to_owned();
                let has_backups = backups_under(store.as_ref(), &prefix)
                    .await
                    .map_err(|source| store_error(access, source))?;
                prefixes.push(ListedPrefix {
                    prefix,
                    has_backups,
                });
            }
            Ok(prefixes)
        })
    }

    fn has_backups<'a>(
        &'a self,
        access: &'a BucketAccess,
        prefix: &'a str,
    ) -> BoxFuture<'a, Result<bool, ListError>> {
        Box::pin(async move {
            let Some(store) = self.store(access)? else {
                return Ok(false);
            };
            backups_under(store.as_ref(), prefix.trim_matches('/'))
                .await
                .map_err(|source| store_error(access, source))
        })
    }
}

fn store_error(access: &BucketAccess, source: object_store::Error) -> ListError {
    ListError::Store {
        bucket: access.bucket.clone(),
        source,
    }
}

/// Whether `<prefix>/backups/` holds anything (Velero keeps one directory per backup there).
async fn backups_under(store: &dyn ObjectStore, prefix: &str) -> Result<bool, object_store::Error> {
    let Ok(path) = ObjectPath::parse(format!("{prefix}/backups")) else {
        return Ok(false);
    };
    match store.list_with_delimiter(Some(&path)).await {
        Ok(listing) => Ok(!listing.common_prefixes.is_empty() || !listing.objects.is_empty()),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(error) => Err(error),
    }
}

/// Go's `strconv.ParseBool` as Velero's AWS plugin reads booleans; absent is false.
fn go_bool(config: &BTreeMap<String, String>, key: &str) -> bool {
    matches!(
        config.get(key).map(String::as_str),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

/// An AWS shared-credentials (or config) file's profile: access key, secret key, token.
fn aws_keys(text: &str, profile: &str) -> Option<(String, String, Option<String>)> {
    let mut current: Option<String> = None;
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            current = Some(
                header
                    .strip_prefix("profile ")
                    .map_or(header, str::trim)
                    .to_owned(),
            );
            continue;
        }
        if current.as_deref() == Some(profile)
            && let Some((key, value)) = line.split_once('=')
        {
            values.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let get = |key: &str| values.get(key).filter(|v| !v.is_empty()).cloned();
    Some((
        get("aws_access_key_id")?,
        get("aws_secret_access_key")?,
        get("aws_session_token"),
    ))
}

fn s3_store(access: &BucketAccess) -> Result<object_store::aws::AmazonS3, ListError> {
    let bucket = access.bucket.trim_matches('/');
    let fail = |reason: String| ListError::Config {
        bucket: bucket.to_owned(),
        reason,
    };
    let region = access
        .region
        .clone()
        .filter(|r| !r.is_empty())
        .or_else(|| access.config.get("region").cloned())
        .ok_or_else(|| fail("no region (spec.region or config.region)".to_owned()))?;
    let profile = access
        .config
        .get("profile")
        .filter(|p| !p.is_empty())
        .map_or("default", String::as_str);
    let (key_id, secret, token) = access
        .credentials
        .as_deref()
        .and_then(|text| aws_keys(text, profile))
        .ok_or_else(|| {
            fail(format!(
                "the credential has no aws_access_key_id/aws_secret_access_key in profile {profile:?}"
            ))
        })?;
    let endpoint = match access.config.get("s3Url").filter(|u| !u.is_empty()) {
        Some(url) => {
            Some(url::Url::parse(url).map_err(|e| fail(format!("invalid s3Url {url:?}: {e}")))?)
        }
        None => None,
    };
    let path_style = go_bool(&access.config, "s3ForcePathStyle")
        || endpoint.as_ref().is_some_and(|u| {
            matches!(
                u.host(),
                Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) | None
            ) || u.host_str() == Some("localhost")
        });
    let client = ClientOptions::new()
        .with_allow_http(endpoint.as_ref().is_some_and(|u| u.scheme() == "http"))
        .with_allow_invalid_certificates(go_bool(&access.config, "insecureSkipTLSVerify"))
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(60));
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            base: 2.0,
        },
        max_retries: 2,
        retry_timeout: Duration::from_secs(15),
    };
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(&region)
        .with_access_key_id(&key_id)
        .with_secret_access_key(&secret)
        .with_client_options(client)
        .with_retry(retry)
        .with_virtual_hosted_style_request(!path_style);
    if let Some(token) = &token {
        builder = builder.with_token(token);
    }
    if let Some(url) = &endpoint {
        builder = builder.with_endpoint(url.as_str().trim_end_matches('/'));
    }
    builder
        .build()
        .map_err(|e| fail(format!("cannot set up the S3 client: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn aws_credentials_profiles() {
        let file = "[default]\naws_access_key_id = AK\naws_secret_access_key=SK\n\n[profile other]\naws_access_key_id=A2\naws_secret_access_key=S2\naws_session_token=T\n";
        assert_eq!(
            aws_keys(file, "default"),
            Some(("AK".into(), "SK".into(), None))
        );
        assert_eq!(
            aws_keys(file, "other"),
            Some(("A2".into(), "S2".into(), Some("T".into())))
        );
        assert_eq!(aws_keys(file, "missing"), None);
    }

    #[tokio::test]
    async fn local_buckets_list_prefixes_and_backups() {
        let root = tempfile::tempdir().unwrap();
        let bucket = root.path().join("pool-1");
        std::fs::create_dir_all(bucket.join("team-a--1a2b3/backups/b1")).unwrap();
        std::fs::write(
            bucket.join("team-a--1a2b3/backups/b1/velero-backup.json"),
            b"{}",
        )
        .unwrap();
        std::fs::create_dir_all(bucket.join("team-b--4c5d6/kopia")).unwrap();
        std::fs::write(bucket.join("team-b--4c5d6/kopia/x"), b"x").unwrap();
        let lister = ObjectStoreLister::with_local_provider("local", root.path().to_path_buf());
        let access = BucketAccess {
            provider: "local".into(),
            bucket: "pool-1".into(),
            region: None,
            config: BTreeMap::new(),
            credentials: None,
        };
        let mut listed = lister.top_level(&access).await.unwrap();
        listed.sort_by(|a, b| a.prefix.cmp(&b.prefix));
        assert_eq!(
            listed,
            vec![
                ListedPrefix {
                    prefix: "team-a--1a2b3".into(),
                    has_backups: true
                },
                ListedPrefix {
                    prefix: "team-b--4c5d6".into(),
                    has_backups: false
                },
            ]
        );
        assert!(lister.has_backups(&access, "team-a--1a2b3").await.unwrap());
        assert!(!lister.has_backups(&access, "team-c--00000").await.unwrap());
        let missing = BucketAccess {
            bucket: "pool-9".into(),
            ..access.clone()
        };
        assert!(lister.top_level(&missing).await.unwrap().is_empty());
        let gcp = BucketAccess {
            provider: "gcp".into(),
            ..access
        };
        assert!(matches!(
            lister.top_level(&gcp).await,
            Err(ListError::Unsupported(_))
        ));
    }
}
