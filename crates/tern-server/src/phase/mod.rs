//! A request's phases, in the fixed order they run:
//!
//! ```text
//! admit -> listen -> rewrite -> route -> authorize -> handler -> respond -> log
//! ```
//!
//! | phase | file | decides |
//! |---|---|---|
//! | admit | `phase/admit.rs` | the head is one tern serves: one authority (`Host`), framing, target form, limits; the path decoded once |
//! | listen | `phase/listen.rs` | what a plain listener answers itself: ACME HTTP-01 challenges, the redirect to HTTPS |
//! | rewrite | `phase/rewrite.rs` | the path the request is routed by (empty until rewrite rules exist) |
//! | route | `route.rs` | the site (by `Host`) and the handler (by path) |
//! | authorize | `phase/authorize.rs` | whether the request may reach the handler (empty until access rules exist) |
//! | handler | `Arc<dyn Handler>` | the response |
//! | respond | `phase/respond.rs` | response headers by path (`[[site.headers]]`), on every answer |
//! | log | `phase/log.rs` | nothing: it reports each finished request to the sinks (access log; metrics next) |
//!
//! A phase before the handler lets the request go on or answers it
//! ([`Flow`]). Whoever answers, respond and log run: respond on every
//! answer given once a site is chosen, log on every request. The sequence
//! itself is `Svc::call` in `service.rs`; the rules each phase decides
//! over are compiled per site (`SiteRules`) when the configuration is
//! assembled, so a phase without rules costs one branch.

pub(crate) mod admit;
pub(crate) mod authorize;
pub(crate) mod listen;
pub(crate) mod log;
pub(crate) mod respond;
pub(crate) mod rewrite;

use http::Response;
use tern_handler::ResponseBody;

use authorize::Access;
use respond::HeaderRules;
use rewrite::Rewrite;

/// What a phase decided about a request.
#[derive(Debug)]
pub enum Flow {
    /// On to the next phase.
    Next,
    /// Answer now with this response; the phases up to the handler are
    /// skipped.
    Answer(Response<ResponseBody>),
}

/// The rules one site's phases decide over, compiled when the
/// configuration is assembled.
#[derive(Debug, Default)]
pub struct SiteRules {
    /// Rewrite rules, run before routing.
    pub rewrite: Option<Rewrite>,
    /// Access rules, run after routing.
    pub access: Option<Access>,
    /// Response-header rules.
    pub headers: HeaderRules,
}
