//! Request and response bodies.
//!
//! [`ResponseBody`] is an enum rather than a boxed trait object so that the
//! hot path (a cached file: one `Bytes`) costs no allocation and reports an
//! exact size, which lets hyper write `Content-Length` and send headers and
//! body in one write.

use std::error::Error as StdError;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

type BoxError = Box<dyn StdError + Send + Sync>;
type BoxBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>;

/// A response body: nothing, one buffer, or a stream.
pub struct ResponseBody {
    kind: Kind,
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    Stream(BoxBody),
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Empty => f.write_str("ResponseBody::Empty"),
            Kind::Full(b) => write!(
                f,
                "ResponseBody::Full({:?} bytes)",
                b.as_ref().map(Bytes::len)
            ),
            Kind::Stream(_) => f.write_str("ResponseBody::Stream"),
        }
    }
}

impl ResponseBody {
    /// No body (`Content-Length: 0` unless the status forbids a body).
    pub fn empty() -> Self {
        ResponseBody { kind: Kind::Empty }
    }

    /// One buffer; its length becomes the `Content-Length`.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        if bytes.is_empty() {
            return Self::empty();
        }
        ResponseBody {
            kind: Kind::Full(Some(bytes)),
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
        }
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
        match &mut self.kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(s) => s.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(b) => b.is_none(),
            Kind::Stream(s) => s.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
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
    /// The connection failed while the body was being read.
    #[error("reading the request body: {0}")]
    Read(#[source] hyper::Error),
}

/// A request body with the site's size limit applied as it is read.
pub struct RequestBody {
    inner: Inner,
    limit: u64,
    seen: u64,
}

enum Inner {
    Empty,
    Full(Option<Bytes>),
    Incoming(Incoming),
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
    /// more than `limit` bytes arrive.
    pub fn incoming(body: Incoming, limit: u64) -> Self {
        RequestBody {
            inner: Inner::Incoming(body),
            limit,
            seen: 0,
        }
    }

    /// No body.
    pub fn empty() -> Self {
        RequestBody {
            inner: Inner::Empty,
            limit: u64::MAX,
            seen: 0,
        }
    }

    /// A body already in memory (tests, internal redirects).
    pub fn full(bytes: Bytes) -> Self {
        RequestBody {
            inner: Inner::Full(Some(bytes)),
            limit: u64::MAX,
            seen: 0,
        }
    }

    /// The limit this body is read under.
    pub fn limit(&self) -> u64 {
        self.limit
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
        let frame = match &mut this.inner {
            Inner::Empty => return Poll::Ready(None),
            Inner::Full(b) => return Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Inner::Incoming(inc) => match Pin::new(inc).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(BodyError::Read(e)))),
                Poll::Ready(Some(Ok(f))) => f,
            },
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
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Empty => SizeHint::with_exact(0),
            Inner::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Inner::Incoming(i) => i.size_hint(),
        }
    }
}
