//! HTTP/2 connections: hyper's, with a watch on streams whose client does
//! not take their answer.
//!
//! A client can open streams and never their flow-control windows while it
//! goes on reading the socket. No write waits, so `TimedIo`'s send timeout
//! never sees it, and each stream holds what its answer made ready (hyper
//! takes a chunk of the body before it waits for the window; `h2` keeps
//! what the window did not let go) for as long as the client likes: a
//! script's slot, a file's chunks, up to 128 streams a connection. nginx
//! resets such a stream after its `send_timeout`; so does tern.
//!
//! hyper runs each stream in a task of its own, through the connection's
//! executor ([`StreamExec`]), which makes it abortable. Its answer's body
//! ([`Marked`]) hands out frame-sized pieces and marks, each time hyper
//! asks it for more, whether it handed one out: hyper asks again once the
//! window had room for it. The connection's task looks at the marks every
//! quarter of `send_timeout`, and a stream that held a piece, not asked
//! for more, at four looks in a row is cut: its task ends, and `h2` resets
//! the stream (CANCEL) and lets go of what it buffered of it. So a stalled
//! stream ends between one and one and a quarter `send_timeout`s after its
//! client last opened its window by a piece; the connection and its other
//! streams go on.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::{AbortHandle, Abortable};
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::body::ServerBody;
use crate::report::report;
use crate::service::{RespFuture, Svc};
use crate::timeout::Activity;

/// Streams an HTTP/2 connection runs at once.
const MAX_STREAMS: u32 = 128;

/// Looks at a held chunk, in a row, that cut its stream; the connection
/// looks every `send_timeout / LOOKS`.
const LOOKS: u8 = 4;

/// Serves HTTP/2 on `io` until the client is done, an error, or `cancel`
/// (a graceful stop: the streams in flight finish).
pub(crate) async fn serve<I>(
    io: I,
    svc: Svc,
    max_header_bytes: usize,
    send_timeout: Duration,
    cancel: &CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = svc.conn.clone();
    let activity: Arc<Activity> = svc.activity.clone();
    let watch = Arc::new(Watch::default());
    let mut builder = http2::Builder::new(StreamExec {
        watch: watch.clone(),
    });
    builder
        .timer(TokioTimer::new())
        .max_header_list_size(max_header_bytes.min(u32::MAX as usize) as u32)
        .max_concurrent_streams(MAX_STREAMS);
    let svc = H2Svc {
        svc,
        watch: watch.clone(),
    };
    let mut served = builder.serve_connection(TokioIo::new(io), svc);
    let mut served = Pin::new(&mut served);
    let period = (send_timeout / u32::from(LOOKS)).max(Duration::from_millis(1));
    let mut looks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    looks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stop = std::pin::pin!(cancel.cancelled());
    let mut stopping = false;
    let result = std::future::poll_fn(|cx| {
        if !stopping && stop.as_mut().poll(cx).is_ready() {
            served.as_mut().graceful_shutdown();
            stopping = true;
        }
        while looks.poll_tick(cx).is_ready() {
            let cut = watch.look();
            if cut > 0 {
                tracing::warn!(peer = %conn.peer, streams = cut, "HTTP/2 stream reset: the client did not take its answer within send_timeout");
            }
        }
        served.as_mut().poll(cx)
    })
    .await;
    if let Err(e) = result {
        report(&e, &conn, activity.expired());
    }
}

/// A stream's mark: whether its body handed out a chunk the last time it
/// was asked, and whether it was asked since the connection last looked.
#[derive(Debug, Default)]
struct Held {
    state: AtomicU8,
    /// Looks in a row that found a chunk held and no ask (the
    /// connection's task alone changes it).
    quiet: AtomicU8,
    /// Ends the stream's task.
    abort: std::sync::OnceLock<AbortHandle>,
}

/// `Held::state`: the body's last answer was a chunk.
const HANDED: u8 = 1;
/// `Held::state`: the body was asked since the last look.
const ASKED: u8 = 2;

impl Held {
    fn mark(&self, handed: bool) {
        let handed = if handed { HANDED } else { 0 };
        self.state.store(ASKED | handed, Ordering::Relaxed);
    }

    /// Looks once: whether the stream has now held its chunk too long.
    fn stalled(&self) -> bool {
        let state = self.state.fetch_and(!ASKED, Ordering::Relaxed);
        if state != HANDED {
            self.quiet.store(0, Ordering::Relaxed);
            return false;
        }
        let quiet = self.quiet.load(Ordering::Relaxed) + 1;
        self.quiet.store(quiet, Ordering::Relaxed);
        quiet >= LOOKS
    }
}

/// The marks of a connection's streams.
#[derive(Debug, Default)]
struct Watch {
    marks: Mutex<Marks>,
    /// The mark of the stream hyper just called the service for, until
    /// hyper hands its task to the executor (it does both in one go, on
    /// the connection's task).
    next: Mutex<Option<Arc<Held>>>,
}

#[derive(Debug, Default)]
struct Marks {
    /// Each stream's mark, weakly: its body holds it.
    live: Vec<Weak<Held>>,
    /// `live`'s length at which the ended streams are taken out.
    prune_at: usize,
}

impl Watch {
    /// A new stream's mark.
    fn enlist(&self) -> Arc<Held> {
        let held = Arc::new(Held::default());
        {
            let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
            if marks.live.len() >= marks.prune_at {
                marks.live.retain(|w| w.strong_count() > 0);
                marks.prune_at = (2 * marks.live.len()).max(2 * MAX_STREAMS as usize);
            }
            marks.live.push(Arc::downgrade(&held));
        }
        *self.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(held.clone());
        held
    }

    /// The mark of the stream whose task is to start.
    fn take_next(&self) -> Option<Arc<Held>> {
        self.next.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Looks at every stream's mark, and cuts the streams stalled too
    /// long: how many.
    fn look(&self) -> usize {
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        let mut cut = 0;
        marks.live.retain(|w| {
            let Some(held) = w.upgrade() else {
                return false;
            };
            if !held.stalled() {
                return true;
            }
            if let Some(abort) = held.abort.get() {
                abort.abort();
                cut += 1;
            }
            false
        });
        cut
    }
}

/// The executor of a connection's stream tasks: each runs abortable, its
/// handle on its stream's mark.
#[derive(Clone, Debug)]
struct StreamExec {
    watch: Arc<Watch>,
}

impl<F> hyper::rt::Executor<F> for StreamExec
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, fut: F) {
        let Some(held) = self.watch.take_next() else {
            tokio::spawn(fut);
            return;
        };
        let (abort, registration) = AbortHandle::new_pair();
        let _ = held.abort.set(abort);
        let task = Abortable::new(fut, registration);
        tokio::spawn(async move {
            let _ = task.await;
        });
    }
}

/// The service of an HTTP/2 connection: tern's, with each answer's body
/// marked.
#[derive(Clone, Debug)]
struct H2Svc {
    svc: Svc,
    watch: Arc<Watch>,
}

impl hyper::service::Service<Request<Incoming>> for H2Svc {
    type Response = Response<Marked>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, req: Request<Incoming>) -> Answer {
        Answer {
            fut: self.svc.call(req),
            held: Some(self.watch.enlist()),
        }
    }
}

/// [`H2Svc`]'s answer.
struct Answer {
    fut: RespFuture,
    held: Option<Arc<Held>>,
}

impl Future for Answer {
    type Output = Result<Response<Marked>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Poll::Ready(Ok(resp)) = Pin::new(&mut this.fut).poll(cx) else {
            return Poll::Pending;
        };
        let held = this.held.take();
        Poll::Ready(Ok(resp.map(|body| Marked {
            body,
            rest: Bytes::new(),
            held,
        })))
    }
}

/// The most of an answer's bytes [`Marked`] hands out at once, but for the
/// last: one frame of `h2`'s default size. hyper sends a chunk once the
/// stream's window has room for a byte of it, then asks for the next: in
/// pieces this size, any window update of 16 KiB or more is seen as an
/// ask, so a slow reader is told from one that stopped.
const PIECE: usize = 16 * 1024;

/// A response body that hands out its chunks in [`PIECE`]s, and marks,
/// each time it is asked, whether it handed one out.
struct Marked {
    body: ServerBody,
    /// What is left of the body's last chunk.
    rest: Bytes,
    held: Option<Arc<Held>>,
}

impl Body for Marked {
    type Data = Bytes;
    type Error = <ServerBody as Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let polled = if this.rest.is_empty() {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    // The last chunk goes whole: hyper hands it to `h2`
                    // and the stream's task ends (a cached file's body is
                    // one chunk, shared with the cache).
                    Ok(data) if data.len() > PIECE && !this.body.is_end_stream() => {
                        this.rest = data;
                        Poll::Ready(Some(Ok(Frame::data(this.rest.split_to(PIECE)))))
                    }
                    Ok(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                    Err(frame) => Poll::Ready(Some(Ok(frame))),
                },
                other => other,
            }
        } else {
            let take = this.rest.len().min(PIECE);
            Poll::Ready(Some(Ok(Frame::data(this.rest.split_to(take)))))
        };
        if let Some(held) = &this.held {
            let handed = matches!(&polled, Poll::Ready(Some(Ok(f)))
                if f.data_ref().is_some_and(|d| !d.is_empty()));
            held.mark(handed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let body = self.body.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        if let Some(upper) = body.upper() {
            hint.set_upper(upper + rest);
        }
        hint.set_lower(body.lower() + rest);
        hint
    }
}
