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
//! ticket_key_file = ["secrets/ticket.key", "secrets/ticket.key.old"]
//! internal = true   # or { names = ["localhost", "dev.test"], dir = "pki" }
//! ```
//!
//! The files are read, parsed and matched with their keys by `tern-tls`
//! (for `tern check` as for `serve`); here they are only located, and
//! each remembers where in the file it was configured, so that those
//! errors name file, line and key too.

use crate::walk::{Table, Walker};
use crate::{
    CertificateConfig, ClientAuth, InternalCa, TicketKeys, TlsConfig, TlsProfile, UnknownNames,
};

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
    let internal = walk_internal(w, &mut t);
    let ticket_origin = format!(
        "{}:{}: {}",
        w.file().display(),
        w.line_of(t.span_of("ticket_key_file")),
        t.key_path("ticket_key_file")
    );
    let ticket_keys = match w.one_or_more_strings(&mut t, "ticket_key_file") {
        None => None,
        Some(files) => {
            let mut keys = Vec::with_capacity(files.len());
            for (f, span) in files {
                let k = w.relative(&f);
                if w.check_paths() {
                    if let Err(e) = std::fs::File::open(&k) {
                        w.error(
                            span,
                            t.key_path("ticket_key_file"),
                            format!("`{}`: {e}", k.display()),
                        );
                    }
                }
                keys.push(k);
            }
            Some(TicketKeys {
                files: keys,
                origin: ticket_origin,
            })
        }
    };
    let path = t.key_path("certificates");
    w.finish(t);
    if none_listed && internal.is_none() {
        w.error(
            list_span,
            path,
            "missing: at least one { cert = \"...pem\", key = \"...key\" }, or `internal = true`",
        );
        return None;
    }
    (!certificates.is_empty() || internal.is_some()).then_some(TlsConfig {
        certificates,
        profile,
        unknown_names,
        client_auth,
        internal,
        ticket_keys,
    })
}

/// `internal = true`, or `internal = { names = [...], dir = "..." }`.
fn walk_internal(w: &mut Walker<'_>, t: &mut Table<'_>) -> Option<InternalCa> {
    let origin = |w: &Walker<'_>, t: &Table<'_>| {
        format!(
            "{}:{}: {}",
            w.file().display(),
            w.line_of(t.span_of("internal")),
            t.key_path("internal")
        )
    };
    let defaults = || {
        crate::defaults::INTERNAL_NAMES
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
    };
    if t.contains("internal") && !t.is_table("internal") {
        let origin = origin(w, t);
        return w.bool(t, "internal").filter(|&on| on).map(|_| InternalCa {
            names: defaults(),
            dir: crate::defaults::state_dir().join("pki"),
            origin,
        });
    }
    let origin = origin(w, t);
    let mut c = w.table(t, "internal")?;
    let names = w.strings(&mut c, "names");
    if names.as_ref().is_some_and(|n| n.is_empty()) {
        w.error(
            c.span_of("names"),
            c.key_path("names"),
            "empty: name at least one host",
        );
    }
    let dir = w.string(&mut c, "dir").map(|d| w.relative(d));
    w.finish(c);
    Some(InternalCa {
        names: names.filter(|n| !n.is_empty()).unwrap_or_else(defaults),
        dir: dir.unwrap_or_else(|| crate::defaults::state_dir().join("pki")),
        origin,
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
