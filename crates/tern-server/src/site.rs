//! A `Site`: everything a request needs from the configuration, built once
//! and swapped whole on reload (requests in flight keep the one they started
//! with).

use std::sync::Arc;
use std::time::Duration;

use tern_config::Limits;

use crate::phase::log::Sinks;
use crate::route::Router;

/// The running configuration: routes (with each site's phase rules),
/// limits, and where finished requests are reported.
#[derive(Debug)]
pub struct Site {
    /// Host and path routing, with each site's header rules.
    pub router: Router,
    /// Request and connection limits.
    pub limits: Limits,
    /// Each listener's TLS, by its place in the list the server runs
    /// (`None`, or no entry: plain HTTP). Here rather than in the
    /// listener, so that a reload rotates certificates.
    pub tls: Vec<Option<Arc<tokio_rustls::rustls::ServerConfig>>>,
    /// Per listener, likewise: the listener (by place) whose port a plain
    /// listener's redirects to HTTPS name.
    pub redirects: Vec<Option<usize>>,
    /// Where finished requests are reported (the log phase).
    pub sinks: Sinks,
    /// How long requests in flight may take to finish at shutdown.
    pub grace_period: Duration,
    /// The HTTP/1 connection loop new connections take.
    pub http1: tern_config::Http1,
    /// The open ACME HTTP-01 challenges, answered on plain listeners at
    /// `/.well-known/acme-challenge/TOKEN` before routing and before a
    /// redirect to HTTPS (`None`: no `acme`, such paths are routed as usual).
    pub http01: Option<Arc<dyn Http01>>,
}

/// The key authorizations of open ACME HTTP-01 challenges (RFC 8555
/// §8.3), by token; kept by the ACME manager, which outlives the site.
pub trait Http01: Send + Sync + std::fmt::Debug {
    /// The key authorization to answer for `token`, if it is open.
    fn key_authorization(&self, token: &str) -> Option<String>;
}

#[cfg(test)]
impl Site {
    /// A site with every default limit, routed by `router`, for unit tests.
    pub(crate) fn for_test(router: Router) -> Site {
        let config = tern_config::parse(
            "[[site]]\nroot = \"www\"\n",
            std::path::Path::new("/nonexistent/tern.toml"),
            tern_config::LoadOptions { check_paths: false },
        )
        .expect("a configuration with every default");
        Site {
            router,
            limits: config.limits,
            tls: Vec::new(),
            redirects: Vec::new(),
            sinks: Sinks::default(),
            grace_period: Duration::from_secs(1),
            http1: tern_config::Http1::default(),
            http01: None,
        }
    }
}
