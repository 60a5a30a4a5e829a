//! The crate's error: why a model could not be drawn from logs, or a
//! document root could not be made from a model. Each names the file it is
//! about; a malformed line is not an error (it is counted, see
//! [`Malformed`](crate::Malformed)).

use std::io;
use std::path::PathBuf;

/// Why logs could not be read into a model, or a model materialized.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// None of a file's first non-empty lines parses in any format (or in
    /// the format given).
    #[error("{}: not an access log in a known format ({expected})", path.display())]
    NotALog {
        /// The file.
        path: PathBuf,
        /// The formats tried: `common, combined, json`, or the one given.
        expected: String,
    },
    /// No line of any file parsed: there is nothing to model.
    #[error("{files}: no request parsed ({lines} lines, {malformed} malformed)")]
    NothingParsed {
        /// The files read, comma-separated.
        files: String,
        /// Non-empty lines read.
        lines: u64,
        /// Lines that did not parse.
        malformed: u64,
    },
    /// The thresholds make no sense (a zero or negative gap).
    #[error("{0}")]
    Options(String),
    /// The materialized directory exists and is not empty (nothing is
    /// written into a directory that holds files already).
    #[error("{}: exists and is not empty", path.display())]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
