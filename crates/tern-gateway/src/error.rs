//! The crate's one error type, and the one place its variants become HTTP
//! statuses.

use std::io;
use std::path::PathBuf;

use tern_handler::HandlerError;

/// Why a gateway could not be built or a request could not be answered.
/// Each variant says what the caller does next: [`Error::status_error`]
/// maps it to the status the client gets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The script directory cannot be opened (building the handler).
    #[error("script directory `{path}`: {source}")]
    ScriptDir {
        /// The configured directory.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// No script for this path (404).
    #[error("no script: {0}")]
    NoScript(String),
    /// The path names something that may not run (403).
    #[error("not runnable: {0}")]
    NotRunnable(String),
    /// Two request header names map to the same variable (`X-A` and `X_A`
    /// both make HTTP_X_A); the request is refused (400).
    #[error("header fields `{0}` and `{1}` map to the same variable")]
    HeaderCollision(String, String),
    /// A header value starts with `() {` and the route refuses those (400).
    #[error("header `{0}` looks like a bash function definition (Shellshock)")]
    Shellshock(String),
    /// The request cannot be put to this kind of worker, e.g. a line
    /// break in a variable for a record-mode CGIplus script (400).
    #[error("{0}")]
    Refused(String),
    /// A value that cannot go into an environment (NUL) (400).
    #[error("`{0}` contains a NUL byte")]
    NulInValue(String),
    /// The script's response head was malformed (502).
    #[error("bad response head: {0}")]
    Head(#[from] HeadError),
    /// The script could not be started (403 when the kernel says it may
    /// not be executed; else 500: a missing `#!` interpreter, a bad format).
    #[error("starting {path}: {source}")]
    Spawn {
        /// The program.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// The script wrote nothing within the timeout (504).
    #[error("no output within {0:?}")]
    Timeout(std::time::Duration),
    /// Every slot is busy and the queue is full, or the wait in it took
    /// too long (503).
    #[error("{0}")]
    Busy(&'static str),
    /// A persistent worker failed mid-request: it crashed, closed the
    /// connection, or broke the protocol (502; the worker is replaced).
    #[error("the worker failed: {0}")]
    Worker(String),
    /// The application cannot be reached or started: connections are
    /// refused, spawning fails (502, at once rather than after a wait).
    #[error("the application is unavailable: {0}")]
    Unavailable(String),
    /// Local redirects went deeper than the cap (500).
    #[error("more than {0} local redirects")]
    RedirectLoop(usize),
    /// Reading or spooling the request body failed.
    #[error(transparent)]
    Body(#[from] tern_handler::BodyError),
    /// An I/O failure on our side (500).
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// How a script's response head was malformed: each is a 502 and a log
/// line naming the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadError {
    /// The script's output ended before the blank line that ends the head.
    #[error("the output ended before the end of the header ({0} bytes)")]
    Truncated(usize),
    /// The head is larger than the cap.
    #[error("the header is larger than {0} bytes")]
    TooLarge(usize),
    /// The head has no fields at all.
    #[error("no header fields")]
    Empty,
    /// A line that is not `name: value`.
    #[error("line {0}: not a header field")]
    NotAField(usize),
    /// A field continued on the next line (obsolete line folding).
    #[error("line {0}: folded header line")]
    Folded(usize),
    /// A field name that is not an HTTP token.
    #[error("line {0}: bad field name")]
    BadName(usize),
    /// CR, NUL or another control character inside a value.
    #[error("line {0}: control character in the value of `{1}`")]
    BadValue(usize, String),
    /// `Status`, `Location` or `Content-Type` more than once.
    #[error("`{0}` given more than once")]
    Repeated(&'static str),
    /// `Status` is not `3DIGIT [SP reason]` in 200..=599, or an NPH
    /// status line is not `HTTP/x.y 3DIGIT [reason]`.
    #[error("bad status `{0}`")]
    BadStatus(String),
    /// `Location` is neither a local path nor an absolute URI.
    #[error("bad Location `{0}`")]
    BadLocation(String),
    /// A document without `Content-Type` (and without `Status`).
    #[error("no Content-Type")]
    NoContentType,
}

impl Error {
    /// The client-facing error for this failure.
    pub fn status_error(self) -> HandlerError {
        let reason = self.to_string();
        match self {
            Error::NoScript(_) => HandlerError::NotFound,
            Error::NotRunnable(_) => HandlerError::Forbidden(reason),
            Error::HeaderCollision(..)
            | Error::Shellshock(_)
            | Error::NulInValue(_)
            | Error::Refused(_) => HandlerError::BadRequest(reason),
            Error::Head(_) | Error::Worker(_) | Error::Unavailable(_) => {
                HandlerError::BadGateway(reason)
            }
            // EACCES: a `noexec` mount, or no execute bit for tern's user.
            Error::Spawn { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
                HandlerError::Forbidden(reason)
            }
            Error::Timeout(_) => HandlerError::GatewayTimeout(reason),
            Error::Busy(_) => HandlerError::Unavailable(reason),
            Error::Body(b) => b.into(),
            Error::ScriptDir { .. }
            | Error::Spawn { .. }
            | Error::RedirectLoop(_)
            | Error::Io(_) => HandlerError::Internal(reason),
        }
    }
}
