//! The authorize phase: access rules decided after routing, with the
//! route known (which handler, which pattern), before the handler runs.
//! A refusal (401 with a challenge, 403) is an answer like any other: the
//! respond and log phases still run.
//!
//! No access rules exist yet, so [`Access`] has no values: a site's
//! `access` is always `None` and the phase is one branch. The rules work
//! gives it its rules, and its result a place in the `Exchange` (the
//! principal a CGI script reads as `REMOTE_USER`).

use http::Request;
use tern_handler::{ConnInfo, RouteMatch};

use crate::phase::Flow;

/// A site's compiled access rules.
#[derive(Debug)]
pub enum Access {}

impl Access {
    /// Decides whether the request may reach its handler.
    pub fn check<B>(&self, _req: &Request<B>, _conn: &ConnInfo, _route: &RouteMatch) -> Flow {
        match *self {}
    }
}
