//! The rewrite phase: a site's ordered rules (`[[site.rules]]`, decided by
//! `tern-rules`), before routing. A rule redirects, answers, or changes
//! the path the request is routed by (and its query); it may add response
//! headers. The path stays decoded: a rewrite's result is parsed again as
//! a [`DecodedPath`], so a rewritten path obeys what an admitted one does.
//!
//! A rewritten request keeps what the client sent as an
//! [`OriginalTarget`] (CGI's `REQUEST_URI`, the access log's request
//! line), while its URI becomes the new path and query.

use std::path::PathBuf;

use http::header::{self, HeaderName, HeaderValue};
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode};
use tern_handler::path::DecodedPath;
use tern_handler::{error_response, ConnInfo, OriginalTarget, ResponseBody, ScriptEnv};
use tern_rules::cond::Request as RuleRequest;
use tern_rules::rule::{Decision, Probe, RuleList, Step};

use crate::phase::Flow;

/// A site's compiled rewrite rules, and the root `try_files` looks in.
#[derive(Debug)]
pub struct Rewrite {
    list: RuleList,
    root: PathBuf,
}

/// `try_files` candidates, looked up under the site's root. A metadata
/// call on the runtime thread, as nginx makes it on its event loop: it
/// reads no file, and the inode is in the kernel's cache after the first.
struct DocRoot<'a>(&'a std::path::Path);

impl DocRoot<'_> {
    fn meta(&self, path: &str) -> Option<std::fs::Metadata> {
        // A decoded path has no `..` segment: the join stays under root.
        std::fs::metadata(self.0.join(path.trim_start_matches('/'))).ok()
    }
}

impl Probe for DocRoot<'_> {
    fn is_file(&self, path: &str) -> bool {
        self.meta(path).is_some_and(|m| m.is_file())
    }
    fn is_dir(&self, path: &str) -> bool {
        self.meta(path).is_some_and(|m| m.is_dir())
    }
}

/// The rules' view of `req` on `conn`, with the path admitted.
pub(crate) fn rule_request<'a, B>(
    req: &'a Request<B>,
    conn: &'a ConnInfo,
    path: &'a str,
) -> RuleRequest<'a> {
    RuleRequest {
        method: req.method(),
        path,
        query: req.uri().query(),
        host: req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok()),
        headers: req.headers(),
        client: conn.peer.socket_addr().map(|a| a.ip().to_canonical()),
        secure: conn.secure,
        client_cert: conn
            .tls
            .as_ref()
            .and_then(|t| t.client.as_ref())
            .map(|c| &*c.subject),
    }
}

impl Rewrite {
    /// A site's rules, with its static root for `try_files`.
    pub fn new(list: RuleList, root: PathBuf) -> Self {
        Rewrite { list, root }
    }

    /// The rules' decision for a request, with the trace of the rules that
    /// matched when `trace` is given (`tern explain`).
    pub fn decide<B>(
        &self,
        req: &Request<B>,
        conn: &ConnInfo,
        path: &DecodedPath,
        trace: Option<&mut Vec<Step>>,
    ) -> tern_rules::rule::Outcome {
        let view = rule_request(req, conn, path.as_str());
        self.list.apply(&view, &DocRoot(&self.root), trace)
    }

    /// Applies the rules to `req`: on to routing (its path and URI
    /// rewritten if a rule said so), or an answer. Headers `set` rules
    /// added are pushed onto `headers`; the rules that matched onto
    /// `trace`, when given (the live trace).
    pub fn apply<B>(
        &self,
        req: &mut Request<B>,
        conn: &ConnInfo,
        path: &mut DecodedPath,
        headers: &mut Vec<(HeaderName, HeaderValue)>,
        trace: Option<&mut Vec<Step>>,
    ) -> Flow {
        let outcome = self.decide(req, conn, path, trace);
        headers.extend(outcome.headers);
        if !outcome.env.is_empty() {
            req.extensions_mut().insert(ScriptEnv(outcome.env));
        }
        match outcome.decision {
            Decision::Route {
                path: None,
                query: None,
            } => Flow::Next,
            Decision::Route {
                path: new_path,
                query,
            } => {
                let new_path = new_path.unwrap_or_else(|| path.clone());
                match rewritten_uri(req.uri(), &new_path, query.as_deref()) {
                    Ok(uri) => {
                        if let Some(original) = req.uri().path_and_query().cloned() {
                            req.extensions_mut().insert(OriginalTarget(original));
                        }
                        *req.uri_mut() = uri;
                        *path = new_path;
                        Flow::Next
                    }
                    Err(reason) => fail(req, conn, &reason),
                }
            }
            Decision::Redirect { status, location } => {
                let mut resp = Response::new(ResponseBody::empty());
                *resp.status_mut() = status;
                resp.headers_mut().insert(header::LOCATION, location);
                Flow::Answer(resp)
            }
            Decision::Return { status, body } => Flow::Answer(returned(status, body)),
            Decision::Fail { reason } => fail(req, conn, &reason),
        }
    }
}

/// A rule's `return`: the status, with its body as plain text, or the
/// server's own page for an error without one.
fn returned(status: StatusCode, body: Option<String>) -> Response<ResponseBody> {
    match body {
        Some(b) => {
            let mut resp = Response::new(ResponseBody::full(b));
            *resp.status_mut() = status;
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            resp
        }
        None if status.is_client_error() || status.is_server_error() => error_response(status),
        None => {
            let mut resp = Response::new(ResponseBody::empty());
            *resp.status_mut() = status;
            resp
        }
    }
}

fn fail<B>(req: &Request<B>, conn: &ConnInfo, reason: &str) -> Flow {
    tracing::error!(peer = %conn.peer, method = %req.method(), target = %req.uri(), "500: rules: {reason}");
    Flow::Answer(error_response(StatusCode::INTERNAL_SERVER_ERROR))
}

/// The URI of a rewritten request: the new path, encoded, and the new
/// query (or the old one).
fn rewritten_uri(
    old: &http::Uri,
    path: &DecodedPath,
    query: Option<&str>,
) -> Result<http::Uri, String> {
    let mut target = String::with_capacity(path.as_str().len() + 16);
    tern_rules::template::encode_path(&mut target, path.as_str());
    match query.or(old.query()) {
        Some("") | None => {}
        Some(q) => {
            target.push('?');
            target.push_str(q);
        }
    }
    let pq = PathAndQuery::try_from(target.as_str())
        .map_err(|_| format!("the rewritten target {target:?} is not a valid URI"))?;
    let mut parts = old.clone().into_parts();
    parts.path_and_query = Some(pq);
    http::Uri::from_parts(parts).map_err(|e| format!("the rewritten target {target:?}: {e}"))
}
