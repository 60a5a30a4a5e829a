//! The crate's one error type, and the one place its variants become HTTP
//! statuses (and failures in the route's report).

use std::path::PathBuf;
use std::time::Duration;

use tern_handler::{BodyError, HandlerError};

use crate::tally::Failure;

/// Why a module could not be loaded or a request could not be answered.
/// [`Error::status_error`] maps each to the status the client gets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The module cannot be read, is not valid WebAssembly, or lacks an
    /// export a WASI command needs (building the handler).
    #[error("module `{path}`: {reason}")]
    Load {
        /// The configured module.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The engine could not be set up (building the handler).
    #[error("the WebAssembly engine: {0}")]
    Engine(String),
    /// The module trapped (500): `unreachable`, a bad memory access, a
    /// stack overflow, a failed host call.
    #[error("{0}")]
    Trap(String),
    /// The run took longer than the route's timeout and was interrupted
    /// (504).
    #[error("still running after {0:?}")]
    Timeout(Duration),
    /// The module tried to grow its memory beyond the limit (500).
    #[error("memory beyond the limit of {0} bytes")]
    OutOfMemory(u64),
    /// The module wrote more than `max_output_bytes` to stdout; it was
    /// stopped (502: its response cannot be trusted to be whole).
    #[error("output beyond the limit of {0} bytes")]
    OutputTooLarge(u64),
    /// The module exited with a nonzero status before writing a whole
    /// response head (502, as a script that fails would be).
    #[error("exited with status {0} before a complete response head")]
    Exit(i32),
    /// The module was stopped because its output is no longer read (the
    /// client left): no one gets a status.
    #[error("stopped: the response is no longer read")]
    Abandoned,
    /// A proxy component set an error as its response, or none at all
    /// (502, as a script that fails before its head).
    #[error("no response: {0}")]
    NoResponse(String),
    /// The module could not be instantiated for this request (500).
    #[error("instantiating: {0}")]
    Instantiate(String),
    /// Reading the request body failed (its own status: 400, 408, 413).
    #[error(transparent)]
    Body(#[from] BodyError),
    /// The request could not be put to the module (its environment), its
    /// response head was malformed, or every instance was busy and the
    /// queue full: the CGI core's own error and status (503 with
    /// `Retry-After` for the last).
    #[error(transparent)]
    Cgi(#[from] tern_cgi::Error),
}

impl Error {
    /// The client-facing error for this failure.
    pub fn status_error(self) -> HandlerError {
        let reason = self.to_string();
        match self {
            Error::Timeout(_) => HandlerError::GatewayTimeout(reason),
            Error::OutputTooLarge(_) | Error::Exit(_) | Error::NoResponse(_) => {
                HandlerError::BadGateway(reason)
            }
            Error::Body(e) => e.into(),
            Error::Cgi(e) => e.status_error(),
            Error::Load { .. }
            | Error::Engine(_)
            | Error::Trap(_)
            | Error::OutOfMemory(_)
            | Error::Abandoned
            | Error::Instantiate(_) => HandlerError::Internal(reason),
        }
    }

    /// The failure a run that ended with this error counts as in the
    /// route's report: a trap, time run out, the memory limit; the others
    /// are no failure of the module's run (its output, its exit, its
    /// client, the request) or are not runs at all.
    pub(crate) fn failure(&self) -> Option<Failure> {
        match self {
            Error::Trap(_) => Some(Failure::Trap),
            Error::Timeout(_) => Some(Failure::Timeout),
            Error::OutOfMemory(_) => Some(Failure::Memory),
            Error::Load { .. }
            | Error::Engine(_)
            | Error::OutputTooLarge(_)
            | Error::Exit(_)
            | Error::Abandoned
            | Error::NoResponse(_)
            | Error::Instantiate(_)
            | Error::Body(_)
            | Error::Cgi(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    #[test]
    fn limits_map_to_their_statuses() {
        let cases = [
            (Error::Timeout(Duration::from_secs(1)), 504),
            (Error::OutputTooLarge(10), 502),
            (Error::OutOfMemory(10), 500),
            (Error::Cgi(tern_cgi::Error::Busy("queue full")), 503),
            (Error::Trap("unreachable".into()), 500),
            (
                Error::Cgi(tern_cgi::Error::Head(tern_cgi::HeadError::NoContentType)),
                502,
            ),
        ];
        for (e, status) in cases {
            assert_eq!(
                e.status_error().status(),
                StatusCode::from_u16(status).unwrap()
            );
        }
    }
}
