//! Request and response bodies.
//!
//! [`ResponseBody`] is an enum rather than a boxed trait object so that the
//! hot path (a cached file: one `Bytes`) costs no allocation and reports an
//! exact size, which lets hyper write `Content-Length` and send headers and
//! body in one write.

use std::error::Error as StdError;
use std::fs::File;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

use crate::fed::FedBody;
use crate::fields::SharedFields;

type BoxError = Box<dyn StdError + Send + Sync>;
type BoxBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>;

/// Bodies at least this long (and at most [`SEND_FILE_MAX`]) are worth
/// sending from their file, where the connection can (a plain socket on
/// tern's HTTP/1 loop): the head with `MSG_MORE`, then `sendfile(2)`,
/// which spares the copy of the body into the socket. A shorter body costs
/// less copied behind the head in one write.
pub const SEND_FILE_MIN: u64 = 16 * 1024;

/// Bodies longer than this are copied, not sent from their file. Measured
/// over loopback (docs/PERFORMANCE.md, "sendfile"): sendfile costs less
/// CPU per request than a copy from 64 KiB to 256 KiB, and more, at half
/// the transfer rate, from 1 MiB (the kernel takes and releases each 4 KiB
/// page of the file, where a copy fills the socket in 32 KiB pieces, and
/// over loopback the receiver copies either way).
pub const SEND_FILE_MAX: u64 = 256 * 1024;

/// Whether a body of `len` bytes is worth sending from its file (between
/// [`SEND_FILE_MIN`] and [`SEND_FILE_MAX`]): what a cache keeps a file
/// open for, and what a connection sends from one.
pub fn worth_sending_from_file(len: u64) -> bool {
    (SEND_FILE_MIN..=SEND_FILE_MAX).contains(&len)
}

/// A response body: nothing, one buffer, or a stream; with, optionally,
/// the file region that holds the same bytes (see [`ResponseBody::with_file`]).
pub struct ResponseBody {
    kind: Kind,
    /// Set only on a body with bytes ([`ResponseBody::with_file`]), and
    /// cleared by the first poll: while it is here, the body is whole.
    file: Option<FileRegion>,
    /// The response's shared fields, until the server writes them or puts
    /// them in the map (`fields.rs`).
    fields: Option<Arc<SharedFields>>,
}

/// Bytes of an open file: what a connection sends with `sendfile(2)`
/// instead of polling the body (see [`ResponseBody::take_file`]).
#[derive(Clone, Debug)]
pub struct FileRegion {
    /// The file.
    pub file: Arc<File>,
    /// Where the bytes start.
    pub offset: u64,
    /// How many.
    pub len: u64,
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    /// Whole, in buffers that are not copied together; `left` is their
    /// length.
    Pieces {
        rest: std::vec::IntoIter<Bytes>,
        left: u64,
    },
    Stream(BoxBody),
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(r) = &self.file {
            write!(f, "(file region at {} of {} bytes) ", r.offset, r.len)?;
        }
        if let Some(fields) = &self.fields {
            write!(f, "({} shared fields) ", fields.map().len())?;
        }
        match &self.kind {
            Kind::Empty => f.write_str("ResponseBody::Empty"),
            Kind::Full(b) => write!(
                f,
                "ResponseBody::Full({:?} bytes)",
                b.as_ref().map(Bytes::len)
            ),
            Kind::Pieces { rest, left } => write!(
                f,
                "ResponseBody::Pieces({} pieces, {left} bytes)",
                rest.len()
            ),
            Kind::Stream(_) => f.write_str("ResponseBody::Stream"),
        }
    }
}

impl ResponseBody {
    /// No body (`Content-Length: 0` unless the status forbids a body).
    pub fn empty() -> Self {
        ResponseBody {
            kind: Kind::Empty,
            file: None,
            fields: None,
        }
    }

    /// One buffer; its length becomes the `Content-Length`.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        if bytes.is_empty() {
            return Self::empty();
        }
        ResponseBody {
            kind: Kind::Full(Some(bytes)),
            file: None,
            fields: None,
        }
    }

    /// A whole body in several buffers, sent in order as they are: its
    /// length becomes the `Content-Length`, and each buffer is a frame,
    /// so they are never copied into one (tern's HTTP/1 loop writes the
    /// frames that are ready together in one vectored write). A script's
    /// output as it was read: a 64 KB FastCGI answer is eight records.
    pub fn pieces(mut pieces: Vec<Bytes>) -> Self {
        pieces.retain(|p| !p.is_empty());
        match pieces.len() {
            0 => Self::empty(),
            1 => Self::full(pieces.swap_remove(0)),
            _ => ResponseBody {
                kind: Kind::Pieces {
                    left: pieces.iter().map(|p| p.len() as u64).sum(),
                    rest: pieces.into_iter(),
                },
                file: None,
                fields: None,
            },
        }
    }

    /// A streamed body. Its `size_hint`, when exact, becomes the
    /// `Content-Length`; otherwise HTTP/1.1 uses chunked framing.
    pub fn stream<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        ResponseBody {
            kind: Kind::Stream(Box::pin(body.map_err(Into::into))),
            file: None,
            fields: None,
        }
    }

    /// Says that `file`, from `offset`, holds this body's bytes, as many as
    /// its exact size: a connection that can send them from the file takes
    /// them with [`ResponseBody::take_file`]; any other polls the body as
    /// usual. The caller vouches for the bytes being the same (a cache
    /// entry's file, a range of the file the body reads). Ignored on a
    /// body without an exact size.
    pub fn with_file(mut self, file: Arc<File>, offset: u64) -> Self {
        let len = self.size_hint().exact();
        self.file = len
            .filter(|&n| n > 0)
            .map(|len| FileRegion { file, offset, len });
        self
    }

    /// The file region that holds the whole body, if one was given and the
    /// body has not been polled: the caller sends those bytes itself, and
    /// the body is over (it yields nothing more).
    pub fn take_file(&mut self) -> Option<FileRegion> {
        let region = self.file.take()?;
        self.kind = Kind::Empty;
        Some(region)
    }

    /// With the response's shared fields ([`crate::shared_response`]).
    pub(crate) fn with_fields(mut self, fields: Arc<SharedFields>) -> Self {
        self.fields = Some(fields);
        self
    }

    /// The response's shared fields, which the taker writes or puts in the
    /// response's map ([`crate::settle_into`]).
    pub fn take_fields(&mut self) -> Option<Arc<SharedFields>> {
        self.fields.take()
    }
}

impl Default for ResponseBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl From<Bytes> for ResponseBody {
    fn from(b: Bytes) -> Self {
        Self::full(b)
    }
}

impl From<&'static str> for ResponseBody {
    fn from(s: &'static str) -> Self {
        Self::full(Bytes::from_static(s.as_bytes()))
    }
}

impl From<String> for ResponseBody {
    fn from(s: String) -> Self {
        Self::full(Bytes::from(s))
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        // Polled: the bytes go this way, not from the file.
        self.file = None;
        match &mut self.kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::Pieces { rest, left } => Poll::Ready(rest.next().map(|b| {
                *left -= b.len() as u64;
                Ok(Frame::data(b))
            })),
            Kind::Stream(s) => s.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(b) => b.is_none(),
            Kind::Pieces { rest, .. } => rest.len() == 0,
            Kind::Stream(s) => s.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Pieces { left, .. } => SizeHint::with_exact(*left),
            Kind::Stream(s) => s.size_hint(),
        }
    }
}

/// Why reading a request body failed.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body exceeded the configured limit (the handler answers 413).
    #[error("request body exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The connection failed while the body was being read, or the body's
    /// framing was broken (a bad chunk, the client gone mid-body).
    #[error("reading the request body: {0}")]
    Read(#[source] BoxError),
    /// The client sent the body too slowly (the handler answers 408).
    #[error("the client sent {received} bytes of the body in {waited:?} of waiting, below the minimum rate")]
    TooSlow {
        /// Bytes received by then.
        received: u64,
        /// Time spent waiting on the client.
        waited: Duration,
    },
}

/// How long a client may take to send a request body, as Apache's
/// `RequestReadTimeout body=20,MinRate=500` has it: `timeout` of waiting,
/// extended by one second for every `min_rate` bytes received. Only the
/// time spent waiting on the client counts (not the time a handler takes
/// between reads), so a client that trickles a byte every few seconds is
/// cut off, and a slow handler never is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyPace {
    /// Waiting allowed before any byte counts. Apache's default: 20 s.
    pub timeout: Duration,
    /// Bytes per second that earn one more second; 0: no extension.
    pub min_rate: u64,
}

impl BodyPace {
    /// The waiting allowed once `received` bytes have arrived.
    fn allowance(&self, received: u64) -> Duration {
        match received.checked_div(self.min_rate) {
            Some(secs) => self.timeout.saturating_add(Duration::from_secs(secs)),
            None => self.timeout,
        }
    }
}

/// The clock of a paced body: only created once the body first has to
/// wait, so a body that arrives with its head costs no timer.
struct Pacer {
    /// Waiting before the current wait.
    waited: Duration,
    /// When the current wait began.
    since: Option<Instant>,
    sleep: Pin<Box<Sleep>>,
}

/// A request body with the site's size limit applied as it is read.
pub struct RequestBody {
    inner: Inner,
    limit: u64,
    seen: u64,
    pace: Option<BodyPace>,
    pacer: Option<Box<Pacer>>,
    leftover: Option<Leftover>,
}

/// Where a body goes when its handler lets go of it before its end: the
/// server takes it back from here to drain it (see
/// [`RequestBody::leave_to`]).
#[derive(Clone, Default)]
pub struct Leftover(Arc<Mutex<Option<Incoming>>>);

impl std::fmt::Debug for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Leftover")
    }
}

impl Leftover {
    /// The rest of the body, if its handler dropped it unfinished.
    pub fn take(&self) -> Option<Incoming> {
        self.0.lock().ok()?.take()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let Some(leftover) = self.leftover.take() else {
            return;
        };
        if let Inner::Incoming(rest) = std::mem::replace(&mut self.inner, Inner::Empty) {
            if !rest.is_end_stream() {
                if let Ok(mut slot) = leftover.0.lock() {
                    *slot = Some(rest);
                }
            }
        }
    }
}

enum Inner {
    Empty,
    Full(Option<Bytes>),
    Incoming(Incoming),
    Fed(FedBody),
}

impl std::fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestBody")
            .field("limit", &self.limit)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

impl RequestBody {
    /// A body from the connection, cut off with [`BodyError::TooLarge`] once
    /// more than `limit` bytes arrive, and with [`BodyError::TooSlow`] when
    /// it arrives slower than `pace` allows.
    pub fn incoming(body: Incoming, limit: u64, pace: BodyPace) -> Self {
        RequestBody {
            inner: Inner::Incoming(body),
            limit,
            seen: 0,
            pace: Some(pace),
            pacer: None,
            leftover: None,
        }
    }

    /// A body the connection feeds as it arrives (see
    /// [`fed_body`](crate::fed_body)), under the same limit and pace as
    /// [`RequestBody::incoming`].
    pub fn fed(body: FedBody, limit: u64, pace: BodyPace) -> Self {
        RequestBody {
            inner: Inner::Fed(body),
            limit,
            seen: 0,
            pace: Some(pace),
            pacer: None,
            leftover: None,
        }
    }

    /// Hands the body back to `leftover` if it is dropped before its end.
    /// The server uses it over HTTP/2 to read the rest of a body that a
    /// handler answered without (a 405, a 404) before it sends the answer,
    /// so that a stream the client got wrong is reset as the protocol
    /// says, not answered first.
    pub fn leave_to(&mut self, leftover: Leftover) {
        self.leftover = Some(leftover);
    }

    /// No body.
    pub fn empty() -> Self {
        RequestBody {
            inner: Inner::Empty,
            limit: u64::MAX,
            seen: 0,
            pace: None,
            pacer: None,
            leftover: None,
        }
    }

    /// A body already in memory (tests, internal redirects).
    pub fn full(bytes: Bytes) -> Self {
        RequestBody {
            inner: Inner::Full(Some(bytes)),
            limit: u64::MAX,
            seen: 0,
            pace: None,
            pacer: None,
            leftover: None,
        }
    }

    /// The limit this body is read under.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Called when the body has to wait for the client: starts (or goes
    /// on with) the wait, and fails the body once the waiting allowed for
    /// the bytes received so far is spent.
    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<BodyError> {
        let Some(pace) = self.pace else {
            return Poll::Pending;
        };
        let now = Instant::now();
        let pacer = self.pacer.get_or_insert_with(|| {
            Box::new(Pacer {
                waited: Duration::ZERO,
                since: None,
                sleep: Box::pin(tokio::time::sleep_until(now)),
            })
        });
        let since = *pacer.since.get_or_insert(now);
        let left = pace.allowance(self.seen).saturating_sub(pacer.waited);
        let deadline = since + left;
        if pacer.sleep.deadline() != deadline {
            pacer.sleep.as_mut().reset(deadline);
        }
        // A deadline already passed is ready at once.
        std::task::ready!(pacer.sleep.as_mut().poll(cx));
        Poll::Ready(BodyError::TooSlow {
            received: self.seen,
            waited: pacer.waited + (Instant::now() - since),
        })
    }

    /// The client sent something: the current wait, if any, ends.
    fn arrived(&mut self) {
        if let Some(p) = self.pacer.as_mut() {
            if let Some(since) = p.since.take() {
                p.waited += since.elapsed();
            }
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        let polled = match &mut this.inner {
            Inner::Empty => return Poll::Ready(None),
            Inner::Full(b) => return Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Inner::Incoming(inc) => Pin::new(inc)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(BoxError::from))),
            Inner::Fed(fed) => fed.poll_frame(cx),
        };
        let frame = match polled {
            Poll::Pending => {
                return match this.wait(cx) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(e) => {
                        this.inner = Inner::Empty;
                        Poll::Ready(Some(Err(e)))
                    }
                };
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(BodyError::Read(e)))),
            Poll::Ready(Some(Ok(f))) => {
                this.arrived();
                f
            }
        };
        if let Some(data) = frame.data_ref() {
            this.seen += data.len() as u64;
            if this.seen > this.limit {
                this.inner = Inner::Empty;
                return Poll::Ready(Some(Err(BodyError::TooLarge { limit: this.limit })));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Empty => true,
            Inner::Full(b) => b.is_none(),
            Inner::Incoming(i) => i.is_end_stream(),
            Inner::Fed(f) => f.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Empty => SizeHint::with_exact(0),
            Inner::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Inner::Incoming(i) => i.size_hint(),
            Inner::Fed(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some_file() -> Arc<File> {
        Arc::new(File::open("/proc/self/exe").unwrap())
    }

    #[test]
    fn a_region_is_taken_once_and_ends_the_body() {
        let mut b = ResponseBody::full(Bytes::from_static(b"0123456789")).with_file(some_file(), 5);
        let r = b.take_file().expect("a region");
        assert_eq!((r.offset, r.len), (5, 10));
        assert!(b.is_end_stream());
        assert!(b.take_file().is_none());
    }

    #[tokio::test]
    async fn a_polled_body_gives_no_region() {
        let mut b = ResponseBody::full(Bytes::from_static(b"0123456789")).with_file(some_file(), 0);
        let frame = b.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "0123456789");
        assert!(b.take_file().is_none(), "the bytes went by poll_frame");
    }

    #[test]
    fn an_empty_body_gives_no_region() {
        let mut b = ResponseBody::empty().with_file(some_file(), 0);
        assert!(b.take_file().is_none());
    }
}
