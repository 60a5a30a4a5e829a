//! Conditions: what a rule, a realm or a limit asks of a request before it
//! applies. Every condition a rule names must hold (they are ANDed); a
//! list inside one condition is a choice (any of its entries).

use std::net::IpAddr;

use globset::GlobMatcher;
use http::{HeaderName, Method};
use ipnet::IpNet;
use regex::Regex;

/// The request as conditions see it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The method.
    pub method: &'a Method,
    /// The decoded path (as rewritten so far).
    pub path: &'a str,
    /// The raw query, without `?`.
    pub query: Option<&'a str>,
    /// The request's one authority, as sent (port included).
    pub host: Option<&'a str>,
    /// The request's header fields.
    pub headers: &'a http::HeaderMap,
    /// The client's address (`None` over a Unix socket).
    pub client: Option<IpAddr>,
    /// Whether the connection is TLS.
    pub secure: bool,
    /// The subject DN of the client's verified TLS certificate, if any.
    pub client_cert: Option<&'a str>,
}

/// A path glob (`*` within a segment, `**` across them). The common
/// subtree form, `/literal/prefix/**` (and `/**`), is matched by a prefix
/// comparison: globset runs every glob through a regex, which cost a
/// realm over `/**` a tenth of a microsecond per request.
#[derive(Clone, Debug)]
pub struct PathGlob {
    matcher: GlobMatcher,
    /// `/admin/` for `/admin/**`: the glob is "starts with this".
    prefix: Option<String>,
}

impl PathGlob {
    /// Wraps a glob built with `literal_separator(true)`.
    pub fn new(glob: globset::Glob) -> PathGlob {
        let prefix = glob
            .glob()
            .strip_suffix("**")
            .filter(|p| p.ends_with('/') && !p.contains(['*', '?', '[', ']', '{', '}', '\\']))
            .map(str::to_owned);
        PathGlob {
            matcher: glob.compile_matcher(),
            prefix,
        }
    }

    /// Whether `path` matches.
    pub fn is_match(&self, path: &str) -> bool {
        match &self.prefix {
            Some(p) => path.starts_with(p.as_str()),
            None => self.matcher.is_match(path),
        }
    }

    fn glob(&self) -> &globset::Glob {
        self.matcher.glob()
    }
}

/// How a path is matched.
#[derive(Clone, Debug)]
pub enum PathMatch {
    /// A glob, as `path = ...`.
    Glob(PathGlob),
    /// A regular expression with captures, as `regex = ...`.
    Regex(Regex),
}

impl PathMatch {
    /// The pattern as a regular expression over bytes, for a rule list's
    /// one-pass prefilter.
    pub(crate) fn set_pattern(&self) -> String {
        match self {
            PathMatch::Glob(g) => g.glob().regex().to_owned(),
            PathMatch::Regex(r) => r.as_str().to_owned(),
        }
    }
}

/// A host pattern: `example.com` or `*.example.com`, lower case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPattern(pub String);

impl HostPattern {
    fn matches(&self, host: &str) -> bool {
        let name = strip_port(host).trim_end_matches('.');
        match self.0.strip_prefix('*') {
            Some(suffix) => {
                name.len() > suffix.len()
                    && name.as_bytes()[name.len() - suffix.len()..]
                        .eq_ignore_ascii_case(suffix.as_bytes())
            }
            None => name.eq_ignore_ascii_case(&self.0),
        }
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rfind(':') {
        Some(i) if host[i + 1..].bytes().all(|b| b.is_ascii_digit()) => &host[..i],
        _ => host,
    }
}

/// Every condition of one rule; an empty list is no condition.
#[derive(Clone, Debug, Default)]
pub struct Conditions {
    /// The path.
    pub path: Option<PathMatch>,
    /// The host, any of these.
    pub hosts: Vec<HostPattern>,
    /// The method, any of these.
    pub methods: Vec<Method>,
    /// Header fields: each named field must be present with a value the
    /// glob matches (`*`: present at all).
    pub headers: Vec<(HeaderName, GlobMatcher)>,
    /// Query parameters: each named parameter must be present with a
    /// (percent-decoded) value the glob matches.
    pub query: Vec<(String, GlobMatcher)>,
    /// The client's address, in any of these networks.
    pub clients: Vec<IpNet>,
    /// The scheme: `Some(true)` for https only, `Some(false)` for http.
    pub secure: Option<bool>,
}

impl Conditions {
    /// Whether every condition but the path holds (the path is matched by
    /// the caller, which wants its captures).
    pub fn others_hold(&self, r: &Request<'_>) -> bool {
        if let Some(s) = self.secure {
            if s != r.secure {
                return false;
            }
        }
        if !self.methods.is_empty() && !self.methods.iter().any(|m| m == r.method) {
            return false;
        }
        if !self.hosts.is_empty() {
            let Some(host) = r.host else { return false };
            if !self.hosts.iter().any(|h| h.matches(host)) {
                return false;
            }
        }
        if !self.clients.is_empty() {
            let Some(ip) = r.client else { return false };
            if !in_networks(&self.clients, ip) {
                return false;
            }
        }
        for (name, glob) in &self.headers {
            let any = r
                .headers
                .get_all(name)
                .iter()
                .any(|v| v.to_str().is_ok_and(|v| glob.is_match(v)));
            if !any {
                return false;
            }
        }
        for (key, glob) in &self.query {
            if !query_has(r.query.unwrap_or(""), key, glob) {
                return false;
            }
        }
        true
    }

    /// Whether every condition holds, the path included (without captures).
    pub fn hold(&self, r: &Request<'_>) -> bool {
        let path = match &self.path {
            None => true,
            Some(PathMatch::Glob(g)) => g.is_match(r.path),
            Some(PathMatch::Regex(re)) => re.is_match(r.path),
        };
        path && self.others_hold(r)
    }
}

/// Whether `ip` is in one of `nets` (an IPv4-mapped IPv6 address counts as
/// its IPv4 address).
pub fn in_networks(nets: &[IpNet], ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    nets.iter().any(|n| n.contains(&ip))
}

/// Parses an address or a network (`10.0.0.0/8`, `::1`, `127.0.0.1`).
pub fn parse_network(s: &str) -> Result<IpNet, String> {
    if let Ok(n) = s.parse::<IpNet>() {
        if n.trunc() != n {
            return Err(format!(
                "`{s}` has host bits set (did you mean {}?)",
                n.trunc()
            ));
        }
        return Ok(n);
    }
    s.parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("`{s}` is not an address or a network such as 10.0.0.0/8"))
}

/// Whether the raw query has parameter `key` with a value `glob` matches
/// (both sides percent-decoded, `+` read as a space in values).
fn query_has(query: &str, key: &str, glob: &GlobMatcher) -> bool {
    query.split('&').any(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        decode(k) == key && glob.is_match(decode(&v.replace('+', " ")))
    })
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(s: &str) -> GlobMatcher {
        globset::Glob::new(s).unwrap().compile_matcher()
    }

    #[test]
    fn subtree_globs_match_as_globset_does() {
        let build = |s: &str| {
            globset::GlobBuilder::new(s)
                .literal_separator(true)
                .build()
                .unwrap()
        };
        for pattern in [
            "/**",
            "/admin/**",
            "/a/b/**",
            "/a*/**",
            "/x/*.css",
            "/**/.*",
        ] {
            let fast = PathGlob::new(build(pattern));
            let slow = build(pattern).compile_matcher();
            for path in [
                "/",
                "/admin",
                "/admin/",
                "/admin/x",
                "/admin/x/y",
                "/adminx/y",
                "/a/b",
                "/a/b/",
                "/a/b/c",
                "/ab/c",
                "/x/a.css",
                "/x/y/a.css",
                "/.git",
                "/a/.env",
            ] {
                assert_eq!(fast.is_match(path), slow.is_match(path), "{pattern} {path}");
            }
        }
        assert!(PathGlob::new(build("/admin/**")).prefix.is_some());
        assert!(PathGlob::new(build("/a*/**")).prefix.is_none());
    }

    #[test]
    fn networks() {
        let nets = vec![
            parse_network("10.0.0.0/8").unwrap(),
            parse_network("::1").unwrap(),
        ];
        assert!(in_networks(&nets, "10.1.2.3".parse().unwrap()));
        assert!(in_networks(&nets, "::ffff:10.1.2.3".parse().unwrap()));
        assert!(in_networks(&nets, "::1".parse().unwrap()));
        assert!(!in_networks(&nets, "11.0.0.1".parse().unwrap()));
        assert!(parse_network("10.0.0.1/8")
            .unwrap_err()
            .contains("10.0.0.0/8"));
        assert!(parse_network("ten").is_err());
    }

    #[test]
    fn hosts_headers_and_query() {
        let headers = {
            let mut h = http::HeaderMap::new();
            h.append("x-a", "one".parse().unwrap());
            h.append("x-a", "two".parse().unwrap());
            h
        };
        let r = Request {
            method: &Method::GET,
            path: "/p",
            query: Some("a=1&q=hello+w%6Frld&flag"),
            host: Some("WWW.Example.test:8080"),
            headers: &headers,
            client: None,
            secure: false,
            client_cert: None,
        };
        let mut c = Conditions {
            hosts: vec![HostPattern("*.example.test".into())],
            headers: vec![(HeaderName::from_static("x-a"), glob("tw*"))],
            query: vec![("q".into(), glob("hello w*")), ("flag".into(), glob("*"))],
            ..Conditions::default()
        };
        assert!(c.hold(&r));
        c.query.push(("missing".into(), glob("*")));
        assert!(!c.hold(&r));
        c.query.pop();
        c.clients = vec![parse_network("127.0.0.1").unwrap()];
        assert!(!c.hold(&r), "no address (a Unix socket) is in no network");
        c.clients.clear();
        c.secure = Some(true);
        assert!(!c.hold(&r));
        c.secure = None;
        c.hosts = vec![HostPattern("example.test".into())];
        assert!(!c.hold(&r));
    }
}
