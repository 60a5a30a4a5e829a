//! TLS for `https://` targets: the settings a run is given (versions offered,
//! resumption, which certificates to trust) and the rustls client
//! configuration built from them once per run (aws-lc-rs, as tern's server).
//!
//! Resumption is rustls' own: the in-memory client session cache (TLS 1.3
//! tickets, TLS 1.2 session IDs and tickets), shared by every connection of
//! the run, so that "a new connection per request" measures resumed
//! handshakes unless `--no-resume` asks for full ones.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::Error;

/// Which protocol versions the client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsVersion {
    /// TLS 1.2 and 1.3; the server chooses (default).
    #[default]
    Any,
    /// TLS 1.2 only.
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// Which server certificates are accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trust {
    /// Those that chain to the system's roots (`$SSL_CERT_FILE`, else
    /// `/etc/ssl/certs/ca-certificates.crt`); the default.
    #[default]
    System,
    /// Those that chain to the PEM roots in this file (`--cacert`).
    CaFile(PathBuf),
    /// Any certificate (`--insecure`); handshake signatures are still
    /// verified, so the server must hold the key of what it presents.
    Insecure,
}

/// How `https://` targets are reached. Defaults: both versions offered,
/// resumption on, the system's roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// Versions offered.
    pub version: TlsVersion,
    /// Resume sessions on new connections (off: every handshake is full).
    pub resume: bool,
    /// Certificates accepted.
    pub trust: Trust,
}

impl Default for TlsSettings {
    fn default() -> TlsSettings {
        TlsSettings {
            version: TlsVersion::Any,
            resume: true,
            trust: Trust::System,
        }
    }
}

/// The provider of every TLS connection the bench opens.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Where Debian (and most distributions) keep the system's roots.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Builds the client configuration of a run, offering `alpn` (`h2` or
/// `http/1.1`). Errors name the file of roots that could not be used.
pub(crate) fn client_config(
    settings: &TlsSettings,
    alpn: &[u8],
) -> Result<Arc<ClientConfig>, Error> {
    let provider = provider();
    let versions: &[&'static rustls::SupportedProtocolVersion] = match settings.version {
        TlsVersion::Any => rustls::DEFAULT_VERSIONS,
        TlsVersion::Tls12 => &[&rustls::version::TLS12],
        TlsVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .map_err(|e| Error::usage(format!("TLS versions: {e}")))?;
    let mut config = match &settings.trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
        Trust::System => {
            let path = std::env::var_os("SSL_CERT_FILE")
                .map_or_else(|| PathBuf::from(SYSTEM_ROOTS), PathBuf::from);
            builder
                .with_root_certificates(roots(&path)?)
                .with_no_client_auth()
        }
        Trust::CaFile(path) => builder
            .with_root_certificates(roots(path)?)
            .with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    if !settings.resume {
        config.resumption = Resumption::disabled();
    }
    Ok(Arc::new(config))
}

/// The PEM certificates of `path` as roots.
fn roots(path: &std::path::Path) -> Result<RootCertStore, Error> {
    // Like an unreadable body file (-p), a usage error: the user fixes the
    // command line.
    let file_error = |e: rustls::pki_types::pem::Error| match e {
        rustls::pki_types::pem::Error::Io(source) => {
            Error::usage(format!("CA certificates {}: {source}", path.display()))
        }
        other => Error::usage(format!("{}: not PEM certificates: {other}", path.display())),
    };
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(file_error)? {
        let cert = cert.map_err(file_error)?;
        store.add(cert).map_err(|e| {
            Error::usage(format!(
                "{}: a certificate is unusable: {e}",
                path.display()
            ))
        })?;
    }
    if store.is_empty() {
        return Err(Error::usage(format!(
            "{}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(store)
}

/// The name sent as SNI and checked against the certificate: the URL's host
/// (a DNS name or an IP address).
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, Error> {
    ServerName::try_from(host.to_owned())
        .map_err(|e| Error::usage(format!("{host}: not a TLS server name: {e}")))
}

/// `--insecure`: accepts any certificate chain, but still checks that the
/// server signed the handshake with the key of the certificate it sent, so
/// the handshake costs the server what a verified one does.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_cacert_names_the_file() {
        let settings = TlsSettings {
            trust: Trust::CaFile(PathBuf::from("/nonexistent/ca.pem")),
            ..TlsSettings::default()
        };
        let e = client_config(&settings, b"http/1.1").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here\n").unwrap();
        let settings = TlsSettings {
            trust: Trust::CaFile(empty.clone()),
            ..TlsSettings::default()
        };
        let e = client_config(&settings, b"http/1.1").unwrap_err();
        assert!(
            e.to_string().contains(&*empty.to_string_lossy()) && e.is_usage(),
            "{e}"
        );
    }

    #[test]
    fn alpn_is_offered_and_every_version_builds() {
        for version in [TlsVersion::Any, TlsVersion::Tls12, TlsVersion::Tls13] {
            let settings = TlsSettings {
                version,
                resume: false,
                trust: Trust::Insecure,
            };
            let c = client_config(&settings, b"h2").unwrap();
            assert_eq!(c.alpn_protocols, vec![b"h2".to_vec()]);
        }
    }
}
