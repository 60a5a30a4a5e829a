//! The response body of a streaming script: chunks of its stdout, as they
//! were read, handed over by the task that drives the script. Dropping the
//! body (the client left) closes the channel, and that task then stops the
//! script.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc;

/// One read of the script's stdout, or the reason the stream was cut off.
pub(crate) type Chunk = Result<Bytes, io::Error>;

/// Chunks in flight between the script and the client: enough to cover a
/// write to the client while the next read is made, few enough that a slow
/// client holds back a fast script (its pipe fills and it blocks).
pub(crate) const IN_FLIGHT: usize = 4;

/// The body hyper polls.
#[derive(Debug)]
pub(crate) struct OutputBody {
    rx: mpsc::Receiver<Chunk>,
}

impl OutputBody {
    pub(crate) fn new(rx: mpsc::Receiver<Chunk>) -> Self {
        OutputBody { rx }
    }
}

impl Body for OutputBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.rx.poll_recv(cx).map(|c| c.map(|c| c.map(Frame::data)))
    }
}

/// Room for one more chunk, once the body streams (`tx` is set): waiting
/// for it is how a slow client slows the program down instead of tern
/// buffering without bound. `Err` when the client is gone.
///
/// # Cancel safety
/// Cancel safe: a cancelled reserve loses nothing.
pub(crate) async fn room(
    tx: Option<&mpsc::Sender<Chunk>>,
) -> Result<Option<mpsc::Permit<'_, Chunk>>, Gone> {
    match tx {
        Some(tx) => tx.reserve().await.map(Some).map_err(|_| Gone),
        None => Ok(None),
    }
}

/// The response body was dropped: the client left.
#[derive(Debug)]
pub(crate) struct Gone;

/// Whether the client holds the program back: the chunks in flight fill
/// the channel but for (at most) the one slot the program's pending read
/// had reserved. That read's reservation is dropped when the silence timer
/// wins the select, so the slot shows free by then; not counting it keeps
/// a program that was starved of CPU while its client sat on three chunks
/// from looking silent on its own.
pub(crate) fn held_back(tx: Option<&mpsc::Sender<Chunk>>) -> bool {
    tx.is_some_and(|t| t.capacity() <= 1)
}
