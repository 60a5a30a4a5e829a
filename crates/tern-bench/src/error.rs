//! The crate's one error type, grouped by what the caller does next: fix the
//! arguments (exit 2), or report a failure of the tool's own environment.
//!
//! Failures of the *measured* server (refused, reset, timed out) are never an
//! `Error`: they are counted in the result (see [`crate::ErrorClass`]).

use std::path::PathBuf;

/// Why `tern bench` or `tern suite` could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The arguments make no sense (bad URL, `-n` with `-d`, zero connections,
    /// ...). The CLI prints it and exits with status 2.
    #[error("{0}")]
    Usage(String),
    /// A file the tool had to read or write.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file that should hold a `tern bench --json` result does not.
    #[error("{}: not a tern-bench result: {message}", path.display())]
    ResultFormat {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The TLS handshake with a target failed before the run (an untrusted
    /// certificate, a name it does not cover, a version the server refuses).
    #[error("{url}: {reason}")]
    Tls {
        /// The URL.
        url: String,
        /// rustls' reason.
        reason: String,
    },
    /// Server CPU accounting failed (no such process, no such cgroup).
    #[error("server CPU: {0}")]
    Cpu(String),
    /// The tool's own machinery (threads, runtimes, temp dirs, child processes).
    #[error("{context}: {source}")]
    System {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Shorthand for [`Error::Usage`].
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// Shorthand for [`Error::System`].
    pub fn system(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::System {
            context: context.into(),
            source,
        }
    }

    /// True when the user should fix the command line (exit status 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}
