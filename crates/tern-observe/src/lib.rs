//! tern's observability. The server records each finished request into
//! per-thread [`metrics`] (no shared write on a request's way); everything
//! else is derived when asked: the Prometheus exposition ([`expose`]), the
//! per-minute [`activity`] history (a delta of the totals, kept 28 days in
//! a fixed-size file), the status page and its [`chart`]s, and the
//! process's own figures ([`process`]).
#![forbid(unsafe_code)]

pub mod activity;
pub mod admin;
pub mod chart;
pub mod expose;
pub mod metrics;
pub mod page;
pub mod parts;
pub mod process;
pub mod scrape;
pub mod watch;

/// What the server records into and the admin listener reads: kept by the
/// binary across configuration reloads.
#[derive(Debug, Default)]
pub struct Observer {
    /// Request and connection metrics, and the request history.
    pub metrics: metrics::Metrics,
    /// The live request trace.
    pub watch: std::sync::Arc<watch::Watch>,
}
