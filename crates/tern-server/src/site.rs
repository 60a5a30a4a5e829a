//! A `Site`: everything a request needs from the configuration, built once
//! and swapped whole on reload (requests in flight keep the one they started
//! with).

use std::time::Duration;

use tern_accesslog::AccessLog;
use tern_config::Limits;

use crate::route::Router;

/// The running configuration: routes, limits, access log.
#[derive(Debug)]
pub struct Site {
    /// Host and path routing, with each site's header rules.
    pub router: Router,
    /// Request and connection limits.
    pub limits: Limits,
    /// Where access records go, if anywhere.
    pub access_log: Option<AccessLog>,
    /// How long requests in flight may take to finish at shutdown.
    pub grace_period: Duration,
}
