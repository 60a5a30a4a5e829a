//! What a suite run is asked to do ([`SuiteConfig`]): which servers, which
//! rows, how long each cell runs. The command line fills it in (`cli.rs`);
//! tests build it directly.

use std::path::PathBuf;
use std::time::Duration;

use crate::peer::PeerKind;
use crate::process::default_search_path;
use crate::row::Registry;
use tern_workload::Model;

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
    /// What the "webstone" section replays (when its rows are in the
    /// registry).
    pub webstone: WebstoneConfig,
}

impl SuiteConfig {
    /// Defaults: tern from `tern`, no peers, the seed rows (static, CGI,
    /// persistent, engines, wasm, ssl, webstone), one round of 5 s after a
    /// 1 s warm-up with a 10 s request timeout, peers looked for in
    /// [`default_search_path`]; the "webstone" section replays the bundled
    /// news site ([`WebstoneConfig::bundled`]).
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
            webstone: WebstoneConfig::bundled(),
        }
    }
}

/// What the section replays, and how fast.
#[derive(Debug, Clone)]
pub struct WebstoneConfig {
    /// The model.
    pub model: Model,
    /// What the report calls it: its file, or the bundled site's name.
    pub model_name: String,
    /// Sessions started per second (Poisson arrivals).
    pub sessions_per_second: f64,
    /// The model's think times are multiplied by this, so that a short
    /// run sees the users' later pages too.
    pub think_scale: f64,
}

impl WebstoneConfig {
    /// The bundled news site, 10 sessions per second, think times × 0.1.
    pub fn bundled() -> WebstoneConfig {
        WebstoneConfig {
            model: crate::news::model(),
            model_name: crate::news::NAME.to_owned(),
            sessions_per_second: 10.0,
            think_scale: 0.1,
        }
    }
}
