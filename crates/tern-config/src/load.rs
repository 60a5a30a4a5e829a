//! Loading: read the file, parse TOML, walk the top-level sections and
//! validate them into a [`Config`].

use std::path::Path;
use std::time::Duration;

use crate::address::ListenAddr;
use crate::defaults;
use crate::error::{ConfigError, ConfigErrors};
use crate::model::*;
use crate::site::walk_sites;
use crate::walk::{LoadOptions, Table, Walker};

/// Reads and validates the configuration file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let src = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_owned(),
            line: 0,
            key: String::new(),
            message: format!("cannot read the file: {e}"),
        }])
    })?;
    parse(&src, path, LoadOptions::default())
}

/// Validates configuration text. `file` names the source in errors and is the
/// base for relative paths.
pub fn parse(src: &str, file: &Path, opts: LoadOptions) -> Result<Config, ConfigErrors> {
    let doc = toml_edit::ImDocument::parse(src).map_err(|e| {
        let mut w = Walker::new(src, file, opts);
        let msg = e.message().trim_end().to_owned();
        w.error(e.span(), String::new(), format!("TOML syntax: {msg}"));
        ConfigErrors(w.errors)
    })?;
    let mut w = Walker::new(src, file, opts);
    let mut top = Table::new(doc.as_table(), String::new(), None);
    let cfg = walk_top(&mut w, &mut top);
    w.finish(top);
    match cfg {
        Some(cfg) if w.errors.is_empty() => Ok(cfg),
        _ => Err(ConfigErrors(w.errors)),
    }
}

/// A configuration that serves `root` on `listen` with every other setting at
/// its default (what `tern serve --root DIR` runs).
pub fn for_root(root: &Path, listen: &[ListenAddr]) -> Result<Config, ConfigErrors> {
    let mut src = String::from("[[site]]\nroot = ");
    src.push_str(&toml_edit::Value::from(root.to_string_lossy().as_ref()).to_string());
    src.push('\n');
    for l in listen {
        src.push_str("[[listen]]\naddress = ");
        src.push_str(&toml_edit::Value::from(l.to_string()).to_string());
        src.push('\n');
    }
    parse(&src, Path::new("<command line>"), LoadOptions::default())
}

fn walk_top(w: &mut Walker<'_>, top: &mut Table<'_>) -> Option<Config> {
    let server = match w.table(top, "server") {
        Some(mut t) => {
            let s = ServerSettings {
                workers: w
                    .count(&mut t, "workers", 1024)
                    .map_or_else(default_workers, |n| n as usize),
                grace_period: w
                    .duration(&mut t, "grace_period", false)
                    .unwrap_or(defaults::GRACE_PERIOD),
                shutdown_delay: w
                    .duration(&mut t, "shutdown_delay", false)
                    .unwrap_or_default(),
                http1: match w.string_spanned(&mut t, "http1") {
                    None => Http1::default(),
                    Some((v, _)) if v == "hyper" => Http1::Hyper,
                    Some((v, _)) if v == "tern" => Http1::Tern,
                    Some((v, span)) => {
                        w.error(
                            span,
                            t.key_path("http1"),
                            format!("`{v}` is not an HTTP/1 loop: expected \"hyper\" or \"tern\""),
                        );
                        Http1::default()
                    }
                },
            };
            w.finish(t);
            s
        }
        None => ServerSettings {
            workers: default_workers(),
            grace_period: defaults::GRACE_PERIOD,
            shutdown_delay: Duration::ZERO,
            http1: Http1::default(),
        },
    };

    let mut listeners = Vec::new();
    let mut redirects = Vec::new();
    for mut t in w.tables(top, "listen") {
        match w.string_spanned(&mut t, "address") {
            Some((a, span)) => match a.parse::<ListenAddr>() {
                Ok(addr) => {
                    let addr = match addr {
                        ListenAddr::Unix(p) => ListenAddr::Unix(w.relative(p)),
                        tcp => tcp,
                    };
                    // Port 0 asks the system for a port: each is its own.
                    let ephemeral = matches!(&addr, ListenAddr::Tcp(a) if a.port() == 0);
                    if !ephemeral && listeners.iter().any(|l: &Listener| l.addr == addr) {
                        w.error(
                            span,
                            t.key_path("address"),
                            format!("`{a}` is listed twice"),
                        );
                    }
                    let tls = w
                        .table(&mut t, "tls")
                        .and_then(|tls| crate::tls::walk_tls(w, tls));
                    let redirect = w.bool(&mut t, "redirect_to_https").unwrap_or(false);
                    if redirect {
                        redirects.push((
                            listeners.len(),
                            t.span_of("redirect_to_https"),
                            t.key_path("redirect_to_https"),
                        ));
                    }
                    listeners.push(Listener {
                        addr,
                        tls,
                        redirect_to_https: None,
                    });
                }
                Err(e) => w.error(span, t.key_path("address"), e.to_string()),
            },
            None if t.contains("address") => {}
            None => w.error(
                t.span(),
                t.key_path("address"),
                "missing (e.g. \"127.0.0.1:8080\")",
            ),
        }
        w.finish(t);
    }
    let https = listeners.iter().position(|l: &Listener| l.tls.is_some());
    for (i, span, key) in redirects {
        if listeners[i].tls.is_some() {
            w.error(
                span,
                key,
                "a TLS listener cannot redirect to HTTPS: it is HTTPS",
            );
        } else if https.is_none() {
            w.error(span, key, "no listener has [listen.tls] to redirect to");
        } else {
            listeners[i].redirect_to_https = https;
        }
    }
    if listeners.is_empty() {
        listeners.push(Listener {
            addr: ListenAddr::Tcp(defaults::LISTEN),
            tls: None,
            redirect_to_https: None,
        });
    }

    let limits = walk_limits(w, top);
    let access_log = walk_access_log(w, top);
    let cache = walk_cache(w, top);
    let mut admin = crate::admin::walk_admin(w, top);
    let mut sites = walk_sites(w, top);
    for route in sites.iter_mut().flat_map(|s| s.routes.iter_mut()) {
        if let Some(policy) = route.handler.gateway_policy_mut() {
            policy.send_timeout = limits.send_timeout;
        }
    }
    let mounted = sites.iter().any(|s| {
        s.routes
            .iter()
            .any(|r| matches!(r.handler, HandlerConfig::Admin))
    });
    if mounted && admin.is_none() && !top.contains("admin") {
        admin = Some(defaults::admin());
    }
    if sites.is_empty() && w.errors.is_empty() {
        w.error(
            None,
            "site".into(),
            "at least one [[site]] with a root is required",
        );
    }
    Some(Config {
        source: w.file().to_owned(),
        server,
        listeners,
        limits,
        access_log,
        cache,
        admin,
        sites,
    })
}

fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn walk_limits(w: &mut Walker<'_>, top: &mut Table<'_>) -> Limits {
    let mut l = Limits::default();
    let Some(mut t) = w.table(top, "limits") else {
        return l;
    };
    if let Some(n) = w.size(&mut t, "max_header_bytes", 1024) {
        l.max_header_bytes = n.min(1 << 30) as usize;
    }
    if let Some(n) = w.count(&mut t, "max_headers", 10_000) {
        l.max_headers = n as usize;
    }
    if let Some(n) = w.size(&mut t, "max_uri_bytes", 64) {
        l.max_uri_bytes = n.min(1 << 30) as usize;
    }
    if let Some(n) = w.size(&mut t, "max_body_bytes", 0) {
        l.max_body_bytes = n;
    }
    if let Some(d) = w.duration(&mut t, "header_read_timeout", true) {
        l.header_read_timeout = d;
    }
    if let Some(d) = w.duration(&mut t, "body_timeout", true) {
        l.body_timeout = d;
    }
    if let Some(n) = w.size(&mut t, "body_min_rate", 0) {
        l.body_min_rate = n;
    }
    if let Some(d) = w.duration(&mut t, "keepalive_timeout", false) {
        l.keepalive_timeout = d;
    }
    if let Some(d) = w.duration(&mut t, "send_timeout", true) {
        l.send_timeout = d;
    }
    if let Some(n) = w.count(&mut t, "max_connections", 10_000_000) {
        l.max_connections = n as usize;
    }
    if let Some(n) = w.integer_in(&mut t, "max_connections_per_client", 0, 1_000_000) {
        l.max_connections_per_client = n as usize;
    }
    if l.max_uri_bytes > l.max_header_bytes {
        w.error(
            t.span(),
            t.key_path("max_uri_bytes"),
            "cannot exceed max_header_bytes (the request line is part of the head)",
        );
    }
    w.finish(t);
    l
}

fn walk_access_log(w: &mut Walker<'_>, top: &mut Table<'_>) -> Option<AccessLogConfig> {
    let mut t = w.table(top, "access_log")?;
    let path = w.string(&mut t, "path");
    let format = match w.string_spanned(&mut t, "format") {
        None => Some(LogFormat::default()),
        Some((f, span)) => match f.as_str() {
            "common" => Some(LogFormat::Common),
            "combined" => Some(LogFormat::Combined),
            "combined_tls" => Some(LogFormat::CombinedTls),
            "json" => Some(LogFormat::Json),
            other => {
                w.error(
                    span,
                    t.key_path("format"),
                    format!("`{other}` is not a format (common, combined, combined_tls or json)"),
                );
                None
            }
        },
    };
    if path.is_none() && !t.contains("path") {
        w.error(t.span(), t.key_path("path"), "missing (the file to write)");
    }
    w.finish(t);
    Some(AccessLogConfig {
        path: w.relative(path?),
        format: format?,
    })
}

fn walk_cache(w: &mut Walker<'_>, top: &mut Table<'_>) -> CacheConfig {
    let mut c = CacheConfig::default();
    let Some(mut t) = w.table(top, "cache") else {
        return c;
    };
    if let Some(b) = w.bool(&mut t, "enabled") {
        c.enabled = b;
    }
    if let Some(n) = w.size(&mut t, "max_bytes", 0) {
        c.max_bytes = n;
    }
    if let Some(n) = w.size(&mut t, "max_entry_bytes", 0) {
        c.max_entry_bytes = n;
    }
    if let Some(d) = w.duration(&mut t, "revalidate", false) {
        c.revalidate = d;
    }
    if c.max_entry_bytes > c.max_bytes {
        w.error(
            t.span(),
            t.key_path("max_entry_bytes"),
            "cannot exceed max_bytes",
        );
    }
    w.finish(t);
    c
}
