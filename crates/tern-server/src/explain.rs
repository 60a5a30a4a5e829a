//! `tern explain`: a request's way through the phases that decide before
//! the handler (admit, rewrite, route, authorize), told step by step
//! without sending anything. It runs the phases' own code on the same
//! compiled rules, so what it says is what `tern serve` does with the
//! same configuration and request.

use std::fmt::Write as _;

use http::{header, Request, StatusCode};
use tern_handler::ConnInfo;
use tern_rules::access::AccessVerdict;
use tern_rules::rule::{Decision, Step};

use crate::phase::admit::admit;
use crate::site::Site;

/// What the phases decided about one request.
#[derive(Debug)]
pub struct Explanation {
    /// The site that answers (its name).
    pub site: String,
    /// The rules that matched, in order.
    pub steps: Vec<Step>,
    /// The path routed (decoded), when the request reaches routing.
    pub path: Option<String>,
    /// The query after the rules, when the request reaches routing.
    pub query: Option<String>,
    /// The route (`/prefix`, `*.ext` or `/` for the static files) and its
    /// handler's kind.
    pub route: Option<(String, &'static str)>,
    /// The realm that decided, and the limits that apply.
    pub access: Option<tern_rules::access::AccessTrace>,
    /// The status the phases answer with, if they answer (`None`: the
    /// handler answers).
    pub status: Option<StatusCode>,
    /// Response headers the phases set (a redirect's `Location`, a
    /// challenge, a rule's `set`).
    pub headers: Vec<(String, String)>,
    /// Why, in words, when the phases answer.
    pub reason: Option<String>,
}

impl Site {
    /// Explains `req` arriving on `conn`. Rate limits are counted in the
    /// site's tables as a request would be: explain a freshly built site.
    pub fn explain<B>(&self, mut req: Request<B>, conn: &ConnInfo) -> Explanation {
        let mut e = Explanation {
            site: String::new(),
            steps: Vec::new(),
            path: None,
            query: None,
            route: None,
            access: None,
            status: None,
            headers: Vec::new(),
            reason: None,
        };
        let mut path = match admit(&mut req, &self.limits) {
            Ok(p) => p,
            Err(r) => {
                e.status = Some(r.status);
                e.reason = Some(format!("refused at admission: {}", r.reason));
                return e;
            }
        };
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned);
        let routes = self.router.site(host.as_deref());
        e.site = routes.name().to_owned();
        let rules = routes.rules();
        if let Some(rewrite) = &rules.rewrite {
            let outcome = rewrite.decide(&req, conn, &path, Some(&mut e.steps));
            for (n, v) in &outcome.headers {
                e.headers
                    .push((n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()));
            }
            match outcome.decision {
                Decision::Route { path: p, query } => {
                    if let Some(p) = p {
                        path = p;
                    }
                    e.query = query;
                }
                Decision::Redirect { status, location } => {
                    e.status = Some(status);
                    e.headers.push((
                        "location".into(),
                        String::from_utf8_lossy(location.as_bytes()).into(),
                    ));
                    e.reason = Some("redirected by a rule".into());
                    return e;
                }
                Decision::Return { status, .. } => {
                    e.status = Some(status);
                    e.reason = Some("answered by a rule".into());
                    return e;
                }
                Decision::Fail { reason } => {
                    e.status = Some(StatusCode::INTERNAL_SERVER_ERROR);
                    e.reason = Some(reason);
                    return e;
                }
            }
        }
        if e.query.is_none() {
            e.query = req.uri().query().map(str::to_owned);
        }
        let target = routes.route(&path);
        e.route = Some((target.route.pattern.to_string(), target.handler.kind()));
        e.path = Some(path.as_str().to_owned());
        if let Some(hits) = rules.headers.decide(path.as_str()) {
            let mut map = http::HeaderMap::new();
            hits.apply(&mut map);
            for (n, v) in &map {
                e.headers
                    .push((n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()));
            }
        }
        if let Some(access) = &rules.access {
            e.access = Some(access.explain(&req, conn, path.as_str()));
            let view = crate::phase::rewrite::rule_request(&req, conn, path.as_str());
            let verdict = access.inner().decide(
                &view,
                req.headers().get(header::AUTHORIZATION),
                std::time::Instant::now(),
                &mut tern_rules::access::Proven::default(),
            );
            // A password not verified lately: checked here and now.
            let verdict = match verdict {
                AccessVerdict::Verify(v) => {
                    let ok = v.run();
                    access
                        .inner()
                        .verified(&v, ok, &view, std::time::Instant::now())
                }
                verdict => verdict,
            };
            match verdict {
                AccessVerdict::Verify(_) => unreachable!("checked above"),
                AccessVerdict::Pass { user, delay } => {
                    let mut r = String::new();
                    if let Some(u) = user {
                        let _ = write!(r, "granted to user {:?} ({})", u.name, u.scheme);
                    }
                    if !delay.is_zero() {
                        let _ = write!(r, "delayed {} ms by a limit", delay.as_millis());
                    }
                    if !r.is_empty() {
                        e.reason = Some(r);
                    }
                }
                AccessVerdict::Challenge { realm, reason } => {
                    e.status = Some(StatusCode::UNAUTHORIZED);
                    if let Some(v) = crate::phase::authorize::challenge(&realm) {
                        e.headers.push((
                            "www-authenticate".into(),
                            String::from_utf8_lossy(v.as_bytes()).into(),
                        ));
                    }
                    e.reason = Some(reason);
                }
                AccessVerdict::Forbidden { reason } => {
                    e.status = Some(StatusCode::FORBIDDEN);
                    e.reason = Some(reason);
                }
                AccessVerdict::Limited { status, .. } => {
                    e.status = Some(status);
                    e.reason = Some("refused by a rate limit".into());
                }
            }
        }
        e
    }
}

impl std::fmt::Display for Explanation {
    /// The explanation as `tern explain` prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "site:    {}", self.site)?;
        if self.steps.is_empty() {
            writeln!(f, "rules:   none matched")?;
        } else {
            writeln!(f, "rules:")?;
            for s in &self.steps {
                writeln!(f, "  #{} {}", s.rule + 1, s.origin)?;
                if !s.captures.is_empty() {
                    let caps: Vec<String> = s
                        .captures
                        .iter()
                        .enumerate()
                        .map(|(i, c)| format!("${i}={c:?}"))
                        .collect();
                    writeln!(f, "      captures {}", caps.join(" "))?;
                }
                writeln!(f, "      {}", s.did)?;
            }
        }
        if let Some(p) = &self.path {
            match self.query.as_deref().filter(|q| !q.is_empty()) {
                Some(q) => writeln!(f, "path:    {p}?{q}")?,
                None => writeln!(f, "path:    {p}")?,
            }
        }
        if let Some((pattern, kind)) = &self.route {
            writeln!(f, "route:   {pattern} -> {kind}")?;
        }
        if let Some(a) = &self.access {
            match &a.realm {
                Some(r) => writeln!(f, "access:  {r}")?,
                None => writeln!(f, "access:  no realm (open)")?,
            }
            for l in &a.limits {
                writeln!(f, "limit:   {l}")?;
            }
        }
        match self.status {
            Some(s) => writeln!(
                f,
                "answer:  {} {}",
                s.as_u16(),
                s.canonical_reason().unwrap_or("")
            )?,
            None => writeln!(f, "answer:  by the handler")?,
        }
        for (n, v) in &self.headers {
            writeln!(f, "header:  {n}: {v}")?;
        }
        if let Some(r) = &self.reason {
            writeln!(f, "why:     {r}")?;
        }
        Ok(())
    }
}
