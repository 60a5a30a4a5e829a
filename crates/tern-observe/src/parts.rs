//! What the admin pages show beyond the observer's own records: the
//! figures of the server's parts (configuration, file cache, worker pools,
//! access log), which only the binary can reach, handed over as [`Parts`]
//! by a [`Source`] each time a page is asked for.

use std::time::SystemTime;

use tern_handler::PoolReport;

/// The server's parts, now.
#[derive(Debug, Clone)]
pub struct Parts {
    /// The configuration generation serving (1 at start, +1 per reload).
    pub generation: u64,
    /// When it was loaded.
    pub loaded: SystemTime,
    /// When the server started.
    pub started: SystemTime,
    /// Worker threads.
    pub workers: usize,
    /// Where it listens.
    pub listeners: Vec<String>,
    /// The file cache, when on.
    pub cache: Option<CacheFigures>,
    /// Every worker pool of every route.
    pub pools: Vec<PoolReport>,
    /// The access log, when on.
    pub access_log: Option<LogFigures>,
}

/// The file cache's counters and gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheFigures {
    /// Requests answered from memory.
    pub hits: u64,
    /// Requests that needed the file system.
    pub misses: u64,
    /// Entries dropped to stay within the size.
    pub evictions: u64,
    /// Entries held.
    pub entries: u64,
    /// Body bytes held.
    pub bytes: u64,
}

/// The access log writer's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LogFigures {
    /// The file.
    pub path: String,
    /// Lines written.
    pub lines: u64,
    /// Lines lost to failed writes (a full disk; each burst logged).
    pub lost: u64,
}

/// Whether tern should be sent traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Yes.
    Ready,
    /// No, and why (`"shutting down"`, `"pool site /app: 0 of 2 workers
    /// ready"`).
    NotReady(String),
}

/// The binary's side of the admin listener.
pub trait Source: Send + Sync + 'static {
    /// The parts' figures now.
    fn parts(&self) -> Parts;
    /// Whether to send tern traffic (`/readyz`).
    fn readiness(&self) -> Readiness;
}
