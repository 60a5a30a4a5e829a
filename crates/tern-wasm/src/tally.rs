//! What a route's runs came to, for the status page and the metrics:
//! instances running now, runs finished, and the failures among them by
//! cause. Plain relaxed atomics, bumped where a run starts and ends.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// The failures a report counts, by cause; [`Error::failure`] names the
/// cause of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The module trapped.
    Trap,
    /// It ran out of time (its timeout, or a stalled output).
    Timeout,
    /// It tried to grow its memory beyond the limit.
    Memory,
}

impl Failure {
    const ALL: [Failure; 3] = [Failure::Trap, Failure::Timeout, Failure::Memory];

    fn name(self) -> &'static str {
        match self {
            Failure::Trap => "trap",
            Failure::Timeout => "timeout",
            Failure::Memory => "memory",
        }
    }
}

/// One route's counters.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    running: AtomicU64,
    finished: AtomicU64,
    /// Indexed by `Failure as usize`.
    failures: [AtomicU64; 3],
}

/// A run under way: counted as running while it lives, and as finished
/// when it goes (whether it ended by itself or was dropped, its client
/// gone).
#[derive(Debug)]
pub(crate) struct Active<'a>(&'a Tally);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
        self.0.finished.fetch_add(1, Ordering::Relaxed);
    }
}

impl Tally {
    /// A run starts.
    pub(crate) fn start(&self) -> Active<'_> {
        self.running.fetch_add(1, Ordering::Relaxed);
        Active(self)
    }

    /// A run ended with `error`: counted if it is a failure a report shows.
    pub(crate) fn failed(&self, error: &Error) {
        if let Some(f) = error.failure() {
            self.failures[f as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Instances running now.
    pub(crate) fn running(&self) -> u64 {
        self.running.load(Ordering::Relaxed)
    }

    /// Runs finished, failures included.
    pub(crate) fn finished(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }

    /// The failures by cause, each cause named.
    pub(crate) fn failures(&self) -> Vec<(&'static str, u64)> {
        Failure::ALL
            .iter()
            .map(|&f| (f.name(), self.failures[f as usize].load(Ordering::Relaxed)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn runs_count_while_they_live_and_failures_by_cause() {
        let t = Tally::default();
        let a = t.start();
        let b = t.start();
        assert_eq!((t.running(), t.finished()), (2, 0));
        t.failed(&Error::Trap("unreachable".into()));
        t.failed(&Error::Timeout(Duration::from_secs(1)));
        t.failed(&Error::Timeout(Duration::from_secs(1)));
        t.failed(&Error::OutOfMemory(10));
        t.failed(&Error::Exit(1));
        drop((a, b));
        assert_eq!((t.running(), t.finished()), (0, 2));
        assert_eq!(t.failures(), [("trap", 1), ("timeout", 2), ("memory", 1)]);
    }
}
