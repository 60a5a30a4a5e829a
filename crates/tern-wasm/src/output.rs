//! Where a module's stdout and stderr go. Stdout is a [`Pipe`]: each write
//! is a chunk sent to the handler through a bounded channel, so the
//! response streams while the module runs and a slow client slows the
//! module down rather than filling memory. Stderr is a [`Capture`]: a
//! bounded buffer logged when the run ends; past its limit the rest is
//! dropped quietly, since a log line is not worth a request.
//!
//! The pipe ends a run with a trap carrying a typed cause, so that the
//! handler can tell a limit from the module's own traps: [`OutputLimit`]
//! past `max_output_bytes`, [`ClientGone`] when nobody reads any more,
//! and [`Stalled`] when the client has not taken the output by the run's
//! deadline (the module is blocked in the host there, where the epoch
//! deadline cannot reach it).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;
use tokio::time::Instant;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// Most bytes offered to the module per write: what WASI streams
/// conventionally allow, and a bound on one chunk.
const PERMIT: usize = 64 * 1024;

/// Chunks in flight between the module and the client: with [`PERMIT`],
/// at most 1 MiB of a route's output waits in memory per request.
const CHUNKS: usize = 16;

/// The trap a write past the stdout limit raises.
#[derive(Debug, thiserror::Error)]
#[error("output beyond the limit of {0} bytes")]
pub(crate) struct OutputLimit(pub(crate) u64);

/// The trap a write raises once the response is no longer read (the
/// client left, or the response needed no body).
#[derive(Debug, thiserror::Error)]
#[error("the response is no longer read")]
pub(crate) struct ClientGone;

/// The trap a write raises when the client has not taken the output by
/// the run's deadline.
#[derive(Debug, thiserror::Error)]
#[error("the client did not take the output before the deadline")]
pub(crate) struct Stalled;

/// The module's stdout: chunks to the handler. Clones share the count
/// (WASI may open several handles on one stdout).
#[derive(Clone, Debug)]
pub(crate) struct Pipe {
    tx: mpsc::Sender<Bytes>,
    written: Arc<AtomicU64>,
    limit: u64,
    deadline: Instant,
}

/// A pipe for at most `limit` bytes, and the end the handler reads. The
/// receiver sees the end of the channel when the run is over (its store,
/// holding every sender, is gone).
pub(crate) fn pipe(limit: u64) -> (Pipe, mpsc::Receiver<Bytes>) {
    let (tx, rx) = mpsc::channel(CHUNKS);
    let pipe = Pipe {
        tx,
        written: Arc::default(),
        limit,
        // Set by the run when it starts.
        deadline: Instant::now() + Duration::from_secs(365 * 24 * 3600),
    };
    (pipe, rx)
}

impl Pipe {
    /// The pipe, given the run's deadline.
    pub(crate) fn until(self, deadline: Instant) -> Pipe {
        Pipe { deadline, ..self }
    }
}

fn trap(e: impl std::error::Error + Send + Sync + 'static) -> StreamError {
    StreamError::Trap(wasmtime::Error::new(e))
}

impl IsTerminal for Pipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Pipe {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(Unsupported)
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Pipe {
    async fn ready(&mut self) {
        // Waits for room (a reservation taken and given back: the module
        // is the only writer, so the room is still there for its write),
        // or for the deadline, after which `check_write` traps.
        let _ = tokio::time::timeout_at(self.deadline, self.tx.reserve()).await;
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Pipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        let len = bytes.len() as u64;
        let total = self.written.fetch_add(len, Ordering::Relaxed) + len;
        if total > self.limit {
            return Err(trap(OutputLimit(self.limit)));
        }
        match self.tx.try_send(bytes) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(trap(ClientGone)),
            // `check_write` gave no permit for this.
            Err(mpsc::error::TrySendError::Full(_)) => {
                Err(StreamError::trap("a write to stdout without a permit"))
            }
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        if self.tx.is_closed() {
            return Err(trap(ClientGone));
        }
        if self.tx.capacity() > 0 {
            return Ok(PERMIT);
        }
        if Instant::now() >= self.deadline {
            return Err(trap(Stalled));
        }
        Ok(0)
    }
}

/// The asynchronous form of stdout, used only by WASI preview 2 and 3
/// hosts; tern links preview 1, which writes through [`OutputStream`].
struct Unsupported;

impl AsyncWrite for Unsupported {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(io::Error::other("stdout is a preview 1 stream")))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A bounded capture of stderr. Clones share the buffer.
#[derive(Clone, Debug)]
pub(crate) struct Capture {
    shared: Arc<Mutex<Captured>>,
    limit: usize,
}

#[derive(Debug, Default)]
struct Captured {
    buf: BytesMut,
    dropped: u64,
}

impl Capture {
    pub(crate) fn new(limit: u64) -> Capture {
        Capture {
            shared: Arc::default(),
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
        }
    }

    /// What was captured, and how many bytes were dropped past the limit.
    pub(crate) fn take(&self) -> (Bytes, u64) {
        let mut c = self.lock();
        (std::mem::take(&mut c.buf).freeze(), c.dropped)
    }

    fn lock(&self) -> MutexGuard<'_, Captured> {
        // A poisoned lock only means a panic elsewhere mid-append; the
        // bytes are still bytes.
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends what fits of `data` and counts the rest.
    fn append(&self, data: &[u8]) {
        let mut c = self.lock();
        let keep = self.limit.saturating_sub(c.buf.len()).min(data.len());
        c.buf.extend_from_slice(&data[..keep]);
        c.dropped += (data.len() - keep) as u64;
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {
        // Always ready: writes go to memory.
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(PERMIT)
    }
}

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_the_prefix_and_counts_the_rest() {
        let c = Capture::new(4);
        c.append(b"abc");
        c.append(b"defg");
        assert_eq!(c.take(), (Bytes::from_static(b"abcd"), 3));
    }

    #[tokio::test]
    async fn stdout_refuses_the_write_that_passes_the_limit() {
        let (mut p, mut rx) = pipe(5);
        p.write(Bytes::from_static(b"abc")).unwrap();
        assert!(matches!(
            p.write(Bytes::from_static(b"def")),
            Err(StreamError::Trap(e)) if e.is::<OutputLimit>()
        ));
        assert_eq!(rx.recv().await.unwrap(), "abc");
    }

    #[tokio::test]
    async fn stdout_gives_no_permit_when_full_and_traps_when_unread() {
        let (mut p, rx) = pipe(u64::MAX);
        for _ in 0..CHUNKS {
            assert_eq!(p.check_write().unwrap(), PERMIT);
            p.write(Bytes::from_static(b"x")).unwrap();
        }
        assert_eq!(p.check_write().unwrap(), 0);
        drop(rx);
        assert!(matches!(
            p.check_write(),
            Err(StreamError::Trap(e)) if e.is::<ClientGone>()
        ));
    }

    #[tokio::test]
    async fn stdout_traps_when_full_past_the_deadline() {
        let (p, _rx) = pipe(u64::MAX);
        let mut p = p.until(Instant::now());
        for _ in 0..CHUNKS {
            p.write(Bytes::from_static(b"x")).unwrap();
        }
        assert!(matches!(
            p.check_write(),
            Err(StreamError::Trap(e)) if e.is::<Stalled>()
        ));
    }
}
