//! The body of a proxy component's response: what the component writes
//! to its outgoing-body, counted against `max_output_bytes`, while the
//! run goes on beside it. A run that fails after the head was sent (a
//! trap, a limit) can no longer change the status, so the body ends with
//! an error instead, and the client sees a cut-off response rather than
//! a whole-looking one. Dropped (the client left, or the body was
//! whole), it stops the run.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tern_handler::RequestId;
use tokio::task::JoinHandle;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

use super::store::ProxyStore;
use crate::Error;

/// A run going on as a task of its own, with the store it hands back.
pub(crate) type RunTask = JoinHandle<(Result<(), Error>, ProxyStore)>;

/// A proxy response body.
pub(crate) struct ProxyBody {
    pub(crate) inner: HyperOutgoingBody,
    /// The run, while it goes on.
    pub(crate) run: Option<RunTask>,
    pub(crate) written: u64,
    pub(crate) limit: u64,
    /// An error was sent: nothing follows it.
    pub(crate) done: bool,
    /// For the log line of a run that fails mid-body.
    pub(crate) name: Arc<str>,
    pub(crate) id: RequestId,
}

impl std::fmt::Debug for ProxyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyBody")
            .field("written", &self.written)
            .field("limit", &self.limit)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl ProxyBody {
    fn cut_off(&mut self, e: Error) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.done = true;
        if let Some(run) = self.run.take() {
            run.abort();
        }
        tracing::warn!(id = %self.id, module = &*self.name, "wasm: response cut off: {e}");
        Poll::Ready(Some(Err(e)))
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        // The run first: while it holds its store, the body's writer is
        // alive, and the body cannot seem to end early.
        if let Some(run) = &mut this.run {
            if let Poll::Ready(ended) = Pin::new(run).poll(cx) {
                this.run = None;
                match ended {
                    // The store goes: the body ends after what it holds.
                    Ok((Ok(()), _store)) => {}
                    Ok((Err(e), _store)) => return this.cut_off(e),
                    Err(e) => return this.cut_off(Error::Trap(format!("the run panicked: {e}"))),
                }
            }
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.written = this.written.saturating_add(data.len() as u64);
                    if this.written > this.limit {
                        return this.cut_off(Error::OutputTooLarge(this.limit));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            // The component aborted its body, or wrote other than its
            // Content-Length.
            Some(Err(e)) => this.cut_off(Error::Trap(format!("the response body failed: {e}"))),
            None => {
                this.done = true;
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ProxyBody {
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            run.abort();
        }
    }
}
