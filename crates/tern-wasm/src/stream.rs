//! The body of a response whose module is still running: the bytes that
//! came with the head, then each chunk the module writes, then the run's
//! end. A run that fails after its head was sent (a trap, a limit) can no
//! longer change the status, so the body ends with an error instead: the
//! client sees a cut-off response (HTTP/1.1 closes the connection,
//! HTTP/2 resets the stream) rather than a whole-looking one.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use tern_handler::RequestId;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::run::Ending;
use crate::Error;

/// The run behind a streamed body.
#[derive(Debug)]
pub(crate) enum Tail {
    /// Going on as a task of its own.
    Running(JoinHandle<Ending>),
    /// Over before the response started, its output not all sent.
    Ended(Ending),
}

/// A streamed response body. Dropped early (the client left), it drops
/// the pipe's receiver, and the module is stopped at its next write (or
/// by its deadline, if it does not write).
#[derive(Debug)]
pub(crate) struct Streamed {
    pub(crate) first: Option<Bytes>,
    pub(crate) rx: mpsc::Receiver<Bytes>,
    pub(crate) run: Option<Tail>,
    /// For the log line of a run that fails mid-body.
    pub(crate) name: Arc<str>,
    pub(crate) id: RequestId,
}

impl Body for Streamed {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if let Some(b) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        if let Some(b) = ready!(this.rx.poll_recv(cx)) {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        // The pipe is closed: the run is over.
        let ended = match &mut this.run {
            None => return Poll::Ready(None),
            Some(Tail::Running(task)) => ready!(Pin::new(task).poll(cx)),
            Some(Tail::Ended(_)) => match this.run.take() {
                Some(Tail::Ended(ending)) => Ok(ending),
                _ => return Poll::Ready(None),
            },
        };
        this.run = None;
        let e = match ended {
            Ok(Ending::Exited(_)) => return Poll::Ready(None),
            Ok(Ending::Failed(e)) => e,
            Err(e) => Error::Trap(format!("the run panicked: {e}")),
        };
        tracing::warn!(id = %this.id, module = &*this.name, "wasm: response cut off: {e}");
        Poll::Ready(Some(Err(e)))
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.run.is_none()
    }
}
