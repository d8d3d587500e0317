//! TLS for the emulator: a CA generated on first start (kept in the data directory), a serving
//! certificate for localhost signed by it, and an accept loop serving the router over HTTPS.
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// TLS set-up failures.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration failed: {0}")]
    Config(#[from] rustls::Error),
    #[error("cannot read or write certificates: {0}")]
    Io(#[from] std::io::Error),
    #[error("invalid PEM: {0}")]
    Pem(String),
}

/// The PEM material the server and its kubeconfigs need.
#[derive(Debug, Clone)]
pub struct Pki {
    pub ca_cert_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
}

impl Pki {
    /// Generates a CA and a serving certificate for `localhost`, `127.0.0.1` and `::1` (plus
    /// `extra_names`).
    pub fn generate(extra_names: &[String]) -> Result<Self, TlsError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "nac-emulator-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut names = vec![
            "localhost".to_string(),
            "kubernetes.default.svc".to_string(),
        ];
        names.extend(extra_names.iter().cloned());
        let mut params = CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "nac-emulator");
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::from([
                0u16, 0, 0, 0, 0, 0, 0, 1,
            ])));
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Pki {
            ca_cert_pem: ca_cert.pem(),
            server_cert_pem: cert.pem(),
            server_key_pem: key.serialize_pem(),
        })
    }

    /// Loads the PKI from `dir`, generating and saving it on first use.
    pub fn load_or_generate(dir: &Path) -> Result<Self, TlsError> {
        let (ca, cert, key) = (
            dir.join("ca.crt"),
            dir.join("server.crt"),
            dir.join("server.key"),
        );
        if ca.exists() && cert.exists() && key.exists() {
            return Ok(Pki {
                ca_cert_pem: std::fs::read_to_string(ca)?,
                server_cert_pem: std::fs::read_to_string(cert)?,
                server_key_pem: std::fs::read_to_string(key)?,
            });
        }
        let pki = Pki::generate(&[])?;
        std::fs::write(ca, &pki.ca_cert_pem)?;
        std::fs::write(cert, &pki.server_cert_pem)?;
        super::persist::write_private(&key, pki.server_key_pem.as_bytes())?;
        Ok(pki)
    }

    /// A rustls server configuration (HTTP/2 and HTTP/1.1 by ALPN).
    pub fn server_config(&self) -> Result<rustls::ServerConfig, TlsError> {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.server_cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| TlsError::Pem(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(self.server_key_pem.as_bytes())
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// Serves `router` over TLS on `listener` until the task is dropped.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    router: Router,
    config: rustls::ServerConfig,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    loop {
        let (stream, peer): (tokio::net::TcpStream, SocketAddr) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let tls = match acceptor.accept(stream).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
            };
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder
                .serve_connection_with_upgrades(TokioIo::new(tls), service)
                .await
            {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}
