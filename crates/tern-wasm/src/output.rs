//! Where a module's stdout and stderr go: a bounded buffer in memory.
//! Past its limit, stdout stops the module (a trap carrying
//! [`OutputLimit`], so that the handler can tell it from the module's own
//! traps) and stderr drops the rest quietly: a log line is not worth a
//! request.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// Most bytes offered to the module per write: what WASI streams
/// conventionally allow, and a bound on what one write copies.
const PERMIT: usize = 64 * 1024;

/// What happens to output past the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// The write traps with [`OutputLimit`]: the run ends.
    Stop,
    /// The rest is dropped and counted; the run goes on.
    Drop,
}

/// The trap a write past the stdout limit raises.
#[derive(Debug, thiserror::Error)]
#[error("output beyond the limit of {0} bytes")]
pub(crate) struct OutputLimit(pub(crate) u64);

/// A bounded capture of one stream. Clones share the buffer (WASI may
/// open several handles on one stdout).
#[derive(Clone, Debug)]
pub(crate) struct Capture {
    shared: Arc<Mutex<Captured>>,
    limit: usize,
    overflow: Overflow,
}

#[derive(Debug, Default)]
struct Captured {
    buf: BytesMut,
    dropped: u64,
}

impl Capture {
    pub(crate) fn new(limit: u64, overflow: Overflow) -> Capture {
        Capture {
            shared: Arc::default(),
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            overflow,
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

    /// Appends `data`, or says the limit was passed.
    fn append(&self, data: &[u8]) -> Result<(), OutputLimit> {
        let mut c = self.lock();
        let room = self.limit.saturating_sub(c.buf.len());
        if data.len() <= room {
            c.buf.extend_from_slice(data);
            return Ok(());
        }
        match self.overflow {
            Overflow::Stop => Err(OutputLimit(self.limit as u64)),
            Overflow::Drop => {
                c.buf.extend_from_slice(&data[..room]);
                c.dropped += (data.len() - room) as u64;
                Ok(())
            }
        }
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
        self.append(&bytes)
            .map_err(|e| StreamError::Trap(wasmtime::Error::new(e)))
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
        Poll::Ready(
            self.append(buf)
                .map(|()| buf.len())
                .map_err(io::Error::other),
        )
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
    fn stop_refuses_the_write_that_passes_the_limit() {
        let c = Capture::new(5, Overflow::Stop);
        c.append(b"abc").unwrap();
        assert!(c.append(b"def").is_err());
        c.append(b"de").unwrap();
        assert_eq!(c.take(), (Bytes::from_static(b"abcde"), 0));
    }

    #[test]
    fn drop_keeps_the_prefix_and_counts_the_rest() {
        let c = Capture::new(4, Overflow::Drop);
        c.append(b"abc").unwrap();
        c.append(b"defg").unwrap();
        assert_eq!(c.take(), (Bytes::from_static(b"abcd"), 3));
    }
}
