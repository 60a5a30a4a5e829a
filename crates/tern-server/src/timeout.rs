//! Connection timeouts enforced in the I/O layer: the header-read timeout (a
//! request's head must arrive within it, from its first byte, or from accept
//! for the first request), the keep-alive idle timeout (an idle connection
//! between requests is closed after it), and the send timeout (a write of an
//! answer may wait at most that long for a client that takes none of it).
//!
//! The send timeout sits here, under TLS and both HTTP loops, so that one
//! rule covers every way an answer goes out: a copy, `sendfile`, HTTP/2's
//! frames. Without it a client that asks and never reads holds its
//! connection, and what serves it (a script's slot), for as long as it
//! likes. Its timer is made the first time a write waits (most connections
//! never wait on one) and armed when a write starts waiting: the clock is
//! read once per wait, never per write.
//!
//! Why here and not hyper's `header_read_timeout`: hyper starts that timer as
//! soon as the connection waits for a head, so an idle keep-alive connection
//! and a slow client share one timeout, and it re-arms a timer on every
//! request. Here the timer is lazy: it is only moved earlier when a deadline
//! moves earlier (a new head started arriving but is incomplete), so a busy
//! keep-alive connection arms nothing per request.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::{Instant, Sleep};

/// What the service tells the I/O layer: how many requests are in flight
/// (from head parsed to response body finished), and which timeout closed
/// the connection.
#[derive(Debug)]
pub(crate) struct Activity {
    /// When the connection was accepted; `last_end` counts from here.
    base: Instant,
    /// Nanoseconds from `base` to the end of the latest request.
    last_end: AtomicU64,
    in_flight: AtomicU32,
    /// Requests started so far (wrapping): lets the I/O layer notice requests
    /// that began and ended between two of its reads.
    started: AtomicU32,
    expired: AtomicU8,
    /// The request in flight asked for the connection to close after it
    /// (`Connection: close`, or HTTP/1.0 without keep-alive): a FIN from
    /// the client then only half-closes, and the answer is still wanted.
    closing: AtomicBool,
    /// The latest request came with a body, or its answer closes the
    /// connection: hyper may not be idle after it (reading off the body,
    /// or closing), and the connection must not move to another worker
    /// (it would take the body, or requests pipelined behind the close,
    /// for a new request there).
    stays: AtomicBool,
    /// The connection leaves this worker between two requests: ending
    /// HTTP on it leaves the socket open (see plaintext.rs).
    moving: AtomicBool,
    /// The credentials the connection proved last (the authorize phase's
    /// memo; empty, and 8 bytes, on a site without realms).
    pub(crate) proven: std::sync::Mutex<tern_rules::access::Proven>,
}

/// Which timeout closed a connection (its number in `Activity::expired`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Expired {
    /// A request head did not arrive in time (slow client).
    HeaderRead = 1,
    /// An idle keep-alive connection (normal).
    Idle = 2,
    /// A write of an answer waited longer than the send timeout: the
    /// client stopped reading.
    Send = 3,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            base: Instant::now(),
            last_end: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
            started: AtomicU32::new(0),
            expired: AtomicU8::new(0),
            closing: AtomicBool::new(false),
            stays: AtomicBool::new(false),
            moving: AtomicBool::new(false),
            proven: std::sync::Mutex::default(),
        }
    }
}

impl Activity {
    /// Says whether the request beginning asked to close the connection
    /// after it (see `closing`).
    pub(crate) fn set_closing(&self, closing: bool) {
        self.closing.store(closing, Ordering::Relaxed);
    }

    /// Says whether the connection must stay on its worker after the
    /// latest request (see `stays`).
    pub(crate) fn set_stays(&self, stays: bool) {
        self.stays.store(stays, Ordering::Relaxed);
    }

    /// Whether the connection must stay on its worker after the latest
    /// request.
    pub(crate) fn stays(&self) -> bool {
        self.stays.load(Ordering::Relaxed)
    }

    pub(crate) fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn end(&self) {
        let nanos = self.base.elapsed().as_nanos() as u64;
        self.last_end.store(nanos, Ordering::Relaxed);
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    fn last_end(&self) -> Instant {
        self.base + Duration::from_nanos(self.last_end.load(Ordering::Relaxed))
    }

    /// Whether a request is in flight.
    pub(crate) fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// Requests begun so far (wrapping).
    pub(crate) fn started(&self) -> u32 {
        self.started.load(Ordering::Relaxed)
    }

    /// Whether the request in flight asked to close the connection.
    pub(crate) fn closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Says that the connection moves to another worker (see `moving`).
    pub(crate) fn set_moving(&self) {
        self.moving.store(true, Ordering::Relaxed);
    }

    /// Whether the connection moves to another worker.
    pub(crate) fn moving(&self) -> bool {
        self.moving.load(Ordering::Relaxed)
    }

    /// Notes that `which` closes the connection; the error that ends it.
    fn expire(&self, which: Expired) -> io::Error {
        self.expired.store(which as u8, Ordering::Relaxed);
        io::Error::new(
            io::ErrorKind::TimedOut,
            match which {
                Expired::HeaderRead => "the client did not send a request head in time",
                Expired::Idle => "keep-alive idle timeout",
                Expired::Send => "the client did not read its answer within send_timeout",
            },
        )
    }

    pub(crate) fn expired(&self) -> Option<Expired> {
        match self.expired.load(Ordering::Relaxed) {
            1 => Some(Expired::HeaderRead),
            2 => Some(Expired::Idle),
            3 => Some(Expired::Send),
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

/// Timeouts for one connection, in milliseconds: each connection's task
/// holds them, in 12 bytes where three `Duration`s took 48.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    header_read: u32,
    keepalive: u32,
    send: u32,
}

impl Timeouts {
    /// The timeouts, to the millisecond (at most 49 days each).
    pub(crate) const fn new(header_read: Duration, keepalive: Duration, send: Duration) -> Self {
        const fn millis(d: Duration) -> u32 {
            let ms = d.as_millis();
            if ms > u32::MAX as u128 {
                u32::MAX
            } else {
                ms as u32
            }
        }
        Timeouts {
            header_read: millis(header_read),
            keepalive: millis(keepalive),
            send: millis(send),
        }
    }

    fn header_read(self) -> Duration {
        Duration::from_millis(self.header_read.into())
    }

    fn keepalive(self) -> Duration {
        Duration::from_millis(self.keepalive.into())
    }

    fn send(self) -> Duration {
        Duration::from_millis(self.send.into())
    }
}

/// An I/O object with the connection's timeouts.
#[derive(Debug)]
pub(crate) struct TimedIo<T> {
    io: T,
    activity: std::sync::Arc<Activity>,
    timeouts: Timeouts,
    phase: Phase,
    /// `Activity::started` when the phase was last decided.
    seen: u32,
    sleep: Pin<Box<Sleep>>,
    /// The armed timer may lie further off than a keep-alive from now (a
    /// head's deadline, when `header_read` is the longer).
    beyond_idle: bool,
    /// The send timeout's timer, made the first time a write waits.
    send_sleep: Option<Pin<Box<Sleep>>>,
    /// A write is waiting for the socket: `send_sleep` counts from when
    /// it began.
    write_waiting: bool,
}

impl<T> TimedIo<T> {
    /// The same, for a connection between requests (one moved from
    /// another worker): the keep-alive timeout applies until a head starts.
    pub(crate) fn between_requests(mut self) -> Self {
        self.phase = Phase::Idle(Instant::now());
        self
    }

    /// The connection under the timeouts.
    pub(crate) fn into_inner(self) -> T {
        self.io
    }

    pub(crate) fn new(io: T, activity: std::sync::Arc<Activity>, timeouts: Timeouts) -> Self {
        let now = Instant::now();
        let deadline = now + timeouts.header_read();
        TimedIo {
            io,
            activity,
            timeouts,
            phase: Phase::Head(now),
            seen: 0,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            beyond_idle: true,
            send_sleep: None,
            write_waiting: false,
        }
    }

    /// A write's outcome, timed (`write_through!`): a write that waits
    /// starts the send timeout, unless one already waits; any write that
    /// ends stops it. When it expires the write fails, and the connection
    /// with it.
    fn write_timed(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        if written.is_ready() {
            self.write_waiting = false;
            return written;
        }
        if !self.write_waiting {
            self.write_waiting = true;
            let deadline = Instant::now() + self.timeouts.send();
            match &mut self.send_sleep {
                Some(sleep) => sleep.as_mut().reset(deadline),
                None => self.send_sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        let expired = (self.send_sleep.as_mut()).is_some_and(|s| s.as_mut().poll(cx).is_ready());
        if !expired {
            return Poll::Pending;
        }
        Poll::Ready(Err(self.activity.expire(Expired::Send)))
    }

    /// Called when a read would block: decides the deadline and arms the
    /// timer, or reports that the deadline has passed.
    /// Marks the phase `Busy` if requests ran since the phase was decided,
    /// so that what follows them is judged afresh.
    fn sync(&mut self) {
        let started = self.activity.started.load(Ordering::Relaxed);
        if started != self.seen {
            self.seen = started;
            self.phase = Phase::Busy;
        }
    }

    /// Called when a read would block: decides the deadline and arms the
    /// timer, or reports that the deadline has passed. While a request is in
    /// flight the timer is only a re-check point (the connection task is not
    /// woken when a request ends, so the check happens when the timer fires).
    ///
    /// The clock is read only where the timer cannot answer: when it is not
    /// armed (it fired, or was never set) and a deadline is to be judged or a
    /// re-check point set, and when the armed timer may lie further off than
    /// a keep-alive from now. A wait that is not over reads none (three
    /// clock reads a keep-alive request did): an armed timer is earlier than
    /// the deadline or reset to it, and when it fires the deadline is judged
    /// then.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.sync();
        loop {
            let armed = !self.sleep.is_elapsed();
            let (deadline, which) = if self.activity.busy() {
                self.phase = Phase::Busy;
                // Any armed timer within a keep-alive from now is a
                // re-check point already.
                if armed && !self.beyond_idle {
                    return match self.sleep.as_mut().poll(cx) {
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(()) => continue,
                    };
                }
                (Instant::now() + self.timeouts.keepalive(), None)
            } else {
                match self.phase {
                    Phase::Busy => {
                        let since = self.activity.last_end();
                        self.phase = Phase::Idle(since);
                        (since + self.timeouts.keepalive(), Some(Expired::Idle))
                    }
                    Phase::Idle(since) => (since + self.timeouts.keepalive(), Some(Expired::Idle)),
                    Phase::Head(since) => (
                        since + self.timeouts.header_read(),
                        Some(Expired::HeaderRead),
                    ),
                }
            };
            if let (Some(which), false) = (which, armed) {
                if Instant::now() >= deadline {
                    return Poll::Ready(Err(self.activity.expire(which)));
                }
            }
            // Lazy: a timer set for later than the deadline is moved earlier;
            // one set earlier is left, and re-evaluated when it fires. (One
            // moved to a deadline already past fires at once.)
            if !armed || self.sleep.deadline() > deadline {
                self.sleep.as_mut().reset(deadline);
                self.beyond_idle = which == Some(Expired::HeaderRead)
                    && self.timeouts.header_read > self.timeouts.keepalive;
            } else if which.is_none() {
                // Kept as the re-check point: it is within a keep-alive
                // from now.
                self.beyond_idle = false;
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
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
                    self.sync();
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

write_through!(TimedIo, write_timed);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    fn timed(
        timeouts: Timeouts,
    ) -> (
        TimedIo<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        Arc<Activity>,
    ) {
        let (ours, theirs) = tokio::io::duplex(1024);
        let activity = Arc::new(Activity::default());
        (
            TimedIo::new(ours, activity.clone(), timeouts),
            theirs,
            activity,
        )
    }

    const SHORT: Timeouts = Timeouts::new(
        Duration::from_millis(50),
        Duration::from_millis(50),
        Duration::from_millis(50),
    );

    #[tokio::test]
    async fn a_head_that_does_not_come_is_a_header_read_timeout() {
        let (mut io, _client, activity) = timed(SHORT);
        let mut buf = [0u8; 16];
        let e = io.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(activity.expired(), Some(Expired::HeaderRead));
    }

    #[tokio::test]
    async fn an_idle_connection_after_a_request_is_an_idle_timeout() {
        let (mut io, mut client, activity) = timed(SHORT);
        client.write_all(b"GET").await.unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(io.read(&mut buf).await.unwrap(), 3);
        activity.begin();
        activity.end();
        let e = io.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(activity.expired(), Some(Expired::Idle));
    }

    #[tokio::test]
    async fn no_read_timeout_applies_while_a_request_is_in_flight() {
        let (mut io, mut client, activity) = timed(SHORT);
        activity.begin();
        let mut buf = [0u8; 16];
        let waited = tokio::time::timeout(Duration::from_millis(200), io.read(&mut buf)).await;
        assert!(waited.is_err(), "the read ended: {waited:?}");
        client.write_all(b"x").await.unwrap();
        assert_eq!(io.read(&mut buf).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_write_that_waits_longer_than_the_send_timeout_fails() {
        let (mut io, _client, activity) = timed(SHORT);
        activity.begin();
        // More than the pipe holds, to a client that reads none of it.
        let e = io.write_all(&[0u8; 4096]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(activity.expired(), Some(Expired::Send));
    }

    /// The send timeout counts one wait, not the whole answer: a client
    /// that reads slowly, a little at a time, gets all of it, however long
    /// that takes in all.
    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_gets_all_of_the_answer() {
        let (mut io, mut client, activity) = timed(Timeouts::new(
            Duration::from_millis(50),
            Duration::from_millis(50),
            Duration::from_millis(500),
        ));
        activity.begin();
        let reader = tokio::spawn(async move {
            let mut got = 0;
            let mut buf = [0u8; 256];
            while got < 16 << 10 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                got += client.read(&mut buf).await.unwrap();
            }
            got
        });
        // 64 reads of 256 bytes, 20 ms apart: longer in all than the
        // timeout, each wait far shorter.
        io.write_all(&[0u8; 16 << 10]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 16 << 10);
        assert_eq!(activity.expired(), None);
    }

    /// A request that ends while a head's longer deadline is armed leaves
    /// the connection to the keep-alive timeout, not to that deadline: the
    /// re-check point set while it ran is a keep-alive away, whatever timer
    /// was armed before.
    #[tokio::test]
    async fn a_request_that_ends_leaves_the_connection_to_the_idle_timeout() {
        let (mut io, mut client, activity) = timed(Timeouts::new(
            Duration::from_secs(30),
            Duration::from_millis(50),
            Duration::from_secs(30),
        ));
        client.write_all(b"GET").await.unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(io.read(&mut buf).await.unwrap(), 3);
        activity.begin();
        let read = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            let r = io.read(&mut buf).await;
            (r, client)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        activity.end();
        let (r, _client) = tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("the head's deadline applied, not the keep-alive timeout")
            .unwrap();
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert_eq!(activity.expired(), Some(Expired::Idle));
    }
}
