//! listen: what a plain listener answers itself, before any site's rules
//! see the request — an ACME HTTP-01 challenge (RFC 8555 §8.3), which must
//! reach the ACME manager whatever a site would do to the path, and the
//! redirect to HTTPS (`redirect_to_https`), which lets those challenges
//! through.

use http::{header, Request, Response, StatusCode};
use tern_handler::{error_response, ResponseBody};

use crate::phase::admit::Refusal;
use crate::site::Site;

/// Where ACME HTTP-01 challenges are asked for.
const ACME_CHALLENGE: &str = "/.well-known/acme-challenge/";

/// The listener a request came in on, as this phase needs it.
pub(crate) struct Listener<'a> {
    /// Its place among the configured listeners.
    pub(crate) index: usize,
    /// Whether it speaks TLS.
    pub(crate) tls: bool,
    /// The bound listeners' ports, by place, once the server runs.
    pub(crate) ports: Option<&'a [Option<u16>]>,
}

/// The listener's own answer to a request for `path`, if it gives one.
pub(crate) fn answer<B>(
    site: &Site,
    on: &Listener<'_>,
    req: &Request<B>,
    path: &str,
) -> Option<Result<Response<ResponseBody>, Refusal>> {
    let challenge = path.strip_prefix(ACME_CHALLENGE);
    if let (Some(token), Some(tokens), false) = (challenge, &site.http01, on.tls) {
        return Some(Ok(http01_answer(tokens.key_authorization(token))));
    }
    let to = site.redirects.get(on.index).copied().flatten()?;
    // A challenge nobody here answers still goes on to the site: another
    // ACME client may serve it from the document root.
    if challenge.is_some() {
        return None;
    }
    let port = on.ports.and_then(|p| p.get(to).copied().flatten());
    Some(to_https(req, port))
}

/// The answer to an HTTP-01 challenge: the key authorization, or 404.
fn http01_answer(key_authorization: Option<String>) -> Response<ResponseBody> {
    match key_authorization {
        Some(k) => {
            let mut resp = Response::new(ResponseBody::full(k));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/plain"),
            );
            resp
        }
        None => error_response(StatusCode::NOT_FOUND),
    }
}

/// A permanent redirect (`308`: the method and body stay as they are) to
/// the same host and target over HTTPS, on `port` (left out when 443 or
/// unknown).
fn to_https<B>(req: &Request<B>, port: Option<u16>) -> Result<Response<ResponseBody>, Refusal> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| Refusal::bad("no Host to redirect to HTTPS"))?;
    let name = match host.strip_prefix('[') {
        Some(rest) => &host[..rest.find(']').map_or(host.len(), |i| i + 2)],
        None => host.split(':').next().unwrap_or(host),
    };
    let port = match port {
        Some(443) | None => String::new(),
        Some(p) => format!(":{p}"),
    };
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let location = header::HeaderValue::try_from(format!("https://{name}{port}{target}"))
        .map_err(|_| Refusal::bad("a target that cannot be redirected"))?;
    let mut resp = Response::new(ResponseBody::empty());
    *resp.status_mut() = StatusCode::PERMANENT_REDIRECT;
    resp.headers_mut().insert(header::LOCATION, location);
    Ok(resp)
}
