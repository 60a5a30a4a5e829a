//! Requests for a handler driven directly, without a server: [`Req`]
//! builds the [`Exchange`] the server would hand over, from a connection
//! 127.0.0.1:40000 -> 127.0.0.1:8080 on a route whose pattern is, unless
//! set, the target's first path segment (`/cgi-bin`, `/app`).

use std::sync::Arc;

use bytes::Bytes;
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, PeerAddr, RequestBody, RequestId, RouteMatch, RoutePattern,
};

/// A request for a handler.
#[derive(Debug, Clone)]
pub struct Req {
    /// `GET`, `POST`, ...
    pub method: &'static str,
    /// The request target, path and query.
    pub target: String,
    /// Header fields, in order.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Bytes>,
    /// The route pattern that matched, as the configuration writes it
    /// (`/cgi-bin`, `*.php`).
    pub pattern: String,
}

impl Req {
    /// A GET of `target` with `Host: test.example`.
    pub fn get(target: &str) -> Req {
        let path = target.split('?').next().unwrap_or("");
        let first = path[1.min(path.len())..].split('/').next().unwrap_or("");
        Req {
            method: "GET",
            target: target.to_owned(),
            headers: vec![("host".into(), "test.example".into())],
            body: None,
            pattern: format!("/{first}"),
        }
    }

    /// A POST of `body` to `target`, with its Content-Length.
    pub fn post(target: &str, body: impl Into<Bytes>) -> Req {
        let body = body.into();
        let mut r = Req::get(target);
        r.method = "POST";
        r.headers
            .push(("content-length".into(), body.len().to_string()));
        r.body = Some(body);
        r
    }

    /// The request with one more header field.
    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The exchange a server would give a handler for this request.
    ///
    /// # Panics
    /// When the method, target or a header is not valid HTTP: a test's
    /// own mistake.
    pub fn exchange(self) -> Exchange {
        let mut b = http::Request::builder()
            .method(self.method)
            .uri(&self.target);
        for (n, v) in &self.headers {
            b = b.header(n.as_str(), v.as_str());
        }
        let body = match self.body {
            Some(b) => RequestBody::full(b),
            None => RequestBody::empty(),
        };
        let request = b.body(body).expect("a valid test request");
        let path = DecodedPath::parse(request.uri().path()).expect("a valid test path");
        Exchange {
            request,
            path,
            conn: Arc::new(ConnInfo {
                peer: PeerAddr::Tcp(([127, 0, 0, 1], 40000).into()),
                local: PeerAddr::Tcp(([127, 0, 0, 1], 8080).into()),
                secure: false,
                tls: None,
            }),
            route: RouteMatch {
                site: Arc::from("test"),
                pattern: pattern(&self.pattern),
            },
            id: RequestId(7),
        }
    }
}

/// The pattern a test wrote as text: `*.ext` is an extension route,
/// anything else a prefix.
fn pattern(text: &str) -> RoutePattern {
    match text.strip_prefix("*.") {
        Some(ext) => RoutePattern::Extension(Arc::from(ext)),
        None => RoutePattern::Prefix(Arc::from(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pattern_is_the_first_segment() {
        assert_eq!(Req::get("/cgi-bin/env.cgi/a?x=1").pattern, "/cgi-bin");
        assert_eq!(Req::get("/app?q=1").pattern, "/app");
        assert_eq!(Req::get("/").pattern, "/");
    }

    #[test]
    fn a_post_carries_its_length() {
        let e = Req::post("/app/x", "12345").exchange();
        assert_eq!(e.request.method(), "POST");
        assert_eq!(e.request.headers()["content-length"], "5");
        assert_eq!(e.route.pattern.to_string(), "/app");
    }
}
