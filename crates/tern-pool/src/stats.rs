//! What a pool reports about itself: counts ([`Stats`], with its
//! [`QueueWait`] histogram), each item alive ([`ItemStats`], together in a
//! [`Snapshot`]), and whether it is worth sending work to ([`Health`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tern_handler::QUEUE_WAIT_BUCKETS;

/// A snapshot of a pool's gauges and counters, taken under its lock, so
/// the numbers agree with each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Items out on a lease (or handed to a waiter that has yet to wake).
    pub busy: usize,
    /// Items waiting for a checkout.
    pub idle: usize,
    /// Items being created.
    pub starting: usize,
    /// Items being destroyed (or waiting for the manager to destroy them).
    pub destroying: usize,
    /// Checkouts waiting for an item.
    pub queued: usize,
    /// Items created since the start.
    pub created: u64,
    /// Creations that failed.
    pub create_failures: u64,
    /// Items that broke: discarded as [`Retire::Broken`](crate::Retire::Broken),
    /// or found dead while idle.
    pub crashed: u64,
    /// Items ended by policy: idle too long, `max_requests`, `max_age`
    /// (the sum of the three `retired_` counters below).
    pub retired: u64,
    /// Items ended for sitting idle longer than `idle_timeout`
    /// ([`Retire::Idle`](crate::Retire::Idle)).
    pub retired_idle: u64,
    /// Items ended after `max_requests`
    /// ([`Retire::Recycled`](crate::Retire::Recycled)).
    pub retired_requests: u64,
    /// Items ended past `max_age` ([`Retire::Aged`](crate::Retire::Aged)).
    pub retired_age: u64,
    /// Items their peer ended, as it may (a server closed an idle
    /// connection): no failure.
    pub ended: u64,
    /// Items whose lease was dropped without a verdict (cancelled requests).
    pub abandoned: u64,
    /// Requests completed cleanly (leases released).
    pub requests: u64,
    /// How long checkouts waited for their item.
    pub queue_wait: QueueWait,
}

/// How long checkouts waited for an item, from the moment they queued to
/// the moment one was handed to them (a checkout served at once waited
/// zero), counted into [`QUEUE_WAIT_BUCKETS`]. Counted under the pool's
/// lock as the item is handed over, so a checkout that gives up just as
/// its item comes counts too; one that timed out does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueWait {
    /// Checkouts per bucket, not cumulative: `counts[i]` waited at most
    /// `QUEUE_WAIT_BUCKETS[i]` seconds and more than the bucket before;
    /// the last is `+Inf`.
    pub counts: [u64; QUEUE_WAIT_BUCKETS.len() + 1],
    /// The sum of every wait.
    pub sum: Duration,
}

impl QueueWait {
    /// Counts one wait.
    pub(crate) fn record(&mut self, wait: Duration) {
        let at = if wait.is_zero() {
            0
        } else {
            let secs = wait.as_secs_f64();
            QUEUE_WAIT_BUCKETS
                .iter()
                .position(|&bound| secs <= bound)
                .unwrap_or(QUEUE_WAIT_BUCKETS.len())
        };
        self.counts[at] += 1;
        self.sum += wait;
    }
}

/// A pool's counters and its items alive, taken together under its lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The gauges and counters.
    pub stats: Stats,
    /// Each item alive, idle or leased, oldest first.
    pub items: Vec<ItemStats>,
}

/// One item alive, as a status page shows it (php-fpm's `?full`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemStats {
    /// Its process, when [`Factory::pid`](crate::Factory::pid) names one.
    pub pid: Option<u32>,
    /// Out on a lease (else idle in the pool).
    pub busy: bool,
    /// Requests it completed cleanly.
    pub requests: u64,
    /// How long it has lived.
    pub age: Duration,
    /// The request it serves now, as [`Lease::serving`](crate::Lease::serving)
    /// named it, and how long it has run.
    pub current: Option<(Arc<str>, Duration)>,
    /// How long its last completed request ran (from `serving` to
    /// `release`).
    pub last_duration: Option<Duration>,
}

/// Whether a pool is worth sending work to, for spreading load across
/// several pools (prefer one that is `Ready`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Creating items works, or the backoff after a failure is over and
    /// the pool will try again.
    Ready,
    /// Creation (or the items themselves) failed lately, and the pool waits
    /// before trying again. With no item alive, checkouts fail at once with
    /// [`PoolError::Unavailable`](crate::PoolError::Unavailable) until `until`.
    BackingOff {
        /// When the next creation may start.
        until: Instant,
        /// Failures since the last cleanly completed request.
        consecutive_failures: u32,
        /// What the last failure said.
        last_error: String,
    },
    /// The pool is closing or closed.
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_land_in_the_first_bucket_that_holds_them() {
        let mut w = QueueWait::default();
        w.record(Duration::ZERO);
        w.record(Duration::from_micros(100));
        w.record(Duration::from_millis(30));
        w.record(Duration::from_secs(60));
        let mut want = [0; QUEUE_WAIT_BUCKETS.len() + 1];
        want[0] = 2; // zero, and exactly the first bound
        want[5] = 1; // 0.05
        want[QUEUE_WAIT_BUCKETS.len()] = 1; // +Inf
        assert_eq!(w.counts, want);
        assert_eq!(
            w.sum,
            Duration::from_secs(60) + Duration::from_millis(30) + Duration::from_micros(100)
        );
    }
}
