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
use std::time::Duration;

use arc_swap::ArcSwap;
use http::{header, Request, Response, StatusCode};
use http_body::Body as _;
use hyper::body::Incoming;
use tern_handler::path::DecodedPath;
use tern_handler::{
    error_response, AuthUser, BodyPace, ConnInfo, Exchange, HandlerFuture, InternalRedirect,
    Leftover, Redirected, RequestBody, RequestId, ResponseBody, ServedBy, MAX_LOCAL_REDIRECTS,
};

use crate::body::ServerBody;
use crate::phase::admit::{admit_head, Refusal};
use crate::phase::authorize::{Checked, CHECKING};
use crate::phase::listen;
use crate::phase::log::LogPhase;
use crate::phase::respond::HeaderHits;
use crate::phase::Flow;
use crate::route::{SiteRoutes, Target};
use crate::site::Site;
use crate::timeout::Activity;
use tern_observe::watch::Phase;
use tern_rules::access::Verify;

/// State shared by every connection: the current site and the id counter.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) site: ArcSwap<Site>,
    /// The next block of request ids (see [`Shared::next_id`]).
    ids: AtomicU64,
    /// The bound listeners' ports, by place (set when the server runs):
    /// what a redirect to HTTPS names.
    pub(crate) ports: std::sync::OnceLock<Vec<Option<u16>>>,
    /// The first site's observer (the binary keeps the same one across
    /// reloads): connections are counted here.
    pub(crate) observer: Option<&'static tern_observe::Observer>,
    /// Set once every worker listens, cleared when accepting stops.
    pub(crate) serving: std::sync::atomic::AtomicBool,
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
            serving: std::sync::atomic::AtomicBool::new(false),
            observer: site.sinks.observer,
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

/// A request body as a connection layer hands it to the service: hyper's
/// [`Incoming`], or tern's own HTTP/1 loop's (`h1.rs`): [`NoBody`], or the
/// body it feeds (`h1/feed.rs`).
pub(crate) trait ConnBody {
    /// The request has no body, and tern's HTTP/1 parser checked its
    /// framing: admission need not look at it again.
    const BODILESS: bool = false;

    /// The body under the site's limit and pace, and whether it is an
    /// HTTP/2 body still arriving (see [`Leftover`]).
    fn into_request_body(
        self,
        version: http::Version,
        limit: u64,
        pace: BodyPace,
    ) -> (RequestBody, bool);
}

impl ConnBody for Incoming {
    fn into_request_body(
        self,
        version: http::Version,
        limit: u64,
        pace: BodyPace,
    ) -> (RequestBody, bool) {
        let h2_body = version == http::Version::HTTP_2 && !self.is_end_stream();
        (RequestBody::incoming(self, limit, pace), h2_body)
    }
}

/// The body of a request that has none, on tern's own HTTP/1 loop.
#[derive(Debug)]
pub(crate) struct NoBody;

impl ConnBody for NoBody {
    const BODILESS: bool = true;

    fn into_request_body(self, _: http::Version, _: u64, _: BodyPace) -> (RequestBody, bool) {
        (RequestBody::empty(), false)
    }
}

impl hyper::service::Service<Request<Incoming>> for Svc {
    type Response = Response<ServerBody>;
    type Error = Infallible;
    type Future = RespFuture;

    fn call(&self, req: Request<Incoming>) -> RespFuture {
        let closing = asks_to_close(&req);
        // After a body hyper may read on (what the handler left of it),
        // or close: not idle, and the balance only moves idle connections.
        self.activity.set_stays(!req.body().is_end_stream());
        self.respond(req, closing)
    }
}

impl Svc {
    /// The phases, in order. Each early answer still goes through respond
    /// (once a site is chosen) and log. `closing`: the request asked for
    /// the connection to close after it (the connection layer read its
    /// head, and knows).
    pub(crate) fn respond<B: ConnBody>(&self, mut req: Request<B>, closing: bool) -> RespFuture {
        self.activity.set_closing(closing);
        // A guard, not a clone: nothing below keeps the site past this
        // call, and a clone would write the count every worker shares.
        let site = self.shared.site.load();
        let id = self.shared.next_id();

        // admit: a head tern serves, one authority, the path decoded once.
        let admitted = admit_head(&mut req, &site.limits, B::BODILESS);
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
        let routes = site.router.site_by(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
        });
        let mut log = log;
        let mut extra = Vec::new();
        let (target, hits, go) = match phases(
            routes,
            &mut req,
            &self.conn,
            &self.activity.proven,
            &mut path,
            &mut extra,
            &mut log,
        ) {
            Phases::Handler(target, hits, go) => (target, hits, go),
            Phases::Answer(resp, hits) => {
                return RespFuture::answer(resp, hits, log).with_extra(extra)
            }
        };

        // handler
        let limits = &site.limits;
        let (parts, body) = req.into_parts();
        let pace = BodyPace {
            timeout: limits.body_timeout,
            min_rate: limits.body_min_rate,
        };
        let (mut body, h2_body) =
            body.into_request_body(parts.version, limits.max_body_bytes, pace);
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
            route: target.route.clone(),
            id,
        };
        // What following a local redirect needs, kept only for handlers
        // that make them (the rest pay no reference count).
        let follow = target.handler.redirects_locally().then(|| {
            Box::new(Follow {
                shared: self.shared.clone(),
                conn: self.conn.clone(),
                activity: self.activity.clone(),
                id,
            })
        });
        RespFuture {
            state: State::Pending(start(routes, target, exchange, go)),
            log: Some(log),
            hits,
            extra,
            leftover,
            follow,
            writes_fields: false,
        }
    }
}

/// The phases between admission and the handler, for a request of
/// `routes`' site: rewrite, route, authorize. The handler to call, with the
/// header rules that apply on the final path and how it is reached; or
/// the answer a phase gave. Headers the rules' `set` adds go to `extra`;
/// the user a realm grants, to the log.
#[allow(clippy::too_many_arguments)]
fn phases<'s, B>(
    routes: &'s Arc<SiteRoutes>,
    req: &mut Request<B>,
    conn: &ConnInfo,
    proven: &std::sync::Mutex<tern_rules::access::Proven>,
    path: &mut DecodedPath,
    extra: &mut Vec<(header::HeaderName, header::HeaderValue)>,
    log: &mut LogPhase,
) -> Phases<'s> {
    let rules = routes.rules();
    // rewrite
    if let Some(rewrite) = &rules.rewrite {
        // Watched: the rules that matched, as `tern explain` shows them.
        let mut steps = log.watching().then(Vec::new);
        let flow = rewrite.apply(req, conn, path, extra, steps.as_mut());
        if let Some(steps) = steps {
            log.trace(Phase::Rules, || {
                let mut d = match &flow {
                    Flow::Answer(resp) => format!("answered {}", resp.status().as_u16()),
                    Flow::Next if steps.is_empty() => "no rule matched".into(),
                    Flow::Next => format!("on to {}", req.uri()),
                };
                for s in &steps {
                    d.push_str(&format!("; {}: {}", s.origin, s.did));
                }
                d
            });
        }
        if let Flow::Answer(resp) = flow {
            return Phases::Answer(resp, rules.headers.decide(path.as_str()));
        }
    }
    // route
    let target = routes.route(path);
    log.route(target.label);
    log.trace(Phase::Route, || {
        format!(
            "site {}, route {} ({})",
            routes.name(),
            target.route.pattern,
            target.handler.kind()
        )
    });
    // respond: which header rules apply is decided on the final path.
    let hits = rules.headers.decide(path.as_str());
    // authorize
    let Some(access) = &rules.access else {
        return Phases::Handler(target, hits, Go::After(Duration::ZERO));
    };
    let checked = access.check(req, conn, path.as_str(), proven);
    log.trace(Phase::Authorize, || match &checked {
        Checked::Next(delay) => {
            let user = req.extensions().get::<AuthUser>();
            let mut d = match user {
                Some(u) => format!("granted to {}", u.name),
                None => "let through".to_owned(),
            };
            if !delay.is_zero() {
                d.push_str(&format!(", delayed {delay:?} by a rate limit"));
            }
            d
        }
        Checked::Verify(_) => "a password to check".into(),
        Checked::Answer(resp) => format!("refused {}", resp.status().as_u16()),
    });
    match checked {
        Checked::Next(delay) => {
            if let Some(user) = req.extensions().get::<AuthUser>() {
                log.user(&user.name);
            }
            Phases::Handler(target, hits, Go::After(delay))
        }
        Checked::Verify(v) => Phases::Handler(target, hits, Go::Verify(v)),
        Checked::Answer(resp) => Phases::Answer(resp, hits),
    }
}

/// What the phases before the handler decided.
enum Phases<'s> {
    /// Call this handler, as `Go` says; these header rules apply.
    Handler(&'s Target, Option<HeaderHits>, Go),
    /// A phase answered, and these header rules apply.
    Answer(Response<ResponseBody>, Option<HeaderHits>),
}

/// How the handler is reached once the phases let a request through.
enum Go {
    /// After a rate limit's delay (nginx's burst without nodelay: the
    /// request waits its turn); zero: at once.
    After(Duration),
    /// After a password check (authorize decides again once it is done).
    Verify(Box<Verify>),
}

/// The handler's future for `exchange`, reached as `go` says.
fn start(routes: &Arc<SiteRoutes>, target: &Target, exchange: Exchange, go: Go) -> HandlerFuture {
    match go {
        Go::After(delay) if delay.is_zero() => target.handler.call(exchange),
        Go::After(delay) => {
            let handler = target.handler.clone();
            HandlerFuture::new(async move {
                tokio::time::sleep(delay).await;
                handler.call(exchange).await
            })
        }
        Go::Verify(v) => HandlerFuture::new(verify_then_call(
            routes.clone(),
            target.clone(),
            exchange,
            v,
        )),
    }
}

/// Checks the password `v` on the blocking pool (at most [`CHECKING`] at
/// once), then decides the request and calls its handler, or answers.
async fn verify_then_call(
    routes: Arc<SiteRoutes>,
    target: Target,
    mut exchange: Exchange,
    v: Box<Verify>,
) -> Response<ResponseBody> {
    let checked = {
        let _slot = CHECKING.acquire().await;
        tokio::task::spawn_blocking(move || {
            let ok = v.run();
            (v, ok)
        })
        .await
    };
    let Ok((v, ok)) = checked else {
        tracing::error!(id = %exchange.id, "500: a password check failed to run");
        return error_response(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let access = routes
        .rules()
        .access
        .as_ref()
        .expect("a realm of this site asked for the check");
    let delay = match access.after_check(
        &v,
        ok,
        &mut exchange.request,
        &exchange.conn,
        exchange.path.as_str(),
    ) {
        Checked::Next(delay) => delay,
        Checked::Answer(resp) => return resp,
        Checked::Verify(_) => unreachable!("a checked password is not asked for again"),
    };
    let user = exchange.request.extensions().get::<AuthUser>().cloned();
    let mut resp = start(&routes, &target, exchange, Go::After(delay)).await;
    // For the access log, which this future cannot reach.
    if let Some(user) = user {
        resp.extensions_mut().insert(user);
    }
    resp
}

/// What following a handler's local redirect needs: the site as it is
/// now, the connection, the request's id.
struct Follow {
    shared: Arc<Shared>,
    conn: Arc<ConnInfo>,
    activity: Arc<Activity>,
    id: RequestId,
}

/// Where a followed local redirect leads.
enum Next {
    /// The next handler's future, the header rules of its path, and
    /// whether that handler may redirect in turn.
    Call(HandlerFuture, Option<HeaderHits>, bool),
    /// An answer (a phase's, or a loop's 500) and its header rules.
    Answer(Response<ResponseBody>, Option<HeaderHits>),
}

impl Follow {
    /// Runs the request a local redirect made through the phases again
    /// (rewrite, route, authorize) and calls its handler; or answers it.
    fn next(
        &self,
        redirect: InternalRedirect,
        extra: &mut Vec<(header::HeaderName, header::HeaderValue)>,
        log: &mut LogPhase,
    ) -> Next {
        let InternalRedirect { parts, mut path } = redirect;
        let hops = parts.extensions.get::<Redirected>().map_or(0, |r| r.hops);
        if hops > MAX_LOCAL_REDIRECTS {
            tracing::error!(id = %self.id, peer = %self.conn.peer, target = %parts.uri, "500: more than {MAX_LOCAL_REDIRECTS} local redirects");
            return Next::Answer(error_response(StatusCode::INTERNAL_SERVER_ERROR), None);
        }
        let site = self.shared.site.load();
        let mut req = Request::from_parts(parts, ());
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        let routes = site.router.site(host);
        // The rules' headers are the last request's.
        extra.clear();
        let (target, hits, go) = match phases(
            routes,
            &mut req,
            &self.conn,
            &self.activity.proven,
            &mut path,
            extra,
            log,
        ) {
            Phases::Handler(target, hits, go) => (target, hits, go),
            Phases::Answer(resp, hits) => return Next::Answer(resp, hits),
        };
        let (parts, ()) = req.into_parts();
        let exchange = Exchange {
            request: Request::from_parts(parts, RequestBody::empty()),
            path,
            conn: self.conn.clone(),
            route: target.route.clone(),
            id: self.id,
        };
        let again = target.handler.redirects_locally();
        Next::Call(start(routes, target, exchange, go), hits, again)
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
            self.activity.set_stays(true);
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
const DRAIN_TIME: Duration = Duration::from_secs(1);

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
    /// Set while the handler may answer with a local redirect to follow.
    follow: Option<Box<Follow>>,
    /// The connection writes a response's shared fields itself
    /// ([`RespFuture::writing_fields`]); else they are settled in its map.
    writes_fields: bool,
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
            follow: None,
            writes_fields: false,
        }
    }

    /// For a connection that writes a response's shared fields as they
    /// are (tern's HTTP/1 loop): they are left on the body.
    pub(crate) fn writing_fields(mut self) -> Self {
        self.writes_fields = true;
        self
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
                State::Pending(f) => {
                    let Poll::Ready(mut r) = Pin::new(f).poll(cx) else {
                        return Poll::Pending;
                    };
                    if let Some(follow) = &this.follow {
                        if let Some(redirect) = r.extensions_mut().remove::<InternalRedirect>() {
                            let log = this
                                .log
                                .as_mut()
                                .expect("RespFuture polled after completion");
                            match follow.next(redirect, &mut this.extra, log) {
                                Next::Call(fut, hits, again) => {
                                    this.hits = hits;
                                    if !again {
                                        this.follow = None;
                                    }
                                    this.state = State::Pending(fut);
                                    continue;
                                }
                                Next::Answer(resp, hits) => {
                                    this.hits = hits;
                                    r = resp;
                                }
                            }
                        }
                    }
                    match this.leftover.take().and_then(|l| l.take()) {
                        Some(rest) => {
                            this.state = State::Draining(Box::new(Drain {
                                resp: Some(r),
                                rest,
                                read: 0,
                                until: Box::pin(tokio::time::sleep(DRAIN_TIME)),
                            }));
                        }
                        None => break r,
                    }
                }
                State::Draining(d) => {
                    if d.poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    break d.resp.take().expect("RespFuture polled after completion");
                }
            }
        };
        let mut log = this.log.take().expect("RespFuture polled after completion");
        // The user a realm granted after a password check (the future that
        // checked it could not reach the log).
        if let Some(user) = resp.extensions_mut().remove::<AuthUser>() {
            log.user(&user.name);
        }
        if let Some(by) = resp.extensions_mut().remove::<ServedBy>() {
            log.served(by);
        }
        // Shared fields stay on the body only for tern's HTTP/1 writer,
        // which puts them in the map itself when a rule has set a field
        // there (`h1::write_response`, `tern_handler::SharedFields`).
        if !this.writes_fields {
            tern_handler::settle_fields(&mut resp);
        }
        if let Some(hits) = this.hits.take() {
            hits.apply(resp.headers_mut());
        }
        for (name, value) in this.extra.drain(..) {
            resp.headers_mut().insert(name, value);
        }
        log.status(resp.status());
        Poll::Ready(Ok(resp.map(|b| ServerBody::new(b, log))))
    }
}
