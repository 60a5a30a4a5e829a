//! Static files for tern: a document root served correctly (RFC 9110) and
//! fast.
//!
//! [`StaticFiles`] is the handler. It maps the whole decoded request path
//! beneath the root (nginx `root`, not `alias`: a route `/docs` with root
//! `/srv` serves `/docs/a.html` from `/srv/docs/a.html`). A request's way
//! through it:
//! - `resolve`: the decoded path is opened beneath the root's directory
//!   descriptor with `openat2(RESOLVE_BENEATH)`, so nothing outside the root
//!   is ever reached (symlinks refused unless configured, and then only those
//!   that stay inside; dot-files hidden unless configured).
//! - `serve`: directories redirect (no slash), serve an index file, list, or
//!   answer 403; sidecars (`.br`, `.zst`, `.gz`) are found and
//!   `encoding` chooses one from `Accept-Encoding`.
//! - `response`: `conditional` (the RFC 9110 §13.2.2 precondition order) and
//!   `range` (single, suffix, open and multipart ranges) decide the reply;
//!   it renders from memory or streams the file (`body`), never blocking
//!   the runtime.
//! - `cache`: [`FileCache`] keeps small files as ready responses, so a hit
//!   is a hash lookup and reference-count clones, with no syscall until the
//!   entry is due for revalidation; for a site that keeps no bodies, open
//!   files, so a hit is a lookup, an `fstat` and a read.
#![forbid(unsafe_code)]

mod body;
mod cache;
mod conditional;
mod docroot;
mod encoding;
mod handler;
mod listing;
mod mime;
mod multipart;
mod range;
mod representation;
mod resolve;
mod response;
mod serve;

use std::path::PathBuf;

pub use cache::{CacheStats, FileCache};
pub use handler::StaticFiles;

/// Why a static handler could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The document root cannot be opened as a directory (missing, not a
    /// directory, or not accessible).
    #[error("document root {}", path.display())]
    Root {
        /// The configured root.
        path: PathBuf,
        /// Why it could not be opened.
        #[source]
        source: std::io::Error,
    },
    /// A media-type override is not a valid header value.
    #[error("media type {value:?} for extension {extension:?} is not a valid header value")]
    MediaType {
        /// The extension, as configured.
        extension: String,
        /// The media type, as configured.
        value: String,
    },
}
