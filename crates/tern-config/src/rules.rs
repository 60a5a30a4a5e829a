//! A site's rules: `[[site.headers]]` (response-header rules: the glob
//! compiles, names and values are valid, no framing header is touched),
//! `[[site.rules]]` (the ordered rules), `[[site.access]]` (realms) and
//! `[[site.limit]]` (rate limits), each checked here and compiled into
//! `tern-rules`'s types, so that check, explain and serve decide alike.

use std::sync::Arc;

use http::StatusCode;
use tern_rules::access::{Admits, LimitKey, LimitRule, Passwords, Realm, Satisfy};
use tern_rules::cond::{parse_network, Conditions, HostPattern, PathGlob, PathMatch};
use tern_rules::limit::{Delay, Rate, RateLimit};
use tern_rules::password::{GroupFile, PasswordFile};
use tern_rules::rule::{Action, Fallback, Flow, Rule};
use tern_rules::template::{Captures, Template};

use crate::model::{HeaderRule, SiteRules};
use crate::walk::{Table, Walker};

/// A site's header rules, in file order.
pub(crate) fn walk_headers(w: &mut Walker<'_>, site: &mut Table<'_>) -> Vec<HeaderRule> {
    let mut rules = Vec::new();
    for mut t in w.tables(site, "headers") {
        let pattern = match w.string_spanned(&mut t, "path") {
            Some((p, span)) => match globset::GlobBuilder::new(&p)
                .literal_separator(true)
                .build()
            {
                Ok(_) => Some(p),
                Err(e) => {
                    w.error(span, t.key_path("path"), format!("bad glob: {}", e.kind()));
                    None
                }
            },
            None if t.contains("path") => None,
            None => {
                w.error(
                    t.span(),
                    t.key_path("path"),
                    "missing (a glob such as \"*.css\")",
                );
                None
            }
        };
        let mut set = Vec::new();
        match w.string_map(&mut t, "set") {
            Some(entries) => {
                for (name, value, span) in entries {
                    let key = format!("{}.{name}", t.key_path("set"));
                    let name_ok = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    let value_ok = value
                        .bytes()
                        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f));
                    if !name_ok {
                        w.error(span.clone(), key.clone(), "not a valid header name");
                    }
                    if !value_ok {
                        w.error(
                            span.clone(),
                            key.clone(),
                            "control characters are not allowed in a header value",
                        );
                    }
                    let lower = name.to_ascii_lowercase();
                    if matches!(
                        lower.as_str(),
                        "content-length" | "transfer-encoding" | "connection" | "content-range"
                    ) {
                        w.error(
                            span,
                            key,
                            "this header is set by the server and cannot be overridden",
                        );
                    }
                    set.push((lower, value));
                }
            }
            None if t.contains("set") => {}
            None => w.error(
                t.span(),
                t.key_path("set"),
                "missing (a table of header names to values)",
            ),
        }
        w.finish(t);
        if let Some(pattern) = pattern {
            rules.push(HeaderRule { pattern, set });
        }
    }
    rules
}

/// The statuses a redirect may have.
const REDIRECTS: [u16; 5] = [301, 302, 303, 307, 308];
/// The keys that choose a rule's action.
/// `fail` is WASD's name for `return` (an error status).
const ACTIONS: [&str; 6] = ["redirect", "rewrite", "return", "fail", "try_files", "set"];

pub(crate) fn walk_site_rules(w: &mut Walker<'_>, site: &mut Table<'_>) -> SiteRules {
    let mut out = SiteRules::default();
    for mut t in w.tables(site, "rules") {
        let origin = w.origin(t.span(), t.path());
        let (conditions, caps) = walk_conditions(w, &mut t);
        let action = walk_action(w, &mut t, &caps);
        w.finish(t);
        if let (Some(conditions), Some(action)) = (conditions, action) {
            out.rules.push(Rule {
                conditions,
                action,
                origin,
            });
        }
    }
    for mut t in w.tables(site, "access") {
        if let Some(realm) = walk_realm(w, &mut t) {
            out.realms.push(realm);
        }
        w.finish(t);
    }
    for mut t in w.tables(site, "limit") {
        if let Some(limit) = walk_limit(w, &mut t) {
            out.limits.push(limit);
        }
        w.finish(t);
    }
    out
}

/// A table's conditions, and the captures its regex offers templates.
/// `None` when one of them is invalid (the error is recorded).
fn walk_conditions(w: &mut Walker<'_>, t: &mut Table<'_>) -> (Option<Conditions>, Captures) {
    let mut ok = true;
    let mut c = Conditions::default();
    let mut caps = Captures::default();
    if t.contains("path") && t.contains("regex") {
        w.error(
            t.span_of("regex"),
            t.key_path("regex"),
            "a rule has either `path` (a glob) or `regex`, not both",
        );
        ok = false;
    }
    if let Some((p, span)) = w.string_spanned(t, "path") {
        if !p.starts_with('/') && !p.starts_with('*') {
            w.error(
                span,
                t.key_path("path"),
                "a path glob starts with `/` (or `*`): paths always do",
            );
            ok = false;
        } else {
            match globset::GlobBuilder::new(&p)
                .literal_separator(true)
                .build()
            {
                Ok(g) => c.path = Some(PathMatch::Glob(PathGlob::new(g))),
                Err(e) => {
                    w.error(span, t.key_path("path"), format!("bad glob: {}", e.kind()));
                    ok = false;
                }
            }
        }
    }
    if let Some((r, span)) = w.string_spanned(t, "regex") {
        match regex::Regex::new(&r) {
            Ok(re) => {
                caps = Captures::of(&re);
                c.path = Some(PathMatch::Regex(re));
            }
            Err(e) => {
                w.error(span, t.key_path("regex"), format!("bad regex: {e}"));
                ok = false;
            }
        }
    }
    if let Some(hosts) = w.one_or_more_strings(t, "host") {
        for (h, span) in hosts {
            let h = h.to_ascii_lowercase();
            let name = h.strip_prefix("*.").unwrap_or(&h);
            let valid = !name.is_empty()
                && name.split('.').all(|l| {
                    !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                });
            if valid || name.parse::<std::net::IpAddr>().is_ok() {
                c.hosts.push(HostPattern(h));
            } else {
                w.error(
                    span,
                    t.key_path("host"),
                    format!("`{h}` is not a host name"),
                );
                ok = false;
            }
        }
    }
    if let Some(methods) = w.one_or_more_strings(t, "method") {
        for (m, span) in methods {
            let token = !m.is_empty()
                && m.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            match http::Method::from_bytes(m.as_bytes()) {
                Ok(method) if token => c.methods.push(method),
                _ => {
                    w.error(span, t.key_path("method"), format!("`{m}` is not a method"));
                    ok = false;
                }
            }
        }
    }
    if let Some(headers) = w.string_map(t, "header") {
        for (name, value, span) in headers {
            let key = format!("{}.{name}", t.key_path("header"));
            let Ok(hn) = http::HeaderName::from_bytes(name.as_bytes()) else {
                w.error(span, key, "not a valid header name");
                ok = false;
                continue;
            };
            match globset::Glob::new(&value) {
                Ok(g) => c.headers.push((hn, g.compile_matcher())),
                Err(e) => {
                    w.error(span, key, format!("bad glob: {}", e.kind()));
                    ok = false;
                }
            }
        }
    }
    if let Some(query) = w.string_map(t, "query") {
        for (name, value, span) in query {
            match globset::Glob::new(&value) {
                Ok(g) => c.query.push((name, g.compile_matcher())),
                Err(e) => {
                    w.error(
                        span,
                        format!("{}.{name}", t.key_path("query")),
                        format!("bad glob: {}", e.kind()),
                    );
                    ok = false;
                }
            }
        }
    }
    if let Some(nets) = networks(w, t, "client") {
        c.clients = nets;
    } else if t.contains("client") {
        ok = false;
    }
    if let Some((s, span)) = w.string_spanned(t, "scheme") {
        match s.as_str() {
            "http" => c.secure = Some(false),
            "https" => c.secure = Some(true),
            _ => {
                w.error(span, t.key_path("scheme"), "expected \"http\" or \"https\"");
                ok = false;
            }
        }
    }
    (ok.then_some(c), caps)
}

/// A list of networks (`"10.0.0.0/8"`, `"::1"`, or `"all"`).
pub(crate) fn networks(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    key: &str,
) -> Option<Vec<ipnet::IpNet>> {
    let list = w.one_or_more_strings(t, key)?;
    let mut nets = Vec::new();
    let mut ok = true;
    for (s, span) in list {
        if s == "all" {
            nets.push("0.0.0.0/0".parse().expect("a network"));
            nets.push("::/0".parse().expect("a network"));
            continue;
        }
        match parse_network(&s) {
            Ok(n) => nets.push(n),
            Err(e) => {
                w.error(span, t.key_path(key), e);
                ok = false;
            }
        }
    }
    ok.then_some(nets)
}

/// A target (a URL or a path): no spaces or control characters.
fn template(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    key: &str,
    (s, span): (String, crate::walk::Span),
    caps: &Captures,
) -> Option<Template> {
    if s.bytes().any(|b| b == b' ') {
        w.error(
            span,
            t.key_path(key),
            "spaces are not allowed in a target (percent-encode them: %20)",
        );
        return None;
    }
    header_template(w, t, key, (s, span), caps)
}

/// A header value: no control characters.
fn header_template(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    key: &str,
    (s, span): (String, crate::walk::Span),
    caps: &Captures,
) -> Option<Template> {
    if s.bytes().any(|b| b.is_ascii_control()) {
        w.error(span, t.key_path(key), "control characters are not allowed");
        return None;
    }
    match Template::parse(&s, caps) {
        Ok(tpl) => Some(tpl),
        Err(e) => {
            w.error(span, t.key_path(key), e);
            None
        }
    }
}

/// A template that is a path on this site: it starts with `/` or with a
/// variable or capture (which then must give one).
fn path_template(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    key: &str,
    (s, span): (String, crate::walk::Span),
    caps: &Captures,
) -> Option<Template> {
    if !s.starts_with('/') && !s.starts_with('$') {
        w.error(
            span,
            t.key_path(key),
            format!("`{s}` is not a path on this site (it starts with `/`)"),
        );
        return None;
    }
    template(w, t, key, (s, span), caps)
}

fn walk_action(w: &mut Walker<'_>, t: &mut Table<'_>, caps: &Captures) -> Option<Action> {
    let named: Vec<&str> = ACTIONS.iter().copied().filter(|a| t.contains(a)).collect();
    match named.as_slice() {
        [_] => {}
        [] => {
            w.error(
                t.span(),
                t.path().to_owned(),
                "a rule needs one action: redirect, rewrite, return (or fail), try_files or set",
            );
            return None;
        }
        [a, b, ..] => {
            w.error(
                t.span_of(b),
                t.key_path(b),
                format!("a rule has one action, and this one has `{a}` too"),
            );
            skip_action_keys(t);
            return None;
        }
    }
    for (key, only) in [
        ("status", "redirect"),
        ("flow", "rewrite"),
        ("body", "return"),
    ] {
        let has = t.contains(only) || (only == "return" && t.contains("fail"));
        if t.contains(key) && !has {
            w.error(
                t.span_of(key),
                t.key_path(key),
                format!("`{key}` goes with `{only}`"),
            );
            skip_action_keys(t);
            return None;
        }
    }
    if let Some(s) = w.string_spanned(t, "redirect") {
        let span = s.1.clone();
        if s.0.is_empty() {
            w.error(span, t.key_path("redirect"), "a redirect needs a target");
            return None;
        }
        let to = template(w, t, "redirect", s, caps);
        let status = match w.integer_in(t, "status", 100, 999) {
            Some(n) if REDIRECTS.contains(&(n as u16)) => Some(n as u16),
            Some(n) => {
                w.error(
                    t.span_of("status"),
                    t.key_path("status"),
                    format!("{n} is not a redirect status (301, 302, 303, 307 or 308)"),
                );
                None
            }
            None if t.contains("status") => None,
            None => Some(302),
        };
        return Some(Action::Redirect {
            to: to?,
            status: StatusCode::from_u16(status?).ok()?,
        });
    }
    if let Some(s) = w.string_spanned(t, "rewrite") {
        let to = path_template(w, t, "rewrite", s, caps);
        let flow = match w.string_spanned(t, "flow") {
            None if t.contains("flow") => None,
            None => Some(Flow::Continue),
            Some((f, span)) => match f.as_str() {
                "continue" => Some(Flow::Continue),
                "last" => Some(Flow::Last),
                "break" => Some(Flow::Break),
                _ => {
                    w.error(
                        span,
                        t.key_path("flow"),
                        "expected \"continue\", \"last\" or \"break\"",
                    );
                    None
                }
            },
        };
        return Some(Action::Rewrite {
            to: to?,
            flow: flow?,
        });
    }
    if t.contains("return") || t.contains("fail") {
        let key = if t.contains("fail") { "fail" } else { "return" };
        let status = w.integer_in(t, key, 200, 599);
        let body = match w.string_spanned(t, "body") {
            Some((b, span)) if b.len() > 64 << 10 => {
                w.error(span, t.key_path("body"), "longer than 64 KiB");
                return None;
            }
            Some((b, _)) => Some(b),
            None if t.contains("body") => return None,
            None => None,
        };
        return Some(Action::Return {
            status: StatusCode::from_u16(status? as u16).ok()?,
            body,
        });
    }
    if let Some(list) = w.strings_spanned(t, "try_files") {
        if list.len() < 2 {
            w.error(
                t.span_of("try_files"),
                t.key_path("try_files"),
                "at least one candidate and a fallback (a path, or \"=404\")",
            );
            return None;
        }
        let mut candidates = Vec::new();
        let last = list.len() - 1;
        let mut ok = true;
        let mut fallback = None;
        for (i, (s, span)) in list.into_iter().enumerate() {
            let key = format!("try_files[{i}]");
            if i == last {
                if let Some(code) = s.strip_prefix('=') {
                    match code.parse::<u16>().ok().filter(|c| (200..=599).contains(c)) {
                        Some(c) => {
                            fallback = StatusCode::from_u16(c).ok().map(Fallback::Status);
                        }
                        None => {
                            w.error(span, t.key_path(&key), "expected a status such as \"=404\"");
                            ok = false;
                        }
                    }
                } else {
                    fallback = path_template(w, t, &key, (s, span), caps).map(Fallback::Rewrite);
                    ok &= fallback.is_some();
                }
            } else {
                match path_template(w, t, &key, (s, span), caps) {
                    Some(tpl) => candidates.push(tpl),
                    None => ok = false,
                }
            }
        }
        return ok.then_some(Action::TryFiles {
            candidates,
            fallback: fallback?,
        });
    }
    if let Some(mut set) = w.table(t, "set") {
        let mut headers = Vec::new();
        let mut env = Vec::new();
        let mut ok = true;
        if let Some(entries) = w.string_map(&mut set, "env") {
            for (name, value, span) in entries {
                let key = format!("env.{name}");
                let valid = name
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                let reserved = crate::model::CGI_RESERVED_NAMES.contains(&name.as_str())
                    || ["HTTP_", "SSL_", "REDIRECT_"]
                        .iter()
                        .any(|p| name.starts_with(p));
                if !valid {
                    w.error(
                        span,
                        set.key_path(&key),
                        "not a variable name (letters, digits and _)",
                    );
                    ok = false;
                } else if reserved {
                    w.error(
                        span,
                        set.key_path(&key),
                        format!("`{name}` is set by the CGI environment itself"),
                    );
                    ok = false;
                } else {
                    match header_template(w, &set, &key, (value, span), caps) {
                        Some(tpl) => env.push((name, tpl)),
                        None => ok = false,
                    }
                }
            }
        } else if set.contains("env") {
            ok = false;
        }
        match w.string_map(&mut set, "headers") {
            Some(entries) => {
                for (name, value, span) in entries {
                    let key = format!("headers.{name}");
                    let lower = name.to_ascii_lowercase();
                    let Ok(hn) = http::HeaderName::from_bytes(lower.as_bytes()) else {
                        w.error(span, set.key_path(&key), "not a valid header name");
                        ok = false;
                        continue;
                    };
                    if matches!(
                        lower.as_str(),
                        "content-length" | "transfer-encoding" | "connection" | "content-range"
                    ) {
                        w.error(
                            span,
                            set.key_path(&key),
                            "this header is set by the server and cannot be overridden",
                        );
                        ok = false;
                        continue;
                    }
                    match header_template(w, &set, &key, (value, span), caps) {
                        Some(tpl) => headers.push((hn, tpl)),
                        None => ok = false,
                    }
                }
            }
            None if set.contains("headers") => ok = false,
            None if !env.is_empty() || set.contains("env") => {}
            None => {
                w.error(
                    set.span(),
                    set.key_path("headers"),
                    "missing (a table of response header names to values, or `env`)",
                );
                ok = false;
            }
        }
        w.finish(set);
        return ok.then_some(Action::Set { headers, env });
    }
    None
}

/// Marks a refused action's keys read: their error is reported, and
/// "unknown key" on each would only repeat it.
fn skip_action_keys(t: &mut Table<'_>) {
    for key in ACTIONS.iter().chain(&["status", "flow", "body"]) {
        t.skip(key);
    }
}

fn walk_realm(w: &mut Walker<'_>, t: &mut Table<'_>) -> Option<Realm> {
    let origin = w.origin(t.span(), t.path());
    let (conditions, _) = walk_conditions(w, t);
    let name = match w.string_spanned(t, "realm") {
        Some((r, span)) => {
            if r.bytes()
                .any(|b| b.is_ascii_control() || b == b'"' || b == b'\\')
            {
                w.error(
                    span,
                    t.key_path("realm"),
                    "quotes, backslashes and control characters are not allowed",
                );
                None
            } else {
                Some(r)
            }
        }
        None if t.contains("realm") => None,
        None => Some("restricted".to_owned()),
    };
    let allow = networks(w, t, "allow");
    let deny = networks(w, t, "deny");
    let bad_nets =
        (allow.is_none() && t.contains("allow")) || (deny.is_none() && t.contains("deny"));
    let satisfy = match w.string_spanned(t, "satisfy") {
        None => Some(Satisfy::All),
        Some((s, span)) => match s.as_str() {
            "all" => Some(Satisfy::All),
            "any" => Some(Satisfy::Any),
            _ => {
                w.error(span, t.key_path("satisfy"), "expected \"all\" or \"any\"");
                None
            }
        },
    };
    let users = w.strings(t, "users").unwrap_or_default();
    let groups = w.strings(t, "groups").unwrap_or_default();
    let htpasswd = w.string_spanned(t, "htpasswd");
    let groups_file = w.string_spanned(t, "groups_file");
    let certificate = w.bool(t, "certificate").unwrap_or(false);
    if htpasswd.is_none() && !certificate && (!users.is_empty() || !groups.is_empty()) {
        w.error(
            t.span(),
            t.key_path("users"),
            "`users` and `groups` need a way to prove who the client is: `htpasswd` or `certificate = true`",
        );
        return None;
    }
    if !groups.is_empty() && groups_file.is_none() {
        w.error(
            t.span(),
            t.key_path("groups_file"),
            "`groups` needs a group file (groups_file)",
        );
        return None;
    }
    let no_nets =
        allow.as_ref().is_none_or(Vec::is_empty) && deny.as_ref().is_none_or(Vec::is_empty);
    if htpasswd.is_none() && !certificate && no_nets && !bad_nets {
        w.error(
            t.span(),
            t.path().to_owned(),
            "an access block checks something: `htpasswd`, `certificate`, `allow` or `deny`",
        );
        return None;
    }
    let group_file = match groups_file {
        None => None,
        Some((g, gspan)) => {
            let gpath = w.relative(&g);
            Some(Arc::new(read_file(
                w,
                t,
                "groups_file",
                &gpath,
                gspan,
                GroupFile::parse,
            )?))
        }
    };
    let passwords = match htpasswd {
        None => None,
        Some((file, span)) => {
            let path = w.relative(&file);
            let pw = read_file(w, t, "htpasswd", &path, span.clone(), PasswordFile::parse)?;
            if w.check_paths() && !certificate {
                for u in &users {
                    if !pw.contains(u) {
                        w.error(
                            span.clone(),
                            t.key_path("users"),
                            format!("user `{u}` is not in {}", path.display()),
                        );
                    }
                }
            }
            Some(Passwords {
                file: Arc::new(pw),
                path: path.display().to_string(),
            })
        }
    };
    Some(Realm {
        conditions: conditions?,
        name: name?,
        deny: deny.unwrap_or_default(),
        allow: allow.unwrap_or_default(),
        passwords,
        certificate,
        admits: Admits {
            users,
            groups,
            group_file,
        },
        satisfy: satisfy?,
        origin,
    })
}

/// Reads and parses a file a realm names (only when paths are checked:
/// otherwise the file is taken as empty).
fn read_file<T: Default, E: std::fmt::Display>(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    key: &str,
    path: &std::path::Path,
    span: crate::walk::Span,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Option<T> {
    if !w.check_paths() {
        return Some(T::default());
    }
    let text = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            w.error(
                span,
                t.key_path(key),
                format!("cannot read {}: {e}", path.display()),
            );
            return None;
        }
    };
    match parse(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            w.error(span, t.key_path(key), format!("{}: {e}", path.display()));
            None
        }
    }
}

fn walk_limit(w: &mut Walker<'_>, t: &mut Table<'_>) -> Option<LimitRule> {
    let origin = w.origin(t.span(), t.path());
    let (conditions, _) = walk_conditions(w, t);
    let rate = match w.string_spanned(t, "rate") {
        Some((r, span)) => match Rate::parse(&r) {
            Ok(rate) => Some(rate),
            Err(e) => {
                w.error(span, t.key_path("rate"), e);
                None
            }
        },
        None => {
            if !t.contains("rate") {
                w.error(t.span(), t.key_path("rate"), "missing (such as \"10r/s\")");
            }
            None
        }
    };
    let burst = if t.contains("burst") {
        w.integer_in(t, "burst", 0, 1_000_000).map(|b| b as u32)
    } else {
        Some(0)
    };
    let delay = if t.is_str("delay") {
        let (s, span) = w.string_spanned(t, "delay")?;
        match s.as_str() {
            "nodelay" => Some(Delay::None),
            "all" => Some(Delay::All),
            _ => {
                w.error(
                    span,
                    t.key_path("delay"),
                    "expected \"nodelay\", \"all\" or a number of requests",
                );
                None
            }
        }
    } else if t.contains("delay") {
        w.integer_in(t, "delay", 0, 1_000_000)
            .map(|n| Delay::After(n as u32))
    } else {
        Some(Delay::All)
    };
    let key = match w.string_spanned(t, "key") {
        None if t.contains("key") => None,
        None => Some(LimitKey::Client),
        Some((k, span)) => match k.as_str() {
            "client" => Some(LimitKey::Client),
            "user" => Some(LimitKey::User),
            _ => {
                w.error(span, t.key_path("key"), "expected \"client\" or \"user\"");
                None
            }
        },
    };
    let status = if t.contains("status") {
        w.integer_in(t, "status", 400, 599)
            .and_then(|s| StatusCode::from_u16(s as u16).ok())
    } else {
        Some(StatusCode::TOO_MANY_REQUESTS)
    };
    let keys = if t.contains("keys") {
        w.integer_in(t, "keys", 1, 10_000_000).map(|k| k as usize)
    } else {
        Some(10_000)
    };
    Some(LimitRule {
        conditions: conditions?,
        key: key?,
        limit: RateLimit {
            rate: rate?,
            burst: burst?,
            delay: delay?,
        },
        status: status?,
        keys: keys?,
        origin,
    })
}
