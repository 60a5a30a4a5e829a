//! What the handshakes share with the ACME manager (`tern-acme`), which
//! outlives every configuration generation: the certificate it keeps for
//! a set of names ([`ManagedCert`], swapped in place when renewed, so no
//! reload is needed), and the challenges it has open ([`Challenges`]:
//! HTTP-01 tokens for the plain listeners, TLS-ALPN-01 certificates for
//! the handshakes that ask for ALPN `acme-tls/1`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// The ALPN protocol of a TLS-ALPN-01 validation (RFC 8737).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// The certificate the ACME manager keeps for one set of names, read by
/// every handshake for those names. Until the first one is issued (or
/// loaded from the state directory) there is none, and a handshake for
/// those names gets a configured certificate if one covers them, or
/// fails.
#[derive(Debug)]
pub struct ManagedCert {
    names: Vec<String>,
    current: RwLock<Option<Arc<CertifiedKey>>>,
}

impl ManagedCert {
    /// An empty slot for `names` (lower case).
    pub fn new(names: Vec<String>) -> ManagedCert {
        ManagedCert {
            names,
            current: RwLock::new(None),
        }
    }

    /// The names it is for.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The certificate serving now, if any.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Serves `key` from the next handshake on.
    pub fn install(&self, key: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(key);
    }

    /// Whether a client asking for `sni` gets this certificate.
    fn covers(&self, sni: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(sni))
    }
}

/// The challenges the ACME manager has open, shared by every listener.
#[derive(Debug, Default)]
pub struct Challenges {
    /// HTTP-01: token -> key authorization.
    http: Mutex<HashMap<String, String>>,
    /// TLS-ALPN-01: name (lower case) -> the challenge certificate.
    alpn: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl Challenges {
    /// The key authorization to answer for an HTTP-01 `token`.
    pub fn http01(&self, token: &str) -> Option<String> {
        lock(&self.http).get(token).cloned()
    }

    /// Opens an HTTP-01 challenge.
    pub fn open_http01(&self, token: &str, key_authorization: &str) {
        lock(&self.http).insert(token.to_owned(), key_authorization.to_owned());
    }

    /// Closes an HTTP-01 challenge.
    pub fn close_http01(&self, token: &str) {
        lock(&self.http).remove(token);
    }

    /// The TLS-ALPN-01 certificate for `name`.
    pub fn alpn01(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        lock(&self.alpn).get(&name.to_ascii_lowercase()).cloned()
    }

    /// Opens a TLS-ALPN-01 challenge for `name`.
    pub fn open_alpn01(&self, name: &str, cert: Arc<CertifiedKey>) {
        lock(&self.alpn).insert(name.to_ascii_lowercase(), cert);
    }

    /// Closes the TLS-ALPN-01 challenge for `name`.
    pub fn close_alpn01(&self, name: &str) {
        lock(&self.alpn).remove(&name.to_ascii_lowercase());
    }
}

/// A listener's link to the ACME manager: its certificate and the open
/// challenges.
#[derive(Clone, Debug)]
pub struct AcmeLink {
    /// The certificate kept for the listener's `acme` names.
    pub cert: Arc<ManagedCert>,
    /// Every open challenge.
    pub challenges: Arc<Challenges>,
}

/// A certificate ready to serve from a PEM chain (the server's first) and
/// a PEM private key, checked to belong together.
pub fn certified_key(chain_pem: &[u8], key_pem: &[u8]) -> Result<Arc<CertifiedKey>, String> {
    let chain = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("certificate chain: {e}"))?;
    if chain.is_empty() {
        return Err("certificate chain: no CERTIFICATE".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("key: {e}"))?;
    let signing = crate::provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("key: {e}"))?;
    let key = CertifiedKey::new(chain, signing);
    // Only a definite mismatch fails: webpki cannot read a TLS-ALPN-01
    // certificate (its acmeIdentifier extension is critical and unknown
    // to it), so that comparison is `Unknown`.
    match key.keys_match() {
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err("the key does not belong to the certificate".to_owned())
        }
        _ => Ok(Arc::new(key)),
    }
}

/// The certificate for a handshake on a listener with `acme`: a
/// TLS-ALPN-01 validation gets the challenge certificate (or nothing);
/// a client naming one of the managed names gets the managed certificate
/// once there is one. `None` leaves the choice to the configured
/// certificates.
pub(crate) fn resolve(
    acme: &AcmeLink,
    sni: Option<&str>,
    validation: bool,
) -> Option<Arc<CertifiedKey>> {
    let sni = sni?;
    if validation {
        return acme.challenges.alpn01(sni);
    }
    if acme.cert.covers(sni) {
        return acme.cert.current();
    }
    None
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, KeyPair};

    use super::*;

    fn key_for(name: &str) -> Arc<CertifiedKey> {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        certified_key(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap()
    }

    #[test]
    fn managed_names_get_the_managed_certificate_and_validations_the_challenge() {
        let link = AcmeLink {
            cert: Arc::new(ManagedCert::new(vec!["a.test".into()])),
            challenges: Arc::new(Challenges::default()),
        };
        // Nothing yet: the configured certificates decide.
        assert!(resolve(&link, Some("a.test"), false).is_none());
        let issued = key_for("a.test");
        link.cert.install(issued.clone());
        let got = resolve(&link, Some("A.Test"), false).unwrap();
        assert!(Arc::ptr_eq(&got, &issued));
        assert!(resolve(&link, Some("b.test"), false).is_none());
        assert!(resolve(&link, None, false).is_none());
        // A validation gets the challenge certificate, and nothing else.
        assert!(resolve(&link, Some("a.test"), true).is_none());
        let challenge = key_for("a.test");
        link.challenges.open_alpn01("A.test", challenge.clone());
        assert!(Arc::ptr_eq(
            &resolve(&link, Some("a.test"), true).unwrap(),
            &challenge
        ));
        link.challenges.close_alpn01("a.test");
        assert!(resolve(&link, Some("a.test"), true).is_none());
        // HTTP-01 tokens open and close.
        link.challenges.open_http01("tok", "tok.thumb");
        assert_eq!(link.challenges.http01("tok").as_deref(), Some("tok.thumb"));
        link.challenges.close_http01("tok");
        assert_eq!(link.challenges.http01("tok"), None);
    }

    #[test]
    fn a_key_that_does_not_belong_to_the_certificate_is_refused() {
        let key = KeyPair::generate().unwrap();
        let other = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["a.test".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let err =
            certified_key(cert.pem().as_bytes(), other.serialize_pem().as_bytes()).unwrap_err();
        assert!(err.contains("does not belong"), "{err}");
        assert!(certified_key(b"", key.serialize_pem().as_bytes()).is_err());
    }
}
