//! The gateway's own HTTPS (`--tls-cert-file`/`--tls-key-file`, as the OpenShift overlay runs it
//! with the service-serving certificate), on both servers, through a client that trusts only the
//! issuing CA:
//! - the health endpoints and a tenant's list are served over TLS (HTTP/1.1, and HTTP/2 by ALPN);
//!   plain HTTP on the port gets no HTTP answer;
//! - a client that opens a connection and never handshakes does not hold up another client;
//! - a rotated certificate (the Secret's files replaced, as kubelet does) is served to new
//!   connections without a restart, and a half-written pair is not;
//! - SIGTERM stops it cleanly; a key that does not match its certificate stops start-up with a
//!   message naming both files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nac::sim::demo::{GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac_process::{Nac, kubeconfig};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use support::cluster::{TestCluster, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A CA, and leaf certificates for `localhost` issued by it.
struct Ca {
    cert: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new() -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            cert: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A serving certificate and key (PEM), and the certificate's DER to recognise it by.
    fn leaf(&self) -> (String, String, CertificateDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().clone())
    }

    fn client(&self, alpn: &[&[u8]]) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

/// One HTTPS GET over HTTP/1.1: status, body and the certificate the server presented.
async fn get(
    ca: &Ca,
    addr: &str,
    path: &str,
    token: Option<&str>,
) -> (u16, String, CertificateDer<'static>) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = ca
        .client(&[b"http/1.1"])
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    // A close_notify-less end is fine for a `Connection: close` answer.
    let _ = tls.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string(), presented)
}

fn write_pair(dir: &Path, cert: &str, key: &str) {
    // As kubelet updates a Secret volume: each file replaced whole (rename), never truncated.
    for (name, text) in [("tls.crt", cert), ("tls.key", key)] {
        let partial = dir.join(format!(".{name}.new"));
        std::fs::write(&partial, text).unwrap();
        std::fs::rename(&partial, dir.join(name)).unwrap();
    }
}

fn gateway(dir: &Path, config: &Path, certs: &Path) -> Nac {
    Nac::start(
        "gateway",
        dir,
        &[
            "gateway",
            "--kubeconfig",
            config.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--oadp-namespace",
            OADP_NAMESPACE,
            "--tls-cert-file",
            certs.join("tls.crt").to_str().unwrap(),
            "--tls-key-file",
            certs.join("tls.key").to_str().unwrap(),
            "--shutdown-grace-period",
            "10s",
        ],
        &[],
    )
}

async fn the_gateway_serves_https_and_picks_up_a_rotated_certificate(cluster: TestCluster) {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("serving-cert");
    std::fs::create_dir_all(&certs).unwrap();
    let ca = Ca::new();
    let (cert, key, first) = ca.leaf();
    write_pair(&certs, &cert, &key);

    let ns = cluster.unique_name("tls-team", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice = cluster.user_token("alice");
    let token = cluster
        .sa_token(OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT)
        .await;
    let (config, _serving) = kubeconfig(&cluster, dir.path(), "gateway", &token).await;
    let mut nac = gateway(dir.path(), &config, &certs);
    let line = nac.first_line();
    let addr = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("https://"))
        .unwrap_or_else(|| panic!("no https:// address in {line:?}; log:\n{}", nac.log_text()))
        .to_string();

    eventually("the gateway to be ready over HTTPS", 60, || async {
        let (status, _, _) = get(&ca, &addr, "/readyz", None).await;
        (status == 200).then_some(())
    })
    .await;
    let (status, _, presented) = get(&ca, &addr, "/healthz", None).await;
    assert_eq!(status, 200);
    assert_eq!(presented, first);
    let list = format!("/api/v1/namespaces/{ns}/backups");
    let (status, body, _) = get(&ca, &addr, &list, Some(&alice)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"items\""), "{body}");

    // HTTP/2 is offered by ALPN.
    let tcp = TcpStream::connect(&addr).await.unwrap();
    let h2 = ca
        .client(&[b"h2", b"http/1.1"])
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(h2.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    drop(h2);

    // Plain HTTP on the HTTPS port gets no HTTP answer.
    let mut plain = TcpStream::connect(&addr).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), plain.read_to_end(&mut raw)).await;
    assert!(
        !String::from_utf8_lossy(&raw).starts_with("HTTP/"),
        "plain HTTP was answered: {raw:?}"
    );

    // A client that connects and says nothing holds up nobody.
    let silent: Vec<TcpStream> = {
        let mut open = Vec::new();
        for _ in 0..8 {
            open.push(TcpStream::connect(&addr).await.unwrap());
        }
        open
    };
    let (status, _, _) =
        tokio::time::timeout(Duration::from_secs(5), get(&ca, &addr, "/healthz", None))
            .await
            .expect("a request waited behind connections that never handshake");
    assert_eq!(status, 200);
    drop(silent);

    // Half-written rotation (new certificate, old key): the old pair stays in service.
    let (cert2, key2, second) = ca.leaf();
    write_pair(&certs, &cert2, &key);
    tokio::time::sleep(Duration::from_secs(12)).await;
    let (status, _, presented) = get(&ca, &addr, "/healthz", None).await;
    assert_eq!((status, &presented), (200, &first));
    // Complete: new connections get the new certificate, without a restart.
    write_pair(&certs, &cert2, &key2);
    eventually("the rotated certificate to be served", 30, || async {
        let (_, _, presented) = get(&ca, &addr, "/healthz", None).await;
        (presented == second).then_some(())
    })
    .await;
    let log = nac.log_text();
    assert!(log.contains("serving a renewed TLS certificate"), "{log}");
    assert!(log.contains("cannot be used yet"), "{log}");

    nac.sigterm();
    let (code, took) = nac.exited(Duration::from_secs(12)).await;
    assert_eq!(code, Some(0), "{}", nac.log_text());
    println!(
        "[{}] HTTPS gateway: certificate rotated without a restart; exited {:.2} s after SIGTERM",
        cluster.server,
        took.as_secs_f64()
    );
}

on_both_servers!(the_gateway_serves_https_and_picks_up_a_rotated_certificate);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_does_not_match_its_certificate_stops_start_up() {
    let cluster = TestCluster::emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("serving-cert");
    std::fs::create_dir_all(&certs).unwrap();
    let ca = Ca::new();
    let (cert, _, _) = ca.leaf();
    let (_, other_key, _) = ca.leaf();
    write_pair(&certs, &cert, &other_key);
    let token = cluster
        .sa_token(OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT)
        .await;
    let (config, _serving) = kubeconfig(&cluster, dir.path(), "gateway", &token).await;
    let mut nac = gateway(dir.path(), &config, &certs);
    let (code, _) = nac.exited(Duration::from_secs(30)).await;
    assert_ne!(code, Some(0));
    let log = nac.log_text();
    assert!(
        log.contains("does not belong to the certificate")
            && log.contains("tls.key")
            && log.contains("tls.crt"),
        "{log}"
    );
}
