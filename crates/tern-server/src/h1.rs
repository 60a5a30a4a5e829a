//! tern's own HTTP/1.1 connection loop, on `tern-h1`'s codec: the
//! default (`[server] http1 = "hyper"` leaves every request to hyper).
//!
//! It serves HTTP/1.1 and 1.0 requests (1.0 answered 1.0, as hyper
//! does), with or without a body (`Content-Length` or `chunked`, and
//! `Expect: 100-continue`), an `Upgrade` field ignored (tern upgrades to
//! nothing); not CONNECT, or another expectation. At the first request it
//! does not serve itself it hands the connection to hyper with every byte
//! read and not yet served, and hyper serves the rest of the connection
//! as it always did. A head the codec refuses goes to hyper the same way,
//! so a malformed request is answered exactly as before (the same status,
//! the same log line); a request line of another HTTP major version
//! (`HTTP/2.0`) is answered 505 on that way (`conn.rs`), not hyper's 400.
//! The codec's framing decisions are hyper's or stricter (`tern-h1`'s
//! doc, its differential test), so the new path can be no looser than
//! hyper; what it changes is the cost of the common request: the head
//! parsed in place, no dispatcher, the response head and a small body in
//! one write.
//!
//! A request body goes to the handler as the loop decodes it (a
//! [`BodySender`](tern_handler::BodySender), `h1/feed.rs`): what one read
//! brought, and the next read only once the handler took it all (a body
//! that came with its head is there at the handler's first look). `100
//! Continue` is sent when the handler first asks for the body, as hyper
//! sends it; a handler that answers without asking never makes the client
//! send its body. tern's handlers read a body whole before their answer's
//! head, or never (the scripts' request buffering), so the loop feeds the
//! body while the handler works and settles the rest once the answer is
//! there: what of it has arrived is discarded and the connection goes on; a
//! body still arriving closes the connection after the answer, which goes
//! out first. Whenever the client may still be sending as the connection
//! closes (that body, requests pipelined behind one that closes, a client
//! that meant to go on), the loop then reads and discards what it sends
//! for a while (nginx's lingering close), so that the reset of a socket
//! closed with bytes unread does not destroy the answer before the client
//! has read it.
//!
//! What it keeps from hyper's loop, with the same pieces underneath
//! (`Plaintext` over `TimedIo`, the service's phases): pipelining (heads
//! already read are served in order), the header-read and keep-alive
//! timeouts, a client that half-closes after asking to close still gets
//! its answer, a client that leaves mid-request stops the handler (its
//! future is dropped), a graceful stop closes idle connections at once and
//! answers a request in flight with `connection: close`, and the balance
//! may move the connection to another worker between two requests.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use http::{header, Method, Request, Version};
use http_body::Body as _;
use tern_h1::{BodyEncoding, BodyLength, DateCache, Parsed, ResponseHead};
use tern_handler::pin_boxed;
use tern_handler::worth_sending_from_file;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio_util::either::Either;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::balance::Place;
use crate::body::ServerBody;
use crate::report::report;
use crate::sendfile::{send_file, write_more, SendFile};
use crate::service::{NoBody, Svc};
use crate::timeout::Activity;

mod feed;
mod gather;

use feed::{pump, Feed, LoopBody};
use gather::Gather;

/// The most body bytes copied behind the head into the write buffer; a
/// large frame is written from its own buffer, beside what is pending
/// (one vectored write, `h1/gather.rs`).
const COALESCE: usize = 16 << 10;

/// A head's bytes besides the handler's fields: the status line, the
/// framing, `date`, `connection` and the empty line.
const HEAD_ROOM: usize = 128;

/// Room kept free in the read buffer before a read.
const READ_ROOM: usize = 4096;

/// After an answer that closes a connection the client may still be
/// sending on ([`may_leave_unread`]): how long what the client still
/// sends is read and discarded at most, and the longest silence that ends
/// it sooner (nginx's `lingering_time` and `lingering_timeout`, shorter).
const LINGER: Duration = Duration::from_secs(5);
const LINGER_SILENCE: Duration = Duration::from_secs(1);

/// The most a read into the worker's scratch buffer takes (see [`read_some`]).
const SCRATCH: usize = 8192;

/// Drains begun in this process, by any server.
static DRAINS_BEGUN: AtomicU64 = AtomicU64::new(0);

/// Counts a drain about to begin: the server calls it before it cancels
/// its drain token, so that a connection woken by that cancel finds the
/// count moved and looks at its token.
pub(crate) fn count_drain() {
    DRAINS_BEGUN.fetch_add(1, Ordering::SeqCst);
}

/// How many drains have begun in this process: a connection waiting
/// between requests needs to look at its own drain token again only when
/// this has moved (a plain load, where the token takes two locks).
fn drains_begun() -> u64 {
    DRAINS_BEGUN.load(Ordering::SeqCst)
}

/// The wall clock's second, for `Date` (which names only the second), from
/// the kernel's coarse clock: read from the vDSO without the time counter,
/// and in seconds already. `SystemTime::now` and its subtraction down to
/// seconds since the epoch cost about 100 instructions a response more.
/// The coarse clock lags the fine one by at most a tick (1-4 ms).
fn unix_second() -> u64 {
    match crate::clock::read(libc::CLOCK_REALTIME_COARSE) {
        Some(t) => u64::try_from(t.tv_sec).unwrap_or(0),
        // Not on this kernel (before 2.6.32): the fine clock.
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    }
}

thread_local! {
    /// The `Date` value, formatted once a second per worker.
    static DATE: RefCell<DateCache> = RefCell::new(DateCache::new());
    /// Where an idle connection's next read lands (see [`read_some`]).
    static SCRATCH_BUF: RefCell<Box<[u8]>> = RefCell::new(vec![0; SCRATCH].into_boxed_slice());
    /// The buffers the last connection to go idle gave back (see [`Spare`]).
    static SPARE: RefCell<Spare> = RefCell::new(Spare::default());
}

/// A worker's read and write buffers between requests. A connection that
/// waits for its next request holds no buffer; the next request of any
/// connection on the worker takes these, not two new ones: an allocation,
/// a grow and a free each, about 250 instructions of a cached file's
/// request (docs/PERFORMANCE.md, session 37). One of each a worker.
#[derive(Default)]
struct Spare {
    buf: BytesMut,
    out: BytesMut,
}

impl Spare {
    /// Keeps a connection's emptied buffers, when there is room for them
    /// and they are not large (a large one is freed, as before).
    fn give(buf: &mut BytesMut, out: &mut BytesMut) {
        let keep = |slot: &mut BytesMut, b: &mut BytesMut| {
            let b = std::mem::take(b);
            if slot.capacity() == 0 && b.capacity() <= COALESCE * 2 {
                *slot = b;
                slot.clear();
            }
        };
        SPARE.with_borrow_mut(|s| {
            keep(&mut s.buf, buf);
            keep(&mut s.out, out);
        });
    }

    /// `b`, when it holds no allocation, swapped for the spare one.
    fn take(b: &mut BytesMut, slot: fn(&mut Spare) -> &mut BytesMut) {
        if b.capacity() == 0 {
            SPARE.with_borrow_mut(|s| std::mem::swap(b, slot(s)));
        }
    }
}

/// How the loop ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The connection is over: the client left, an error (reported), a
    /// response that closes it, or the server stopping.
    Closed,
    /// hyper serves the rest: these bytes were read and not served (the
    /// head of the request the loop does not serve, and anything after).
    ToHyper(Bytes),
    /// To move to worker `to` between two requests, with the bytes read
    /// of the next request.
    Move {
        /// The worker.
        to: usize,
        /// Bytes read and not yet served.
        preread: Bytes,
    },
}

/// What the loop needs besides the stream.
pub(crate) struct Loop<'a> {
    pub(crate) svc: &'a Svc,
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) place: &'a Place,
    /// Whether the stream can move to another worker.
    pub(crate) moves: bool,
}

/// The codec's limits from the site's.
fn limits(l: &tern_config::Limits) -> tern_h1::Limits {
    tern_h1::Limits {
        max_head_bytes: l.max_header_bytes,
        max_headers: l.max_headers,
        // Targets beyond this are refused by the admission phase (414),
        // on the same path as hyper's requests.
        max_target: tern_h1::MAX_TARGET_CAP,
        ..tern_h1::Limits::default()
    }
}

/// Whether the loop serves this request itself (see the module doc).
///
/// An `Upgrade` field is served here too, and ignored, as RFC 9110 (7.8)
/// lets a server that goes on in its protocol: tern upgrades to nothing.
/// (hyper, which would answer the same, readies an upgrade for any
/// `Upgrade` field and then ends the connection without its shutdown: no
/// FIN first, and what of the answer it still buffers is lost; `conn.rs`.)
fn serves(p: &Parsed) -> bool {
    matches!(p.version, Version::HTTP_11 | Version::HTTP_10)
        && p.method != Method::CONNECT
        // `100-continue` on a request with a body; any other expectation
        // (or that one where it means nothing) is hyper's.
        && (!p.has_expect || p.expect_continue)
}

/// A connection's bytes in and out, and its wait for the server's stop.
struct Wire<'w, 'c, S> {
    io: &'w mut S,
    /// Read and not yet served.
    buf: BytesMut,
    /// The response being written.
    out: BytesMut,
    /// One wait for the stop for the whole connection: registered once,
    /// polled when the connection would wait anyway (a wait made per read
    /// registered and removed a waiter on the server's one stop, under its
    /// lock, on every request).
    stop: Pin<&'w mut WaitForCancellationFuture<'c>>,
    /// The stop was asked for: the request in flight is the last.
    stopping: bool,
    /// [`drains_begun`] when the wait for the stop was last polled between
    /// requests (see [`Loop::next`]).
    stop_seen: Option<u64>,
}

impl Loop<'_> {
    /// Serves requests from `io`, starting with the bytes in `buf`.
    pub(crate) async fn run<S>(&self, io: &mut S, buf: BytesMut) -> Ended
    where
        S: AsyncRead + AsyncWrite + SendFile + Unpin,
    {
        let activity: &Activity = &self.svc.activity;
        let limits = limits(&self.svc.shared.site.load().limits);
        let stop = std::pin::pin!(self.cancel.cancelled());
        let mut w = Wire {
            io,
            buf,
            out: BytesMut::new(),
            stop,
            stopping: false,
            stop_seen: None,
        };
        loop {
            let next = match self.next(&mut w, &limits).await {
                Ok(next) => next,
                Err(ended) => return ended,
            };
            // Boxed: the task of a connection waiting for its next request
            // keeps no room for a request's state (the handler's future,
            // the response): an allocator round trip per request costs
            // less than a kilobyte and a half held per idle connection.
            // Apart: a request without a body (the many) carries no room
            // for a body's feed. (Made before the wait, not awaited in the
            // match: the request matched would be kept across it.)
            let exchange = match next {
                Next::Plain(req, asked) => {
                    Either::Left(pin_boxed(|| self.exchange(&mut w, req, asked)))
                }
                Next::Fed(req, asked, feed) => {
                    Either::Right(pin_boxed(|| self.exchange_fed(&mut w, req, asked, feed)))
                }
            };
            if !exchange.await {
                return Ended::Closed;
            }
            // Between two requests: the balance may move the connection.
            if self.moves && !activity.busy() && !activity.closing() {
                if let Some(to) = self.place.balance.moves(self.place.me) {
                    return Ended::Move {
                        to,
                        preread: w.buf.split().freeze(),
                    };
                }
            }
            // A connection with nothing read ahead holds no buffers while
            // it waits (hyper keeps 16 KiB per idle connection): it leaves
            // them with its worker, for the next request there.
            if w.buf.is_empty() {
                Spare::give(&mut w.buf, &mut w.out);
            } else if w.out.capacity() > COALESCE * 2 {
                w.out = BytesMut::new();
            }
        }
    }

    /// The next request the loop serves, reading until its head is in:
    /// `Err` when the connection ends or goes to hyper first.
    async fn next<S>(
        &self,
        w: &mut Wire<'_, '_, S>,
        limits: &tern_h1::Limits,
    ) -> Result<Next, Ended>
    where
        S: AsyncRead + AsyncWrite + SendFile + Unpin,
    {
        loop {
            // The parsed head never lives across the read below: the task
            // of every idle connection would keep room for it.
            match tern_h1::parse_head(&w.buf, limits) {
                Ok(Some(p)) if serves(&p) => {
                    w.buf.advance(p.head_len);
                    return Ok(request(p, limits));
                }
                Ok(Some(_)) | Err(_) => return Err(Ended::ToHyper(w.buf.split().freeze())),
                Ok(None) => {}
            }
            // The read first, then the stop. Its wait is polled once, which
            // leaves the task's waker with the stop, and again only once a
            // drain has begun since: each poll takes the token's lock and
            // its waiters' lock (four locked instructions a request). A
            // drain counts itself before it cancels, so the poll its wake
            // brings sees the count moved.
            let read = {
                let Wire {
                    io,
                    buf,
                    stop,
                    stopping,
                    stop_seen,
                    ..
                } = &mut *w;
                let mut read = std::pin::pin!(read_some(&mut **io, buf));
                std::future::poll_fn(|cx| {
                    if let Poll::Ready(r) = Future::poll(read.as_mut(), cx) {
                        return Poll::Ready(Some(r));
                    }
                    if !*stopping {
                        let drains = drains_begun();
                        if *stop_seen != Some(drains) {
                            *stop_seen = Some(drains);
                            if Future::poll(stop.as_mut(), cx).is_ready() {
                                return Poll::Ready(None);
                            }
                        }
                    }
                    Poll::Pending
                })
                .await
            };
            let Some(read) = read else {
                w.stopping = true;
                // Idle: close now. Within a head: read on, and answer it
                // with `connection: close`.
                if w.buf.is_empty() {
                    return Err(Ended::Closed);
                }
                continue;
            };
            if self.gone(read) {
                return Err(Ended::Closed);
            }
        }
    }

    /// Whether a read says the client is gone: the end of its stream, or
    /// an error (reported, as the connection's end).
    fn gone(&self, read: std::io::Result<usize>) -> bool {
        match read {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => {
                report(&e, &self.svc.conn, self.svc.activity.expired());
                true
            }
        }
    }

    /// Answers one request without a body and writes the answer, reading
    /// ahead meanwhile: a client that leaves stops the handler, as under
    /// hyper; a pipelined head waits in `buf`. Whether the connection goes
    /// on.
    async fn exchange<S>(&self, w: &mut Wire<'_, '_, S>, req: Request<NoBody>, asked: Asked) -> bool
    where
        S: AsyncRead + AsyncWrite + SendFile + Unpin,
    {
        let mut answer = std::pin::pin!(self.svc.respond(req, !asked.keep_alive).writing_fields());
        let resp = loop {
            tokio::select! {
                biased;
                r = &mut answer => break r.unwrap_or_else(|never| match never {}),
                () = &mut w.stop, if !w.stopping => w.stopping = true,
                read = w.io.read_buf(&mut w.buf), if w.buf.len() < asked.max_head => {
                    if self.gone(read) {
                        return false;
                    }
                }
            }
        };
        let keep_alive = asked.keep_alive && !w.stopping;
        let large = large(&resp);
        // Awaited here, not in a shared async fn: a future less to poll
        // on the path of the many (0.4% of a cached file's instructions).
        let written = match write_response(w.io, &mut w.out, resp, &asked, keep_alive).await {
            Ok(going_on) => sent(w.io).await.map(|()| going_on),
            Err(e) => Err(e),
        };
        let answered = written.is_ok();
        let going_on = self.went_on(written);
        if answered && !going_on && may_leave_unread(&asked, w, true, large) {
            linger(w).await;
        }
        going_on
    }

    /// Answers one request with a body, fed to its handler as it arrives
    /// (`h1/feed.rs`), and writes the answer: as [`Loop::exchange`], with
    /// what is left of the body settled once the answer is there, and the
    /// connection closed (without a reset) when the body was still
    /// arriving.
    async fn exchange_fed<S>(
        &self,
        w: &mut Wire<'_, '_, S>,
        req: Request<LoopBody>,
        asked: Asked,
        mut feed: Box<Feed>,
    ) -> bool
    where
        S: AsyncRead + AsyncWrite + SendFile + Unpin,
    {
        feed.prime(&mut w.buf);
        let mut answer = std::pin::pin!(self.svc.respond(req, !asked.keep_alive).writing_fields());
        let resp = loop {
            tokio::select! {
                biased;
                r = &mut answer => break r.unwrap_or_else(|never| match never {}),
                () = &mut w.stop, if !w.stopping => w.stopping = true,
                read = pump(w.io, &mut w.buf, &mut feed, asked.max_head) => {
                    if self.gone(read) {
                        return false;
                    }
                }
            }
        };
        // Only a body read to its end leaves the next request where the
        // buffer says.
        let whole = feed.settle(&mut w.buf);
        let keep_alive = asked.keep_alive && !w.stopping && whole;
        let large = large(&resp);
        let written = match write_response(w.io, &mut w.out, resp, &asked, keep_alive).await {
            Ok(going_on) => sent(w.io).await.map(|()| going_on),
            Err(e) => Err(e),
        };
        let answered = written.is_ok();
        let going_on = self.went_on(written);
        if answered && !going_on && may_leave_unread(&asked, w, whole, large) {
            linger(w).await;
        }
        going_on
    }

    /// Whether the connection goes on after an answer was written (or
    /// failed to be).
    fn went_on(&self, written: std::io::Result<bool>) -> bool {
        written.unwrap_or_else(|e| {
            report(&e, &self.svc.conn, self.svc.activity.expired());
            false
        })
    }
}

/// A request the loop serves: without a body, or with one and its feed.
enum Next {
    Plain(Request<NoBody>, Asked),
    Fed(Request<LoopBody>, Asked, Box<Feed>),
}

/// Whether a connection closed after its answer may leave bytes the client
/// sent unread in the socket (nginx's heuristic for its lingering close,
/// the same way): a body still arriving (not `whole`), heads read ahead
/// and not to be served, bytes the socket says arrived since the last
/// read, or a client that meant to go on (closed by the server: stopping,
/// the handler, a body delimited by the close), which may be sending its
/// next request. Where the socket's readiness says nothing (it may be
/// stale, or kept by a socket that never waited), the kernel is asked with
/// a system call only after a `large` answer, where the reset would throw
/// away what of it the send queue still holds; a small one left in one
/// write, and the close of every connection-per-request client asking for
/// one costs no more.
fn may_leave_unread<S: SendFile>(
    asked: &Asked,
    w: &Wire<'_, '_, S>,
    whole: bool,
    large: bool,
) -> bool {
    !whole || asked.keep_alive || !w.buf.is_empty() || w.io.may_have_unread(large)
}

/// Whether an answer is more than rides behind its head in one write (see
/// [`may_leave_unread`]).
fn large(resp: &http::Response<ServerBody>) -> bool {
    resp.body()
        .size_hint()
        .exact()
        .is_none_or(|n| n > COALESCE as u64)
}

/// The connection's sending side closed after an answer that may leave
/// bytes unread ([`may_leave_unread`]), then what the client still sends
/// read off ([`read_off`]).
async fn linger<S>(w: &mut Wire<'_, '_, S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if w.io.shutdown().await.is_ok() {
        read_off(w.io, w.stop.as_mut(), w.stopping).await;
    }
}

/// After the server closed its side of a connection the client may still
/// be sending on: what arrives is read and discarded, at most for
/// [`LINGER`] and until the client is silent for [`LINGER_SILENCE`], or
/// the server stops (`stop`, unless it already has: `stopped`). Closed
/// with bytes unread, the socket would reset, and a reset can destroy the
/// answer before the client has read it (RFC 9112, 9.6). Both HTTP/1
/// loops end this way (hyper's in `conn.rs`).
pub(crate) async fn read_off<S>(
    io: &mut S,
    mut stop: Pin<&mut WaitForCancellationFuture<'_>>,
    stopped: bool,
) where
    S: AsyncRead + Unpin,
{
    let until = tokio::time::Instant::now() + LINGER;
    loop {
        let deadline = until.min(tokio::time::Instant::now() + LINGER_SILENCE);
        tokio::select! {
            biased;
            () = &mut stop, if !stopped => return,
            read = tokio::time::timeout_at(deadline, discard_some(io)) => match read {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            },
        }
    }
}

/// Reads what the client sent into the worker's scratch buffer, and
/// forgets it.
async fn discard_some<S>(io: &mut S) -> std::io::Result<usize>
where
    S: AsyncRead + Unpin,
{
    std::future::poll_fn(|cx| {
        SCRATCH_BUF.with_borrow_mut(|scratch| {
            let mut read = ReadBuf::new(scratch);
            std::task::ready!(Pin::new(&mut *io).poll_read(cx, &mut read))?;
            Poll::Ready(Ok(read.filled().len()))
        })
    })
    .await
}

/// The request the service is given, from its parsed head (consumed here,
/// so that no part of it is kept across a wait), with the feed of its
/// body.
fn request(parsed: Parsed, limits: &tern_h1::Limits) -> Next {
    let asked = Asked {
        head: parsed.method == Method::HEAD,
        keep_alive: parsed.keep_alive,
        version: parsed.version,
        max_head: limits.max_head_bytes,
    };
    match parsed.framing {
        tern_h1::Framing::None | tern_h1::Framing::Length(0) => {
            Next::Plain(head_only(parsed, NoBody), asked)
        }
        framing => {
            let (feed, body) = Feed::new(framing, parsed.expect_continue, limits);
            Next::Fed(head_only(parsed, LoopBody(body)), asked, Box::new(feed))
        }
    }
}

/// The request of a parsed head, with `body`.
fn head_only<B>(parsed: Parsed, body: B) -> Request<B> {
    let mut req = Request::new(body);
    *req.method_mut() = parsed.method;
    *req.uri_mut() = parsed.target;
    *req.version_mut() = parsed.version;
    *req.headers_mut() = parsed.headers;
    req
}

/// What a request's head asked of its answer.
#[derive(Clone, Copy, Debug)]
struct Asked {
    /// A HEAD request: the answer has no body.
    head: bool,
    /// The client keeps the connection after it.
    keep_alive: bool,
    /// The request's version, the answer's: HTTP/1.0 is answered 1.0
    /// (no chunked framing; kept open only when it asked to be).
    version: Version,
    /// Read ahead (pipelined heads) at most this much meanwhile.
    max_head: usize,
}

/// Reads what the client sent into `buf`. An empty `buf` is a connection
/// waiting for its next request, often for seconds: the read lands in the
/// worker's scratch buffer and only what arrived is copied into `buf`, so
/// a connection holds no read buffer while it waits (a buffer reserved
/// before the read would be held for the whole wait).
async fn read_some<S>(io: &mut S, buf: &mut BytesMut) -> std::io::Result<usize>
where
    S: AsyncRead + Unpin,
{
    if !buf.is_empty() {
        if buf.capacity() - buf.len() < READ_ROOM {
            buf.reserve(READ_ROOM);
        }
        return io.read_buf(buf).await;
    }
    std::future::poll_fn(|cx| {
        SCRATCH_BUF.with_borrow_mut(|scratch| {
            let mut read = ReadBuf::new(scratch);
            std::task::ready!(Pin::new(&mut *io).poll_read(cx, &mut read))?;
            Spare::take(buf, |s| &mut s.buf);
            buf.extend_from_slice(read.filled());
            Poll::Ready(Ok(read.filled().len()))
        })
    })
    .await
}

/// Writes one response: its head, and its body framed as the head says.
/// `Ok(false)` when the connection closes after it.
async fn write_response<S>(
    io: &mut S,
    out: &mut BytesMut,
    resp: http::Response<ServerBody>,
    asked: &Asked,
    keep_alive: bool,
) -> std::io::Result<bool>
where
    S: AsyncWrite + SendFile + Unpin,
{
    let head_request = asked.head;
    let (mut parts, mut body) = resp.into_parts();
    let mut shared = body.take_fields();
    if let (Some(f), None) = (&shared, body.size_hint().exact()) {
        // A stream's length may be a shared `Content-Length`: read from
        // the map below.
        tern_handler::settle_into(&mut parts.headers, f);
        shared = None;
    }
    // As hyper: an empty body is "no body"; on an answer to HEAD or a
    // 304 the handler's own `Content-Length` then stands (it describes
    // the representation), elsewhere the length is 0.
    let length = if body.is_end_stream() {
        if head_request || parts.status == http::StatusCode::NOT_MODIFIED {
            BodyLength::Unknown
        } else {
            BodyLength::Known(0)
        }
    } else {
        match body.size_hint().exact() {
            Some(n) => BodyLength::Known(n),
            // As hyper: the handler's `Content-Length` delimits a body of
            // unknown length (a script that announced its own).
            None => declared_length(&parts.headers).map_or(BodyLength::Unknown, BodyLength::Known),
        }
    };
    // Shared fields go out as the lines they were encoded to, when nothing
    // stands beside them that they could clash with; else they join the
    // map (`tern_handler::SharedFields`).
    let lines = match shared.as_deref() {
        Some(f) if parts.headers.is_empty() && !tern_h1::bodiless(parts.status) => {
            f.lines_for(match length {
                BodyLength::Known(n) => Some(n),
                BodyLength::Unknown => None,
            })
        }
        _ => None,
    };
    if let (None, Some(f)) = (lines, &shared) {
        tern_handler::settle_into(&mut parts.headers, f);
    }
    let head = ResponseHead {
        status: parts.status,
        reason: parts
            .extensions
            .get::<hyper::ext::ReasonPhrase>()
            .map(|r| r.as_bytes()),
        version: asked.version,
        lines: lines.unwrap_or_default(),
        lines_length: lines.is_some() && shared.as_ref().is_some_and(|f| f.has_length()),
        headers: &parts.headers,
        body: length,
        head_request,
        keep_alive,
    };
    out.clear();
    // Room for the head, and for a body small enough to ride behind it,
    // in one allocation: grown field by field from empty (as it is after
    // an idle wait), the buffer was reallocated five times.
    let fields: usize = head.lines.len()
        + (parts.headers.iter())
            .map(|(n, v)| n.as_str().len() + v.len() + 4)
            .sum::<usize>();
    let head_room = HEAD_ROOM + fields;
    Spare::take(out, |s| &mut s.out);
    let behind = match length {
        BodyLength::Known(n) if head_room as u64 + n <= COALESCE as u64 => n as usize,
        _ => 0,
    };
    out.reserve(head_room + behind);
    let encoded = DATE.with_borrow_mut(|date| {
        tern_h1::encode_response_head(out, &head, date.at_second(unix_second()))
    });
    let chunked = encoded.body == BodyEncoding::Chunked;
    // A large body that a file holds goes from the file (`sendfile.rs`).
    if let (true, BodyEncoding::Length(n)) = (S::SENDS_FILES, encoded.body) {
        if worth_sending_from_file(n) {
            if let Some(region) = body.take_file() {
                if !encoded.keep_alive {
                    io.hold_tail();
                }
                let mut sent = 0;
                let result = send_file(io, out, &region, &mut sent).await;
                body.sent(sent);
                result?;
                return Ok(encoded.keep_alive);
            }
        }
    }
    let mut left = match encoded.body {
        BodyEncoding::None => {
            // Not sent, but finished: the log phase runs as the body drops.
            drop(body);
            write_last(io, out, &mut Gather::default(), encoded.keep_alive).await?;
            return Ok(encoded.keep_alive);
        }
        BodyEncoding::Length(n) => Some(n),
        BodyEncoding::Chunked | BodyEncoding::CloseDelimited => None,
    };
    let mut trailers_sent = false;
    // Frames ready together leave together: the large ones from their
    // own buffers, beside what `out` gathers (`h1/gather.rs`).
    let mut gather = Gather::default();
    loop {
        // What is gathered in `out` (the head, small frames behind it)
        // goes out before the body is waited for: a streamed body's bytes
        // reach the client as the handler makes them (a server-sent
        // event, a script's progress), and frames ready at once still
        // leave together.
        let ready = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx)));
        let frame = match ready.await {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                gather.write(io, out).await?;
                sent(io).await?;
                std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
            }
        };
        let frame = match frame {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                // The head is out or about to be: all the client can be
                // told now is that the body ended short.
                gather.write(io, out).await?;
                return Err(std::io::Error::other(format!("response body failed: {e}")));
            }
        };
        let data: Bytes = match frame.into_data() {
            Ok(d) => d,
            Err(frame) => {
                if let (true, Ok(trailers)) = (chunked, frame.into_trailers()) {
                    tern_h1::encode_last_chunk(out, Some(&trailers));
                    trailers_sent = true;
                }
                continue;
            }
        };
        if data.is_empty() {
            continue;
        }
        if let Some(n) = &mut left {
            if data.len() as u64 > *n {
                gather.write(io, out).await?;
                return Err(std::io::Error::other(
                    "response body longer than its content-length",
                ));
            }
            *n -= data.len() as u64;
        }
        if chunked {
            tern_h1::encode_chunk_header(out, data.len());
        }
        gather.push(out, data, COALESCE);
        if chunked {
            out.extend_from_slice(tern_h1::CHUNK_END);
        }
        if gather.full() {
            gather.write(io, out).await?;
        }
    }
    if left.is_some_and(|n| n > 0) {
        gather.write(io, out).await?;
        return Err(std::io::Error::other(
            "response body shorter than its content-length",
        ));
    }
    if chunked && !trailers_sent {
        tern_h1::encode_last_chunk(out, None);
    }
    let going_on = encoded.keep_alive && encoded.body != BodyEncoding::CloseDelimited;
    write_last(io, out, &mut gather, going_on).await?;
    Ok(going_on)
}

/// Writes the end of an answer, what `out` and `gather` hold. On a
/// connection that ends after it (not `going_on`), the last segment is
/// held back for the close, whose FIN it then carries: one packet fewer
/// each way, for the client and, over loopback, for the server, whose
/// send runs the client's receive (3-3.5 µs a connection measured,
/// docs/PERFORMANCE.md, session 44). Sent with `MSG_MORE` when it is one
/// buffer, corked ([`SendFile::hold_tail`]) when it is several.
async fn write_last<S>(
    io: &mut S,
    out: &mut BytesMut,
    gather: &mut Gather,
    going_on: bool,
) -> std::io::Result<()>
where
    S: AsyncWrite + SendFile + Unpin,
{
    if going_on || !S::SENDS_FILES || (out.is_empty() && gather.is_empty()) {
        return gather.write(io, out).await;
    }
    if gather.is_empty() {
        write_more(io, out).await?;
        out.clear();
        return Ok(());
    }
    io.hold_tail();
    gather.write(io, out).await
}

/// Waits until what was written is on its way: over TLS a write may leave
/// records in the session that the socket had no room for, and a read
/// never sends them, so an answer's tail would wait for the next write or
/// the connection's end. A stream that can send files is a plain socket
/// whose layers write through: nothing to wait for there.
async fn sent<S>(io: &mut S) -> std::io::Result<()>
where
    S: AsyncWrite + SendFile + Unpin,
{
    if S::SENDS_FILES {
        return Ok(());
    }
    io.flush().await
}

/// The one `Content-Length` a handler set, if it is a number.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let v = values.next()?;
    if values.next().is_some() {
        return None;
    }
    tern_h1::digits(v.as_bytes())
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};
    use std::task::Context;
    use std::time::Duration;

    use http_body::Frame;
    use tern_handler::{ConnInfo, PeerAddr, ResponseBody};

    use super::*;
    use crate::phase::log::{LogPhase, Sinks};

    #[test]
    fn the_coarse_second_is_the_wall_clock_s() {
        let fine = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        };
        let before = fine();
        let coarse = unix_second();
        let after = fine();
        // A tick behind at most: the second before, or the same.
        assert!(
            before.saturating_sub(1) <= coarse && coarse <= after,
            "{before} {coarse} {after}"
        );
    }

    /// A stream that keeps what is written until it is flushed, as a TLS
    /// session keeps records the socket had no room for.
    struct Holding {
        held: Vec<u8>,
        sent: Arc<Mutex<Vec<u8>>>,
    }

    impl AsyncWrite for Holding {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            self.held.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<std::io::Result<()>> {
            let held = std::mem::take(&mut self.held);
            self.sent.lock().unwrap().extend_from_slice(&held);
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            self.poll_flush(cx)
        }
    }

    impl SendFile for Holding {
        const SENDS_FILES: bool = false;
    }

    /// A body that has one piece ready and then waits (a program that
    /// wrote an event and has nothing more yet).
    struct OneThenWaits(Option<Bytes>);

    impl http_body::Body for OneThenWaits {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            match self.0.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => Poll::Pending,
            }
        }
    }

    /// What a streamed body has given reaches the client before the next
    /// piece is waited for, also through a stream that holds writes until
    /// flushed (TLS): without the flush the event waited for the
    /// program's next write.
    #[tokio::test]
    async fn a_streamed_piece_is_flushed_before_the_next_is_waited_for() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let mut io = Holding {
            held: Vec::new(),
            sent: sent.clone(),
        };
        let body = ResponseBody::stream(OneThenWaits(Some(Bytes::from_static(b"data: one\n\n"))));
        let (resp, asked) = answer(body, true);
        let mut out = BytesMut::new();
        tokio::select! {
            r = write_response(&mut io, &mut out, resp, &asked, true) => panic!("the body ended: {r:?}"),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let sent = String::from_utf8(sent.lock().unwrap().clone()).unwrap();
        assert!(sent.starts_with("HTTP/1.1 200 OK\r\n"), "{sent:?}");
        assert!(sent.ends_with("data: one\n\n\r\n"), "{sent:?}");
    }

    /// `body`'s answer to an HTTP/1.1 GET, as the loop has it to write.
    fn answer(body: ResponseBody, keep_alive: bool) -> (http::Response<ServerBody>, Asked) {
        let conn = ConnInfo {
            peer: PeerAddr::Tcp("127.0.0.1:40000".parse().unwrap()),
            local: PeerAddr::Tcp("127.0.0.1:8080".parse().unwrap()),
            secure: false,
            tls: None,
        };
        let req = Request::new(());
        let activity = Arc::new(Activity::default());
        let log = LogPhase::arm(&Sinks::default(), &activity, &req, &conn, 1);
        let asked = Asked {
            head: false,
            keep_alive,
            version: Version::HTTP_11,
            max_head: 8192,
        };
        (http::Response::new(ServerBody::new(body, log)), asked)
    }

    /// The segments a client's socket received (`tcpi_segs_in`, Linux's
    /// `struct tcp_info` past the fields libc declares: at byte 140).
    fn segments_in(client: &std::net::TcpStream) -> u32 {
        use std::os::fd::AsRawFd as _;
        let mut info = [0u8; 256];
        let mut len = info.len() as libc::socklen_t;
        #[allow(unsafe_code)]
        // SAFETY: `info` is writable for `len` bytes, which the kernel
        // writes at most and sets to the count written.
        let r = unsafe {
            libc::getsockopt(
                client.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
        assert!(len >= 144, "a kernel without tcpi_segs_in");
        u32::from_ne_bytes(info[140..144].try_into().unwrap())
    }

    /// Writes `body`'s answer on a loopback connection as the loop does,
    /// closing it after unless `keep_alive`, and returns what the client
    /// read to the end and the segments that brought it (after the
    /// handshake's).
    async fn answer_counting_segments(body: ResponseBody, keep_alive: bool) -> (Vec<u8>, u32) {
        use std::io::Read as _;
        let (mut io, mut client) = crate::lazy::tests::pair();
        // As tern's listener gives it (listen.rs).
        if let crate::lazy::Lazy::Plain(server) = &io {
            server.set_nodelay(true).unwrap();
        }
        let before = segments_in(&client);
        let (resp, asked) = answer(body, keep_alive);
        let mut out = BytesMut::new();
        let going_on = write_response(&mut io, &mut out, resp, &asked, keep_alive)
            .await
            .unwrap();
        assert_eq!(going_on, keep_alive);
        // The connection ends here either way: what the loop does after
        // its last answer.
        drop(io);
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        (got, segments_in(&client) - before)
    }

    /// On a connection that ends after its answer, the answer's last
    /// segment carries the FIN, on each way an answer is written: one
    /// buffer (`MSG_MORE`), several frames, a file (corked). The same
    /// answers on a connection that goes on are pushed at once, and the
    /// close then sends the FIN alone: the control that shows the count
    /// sees the difference.
    #[tokio::test]
    async fn the_last_answer_on_a_connection_carries_its_fin() {
        carries_its_fin(
            "one buffer",
            || ResponseBody::full("hello"),
            b"\r\n\r\nhello",
        )
        .await;
        let frames = || {
            ResponseBody::pieces(vec![
                Bytes::from(vec![b'a'; 6000]),
                Bytes::from(vec![b'b'; 6000]),
            ])
        };
        carries_its_fin("frames", frames, &[b'b'; 6000]).await;
        let file = || {
            let mut f = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut f, &[b'f'; 20_000]).unwrap();
            ResponseBody::full(vec![b'f'; 20_000]).with_file(Arc::new(f), 0)
        };
        carries_its_fin("a file", file, &[b'f'; 20_000]).await;
    }

    /// See [`the_last_answer_on_a_connection_carries_its_fin`]: `body`'s
    /// answer, which ends with `end`.
    async fn carries_its_fin(what: &str, body: impl Fn() -> ResponseBody, end: &[u8]) {
        let (got, closing) = answer_counting_segments(body(), false).await;
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"), "{what}");
        assert!(got.ends_with(end), "{what}: cut short");
        let (got_too, going_on) = answer_counting_segments(body(), true).await;
        assert!(got_too.ends_with(end), "{what}: cut short");
        assert_eq!(
            closing + 1,
            going_on,
            "{what}: {closing} segments closing, {going_on} going on"
        );
    }
}
