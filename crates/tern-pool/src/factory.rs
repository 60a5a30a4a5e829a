//! What a pool needs from its user: how to make, check and end one item,
//! and the reasons an item ends.

use std::future::Future;
use std::io;

/// Makes, checks and ends the items of one pool: spawned worker processes
/// with their channel, or connections to an external server.
///
/// Every method runs on the pool's manager thread, which runs its own
/// current_thread tokio runtime (with I/O and time enabled). Items leave
/// that thread in leases, so an item must hold no tokio object registered
/// with the manager's runtime: keep plain std types and `OwnedFd`s, and let
/// the user register them with its own runtime at checkout.
pub trait Factory: Send + Sync + 'static {
    /// One worker, connection, or whatever the pool hands out.
    type Item: Send + 'static;

    /// Makes one item. Runs on the pool's manager thread, so it may spawn a
    /// process synchronously (posix_spawn takes ~0.5 ms) but must not block
    /// for long; async waits are fine. Spawn on this thread itself, not on
    /// `spawn_blocking`: a worker's parent-death signal fires when the
    /// thread that spawned it exits, and the manager thread lives as long as
    /// the pool.
    ///
    /// An error counts as a failure: the next creation waits out a growing
    /// backoff.
    fn create(&self) -> impl Future<Output = io::Result<Self::Item>> + Send;

    /// Whether an idle item is still usable (a process that exited, a
    /// socket the peer closed). Called by the manager on its tick for idle
    /// items, never concurrently with a lease of the same item, and with
    /// the pool's lock held: it must be quick (one non-blocking syscall).
    fn is_alive(&self, item: &mut Self::Item) -> bool;

    /// Ends an item for `why` (kill and reap a process, close a socket).
    /// Runs on the manager thread, concurrently with other work, so it may
    /// wait (a process's SIGTERM, grace, SIGKILL).
    fn destroy(&self, item: Self::Item, why: Retire) -> impl Future<Output = ()> + Send;
}

/// Why an item is being destroyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Retire {
    /// It sat idle longer than `idle_timeout` while the pool had more than
    /// `min` items.
    Idle,
    /// It served `max_requests` requests.
    Recycled,
    /// It is older than `max_age`.
    Aged,
    /// It broke: a crash, a protocol error, a timeout, or an idle item that
    /// died. Counts as a failure for the backoff.
    Broken,
    /// Its lease was dropped without `release` or `discard` (a cancelled
    /// request): its channel is out of step, so it ends, but tern cancelled
    /// it, so it is no failure of the worker.
    Abandoned,
    /// The pool is closing.
    Closed,
}
