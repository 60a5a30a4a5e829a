//! One configured certificate: its chain and key read from PEM files and
//! checked together, and the names it is valid for.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use tern_config::CertificateConfig;
use x509_parser::extensions::GeneralName;

use crate::Error;

/// A certificate ready to serve.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) key: Arc<CertifiedKey>,
    /// The DNS names (lower case, wildcards as `*.example.com`) and IP
    /// addresses it is valid for.
    pub(crate) names: Vec<String>,
}

pub(crate) fn load(c: &CertificateConfig, provider: &CryptoProvider) -> Result<Loaded, Error> {
    let fail = |reason: String| Error::Certificate {
        origin: c.origin.clone(),
        reason,
    };
    let chain = read_certificates(&c.cert).map_err(|e| fail(format!("cert {e}")))?;
    let key = PrivateKeyDer::from_pem_file(&c.key)
        .map_err(|e| fail(format!("key `{}`: {e}", c.key.display())))?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| fail(format!("key `{}`: {e}", c.key.display())))?;
    let key = CertifiedKey::new(chain, signing);
    key.keys_match().map_err(|_| {
        fail(format!(
            "key `{}` does not belong to the certificate in `{}`",
            c.key.display(),
            c.cert.display()
        ))
    })?;
    let (_, leaf) = x509_parser::parse_x509_certificate(&key.cert[0])
        .map_err(|e| fail(format!("cert `{}`: {e}", c.cert.display())))?;
    let names = names_of(&leaf);
    if names.is_empty() {
        return Err(fail(format!(
            "cert `{}` names no host (no DNS name or IP address)",
            c.cert.display()
        )));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let validity = leaf.validity();
    if validity.not_after.timestamp() < now {
        tracing::warn!(
            "{}: cert `{}` expired on {}; clients will refuse it",
            c.origin,
            c.cert.display(),
            validity.not_after
        );
    } else if validity.not_before.timestamp() > now {
        tracing::warn!(
            "{}: cert `{}` is not valid before {}",
            c.origin,
            c.cert.display(),
            validity.not_before
        );
    }
    Ok(Loaded {
        key: Arc::new(key),
        names,
    })
}

/// Every certificate in the PEM file at `path`, at least one; the error
/// names the file (`` `path`: reason ``).
pub(crate) fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("`{}`: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("`{}`: no CERTIFICATE in the file", path.display()));
    }
    Ok(certs)
}

/// The subject alternative names, or the common name of an old
/// certificate without any.
pub(crate) fn names_of(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                GeneralName::DNSName(d) => names.push(d.to_ascii_lowercase()),
                GeneralName::IPAddress(ip) => match ip.len() {
                    4 => names.push(
                        std::net::Ipv4Addr::from(<[u8; 4]>::try_from(*ip).unwrap_or_default())
                            .to_string(),
                    ),
                    16 => names.push(
                        std::net::Ipv6Addr::from(<[u8; 16]>::try_from(*ip).unwrap_or_default())
                            .to_string(),
                    ),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    if names.is_empty() {
        names.extend(
            cert.subject()
                .iter_common_name()
                .filter_map(|cn| cn.as_str().ok())
                .map(str::to_ascii_lowercase),
        );
    }
    names
}
