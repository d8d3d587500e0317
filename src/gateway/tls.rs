//! The gateway's own HTTPS listener: a serving certificate and key from files (OpenShift's
//! service-serving certificate Secret, cert-manager's, or any PEM pair), re-read when the files
//! change so a rotated certificate is served without a restart, and handshakes done off the
//! accept loop so a slow or silent client never holds up the others.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the certificate files are checked for a change (OpenShift's service CA rotates
/// serving certificates well before they expire; kubelet updates a mounted Secret within a
/// minute or so).
pub const RELOAD_CHECK_PERIOD: Duration = Duration::from_secs(10);
/// Handshaken connections waiting for the HTTP server to take them.
const ACCEPTED_BACKLOG: usize = 128;

/// Why the serving certificate cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate ({detail})")]
    NoCertificate { path: PathBuf, detail: String },
    #[error("{path} holds no PEM private key ({detail})")]
    NoKey { path: PathBuf, detail: String },
    #[error("the private key in {path} cannot sign: {detail}")]
    UnusableKey { path: PathBuf, detail: String },
    #[error("the key in {key} does not belong to the certificate in {cert}: {detail}")]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        detail: String,
    },
    #[error("TLS configuration failed: {0}")]
    Config(#[from] rustls::Error),
}

/// Where the serving certificate (PEM chain, leaf first) and its private key (PEM) are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What identifies a version of the two files: modification time and length of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilesStamp {
    cert: Option<(SystemTime, u64)>,
    key: Option<(SystemTime, u64)>,
}

impl FilesStamp {
    fn of(files: &ServingFiles) -> Self {
        let stamp = |path: &Path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        };
        FilesStamp {
            cert: stamp(&files.cert),
            key: stamp(&files.key),
        }
    }
}

/// Whether the files changed since the certificate in use was read (pure). Files that vanished
/// (a Secret volume between two versions) are no change: the certificate in use stays.
pub fn changed(in_use: &FilesStamp, now: &FilesStamp) -> bool {
    now.cert.is_some() && now.key.is_some() && in_use != now
}

/// Reads and checks the certificate chain and key: the key must be one rustls can sign with and
/// must belong to the leaf certificate.
pub fn load(files: &ServingFiles) -> Result<CertifiedKey, TlsError> {
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.clone(),
            source,
        })
    };
    let (cert_pem, key_pem) = (read(&files.cert)?, read(&files.key)?);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::NoCertificate {
            path: files.cert.clone(),
            detail: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
            detail: "no CERTIFICATE block".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::NoKey {
        path: files.key.clone(),
        detail: e.to_string(),
    })?;
    let provider = provider();
    let signing =
        provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| TlsError::UnusableKey {
                path: files.key.clone(),
                detail: e.to_string(),
            })?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| TlsError::Mismatch {
        cert: files.cert.clone(),
        key: files.key.clone(),
        detail: e.to_string(),
    })?;
    Ok(certified)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificate served, swapped when its files change.
#[derive(Debug)]
pub struct ReloadingCertificate {
    files: ServingFiles,
    current: RwLock<(Arc<CertifiedKey>, FilesStamp)>,
}

impl ReloadingCertificate {
    /// Reads the files once; a certificate that cannot be used stops start-up here.
    pub fn new(files: ServingFiles) -> Result<Self, TlsError> {
        let stamp = FilesStamp::of(&files);
        let key = load(&files)?;
        Ok(ReloadingCertificate {
            files,
            current: RwLock::new((Arc::new(key), stamp)),
        })
    }

    /// Re-reads the files when they changed. Returns whether a new certificate is now served;
    /// a changed pair that cannot be used (half-written during a rotation, a key that does not
    /// match) keeps the one in use and is tried again at the next check.
    pub fn reload_if_changed(&self) -> bool {
        let now = FilesStamp::of(&self.files);
        let in_use = match self.current.read() {
            Ok(current) => current.1,
            Err(_) => return false,
        };
        if !changed(&in_use, &now) {
            return false;
        }
        match load(&self.files) {
            Ok(key) => {
                if let Ok(mut current) = self.current.write() {
                    *current = (Arc::new(key), now);
                }
                tracing::info!(cert = %self.files.cert.display(), "serving a renewed TLS certificate");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "the changed TLS certificate cannot be used yet; still serving the previous one");
                false
            }
        }
    }

    /// The rustls server configuration serving this certificate (HTTP/2 and HTTP/1.1 by ALPN).
    pub fn server_config(self: &Arc<Self>) -> Result<rustls::ServerConfig, TlsError> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|current| current.0.clone())
    }
}

/// A TCP listener whose connections come out TLS-handshaken (an axum `Listener`). The accept
/// loop and the certificate check run in background tasks that end when this is dropped — when
/// the server stops accepting at shutdown.
pub struct TlsListener {
    accepted: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl TlsListener {
    /// Serves `certificate` on `listener`, checking its files every `check_every`.
    pub fn new(
        listener: TcpListener,
        certificate: Arc<ReloadingCertificate>,
        check_every: Duration,
    ) -> Result<Self, TlsError> {
        let local = listener.local_addr().map_err(|source| TlsError::Read {
            path: PathBuf::from("<listener>"),
            source,
        })?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(certificate.server_config()?));
        let (sender, accepted) = mpsc::channel(ACCEPTED_BACKLOG);
        let accepting = tokio::spawn(accept_loop(listener, acceptor, sender));
        let checking = tokio::spawn(async move {
            let mut tick = tokio::time::interval(check_every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                certificate.reload_if_changed();
            }
        });
        Ok(TlsListener {
            accepted,
            local,
            tasks: vec![accepting.abort_handle(), checking.abort_handle()],
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    handshaken: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait a moment instead of spinning.
                tracing::warn!(error = %e, "gateway: accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let to_server = handshaken.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = to_server.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
        if handshaken.is_closed() {
            return;
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(accepted) => accepted,
            // The accept loop ended (only when this listener is being dropped): accept nothing
            // more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn write(dir: &Path, cert: &str, key: &str) -> ServingFiles {
        let files = ServingFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        };
        std::fs::write(&files.cert, cert).unwrap();
        std::fs::write(&files.key, key).unwrap();
        files
    }

    #[test]
    fn loads_a_matching_pair_and_names_what_is_wrong_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("nac-gateway.openshift-adp.svc");
        let files = write(dir.path(), &cert, &key);
        assert_eq!(load(&files).unwrap().cert.len(), 1);

        let (_, other_key) = pair("other");
        let files = write(dir.path(), &cert, &other_key);
        let err = load(&files).unwrap_err().to_string();
        assert!(err.contains("does not belong to the certificate"), "{err}");

        let files = write(dir.path(), "not pem", &key);
        let err = load(&files).unwrap_err().to_string();
        assert!(err.contains("holds no PEM certificate"), "{err}");

        let files = write(dir.path(), &cert, "");
        let err = load(&files).unwrap_err().to_string();
        assert!(err.contains("holds no PEM private key"), "{err}");

        let missing = ServingFiles {
            cert: dir.path().join("absent.crt"),
            key: dir.path().join("absent.key"),
        };
        let err = load(&missing).unwrap_err().to_string();
        assert!(
            err.contains("cannot read") && err.contains("absent.crt"),
            "{err}"
        );
    }

    #[test]
    fn a_change_is_a_new_stamp_of_two_present_files() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let stamp = |cert, key| FilesStamp { cert, key };
        let before = stamp(Some((t, 10)), Some((t, 20)));
        assert!(!changed(&before, &before));
        let later = t + Duration::from_secs(60);
        assert!(changed(&before, &stamp(Some((later, 10)), Some((t, 20)))));
        assert!(changed(&before, &stamp(Some((t, 11)), Some((t, 20)))));
        assert!(changed(&before, &stamp(Some((t, 10)), Some((later, 20)))));
        // A Secret volume between two versions: keep serving what we have.
        assert!(!changed(&before, &stamp(None, Some((t, 20)))));
        assert!(!changed(&before, &stamp(Some((t, 10)), None)));
    }

    #[test]
    fn a_rotated_pair_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("one");
        let files = write(dir.path(), &cert, &key);
        let reloading = ReloadingCertificate::new(files.clone()).unwrap();
        let served = |r: &ReloadingCertificate| r.current.read().unwrap().0.cert[0].clone();
        let first = served(&reloading);
        assert!(!reloading.reload_if_changed(), "nothing changed");

        // Half-written: a new certificate with the old key. The old pair stays.
        let (cert2, key2) = pair("two");
        std::fs::write(&files.cert, format!("{cert2}\n")).unwrap();
        assert!(!reloading.reload_if_changed());
        assert_eq!(served(&reloading), first);

        // Complete: served from now on.
        std::fs::write(&files.key, &key2).unwrap();
        assert!(reloading.reload_if_changed());
        assert_ne!(served(&reloading), first);
    }
}
