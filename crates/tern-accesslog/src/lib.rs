//! tern's access log: Common, Combined and JSON lines that both render and
//! parse, and a writer that keeps file I/O off the request path.
//!
//! The server fills in an [`AccessRecord`] when a response ends and hands it
//! to [`AccessLog::log`], which queues it for a writer thread that renders
//! lines with [`render`] and writes them in batches. The binary calls
//! [`AccessLog::reopen`] on SIGUSR1 (log rotation) and [`AccessLog::flush`]
//! at shutdown. `tern bench` reads logs back with [`parse`] (and
//! [`detect_format`]) to build workloads; `parse(render(r))` gives back `r`
//! up to what the format carries (see [`render`]).
//!
//! The formats are pure (no clock, no files); only [`AccessLog`] does I/O.
#![forbid(unsafe_code)]

mod error;
mod format;
mod record;
mod writer;

pub use error::{Error, ParseError};
pub use format::{detect_format, parse, render, rfc3339_seconds};
pub use record::AccessRecord;
pub use tern_config::LogFormat;
pub use writer::{AccessLog, LogCounts};
