//! Routing: Host -> site, then path -> handler. Pure: no I/O, no clocks.
//!
//! Order inside a site: the longest matching path prefix (on segment
//! boundaries), then the extension of the last segment, then the site's own
//! static files. A prefix is an explicit claim on a subtree, so it wins over
//! an extension: an upload directory routed as static never runs `*.php`
//! found inside it (the classic nginx misconfiguration).

use std::collections::HashMap;
use std::sync::Arc;

use tern_handler::path::DecodedPath;
use tern_handler::{Handler, RouteMatch, RoutePattern};
use tern_observe::metrics::{Metrics, RouteLabel};

use crate::phase::respond::HeaderRules;
use crate::phase::SiteRules;

/// A handler with the route facts handed to it.
#[derive(Clone)]
pub struct Target {
    /// The handler.
    pub handler: Arc<dyn Handler>,
    /// How it was chosen.
    pub route: RouteMatch,
    /// Its labels in the metrics (see [`SiteRoutes::label`]).
    pub label: RouteLabel,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("handler", &self.handler.kind())
            .field("route", &self.route)
            .finish()
    }
}

/// How one site maps paths to handlers.
#[derive(Debug)]
pub struct SiteRoutes {
    name: Arc<str>,
    /// Longest prefix first.
    prefixes: Vec<(String, Target)>,
    extensions: HashMap<String, Target>,
    fallback: Target,
    rules: SiteRules,
}

/// What a route matches (mirrors the config's `RouteMatcher`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// A path prefix, without trailing slash (`/` for everything).
    Prefix(String),
    /// An extension, lower case, without the dot.
    Extension(String),
}

impl SiteRoutes {
    /// A site whose unrouted paths go to `fallback` (its static files).
    pub fn new(name: &str, fallback: Arc<dyn Handler>) -> Self {
        let name: Arc<str> = Arc::from(name);
        SiteRoutes {
            fallback: Target {
                handler: fallback,
                route: RouteMatch {
                    site: name.clone(),
                    pattern: RoutePattern::root(),
                },
                label: RouteLabel::NONE,
            },
            name,
            prefixes: Vec::new(),
            extensions: HashMap::new(),
            rules: SiteRules::default(),
        }
    }

    /// Sets the site's response-header rules.
    pub fn set_headers(&mut self, rules: HeaderRules) {
        self.rules.headers = rules;
    }

    /// Sets the site's rewrite rules (run before routing).
    pub fn set_rewrite(&mut self, rewrite: Option<crate::phase::rewrite::Rewrite>) {
        self.rules.rewrite = rewrite;
    }

    /// Sets the site's realms and rate limits (run after routing).
    pub fn set_access(&mut self, access: Option<crate::phase::authorize::Access>) {
        self.rules.access = access;
    }

    /// Gives every route its labels in `metrics` (site, route, handler
    /// kind), once, when the configuration is assembled.
    pub fn label(&mut self, metrics: &Metrics) {
        let site = self.name.clone();
        let label = |t: &mut Target| {
            t.label = metrics.route_label(&site, &t.route.pattern.to_string(), t.handler.kind());
        };
        label(&mut self.fallback);
        for (_, t) in &mut self.prefixes {
            label(t);
        }
        for t in self.extensions.values_mut() {
            label(t);
        }
    }

    /// Every route's handler, the site's static files first (for the
    /// status page's pools).
    pub fn handlers(&self) -> impl Iterator<Item = &Arc<dyn Handler>> {
        std::iter::once(&self.fallback.handler)
            .chain(self.prefixes.iter().map(|(_, t)| &t.handler))
            .chain(self.extensions.values().map(|t| &t.handler))
    }

    /// The rules the site's phases decide over.
    pub fn rules(&self) -> &SiteRules {
        &self.rules
    }

    /// Adds a route.
    pub fn add(&mut self, m: Match, handler: Arc<dyn Handler>) {
        let pattern = match &m {
            Match::Prefix(p) => RoutePattern::Prefix(Arc::from(p.as_str())),
            Match::Extension(e) => RoutePattern::Extension(Arc::from(e.as_str())),
        };
        let target = Target {
            handler,
            route: RouteMatch {
                site: self.name.clone(),
                pattern,
            },
            label: RouteLabel::NONE,
        };
        match m {
            Match::Prefix(p) => {
                self.prefixes.push((p, target));
                self.prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
            }
            Match::Extension(e) => {
                self.extensions.insert(e, target);
            }
        }
    }

    /// The handler for `path`.
    pub fn route(&self, path: &DecodedPath) -> &Target {
        let p = path.as_str();
        for (prefix, target) in &self.prefixes {
            if prefix_matches(prefix, p) {
                return target;
            }
        }
        if !self.extensions.is_empty() {
            if let Some(ext) = path.extension() {
                let hit = match self.extensions.get(ext) {
                    Some(t) => Some(t),
                    None if ext.bytes().any(|b| b.is_ascii_uppercase()) => {
                        self.extensions.get(&ext.to_ascii_lowercase())
                    }
                    None => None,
                };
                if let Some(t) = hit {
                    return t;
                }
            }
        }
        &self.fallback
    }

    /// The site's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// `/docs` matches `/docs`, `/docs/` and `/docs/a`, not `/docsx`.
fn prefix_matches(prefix: &str, path: &str) -> bool {
    if prefix == "/" {
        return true;
    }
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// Host -> site.
#[derive(Debug)]
pub struct Router {
    sites: Vec<Arc<SiteRoutes>>,
    exact: HashMap<String, usize>,
    /// `(".example.com", site)` for `*.example.com`, longest first.
    wildcards: Vec<(String, usize)>,
    default: usize,
}

impl Router {
    /// An empty router; the first site added is the default unless another
    /// is marked.
    pub fn new() -> Self {
        Router {
            sites: Vec::new(),
            exact: HashMap::new(),
            wildcards: Vec::new(),
            default: 0,
        }
    }

    /// Adds a site answering `hosts` (lower case; `*.` wildcards allowed).
    pub fn add_site(&mut self, hosts: &[String], default: bool, routes: SiteRoutes) {
        let idx = self.sites.len();
        self.sites.push(Arc::new(routes));
        for h in hosts {
            match h.strip_prefix('*') {
                Some(suffix) => self.wildcards.push((suffix.to_owned(), idx)),
                None => {
                    self.exact.entry(h.clone()).or_insert(idx);
                }
            }
        }
        self.wildcards.sort_by_key(|w| std::cmp::Reverse(w.0.len()));
        if default {
            self.default = idx;
        }
    }

    /// Every site, in the order added.
    pub fn sites(&self) -> &[Arc<SiteRoutes>] {
        &self.sites
    }

    /// The site for a Host header value (port and trailing dot ignored, case
    /// insensitive). Unknown or missing hosts get the default site.
    pub fn site(&self, host: Option<&str>) -> &Arc<SiteRoutes> {
        let idx = host.and_then(|h| self.lookup(h)).unwrap_or(self.default);
        &self.sites[idx]
    }

    /// The site for a request whose Host `host` gives: asked only when a
    /// site names hosts (one site, or sites that name none, take every
    /// request unasked: a header lookup a request saved).
    pub fn site_by<'h>(&self, host: impl FnOnce() -> Option<&'h str>) -> &Arc<SiteRoutes> {
        if !self.names_hosts() {
            return &self.sites[self.default];
        }
        self.site(host())
    }

    /// Whether any site names a host (else every request goes to the default).
    fn names_hosts(&self) -> bool {
        !self.exact.is_empty() || !self.wildcards.is_empty()
    }

    fn lookup(&self, host: &str) -> Option<usize> {
        if !self.names_hosts() {
            return None;
        }
        let name = strip_port(host).trim_end_matches('.');
        let lower;
        let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            lower = name.to_ascii_lowercase();
            &lower
        } else {
            name
        };
        if let Some(&i) = self.exact.get(name) {
            return Some(i);
        }
        self.wildcards
            .iter()
            .find(|(suffix, _)| name.len() > suffix.len() && name.ends_with(suffix.as_str()))
            .map(|&(_, i)| i)
    }
}

impl Default for Router {
    fn default() -> Self {
        Self::new()
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        // [v6]:port
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rfind(':') {
        Some(i) if host[i + 1..].bytes().all(|b| b.is_ascii_digit()) => &host[..i],
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_handler::{Exchange, HandlerFuture};

    struct Named(&'static str);
    impl Handler for Named {
        fn call(&self, _: Exchange) -> HandlerFuture {
            unreachable!("routing tests never call handlers")
        }
        fn kind(&self) -> &'static str {
            self.0
        }
    }

    fn h(n: &'static str) -> Arc<dyn Handler> {
        Arc::new(Named(n))
    }

    fn path(p: &str) -> DecodedPath {
        DecodedPath::parse(p).unwrap()
    }

    fn site() -> SiteRoutes {
        let mut s = SiteRoutes::new("a", h("files"));
        s.add(Match::Prefix("/cgi-bin".into()), h("cgi"));
        s.add(Match::Prefix("/cgi-bin/deep".into()), h("deep"));
        s.add(Match::Extension("php".into()), h("php"));
        s.add(Match::Prefix("/uploads".into()), h("uploads"));
        s
    }

    #[test]
    fn longest_prefix_then_extension_then_fallback() {
        let s = site();
        let kind = |p| s.route(&path(p)).handler.kind();
        assert_eq!(kind("/cgi-bin/x"), "cgi");
        assert_eq!(kind("/cgi-bin"), "cgi");
        assert_eq!(kind("/cgi-binx"), "files");
        assert_eq!(kind("/cgi-bin/deep/x"), "deep");
        assert_eq!(kind("/a/b.php"), "php");
        assert_eq!(kind("/a/b.PHP"), "php");
        assert_eq!(kind("/uploads/evil.php"), "uploads");
        assert_eq!(kind("/index.html"), "files");
        assert_eq!(s.route(&path("/a.php")).route.pattern.to_string(), "*.php");
    }

    #[test]
    fn hosts_exact_wildcard_default() {
        let mut r = Router::new();
        r.add_site(&["a.example".into()], false, SiteRoutes::new("a", h("a")));
        r.add_site(
            &["*.b.example".into(), "b.example".into()],
            true,
            SiteRoutes::new("b", h("b")),
        );
        r.add_site(&["x.b.example".into()], false, SiteRoutes::new("x", h("x")));
        assert_eq!(r.site(Some("a.example")).name(), "a");
        assert_eq!(r.site(Some("A.Example:8080")).name(), "a");
        assert_eq!(r.site(Some("a.example.")).name(), "a");
        assert_eq!(r.site(Some("w.b.example")).name(), "b");
        assert_eq!(r.site(Some("x.b.example")).name(), "x");
        assert_eq!(r.site(Some("b.example")).name(), "b");
        assert_eq!(r.site(Some("nobody")).name(), "b");
        assert_eq!(r.site(None).name(), "b");
        assert_eq!(r.site(Some("[::1]:80")).name(), "b");
        assert_eq!(r.site_by(|| Some("x.b.example")).name(), "x");
        assert_eq!(r.site_by(|| None).name(), "b");
    }

    #[test]
    fn sites_that_name_no_host_are_chosen_without_asking_for_it() {
        let mut r = Router::new();
        r.add_site(&[], false, SiteRoutes::new("a", h("a")));
        r.add_site(&[], true, SiteRoutes::new("b", h("b")));
        let asked = std::cell::Cell::new(false);
        let chosen = r.site_by(|| {
            asked.set(true);
            Some("a.example")
        });
        assert_eq!(chosen.name(), "b");
        assert!(!asked.get());
    }
}
