//! The Velero simulator's object storage against a real S3-compatible server (`s3s-fs`).
//!
//! `s3s-fs` checks SigV4 signatures and keeps objects as files, so this proves the BSL
//! configuration Velero users write for MinIO or Ceph (provider `aws`, `s3Url`, `region`,
//! `s3ForcePathStyle`, a shared-credentials file) really stores, lists, deletes and presigns.
//! `scripts/test.sh` installs the server; without it the tests print why and pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/s3.rs"]
mod s3;
mod support;
use s3::{ACCESS_KEY, S3Server, SECRET_KEY};
use support::dechunk;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nac::api::velero::{BackupStorageLocationSpec, ObjectStorageLocation};
use nac::manifest::tarball::{self, BackupItem};
use nac::sim::velero::storage::{BackupStore, StorageError};
use serde_json::json;

const BUCKET: &str = "velero";
const PREFIX: &str = "clusters/prod";

/// Starts `s3s-fs` with the test bucket; `None` when it is not installed.
fn start_server() -> Option<S3Server> {
    S3Server::start(&[BUCKET])
}

fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn location(server: &S3Server, bucket: &str, prefix: Option<&str>) -> BackupStorageLocationSpec {
    BackupStorageLocationSpec {
        provider: "aws".to_owned(),
        config: Some(
            [
                ("region", "minio"),
                ("s3Url", server.url().as_str()),
                ("s3ForcePathStyle", "true"),
                ("profile", "backup"),
            ]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect(),
        ),
        object_storage: ObjectStorageLocation {
            bucket: bucket.to_owned(),
            prefix: prefix.map(str::to_owned),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn credentials(access_key: &str, secret_key: &str) -> String {
    // A decoy default profile: the location's `profile` must pick the right one.
    format!(
        "[default]\naws_access_key_id=nobody\naws_secret_access_key=nothing\n\n\
         [backup]\naws_access_key_id = {access_key}\naws_secret_access_key = {secret_key}\n"
    )
}

fn store(server: &S3Server, bucket: &str, credentials_text: &str) -> BackupStore {
    let local_root = server.root.path().join("unused-local-root");
    BackupStore::for_location(
        &location(server, bucket, Some(PREFIX)),
        Some(credentials_text),
        &local_root,
    )
    .unwrap()
}

/// A plain HTTP/1.1 GET (no client library needed for one request): status and body.
fn http_get(url: &url::Url) -> (u16, Vec<u8>) {
    let host = url.host_str().unwrap();
    let port = url.port_or_known_default().unwrap();
    let mut target = url.path().to_owned();
    if let Some(query) = url.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut stream = TcpStream::connect((host, port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let body = response[split + 4..].to_vec();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("status code");
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(&body)
    } else {
        body
    };
    (status, body)
}

fn config_map(name: &str) -> BackupItem {
    BackupItem {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        resource: "configmaps".into(),
        namespace: Some("team-a".into()),
        name: name.into(),
        object: json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "team-a"}, "data": {"k": "v"}}),
    }
}

#[tokio::test]
async fn backup_store_works_against_a_real_s3_server() {
    install_crypto();
    let Some(server) = start_server() else { return };
    let store = store(&server, BUCKET, &credentials(ACCESS_KEY, SECRET_KEY));
    store.check_available().await.unwrap();

    let layout = store.layout().clone();
    let items = vec![config_map("settings"), config_map("flags")];
    let contents = tarball::write_backup_tarball(&items).unwrap();
    store
        .put(&layout.backup_contents_key("b1"), Bytes::from(contents))
        .await
        .unwrap();
    store
        .put(
            &layout.backup_metadata_key("b1"),
            Bytes::from_static(b"{\"kind\":\"Backup\"}"),
        )
        .await
        .unwrap();
    store
        .put(
            &layout.backup_log_key("b1"),
            Bytes::from(tarball::gzip(b"level=info msg=done\n")),
        )
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
        .put(
            &layout.restore_log_key("r1"),
            Bytes::from(tarball::gzip(b"restored\n")),
        )
        .await
        .unwrap();

    // Really stored: s3s-fs keeps each object as a file under bucket and prefix.
    assert!(
        server
            .bucket_dir(BUCKET)
            .join("clusters/prod/backups/b1/velero-backup.json")
            .is_file()
    );

    let read = store
        .get(&layout.backup_contents_key("b1"))
        .await
        .unwrap()
        .unwrap();
    let mut expected = items.clone();
    expected.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(tarball::read_backup_tarball(&read).unwrap(), expected);
    assert_eq!(store.get("backups/b1/missing.json").await.unwrap(), None);

    assert_eq!(
        store.list("backups/b1").await.unwrap(),
        [
            "backups/b1/b1-logs.gz",
            "backups/b1/b1.tar.gz",
            "backups/b1/velero-backup.json"
        ]
    );
    let everything = store.list("").await.unwrap();
    assert_eq!(everything.len(), 5);
    assert_eq!(
        layout.backup_names(everything.iter().map(String::as_str)),
        ["b1", "b10"]
    );
    assert_eq!(
        layout.restore_names(everything.iter().map(String::as_str)),
        ["r1"]
    );

    assert_eq!(store.delete_prefix("backups/b1/").await.unwrap(), 3);
    assert!(store.list("backups/b1").await.unwrap().is_empty());
    assert_eq!(
        store.list("backups/").await.unwrap(),
        ["backups/b10/velero-backup.json"]
    );
    store
        .delete("backups/b10/velero-backup.json")
        .await
        .unwrap();
    // Deleting what is gone succeeds, as S3 does.
    store
        .delete("backups/b10/velero-backup.json")
        .await
        .unwrap();
    store.check_available().await.unwrap();

    // A foreign directory under the prefix makes the location unavailable, as in Velero.
    store
        .put("photos/cat.jpg", Bytes::from_static(b"meow"))
        .await
        .unwrap();
    let error = store.check_available().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "Backup store contains invalid top-level directories: [photos]"
    );
}

#[tokio::test]
async fn wrong_credentials_and_missing_buckets_are_unavailable() {
    install_crypto();
    let Some(server) = start_server() else { return };

    let wrong_secret = store(&server, BUCKET, &credentials(ACCESS_KEY, "not-the-secret"));
    let error = wrong_secret.check_available().await.unwrap_err();
    assert!(matches!(error, StorageError::Unavailable(_)), "{error}");
    println!("wrong secret: {error}");
    assert!(
        error
            .to_string()
            .starts_with("access to bucket \"velero\" denied ("),
        "{error}"
    );
    assert!(
        error.to_string().ends_with("S3 SignatureDoesNotMatch"),
        "{error}"
    );
    let error = wrong_secret
        .put("backups/b/velero-backup.json", Bytes::from_static(b"{}"))
        .await
        .unwrap_err();
    assert!(matches!(error, StorageError::Backend { .. }), "{error}");

    let unknown_key = store(&server, BUCKET, &credentials("someone-else", SECRET_KEY));
    let error = unknown_key.check_available().await.unwrap_err();
    assert!(matches!(error, StorageError::Unavailable(_)), "{error}");
    println!("unknown access key: {error}");
    assert!(error.to_string().contains("denied"), "{error}");

    let missing = store(
        &server,
        "no-such-bucket",
        &credentials(ACCESS_KEY, SECRET_KEY),
    );
    let error = missing.check_available().await.unwrap_err();
    let message = error.to_string();
    println!("missing bucket: {message}");
    assert!(
        message.starts_with("bucket \"no-such-bucket\" does not exist"),
        "{message}"
    );
    // (No PUT check here: s3s-fs creates a missing bucket's directory on PUT, unlike S3.
    // Velero stops at BSL validation anyway, which is what check_available is.)

    // Nothing listening: unavailable within the short retry budget, not minutes later.
    let port = server.port;
    drop(server);
    let root = tempfile::tempdir().unwrap();
    let mut spec = BackupStorageLocationSpec {
        provider: "velero.io/aws".to_owned(),
        object_storage: ObjectStorageLocation {
            bucket: BUCKET.to_owned(),
            ..Default::default()
        },
        ..Default::default()
    };
    spec.config = Some(
        [
            ("region", "minio".to_owned()),
            ("s3Url", format!("http://127.0.0.1:{port}")),
            ("s3ForcePathStyle", "true".to_owned()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect(),
    );
    let offline = BackupStore::for_location(
        &spec,
        Some("[default]\naws_access_key_id=AK\naws_secret_access_key=SK\n"),
        root.path(),
    )
    .unwrap();
    let started = Instant::now();
    let error = offline.check_available().await.unwrap_err();
    println!("nothing listening: {error}");
    assert!(matches!(error, StorageError::Unavailable(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("cannot list bucket \"velero\" (http://127.0.0.1:"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn presigned_urls_serve_the_object_and_refuse_tampering() {
    install_crypto();
    let Some(server) = start_server() else { return };
    let store = store(&server, BUCKET, &credentials(ACCESS_KEY, SECRET_KEY));
    let log = tarball::gzip(b"level=info msg=\"Backup completed\"\n");
    let key = store.layout().backup_log_key("b1");
    store.put(&key, Bytes::from(log.clone())).await.unwrap();
    store
        .put(
            &store.layout().backup_results_key("b1"),
            Bytes::from(tarball::gzip(b"{}")),
        )
        .await
        .unwrap();

    let url = store
        .presigned_get(&key, Duration::from_secs(600))
        .await
        .unwrap()
        .expect("S3 locations presign");
    assert_eq!(url.path(), "/velero/clusters/prod/backups/b1/b1-logs.gz");
    let (status, body) = http_get(&url);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, log);
    assert_eq!(
        tarball::gunzip(&body).unwrap(),
        b"level=info msg=\"Backup completed\"\n"
    );

    // Another object under the same signature.
    let mut other_object = url.clone();
    other_object.set_path("/velero/clusters/prod/backups/b1/b1-results.gz");
    let (status, _) = http_get(&other_object);
    assert_eq!(status, 403);

    // A longer validity than was signed.
    let mut longer = url.clone();
    let query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(name, value)| {
            let value = if name == "X-Amz-Expires" {
                "604800".to_owned()
            } else {
                value.into_owned()
            };
            (name.into_owned(), value)
        })
        .collect();
    longer.query_pairs_mut().clear().extend_pairs(&query);
    let (status, _) = http_get(&longer);
    assert_eq!(status, 403);

    // A forged signature.
    let mut forged = url.clone();
    let query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(name, value)| {
            let value = if name == "X-Amz-Signature" {
                "0".repeat(64)
            } else {
                value.into_owned()
            };
            (name.into_owned(), value)
        })
        .collect();
    forged.query_pairs_mut().clear().extend_pairs(&query);
    let (status, _) = http_get(&forged);
    assert_eq!(status, 403);

    // Expired: s3s-fs enforces X-Amz-Expires.
    let short = store
        .presigned_get(&key, Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (status, _) = http_get(&short);
    assert_eq!(status, 403);
}
