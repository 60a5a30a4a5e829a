//! The crate's one error type, and the one place its variants become HTTP
//! statuses.

use std::io;
use std::path::PathBuf;

use tern_cgi::HeadError;
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
    /// The request cannot be put to this kind of worker, e.g. a line
    /// break in a variable for a record-mode CGIplus script (400).
    #[error("{0}")]
    Refused(String),
    /// The CGI core refused the request (its environment) or the
    /// script's answer (its head), or no slot was free: the core's own
    /// status.
    #[error(transparent)]
    Cgi(#[from] tern_cgi::Error),
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
    /// Every worker of the pool is busy and its queue is full, or the
    /// wait in it took too long (503).
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
    /// Reading or spooling the request body failed.
    #[error(transparent)]
    Body(#[from] tern_handler::BodyError),
    /// An I/O failure on our side (500).
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl From<HeadError> for Error {
    fn from(e: HeadError) -> Self {
        Error::Cgi(e.into())
    }
}

impl Error {
    /// The client-facing error for this failure.
    pub fn status_error(self) -> HandlerError {
        let reason = self.to_string();
        match self {
            Error::NoScript(_) => HandlerError::NotFound,
            Error::NotRunnable(_) => HandlerError::Forbidden(reason),
            Error::Refused(_) => HandlerError::BadRequest(reason),
            Error::Cgi(e) => e.status_error(),
            Error::Worker(_) | Error::Unavailable(_) => HandlerError::BadGateway(reason),
            // EACCES: a `noexec` mount, or no execute bit for tern's user.
            Error::Spawn { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
                HandlerError::Forbidden(reason)
            }
            Error::Timeout(_) => HandlerError::GatewayTimeout(reason),
            Error::Busy(_) => HandlerError::Unavailable(reason),
            Error::Body(b) => b.into(),
            Error::ScriptDir { .. } | Error::Spawn { .. } | Error::Io(_) => {
                HandlerError::Internal(reason)
            }
        }
    }
}
