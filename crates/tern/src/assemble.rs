//! Builds the server's [`Site`] from a validated [`Config`]: one handler per
//! site and route, the shared file cache, the access log. This is the only
//! place where concrete handlers meet the server.

use std::sync::Arc;

use anyhow::Context as _;
use tern_accesslog::AccessLog;
use tern_config::{Config, HandlerConfig, ListenAddr, Route, RouteMatcher};
use tern_handler::Handler;
use tern_rules::rule::RuleList;
use tern_server::{Access, HeaderRules, Match, Rewrite, Router, Sinks, Site, SiteRoutes};
use tern_static::{FileCache, StaticFiles};

/// What one configuration generation hands to the next on reload.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) cfg: Config,
    /// The file cache, kept by a reload that leaves `[cache]` as it is:
    /// entries are keyed by their site's static settings, so the sites a
    /// reload leaves unchanged keep theirs warm.
    pub(crate) cache: Arc<FileCache>,
    /// The addresses the server listens on, as bound at start (a reload
    /// does not rebind): `Site::tls` follows their order.
    pub(crate) bound: Arc<[ListenAddr]>,
    /// The ACME tasks, made with the first generation and handed on, so
    /// that a reload keeping an `acme` table keeps its certificate and
    /// places no second order.
    pub(crate) acme: Arc<tern_acme::Manager>,
    /// The admin pages, for routes that mount them (the same across
    /// reloads).
    pub(crate) admin: crate::observe::AdminCell,
}

/// The plain listeners' view of the ACME manager's open HTTP-01 challenges.
#[derive(Debug)]
struct Http01Tokens(Arc<tern_tls::Challenges>);

impl tern_server::Http01 for Http01Tokens {
    fn key_authorization(&self, token: &str) -> Option<String> {
        self.0.http01(token)
    }
}

/// Builds a site, and the generation it makes. `previous` is the running
/// generation and site on reload: the access log is kept when the new
/// configuration names the same file and format, and the file cache when
/// its settings are the same.
pub(crate) fn build(
    cfg: Config,
    previous: Option<(&Generation, &Site)>,
    observer: Option<&'static tern_observe::Observer>,
) -> anyhow::Result<(Site, Generation)> {
    let cache = match previous {
        Some((g, _)) if g.cfg.cache == cfg.cache => g.cache.clone(),
        _ => FileCache::new(&cfg.cache),
    };
    let admin = match previous {
        Some((g, _)) => g.admin.clone(),
        None => Default::default(),
    };
    let router = routes(
        &cfg,
        Some(&cache),
        Start::Yes(&admin),
        observer.map(|o| &o.metrics),
    )?;
    let bound: Arc<[ListenAddr]> = match previous {
        Some((g, _)) => g.bound.clone(),
        None => cfg.listeners.iter().map(|l| l.addr.clone()).collect(),
    };
    let acme = match previous {
        Some((g, _)) => g.acme.clone(),
        None => Arc::new(tern_acme::Manager::new()),
    };
    let built = tls(&cfg, Some(&acme))?;
    // Each bound listener matched to the first listener of the new
    // configuration with its address not yet taken (several may ask for
    // port 0); one the new configuration drops (it stays bound until a
    // restart) keeps its TLS and redirects nowhere.
    let mut taken = vec![false; cfg.listeners.len()];
    let matched: Vec<Option<usize>> = bound
        .iter()
        .map(|addr| {
            let j =
                (0..cfg.listeners.len()).find(|&j| !taken[j] && &cfg.listeners[j].addr == addr)?;
            taken[j] = true;
            Some(j)
        })
        .collect();
    let tls = matched
        .iter()
        .enumerate()
        .map(|(i, j)| match j {
            Some(j) => built[*j].clone(),
            None => previous.and_then(|(_, s)| s.tls.get(i).cloned().flatten()),
        })
        .collect();
    let redirects = matched
        .iter()
        .map(|j| {
            let to = cfg.listeners[(*j)?].redirect_to_https?;
            matched.iter().position(|m| *m == Some(to))
        })
        .collect();
    let access_log = match &cfg.access_log {
        None => None,
        Some(al) => {
            let reuse = previous
                .filter(|(g, _)| g.cfg.access_log.as_ref() == Some(al))
                .and_then(|(_, s)| s.sinks.access_log.clone());
            match reuse {
                Some(l) => Some(l),
                None => Some(
                    AccessLog::open(al)
                        .with_context(|| format!("access log {}", al.path.display()))?,
                ),
            }
        }
    };
    let acme_tables: Vec<_> = cfg
        .listeners
        .iter()
        .filter_map(|l| l.tls.as_ref()?.acme.as_ref())
        .collect();
    let plain = cfg
        .listeners
        .iter()
        .any(|l| l.tls.is_none() && matches!(l.addr, ListenAddr::Tcp(_)));
    for a in &acme_tables {
        if a.challenge == tern_config::AcmeChallenge::Http01 && !plain {
            tracing::warn!(
                "{}: challenge \"http-01\" is answered on a plain listener, and none is configured (the CA connects to port 80)",
                a.origin
            );
        }
    }
    let http01 = (!acme_tables.is_empty())
        .then(|| Arc::new(Http01Tokens(acme.challenges())) as Arc<dyn tern_server::Http01>);
    acme.retain(acme_tables);
    let site = Site {
        router,
        limits: cfg.limits.clone(),
        tls,
        redirects,
        sinks: Sinks {
            access_log,
            observer,
        },
        grace_period: cfg.server.grace_period,
        http1: cfg.server.http1,
        http01,
    };
    Ok((
        site,
        Generation {
            cfg,
            cache,
            bound,
            acme,
            admin,
        },
    ))
}

/// A route's name in pool log lines: `site /prefix` or `site *.ext`.
fn route_name(site: &str, m: &RouteMatcher) -> String {
    match m {
        RouteMatcher::Prefix(p) => format!("{site} {p}"),
        RouteMatcher::Extension(e) => format!("{site} *.{e}"),
    }
}

/// Builds every site and route as serving would, so that `tern check`
/// finds what serving would refuse (a module that is not valid
/// WebAssembly, a directory that does not open), naming site, route and
/// reason. Persistent routes stop short of their pools: nothing is
/// spawned or connected to, no file written.
pub(crate) fn check(cfg: &Config) -> anyhow::Result<()> {
    tls(cfg, None)?;
    routes(cfg, None, Start::No, None).map(drop)
}

/// Each listener's TLS, in the listeners' order: certificates read and
/// checked against their keys; a listener with `acme` linked to its task
/// in `acme` (started the first time; `None` when only checking).
fn tls(
    cfg: &Config,
    acme: Option<&tern_acme::Manager>,
) -> anyhow::Result<Vec<Option<Arc<tern_tls::rustls::ServerConfig>>>> {
    cfg.listeners
        .iter()
        .map(|l| {
            l.tls
                .as_ref()
                .map(|t| {
                    let link = acme.zip(t.acme.as_ref()).map(|(m, a)| m.link(a));
                    tern_tls::server_config(t, link)
                })
                .transpose()
                .with_context(|| format!("listener {}", l.addr))
        })
        .collect()
}

/// Whether persistent routes start their pools (processes, connections).
#[derive(Clone, Copy, Debug)]
enum Start<'a> {
    /// And admin routes serve the pages set in this cell.
    Yes(&'a crate::observe::AdminCell),
    /// Check them up to where they would start, and leave them out.
    No,
}

/// Every site's static files, routes and header rules.
fn routes(
    cfg: &Config,
    cache: Option<&Arc<FileCache>>,
    start: Start<'_>,
    metrics: Option<&tern_observe::metrics::Metrics>,
) -> anyhow::Result<Router> {
    let mut router = Router::new();
    for site in &cfg.sites {
        let files: Arc<dyn Handler> = Arc::new(
            StaticFiles::new(&site.static_files, cache.cloned())
                .with_context(|| format!("site {}", site.name))?,
        );
        let mut routes = SiteRoutes::new(&site.name, files);
        for r in &site.routes {
            let handler = handler(&site.name, r, cache, start)
                .with_context(|| format!("site {}: route {:?}", site.name, r.matcher))?;
            let m = match &r.matcher {
                RouteMatcher::Prefix(p) => Match::Prefix(p.clone()),
                RouteMatcher::Extension(e) => Match::Extension(e.clone()),
            };
            routes.add(m, handler);
        }
        routes.set_headers(
            HeaderRules::new(&site.header_rules).with_context(|| format!("site {}", site.name))?,
        );
        let rules = &site.rules;
        let list = RuleList::new(rules.rules.clone())
            .with_context(|| format!("site {}: rules", site.name))?;
        routes.set_rewrite(list.map(|l| Rewrite::new(l, site.static_files.root.clone())));
        if let Start::Yes(_) = start {
            warn_weak_hashes(&rules.realms);
            let mounted = site
                .routes
                .iter()
                .any(|r| matches!(r.handler, HandlerConfig::Admin));
            if mounted && rules.realms.is_empty() {
                tracing::warn!(
                    "site {}: its admin route shows the status page, the request history and the live trace to every client that reaches the site; a [[site.access]] realm would limit them",
                    site.name
                );
            }
        }
        routes.set_access(
            tern_rules::access::Access::new(rules.realms.clone(), rules.limits.clone())
                .map(Access::new),
        );
        if let Some(m) = metrics {
            routes.label(m);
        }
        router.add_site(&site.hosts, site.default, routes);
    }
    Ok(router)
}

/// The handler of route `r` of site `site`; for a persistent route only
/// checked (`Start::No`), a stand-in that names its kind and is never
/// called, so that `tern check` and `tern explain` route as serving does.
fn handler(
    site: &str,
    r: &Route,
    cache: Option<&Arc<FileCache>>,
    start: Start<'_>,
) -> anyhow::Result<Arc<dyn Handler>> {
    let handler: Arc<dyn Handler> = match &r.handler {
        HandlerConfig::Static(s) => Arc::new(StaticFiles::new(s, cache.cloned())?),
        HandlerConfig::Cgi(c) => Arc::new(tern_gateway::Cgi::new(c)?),
        HandlerConfig::FastCgi(c) if matches!(start, Start::No) => {
            tern_gateway::FastCgi::check(c)?;
            Arc::new(Unstarted("fastcgi"))
        }
        HandlerConfig::FastCgi(c) => Arc::new(tern_gateway::FastCgi::new(
            c,
            &route_name(site, &r.matcher),
        )?),
        HandlerConfig::CgiPlus(c) if matches!(start, Start::No) => {
            tern_gateway::CgiPlus::check(c)?;
            Arc::new(Unstarted("cgiplus"))
        }
        HandlerConfig::CgiPlus(c) => Arc::new(tern_gateway::CgiPlus::new(
            c,
            &route_name(site, &r.matcher),
        )?),
        HandlerConfig::Wasm(c) => {
            Arc::new(tern_wasm::Wasm::new(c)?.named(&route_name(site, &r.matcher)))
        }
        HandlerConfig::Admin => match start {
            Start::Yes(cell) => Arc::new(crate::observe::Mounted(cell.clone())),
            Start::No => Arc::new(Unstarted("admin")),
        },
    };
    Ok(handler)
}

/// A persistent route checked but not started: its kind, for routing
/// decisions; never called (a server is never built with one).
#[derive(Debug)]
struct Unstarted(&'static str);

impl Handler for Unstarted {
    fn call(&self, _: tern_handler::Exchange) -> tern_handler::HandlerFuture {
        tern_handler::HandlerFuture::ready(tern_handler::error_response(
            http::StatusCode::SERVICE_UNAVAILABLE,
        ))
    }

    fn kind(&self) -> &'static str {
        self.0
    }
}

/// A warning for each realm whose password file holds hashes that are
/// quick to guess (SHA-1, salted or not; Apache's MD5).
fn warn_weak_hashes(realms: &[tern_rules::access::Realm]) {
    use tern_rules::password::Scheme;
    for realm in realms {
        let Some(pw) = &realm.passwords else { continue };
        for (scheme, users) in pw.file.schemes() {
            if matches!(scheme, Scheme::Sha1 | Scheme::Ssha | Scheme::Apr1) {
                tracing::warn!(
                    "{}: {} of the users in {} have {} hashes, which are quick to guess; bcrypt (htpasswd -B) is not",
                    realm.origin,
                    users,
                    pw.path,
                    scheme.name()
                );
            }
        }
    }
}

/// Builds the routing of `cfg` as `tern check` does (nothing started) and
/// explains `req` arriving from `conn` to it.
pub(crate) fn explain(
    cfg: &Config,
    req: http::Request<()>,
    conn: &tern_handler::ConnInfo,
) -> anyhow::Result<tern_server::Explanation> {
    let router = routes(cfg, None, Start::No, None)?;
    let site = Site {
        router,
        limits: cfg.limits.clone(),
        tls: Vec::new(),
        redirects: Vec::new(),
        sinks: Sinks::default(),
        grace_period: cfg.server.grace_period,
        http1: cfg.server.http1,
        http01: None,
    };
    Ok(site.explain(req, conn))
}
