//! The one place a request that failed becomes a response and a log line,
//! for every runner of CGI programs (a process, a persistent worker, a
//! WebAssembly module): the status comes from [`HandlerError`], the level
//! from the status (a missing script is routine, a client's mistake is
//! news, a fault on our side or the program's is a warning).

use http::{Response, StatusCode};
use tern_handler::path::DecodedPath;
use tern_handler::{HandlerError, RequestId, ResponseBody};

/// The response for `err`, after one log line tagged with the request id
/// and path; `kind` names the runner (`"cgi"`, `"wasm"`) and `program`
/// the program when the caller knows it.
pub fn fail(
    kind: &str,
    program: Option<&str>,
    err: HandlerError,
    id: RequestId,
    path: &DecodedPath,
) -> Response<ResponseBody> {
    let status = err.status();
    match status {
        StatusCode::NOT_FOUND => tracing::debug!(%id, %path, program, "{kind}: {err}"),
        s if s.is_client_error() => {
            tracing::info!(%id, %path, program, "{kind}: {}: {err}", s.as_u16());
        }
        s => tracing::warn!(%id, %path, program, "{kind}: {}: {err}", s.as_u16()),
    }
    err.into_response()
}
