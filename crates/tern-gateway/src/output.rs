//! The response body of a streaming script: chunks of its stdout, as they
//! were read, handed over by the task that drives the script. Dropping the
//! body (the client left) closes the channel, and that task then stops the
//! script.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

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
    /// Bytes still to come, when the script gave its body's length: the
    /// answer then goes with a Content-Length.
    left: Option<u64>,
}

impl OutputBody {
    /// A body of the chunks `rx` brings; `length`, when known, is all of
    /// theirs.
    pub(crate) fn new(rx: mpsc::Receiver<Chunk>, length: Option<u64>) -> Self {
        OutputBody { rx, left: length }
    }
}

impl Body for OutputBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let polled = self.rx.poll_recv(cx);
        if let (Poll::Ready(Some(Ok(data))), Some(left)) = (&polled, &mut self.left) {
            *left = left.saturating_sub(data.len() as u64);
        }
        polled.map(|c| c.map(|c| c.map(Frame::data)))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self.left {
            Some(left) => http_body::SizeHint::with_exact(left),
            None => http_body::SizeHint::default(),
        }
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

/// What a program's silence timer finds when it fires (every `timeout`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Something moved, or the client holds the program back: on.
    Going,
    /// Nothing from the program and nothing held back, since the last look
    /// and at it: the program is silent.
    Silent,
    /// The client has taken none of the output for `send_timeout`: it
    /// stalled (a shut HTTP/2 window on a connection it still reads).
    Stalled,
}

/// The silence timer's memory between its looks. The timer is not reset
/// on each read (cheaper): when it fires, any progress since the last look
/// means "not silent". Nor is a program silent while its output waits for
/// a slow client (the channel is full), until that client has taken
/// nothing for `send_timeout`: counted in whole looks, so a stall is
/// ended after at least `send_timeout` and before one `timeout` more.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// Progress (bytes moved either way) at the last look.
    seen: u64,
    /// Held back at the last look: a client that resumes reading just
    /// before the timer fires has given the program no time to write since.
    was_held: bool,
    /// How long the client has held the program back with nothing moving.
    held_for: Duration,
}

impl Watch {
    /// Judges a look of the timer, which fires every `timeout`.
    pub(crate) fn look(
        &mut self,
        progress: u64,
        held: bool,
        timeout: Duration,
        send_timeout: Duration,
    ) -> Look {
        let still = progress == self.seen;
        if still && !held && !self.was_held {
            return Look::Silent;
        }
        if still && held {
            self.held_for += timeout;
            if self.held_for >= send_timeout {
                return Look::Stalled;
            }
        } else {
            self.held_for = Duration::ZERO;
        }
        self.seen = progress;
        self.was_held = held;
        Look::Going
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_finds_silence_a_hold_or_a_stall() {
        let (t, send) = (Duration::from_secs(30), Duration::from_secs(60));
        // Nothing moves, nothing held: silent at the second look.
        let mut w = Watch::default();
        assert_eq!(w.look(10, false, t, send), Look::Going);
        assert_eq!(w.look(10, false, t, send), Look::Silent);
        // Held with nothing moving: stalled once held for `send`.
        let mut w = Watch::default();
        assert_eq!(w.look(10, true, t, send), Look::Going);
        assert_eq!(w.look(10, true, t, send), Look::Going);
        assert_eq!(w.look(10, true, t, send), Look::Stalled);
        // A client that takes a little, however slowly, starts it afresh.
        let mut w = Watch::default();
        assert_eq!(w.look(10, true, t, send), Look::Going);
        assert_eq!(w.look(10, true, t, send), Look::Going);
        assert_eq!(w.look(11, true, t, send), Look::Going);
        assert_eq!(w.look(11, true, t, send), Look::Going);
        assert_eq!(w.look(11, true, t, send), Look::Stalled);
        // Released just before a look: not silent at it, only at the next.
        let mut w = Watch::default();
        assert_eq!(w.look(10, true, t, send), Look::Going);
        assert_eq!(w.look(10, false, t, send), Look::Going);
        assert_eq!(w.look(10, false, t, send), Look::Silent);
    }
}
