//! The certificate for one handshake: by the name the client asks for
//! (exact names, then a wildcard one label up), then by the signature
//! schemes it offers, so that an ECDSA and an RSA certificate for the same
//! names each go to the clients that can use them.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

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
}

impl ByName {
    pub(crate) fn new(loaded: Vec<Loaded>, default: bool) -> Self {
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
        let candidates = self.candidates(hello.server_name());
        let schemes = hello.signature_schemes();
        candidates
            .iter()
            .find(|&&i| self.keys[i].key.choose_scheme(schemes).is_some())
            .or(candidates.first())
            .map(|&i| self.keys[i].clone())
    }
}
