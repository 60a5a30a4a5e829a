//! The suite's output as data ([`SuiteReport`]): the servers that ran, one
//! [`Cell`] per server and row, and the notes. The tables (`table.rs`) and
//! the ratios (`ratio.rs`) are read from it; the JSON output is it.

use serde::{Deserialize, Serialize};

use crate::row::RowSpec;

/// The suite's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    /// Machine and method, one line each.
    pub about: Vec<String>,
    /// The servers that ran, with their variant.
    pub servers: Vec<ServerInfo>,
    /// One entry per row, in registry order.
    pub rows: Vec<RowReport>,
    /// Skipped servers and other remarks.
    pub notes: Vec<String>,
    /// Remarks printed under one section's table.
    #[serde(default)]
    pub footnotes: Vec<Footnote>,
    /// The "webstone" section: a model's sessions replayed against each
    /// server and each way it serves the dynamic pages (`None` when the
    /// section did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webstone: Option<WebstoneReport>,
}

/// The "webstone" section's table: page latency of a model's sessions,
/// replayed against each server with its dynamic pages served each way it
/// can (and as static files, the baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebstoneReport {
    /// The model replayed (its file, or the bundled one).
    pub model: String,
    /// The replay in one line: rate, arrivals, think times, rounds.
    pub method: String,
    /// Page classes of the model with no dynamic file, by id.
    pub static_classes: Vec<String>,
    /// Page classes with at least one dynamic file, by id.
    pub dynamic_classes: Vec<String>,
    /// One row per server and way, servers in the order they ran.
    pub rows: Vec<WebstoneRow>,
}

/// One server, one way of serving the dynamic pages: the rounds' pages
/// together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebstoneRow {
    /// "tern", "nginx", ...
    pub server: String,
    /// How the dynamic pages were served: "static" (as files of their
    /// logged size), "CGI", "CGIplus", "FastCGI", "FastCGI spawned",
    /// "WebAssembly".
    pub way: String,
    /// How the server ran CGI ("fcgiwrap", "mod_cgi"), for CGI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Sessions started over all rounds.
    pub sessions: u64,
    /// Sessions not started because too many were under way (the server
    /// had fallen that far behind), over all rounds.
    #[serde(default)]
    pub sessions_dropped: u64,
    /// Every page.
    pub all: PageFigures,
    /// The pages of classes with no dynamic file.
    pub static_pages: PageFigures,
    /// The pages of classes with a dynamic file.
    pub dynamic_pages: PageFigures,
    /// Requests answered over all rounds.
    pub responses: u64,
    /// Requests failed over all rounds.
    pub request_errors: u64,
    /// Server CPU (its process tree, and the backend of the way) per
    /// request, µs, over all rounds.
    pub cpu_us_per_request: Option<f64>,
    /// Why the row is empty or doubtful.
    pub note: Option<String>,
}

/// Page figures of a group of page classes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PageFigures {
    /// Pages fetched whole.
    pub pages: u64,
    /// Pages with a failed file or an error status.
    pub errors: u64,
    /// Median page latency, ms, from each page's intended start.
    pub p50_ms: Option<f64>,
    /// 99th percentile page latency, ms.
    pub p99_ms: Option<f64>,
}

/// A remark on one section's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footnote {
    /// The section ("cgi").
    pub section: String,
    /// The remark.
    pub text: String,
}

/// A server variant that took part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// "tern", "nginx", ...
    pub name: String,
    /// "on", "off" or "default".
    pub cache: String,
    /// Its executable.
    pub program: String,
    /// Process id of its main process (also its process group), which was
    /// stopped at the end.
    pub pid: u32,
    /// Its loopback port.
    pub port: u16,
    /// The backends it used (its own FastCGI responder and php-fpm, stopped
    /// with it; nginx's fcgiwrap), whose CPU counted with its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendInfo>,
}

/// A backend process a server used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// "php-fpm", "fcgi-app", "fcgiwrap".
    pub name: String,
    /// Process id of its main process (also its process group).
    pub pid: u32,
}

/// The cells of one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowReport {
    /// What was measured.
    pub row: RowSpec,
    /// One cell per server variant that serves the row.
    pub cells: Vec<Cell>,
}

/// One server's figures in a row (medians over rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Server name.
    pub server: String,
    /// Its cache variant label.
    pub cache: String,
    /// How it ran a gateway row ("fcgiwrap", "mod_cgi", "mod_cgid"), shown
    /// beside the server's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Requests per second, median with min and max over rounds.
    pub rps: Option<SpreadFigures>,
    /// MB/s (2^20 bytes).
    pub mb_per_s: Option<f64>,
    /// Corrected p50, ms.
    pub p50_ms: Option<f64>,
    /// Corrected p99, ms.
    pub p99_ms: Option<f64>,
    /// Server CPU seconds (user + system) in the measured window.
    pub server_cpu_s: Option<f64>,
    /// Server CPU µs per request.
    pub cpu_us_per_request: Option<f64>,
    /// Server CPU per TLS handshake (µs, median over rounds), in TLS rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_us_per_handshake: Option<f64>,
    /// Failed requests over all rounds.
    pub errors: u64,
    /// Responses over all rounds.
    pub responses: u64,
    /// Why the cell is empty or doubtful.
    pub note: Option<String>,
}

/// Median, min and max.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpreadFigures {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}
