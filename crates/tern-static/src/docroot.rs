//! [`DocRoot`]: one configured static root, immutable once built — what
//! the handler's fast path (`handler.rs`) and the slow path (`serve.rs`)
//! both read. (A root is not a site: a site may route several roots.)

use std::path::PathBuf;
use std::sync::Arc;

use crate::cache::FileCache;
use crate::mime::MimeMap;
use crate::resolve::Root;

/// A site's cache: the shared cache, this site's namespace in it, and
/// whether the site keeps bodies there or only open files.
#[derive(Debug)]
pub(crate) struct SiteCache {
    pub(crate) cache: Arc<FileCache>,
    pub(crate) ns: u32,
    pub(crate) bodies: bool,
}

/// One configured static root, immutable once built.
#[derive(Debug)]
pub(crate) struct DocRoot {
    pub(crate) root: Root,
    pub(crate) root_path: PathBuf,
    pub(crate) index: Vec<String>,
    pub(crate) listing: bool,
    pub(crate) follow_symlinks: bool,
    pub(crate) dotfiles: bool,
    pub(crate) precompressed: bool,
    pub(crate) mime: MimeMap,
    pub(crate) max_ranges: usize,
    pub(crate) cache: Option<SiteCache>,
}
