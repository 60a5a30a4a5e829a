//! What a pool reports about itself: counts ([`Stats`]) and whether it is
//! worth sending work to ([`Health`]).

use std::time::Instant;

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
    /// Items ended by policy: idle too long, `max_requests`, `max_age`.
    pub retired: u64,
    /// Items their peer ended, as it may (a server closed an idle
    /// connection): no failure.
    pub ended: u64,
    /// Items whose lease was dropped without a verdict (cancelled requests).
    pub abandoned: u64,
    /// Requests completed cleanly (leases released).
    pub requests: u64,
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
