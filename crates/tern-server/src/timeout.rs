//! Connection timeouts enforced in the I/O layer: the header-read timeout (a
//! request's head must arrive within it, from its first byte, or from accept
//! for the first request) and the keep-alive idle timeout (an idle connection
//! between requests is closed after it).
//!
//! Why here and not hyper's `header_read_timeout`: hyper starts that timer as
//! soon as the connection waits for a head, so an idle keep-alive connection
//! and a slow client share one timeout, and it re-arms a timer on every
//! request. Here the timer is lazy: it is only moved earlier when a deadline
//! moves earlier (a new head started arriving but is incomplete), so a busy
//! keep-alive connection arms nothing per request.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// What the service tells the I/O layer: how many requests are in flight
/// (from head parsed to response body finished), and which timeout closed
/// the connection.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    in_flight: AtomicU32,
    expired: AtomicU8,
}

/// Which timeout closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expired {
    /// A request head did not arrive in time (slow client).
    HeaderRead,
    /// An idle keep-alive connection (normal).
    Idle,
}

impl Activity {
    pub(crate) fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn end(&self) {
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    pub(crate) fn expired(&self) -> Option<Expired> {
        match self.expired.load(Ordering::Relaxed) {
            1 => Some(Expired::HeaderRead),
            2 => Some(Expired::Idle),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Waiting for (the rest of) a request head that started at this instant.
    Head(Instant),
    /// Between requests since this instant.
    Idle(Instant),
    /// A request is in flight; no timeout applies to reads.
    Busy,
}

/// Timeouts for one connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    pub(crate) header_read: Duration,
    pub(crate) keepalive: Duration,
}

/// An I/O object with the connection's read timeouts.
#[derive(Debug)]
pub(crate) struct TimedIo<T> {
    io: T,
    activity: std::sync::Arc<Activity>,
    timeouts: Timeouts,
    phase: Phase,
    sleep: Pin<Box<Sleep>>,
}

impl<T> TimedIo<T> {
    pub(crate) fn new(io: T, activity: std::sync::Arc<Activity>, timeouts: Timeouts) -> Self {
        let now = Instant::now();
        let deadline = now + timeouts.header_read;
        TimedIo {
            io,
            activity,
            timeouts,
            phase: Phase::Head(now),
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }

    /// Called when a read would block: decides the deadline and arms the
    /// timer, or reports that the deadline has passed.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.activity.busy() {
            self.phase = Phase::Busy;
            return Poll::Pending;
        }
        let now = Instant::now();
        let (deadline, which) = match self.phase {
            Phase::Busy => {
                self.phase = Phase::Idle(now);
                (now + self.timeouts.keepalive, Expired::Idle)
            }
            Phase::Idle(since) => (since + self.timeouts.keepalive, Expired::Idle),
            Phase::Head(since) => (since + self.timeouts.header_read, Expired::HeaderRead),
        };
        loop {
            if now >= deadline {
                self.activity.expired.store(
                    if which == Expired::HeaderRead { 1 } else { 2 },
                    Ordering::Relaxed,
                );
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    match which {
                        Expired::HeaderRead => "the client did not send a request head in time",
                        Expired::Idle => "keep-alive idle timeout",
                    },
                )));
            }
            // Lazy: a timer set for later than the deadline is moved earlier;
            // one set earlier is left, and re-armed when it fires.
            if self.sleep.deadline() > deadline || self.sleep.is_elapsed() {
                self.sleep.as_mut().reset(deadline);
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Fired early (armed for an older, earlier deadline): loop re-arms.
            if Instant::now() < deadline {
                self.sleep.as_mut().reset(deadline);
                continue;
            }
            return self.poll_deadline(cx);
        }
    }
}

use std::future::Future;

impl<T: AsyncRead + Unpin> AsyncRead for TimedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    if let Phase::Idle(_) | Phase::Busy = self.phase {
                        if !self.activity.busy() {
                            // A new request head starts arriving.
                            self.phase = Phase::Head(Instant::now());
                        }
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                ready!(self.poll_deadline(cx))?;
                Poll::Pending
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TimedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
