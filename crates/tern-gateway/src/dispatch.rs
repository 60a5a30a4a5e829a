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
pub(crate) fn call<R: Run + Send + 'static>(route: &Arc<R>, exchange: Exchange) -> HandlerFuture {
    let route = Arc::clone(route);
    Box::pin(async move { serve(&*route, exchange).await })
}

/// Answers `exchange` through `r`. A local redirect is handed to the
/// server, which runs its target through the rewrite, route and authorize
/// phases as it would any request (a handler never calls back into the
/// router), and bounds the redirects one request follows.
pub(crate) async fn serve<R: Run>(r: &R, exchange: Exchange) -> Response<ResponseBody> {
    let Exchange {
        request,
        path,
        conn,
        route,
        id,
    } = exchange;
    let kind = r.kind();
    let (parts, body) = request.into_parts();
    match r.run(&parts, &path, body, &conn, &route.pattern, id).await {
        Ok(Answer::Response(r)) => r,
        Ok(Answer::Redirect(target)) => match local_redirect(&parts, &target) {
            Some(resp) => resp,
            None => fail(kind, HeadError::BadLocation(target).into(), id, &path),
        },
        Err(e) => fail(kind, e, id, &path),
    }
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
