//! The walker of a listener's `tls` table.
//!
//! ```toml
//! [[listen]]
//! address = "0.0.0.0:443"
//! [listen.tls]
//! certificates = [
//!     { cert = "certs/example.pem", key = "certs/example.key" },
//!     { cert = "certs/example-rsa.pem", key = "certs/example-rsa.key" },
//! ]
//! profile = "intermediate"   # TLS 1.2 and 1.3; "modern": TLS 1.3 only
//! unknown_names = "default"  # or "refuse"
//! client_auth = { ca = "certs/clients-ca.pem", mode = "require" }  # or "optional"
//! ```
//!
//! The files are read, parsed and matched with their keys by `tern-tls`
//! (for `tern check` as for `serve`); here they are only located, and
//! each remembers where in the file it was configured, so that those
//! errors name file, line and key too.

use crate::walk::{Table, Walker};
use crate::{CertificateConfig, ClientAuth, TlsConfig, TlsProfile, UnknownNames};

pub(crate) fn walk_tls(w: &mut Walker<'_>, mut t: Table<'_>) -> Option<TlsConfig> {
    let mut certificates = Vec::new();
    let list_span = t.span();
    let entries = w.tables(&mut t, "certificates");
    let none_listed = entries.is_empty();
    for mut c in entries {
        let origin = format!(
            "{}:{}: {}",
            w.file().display(),
            w.line_of(c.span()),
            c.path()
        );
        let cert = file(w, &mut c, "cert");
        let key = file(w, &mut c, "key");
        w.finish(c);
        if let (Some(cert), Some(key)) = (cert, key) {
            certificates.push(CertificateConfig { cert, key, origin });
        }
    }
    let profile = match w.string_spanned(&mut t, "profile") {
        None => TlsProfile::default(),
        Some((p, span)) => match p.as_str() {
            "intermediate" => TlsProfile::Intermediate,
            "modern" => TlsProfile::Modern,
            _ => {
                w.error(
                    span,
                    t.key_path("profile"),
                    format!("`{p}`: expected \"intermediate\" (TLS 1.2 and 1.3) or \"modern\" (TLS 1.3)"),
                );
                TlsProfile::default()
            }
        },
    };
    let unknown_names = match w.string_spanned(&mut t, "unknown_names") {
        None => UnknownNames::default(),
        Some((u, span)) => match u.as_str() {
            "default" => UnknownNames::Default,
            "refuse" => UnknownNames::Refuse,
            _ => {
                w.error(
                    span,
                    t.key_path("unknown_names"),
                    format!("`{u}`: expected \"default\" (the first certificate) or \"refuse\""),
                );
                UnknownNames::default()
            }
        },
    };
    let client_auth = w.table(&mut t, "client_auth").and_then(|mut c| {
        let origin = format!(
            "{}:{}: {}",
            w.file().display(),
            w.line_of(c.span()),
            c.path()
        );
        let ca = file(w, &mut c, "ca");
        let required = match w.string_spanned(&mut c, "mode") {
            None => true,
            Some((m, span)) => match m.as_str() {
                "require" => true,
                "optional" => false,
                _ => {
                    w.error(
                        span,
                        c.key_path("mode"),
                        format!("`{m}`: expected \"require\" or \"optional\""),
                    );
                    true
                }
            },
        };
        w.finish(c);
        ca.map(|ca| ClientAuth {
            ca,
            required,
            origin,
        })
    });
    let path = t.key_path("certificates");
    w.finish(t);
    if none_listed {
        w.error(
            list_span,
            path,
            "missing: at least one { cert = \"...pem\", key = \"...key\" }",
        );
        return None;
    }
    (!certificates.is_empty()).then_some(TlsConfig {
        certificates,
        profile,
        unknown_names,
        client_auth,
    })
}

/// A file named by `key`, relative to the configuration file, checked to
/// be readable when paths are checked.
fn file(w: &mut Walker<'_>, t: &mut Table<'_>, key: &str) -> Option<std::path::PathBuf> {
    let Some((name, span)) = w.string_spanned(t, key) else {
        if !t.contains(key) {
            w.error(t.span(), t.key_path(key), "missing (a PEM file)");
        }
        return None;
    };
    let path = w.relative(&name);
    if w.check_paths() {
        if let Err(e) = std::fs::File::open(&path) {
            w.error(span, t.key_path(key), format!("`{}`: {e}", path.display()));
        }
    }
    Some(path)
}
