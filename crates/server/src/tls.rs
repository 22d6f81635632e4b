//! HTTPS: rustls over the same connection loop as plain HTTP
//! ([`crate::http`]), with a certificate that can be replaced while the
//! server runs.
//!
//! The certificate and key are PEM files ([`TlsFiles`]). Every handshake
//! asks [`Tls`]'s resolver for the certificate in effect; [`Tls::reload`]
//! (on SIGHUP, [`crate::Server::run`]) reads both files again and swaps it
//! in, so new connections get the new certificate and open ones keep
//! theirs. Files that do not load leave the old certificate in place.
//!
//! Over TLS, file bytes cannot go out by `sendfile` (the kernel would send
//! them unencrypted), so TLS connections run without a send queue and
//! streams read files through the IO engine, as for an uncached file
//! ([`crate::stream::sendfile`]). [`WriteTimeout`] gives them the same
//! write timeout as plain connections.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The PEM files of a certificate chain and its private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Why a certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: no PEM private key in it (PKCS#8, PKCS#1 or SEC1): {message}", path.display())]
    NoKey { path: PathBuf, message: String },
    #[error("{}: the key cannot be used: {message}", path.display())]
    BadKey { path: PathBuf, message: String },
    #[error("the key in {} does not belong to the certificate in {}", key.display(), cert.display())]
    Mismatch { cert: PathBuf, key: PathBuf },
    #[error("setting up TLS: {0}")]
    Config(#[source] rustls::Error),
}

/// The certificate in effect, replaced by [`Tls::reload`].
#[derive(Debug)]
struct Resolver(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// A server's TLS: the acceptor every connection goes through, and the
/// files it reloads from.
pub struct Tls {
    files: TlsFiles,
    resolver: Arc<Resolver>,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl Tls {
    /// Loads the certificate and key; HTTP/1.1 only (ALPN `http/1.1`).
    pub fn load(files: TlsFiles) -> Result<Tls, TlsError> {
        let key = certified_key(&files)?;
        let resolver = Arc::new(Resolver(RwLock::new(Arc::new(key))));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            files,
            resolver,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// Reads the files again; new handshakes use what they hold. On an
    /// error the certificate in effect stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = certified_key(&self.files)?;
        *self.resolver.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
        Ok(())
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        self.acceptor.clone()
    }

    pub fn files(&self) -> &TlsFiles {
        &self.files
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn certified_key(files: &TlsFiles) -> Result<CertifiedKey, TlsError> {
    let pem = read(&files.cert)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
        });
    }
    let pem = read(&files.key)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::NoKey {
        path: files.key.clone(),
        message: e.to_string(),
    })?;
    let signing =
        rustls::crypto::ring::sign::any_supported_type(&key).map_err(|e| TlsError::BadKey {
            path: files.key.clone(),
            message: e.to_string(),
        })?;
    let ck = CertifiedKey::new(certs, signing);
    match ck.keys_match() {
        Ok(()) => Ok(ck),
        // Keys whose public half rustls cannot compute are not refused.
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(ck),
        Err(_) => Err(TlsError::Mismatch {
            cert: files.cert.clone(),
            key: files.key.clone(),
        }),
    }
}

/// A stream whose writes fail with `TimedOut` once it has taken no bytes
/// for `timeout` (plain connections get this from
/// [`crate::stream::sendfile::SendfileStream`]).
pub struct WriteTimeout<S> {
    inner: S,
    timeout: Duration,
    /// Set when a write found the stream full; cleared by progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteTimeout<S> {
    pub fn new(inner: S, timeout: Duration) -> Self {
        WriteTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    fn after<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let t = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                match t.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the client read nothing for {} s", timeout.as_secs_f32()),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_write(cx, buf);
        me.after(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        me.after(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_flush(cx);
        me.after(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Reloads `tls` on every SIGHUP until `stop` turns true; a certificate
/// that does not load is logged and the old one kept.
pub async fn reload_on_sighup(tls: Arc<Tls>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot catch SIGHUP, so the certificate will not reload: {e}");
            return;
        }
    };
    loop {
        tokio::select! {
            r = hup.recv() => {
                if r.is_none() {
                    return;
                }
                match tls.reload() {
                    Ok(()) => tracing::info!(
                        "reloaded the TLS certificate from {}",
                        tls.files().cert.display()
                    ),
                    Err(e) => tracing::warn!("keeping the TLS certificate in effect: {e}"),
                }
            }
            _ = stop.changed() => return,
        }
    }
}
