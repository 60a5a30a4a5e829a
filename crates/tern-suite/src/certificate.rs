//! The certificate of the "ssl" rows: one ECDSA P-256 key and certificate
//! for `localhost` and 127.0.0.1, issued by a CA made for the run, written
//! into the suite's directory. Every server serves the same pair, so the
//! handshakes cost each of them the same signature; the bench trusts the
//! CA, as a real client trusts its roots.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use tern_bench::Error;

/// The files of the run's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteCertificate {
    /// The CA's certificate (PEM), the bench's only root.
    pub ca: PathBuf,
    /// The server certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PKCS#8 PEM).
    pub key: PathBuf,
}

impl SuiteCertificate {
    /// Makes the CA and the server certificate and writes them into `dir`
    /// (`ca.pem`, `cert.pem`, `key.pem`), readable by all: servers started
    /// as root read them after dropping privileges, and the key is made
    /// for this run only.
    pub fn write(dir: &Path) -> Result<SuiteCertificate, Error> {
        let made = make().map_err(|e| {
            Error::system(
                "making the suite's TLS certificate",
                std::io::Error::other(e.to_string()),
            )
        })?;
        std::fs::create_dir_all(dir).map_err(|source| Error::File {
            path: dir.to_owned(),
            source,
        })?;
        let files = SuiteCertificate {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        for (path, text) in [
            (&files.ca, made.0),
            (&files.cert, made.1),
            (&files.key, made.2),
        ] {
            std::fs::write(path, text).map_err(|source| Error::File {
                path: path.clone(),
                source,
            })?;
        }
        Ok(files)
    }
}

/// (CA PEM, certificate PEM, key PEM).
fn make() -> Result<(String, String, String), rcgen::Error> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "tern suite CA");
    let issuer =
        CertifiedIssuer::self_signed(ca, KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?)?;
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((issuer.pem(), cert.pem(), key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_ecdsa_p256_pair_and_its_ca() {
        let dir = tempfile::tempdir().unwrap();
        let c = SuiteCertificate::write(&dir.path().join("tls")).unwrap();
        let key = std::fs::read_to_string(&c.key).unwrap();
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
        let pair = KeyPair::from_pem(&key).unwrap();
        assert!(pair.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256));
        for p in [&c.ca, &c.cert] {
            let text = std::fs::read_to_string(p).unwrap();
            assert!(text.starts_with("-----BEGIN CERTIFICATE-----"), "{text}");
        }
    }
}
