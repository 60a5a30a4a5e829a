//! The crate's errors: a log file that cannot be opened, a line that cannot
//! be read.
//!
//! They are two types because callers act on them differently: an [`Error`]
//! stops the server at startup, a [`ParseError`] skips one line of a log
//! being read.

use std::io;
use std::path::{Path, PathBuf};

/// The access log could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened for appending (missing directory, no
    /// permission).
    #[error("cannot open access log {}", path.display())]
    Open {
        /// The configured path.
        path: PathBuf,
        /// Why the open failed.
        #[source]
        source: io::Error,
    },
    /// The writer thread could not be started.
    #[error("cannot start the writer thread of access log {}", path.display())]
    Spawn {
        /// The configured path.
        path: PathBuf,
        /// Why the spawn failed.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The log file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Open { path, .. } | Error::Spawn { path, .. } => path,
        }
    }
}

/// A line that is not a record in the format it was parsed as.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A Common or Combined line lacks `field`, or holds a bad one, at byte
    /// offset `at`.
    #[error("bad or missing {field} at byte {at}")]
    Field {
        /// What the line should have held there: `"status"`, `"time"`...
        field: &'static str,
        /// Byte offset into the line.
        at: usize,
    },
    /// A JSON line is not valid JSON, or not a tern record.
    #[error("not a tern JSON access record")]
    Json(#[source] serde_json::Error),
}
