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
//! acme = { names = ["example.com"], directory = "https://acme-v02.api.letsencrypt.org/directory",
//!          email = "ops@example.com", challenge = "http-01" }  # or "tls-alpn-01"
//! ```
//!
//! With `acme` or `internal`, `certificates` may be left out.
//!
//! The files are read, parsed and matched with their keys by `tern-tls`
//! (for `tern check` as for `serve`); here they are only located, and
//! each remembers where in the file it was configured, so that those
//! errors name file, line and key too.

use crate::walk::{Table, Walker};
use crate::{
    AcmeChallenge, AcmeConfig, CertificateConfig, ClientAuth, InternalCa, TicketKeys, TlsConfig,
    TlsProfile, UnknownNames,
};

pub(crate) fn walk_tls(w: &mut Walker<'_>, mut t: Table<'_>) -> Option<TlsConfig> {
    let mut certificates = Vec::new();
    let list_span = t.span();
    let entries = w.tables(&mut t, "certificates");
    let none_listed = entries.is_empty();
    for mut c in entries {
        let origin = w.origin(c.span(), c.path());
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
        let origin = w.origin(c.span(), c.path());
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
    let ticket_origin = w.origin(t.span_of("ticket_key_file"), &t.key_path("ticket_key_file"));
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
    // With an `acme` table (even a wrong one, reported on its own), no
    // `certificates` are needed.
    let acme_given = t.contains("acme");
    let acme = w.table(&mut t, "acme").and_then(|a| walk_acme(w, a));
    let path = t.key_path("certificates");
    w.finish(t);
    if none_listed && !acme_given && internal.is_none() {
        w.error(
            list_span,
            path,
            "missing: at least one { cert = \"...pem\", key = \"...key\" }, or `acme` or `internal = true`",
        );
        return None;
    }
    (!certificates.is_empty() || internal.is_some() || acme.is_some()).then_some(TlsConfig {
        certificates,
        profile,
        unknown_names,
        client_auth,
        internal,
        ticket_keys,
        acme,
    })
}

/// `internal = true`, or `internal = { names = [...], dir = "..." }`.
fn walk_internal(w: &mut Walker<'_>, t: &mut Table<'_>) -> Option<InternalCa> {
    let origin = w.origin(t.span_of("internal"), &t.key_path("internal"));
    if t.contains("internal") && !t.is_table("internal") {
        return w
            .bool(t, "internal")
            .filter(|&on| on)
            .map(|_| InternalCa::with_defaults(origin));
    }
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
    let mut ca = InternalCa::with_defaults(origin);
    if let Some(names) = names.filter(|n| !n.is_empty()) {
        ca.names = names;
    }
    if let Some(dir) = dir {
        ca.dir = dir;
    }
    Some(ca)
}

/// `acme = { names, directory, email, challenge, directory_ca, state, timeout }`.
fn walk_acme(w: &mut Walker<'_>, mut a: Table<'_>) -> Option<AcmeConfig> {
    let origin = w.origin(a.span(), a.path());
    let names = match w.strings_spanned(&mut a, "names") {
        None => {
            if !a.contains("names") {
                w.error(
                    a.span(),
                    a.key_path("names"),
                    "missing: the certificate's DNS names",
                );
            }
            None
        }
        Some(list) if list.is_empty() => {
            w.error(
                a.span_of("names"),
                a.key_path("names"),
                "empty: at least one DNS name",
            );
            None
        }
        Some(list) => {
            let mut names = Vec::new();
            for (n, span) in list {
                match dns_name(&n) {
                    Ok(n) => names.push(n),
                    Err(why) => w.error(span, a.key_path("names"), format!("`{n}`: {why}")),
                }
            }
            Some(names)
        }
    };
    let directory = match w.string_spanned(&mut a, "directory") {
        None => {
            if !a.contains("directory") {
                w.error(
                    a.span(),
                    a.key_path("directory"),
                    "missing: the CA's directory URL (https://...)",
                );
            }
            None
        }
        Some((d, span)) if !d.starts_with("https://") => {
            w.error(
                span,
                a.key_path("directory"),
                format!("`{d}`: expected an https:// URL"),
            );
            None
        }
        Some((d, _)) => Some(d),
    };
    let email = match w.string_spanned(&mut a, "email") {
        Some((e, span)) if !e.contains('@') || e.contains(char::is_whitespace) => {
            w.error(
                span,
                a.key_path("email"),
                format!("`{e}`: expected an address"),
            );
            None
        }
        other => other.map(|(e, _)| e),
    };
    let challenge = match w.string_spanned(&mut a, "challenge") {
        None => AcmeChallenge::default(),
        Some((c, span)) => match c.as_str() {
            "http-01" => AcmeChallenge::Http01,
            "tls-alpn-01" => AcmeChallenge::TlsAlpn01,
            _ => {
                w.error(
                    span,
                    a.key_path("challenge"),
                    format!("`{c}`: expected \"http-01\" or \"tls-alpn-01\""),
                );
                AcmeChallenge::default()
            }
        },
    };
    let directory_ca = if a.contains("directory_ca") {
        file(w, &mut a, "directory_ca")
    } else {
        None
    };
    let state = w.string(&mut a, "state").map_or_else(
        || crate::defaults::state_dir().join("acme"),
        |s| w.relative(s),
    );
    let timeout = w
        .duration(&mut a, "timeout", true)
        .unwrap_or(crate::defaults::ACME_TIMEOUT);
    w.finish(a);
    Some(AcmeConfig {
        names: names?,
        directory: directory?,
        email,
        challenge,
        directory_ca,
        state,
        timeout,
        origin,
    })
}

/// `name` as a DNS name a certificate can carry, lower case (a wildcard
/// needs DNS-01, which tern does not answer).
fn dns_name(name: &str) -> Result<String, &'static str> {
    let n = name.trim_end_matches('.').to_ascii_lowercase();
    if n.starts_with("*.") {
        return Err("wildcard names need the DNS-01 challenge, which tern does not answer");
    }
    if n.parse::<std::net::IpAddr>().is_ok() {
        return Err("an IP address: expected a DNS name");
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if n.is_empty() || n.len() > 253 || !n.split('.').all(label_ok) {
        return Err("not a DNS name");
    }
    Ok(n)
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
