//! The rewrite phase: rules that change a request's decoded path (or
//! answer it, with a redirect) before it is routed. The path stays decoded:
//! a rule rewrites the [`DecodedPath`] and the result is normalised again,
//! so "decoded once before routing" becomes "decoded once, rewritten only
//! in decoded form".
//!
//! No rewrite rules exist yet, so [`Rewrite`] has no values: a site's
//! `rewrite` is always `None` and the phase is one branch. The rules work
//! gives the type its rules, compiled per site in `assemble.rs` like the
//! header rules.

use tern_handler::path::DecodedPath;

use crate::phase::Flow;

/// A site's compiled rewrite rules.
#[derive(Debug)]
pub enum Rewrite {}

impl Rewrite {
    /// Applies the rules to `path`: on to routing, or an answer.
    pub fn apply(&self, _path: &mut DecodedPath) -> Flow {
        match *self {}
    }
}
