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

    /// Whether an idle item can still serve: a process that exited is
    /// [`Check::Dead`]; a connection its server closed is
    /// [`Check::Ended`], as servers may close connections that carry no
    /// request (php-fpm and php-cgi after 5 s, libfcgi after 2 s). An item
    /// that keeps a connection inside (a process tern connects to) may
    /// drop a closed one here and stay [`Check::Alive`]. Called by the
    /// manager on its tick for idle items, never concurrently with a lease
    /// of the same item, and with the pool's lock held: it must be quick
    /// (one non-blocking syscall or two).
    fn check(&self, item: &mut Self::Item) -> Check;

    /// Whether an idle `item` serves without setup. A checkout takes the
    /// newest warm idle item before a cold one: an item that must connect
    /// anew (a place whose connection was closed on purpose) should not
    /// connect while a warm one holds the application's process that
    /// would accept it. Called under the pool's lock: it must be quick.
    /// By default every item is warm.
    fn warm(&self, item: &Self::Item) -> bool {
        let _ = item;
        true
    }

    /// The process behind `item`, for reports; `None` when it is no
    /// process tern started (a connection). Asked once, on the manager
    /// thread, as the item is made. By default `None`.
    fn pid(&self, item: &Self::Item) -> Option<u32> {
        let _ = item;
        None
    }

    /// The pool is closing: no item will be made from now on. Release
    /// what making items needs (a directory of sockets) now, not once the
    /// last item is destroyed (stopping a process can take its grace
    /// period). Called once, on the manager thread, before the idle items
    /// are destroyed; it must be quick. By default nothing.
    fn closing(&self) {}

    /// Ends an item for `why` (kill and reap a process, close a socket).
    /// Runs on the manager thread, concurrently with other work, so it may
    /// wait (a process's SIGTERM, grace, SIGKILL).
    fn destroy(&self, item: Self::Item, why: Retire) -> impl Future<Output = ()> + Send;
}

/// What [`Factory::check`] found of an idle item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// It can serve.
    Alive,
    /// Its peer ended it, as peers may (a server closed a connection that
    /// sat idle): it goes without counting as a failure, and it is not
    /// made again to keep `min` until a checkout finds the pool empty (a
    /// server that closes idle connections does not want them kept).
    Ended,
    /// It died (a process that exited). Young and before serving a
    /// request, that counts as a failure (a program that crashes as it
    /// starts); later, it is replaced without one.
    Dead,
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
    /// It ended by its peer's doing, as it may, before it took a request:
    /// a connection the server closed while it sat idle, a worker that
    /// exited after serving its share. No failure.
    Ended,
    /// Its lease was dropped without `release` or `discard` (a cancelled
    /// request): its channel is out of step, so it ends, but tern cancelled
    /// it, so it is no failure of the worker.
    Abandoned,
    /// The pool is closing.
    Closed,
}
