//! One request's way through the server: admit (id, limits), decode the
//! path, route by Host and path, call the handler, apply header rules, and
//! hand hyper a body whose end closes the request (activity, access record).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use arc_swap::ArcSwap;
use http::{header, Request, Response, StatusCode};
use http_body::Body as _;
use hyper::body::Incoming;
use tern_handler::path::DecodedPath;
use tern_handler::{
    error_response, BodyPace, ConnInfo, Exchange, HandlerFuture, Leftover, RequestBody, RequestId,
    ResponseBody,
};

use crate::admit::{admit, Refusal};
use crate::body::{record_for, LogEntry, RequestGuard, ServerBody};
use crate::route::SiteRoutes;
use crate::site::Site;
use crate::timeout::Activity;

/// State shared by every connection: the current site and the id counter.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) site: ArcSwap<Site>,
    ids: AtomicU64,
}

impl Shared {
    pub(crate) fn new(site: Site) -> Self {
        Shared {
            site: ArcSwap::from_pointee(site),
            ids: AtomicU64::new(1),
        }
    }
}

/// The hyper service of one connection.
#[derive(Clone, Debug)]
pub(crate) struct Svc {
    pub(crate) shared: Arc<Shared>,
    pub(crate) conn: Arc<ConnInfo>,
    pub(crate) activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<ServerBody>;
    type Error = Infallible;
    type Future = RespFuture;

    fn call(&self, mut req: Request<Incoming>) -> RespFuture {
        self.activity.set_closing(asks_to_close(&req));
        self.activity.begin();
        let site = self.shared.site.load_full();
        let id = self.shared.ids.fetch_add(1, Ordering::Relaxed);
        let admitted = admit(&mut req);
        let log = site
            .access_log
            .as_ref()
            .map(|l| Box::new(LogEntry::now(l.clone(), record_for(&req, &self.conn, id))));
        let guard = RequestGuard {
            activity: self.activity.clone(),
            log,
            bytes: 0,
        };
        let id = RequestId(id);
        let limits = &site.limits;

        let target_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        if target_len > limits.max_uri_bytes {
            tracing::warn!(%id, peer = %self.conn.peer, len = target_len, "414: request target longer than max_uri_bytes ({})", limits.max_uri_bytes);
            return RespFuture::ready(error_response(StatusCode::URI_TOO_LONG), guard);
        }
        if let Err(refusal) = admitted {
            return RespFuture::ready(self.refuse(&req, id, refusal), guard);
        }
        let path = match DecodedPath::parse(req.uri().path()) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(%id, peer = %self.conn.peer, target = %req.uri(), "400: bad request path: {e}");
                return RespFuture::ready(error_response(StatusCode::BAD_REQUEST), guard);
            }
        };
        if let Some(len) = declared_length(&req) {
            if len > limits.max_body_bytes {
                tracing::warn!(%id, peer = %self.conn.peer, len, "413: request body larger than max_body_bytes ({})", limits.max_body_bytes);
                let mut resp = error_response(StatusCode::PAYLOAD_TOO_LARGE);
                // The body was not read: the connection cannot be reused.
                resp.headers_mut().insert(
                    header::CONNECTION,
                    header::HeaderValue::from_static("close"),
                );
                return RespFuture::ready(resp, guard);
            }
        }
        // Admission left one valid Host, or none: the authority decided.
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        let routes = site.router.site(host);
        let target = routes.route(&path);
        let handler = target.handler.clone();
        let route = target.route.clone();
        let rules = if routes.headers().is_empty() {
            None
        } else {
            Some((routes.clone(), path.as_str().to_owned()))
        };
        let (parts, body) = req.into_parts();
        let pace = BodyPace {
            timeout: limits.body_timeout,
            min_rate: limits.body_min_rate,
        };
        let h2_body = parts.version == http::Version::HTTP_2 && !body.is_end_stream();
        let mut body = RequestBody::incoming(body, limits.max_body_bytes, pace);
        let leftover = h2_body.then(|| {
            let l = Leftover::default();
            body.leave_to(l.clone());
            l
        });
        let request = Request::from_parts(parts, body);
        let fut = handler.call(Exchange {
            request,
            path,
            conn: self.conn.clone(),
            route,
            id,
        });
        RespFuture {
            state: State::Pending(fut),
            guard: Some(guard),
            rules,
            leftover,
        }
    }
}

impl Svc {
    /// A request answered at admission: the response, and its log line.
    fn refuse<B>(&self, req: &Request<B>, id: RequestId, r: Refusal) -> Response<ResponseBody> {
        let mut resp = if r.status == StatusCode::OK {
            Response::new(ResponseBody::empty())
        } else {
            let level_warn = r.status.is_server_error() || r.status == StatusCode::BAD_REQUEST;
            if level_warn {
                tracing::warn!(%id, peer = %self.conn.peer, method = %req.method(), target = %req.uri(), "{}: {}", r.status.as_u16(), r.reason);
            } else {
                tracing::info!(%id, peer = %self.conn.peer, method = %req.method(), target = %req.uri(), "{}: {}", r.status.as_u16(), r.reason);
            }
            error_response(r.status)
        };
        if let Some(allow) = r.allow {
            resp.headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static(allow));
        }
        if r.close && req.version() != http::Version::HTTP_2 {
            resp.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
        }
        resp
    }
}

/// Whether an HTTP/1 request asks for the connection to close after it:
/// `Connection: close`, or HTTP/1.0 without `keep-alive`.
fn asks_to_close<B>(req: &Request<B>) -> bool {
    let has = |token: &str| {
        req.headers().get_all(header::CONNECTION).iter().any(|v| {
            v.as_bytes()
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        })
    };
    match req.version() {
        http::Version::HTTP_10 => !has("keep-alive"),
        http::Version::HTTP_11 => has("close"),
        _ => false,
    }
}

fn declared_length<B>(req: &Request<B>) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

enum State {
    Ready(Option<Response<ResponseBody>>),
    Pending(HandlerFuture),
    /// The handler answered before the request's body ended (HTTP/2): the
    /// rest is read before the answer goes out, so that a stream the
    /// client gets wrong after its head (a bad content-length, trailers
    /// with pseudo-headers, DATA after RST_STREAM) is reset as RFC 9113
    /// says rather than answered first. At most [`DRAIN_BYTES`] within
    /// [`DRAIN_TIME`]; a longer body is left to hyper, which resets the
    /// stream (NO_ERROR) after the answer.
    Draining(Box<Drain>),
}

/// The most of an unread HTTP/2 body read before an early answer.
const DRAIN_BYTES: u64 = 64 * 1024;
/// The longest wait for the rest of an unread HTTP/2 body.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(1);

struct Drain {
    resp: Option<Response<ResponseBody>>,
    rest: Incoming,
    read: u64,
    until: Pin<Box<tokio::time::Sleep>>,
}

impl Drain {
    /// Ready when the rest has been read, failed, grown too long or taken
    /// too long.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            match Pin::new(&mut self.rest).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(d) = frame.data_ref() {
                        self.read += d.len() as u64;
                        if self.read > DRAIN_BYTES {
                            return Poll::Ready(());
                        }
                    }
                }
                // The end, or the stream was reset: either way the answer
                // may go (to a reset stream it goes nowhere).
                Poll::Ready(_) => return Poll::Ready(()),
                Poll::Pending => return self.until.as_mut().poll(cx),
            }
        }
    }
}

/// The future of one request's response.
pub(crate) struct RespFuture {
    state: State,
    guard: Option<RequestGuard>,
    rules: Option<(Arc<SiteRoutes>, String)>,
    leftover: Option<Leftover>,
}

impl RespFuture {
    fn ready(resp: Response<ResponseBody>, guard: RequestGuard) -> Self {
        RespFuture {
            state: State::Ready(Some(resp)),
            guard: Some(guard),
            rules: None,
            leftover: None,
        }
    }
}

impl Future for RespFuture {
    type Output = Result<Response<ServerBody>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut resp = loop {
            match &mut this.state {
                State::Ready(r) => break r.take().expect("RespFuture polled after completion"),
                State::Pending(f) => match f.as_mut().poll(cx) {
                    Poll::Ready(r) => match this.leftover.take().and_then(|l| l.take()) {
                        Some(rest) => {
                            this.state = State::Draining(Box::new(Drain {
                                resp: Some(r),
                                rest,
                                read: 0,
                                until: Box::pin(tokio::time::sleep(DRAIN_TIME)),
                            }));
                        }
                        None => break r,
                    },
                    Poll::Pending => return Poll::Pending,
                },
                State::Draining(d) => {
                    if d.poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    break d.resp.take().expect("RespFuture polled after completion");
                }
            }
        };
        if let Some((routes, path)) = this.rules.take() {
            routes.headers().apply(&path, resp.headers_mut());
        }
        let mut guard = this
            .guard
            .take()
            .expect("RespFuture polled after completion");
        if let Some(log) = guard.log.as_mut() {
            log.record.status = resp.status().as_u16();
        }
        Poll::Ready(Ok(resp.map(|b| ServerBody::new(b, guard))))
    }
}
