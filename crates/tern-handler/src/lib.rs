//! The contract between `tern-server` and the handlers (static files, gateways,
//! WebAssembly): the [`Handler`] trait, the [`Exchange`] a handler receives,
//! the [`ResponseBody`] it returns, and [`HandlerError`], which maps a failure
//! to an HTTP status in one place.
//!
//! A response may carry fields shared with other responses on its body
//! ([`SharedFields`], made with [`shared_response`]) rather than in its
//! map: whoever reads a handler's response fields, other than tern's
//! HTTP/1 writer, calls [`settle_fields`] first.
//!
//! The server knows no concrete handler; the `tern` binary builds handlers from
//! the configuration and hands them to the server as `Arc<dyn Handler>`.
#![forbid(unsafe_code)]

mod body;
mod error;
mod exchange;
mod fed;
mod fields;
pub mod path;
mod pattern;
mod report;

use std::future::Future;
use std::pin::Pin;

pub use body::{
    worth_sending_from_file, BodyError, BodyPace, FileRegion, Leftover, RequestBody, ResponseBody,
    SEND_FILE_MAX, SEND_FILE_MIN,
};
pub use error::{error_response, HandlerError};
pub use exchange::{
    AuthUser, ClientCert, ConnInfo, Exchange, InternalRedirect, OriginalTarget, PeerAddr,
    Redirected, RequestId, RouteMatch, ScriptEnv, TlsInfo, MAX_LOCAL_REDIRECTS,
};
pub use fed::{fed_body, BodySender, FedBody, ReaderGone};
pub use fields::{settle_fields, settle_into, shared_response, SharedFields};
pub use pattern::RoutePattern;
pub use report::{PoolReport, ServedBy, WaitHistogram, WorkerReport, QUEUE_WAIT_BUCKETS};

/// What a handler returns: its answer, when it has it at once (a cached
/// file, a refusal), or a boxed future of it, which keeps `Handler`
/// object-safe. The answer at once is not boxed: that allocation and its
/// copy were about 1% of a cached file's request.
pub enum HandlerFuture {
    /// The answer, until it is taken.
    Ready(Option<http::Response<ResponseBody>>),
    /// The answer to come.
    Boxed(Pin<Box<dyn Future<Output = http::Response<ResponseBody>> + Send>>),
}

impl HandlerFuture {
    /// The answer, now.
    pub fn ready(response: http::Response<ResponseBody>) -> Self {
        HandlerFuture::Ready(Some(response))
    }

    /// The answer `future` gives.
    pub fn new(
        future: impl Future<Output = http::Response<ResponseBody>> + Send + 'static,
    ) -> Self {
        HandlerFuture::Boxed(Box::pin(future))
    }

    /// The answer of the future `make` makes, made in its box
    /// ([`pin_boxed`]): for a handler whose future is large.
    pub fn made<F>(make: impl FnOnce() -> F) -> Self
    where
        F: Future<Output = http::Response<ResponseBody>> + Send + 'static,
    {
        HandlerFuture::Boxed(pin_boxed(make))
    }
}

/// The future `make` makes, in a box allocated first so that it is made
/// there. `Box::pin(future)` makes the whole future on the stack and
/// copies it into the box, all of its size, though a future not yet
/// polled holds little more than its arguments. That was a copy a
/// request of the exchange on tern's HTTP/1 loop (2,064 bytes, 220
/// instructions) and of a gateway's request future and its relay (350
/// and 240), and one of a connection's task at each new connection
/// (callgrind, docs/PERFORMANCE.md, session 39). Called after the
/// allocation, `make` writes its result into the box itself.
#[inline(always)]
pub fn pin_boxed<F>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

impl std::fmt::Debug for HandlerFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandlerFuture::Ready(r) => f
                .debug_tuple("Ready")
                .field(&r.as_ref().map(|r| r.status()))
                .finish(),
            HandlerFuture::Boxed(_) => f.write_str("Boxed"),
        }
    }
}

// The response is moved out, never pinned; the future is pinned in its box.
impl Unpin for HandlerFuture {}

impl Future for HandlerFuture {
    type Output = http::Response<ResponseBody>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            HandlerFuture::Ready(r) => {
                std::task::Poll::Ready(r.take().expect("a HandlerFuture polled after it answered"))
            }
            HandlerFuture::Boxed(f) => f.as_mut().poll(cx),
        }
    }
}

/// Something that answers requests. Implementations are immutable once built
/// (a config reload builds new ones), so `call` takes `&self`.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. Failures are turned into responses inside the
    /// handler (usually with [`HandlerError::into_response`]); the server never
    /// sees a handler error.
    fn call(&self, exchange: Exchange) -> HandlerFuture;

    /// A short name for logs and status pages (`"static"`, `"cgi"`, ...).
    fn kind(&self) -> &'static str;

    /// Whether a response may carry an [`InternalRedirect`] for the server
    /// to follow (the script handlers' local redirects). The server keeps
    /// what following one needs only for handlers that say so.
    fn redirects_locally(&self) -> bool {
        false
    }

    /// Adds a report of each of the handler's worker pools to `out`, for
    /// the status page and the metrics; handlers without pools add none.
    fn report(&self, out: &mut Vec<PoolReport>) {
        let _ = out;
    }
}
