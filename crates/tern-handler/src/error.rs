//! Handler failures and the one place they become HTTP responses.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};

use crate::body::{BodyError, ResponseBody};

/// A failure a handler reports to the client. Each variant is a status; the
/// reason (for the error log) is kept apart from the response body, which
/// never leaks internals.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// 400: the request cannot be understood (the reason is logged).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// 403: the target exists but may not be served.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// 404: no such resource (or one that is hidden).
    #[error("not found")]
    NotFound,
    /// 405: the method is not supported; `allow` lists what is.
    #[error("method not allowed")]
    MethodNotAllowed {
        /// The value of the `Allow` header.
        allow: &'static str,
    },
    /// 408: the client sent its request body too slowly.
    #[error("request timeout: {0}")]
    RequestTimeout(String),
    /// 413: the request body exceeded the limit.
    #[error("request body larger than {limit} bytes")]
    PayloadTooLarge {
        /// The limit that was exceeded.
        limit: u64,
    },
    /// 500: a fault on our side (the reason is logged).
    #[error("internal error: {0}")]
    Internal(String),
    /// 502: a script or backend answered badly (the reason is logged).
    #[error("bad gateway: {0}")]
    BadGateway(String),
    /// 503: no capacity right now (queue full, backend ejected); the
    /// response asks the client to retry after a second.
    #[error("service unavailable: {0}")]
    Unavailable(String),
    /// 504: a script or backend took too long.
    #[error("gateway timeout: {0}")]
    GatewayTimeout(String),
}

impl HandlerError {
    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            HandlerError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HandlerError::Forbidden(_) => StatusCode::FORBIDDEN,
            HandlerError::NotFound => StatusCode::NOT_FOUND,
            HandlerError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            HandlerError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            HandlerError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            HandlerError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            HandlerError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            HandlerError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            HandlerError::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The response for this error: the status, a short text body,
    /// `Allow` for 405, and `Retry-After` for 503 (a full queue drains
    /// within about a second; clients and proxies that honour it come back
    /// then instead of at once).
    pub fn into_response(self) -> Response<ResponseBody> {
        let mut resp = error_response(self.status());
        match self {
            HandlerError::MethodNotAllowed { allow } => {
                resp.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            HandlerError::Unavailable(_) => {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        resp
    }
}

impl From<BodyError> for HandlerError {
    fn from(e: BodyError) -> Self {
        match e {
            BodyError::TooLarge { limit } => HandlerError::PayloadTooLarge { limit },
            BodyError::Read(e) => HandlerError::BadRequest(format!("reading the body: {e}")),
            e @ BodyError::TooSlow { .. } => HandlerError::RequestTimeout(e.to_string()),
        }
    }
}

/// A bare response for `status` with a one-line `text/plain` body such as
/// `404 Not Found`.
pub fn error_response(status: StatusCode) -> Response<ResponseBody> {
    let text = format!(
        "{} {}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let mut resp = Response::new(ResponseBody::full(Bytes::from(text)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_not_allowed_carries_allow() {
        let r = HandlerError::MethodNotAllowed { allow: "GET, HEAD" }.into_response();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[header::ALLOW], "GET, HEAD");
    }

    #[test]
    fn unavailable_asks_the_client_to_retry_after_a_second() {
        let r = HandlerError::Unavailable("queue full".into()).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn body_too_large_maps_to_413() {
        let e: HandlerError = BodyError::TooLarge { limit: 10 }.into();
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let e: HandlerError = BodyError::TooSlow {
            received: 3,
            waited: std::time::Duration::from_secs(20),
        }
        .into();
        assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT);
    }
}
