//! The authorize phase: a site's realms and rate limits (`[[site.access]]`,
//! `[[site.limit]]`, decided by `tern-rules`), after routing, before the
//! handler. A refusal (401 with a challenge, 403, 429) is an answer like
//! any other: the respond and log phases still run. A granted user becomes
//! the request's [`AuthUser`] (CGI's `REMOTE_USER`, the access log's user).

use std::time::{Duration, Instant};

use http::header::{self, HeaderValue};
use http::{Request, StatusCode};
use tern_handler::{error_response, AuthUser, ConnInfo};
use tern_rules::access::{AccessTrace, AccessVerdict, Proven, Verify};

use crate::phase::rewrite::rule_request;

/// A site's compiled realms and limits.
#[derive(Debug)]
pub struct Access(tern_rules::access::Access);

/// What the phase decided.
pub(crate) enum Checked {
    /// On to the handler, after this delay (a rate limit's; zero: at once).
    Next(Duration),
    /// Answer now.
    Answer(http::Response<tern_handler::ResponseBody>),
    /// Check this password first, off the event loop (the service's
    /// `verify_then_call`).
    Verify(Box<Verify>),
}

/// Password checks running at once, across the server: a flood of wrong
/// passwords against bcrypt hashes keeps at most this many cores busy,
/// and the event loops serve on (the checks run on the blocking pool).
pub(crate) static CHECKING: std::sync::LazyLock<tokio::sync::Semaphore> =
    std::sync::LazyLock::new(|| {
        tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    });

impl Access {
    /// Wraps a site's realms and limits.
    pub fn new(access: tern_rules::access::Access) -> Self {
        Access(access)
    }

    /// The realms and limits.
    pub(crate) fn inner(&self) -> &tern_rules::access::Access {
        &self.0
    }

    /// Which realm and limits would apply (`tern explain`).
    pub fn explain<B>(&self, req: &Request<B>, conn: &ConnInfo, path: &str) -> AccessTrace {
        self.0.explain(&rule_request(req, conn, path))
    }

    /// Decides whether the request may reach its handler. A granted user
    /// is set on the request. A password to check against its hash comes
    /// back as [`Checked::Verify`].
    pub(crate) fn check<B>(
        &self,
        req: &mut Request<B>,
        conn: &ConnInfo,
        path: &str,
        proven: &std::sync::Mutex<Proven>,
    ) -> Checked {
        let verdict = {
            let view = rule_request(req, conn, path);
            let mut proven = proven.lock().unwrap_or_else(|p| p.into_inner());
            self.0.decide(
                &view,
                req.headers().get(header::AUTHORIZATION),
                Instant::now(),
                &mut proven,
            )
        };
        self.conclude(verdict, req, conn)
    }

    /// The verdict once the password `v` asked for was checked (`ok`):
    /// never [`Checked::Verify`].
    pub(crate) fn after_check<B>(
        &self,
        v: &Verify,
        ok: bool,
        req: &mut Request<B>,
        conn: &ConnInfo,
        path: &str,
    ) -> Checked {
        let verdict = {
            let view = rule_request(req, conn, path);
            self.0.verified(v, ok, &view, Instant::now())
        };
        self.conclude(verdict, req, conn)
    }

    /// A verdict as the phase's decision: a granted user set on the
    /// request, a refusal rendered and logged.
    fn conclude<B>(
        &self,
        verdict: AccessVerdict,
        req: &mut Request<B>,
        conn: &ConnInfo,
    ) -> Checked {
        match verdict {
            AccessVerdict::Verify(v) => Checked::Verify(v),
            AccessVerdict::Pass { user, delay } => {
                if let Some(user) = user {
                    req.extensions_mut().insert(AuthUser {
                        name: user.name,
                        scheme: user.scheme,
                    });
                }
                Checked::Next(delay)
            }
            AccessVerdict::Challenge { realm, reason } => {
                // A first request without credentials is how every browser
                // starts: not worth a warning.
                if req.headers().contains_key(header::AUTHORIZATION) {
                    tracing::warn!(peer = %conn.peer, method = %req.method(), target = %req.uri(), "401: {reason}");
                } else {
                    tracing::debug!(peer = %conn.peer, method = %req.method(), target = %req.uri(), "401: {reason}");
                }
                let mut resp = error_response(StatusCode::UNAUTHORIZED);
                if let Some(v) = challenge(&realm) {
                    resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
                }
                Checked::Answer(resp)
            }
            AccessVerdict::Forbidden { reason } => {
                tracing::warn!(peer = %conn.peer, method = %req.method(), target = %req.uri(), "403: {reason}");
                Checked::Answer(error_response(StatusCode::FORBIDDEN))
            }
            AccessVerdict::Limited {
                status,
                retry_after,
                log,
            } => {
                if let Some(line) = log {
                    tracing::warn!("{}: {line}", status.as_u16());
                }
                let mut resp = error_response(status);
                let secs = retry_after.as_secs_f64().ceil().max(1.0) as u64;
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
                Checked::Answer(resp)
            }
        }
    }
}

/// The `WWW-Authenticate` value of a challenge for `realm` (RFC 7617;
/// the configuration refuses quotes and control characters in a realm).
pub(crate) fn challenge(realm: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("Basic realm=\"{realm}\", charset=\"UTF-8\"")).ok()
}
