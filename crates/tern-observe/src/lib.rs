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

/// `t` in seconds since the Unix epoch (0 before it): the figure every
/// page, scrape and event shows times in.
pub(crate) fn unix_seconds(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The wall-clock time of `at` (an `Instant` just read), from an anchor
/// each thread refreshes once a second: a request's log phase reads one
/// clock, not two (a clock read cost ~45 ns on the machine measured,
/// examples/record_cost.rs). A clock set by NTP shows within a second.
pub fn wall_clock(at: std::time::Instant) -> std::time::SystemTime {
    use std::cell::Cell;
    use std::time::{Duration, Instant, SystemTime};
    thread_local! {
        static ANCHOR: Cell<Option<(Instant, SystemTime)>> = const { Cell::new(None) };
    }
    ANCHOR.with(|a| match a.get() {
        Some((i, s)) if at >= i && at - i < Duration::from_secs(1) => s + (at - i),
        _ => {
            let s = SystemTime::now();
            a.set(Some((at, s)));
            s
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, SystemTime};

    #[test]
    fn the_wall_clock_of_an_instant_is_the_system_clock_within_a_millisecond() {
        for _ in 0..3 {
            let i = Instant::now();
            let w = super::wall_clock(i);
            let s = SystemTime::now();
            let gap = s.duration_since(w).unwrap_or_else(|e| e.duration());
            assert!(gap < Duration::from_millis(1), "{gap:?}");
            std::thread::sleep(Duration::from_millis(600));
        }
    }
}
