//! tern's TLS, on rustls: a listener's [`TlsConfig`] becomes the rustls
//! [`ServerConfig`] its connections handshake with.
//!
//! - **Certificates** are read and checked when the configuration is built
//!   (`tern check` as `serve`): the chain parses, the key matches the
//!   certificate, the names it is valid for are known, and an expired one
//!   is reported (`certs.rs`).
//! - **Choice per handshake** (`resolve.rs`): by the name the client asks
//!   for (SNI: exact names, then wildcards), then by the signature schemes
//!   it offers (an ECDSA and an RSA certificate for the same names);
//!   a client naming no configured host gets the first certificate, or is
//!   refused.
//! - **Protocols**: TLS 1.2 and 1.3 (Mozilla's "intermediate"; rustls
//!   offers only AEAD suites with forward secrecy), or 1.3 alone
//!   ("modern"). ALPN `h2` and `http/1.1`.
//! - **Resumption**, on by default: TLS 1.3 (and 1.2) tickets under keys
//!   that rotate, and a cache of TLS 1.2 sessions.
//!   Tickets can instead be sealed under keys read from files shared by
//!   several servers (`tickets.rs`).
//! - **Client certificates** (mutual TLS), required or optional, verified
//!   against the configured CA certificates.
//! - **A local CA** for development (`internal.rs`): a root kept on disk
//!   and a certificate it issues for `localhost`.
//! - **ACME** (`acme.rs`): with `acme`, the certificate the ACME manager
//!   (`tern-acme`) keeps for those names is read by every handshake and
//!   swapped in place when renewed; a TLS-ALPN-01 validation (ALPN
//!   `acme-tls/1`) gets the challenge certificate. Before the first
//!   certificate exists, a handshake for those names gets a configured
//!   certificate that covers them, or fails.
#![forbid(unsafe_code)]

mod acme;
mod certs;
mod files;
mod internal;
mod resolve;
mod tickets;

pub use files::{file_name_of, write_atomic};
pub use internal::root_path;

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ServerConfig, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::version::{TLS12, TLS13};
use rustls::RootCertStore;
use tern_config::{AcmeChallenge, ClientAuth, TlsConfig, TlsProfile, UnknownNames};

pub use acme::{certified_key, AcmeLink, Challenges, ManagedCert, ACME_TLS_ALPN};
pub use rustls;

/// TLS 1.2 sessions kept for resumption by session id (nginx's
/// `ssl_session_cache shared:SSL:10m` holds about 40 000).
const SESSION_CACHE: usize = 20_000;

/// Why a listener's TLS could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A certificate or key that cannot be used; `origin` says where it is
    /// configured (`file:line: key`).
    #[error("{origin}: {reason}")]
    Certificate {
        /// Where the pair is configured.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The rustls configuration of a listener with `cfg`; `acme` links it to
/// the ACME manager when `cfg.acme` is set (without it, as in `tern
/// check`, the managed names have no certificate).
pub fn server_config(cfg: &TlsConfig, acme: Option<AcmeLink>) -> Result<Arc<ServerConfig>, Error> {
    let provider = Arc::new(server_provider());
    let mut loaded = cfg
        .certificates
        .iter()
        .map(|c| certs::load(c, &provider))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(ca) = &cfg.internal {
        loaded.push(certs::load(&internal::ensure(ca)?, &provider)?);
    }
    let alpn01 = acme.is_some()
        && cfg
            .acme
            .as_ref()
            .is_some_and(|a| a.challenge == AcmeChallenge::TlsAlpn01);
    let resolver = resolve::ByName::new(loaded, cfg.unknown_names == UnknownNames::Default, acme);
    let versions: &[&rustls::SupportedProtocolVersion] = match cfg.profile {
        TlsProfile::Intermediate => &[&TLS13, &TLS12],
        TlsProfile::Modern => &[&TLS13],
    };
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions)?;
    let builder = match &cfg.client_auth {
        None => builder.with_no_client_auth(),
        Some(auth) => builder.with_client_cert_verifier(client_verifier(auth, provider)?),
    };
    let mut sc = builder.with_cert_resolver(Arc::new(resolver));
    // The server's order (below), not the client's: every suite offered is
    // strong, and a fixed order is what scanners (testssl) ask for.
    sc.ignore_client_order = true;
    sc.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    if alpn01 {
        // Last: chosen only for a client that offers nothing else.
        sc.alpn_protocols.push(ACME_TLS_ALPN.to_vec());
    }
    sc.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    sc.ticketer = match &cfg.ticket_keys {
        None => rustls::crypto::aws_lc_rs::Ticketer::new()?,
        Some(keys) => Arc::new(tickets::FileTicketer::load(keys)?),
    };
    Ok(Arc::new(sc))
}

/// aws-lc-rs with the suites in the order of Mozilla's intermediate
/// profile: per version AES-128-GCM, AES-256-GCM, then ChaCha20-Poly1305;
/// ECDSA before RSA. (rustls's default puts AES-256 first, which costs
/// more and protects no better against any practical attack.)
fn server_provider() -> CryptoProvider {
    use rustls::crypto::aws_lc_rs::cipher_suite::*;
    CryptoProvider {
        cipher_suites: vec![
            TLS13_AES_128_GCM_SHA256,
            TLS13_AES_256_GCM_SHA384,
            TLS13_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ],
        ..rustls::crypto::aws_lc_rs::default_provider()
    }
}

/// The verifier of client certificates that chain to `auth.ca`.
fn client_verifier(
    auth: &ClientAuth,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, Error> {
    let fail = |reason: String| Error::Certificate {
        origin: auth.origin.clone(),
        reason,
    };
    let mut roots = RootCertStore::empty();
    for c in certs::read_certificates(&auth.ca).map_err(|e| fail(format!("ca {e}")))? {
        roots
            .add(c)
            .map_err(|e| fail(format!("ca `{}`: {e}", auth.ca.display())))?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if auth.required {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    builder
        .build()
        .map_err(|e| fail(format!("ca `{}`: {e}", auth.ca.display())))
}

/// The provider [`server_config`] uses, for callers that need its
/// algorithms (a client in the tests, the bench).
pub fn provider() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}
