//! One interface over a BackupStorageLocation's object storage: a local directory or S3.
//!
//! [`BackupStore::for_location`] reads a BSL spec the way Velero does (bucket and prefix with
//! surrounding slashes trimmed, no `/` inside the bucket) and the way Velero's AWS plugin reads
//! its `config` (`s3Url`, `region`, `s3ForcePathStyle`, `profile`, `insecureSkipTLSVerify`,
//! `publicUrl`, unknown keys rejected; without `region` the bucket's region is looked up, or
//! with `s3Url` taken from the server's or the profile's) and credentials (an AWS
//! shared-credentials file); the plugin's errors read as Velero reports them. The
//! simulator's own provider, [`LOCAL_PROVIDER`], keeps the bucket as a directory under a root
//! and needs no setup at all. Keys are always relative to the location's prefix and can never
//! leave it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::signer::{Method, Signer};
use object_store::{
    BackoffConfig, Certificate, ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};

use super::layout::ObjectLayout;
use super::signed_url::{DownloadUrlError, UrlSigner, download_url};
use crate::api::velero::BackupStorageLocationSpec;

/// The simulator's zero-setup provider: the bucket is a directory under the local root.
pub const LOCAL_PROVIDER: &str = crate::api::velero::LOCAL_OBJECT_STORE_PROVIDER;
/// Provider names of Velero's AWS plugin (Velero adds the `velero.io/` itself when missing).
pub const AWS_PROVIDERS: &[&str] = &["aws", "velero.io/aws"];

/// Config keys Velero's AWS plugin accepts (`ValidateObjectStoreConfigKeys` in its
/// `object_store.go`), plus `bucket`, `prefix` and `caCert`, which Velero adds to every store's
/// config. Only the ones in [`S3Settings`] change what the simulator does; the rest
/// (encryption, tagging, checksums, signature version) are accepted and have no effect.
const AWS_CONFIG_KEYS: &[&str] = &[
    "region",
    "s3Url",
    "publicUrl",
    "kmsKeyId",
    "customerKeyEncryptionFile",
    "customerKeyEncryptionSecret",
    "s3ForcePathStyle",
    "signatureVersion",
    "credentialsFile",
    "profile",
    "serverSideEncryption",
    "insecureSkipTLSVerify",
    "enableSharedConfig",
    "tagging",
    "checksumAlgorithm",
    "bucket",
    "prefix",
    "caCert",
];

/// Why a location cannot be used, or an operation on it failed.
///
/// The `Display` text is meant for a BSL's `status.message` and for logs: it never contains
/// secret values.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A provider the simulator does not implement.
    #[error(
        "unsupported object storage provider {provider:?}: the simulator supports \
         {LOCAL_PROVIDER:?} and \"aws\" (S3-compatible storage)"
    )]
    UnsupportedProvider {
        /// The provider as written in the BSL.
        provider: String,
    },
    /// Bucket or prefix unusable.
    #[error("{0}")]
    InvalidLocation(String),
    /// Provider config that Velero's plugin would refuse (the simulator's words).
    #[error("{0}")]
    InvalidConfig(String),
    /// An error Velero's AWS plugin returns, in its words, as Velero reports it after the
    /// plugin's gRPC call (`rpc error: code = Unknown desc = ...`).
    #[error("rpc error: code = Unknown desc = {0}")]
    Plugin(String),
    /// Missing or unusable credentials.
    #[error("{0}")]
    Credentials(String),
    /// A key or directory that is not a clean path relative to the prefix.
    #[error("invalid object key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The location cannot be used right now (BSL validation fails).
    #[error("{0}")]
    Unavailable(String),
    /// The object store refused or failed an operation.
    #[error("{operation} {key:?} failed: {source}")]
    Backend {
        /// What was attempted ("put", "get", "list", ...).
        operation: &'static str,
        /// The key relative to the prefix.
        key: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A local download URL cannot be built (the endpoint's base URL takes no path).
    #[error(transparent)]
    DownloadUrl(#[from] DownloadUrlError),
    /// The local provider's directory cannot be created or read.
    #[error("local object store {}: {source}", path.display())]
    LocalIo {
        /// The directory.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: std::io::Error,
    },
}

/// Which kind of storage a [`BackupStore`] talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreBackend {
    /// [`LOCAL_PROVIDER`]: the bucket is this directory.
    Local {
        /// `<local root>/<bucket>`.
        bucket_dir: PathBuf,
    },
    /// An S3-compatible service.
    S3 {
        /// The endpoint requests go to, bucket included (path style) or in the host.
        bucket_endpoint: String,
    },
}

/// A BSL's object storage: put, get, list and delete objects under its prefix.
#[derive(Debug, Clone)]
pub struct BackupStore {
    store: Arc<dyn ObjectStore>,
    /// Presigns GET URLs; `None` for the local provider, whose URLs the simulator signs itself.
    presigner: Option<Arc<dyn Signer>>,
    backend: StoreBackend,
    bucket: String,
    layout: ObjectLayout,
}

impl BackupStore {
    /// The store of a BSL.
    ///
    /// `credentials` is the content of the BSL's credential Secret key (an AWS
    /// shared-credentials file for `aws`; ignored by the local provider). `local_root` is
    /// where the local provider keeps its buckets; a bucket's directory is created here.
    /// Building an S3 store makes no request: reachability is [`BackupStore::check_available`]'s
    /// job, as it is Velero's BSL validation's.
    ///
    /// An `aws` location naming neither `region` nor `s3Url` needs its bucket's region looked
    /// up, which takes a request: this constructor does it as a Velero server without an AWS
    /// region in its environment would (the lookup fails, see
    /// [`BackupStore::for_location_in`]).
    pub fn for_location(
        spec: &BackupStorageLocationSpec,
        credentials: Option<&str>,
        local_root: &Path,
    ) -> Result<Self, StorageError> {
        Self::build(
            spec,
            credentials,
            local_root,
            &AwsEnvironment::default(),
            None,
        )
    }

    /// As [`BackupStore::for_location`], in the AWS environment `aws` of the Velero server:
    /// an `aws` location naming neither `region` nor `s3Url` has its bucket's region looked up
    /// first, as the AWS plugin's `Init` does (`GetBucketRegion`).
    pub async fn for_location_in(
        spec: &BackupStorageLocationSpec,
        credentials: Option<&str>,
        local_root: &Path,
        aws: &AwsEnvironment,
    ) -> Result<Self, StorageError> {
        let mut looked_up = None;
        if AWS_PROVIDERS.contains(&spec.provider.as_str()) {
            let settings = S3Settings::from_config(&spec.config.clone().unwrap_or_default())?;
            if settings.region.is_empty() && settings.s3_url.is_none() {
                let bucket = check_bucket(&spec.object_storage.bucket)?;
                looked_up = Some(get_bucket_region(&bucket, settings.force_path_style, aws).await?);
            }
        }
        Self::build(spec, credentials, local_root, aws, looked_up)
    }

    fn build(
        spec: &BackupStorageLocationSpec,
        credentials: Option<&str>,
        local_root: &Path,
        aws: &AwsEnvironment,
        looked_up_region: Option<String>,
    ) -> Result<Self, StorageError> {
        let provider = spec.provider.as_str();
        if provider.is_empty() {
            return Err(StorageError::InvalidLocation(
                "object storage provider name must not be empty".to_owned(),
            ));
        }
        let bucket = check_bucket(&spec.object_storage.bucket)?;
        let prefix = check_prefix(spec.object_storage.prefix.as_deref().unwrap_or_default())?;
        let layout = ObjectLayout::new(&prefix);

        if provider == LOCAL_PROVIDER {
            let bucket_dir = local_root.join(&bucket);
            std::fs::create_dir_all(&bucket_dir).map_err(|source| StorageError::LocalIo {
                path: bucket_dir.clone(),
                source,
            })?;
            let store = LocalFileSystem::new_with_prefix(&bucket_dir)
                .map_err(|source| StorageError::LocalIo {
                    path: bucket_dir.clone(),
                    source: std::io::Error::other(source),
                })?
                // Deleting a backup's last object removes its directory too, so deleted
                // backups leave no empty directories for backup sync to trip over.
                .with_automatic_cleanup(true);
            return Ok(Self {
                store: Arc::new(store),
                presigner: None,
                backend: StoreBackend::Local { bucket_dir },
                bucket,
                layout,
            });
        }
        if !AWS_PROVIDERS.contains(&provider) {
            return Err(StorageError::UnsupportedProvider {
                provider: provider.to_owned(),
            });
        }

        let config = spec.config.clone().unwrap_or_default();
        let mut settings = S3Settings::from_config(&config)?;
        if settings.region.is_empty() && settings.s3_url.is_none() {
            // The plugin's Init looks the bucket's region up before anything else; without an
            // AWS region of its own the SDK cannot even send that request.
            settings.region = looked_up_region.ok_or_else(|| missing_region("HeadBucket"))?;
        }
        let credentials = credentials.ok_or_else(|| {
            StorageError::Credentials(
                "no AWS credentials: the location has no credential Secret (spec.credential) \
                 and no default credentials were given"
                    .to_owned(),
            )
        })?;
        let keys = parse_shared_credentials(credentials, &settings.profile)?;
        if settings.region.is_empty() {
            // With s3Url and no region the plugin hands the SDK an empty region: the SDK takes
            // the server's AWS_REGION, else the profile's `region` (the credentials file is also
            // its config file); with neither, every request fails (velero#9963).
            settings.region = aws
                .region
                .clone()
                .filter(|region| !region.is_empty())
                .or_else(|| keys.region.clone())
                .ok_or_else(|| missing_region("ListObjectsV2"))?;
        }
        let ca_certificates = match &spec.object_storage.ca_cert {
            Some(encoded) => parse_ca_bundle(encoded)?,
            None => Vec::new(),
        };

        let build = |endpoint: Option<&url::Url>| {
            build_s3(&bucket, &settings, &keys, &ca_certificates, endpoint)
        };
        let (store, bucket_endpoint) = build(settings.s3_url.as_ref())?;
        let store = Arc::new(store);
        // Like the plugin, presign with `publicUrl` when given: the URL is for someone outside
        // the cluster network who cannot reach `s3Url`.
        let presigner: Arc<dyn Signer> = match &settings.public_url {
            Some(public_url) => Arc::new(build(Some(public_url))?.0),
            None => Arc::clone(&store) as Arc<dyn Signer>,
        };
        Ok(Self {
            store,
            presigner: Some(presigner),
            backend: StoreBackend::S3 { bucket_endpoint },
            bucket,
            layout,
        })
    }

    /// The bucket name, without slashes.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The layout under this location's prefix.
    pub fn layout(&self) -> &ObjectLayout {
        &self.layout
    }

    /// Which storage this is.
    pub fn backend(&self) -> &StoreBackend {
        &self.backend
    }

    /// True for [`LOCAL_PROVIDER`] locations.
    pub fn is_local(&self) -> bool {
        matches!(self.backend, StoreBackend::Local { .. })
    }

    /// The key in the bucket (prefix included) of `key`, after checking it.
    pub fn object_key(&self, key: &str) -> Result<String, StorageError> {
        check_key(key)?;
        Ok(self.layout.full_key(key))
    }

    /// Writes `data` under `key`, replacing what was there.
    pub async fn put(&self, key: &str, data: Bytes) -> Result<(), StorageError> {
        let path = self.path(key)?;
        self.store
            .put(&path, PutPayload::from(data))
            .await
            .map_err(|source| backend_error("put", key, source))?;
        Ok(())
    }

    /// The object under `key`, or `None` when there is none.
    pub async fn get(&self, key: &str) -> Result<Option<Bytes>, StorageError> {
        let path = self.path(key)?;
        let result = match self.store.get(&path).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(source) => return Err(backend_error("get", key, source)),
        };
        match result.bytes().await {
            Ok(bytes) => Ok(Some(bytes)),
            // Deleted between the request and reading its body.
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(source) => Err(backend_error("get", key, source)),
        }
    }

    /// Deletes the object under `key`; deleting a missing object succeeds, as on S3.
    pub async fn delete(&self, key: &str) -> Result<(), StorageError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(source) => Err(backend_error("delete", key, source)),
        }
    }

    /// Keys (relative to the prefix, sorted) of every object under the directory `dir`
    /// (`"backups/"`, `"backups/b1"`); `""` lists the whole prefix. Directory boundaries count:
    /// `backups/b1` does not list `backups/b10/...`.
    pub async fn list(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        let dir = check_dir(dir)?;
        let full_dir = self.layout.full_key(dir);
        let listing_path = if full_dir.is_empty() {
            None
        } else {
            Some(parse_path(&full_dir, dir)?)
        };
        let objects: Vec<_> = match self.store.list(listing_path.as_ref()).try_collect().await {
            Ok(objects) => objects,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(source) => return Err(backend_error("list", dir, source)),
        };
        let mut keys: Vec<String> = objects
            .iter()
            .filter_map(|meta| {
                self.layout
                    .relative_key(meta.location.as_ref())
                    .map(str::to_owned)
            })
            .collect();
        keys.sort();
        Ok(keys)
    }

    /// Deletes every object under the directory `dir` (as [`BackupStore::list`] finds them)
    /// and returns how many there were. An empty `dir`, the whole prefix, is refused.
    pub async fn delete_prefix(&self, dir: &str) -> Result<usize, StorageError> {
        if check_dir(dir)?.is_empty() {
            return Err(StorageError::InvalidKey {
                key: dir.to_owned(),
                reason: "refusing to delete everything under the location's prefix",
            });
        }
        let keys = self.list(dir).await?;
        // One by one like Velero's DeleteBackup; S3-compatible servers differ in their support
        // for multi-object delete.
        for key in &keys {
            self.delete(key).await?;
        }
        Ok(keys.len())
    }

    /// What Velero's BSL validation checks (`IsValid`): the bucket can be listed at the
    /// prefix, and the prefix holds no top-level directories other than Velero's own. The
    /// error's text is fit for the BSL's `status.message`.
    pub async fn check_available(&self) -> Result<(), StorageError> {
        if let StoreBackend::Local { bucket_dir } = &self.backend {
            // Zero setup: a local bucket that vanished is simply created again.
            std::fs::create_dir_all(bucket_dir).map_err(|source| {
                StorageError::Unavailable(format!(
                    "cannot create local bucket directory {}: {source}",
                    bucket_dir.display()
                ))
            })?;
        }
        let prefix_path = if self.layout.prefix().is_empty() {
            None
        } else {
            Some(parse_path(self.layout.prefix(), "")?)
        };
        let listing = match self.store.list_with_delimiter(prefix_path.as_ref()).await {
            Ok(listing) => listing,
            Err(error) => return Err(StorageError::Unavailable(self.unavailable_message(&error))),
        };
        let dirs: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|dir| self.layout.relative_key(dir.as_ref()))
            .map(|dir| format!("{dir}/"))
            .collect();
        let invalid = self
            .layout
            .invalid_top_level_dirs(dirs.iter().map(String::as_str));
        match invalid.len() {
            0 => Ok(()),
            // Velero's own wording, capped at three names as Velero caps it.
            1..=3 => Err(StorageError::Unavailable(format!(
                "Backup store contains invalid top-level directories: [{}]",
                invalid.join(" ")
            ))),
            count => Err(StorageError::Unavailable(format!(
                "Backup store contains {count} invalid top-level directories: [{} ...]",
                invalid[..3].join(" ")
            ))),
        }
    }

    /// A presigned S3 GET URL for `key`, valid for `ttl`; `None` for the local provider.
    pub async fn presigned_get(
        &self,
        key: &str,
        ttl: Duration,
    ) -> Result<Option<url::Url>, StorageError> {
        let Some(presigner) = &self.presigner else {
            return Ok(None);
        };
        let path = self.path(key)?;
        let url = presigner
            .signed_url(Method::GET, &path, ttl)
            .await
            .map_err(|source| backend_error("presign", key, source))?;
        Ok(Some(url))
    }

    /// A download URL for `key` valid for `ttl`: presigned by S3, or for the local provider
    /// one of the simulator's endpoint at `local_base`, signed by `local_signer` (expiry
    /// counted from `now`, the simulator's clock).
    pub async fn download_url(
        &self,
        key: &str,
        ttl: Duration,
        now: DateTime<Utc>,
        local_base: &url::Url,
        local_signer: &UrlSigner,
    ) -> Result<url::Url, StorageError> {
        if let Some(url) = self.presigned_get(key, ttl).await? {
            return Ok(url);
        }
        let full_key = self.object_key(key)?;
        Ok(download_url(
            local_base,
            local_signer,
            &self.bucket,
            &full_key,
            ttl,
            now,
        )?)
    }

    fn path(&self, key: &str) -> Result<ObjectPath, StorageError> {
        let full_key = self.object_key(key)?;
        parse_path(&full_key, key)
    }

    fn unavailable_message(&self, error: &object_store::Error) -> String {
        let bucket = &self.bucket;
        let at = match &self.backend {
            StoreBackend::Local { bucket_dir } => bucket_dir.display().to_string(),
            StoreBackend::S3 { bucket_endpoint } => bucket_endpoint.clone(),
        };
        if matches!(error, object_store::Error::NotFound { .. }) {
            return format!("bucket {bucket:?} does not exist ({at})");
        }
        // object_store reports S3 list failures as generic errors carrying the HTTP status and
        // the S3 error document; its typed error is not public, so the text is read instead.
        let text = error.to_string();
        let code = xml_element(&text, "Code");
        let detail = match (code, xml_element(&text, "Message")) {
            (Some(code), Some(message)) => format!("S3 {code}: {message}"),
            (Some(code), None) => format!("S3 {code}"),
            (None, _) => text.clone(),
        };
        let denied = matches!(
            error,
            object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }
        ) || text.contains("status code: 401")
            || text.contains("status code: 403");
        if code == Some("NoSuchBucket") {
            format!("bucket {bucket:?} does not exist ({at}): {detail}")
        } else if denied {
            format!("access to bucket {bucket:?} denied ({at}): {detail}")
        } else {
            format!("cannot list bucket {bucket:?} ({at}): {detail}")
        }
    }
}

/// The text of the first `<name>...</name>` in `text`, if any.
fn xml_element<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let length = text[start..].find(&close)?;
    Some(&text[start..start + length]).filter(|value| !value.is_empty())
}

/// What the Velero server's own AWS environment gives the AWS plugin's SDK: the region it picks
/// up (`AWS_REGION`), and where S3 itself answers (AWS, unless a test points it elsewhere).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwsEnvironment {
    /// The server's `AWS_REGION`; `None` when it has none.
    pub region: Option<String>,
    /// S3's endpoint for the bucket-region lookup, the bucket appended as a path; `None` for
    /// AWS (`https://<bucket>.s3.<region>.amazonaws.com`).
    pub s3_endpoint: Option<url::Url>,
}

/// How the AWS SDK refuses a request when it has no region (its endpoint rules' first check).
fn missing_region(operation: &str) -> StorageError {
    StorageError::Plugin(format!(
        "operation error S3: {operation}, failed to resolve service endpoint, endpoint rule \
         error, A region must be set when sending requests to S3."
    ))
}

/// The plugin's `GetBucketRegion` (the SDK's `manager.GetBucketRegion`): an anonymous
/// `HEAD /<bucket>` in the server's region, answered by the `X-Amz-Bucket-Region` header
/// whatever the status (S3 sends it with a 301 or 403 too); without it, "bucket not found" on
/// a 404, "unable to determine bucket's region" on a success, else the SDK's HTTP error.
pub async fn get_bucket_region(
    bucket: &str,
    path_style: bool,
    aws: &AwsEnvironment,
) -> Result<String, StorageError> {
    let Some(region) = aws.region.as_deref().filter(|region| !region.is_empty()) else {
        return Err(missing_region("HeadBucket"));
    };
    let url = match &aws.s3_endpoint {
        Some(endpoint) => format!("{}/{bucket}", endpoint.as_str().trim_end_matches('/')),
        None if path_style => format!("https://s3.{region}.amazonaws.com/{bucket}"),
        None => format!("https://{bucket}.s3.{region}.amazonaws.com/"),
    };
    let request_error = |detail: String| {
        StorageError::Plugin(format!(
            "operation error S3: HeadBucket, https response error StatusCode: 0, RequestID: , \
             HostID: , request send failed, Head {url:?}: {detail}"
        ))
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|error: http::uri::InvalidUri| request_error(error.to_string()))?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(Arc::new(rustls::crypto::ring::default_provider()))
        .map_err(|error| request_error(error.to_string()))?
        .https_or_http()
        .enable_http1()
        .build();
    let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector);
    let request = http::Request::head(uri)
        .body(http_body_util::Empty::new())
        .map_err(|error| request_error(error.to_string()))?;
    let response = tokio::time::timeout(Duration::from_secs(15), client.request(request))
        .await
        .map_err(|_| request_error("timeout".to_owned()))?
        .map_err(|error| request_error(error.to_string()))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let found = header("x-amz-bucket-region");
    if !found.is_empty() {
        return Ok(found);
    }
    let status = response.status();
    if status == http::StatusCode::NOT_FOUND {
        return Err(StorageError::Plugin("bucket not found".to_owned()));
    }
    if status.is_success() {
        return Err(StorageError::Plugin(
            "unable to determine bucket's region".to_owned(),
        ));
    }
    let reason = status.canonical_reason().unwrap_or("Unknown");
    Err(StorageError::Plugin(format!(
        "operation error S3: HeadBucket, https response error StatusCode: {}, RequestID: {}, \
         HostID: {}, api error {}: {reason}",
        status.as_u16(),
        header("x-amz-request-id"),
        header("x-amz-id-2"),
        reason.replace(' ', ""),
    )))
}

/// The AWS plugin's config as the simulator uses it.
#[derive(Debug, Clone, PartialEq)]
struct S3Settings {
    region: String,
    s3_url: Option<url::Url>,
    public_url: Option<url::Url>,
    force_path_style: bool,
    insecure_skip_tls_verify: bool,
    profile: String,
}

impl S3Settings {
    fn from_config(config: &BTreeMap<String, String>) -> Result<Self, StorageError> {
        let invalid: Vec<&str> = config
            .keys()
            .map(String::as_str)
            .filter(|key| !AWS_CONFIG_KEYS.contains(key))
            .collect();
        if !invalid.is_empty() {
            return Err(StorageError::Plugin(format!(
                "config has invalid keys [{}]; valid keys are [{}]",
                invalid.join(" "),
                AWS_CONFIG_KEYS.join(" ")
            )));
        }
        let value = |key: &str| config.get(key).map(String::as_str).unwrap_or_default();
        let s3_url = parse_s3_url(value("s3Url"))?;
        let public_url = parse_s3_url(value("publicUrl"))?;
        let region = value("region").to_owned();
        let profile = match value("profile") {
            "" => "default".to_owned(),
            profile => profile.to_owned(),
        };
        Ok(Self {
            region,
            s3_url,
            public_url,
            force_path_style: parse_go_bool(config, "s3ForcePathStyle")?,
            insecure_skip_tls_verify: parse_go_bool(config, "insecureSkipTLSVerify")?,
            profile,
        })
    }
}

/// Static keys read from a shared-credentials file.
#[derive(Clone, PartialEq)]
struct AwsKeys {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    /// The profile's `region`, which the SDK reads from the file used as its config file.
    region: Option<String>,
}

impl std::fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsKeys")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// Reads `profile` from an AWS shared-credentials file (`[name]` sections) or, since Velero
/// also hands the file to the SDK as a config file, a config file (`[profile name]`).
fn parse_shared_credentials(text: &str, profile: &str) -> Result<AwsKeys, StorageError> {
    let mut sections: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            let name = header
                .strip_prefix("profile ")
                .map(str::trim)
                .unwrap_or(header);
            sections.entry(name.to_owned()).or_default();
            current = Some(name.to_owned());
            continue;
        }
        let (Some(section), Some((key, value))) = (&current, line.split_once('=')) else {
            continue;
        };
        if let Some(entries) = sections.get_mut(section) {
            entries.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let entries = sections.get(profile).ok_or_else(|| {
        StorageError::Credentials(format!(
            "profile {profile:?} not found in the location's credentials"
        ))
    })?;
    let field = |name: &str| entries.get(name).filter(|value| !value.is_empty()).cloned();
    let missing = |name: &str| {
        StorageError::Credentials(format!(
            "profile {profile:?} of the location's credentials has no {name}"
        ))
    };
    Ok(AwsKeys {
        access_key_id: field("aws_access_key_id").ok_or_else(|| missing("aws_access_key_id"))?,
        secret_access_key: field("aws_secret_access_key")
            .ok_or_else(|| missing("aws_secret_access_key"))?,
        session_token: field("aws_session_token"),
        region: field("region"),
    })
}

/// Go's `strconv.ParseBool`, which the plugin uses; an absent key is false.
fn parse_go_bool(config: &BTreeMap<String, String>, key: &str) -> Result<bool, StorageError> {
    match config.get(key).map(String::as_str) {
        None | Some("") => Ok(false),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
        Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
        // `errors.Wrapf(err, "could not parse %s (expected bool)")` over strconv's error.
        Some(value) => Err(StorageError::Plugin(format!(
            "could not parse {key} (expected bool): strconv.ParseBool: parsing {value:?}: invalid syntax"
        ))),
    }
}

fn parse_s3_url(value: &str) -> Result<Option<url::Url>, StorageError> {
    if value.is_empty() {
        return Ok(None);
    }
    let invalid = || {
        StorageError::Plugin(format!(
            "Invalid s3 url {value}, URL must be valid according to \
             https://golang.org/pkg/net/url/#Parse and start with http:// or https://"
        ))
    };
    let url = url::Url::parse(value).map_err(|_| invalid())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid());
    }
    Ok(Some(url))
}

fn parse_ca_bundle(encoded: &str) -> Result<Vec<Certificate>, StorageError> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|error| {
            StorageError::InvalidConfig(format!("objectStorage.caCert is not base64: {error}"))
        })?;
    Certificate::from_pem_bundle(&pem).map_err(|error| {
        StorageError::InvalidConfig(format!(
            "objectStorage.caCert holds no usable PEM certificates: {error}"
        ))
    })
}

/// An S3 client for `bucket` at `endpoint` (the s3Url or publicUrl; AWS itself when `None`),
/// and the endpoint its requests go to.
fn build_s3(
    bucket: &str,
    settings: &S3Settings,
    keys: &AwsKeys,
    ca_certificates: &[Certificate],
    endpoint: Option<&url::Url>,
) -> Result<(object_store::aws::AmazonS3, String), StorageError> {
    // Virtual-hosted addressing puts the bucket in the host name, which an IP address cannot
    // carry; the AWS SDK falls back to path style there too.
    let path_style = settings.force_path_style
        || endpoint.is_some_and(|url| {
            matches!(
                url.host(),
                Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) | None
            ) || url.host_str() == Some("localhost")
        });
    let bucket_endpoint = match endpoint {
        Some(url) if path_style => {
            format!("{}/{bucket}", url.as_str().trim_end_matches('/'))
        }
        Some(url) => {
            let mut hosted = url.clone();
            let host = url.host_str().unwrap_or_default();
            hosted
                .set_host(Some(&format!("{bucket}.{host}")))
                .map_err(|error| {
                    StorageError::InvalidConfig(format!(
                        "bucket {bucket:?} cannot be put in the host of {url}: {error}"
                    ))
                })?;
            hosted.as_str().trim_end_matches('/').to_owned()
        }
        None if path_style => format!("https://s3.{}.amazonaws.com/{bucket}", settings.region),
        None => format!("https://{bucket}.s3.{}.amazonaws.com", settings.region),
    };

    let mut client_options = ClientOptions::new()
        .with_allow_http(endpoint.is_some_and(|url| url.scheme() == "http"))
        .with_allow_invalid_certificates(settings.insecure_skip_tls_verify)
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120));
    for certificate in ca_certificates {
        client_options = client_options.with_root_certificate(certificate.clone());
    }
    // Few, quick retries: an unreachable store should mark the BSL unavailable within seconds,
    // not after object_store's default three minutes of backoff.
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
        .with_region(&settings.region)
        .with_access_key_id(&keys.access_key_id)
        .with_secret_access_key(&keys.secret_access_key)
        .with_client_options(client_options)
        .with_retry(retry);
    if let Some(token) = &keys.session_token {
        builder = builder.with_token(token);
    }
    if endpoint.is_some() {
        builder = builder
            .with_endpoint(&bucket_endpoint)
            .with_virtual_hosted_style_request(true);
    } else {
        builder = builder.with_virtual_hosted_style_request(!path_style);
    }
    let store = builder.build().map_err(|error| {
        StorageError::InvalidConfig(format!("cannot set up S3 client: {error}"))
    })?;
    Ok((store, bucket_endpoint))
}

fn backend_error(operation: &'static str, key: &str, source: object_store::Error) -> StorageError {
    StorageError::Backend {
        operation,
        key: key.to_owned(),
        source,
    }
}

fn parse_path(full_key: &str, key: &str) -> Result<ObjectPath, StorageError> {
    ObjectPath::parse(full_key).map_err(|_| StorageError::InvalidKey {
        key: key.to_owned(),
        reason: "not a valid object path",
    })
}

/// The bucket with surrounding slashes trimmed, as Velero trims it.
fn check_bucket(bucket: &str) -> Result<String, StorageError> {
    let trimmed = bucket.trim_matches('/');
    if trimmed.contains('/') {
        return Err(StorageError::InvalidLocation(format!(
            "backup storage location's bucket name {bucket:?} must not contain a '/' (if using \
             a prefix, put it in the 'Prefix' field instead)"
        )));
    }
    if let Some(reason) = segment_problem(trimmed) {
        return Err(StorageError::InvalidLocation(format!(
            "backup storage location's bucket name {bucket:?} is invalid: {reason}"
        )));
    }
    Ok(trimmed.to_owned())
}

/// The prefix with surrounding slashes trimmed; no segment may leave the bucket.
fn check_prefix(prefix: &str) -> Result<String, StorageError> {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    if let Some(reason) = trimmed.split('/').find_map(segment_problem) {
        return Err(StorageError::InvalidLocation(format!(
            "backup storage location's prefix {prefix:?} is invalid: {reason}"
        )));
    }
    Ok(trimmed.to_owned())
}

fn check_key(key: &str) -> Result<(), StorageError> {
    let invalid = |reason| StorageError::InvalidKey {
        key: key.to_owned(),
        reason,
    };
    if key.is_empty() {
        return Err(invalid("it is empty"));
    }
    match key.split('/').find_map(segment_problem) {
        Some(reason) => Err(invalid(reason)),
        None => Ok(()),
    }
}

/// A directory for listing: `""` for everything, else a key with an optional trailing slash.
fn check_dir(dir: &str) -> Result<&str, StorageError> {
    let trimmed = dir.strip_suffix('/').unwrap_or(dir);
    if !trimmed.is_empty() {
        check_key(trimmed)?;
    }
    Ok(trimmed)
}

/// What makes one path segment unusable, if anything. `%` and `#` are refused because the
/// local store and the download endpoint would map them to different file names.
fn segment_problem(segment: &str) -> Option<&'static str> {
    if segment.is_empty() {
        Some("it has an empty path segment")
    } else if segment == "." || segment == ".." {
        Some("it has a relative path segment (. or ..)")
    } else if segment.contains('\\') {
        Some("it contains a backslash")
    } else if segment.contains('%') || segment.contains('#') {
        Some("it contains % or #")
    } else if segment.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::velero::ObjectStorageLocation;

    const CREDENTIALS: &str = "[default]\naws_access_key_id=AK\naws_secret_access_key=SK\n\n[backup]\naws_access_key_id = AK2\naws_secret_access_key = SK2\naws_session_token = TOKEN\n";

    fn spec(provider: &str, bucket: &str, prefix: Option<&str>) -> BackupStorageLocationSpec {
        BackupStorageLocationSpec {
            provider: provider.to_owned(),
            object_storage: ObjectStorageLocation {
                bucket: bucket.to_owned(),
                prefix: prefix.map(str::to_owned),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn s3_spec(config: &[(&str, &str)]) -> BackupStorageLocationSpec {
        let mut spec = spec("aws", "velero", Some("/clusters/prod/"));
        spec.config = Some(
            config
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect(),
        );
        spec
    }

    fn install_crypto() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }

    #[tokio::test]
    async fn local_store_puts_gets_lists_and_deletes() {
        let root = tempfile::tempdir().unwrap();
        let store = BackupStore::for_location(
            &spec(LOCAL_PROVIDER, "/velero/", Some("p/q")),
            None,
            root.path(),
        )
        .unwrap();
        assert!(store.is_local());
        assert_eq!(store.bucket(), "velero");
        assert!(root.path().join("velero").is_dir());
        store.check_available().await.unwrap();

        let layout = store.layout().clone();
        store
            .put(&layout.backup_log_key("b1"), Bytes::from_static(b"log"))
            .await
            .unwrap();
        store
            .put(&layout.backup_metadata_key("b1"), Bytes::from_static(b"{}"))
            .await
            .unwrap();
        store
            .put(
                &layout.backup_metadata_key("b10"),
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
        store
            .put(&layout.restore_log_key("r1"), Bytes::from_static(b"rlog"))
            .await
            .unwrap();
        // On disk under bucket and prefix, exactly where Velero's keys say.
        assert_eq!(
            std::fs::read(root.path().join("velero/p/q/backups/b1/b1-logs.gz")).unwrap(),
            b"log"
        );

        assert_eq!(
            store.get("backups/b1/b1-logs.gz").await.unwrap().unwrap(),
            Bytes::from_static(b"log")
        );
        assert_eq!(store.get("backups/b1/nothing").await.unwrap(), None);
        assert_eq!(
            store.list("backups/b1").await.unwrap(),
            ["backups/b1/b1-logs.gz", "backups/b1/velero-backup.json"]
        );
        let all = store.list("").await.unwrap();
        assert_eq!(all.len(), 4);
        assert_eq!(
            layout.backup_names(all.iter().map(String::as_str)),
            ["b1", "b10"]
        );
        assert!(store.list("backups/none/").await.unwrap().is_empty());

        assert_eq!(store.delete_prefix("backups/b1/").await.unwrap(), 2);
        assert!(store.list("backups/b1").await.unwrap().is_empty());
        assert_eq!(store.list("backups/").await.unwrap().len(), 1);
        assert!(!root.path().join("velero/p/q/backups/b1").exists());
        store.delete("backups/b1/b1-logs.gz").await.unwrap();
        store.check_available().await.unwrap();

        assert!(
            store
                .presigned_get("backups/b10/velero-backup.json", Duration::from_secs(60))
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn keys_never_leave_the_prefix() {
        let root = tempfile::tempdir().unwrap();
        let store = BackupStore::for_location(
            &spec(LOCAL_PROVIDER, "velero", Some("p")),
            None,
            root.path(),
        )
        .unwrap();
        for key in [
            "",
            "/abs",
            "../x",
            "backups/../../x",
            "backups/./x",
            "a//b",
            "a\\b",
            "a%2e",
            "x#1",
            "a\nb",
        ] {
            let error = store
                .put(key, Bytes::from_static(b"x"))
                .await
                .expect_err(key);
            assert!(
                matches!(error, StorageError::InvalidKey { .. }),
                "{key}: {error}"
            );
            assert!(store.get(key).await.is_err(), "{key}");
        }
        assert!(store.list("../").await.is_err());
        let error = store.delete_prefix("").await.unwrap_err();
        assert!(matches!(error, StorageError::InvalidKey { .. }), "{error}");
        assert!(store.delete_prefix("/").await.is_err());
        for (bucket, prefix) in [
            ("a/b", None),
            ("..", None),
            ("", None),
            ("velero", Some("../up")),
            ("velero", Some("a/./b")),
        ] {
            let error =
                BackupStore::for_location(&spec(LOCAL_PROVIDER, bucket, prefix), None, root.path())
                    .unwrap_err();
            assert!(matches!(error, StorageError::InvalidLocation(_)), "{error}");
        }
        let error =
            BackupStore::for_location(&spec(LOCAL_PROVIDER, "a/b", None), None, root.path())
                .unwrap_err();
        assert!(
            error.to_string().contains("must not contain a '/'"),
            "{error}"
        );
        assert!(!root.path().join("up").exists());
    }

    #[tokio::test]
    async fn foreign_top_level_directories_make_the_location_unavailable() {
        let root = tempfile::tempdir().unwrap();
        let store =
            BackupStore::for_location(&spec(LOCAL_PROVIDER, "velero", None), None, root.path())
                .unwrap();
        store
            .put("backups/b/velero-backup.json", Bytes::from_static(b"{}"))
            .await
            .unwrap();
        store
            .put("README", Bytes::from_static(b"top-level objects are fine"))
            .await
            .unwrap();
        store.check_available().await.unwrap();
        store
            .put("photos/cat.jpg", Bytes::from_static(b"x"))
            .await
            .unwrap();
        let error = store.check_available().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "Backup store contains invalid top-level directories: [photos]"
        );
        for dir in ["a", "b", "c"] {
            store
                .put(&format!("{dir}/x"), Bytes::from_static(b"x"))
                .await
                .unwrap();
        }
        let error = store.check_available().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "Backup store contains 4 invalid top-level directories: [a b c ...]"
        );
        // A vanished local bucket is recreated, not reported.
        std::fs::remove_dir_all(root.path().join("velero")).unwrap();
        store.check_available().await.unwrap();
    }

    #[test]
    fn s3_error_documents_are_summarized() {
        let text = "Server returned non-2xx status code: 403 Forbidden: <?xml version=\"1.0\"?>\
                    <Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
        assert_eq!(xml_element(text, "Code"), Some("AccessDenied"));
        assert_eq!(xml_element(text, "Message"), Some("Access Denied"));
        assert_eq!(xml_element(text, "RequestId"), None);
        assert_eq!(xml_element("<Code></Code>", "Code"), None);
    }

    #[test]
    fn providers_are_checked() {
        let root = tempfile::tempdir().unwrap();
        let error =
            BackupStore::for_location(&spec("gcp", "velero", None), None, root.path()).unwrap_err();
        assert!(
            matches!(error, StorageError::UnsupportedProvider { ref provider } if provider == "gcp")
        );
        assert!(
            error
                .to_string()
                .contains("unsupported object storage provider \"gcp\"")
        );
        let error =
            BackupStore::for_location(&spec("", "velero", None), None, root.path()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "object storage provider name must not be empty"
        );
    }

    #[test]
    fn shared_credentials_are_read_by_profile() {
        let default = parse_shared_credentials(CREDENTIALS, "default").unwrap();
        assert_eq!(default.access_key_id, "AK");
        assert_eq!(default.secret_access_key, "SK");
        assert_eq!(default.session_token, None);
        let backup = parse_shared_credentials(CREDENTIALS, "backup").unwrap();
        assert_eq!(backup.access_key_id, "AK2");
        assert_eq!(backup.session_token.as_deref(), Some("TOKEN"));
        let config_style =
            "# comment\n[profile minio]\nAWS_ACCESS_KEY_ID=m\n; other\naws_secret_access_key=s=x\n";
        let minio = parse_shared_credentials(config_style, "minio").unwrap();
        assert_eq!(
            (
                minio.access_key_id.as_str(),
                minio.secret_access_key.as_str()
            ),
            ("m", "s=x")
        );

        let error = parse_shared_credentials(CREDENTIALS, "missing").unwrap_err();
        assert_eq!(
            error.to_string(),
            "profile \"missing\" not found in the location's credentials"
        );
        let error =
            parse_shared_credentials("[default]\naws_access_key_id=AK\n", "default").unwrap_err();
        assert!(
            error.to_string().contains("aws_secret_access_key"),
            "{error}"
        );
        // Secrets never show up in debug output.
        assert!(!format!("{default:?}").contains("SK"));
    }

    #[test]
    fn aws_config_is_read_like_the_plugin() {
        let settings = S3Settings::from_config(
            &[
                ("region", "minio"),
                ("s3Url", "http://minio.velero.svc:9000"),
                ("s3ForcePathStyle", "True"),
                ("insecureSkipTLSVerify", "0"),
                ("profile", "backup"),
                ("checksumAlgorithm", ""),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        )
        .unwrap();
        assert_eq!(settings.region, "minio");
        assert!(settings.force_path_style);
        assert!(!settings.insecure_skip_tls_verify);
        assert_eq!(settings.profile, "backup");

        let root = tempfile::tempdir().unwrap();
        let build = |config: &[(&str, &str)]| {
            BackupStore::for_location(&s3_spec(config), Some(CREDENTIALS), root.path())
        };
        install_crypto();
        let error = build(&[("region", "x"), ("bogus", "1"), ("alsoBogus", "2")]).unwrap_err();
        assert!(
            error.to_string().starts_with(
                "rpc error: code = Unknown desc = config has invalid keys [alsoBogus bogus]; \
                 valid keys are [region s3Url"
            ),
            "{error}"
        );
        let error = build(&[("region", "x"), ("s3ForcePathStyle", "yes")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rpc error: code = Unknown desc = could not parse s3ForcePathStyle (expected bool): \
             strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        let error = build(&[("region", "x"), ("s3Url", "ftp://minio")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rpc error: code = Unknown desc = Invalid s3 url ftp://minio, URL must be valid \
             according to https://golang.org/pkg/net/url/#Parse and start with http:// or https://"
        );
        // s3Url without a region anywhere: every request fails as in velero#9963.
        let error = build(&[("s3Url", "http://minio:9000")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rpc error: code = Unknown desc = operation error S3: ListObjectsV2, failed to \
             resolve service endpoint, endpoint rule error, A region must be set when sending \
             requests to S3."
        );
        // Neither region nor s3Url: the bucket's region cannot even be asked for without an
        // AWS region of the server's own.
        let error = build(&[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rpc error: code = Unknown desc = operation error S3: HeadBucket, failed to resolve \
             service endpoint, endpoint rule error, A region must be set when sending requests \
             to S3."
        );
        // The profile's region serves a location with s3Url and no region.
        let with_region =
            "[default]\naws_access_key_id=AK\naws_secret_access_key=SK\nregion = eu-central-1\n";
        let store = BackupStore::for_location(
            &s3_spec(&[("s3Url", "http://minio:9000"), ("s3ForcePathStyle", "true")]),
            Some(with_region),
            root.path(),
        )
        .unwrap();
        assert_eq!(
            store.backend(),
            &StoreBackend::S3 {
                bucket_endpoint: "http://minio:9000/velero".into()
            }
        );
        let error = build(&[("region", "x"), ("profile", "nobody")]).unwrap_err();
        assert!(matches!(error, StorageError::Credentials(_)), "{error}");
        let error =
            BackupStore::for_location(&s3_spec(&[("region", "x")]), None, root.path()).unwrap_err();
        assert!(matches!(error, StorageError::Credentials(_)), "{error}");
        let mut bad_ca = s3_spec(&[("region", "x")]);
        bad_ca.object_storage.ca_cert = Some("not base64!".into());
        assert!(matches!(
            BackupStore::for_location(&bad_ca, Some(CREDENTIALS), root.path()),
            Err(StorageError::InvalidConfig(_))
        ));
    }

    #[tokio::test]
    async fn s3_endpoints_and_presigned_urls() {
        install_crypto();
        let root = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(600);

        // Path style against an S3-compatible server, as MinIO users configure it.
        let store = BackupStore::for_location(
            &s3_spec(&[
                ("region", "minio"),
                ("s3Url", "http://minio.velero.svc:9000/"),
                ("s3ForcePathStyle", "true"),
            ]),
            Some(CREDENTIALS),
            root.path(),
        )
        .unwrap();
        assert_eq!(
            store.backend(),
            &StoreBackend::S3 {
                bucket_endpoint: "http://minio.velero.svc:9000/velero".into()
            }
        );
        let url = store
            .presigned_get("backups/b/b-logs.gz", ttl)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(url.host_str(), Some("minio.velero.svc"));
        assert_eq!(url.path(), "/velero/clusters/prod/backups/b/b-logs.gz");
        let query: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(query["X-Amz-Expires"], "600");
        assert!(query["X-Amz-Credential"].starts_with("AK/"), "{query:?}");
        assert!(query["X-Amz-Credential"].ends_with("/minio/s3/aws4_request"));
        assert_eq!(query["X-Amz-Signature"].len(), 64);
        // A location's download URL for S3 is the presigned one, whatever the local endpoint.
        let download = store
            .download_url(
                "backups/b/b-logs.gz",
                ttl,
                Utc::now(),
                &url::Url::parse("http://sim.local/").unwrap(),
                &UrlSigner::random(),
            )
            .await
            .unwrap();
        assert_eq!(download.host_str(), Some("minio.velero.svc"));

        // Virtual-hosted style by default, with the profile's keys; presigned with publicUrl.
        let store = BackupStore::for_location(
            &s3_spec(&[
                ("region", "eu-west-1"),
                ("s3Url", "https://s3.example.com"),
                ("publicUrl", "https://public.example.com"),
                ("profile", "backup"),
            ]),
            Some(CREDENTIALS),
            root.path(),
        )
        .unwrap();
        assert_eq!(
            store.backend(),
            &StoreBackend::S3 {
                bucket_endpoint: "https://velero.s3.example.com".into()
            }
        );
        let url = store
            .presigned_get("backups/b/b.tar.gz", ttl)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(url.host_str(), Some("velero.public.example.com"));
        assert_eq!(url.path(), "/clusters/prod/backups/b/b.tar.gz");
        let query: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
        assert!(query["X-Amz-Credential"].starts_with("AK2/"));
        assert_eq!(query["X-Amz-Security-Token"], "TOKEN");

        // AWS itself when there is no s3Url.
        let store = BackupStore::for_location(
            &s3_spec(&[("region", "us-west-2")]),
            Some(CREDENTIALS),
            root.path(),
        )
        .unwrap();
        assert_eq!(
            store.backend(),
            &StoreBackend::S3 {
                bucket_endpoint: "https://velero.s3.us-west-2.amazonaws.com".into()
            }
        );
        assert!(store.presigned_get("../x", ttl).await.is_err());
    }

    #[tokio::test]
    async fn local_download_urls_are_signed_by_the_simulator() {
        let root = tempfile::tempdir().unwrap();
        let store = BackupStore::for_location(
            &spec(LOCAL_PROVIDER, "velero", Some("p")),
            None,
            root.path(),
        )
        .unwrap();
        let signer = UrlSigner::with_key([3; 32]);
        let now = DateTime::from_timestamp(1_000, 0).unwrap();
        let url = store
            .download_url(
                "backups/b/b-logs.gz",
                Duration::from_secs(600),
                now,
                &url::Url::parse("http://127.0.0.1:8085/").unwrap(),
                &signer,
            )
            .await
            .unwrap();
        assert_eq!(url.path(), "/download/velero/p/backups/b/b-logs.gz");
        signer
            .verify("velero", "p/backups/b/b-logs.gz", url.query().unwrap(), now)
            .unwrap();
    }

    /// A stand-in for S3's `HEAD /<bucket>`: `region-*` buckets answer with their region
    /// (`moved-*` with a 301, as S3 does for another region), `gone` with a 404, `open` with a
    /// bare 200, anything else with a 403.
    async fn bucket_region_server() -> url::Url {
        use axum::extract::Path as UrlPath;
        use axum::http::{HeaderMap, StatusCode};
        async fn head(UrlPath(bucket): UrlPath<String>) -> (StatusCode, HeaderMap) {
            let mut headers = HeaderMap::new();
            if let Some(region) = bucket.strip_prefix("region-") {
                headers.insert("x-amz-bucket-region", region.parse().unwrap());
                return (StatusCode::OK, headers);
            }
            if let Some(region) = bucket.strip_prefix("moved-") {
                headers.insert("x-amz-bucket-region", region.parse().unwrap());
                return (StatusCode::MOVED_PERMANENTLY, headers);
            }
            headers.insert("x-amz-request-id", "REQ1".parse().unwrap());
            headers.insert("x-amz-id-2", "HOST1".parse().unwrap());
            let status = match bucket.as_str() {
                "gone" => StatusCode::NOT_FOUND,
                "open" => StatusCode::OK,
                _ => StatusCode::FORBIDDEN,
            };
            (status, headers)
        }
        let app = axum::Router::new().route("/{bucket}", axum::routing::head(head));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        url::Url::parse(&format!("http://{address}")).unwrap()
    }

    /// velero-plugin-for-aws `helpers.go` `GetBucketRegion` over the SDK's
    /// `manager.GetBucketRegion`, as `object_store.go`'s `Init` calls it when a location names
    /// neither `region` nor `s3Url`.
    #[tokio::test]
    async fn bucket_region_is_looked_up_like_the_plugin() {
        install_crypto();
        let endpoint = bucket_region_server().await;
        let aws = AwsEnvironment {
            region: Some("us-east-1".into()),
            s3_endpoint: Some(endpoint),
        };
        assert_eq!(
            get_bucket_region("region-eu-west-3", false, &aws)
                .await
                .unwrap(),
            "eu-west-3"
        );
        assert_eq!(
            get_bucket_region("moved-ap-south-1", true, &aws)
                .await
                .unwrap(),
            "ap-south-1"
        );
        let message = |result: Result<String, StorageError>| result.unwrap_err().to_string();
        assert_eq!(
            message(get_bucket_region("gone", false, &aws).await),
            "rpc error: code = Unknown desc = bucket not found"
        );
        assert_eq!(
            message(get_bucket_region("open", false, &aws).await),
            "rpc error: code = Unknown desc = unable to determine bucket's region"
        );
        assert_eq!(
            message(get_bucket_region("secret", false, &aws).await),
            "rpc error: code = Unknown desc = operation error S3: HeadBucket, https response \
             error StatusCode: 403, RequestID: REQ1, HostID: HOST1, api error Forbidden: Forbidden"
        );
        let no_region = AwsEnvironment {
            region: None,
            ..aws.clone()
        };
        assert!(
            message(get_bucket_region("region-eu-west-3", false, &no_region).await)
                .ends_with("HeadBucket, failed to resolve service endpoint, endpoint rule error, A region must be set when sending requests to S3.")
        );

        // The store of a location naming neither: AWS in the looked-up region.
        let root = tempfile::tempdir().unwrap();
        let mut spec = s3_spec(&[]);
        spec.object_storage.bucket = "region-eu-west-3".into();
        let store = BackupStore::for_location_in(&spec, Some(CREDENTIALS), root.path(), &aws)
            .await
            .unwrap();
        assert_eq!(
            store.backend(),
            &StoreBackend::S3 {
                bucket_endpoint: "https://region-eu-west-3.s3.eu-west-3.amazonaws.com".into()
            }
        );
        spec.object_storage.bucket = "gone".into();
        let error = BackupStore::for_location_in(&spec, Some(CREDENTIALS), root.path(), &aws)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "rpc error: code = Unknown desc = bucket not found"
        );
        // With s3Url the plugin looks nothing up: the server's region is the SDK's.
        let store = BackupStore::for_location_in(
            &s3_spec(&[("s3Url", "http://minio:9000"), ("s3ForcePathStyle", "true")]),
            Some(CREDENTIALS),
            root.path(),
            &aws,
        )
        .await
        .unwrap();
        assert_eq!(
            store.backend(),
            &StoreBackend::S3 {
                bucket_endpoint: "http://minio:9000/velero".into()
            }
        );
    }
}
