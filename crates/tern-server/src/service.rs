//! The hyper service of a connection: one request's way through the
//! phases (see `phase/mod.rs` for the order and what each decides), and the
//! future that waits for the handler's answer and hands hyper a body whose
//! end runs the log phase.

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
use tern_handler::{
    error_response, BodyPace, ConnInfo, Exchange, HandlerFuture, Leftover, RequestBody, RequestId,
    ResponseBody,
};

use crate::body::ServerBody;
use crate::phase::admit::{admit, Refusal};
use crate::phase::authorize::Granted;
use crate::phase::listen;
use crate::phase::log::LogPhase;
use crate::phase::respond::HeaderHits;
use crate::phase::Flow;
use crate::site::Site;
use crate::timeout::Activity;

/// State shared by every connection: the current site and the id counter.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) site: ArcSwap<Site>,
    /// The next block of request ids (see [`Shared::next_id`]).
    ids: AtomicU64,
    /// The bound listeners' ports, by place (set when the server runs):
    /// what a redirect to HTTPS names.
    pub(crate) ports: std::sync::OnceLock<Vec<Option<u16>>>,
}

/// Request ids a worker takes from the shared counter at a time.
const ID_BLOCK: u64 = 256;

thread_local! {
    /// This worker's ids not yet given out: the next, and the end of its
    /// block.
    static IDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

impl Shared {
    /// A request id unique among this server's requests (the block is the
    /// thread's, and a worker thread serves one server). Each worker takes a block of
    /// [`ID_BLOCK`] at a time, so that requests on different workers do
    /// not each write the one shared counter (its cache line would move
    /// between the cores on every request). Ids on one connection still
    /// grow; across workers they interleave by blocks.
    fn next_id(&self) -> RequestId {
        IDS.with(|ids| {
            let (mut next, mut end) = ids.get();
            if next == end {
                next = self.ids.fetch_add(ID_BLOCK, Ordering::Relaxed);
                end = next + ID_BLOCK;
            }
            ids.set((next + 1, end));
            RequestId(next)
        })
    }

    pub(crate) fn new(site: Site) -> Self {
        Shared {
            site: ArcSwap::from_pointee(site),
            ids: AtomicU64::new(1),
            ports: std::sync::OnceLock::new(),
        }
    }
}

/// The hyper service of one connection.
#[derive(Clone, Debug)]
pub(crate) struct Svc {
    pub(crate) shared: Arc<Shared>,
    /// The listener the connection came in on, by place.
    pub(crate) listener: usize,
    pub(crate) conn: Arc<ConnInfo>,
    pub(crate) activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<ServerBody>;
    type Error = Infallible;
    type Future = RespFuture;

    /// The phases, in order. Each early answer still goes through respond
    /// (once a site is chosen) and log.
    fn call(&self, mut req: Request<Incoming>) -> RespFuture {
        self.activity.set_closing(asks_to_close(&req));
        // A guard, not a clone: nothing below keeps the site past this
        // call, and a clone would write the count every worker shares.
        let site = self.shared.site.load();
        let id = self.shared.next_id();

        // admit: a head tern serves, one authority, the path decoded once.
        let admitted = admit(&mut req, &site.limits);
        // log: armed here, it runs for every request, however it ends.
        let log = LogPhase::arm(&site.sinks, &self.activity, &req, &self.conn, id.0);
        let mut path = match admitted {
            Ok(path) => path,
            Err(refusal) => return RespFuture::answer(self.refuse(&req, id, refusal), None, log),
        };
        // listen: a plain listener's own answers (ACME HTTP-01 challenges,
        // the redirect to HTTPS), before any site's rules.
        let on = listen::Listener {
            index: self.listener,
            tls: self.conn.tls.is_some(),
            ports: self.shared.ports.get().map(Vec::as_slice),
        };
        if let Some(answer) = listen::answer(&site, &on, &req, path.as_str()) {
            let resp = answer.unwrap_or_else(|refusal| self.refuse(&req, id, refusal));
            return RespFuture::answer(resp, None, log);
        }
        // Admission left one valid Host, or none: the authority decided.
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        let routes = site.router.site(host);
        let rules = routes.rules();

        // rewrite: headers `set` rules add go on the response, whoever
        // answers.
        let mut extra = Vec::new();
        if let Some(rewrite) = &rules.rewrite {
            if let Flow::Answer(resp) = rewrite.apply(&mut req, &self.conn, &mut path, &mut extra) {
                let hits = rules.headers.decide(path.as_str());
                return RespFuture::answer(resp, hits, log).with_extra(extra);
            }
        }
        // route
        let target = routes.route(&path);
        // respond: which header rules apply is decided on the final path.
        let hits = rules.headers.decide(path.as_str());
        // authorize
        let mut granted = Granted::default();
        let mut log = log;
        if let Some(access) = &rules.access {
            let flow = access.check(&mut req, &self.conn, path.as_str(), &mut granted);
            if let Some(user) = &granted.user {
                log.user(user);
            }
            if let Flow::Answer(resp) = flow {
                return RespFuture::answer(resp, hits, log).with_extra(extra);
            }
        }

        // handler
        let route = target.route.clone();
        let limits = &site.limits;
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
        let exchange = Exchange {
            request,
            path,
            conn: self.conn.clone(),
            route,
            id,
        };
        let fut = if granted.delay.is_zero() {
            target.handler.call(exchange)
        } else {
            // A rate limit's delay (nginx's burst without nodelay): the
            // request waits its turn before the handler sees it.
            let handler = target.handler.clone();
            let delay = granted.delay;
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                handler.call(exchange).await
            })
        };
        RespFuture {
            state: State::Pending(fut),
            log: Some(log),
            hits,
            extra,
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
            // A client asking for what tern does not do is no fault.
            if r.status != StatusCode::METHOD_NOT_ALLOWED {
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

/// The future of one request's response: the handler's answer, then the
/// respond phase, then a body that carries the log phase.
pub(crate) struct RespFuture {
    state: State,
    log: Option<LogPhase>,
    hits: Option<HeaderHits>,
    /// Headers the rules' `set` added.
    extra: Vec<(header::HeaderName, header::HeaderValue)>,
    leftover: Option<Leftover>,
}

impl RespFuture {
    /// A request answered before its handler.
    fn answer(resp: Response<ResponseBody>, hits: Option<HeaderHits>, log: LogPhase) -> Self {
        RespFuture {
            state: State::Ready(Some(resp)),
            log: Some(log),
            hits,
            extra: Vec::new(),
            leftover: None,
        }
    }

    /// With the headers the rules' `set` added.
    fn with_extra(mut self, extra: Vec<(header::HeaderName, header::HeaderValue)>) -> Self {
        self.extra = extra;
        self
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
        if let Some(hits) = this.hits.take() {
            hits.apply(resp.headers_mut());
        }
        for (name, value) in this.extra.drain(..) {
            resp.headers_mut().insert(name, value);
        }
        let mut log = this.log.take().expect("RespFuture polled after completion");
        log.status(resp.status());
        Poll::Ready(Ok(resp.map(|b| ServerBody::new(b, log))))
    }
}
