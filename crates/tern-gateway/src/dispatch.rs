//! What every gateway does around running its program: local redirects
//! followed again as GET (RFC 3875 §6.2.2) up to a depth, the parsed head
//! turned into a response, and a failure turned into a status and one
//! log line. Each transport (CGI, FastCGI, CGIplus) only says how to
//! [`Run`] a request once.

use std::future::Future;
use std::sync::Arc;

use http::request::Parts;
use http::{header, Method, Response, Uri};
use tern_cgi::response::{client_redirect, Head};
use tern_cgi::HeadError;
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, HandlerFuture, RequestBody, RequestId, ResponseBody, RoutePattern,
};

use crate::session::Output;
use crate::Error;

/// Local redirects followed for one request before it is answered 500
/// (a script redirecting to itself, or two to each other).
pub const MAX_LOCAL_REDIRECTS: usize = 10;

/// What one run of a script asks for.
pub(crate) enum Answer {
    Response(Response<ResponseBody>),
    /// A local redirect to this path and query.
    Redirect(String),
}

/// One transport's way of running a request once.
pub(crate) trait Run: Sync {
    /// "cgi", "fastcgi", "cgiplus": for log lines.
    fn kind(&self) -> &'static str;

    /// Runs the request (`body` is `None` for a redirected GET).
    fn run(
        &self,
        parts: &Parts,
        path: &DecodedPath,
        body: Option<RequestBody>,
        conn: &ConnInfo,
        pattern: &RoutePattern,
        id: RequestId,
    ) -> impl Future<Output = Result<Answer, Error>> + Send;
}

/// A gateway handler's `call`: `exchange` answered through `route`.
pub(crate) fn call<R: Run + Send + 'static>(route: &Arc<R>, exchange: Exchange) -> HandlerFuture {
    let route = Arc::clone(route);
    Box::pin(async move { serve(&*route, exchange).await })
}

/// Answers `exchange` through `r`, following local redirects.
pub(crate) async fn serve<R: Run>(r: &R, exchange: Exchange) -> Response<ResponseBody> {
    let Exchange {
        request,
        mut path,
        conn,
        route,
        id,
    } = exchange;
    let kind = r.kind();
    let (mut parts, body) = request.into_parts();
    let mut body = Some(body);
    for _ in 0..=MAX_LOCAL_REDIRECTS {
        let target = match r
            .run(&parts, &path, body.take(), &conn, &route.pattern, id)
            .await
        {
            Ok(Answer::Response(r)) => return r,
            Ok(Answer::Redirect(target)) => target,
            Err(e) => return fail(kind, e, id, &path),
        };
        let Some((uri, next)) = local_target(&target) else {
            let e = Error::from(HeadError::BadLocation(target));
            return fail(kind, e, id, &path);
        };
        if !route.pattern.covers(&next) {
            // tern-server owns routing and a handler never calls back
            // into it, so a path another route serves is sent to the
            // client as a redirect: it gets the same resource.
            tracing::debug!(%id, from = %path, to = %target, "{kind}: local redirect outside the route, sent as 302");
            return client_redirect(&target);
        }
        // RFC 3875 §6.2.2: the new request is a GET without a body.
        parts.method = Method::GET;
        parts.uri = uri;
        for h in [
            header::CONTENT_LENGTH,
            header::CONTENT_TYPE,
            header::TRANSFER_ENCODING,
        ] {
            parts.headers.remove(h);
        }
        path = next;
    }
    fail(kind, Error::RedirectLoop(MAX_LOCAL_REDIRECTS), id, &path)
}

/// The URI and decoded path of a local redirect's `/path?query`.
fn local_target(target: &str) -> Option<(Uri, DecodedPath)> {
    let uri: Uri = target.parse().ok()?;
    let path = DecodedPath::parse(uri.path()).ok()?;
    Some((uri, path))
}

pub(crate) fn render(head: Head, output: Output) -> Response<ResponseBody> {
    let body = match output {
        Output::Whole(b) => ResponseBody::full(b),
        Output::Stream(s) => ResponseBody::stream(s),
        Output::Discarded => ResponseBody::empty(),
    };
    head.into_response(body)
}

/// A failure's response and log line.
fn fail(kind: &str, e: Error, id: RequestId, path: &DecodedPath) -> Response<ResponseBody> {
    tern_cgi::fail(kind, None, e.status_error(), id, path)
}
