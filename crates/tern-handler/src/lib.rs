//! The contract between `tern-server` and the handlers (static files, gateways,
//! WebAssembly): the [`Handler`] trait, the [`Exchange`] a handler receives,
//! the [`ResponseBody`] it returns, and [`HandlerError`], which maps a failure
//! to an HTTP status in one place.
//!
//! The server knows no concrete handler; the `tern` binary builds handlers from
//! the configuration and hands them to the server as `Arc<dyn Handler>`.
#![forbid(unsafe_code)]

mod body;
mod error;
mod exchange;
mod fed;
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
pub use pattern::RoutePattern;
pub use report::{PoolReport, ServedBy, WaitHistogram, WorkerReport, QUEUE_WAIT_BUCKETS};

/// The future a handler returns. Boxed: one allocation per request is cheap
/// next to a syscall, and it keeps `Handler` object-safe.
pub type HandlerFuture = Pin<Box<dyn Future<Output = http::Response<ResponseBody>> + Send>>;

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
