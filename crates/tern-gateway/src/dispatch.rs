//! What every gateway does around running its program: local redirects
//! handed to the server (RFC 3875 §6.2.2), the parsed head
//! turned into a response, and a failure turned into a status and one
//! log line. Each transport (CGI, FastCGI, CGIplus) only says how to
//! [`Run`] a request once.

use std::future::Future;
use std::sync::Arc;

use http::request::Parts;
use http::Response;
use tern_cgi::response::{local_redirect, Head};
use tern_cgi::HeadError;
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, HandlerFuture, RequestBody, RequestId, ResponseBody, RoutePattern,
};

use crate::session::Output;
use crate::Error;

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

    /// Runs the request once.
    fn run(
        &self,
        parts: &Parts,
        path: &DecodedPath,
        body: RequestBody,
        conn: &ConnInfo,
        pattern: &RoutePattern,
        id: RequestId,
    ) -> impl Future<Output = Result<Answer, Error>> + Send;
}

/// A gateway handler's `call`: `exchange` answered through `route`.
///
/// The exchange is taken apart here, before the future is made: the boxed
/// future then holds each part once. (An async fn keeps each argument's
/// slot for its whole life, so an `Exchange` taken apart inside it is held
/// twice, and a wrapping `async` block holds its captures beside the
/// future it awaits; each byte of it is copied into the box, once a
/// request: 3,088 bytes for FastCGI before, docs/PERFORMANCE.md.)
pub(crate) fn call<R: Run + Send + 'static>(route: &Arc<R>, exchange: Exchange) -> HandlerFuture {
    let Exchange {
        request,
        path,
        conn,
        route: matched,
        id,
    } = exchange;
    let (parts, body) = request.into_parts();
    HandlerFuture::made(|| {
        serve(
            Arc::clone(route),
            parts,
            body,
            path,
            conn,
            matched.pattern,
            id,
        )
    })
}

/// Answers a request through `r`. A local redirect is handed to the
/// server, which runs its target through the rewrite, route and authorize
/// phases as it would any request (a handler never calls back into the
/// router), and bounds the redirects one request follows.
///
/// A function returning an `async` block rather than an async fn: an
/// async fn moves each argument into a local of its own, and its future
/// holds both (300 bytes here); the block uses what it captured in place.
#[allow(clippy::manual_async_fn)] // the doc says why
fn serve<R: Run + Send>(
    r: Arc<R>,
    parts: Parts,
    body: RequestBody,
    path: DecodedPath,
    conn: Arc<ConnInfo>,
    pattern: RoutePattern,
    id: RequestId,
) -> impl Future<Output = Response<ResponseBody>> + Send {
    async move {
        let answer = r.run(&parts, &path, body, &conn, &pattern, id).await;
        match answer {
            Ok(Answer::Response(r)) => r,
            Ok(Answer::Redirect(target)) => match local_redirect(&parts, &target) {
                Some(resp) => resp,
                None => fail(r.kind(), HeadError::BadLocation(target).into(), id, &path),
            },
            Err(e) => fail(r.kind(), e, id, &path),
        }
    }
}

pub(crate) fn render(head: Head, output: Output) -> Response<ResponseBody> {
    let body = match output {
        Output::Whole(b) => ResponseBody::pieces(b),
        Output::Stream(s) => ResponseBody::stream(s),
        Output::Discarded => ResponseBody::empty(),
    };
    head.into_response(body)
}

/// A failure's response and log line.
fn fail(kind: &str, e: Error, id: RequestId, path: &DecodedPath) -> Response<ResponseBody> {
    tern_cgi::fail(kind, None, e.status_error(), id, path)
}
