//! A checked-out item, and the verdict that ends its lease.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

use crate::shared::Shared;
use crate::state::Entry;
use crate::{Factory, Retire};

/// One item, lent for one request. End it with [`Lease::release`] (the
/// request completed cleanly) or [`Lease::discard`] (the item is broken).
/// Dropped without either (a cancelled request, whose channel is out of
/// step), the item is destroyed as [`Retire::Abandoned`].
pub struct Lease<F: Factory> {
    shared: Arc<Shared<F>>,
    /// `Some` until the verdict: `release` and `discard` take it.
    entry: Option<Entry<F::Item>>,
}

impl<F: Factory> Lease<F> {
    pub(crate) fn new(shared: Arc<Shared<F>>, entry: Entry<F::Item>) -> Self {
        Self {
            shared,
            entry: Some(entry),
        }
    }

    fn entry(&self) -> &Entry<F::Item> {
        self.entry
            .as_ref()
            .expect("a lease holds its item until its verdict")
    }

    /// The request completed cleanly: counts a request (on the item's seat
    /// too, with its duration since [`serving`](Self::serving)) and ends
    /// any backoff.
    /// The item goes to the oldest waiter, or idle; unless it reached
    /// `max_requests` or `max_age`, when it is destroyed (as
    /// [`Retire::Recycled`] or [`Retire::Aged`]) and replaced if needed.
    pub fn release(mut self) {
        if let Some(entry) = self.entry.take() {
            let cfg = &self.shared.cfg;
            let now = Instant::now();
            entry.seat.end(now);
            let wake = self.shared.lock().release(entry, cfg, now);
            self.shared.wake_if(wake);
        }
    }

    /// The item cannot serve again (a crash, a protocol error, a timeout):
    /// it is destroyed for `why`. [`Retire::Broken`] counts as a failure
    /// for the backoff.
    pub fn discard(mut self, why: Retire) {
        self.end(why);
    }

    /// A request starts on the item: reports show `target` (the request's
    /// name for a status page) and how long it has run, until the lease
    /// ends; [`release`](Self::release) records its duration. Costs one
    /// uncontended lock of the item's own seat. Called again (the same
    /// request sent again on this item), it starts anew.
    pub fn serving(&self, target: Arc<str>) {
        self.entry().seat.begin(target, Instant::now());
    }

    /// The item's process id, when it is a process (as
    /// [`Factory::pid`] said when it was made).
    pub fn worker_pid(&self) -> Option<u32> {
        self.entry().seat.pid()
    }

    /// The factory that made the item.
    pub fn factory(&self) -> &F {
        &self.shared.factory
    }

    /// When the item was created.
    pub fn created_at(&self) -> Instant {
        self.entry().created_at()
    }

    /// Requests the item completed cleanly before this lease.
    pub fn requests(&self) -> u64 {
        self.entry().requests
    }

    fn end(&mut self, why: Retire) {
        if let Some(entry) = self.entry.take() {
            let cfg = &self.shared.cfg;
            let wake = self.shared.lock().discard(entry, why, cfg, Instant::now());
            self.shared.wake_if(wake);
        }
    }
}

impl<F: Factory> Drop for Lease<F> {
    fn drop(&mut self) {
        self.end(Retire::Abandoned);
    }
}

impl<F: Factory> Deref for Lease<F> {
    type Target = F::Item;

    fn deref(&self) -> &F::Item {
        &self.entry().item
    }
}

impl<F: Factory> DerefMut for Lease<F> {
    fn deref_mut(&mut self) -> &mut F::Item {
        &mut self
            .entry
            .as_mut()
            .expect("a lease holds its item until its verdict")
            .item
    }
}

impl<F: Factory> fmt::Debug for Lease<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("pool", &self.shared.cfg.name)
            .field("requests", &self.entry.as_ref().map(|e| e.requests))
            .finish_non_exhaustive()
    }
}
