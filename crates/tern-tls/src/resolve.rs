//! The certificate for one handshake: by the name the client asks for
//! (exact names, then a wildcard one label up), then by the signature
//! schemes it offers, so that an ECDSA and an RSA certificate for the same
//! names each go to the clients that can use them. On a listener with
//! `acme`, the managed certificate comes first for its names, and a
//! TLS-ALPN-01 validation gets its challenge certificate (`acme.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::acme::{self, AcmeLink, ACME_TLS_ALPN};
use crate::certs::Loaded;

/// Certificates by name.
#[derive(Debug)]
pub(crate) struct ByName {
    keys: Vec<Arc<CertifiedKey>>,
    /// Exact names (and IP addresses), lower case -> certificates.
    exact: HashMap<String, Vec<usize>>,
    /// `example.com` for `*.example.com` -> certificates.
    wildcard: HashMap<String, Vec<usize>>,
    /// For a client naming no configured host: the first certificate and
    /// those with the same names, or none (refused).
    fallback: Vec<usize>,
    /// The ACME manager's certificate and challenges, if `acme` is set.
    acme: Option<AcmeLink>,
    /// Whether a client naming no configured host gets a certificate
    /// anyway (with no configured certificates: the managed one).
    default: bool,
}

impl ByName {
    pub(crate) fn new(loaded: Vec<Loaded>, default: bool, acme: Option<AcmeLink>) -> Self {
        let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
        let mut wildcard: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, l) in loaded.iter().enumerate() {
            for n in &l.names {
                match n.strip_prefix("*.") {
                    Some(parent) => wildcard.entry(parent.to_owned()).or_default().push(i),
                    None => exact.entry(n.clone()).or_default().push(i),
                }
            }
        }
        let fallback = match loaded.first() {
            Some(first) if default => (0..loaded.len())
                .filter(|&i| loaded[i].names == first.names)
                .collect(),
            _ => Vec::new(),
        };
        ByName {
            keys: loaded.into_iter().map(|l| l.key).collect(),
            exact,
            wildcard,
            fallback,
            acme,
            default,
        }
    }

    /// The certificates for `name`, or the fallback.
    fn candidates(&self, name: Option<&str>) -> &[usize] {
        let found = name.and_then(|name| {
            let name = name.to_ascii_lowercase();
            self.exact.get(&name).or_else(|| {
                let (_, parent) = name.split_once('.')?;
                self.wildcard.get(parent)
            })
        });
        found.map_or(&self.fallback, Vec::as_slice)
    }
}

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(link) = &self.acme {
            let validation = hello
                .alpn()
                .is_some_and(|mut offered| offered.any(|p| p == ACME_TLS_ALPN));
            if validation {
                return acme::resolve(link, hello.server_name(), true);
            }
            if let Some(key) = acme::resolve(link, hello.server_name(), false) {
                return Some(key);
            }
            if self.keys.is_empty() {
                return self.default.then(|| link.cert.current()).flatten();
            }
        }
        let candidates = self.candidates(hello.server_name());
        let schemes = hello.signature_schemes();
        candidates
            .iter()
            .find(|&&i| self.keys[i].key.choose_scheme(schemes).is_some())
            .or(candidates.first())
            .map(|&i| self.keys[i].clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rcgen::{CertificateParams, KeyPair};
    use tern_config::CertificateConfig;

    use super::*;
    use crate::certs;

    /// A self-signed certificate for `names`, loaded as tern loads one.
    fn loaded(dir: &std::path::Path, file: &str, names: &[&str]) -> Loaded {
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let (c, k) = (
            dir.join(format!("{file}.pem")),
            dir.join(format!("{file}.key")),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        let cfg = CertificateConfig {
            cert: c,
            key: k,
            origin: file.to_owned(),
        };
        certs::load(&cfg, &Arc::new(crate::provider())).unwrap()
    }

    #[test]
    fn exact_names_then_one_wildcard_label_then_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let all = || {
            vec![
                loaded(d, "first", &["a.test"]),
                loaded(d, "twin", &["a.test"]),
                loaded(d, "wild", &["*.b.test", "b.test"]),
            ]
        };
        let by_name = ByName::new(all(), true, None);
        assert_eq!(by_name.candidates(Some("a.test")), &[0, 1]);
        assert_eq!(by_name.candidates(Some("A.Test")), &[0, 1]);
        assert_eq!(by_name.candidates(Some("x.b.test")), &[2]);
        assert_eq!(by_name.candidates(Some("b.test")), &[2]);
        // A wildcard covers one label; anything else gets the first
        // certificate and its twin for the same names.
        assert_eq!(by_name.candidates(Some("y.x.b.test")), &[0, 1]);
        assert_eq!(by_name.candidates(None), &[0, 1]);

        let refusing = ByName::new(all(), false, None);
        assert!(refusing.candidates(Some("unknown.test")).is_empty());
        assert!(refusing.candidates(None).is_empty());
        assert_eq!(refusing.candidates(Some("a.test")), &[0, 1]);
    }
}
