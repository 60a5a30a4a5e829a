//! `[[site]]`: virtual hosts, their static-file settings, and their
//! routes, each handed to the walker of its handler kind; response-header
//! rules are `rules.rs`'s.

use std::collections::BTreeMap;

use crate::cgi::walk_cgi;
use crate::cgiplus::walk_cgiplus;
use crate::defaults;
use crate::fastcgi::walk_fastcgi;
use crate::model::{HandlerConfig, Route, RouteMatcher, Site, StaticConfig};
use crate::rules::{walk_headers, walk_site_rules};
use crate::walk::{Table, Walker};
use crate::wasm::walk_wasm;

pub(crate) fn walk_sites(w: &mut Walker<'_>, top: &mut Table<'_>) -> Vec<Site> {
    let mut sites: Vec<Site> = Vec::new();
    let mut default_seen = false;
    for mut t in w.tables(top, "site") {
        let hosts = walk_hosts(w, &mut t);
        for h in &hosts {
            if sites.iter().any(|s| s.hosts.contains(h)) {
                w.error(
                    t.span(),
                    t.key_path("hosts"),
                    format!("host `{h}` belongs to an earlier site"),
                );
            }
        }
        let default = w.bool(&mut t, "default").unwrap_or(false);
        if default && default_seen {
            w.error(
                t.span(),
                t.key_path("default"),
                "only one site can be the default",
            );
        }
        default_seen |= default;
        let static_files = walk_static(w, &mut t, None);
        let routes = walk_routes(w, &mut t, static_files.as_ref());
        let header_rules = walk_headers(w, &mut t);
        let rules = walk_site_rules(w, &mut t);
        w.finish(t);
        if let Some(static_files) = static_files {
            sites.push(Site {
                name: hosts
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "default".to_owned()),
                hosts,
                default,
                static_files,
                routes,
                header_rules,
                rules,
            });
        }
    }
    sites
}

fn walk_hosts(w: &mut Walker<'_>, t: &mut Table<'_>) -> Vec<String> {
    let Some(list) = w.strings_spanned(t, "hosts") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (h, span) in list {
        let h = h.to_ascii_lowercase();
        let name = h.strip_prefix("*.").unwrap_or(&h);
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        let valid = valid || name.parse::<std::net::IpAddr>().is_ok();
        if valid {
            out.push(h);
        } else {
            w.error(
                span,
                t.key_path("hosts"),
                format!("`{h}` is not a host name (no port, no scheme; `*.` may lead)"),
            );
        }
    }
    out
}

/// The static-file settings of a site (`inherit` is `None`) or of a static
/// route (keys it does not set come from the site).
fn walk_static(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    inherit: Option<&StaticConfig>,
) -> Option<StaticConfig> {
    let root = match w.string_spanned(t, "root") {
        Some((r, span)) => {
            let root = w.relative(&r);
            let root = std::path::absolute(&root).unwrap_or(root);
            if w.check_paths() {
                match std::fs::metadata(&root) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => w.error(
                        span.clone(),
                        t.key_path("root"),
                        format!("`{}` is not a directory", root.display()),
                    ),
                    Err(e) => w.error(
                        span.clone(),
                        t.key_path("root"),
                        format!("`{}`: {e}", root.display()),
                    ),
                }
            }
            Some(root)
        }
        None => match inherit {
            Some(i) => Some(i.root.clone()),
            None if t.contains("root") => None,
            None => {
                w.error(
                    t.span(),
                    t.key_path("root"),
                    "missing (the directory to serve)",
                );
                None
            }
        },
    };
    let d = inherit.cloned();
    let mut mime: BTreeMap<String, String> = d.as_ref().map(|d| d.mime.clone()).unwrap_or_default();
    if let Some(entries) = w.string_map(t, "mime") {
        for (ext, ty, span) in entries {
            if !is_media_type(&ty) {
                w.error(
                    span,
                    format!("{}.{ext}", t.key_path("mime")),
                    format!("`{ty}` is not a media type"),
                );
            }
            mime.insert(ext.trim_start_matches('.').to_ascii_lowercase(), ty);
        }
    }
    let cfg = StaticConfig {
        root: root?,
        index: w
            .strings(t, "index")
            .or_else(|| d.as_ref().map(|d| d.index.clone()))
            .unwrap_or_else(|| defaults::INDEX.iter().map(|&i| i.to_owned()).collect()),
        directory_listing: w
            .bool(t, "directory_listing")
            .or(d.as_ref().map(|d| d.directory_listing))
            .unwrap_or(defaults::DIRECTORY_LISTING),
        follow_symlinks: w
            .bool(t, "follow_symlinks")
            .or(d.as_ref().map(|d| d.follow_symlinks))
            .unwrap_or(defaults::FOLLOW_SYMLINKS),
        dotfiles: w
            .bool(t, "dotfiles")
            .or(d.as_ref().map(|d| d.dotfiles))
            .unwrap_or(defaults::DOTFILES),
        precompressed: w
            .bool(t, "precompressed")
            .or(d.as_ref().map(|d| d.precompressed))
            .unwrap_or(defaults::PRECOMPRESSED),
        mime,
        max_ranges: w
            .count(t, "max_ranges", 10_000)
            .map(|n| n as usize)
            .or(d.as_ref().map(|d| d.max_ranges))
            .unwrap_or(defaults::MAX_RANGES),
        cache: w
            .bool(t, "cache")
            .or(d.as_ref().map(|d| d.cache))
            .unwrap_or(defaults::SITE_CACHE),
    };
    for name in &cfg.index {
        if name.is_empty() || name.contains('/') {
            w.error(
                t.span(),
                t.key_path("index"),
                format!("`{name}` is not a file name"),
            );
        }
    }
    Some(cfg)
}

fn walk_routes(
    w: &mut Walker<'_>,
    site: &mut Table<'_>,
    site_static: Option<&StaticConfig>,
) -> Vec<Route> {
    let mut routes: Vec<Route> = Vec::new();
    for mut t in w.tables(site, "route") {
        let prefix = w.string_spanned(&mut t, "prefix");
        let ext = w.string_spanned(&mut t, "extension");
        let matcher = match (prefix, ext) {
            (Some((p, span)), None) => {
                if !p.starts_with('/') {
                    w.error(
                        span,
                        t.key_path("prefix"),
                        format!("`{p}` must start with '/'"),
                    );
                    None
                } else if p.contains(char::is_control) {
                    // A decoded request path never holds one, so such a
                    // route could never match; and a persistent route's
                    // pool, named after it, would refuse a NUL at start.
                    w.error(
                        span,
                        t.key_path("prefix"),
                        "a control character, which no request path holds",
                    );
                    None
                } else {
                    // Compare on the normalised form the router uses.
                    let trimmed = p.trim_end_matches('/');
                    Some(RouteMatcher::Prefix(if trimmed.is_empty() {
                        "/".into()
                    } else {
                        trimmed.into()
                    }))
                }
            }
            (None, Some((e, span))) => {
                let e = e
                    .trim_start_matches("*.")
                    .trim_start_matches('.')
                    .to_ascii_lowercase();
                if e.is_empty() || e.contains('/') || e.contains(char::is_control) {
                    w.error(
                        span,
                        t.key_path("extension"),
                        "expected an extension such as \"cgi\"",
                    );
                    None
                } else {
                    Some(RouteMatcher::Extension(e))
                }
            }
            (Some(_), Some(_)) => {
                w.error(
                    t.span(),
                    t.key_path("extension"),
                    "a route has either `prefix` or `extension`, not both",
                );
                None
            }
            (None, None) => {
                w.error(
                    t.span(),
                    t.path().to_owned(),
                    "a route needs `prefix` or `extension`",
                );
                None
            }
        };
        if let Some(m) = &matcher {
            if routes.iter().any(|r| &r.matcher == m) {
                w.error(
                    t.span(),
                    t.path().to_owned(),
                    "another route of this site matches the same requests",
                );
            }
        }
        let root = site_static.map(|s| s.root.as_path());
        let handler = match w.string_spanned(&mut t, "handler") {
            Some((h, span)) => match h.as_str() {
                "static" => site_static
                    .and_then(|s| walk_static(w, &mut t, Some(s)))
                    .map(HandlerConfig::Static),
                "cgi" => walk_cgi(w, &mut t, root, matcher.as_ref()).map(HandlerConfig::Cgi),
                "fastcgi" => walk_fastcgi(w, &mut t, root).map(HandlerConfig::FastCgi),
                "cgiplus" => {
                    walk_cgiplus(w, &mut t, root, matcher.as_ref()).map(HandlerConfig::CgiPlus)
                }
                "wasm" => walk_wasm(w, &mut t, root).map(HandlerConfig::Wasm),
                "admin" => Some(HandlerConfig::Admin),
                other => {
                    w.error(
                        span,
                        t.key_path("handler"),
                        format!(
                            "`{other}` is not a handler kind ({})",
                            "static, cgi, fastcgi, cgiplus, wasm, admin"
                        ),
                    );
                    None
                }
            },
            None if t.contains("handler") => None,
            None => {
                w.error(t.span(), t.key_path("handler"), "missing (e.g. \"static\")");
                None
            }
        };
        w.finish(t);
        if let (Some(matcher), Some(handler)) = (matcher, handler) {
            routes.push(Route { matcher, handler });
        }
    }
    routes
}

/// `type/subtype` with token characters, optionally followed by `;` and
/// parameters (checked only for control characters).
fn is_media_type(s: &str) -> bool {
    let (essence, params) = s.split_once(';').unwrap_or((s, ""));
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let ok = essence
        .trim()
        .split_once('/')
        .is_some_and(|(a, b)| token(a) && token(b));
    ok && params
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}
