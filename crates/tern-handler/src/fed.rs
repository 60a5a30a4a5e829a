//! A request body that a connection layer fills as its bytes arrive
//! (tern's own HTTP/1 loop): [`fed_body`] makes the [`BodySender`] the
//! connection keeps and the [`FedBody`] that becomes the handler's
//! [`RequestBody`](crate::RequestBody) (`RequestBody::fed`).
//!
//! The connection hands over what one read brought (every piece of the
//! body it holds) and reads again only once the handler has taken them
//! all, so a body never piles up in memory faster than its handler reads
//! it, and a body that arrived with its head is there at the handler's
//! first look. A body whose client waits for
//! `100 Continue` is *gated*: the sender is not ready until the handler
//! first asks for data ([`BodySender::asked`]), which is when the
//! connection sends `100 Continue` (RFC 9110 §10.1.1: a handler that
//! answers without reading the body never makes the client send it).
//!
//! A sender dropped before [`BodySender::finish`] or [`BodySender::fail`]
//! ends the body with an error, never with a clean end: a handler must not
//! take a body cut short for a whole one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The handler no longer reads the body (it dropped it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderGone;

/// A new body channel: `gated` holds the sender back until the reader
/// first asks for data (see the module doc).
pub fn fed_body(gated: bool) -> (BodySender, FedBody) {
    let chan = Arc::new(Chan(Mutex::new(State {
        frames: VecDeque::new(),
        end: End::Open,
        asked: false,
        gated,
        reader: None,
        feeder: None,
        reader_gone: false,
    })));
    (
        BodySender {
            chan: chan.clone(),
            over: false,
        },
        FedBody { chan },
    )
}

struct Chan(Mutex<State>);

impl Chan {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned one still
        // holds consistent state.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct State {
    /// The frames the reader has not taken yet.
    frames: VecDeque<Frame<Bytes>>,
    /// How the body ends after `frames`.
    end: End,
    /// The reader has asked for data at least once.
    asked: bool,
    /// Hold the sender until `asked`.
    gated: bool,
    reader: Option<Waker>,
    feeder: Option<Waker>,
    reader_gone: bool,
}

enum End {
    Open,
    Ended,
    Failed(BoxError),
}

/// The connection's half: sends the body's frames as they are decoded.
pub struct BodySender {
    chan: Arc<Chan>,
    /// `finish` or `fail` was called.
    over: bool,
}

impl std::fmt::Debug for BodySender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodySender")
    }
}

impl BodySender {
    /// Ready when the reader has taken every frame sent (and, on a gated
    /// body, has asked); `Err` once the reader has let go of the body.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ReaderGone>> {
        let mut s = self.chan.lock();
        if s.reader_gone {
            return Poll::Ready(Err(ReaderGone));
        }
        if s.frames.is_empty() && (s.asked || !s.gated) {
            return Poll::Ready(Ok(()));
        }
        if !s.feeder.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.feeder = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Whether the reader has asked for data yet.
    pub fn asked(&self) -> bool {
        self.chan.lock().asked
    }

    /// Hands the reader a piece of the body, after those it has not taken
    /// yet. (A connection sends what one read brought, once
    /// [`BodySender::poll_ready`] says the last were taken.)
    pub fn send(&mut self, data: Bytes) {
        let reader = {
            let mut s = self.chan.lock();
            s.frames.push_back(Frame::data(data));
            s.reader.take()
        };
        if let Some(w) = reader {
            w.wake();
        }
    }

    /// The body is complete; `trailers` (if any) are its last frame.
    pub fn finish(mut self, trailers: HeaderMap) {
        self.end(
            End::Ended,
            (!trailers.is_empty()).then(|| Frame::trailers(trailers)),
        );
    }

    /// The body cannot be completed: the reader gets `error` after what it
    /// was sent.
    pub fn fail(mut self, error: impl Into<BoxError>) {
        self.end(End::Failed(error.into()), None);
    }

    fn end(&mut self, end: End, last: Option<Frame<Bytes>>) {
        self.over = true;
        let reader = {
            let mut s = self.chan.lock();
            if let Some(last) = last {
                s.frames.push_back(last);
            }
            s.end = end;
            s.reader.take()
        };
        if let Some(w) = reader {
            w.wake();
        }
    }
}

impl Drop for BodySender {
    fn drop(&mut self) {
        if !self.over {
            self.end(
                End::Failed("the connection stopped reading before the body ended".into()),
                None,
            );
        }
    }
}

/// The handler's half, inside a [`RequestBody`](crate::RequestBody).
pub struct FedBody {
    chan: Arc<Chan>,
}

impl std::fmt::Debug for FedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FedBody")
    }
}

impl FedBody {
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let (polled, feeder) = {
            let mut s = self.chan.lock();
            if let Some(frame) = s.frames.pop_front() {
                (Poll::Ready(Some(Ok(frame))), s.feeder.take())
            } else {
                match std::mem::replace(&mut s.end, End::Ended) {
                    End::Ended => (Poll::Ready(None), None),
                    End::Failed(e) => (Poll::Ready(Some(Err(e))), None),
                    End::Open => {
                        s.end = End::Open;
                        s.asked = true;
                        if !s.reader.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            s.reader = Some(cx.waker().clone());
                        }
                        (Poll::Pending, s.feeder.take())
                    }
                }
            }
        };
        if let Some(w) = feeder {
            w.wake();
        }
        polled
    }

    /// Whether nothing more will come: the end was reached and taken.
    pub(crate) fn is_end_stream(&self) -> bool {
        let s = self.chan.lock();
        s.frames.is_empty() && matches!(s.end, End::Ended)
    }
}

impl Drop for FedBody {
    fn drop(&mut self) {
        let feeder = {
            let mut s = self.chan.lock();
            s.reader_gone = true;
            s.feeder.take()
        };
        if let Some(w) = feeder {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use super::*;

    fn data(f: Frame<Bytes>) -> Bytes {
        f.into_data().unwrap()
    }

    #[tokio::test]
    async fn frames_arrive_in_order_then_the_end() {
        let (mut tx, mut rx) = fed_body(false);
        poll_fn(|cx| tx.poll_ready(cx)).await.unwrap();
        tx.send(Bytes::from_static(b"ab"));
        tx.send(Bytes::from_static(b"c"));
        // Not ready again until both are taken.
        let mut cx = Context::from_waker(Waker::noop());
        assert!(tx.poll_ready(&mut cx).is_pending());
        let f = poll_fn(|cx| rx.poll_frame(cx)).await.unwrap().unwrap();
        assert_eq!(data(f), "ab");
        assert!(tx.poll_ready(&mut cx).is_pending());
        let f = poll_fn(|cx| rx.poll_frame(cx)).await.unwrap().unwrap();
        assert_eq!(data(f), "c");
        poll_fn(|cx| tx.poll_ready(cx)).await.unwrap();
        tx.send(Bytes::from_static(b"d"));
        let mut trailers = HeaderMap::new();
        trailers.insert("x-t", "1".parse().unwrap());
        // The end comes after what was sent before it.
        tx.finish(trailers);
        assert!(
            !rx.is_end_stream(),
            "a piece and the trailers are still to come"
        );
        let f = poll_fn(|cx| rx.poll_frame(cx)).await.unwrap().unwrap();
        assert_eq!(data(f), "d");
        let f = poll_fn(|cx| rx.poll_frame(cx)).await.unwrap().unwrap();
        assert_eq!(f.into_trailers().unwrap()["x-t"], "1");
        assert!(poll_fn(|cx| rx.poll_frame(cx)).await.is_none());
        assert!(rx.is_end_stream());
    }

    #[tokio::test]
    async fn a_gated_body_waits_for_the_reader_to_ask() {
        let (mut tx, mut rx) = fed_body(true);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(tx.poll_ready(&mut cx).is_pending());
        assert!(!tx.asked());
        assert!(rx.poll_frame(&mut cx).is_pending());
        assert!(tx.asked());
        assert!(matches!(tx.poll_ready(&mut cx), Poll::Ready(Ok(()))));
    }

    #[tokio::test]
    async fn a_sender_dropped_unfinished_is_an_error_not_an_end() {
        let (mut tx, mut rx) = fed_body(false);
        poll_fn(|cx| tx.poll_ready(cx)).await.unwrap();
        tx.send(Bytes::from_static(b"part"));
        drop(tx);
        let f = poll_fn(|cx| rx.poll_frame(cx)).await.unwrap().unwrap();
        assert_eq!(data(f), "part");
        let e = poll_fn(|cx| rx.poll_frame(cx)).await.unwrap().unwrap_err();
        assert!(e.to_string().contains("before the body ended"), "{e}");
        assert!(poll_fn(|cx| rx.poll_frame(cx)).await.is_none());
    }

    #[tokio::test]
    async fn a_reader_that_lets_go_is_told_to_the_sender() {
        let (mut tx, rx) = fed_body(true);
        let waiting = tokio::spawn(async move { poll_fn(|cx| tx.poll_ready(cx)).await });
        tokio::task::yield_now().await;
        drop(rx);
        assert_eq!(waiting.await.unwrap(), Err(ReaderGone));
    }
}
