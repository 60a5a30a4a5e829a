//! tern's local certificate authority (`internal = true`), for HTTPS on a
//! development machine without a public name: a root made once and kept,
//! and a certificate it issues for `localhost` and the loopback addresses
//! (or the configured names). Trust the root once (`curl --cacert
//! DIR/root.pem`, or the system's store) and every restart serves a
//! certificate that verifies, as Caddy's `tls internal` does.
//!
//! Layout of the directory (made `0700`; keys `0600`):
//! - `root.pem`, `root.key`: the root, ECDSA P-256, valid 10 years, its
//!   name unique to this directory (`tern local CA 1a2b3c4d`).
//! - `<names>.pem`, `<names>.key`: a certificate for the names, ECDSA
//!   P-256, valid 88 days (Mozilla's "modern" profile wants less than 90),
//!   issued again when a configuration is built (start, reload, and the
//!   daily reload `tern serve` does while a listener uses the local CA) and
//!   fewer than 30 days are left, the names change, or the root is not the
//!   one that issued it.
//!
//! Files are written to a temporary name and renamed into place, so a
//! reader never sees half a key.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tern_config::{CertificateConfig, InternalCa};

use crate::Error;

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// How far back `not_before` is set, for clocks a little behind.
const BACKDATE: Duration = Duration::from_secs(60 * 60);
const ROOT_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
const LEAF_VALIDITY: Duration = Duration::from_secs(88 * 24 * 60 * 60);
/// A certificate with less than this left is issued again.
const LEAF_RENEW: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The root certificate clients are to trust (`curl --cacert`).
pub fn root_path(ca: &InternalCa) -> PathBuf {
    ca.dir.join("root.pem")
}

/// The certificate for `ca.names`, issued now if there is none fit to
/// serve (made with the root first, if there is none).
pub(crate) fn ensure(ca: &InternalCa) -> Result<CertificateConfig, Error> {
    let fail = |reason: String| Error::Certificate {
        origin: ca.origin.clone(),
        reason,
    };
    make_dir(&ca.dir).map_err(|e| fail(format!("`{}`: {e}", ca.dir.display())))?;
    let (root_pem, root_key) = root(&ca.dir).map_err(fail)?;
    let stem = file_stem(&ca.names);
    let cert = ca.dir.join(format!("{stem}.pem"));
    let key = ca.dir.join(format!("{stem}.key"));
    if !fit(&cert, &root_pem, &ca.names) {
        issue(&ca.names, &root_pem, &root_key, &cert, &key).map_err(fail)?;
        tracing::info!(
            "local CA: issued a certificate for {} in `{}`",
            ca.names.join(", "),
            cert.display()
        );
    }
    Ok(CertificateConfig {
        cert,
        key,
        origin: ca.origin.clone(),
    })
}

/// The root's certificate (PEM) and key, made if missing.
fn root(dir: &Path) -> Result<(String, KeyPair), String> {
    let (cert, key) = (dir.join("root.pem"), dir.join("root.key"));
    if cert.exists() || key.exists() {
        let pem =
            std::fs::read_to_string(&cert).map_err(|e| format!("`{}`: {e}", cert.display()))?;
        let key_pem =
            std::fs::read_to_string(&key).map_err(|e| format!("`{}`: {e}", key.display()))?;
        let pair = KeyPair::from_pem(&key_pem).map_err(|e| format!("`{}`: {e}", key.display()))?;
        return Ok((pem, pair));
    }
    let pair = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "tern");
    dn.push(
        DnType::CommonName,
        format!("tern local CA {:08x}", unique()),
    );
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = SystemTime::now();
    params.not_before = (now - DAY).into();
    params.not_after = (now + ROOT_VALIDITY).into();
    let made = params.self_signed(&pair).map_err(|e| e.to_string())?;
    write_atomic(&key, pair.serialize_pem().as_bytes(), 0o600)?;
    write_atomic(&cert, made.pem().as_bytes(), 0o644)?;
    tracing::info!("local CA: made a root in `{}`", cert.display());
    Ok((made.pem(), pair))
}

fn issue(
    names: &[String],
    root_pem: &str,
    root_key: &KeyPair,
    cert: &Path,
    key: &Path,
) -> Result<(), String> {
    let issuer = Issuer::from_ca_cert_pem(root_pem, root_key)
        .map_err(|e| format!("the local CA's root: {e}"))?;
    let pair = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = CertificateParams::new(names.to_vec())
        .map_err(|e| format!("names {}: {e}", names.join(", ")))?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, names[0].as_str());
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let now = SystemTime::now();
    params.not_before = (now - BACKDATE).into();
    params.not_after = (now + LEAF_VALIDITY).into();
    let made = params
        .signed_by(&pair, &issuer)
        .map_err(|e| e.to_string())?;
    write_atomic(key, pair.serialize_pem().as_bytes(), 0o600)?;
    write_atomic(cert, made.pem().as_bytes(), 0o644)
}

/// Whether the certificate at `cert` was issued by this root for exactly
/// `names` and has more than [`LEAF_RENEW`] left.
fn fit(cert: &Path, root_pem: &str, names: &[String]) -> bool {
    let (Ok(pem), Ok((_, root))) = (
        std::fs::read(cert),
        x509_parser::pem::parse_x509_pem(root_pem.as_bytes()),
    ) else {
        return false;
    };
    let (Ok((_, leaf)), Ok(root)) = (x509_parser::pem::parse_x509_pem(&pem), root.parse_x509())
    else {
        return false;
    };
    let Ok(leaf) = leaf.parse_x509() else {
        return false;
    };
    let left = leaf.validity().not_after.timestamp() - unix_now();
    let mut have = crate::certs::names_of(&leaf);
    let mut want: Vec<String> = names.iter().map(|n| canonical(n)).collect();
    have.sort();
    want.sort();
    leaf.issuer().as_raw() == root.subject().as_raw()
        && leaf.verify_signature(Some(root.public_key())).is_ok()
        && left > LEAF_RENEW.as_secs() as i64
        && have == want
}

/// A name as `names_of` reads it back: DNS names in lower case, IP
/// addresses in their canonical text.
fn canonical(name: &str) -> String {
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => name.to_ascii_lowercase(),
    }
}

/// A file name for a set of names: the first, made safe, and a hash of all.
fn file_stem(names: &[String]) -> String {
    let first = crate::files::file_name_of(&names[0]);
    // FNV-1a: stable across builds, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in names.join("\n").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{first}-{:08x}", h as u32)
}

fn make_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    crate::files::write_atomic(path, bytes, mode).map_err(|e| format!("`{}`: {e}", path.display()))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Bits that tell this root from another machine's.
fn unique() -> u32 {
    let mut b = [0u8; 4];
    if aws_lc_rs::rand::fill(&mut b).is_err() {
        return std::process::id() ^ unix_now() as u32;
    }
    u32::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(dir: &Path, names: &[&str]) -> InternalCa {
        InternalCa {
            names: names.iter().map(|n| n.to_string()).collect(),
            dir: dir.to_path_buf(),
            origin: "--tls-internal".into(),
        }
    }

    #[test]
    fn the_root_is_made_once_and_the_certificate_kept_until_the_names_change() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let a = ca(&dir, &["localhost", "127.0.0.1", "::1"]);
        let first = ensure(&a).unwrap();
        let root = std::fs::read(root_path(&a)).unwrap();
        let leaf = std::fs::read(&first.cert).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("root.key")), 0o600);
        assert_eq!(mode(&first.key), 0o600);

        let again = ensure(&a).unwrap();
        assert_eq!(again, first);
        assert_eq!(
            std::fs::read(&again.cert).unwrap(),
            leaf,
            "kept, not issued again"
        );
        assert_eq!(std::fs::read(root_path(&a)).unwrap(), root);

        let b = ensure(&ca(&dir, &["localhost", "dev.test"])).unwrap();
        assert_ne!(b.cert, first.cert);
        assert_eq!(std::fs::read(root_path(&a)).unwrap(), root, "same root");
        let loaded = crate::certs::load(&b, &crate::provider()).unwrap();
        assert_eq!(loaded.names, ["localhost", "dev.test"]);
    }

    #[test]
    fn a_new_root_means_new_certificates() {
        let tmp = tempfile::tempdir().unwrap();
        let a = ca(tmp.path(), &["localhost"]);
        let first = ensure(&a).unwrap();
        let leaf = std::fs::read(&first.cert).unwrap();
        std::fs::remove_file(tmp.path().join("root.pem")).unwrap();
        std::fs::remove_file(tmp.path().join("root.key")).unwrap();
        let second = ensure(&a).unwrap();
        assert_ne!(std::fs::read(&second.cert).unwrap(), leaf);
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_it() {
        let a = ca(Path::new("/proc/tern-no-such/pki"), &["localhost"]);
        let err = ensure(&a).unwrap_err().to_string();
        assert!(
            err.starts_with("--tls-internal: `/proc/tern-no-such/pki`: "),
            "{err}"
        );
    }
}
