//! Serving one connection: the TLS handshake on a TLS listener, then
//! HTTP/1.1 or HTTP/2 (by ALPN, or prior knowledge detected from the first
//! bytes), with the connection's timeouts, graceful shutdown, and one log
//! line when it ends badly. HTTP/1 is served by tern's own loop (`h1.rs`)
//! until a request it leaves to hyper (CONNECT, an expectation other
//! than `100-continue`, a malformed head), or by hyper throughout with
//! `http1 = "hyper"`; HTTP/2 by hyper.
//!
//! The stack, bottom up: the socket (`Lazy`: out of the reactor until it
//! has to wait), `TimedIo` (timeouts: they count the handshake), TLS,
//! `Plaintext` (bytes read ahead, HTTP/1 versions, the held-back
//! half-close), `HpackGuard` on HTTP/2, the loop.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tern_config::{Http1, Limits};
use tern_handler::ConnInfo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

use crate::balance::Place;
use crate::h1::Ended;
use crate::hpack_guard::HpackGuard;
use crate::listen::{Accepted, Detached};
use crate::plaintext::Plaintext;
use crate::report::{read_first, report};
use crate::sendfile::SendFile;
use crate::service::{Shared, Svc};
use crate::timeout::{Activity, TimedIo, Timeouts};
use crate::tls;

/// hyper's smallest allowed read buffer.
const MIN_BUF: usize = 8192;

/// The HTTP/2 client preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// hyper's HTTP/1 connection builder for a set of limits. (HTTP/2's is
/// made per connection, with its executor: `h2.rs`.)
#[derive(Clone, Debug)]
pub(crate) struct Builders {
    h1: http1::Builder,
}

/// What of the limits the builders hold: the key of their cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BuilderLimits {
    max_header_bytes: usize,
    max_headers: usize,
}

impl BuilderLimits {
    fn of(limits: &Limits) -> Self {
        BuilderLimits {
            max_header_bytes: limits.max_header_bytes,
            max_headers: limits.max_headers,
        }
    }
}

thread_local! {
    /// This worker's builders for the limits last used: made once, not per
    /// connection (each holds a timer and an executor in an `Arc`).
    static BUILDERS: std::cell::RefCell<Option<(BuilderLimits, Builders)>> =
        const { std::cell::RefCell::new(None) };
}

impl Builders {
    /// Calls `f` with this thread's builders for `limits`.
    fn with<R>(limits: BuilderLimits, f: impl FnOnce(&Builders) -> R) -> R {
        BUILDERS.with(|cell| {
            let mut cached = cell.borrow_mut();
            let fresh = match cached.take() {
                Some((l, b)) if l == limits => b,
                _ => Builders::new(limits),
            };
            let r = f(&fresh);
            *cached = Some((limits, fresh));
            r
        })
    }

    fn new(limits: BuilderLimits) -> Self {
        let mut h1 = http1::Builder::new();
        h1.timer(TokioTimer::new())
            // Timeouts live in `TimedIo` (see timeout.rs).
            .header_read_timeout(None)
            .max_buf_size(limits.max_header_bytes.max(MIN_BUF))
            .max_headers(limits.max_headers)
            // No `half_close`: hyper would then never notice a client
            // that left mid-request. `TimedIo` holds back the EOF of one
            // that half-closed after asking to close.
            .keep_alive(true);
        Builders { h1 }
    }
}

/// A plain HTTP/1 connection taken off its worker between two requests,
/// for worker `to` (see balance.rs).
#[derive(Debug)]
pub(crate) struct Moved {
    pub(crate) stream: Detached,
    pub(crate) info: Arc<ConnInfo>,
    /// Bytes read and not yet served: the start of the next request.
    pub(crate) preread: Bytes,
    pub(crate) to: usize,
}

/// A connection's stream that can leave its worker: a plain socket under
/// its timeouts. A TLS stream cannot (its session state would have to go
/// with it), so it never moves.
pub(crate) trait Movable:
    AsyncRead + AsyncWrite + SendFile + Unpin + Send + 'static
{
    /// Whether the connection can move at all: only then is the balance
    /// asked, and [`Movable::detach`] called.
    const MOVES: bool;

    /// Whether ending the connection says so on the stream first (TLS's
    /// close_notify). A plain socket's close sends its FIN by itself: a
    /// `shutdown(2)` just before it was a system call for nothing, one of
    /// nine per connection-per-request. (Only while nothing is left
    /// unread: a socket closed with bytes unread resets. Where the client
    /// may still be sending, tern's loop reads it off first, `h1.rs`'s
    /// lingering close.)
    const SAYS_CLOSE: bool;

    /// The socket, off this worker's runtime.
    fn detach(self) -> std::io::Result<Detached>;
}

impl<I: Accepted> Movable for TimedIo<I> {
    const MOVES: bool = true;
    const SAYS_CLOSE: bool = false;

    fn detach(self) -> std::io::Result<Detached> {
        self.into_inner().detach()
    }
}

impl<T> Movable for tokio_rustls::server::TlsStream<T>
where
    T: AsyncRead + AsyncWrite + SendFile + Unpin + Send + 'static,
{
    const MOVES: bool = false;
    const SAYS_CLOSE: bool = true;

    fn detach(self) -> std::io::Result<Detached> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "a TLS connection does not move",
        ))
    }
}

/// Serves `io`, accepted on the server's listener number `listener`,
/// until the client is done, a timeout expires, or `cancel` asks for a
/// graceful stop (requests in flight finish; idle connections close at
/// once). On a TLS listener the handshake comes first, under the
/// header-read timeout. `moved_here` is set for a connection moved here
/// from another worker between requests (see [`Moved`]): the bytes read
/// of its next request, if any.
///
/// Returns the connection if it is to move to another worker.
pub(crate) async fn serve<I: Accepted>(
    io: I,
    mut conn: Arc<ConnInfo>,
    listener: usize,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    place: Place,
    moved_here: Option<Bytes>,
) -> Option<Moved> {
    let site = shared.site.load_full();
    let builders = BuilderLimits::of(&site.limits);
    let timeouts = Timeouts::new(
        site.limits.header_read_timeout,
        site.limits.keepalive_timeout,
        site.limits.send_timeout,
    );
    let tls = site.tls.get(listener).cloned().flatten();
    let http1 = site.http1;
    let send_timeout = site.limits.send_timeout;
    drop(site);
    let activity = Arc::new(Activity::default());
    let mut io = TimedIo::new(io, activity.clone(), timeouts);
    if moved_here.as_ref().is_some_and(Bytes::is_empty) {
        io = io.between_requests();
    }
    let http = Http {
        builders,
        send_timeout,
        http1,
        shared,
        listener,
        activity,
        cancel,
        place,
    };
    let Some(tls) = tls else {
        return http.serve(io, conn, moved_here).await;
    };
    // Boxed, as is HTTP/2's connection below: a connection's task holds
    // only the state of the path it takes (HTTP/1 keep-alive connections
    // are the many), not room for the largest of them.
    let handshake = Box::pin(tls::handshake(
        io,
        tls,
        // Not shared yet: no copy is made.
        Arc::make_mut(&mut conn),
        &http.activity,
        &http.cancel,
        http.shared.observer,
    ));
    let stream = handshake.await?;
    Box::pin(http.serve(stream, conn, None)).await
}

/// What serving HTTP on a connection needs, once any TLS is settled.
struct Http {
    builders: BuilderLimits,
    /// For HTTP/2's streams (`h2.rs`); HTTP/1's is in `TimedIo`.
    send_timeout: std::time::Duration,
    /// The HTTP/1 loop: hyper's, or tern's own first (`h1.rs`).
    http1: Http1,
    shared: Arc<Shared>,
    /// The listener's place in the server's list.
    listener: usize,
    activity: Arc<Activity>,
    cancel: CancellationToken,
    place: Place,
}

impl Http {
    /// Serves HTTP on `io`, the connection's (decrypted) stream.
    ///
    /// Without ALPN the protocol is told from the first bytes: the HTTP/2
    /// preface means HTTP/2 with prior knowledge, anything else HTTP/1. We
    /// read them ourselves (one read that usually holds the whole first
    /// request) and put them back, rather than use hyper-util's `auto`
    /// builder, which reads exactly 24 bytes first and so costs a second
    /// read on every new connection.
    ///
    /// A connection moved here (`moved_here`) speaks HTTP/1; its bytes
    /// read ahead come first.
    async fn serve<S: Movable>(
        self,
        io: S,
        conn: Arc<ConnInfo>,
        moved_here: Option<Bytes>,
    ) -> Option<Moved> {
        let Http {
            builders,
            send_timeout,
            http1,
            shared,
            listener,
            activity,
            cancel,
            place,
        } = self;
        // The protocol ALPN chose, on a TLS connection that negotiated one.
        let alpn = conn.tls.as_ref().and_then(|t| t.alpn);
        let svc = Svc {
            shared,
            listener,
            conn: conn.clone(),
            activity: activity.clone(),
        };
        let mut io = Plaintext::new(io, activity.clone());
        let mut first = BytesMut::new();
        let sniffed = match moved_here {
            Some(preread) => {
                first.extend_from_slice(&preread);
                false
            }
            None => {
                first.reserve(4096);
                loop {
                    if !read_first(&mut io, &mut first, &conn, &activity, &cancel).await {
                        return None;
                    }
                    let n = first.len().min(H2_PREFACE.len());
                    if first[..n] != H2_PREFACE[..n] {
                        break false;
                    }
                    if n == H2_PREFACE.len() {
                        break true;
                    }
                }
            }
        };
        let h2 = match alpn {
            Some(p) => p == "h2",
            None => sniffed,
        };
        // hyper reads `HTTP/1.2` to `HTTP/1.9` as errors: each head it
        // reads is settled first (`version.rs`). tern's loop parses them as
        // 1.1 itself; its heads are settled only once it hands the rest of
        // the connection to hyper.
        if !h2 && http1 != Http1::Tern {
            io.set_http1();
            crate::version::settle(&mut first);
        }
        let first = if !h2 && http1 == Http1::Tern {
            let ended = crate::h1::Loop {
                svc: &svc,
                cancel: &cancel,
                place: &place,
                moves: S::MOVES,
            }
            .run(&mut io, first)
            .await;
            match ended {
                Ended::ToHyper(rest) => {
                    io.set_http1();
                    let mut rest = BytesMut::from(rest);
                    crate::version::settle(&mut rest);
                    rest.freeze()
                }
                Ended::Closed => {
                    if S::SAYS_CLOSE {
                        let _ = io.shutdown().await;
                    }
                    return None;
                }
                Ended::Move { to, preread } => {
                    let (io, unread) = io.into_parts();
                    return moved(io, conn, preread, &unread, to);
                }
            }
        } else {
            first.freeze()
        };
        if h2 {
            io.unread(first);
            let io = HpackGuard::new(io);
            let max_header_bytes = builders.max_header_bytes;
            Box::pin(crate::h2::serve(
                io,
                svc,
                max_header_bytes,
                send_timeout,
                &cancel,
            ))
            .await;
            return None;
        }
        // Judged on the head hyper is to read first: another major
        // version is answered 505 there, and a request line longer than
        // a head may be 414, not hyper's 400 and 431.
        let refusal = Refusal::of(&first, builders.max_header_bytes);
        io.unread(first);
        // Boxed: a connection on tern's own loop keeps no room for
        // hyper's connection in its task (see `h1.rs`).
        Box::pin(hyper_http1(io, svc, builders, cancel, place, refusal)).await
    }
}

/// A first head tern answers itself where hyper would answer otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// A request line of a well-formed HTTP version other than 1.x
    /// (`HTTP/2.0`, `HTTP/0.9`): 505 (RFC 9110 §15.6.6, RFC 9112 §2.3), as
    /// nginx and Apache answer it; hyper says 400.
    Version,
    /// A request line longer than a whole head may be
    /// (`max_header_bytes`): 414, as nginx answers a line larger than its
    /// buffers (the target is what is long); hyper says 431. Seen only in
    /// what tern's loop hands over: hyper's loop reads its first head
    /// itself, past the bytes looked at here.
    LongLine,
}

impl Refusal {
    /// The refusal of the head `head` starts with, if any. tern's loop
    /// hands such heads over, as any it refuses; hyper's loop reads only
    /// the first head of a connection through here (a later one on a kept
    /// connection is hyper's 400 or 431).
    fn of(head: &[u8], max_head: usize) -> Option<Refusal> {
        if crate::version::unsupported(head) {
            Some(Refusal::Version)
        } else if tern_h1::line_too_long(head, max_head) {
            Some(Refusal::LongLine)
        } else {
            None
        }
    }

    /// The answer, and the log line that names it.
    fn answer(self) -> (&'static [u8], &'static str) {
        match self {
            Refusal::Version => (
                b"HTTP/1.1 505 HTTP Version Not Supported\r\n\
content-type: text/plain; charset=utf-8\r\ncontent-length: 27\r\nconnection: close\r\n\r\n\
HTTP version not supported\n",
                "505: a request line of an HTTP version other than 1.x",
            ),
            Refusal::LongLine => (
                b"HTTP/1.1 414 URI Too Long\r\n\
content-type: text/plain; charset=utf-8\r\ncontent-length: 17\r\nconnection: close\r\n\r\n\
414 URI Too Long\n",
                "414: request target longer than max_header_bytes (a request line larger than a head may be)",
            ),
        }
    }
}

/// Answers a first head tern refuses itself ([`Refusal`]), and closes: a
/// lingering close, since what follows the head is unknown.
async fn refuse<S: Movable>(
    mut io: Plaintext<S>,
    conn: &ConnInfo,
    cancel: &CancellationToken,
    refusal: Refusal,
) {
    let (answer, why) = refusal.answer();
    tracing::warn!(peer = %conn.peer, "{why}");
    if io.write_all(answer).await.is_ok() && io.shutdown().await.is_ok() {
        let (mut io, _unread) = io.into_parts();
        let stop = std::pin::pin!(cancel.cancelled());
        crate::h1::read_off(&mut io, stop, false).await;
    }
}

/// Serves the rest of an HTTP/1 connection through hyper; `refusal`: its
/// first head is answered by tern instead.
async fn hyper_http1<S: Movable>(
    io: Plaintext<S>,
    svc: Svc,
    builders: BuilderLimits,
    cancel: CancellationToken,
    place: Place,
    refusal: Option<Refusal>,
) -> Option<Moved> {
    if let Some(refusal) = refusal {
        refuse(io, &svc.conn, &cancel, refusal).await;
        return None;
    }
    let conn = svc.conn.clone();
    let activity = svc.activity.clone();
    let io = TokioIo::new(io);
    let mut served = Builders::with(builders, |b| b.h1.serve_connection(io, svc));
    let mut stop = std::pin::pin!(cancel.cancelled());
    let mut stopping = false;
    let mut moving = None;
    let mut seen = activity.started();
    // hyper ends through its shutdown, which flushes what it buffered
    // first (`poll_without_shutdown` does not: it can finish with the end
    // of an answer unsent, when the socket would not take it at once).
    // The shutdown leaves the socket of a connection that moves open
    // (plaintext.rs).
    let result = std::future::poll_fn(|cx| loop {
        if !stopping && stop.as_mut().poll(cx).is_ready() {
            Pin::new(&mut served).graceful_shutdown();
            stopping = true;
        }
        let r = Pin::new(&mut served).poll(cx);
        if r.is_ready() || stopping || !S::MOVES {
            return r;
        }
        // Between requests (a request ended since the last look, none
        // is in flight, and it left neither a body nor a close behind):
        // hyper is idle, and stopping it now closes nothing the client
        // can see (no `Connection: close` goes out).
        let started = activity.started();
        if started == seen || activity.busy() || activity.closing() || activity.stays() {
            return r;
        }
        seen = started;
        match place.balance.moves(place.me) {
            Some(to) => {
                moving = Some(to);
                stopping = true;
                activity.set_moving();
                Pin::new(&mut served).graceful_shutdown();
            }
            None => return r,
        }
    })
    .await;
    if let Err(e) = &result {
        report(e, &conn, activity.expired());
    }
    let parts = served.into_parts();
    let mut plain = parts.io.into_inner();
    if let (Ok(()), Some(to)) = (&result, moving) {
        let (io, unread) = plain.into_parts();
        return moved(io, conn, parts.read_buf, &unread, to);
    }
    if result.is_ok() && !plain.shut() {
        // hyper ends a connection whose requests had an `Upgrade` field
        // (any: it readies an upgrade, which tern never makes) without its
        // shutdown, which flushes: what it still buffered of the last
        // answer is lost, and this shutdown is the FIN that goes first.
        // tern's own loop serves such requests (`h1.rs`), so only `http1 =
        // "hyper"` ends here.
        let _ = plain.shutdown().await;
    }
    let client_sending = plain.shut_with_client_sending();
    let (mut io, unread) = plain.into_parts();
    // hyper shut the stream after its answer (after a parse error too:
    // the error is taken once its 400 went out), as tern's loop does; as
    // it, hyper's loop then reads off what the client may still send
    // (`h1.rs`'s lingering close): bytes read and not served, bytes the
    // socket says arrived, or a client that meant to go on (closed by
    // hyper: a malformed head, a body left unread, a body delimited by the
    // close). Not an idle connection closed for the stop with nothing
    // there: the stop would wait for it. The kernel is asked when the
    // readiness says nothing (`may_have_unread(true)`): this loop keeps no
    // size of its last answer, and it ends few connections.
    let may_leave_unread = client_sending
        && (!parts.read_buf.is_empty()
            || !unread.is_empty()
            || (!activity.closing() && !stopping)
            || io.may_have_unread(true));
    if may_leave_unread {
        crate::h1::read_off(&mut io, stop, stopping).await;
    }
    None
}

/// The connection, off this worker, for worker `to`: `read` and then
/// `unread` are the bytes read of its next request.
fn moved<S: Movable>(
    io: S,
    conn: Arc<ConnInfo>,
    read: Bytes,
    unread: &[u8],
    to: usize,
) -> Option<Moved> {
    let mut preread = BytesMut::from(&read[..]);
    preread.extend_from_slice(unread);
    match io.detach() {
        Ok(stream) => Some(Moved {
            stream,
            info: conn,
            preread: preread.freeze(),
            to,
        }),
        Err(e) => {
            tracing::warn!(peer = %conn.peer, "moving a connection to another worker: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// Every open connection holds its task: the TLS handshake, HTTP/2,
    /// hyper's HTTP/1 connection and each request's state on tern's own
    /// loop are boxed, so that the task of a connection waiting for its
    /// next request stays small (it was 10.6 KB with the first two inline,
    /// 4 KB with the last two).
    #[tokio::test]
    async fn a_connection_task_holds_no_room_for_paths_it_does_not_take() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = l.local_addr().unwrap();
        let c = tokio::net::TcpStream::connect(a).await.unwrap();
        let conn = tern_handler::ConnInfo {
            peer: tern_handler::PeerAddr::Tcp(a),
            local: tern_handler::PeerAddr::Tcp(a),
            secure: false,
            tls: None,
        };
        let site = crate::site::Site::for_test(crate::route::Router::new());
        let shared = Arc::new(crate::service::Shared::new(site));
        let place = super::Place {
            me: 0,
            balance: Arc::new(crate::balance::Balance::new(1).0),
        };
        // As the listener hands it over (see lazy.rs), registered here.
        let c = crate::lazy::Lazy::Polled(c);
        let task = super::serve(
            c,
            Arc::new(conn),
            0,
            shared,
            Default::default(),
            place,
            None,
        );
        let size = size_of_val(&task);
        assert!(size <= 1536, "a connection's task is {size} bytes");
    }
}
