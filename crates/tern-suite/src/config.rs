//! What a suite run is asked to do ([`SuiteConfig`]): which servers, which
//! rows, how long each cell runs. The command line fills it in (`cli.rs`);
//! tests build it directly.

use std::path::PathBuf;
use std::time::Duration;

use crate::peer::PeerKind;
use crate::process::default_search_path;
use crate::row::Registry;

/// Everything a suite run needs.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// The tern binary, or `None` to measure only peers.
    pub tern: Option<PathBuf>,
    /// Peers to start (those not installed are skipped with a note).
    pub peers: Vec<PeerKind>,
    /// Rows and fixtures.
    pub registry: Registry,
    /// Rounds (cells show medians).
    pub rounds: u32,
    /// Measured time per cell.
    pub duration: Duration,
    /// Warm-up per cell.
    pub warmup: Duration,
    /// Request timeout.
    pub timeout: Duration,
    /// Directories searched for peer executables.
    pub search_path: Vec<PathBuf>,
    /// No progress lines on stderr.
    pub quiet: bool,
}

impl SuiteConfig {
    /// Defaults: tern from `tern`, no peers, the seed rows (static, CGI,
    /// persistent, engines, wasm, ssl), one round of 5 s after a 1 s warm-up
    /// with a 10 s request timeout, peers looked for in
    /// [`default_search_path`].
    pub fn new(tern: Option<PathBuf>) -> SuiteConfig {
        SuiteConfig {
            tern,
            peers: Vec::new(),
            registry: Registry::seed(),
            rounds: 1,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            search_path: default_search_path(),
            quiet: false,
        }
    }
}
