//! The pool handle: start, checkout, stats, health, close.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::manager;
use crate::shared::Shared;
use crate::state::{Admit, Reply};
use crate::{Error, Factory, Health, Lease, PoolConfig, PoolError, Snapshot, Stats};

/// A pool of items (worker processes, connections) made by a [`Factory`],
/// shared by every runtime of the server: `Send + Sync`, cheap to clone,
/// with short lock sections.
///
/// A manager thread, `tern-pool:<name>`, with its own current_thread
/// runtime, creates and destroys items and keeps the pool at its minimum.
/// Checkouts never hop to it when an item is idle.
///
/// Dropping every clone closes the pool in the background: the manager
/// destroys idle items at once and leased ones when they come back, then
/// stops. No worker outlives its pool.
pub struct Pool<F: Factory> {
    owner: Arc<Owner<F>>,
}

/// Closes the pool when the last [`Pool`] clone goes. Leases hold only
/// [`Shared`], so they keep the state alive but not the pool open.
struct Owner<F: Factory> {
    shared: Arc<Shared<F>>,
}

impl<F: Factory> Drop for Owner<F> {
    fn drop(&mut self) {
        self.shared.lock().close();
        self.shared.wake.notify_one();
    }
}

impl<F: Factory> Clone for Pool<F> {
    fn clone(&self) -> Self {
        Self {
            owner: Arc::clone(&self.owner),
        }
    }
}

impl<F: Factory> fmt::Debug for Pool<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("name", &self.owner.shared.cfg.name)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<F: Factory> Pool<F> {
    /// Checks `cfg` and starts the manager thread, which creates `min`
    /// items in the background.
    pub fn start(cfg: PoolConfig, factory: F) -> Result<Self, Error> {
        cfg.validate()?;
        let name = cfg.name.clone();
        let thread_error = |source| Error::Thread {
            pool: name.clone(),
            source,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(thread_error)?;
        let shared = Arc::new(Shared::new(cfg, factory));
        let for_manager = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("tern-pool:{name}"))
            .spawn(move || runtime.block_on(manager::run(for_manager)))
            .map_err(thread_error)?;
        Ok(Self {
            owner: Arc::new(Owner { shared }),
        })
    }

    /// An item for one request: the most recently used idle one at once;
    /// else a place in the queue (the pool grows if below `max`) for at most
    /// `queue_timeout`. Needs a tokio runtime with time enabled (for the
    /// queue timeout).
    ///
    /// # Errors
    /// [`PoolError::Full`] when the queue is full, [`PoolError::Timeout`]
    /// after `queue_timeout`, [`PoolError::Unavailable`] at once while
    /// creation fails and no item is alive, [`PoolError::Closed`].
    ///
    /// # Cancel safety
    /// Cancel safe: a cancelled checkout leaves the queue, and an item
    /// handed to it meanwhile goes to the next waiter or back to idle.
    pub async fn checkout(&self) -> Result<Lease<F>, PoolError> {
        let shared = &self.owner.shared;
        let warm = |item: &F::Item| shared.factory.warm(item);
        let admitted = shared.lock().admit(&shared.cfg, Instant::now(), warm);
        let (id, rx) = match admitted {
            Admit::Ready(entry) => return Ok(Lease::new(Arc::clone(shared), entry)),
            Admit::Refused(err) => return Err(err),
            Admit::Queued { id, rx, grow } => {
                shared.wake_if(grow);
                (id, rx)
            }
        };
        let mut waiting = Waiting {
            shared,
            id,
            rx,
            done: false,
        };
        let timeout = shared.cfg.queue_timeout;
        let reply = tokio::time::timeout(timeout, &mut waiting.rx).await;
        match reply {
            Ok(Ok(Ok(entry))) => {
                waiting.done = true;
                Ok(Lease::new(Arc::clone(shared), entry))
            }
            Ok(Ok(Err(err))) => {
                waiting.done = true;
                Err(err)
            }
            // The state dropped the sender without a reply: only when the
            // pool is gone.
            Ok(Err(_)) => Err(PoolError::Closed),
            Err(_) => Err(PoolError::Timeout(timeout)),
        }
    }

    /// The pool's gauges and counters, consistent with each other.
    pub fn stats(&self) -> Stats {
        self.owner.shared.lock().stats()
    }

    /// The pool's gauges and counters, and a row per item alive (idle or
    /// leased), consistent with each other. For a status page: it takes
    /// each item's seat lock under the pool's lock.
    pub fn snapshot(&self) -> Snapshot {
        self.owner.shared.lock().snapshot(Instant::now())
    }

    /// Whether the pool is worth sending work to now.
    pub fn health(&self) -> Health {
        self.owner.shared.lock().health(Instant::now())
    }

    /// The settings the pool runs with.
    pub fn config(&self) -> &PoolConfig {
        &self.owner.shared.cfg
    }

    /// Drains the pool: new checkouts fail with [`PoolError::Closed`],
    /// queued ones fail at once, idle items are destroyed, leased ones are
    /// destroyed when they come back, and the manager thread stops.
    /// Returns when all that is done, so it waits for every lease to end
    /// (a lease kept forever keeps it waiting). Idempotent.
    ///
    /// # Cancel safety
    /// Cancel safe: the drain goes on in the background; only the wait for
    /// its end is given up.
    pub async fn close(&self) {
        let shared = &self.owner.shared;
        shared.lock().close();
        shared.wake.notify_one();
        let mut done = shared.done.subscribe();
        // An error means the manager is gone, which is the end too.
        let _ = done.wait_for(|finished| *finished).await;
    }
}

/// A checkout's place in the queue; dropped without an answer (timeout,
/// cancellation), it leaves the queue and passes on an item it was given.
struct Waiting<'a, F: Factory> {
    shared: &'a Arc<Shared<F>>,
    id: u64,
    rx: oneshot::Receiver<Reply<F::Item>>,
    done: bool,
}

impl<F: Factory> Drop for Waiting<'_, F> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let wake = self
            .shared
            .lock()
            .leave_queue(self.id, &mut self.rx, Instant::now());
        self.shared.wake_if(wake);
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::Retire;

    /// Items that are plain numbers.
    struct Numbers;

    impl Factory for Numbers {
        type Item = u64;

        async fn create(&self) -> io::Result<u64> {
            Ok(7)
        }

        fn check(&self, _: &mut u64) -> crate::Check {
            crate::Check::Alive
        }

        async fn destroy(&self, _: u64, _: Retire) {}
    }

    fn shared_across_threads<T: Send + Sync + Clone + 'static>(_: &T) {}
    fn sent_across_threads<T: Send + 'static>(_: &T) {}

    #[tokio::test]
    async fn a_pool_its_checkouts_and_its_leases_can_cross_threads() {
        let pool = Pool::start(PoolConfig::default(), Numbers).unwrap();
        shared_across_threads(&pool);
        let checkout = {
            let pool = pool.clone();
            async move { pool.checkout().await }
        };
        sent_across_threads(&checkout);
        let lease = tokio::spawn(checkout).await.unwrap().unwrap();
        sent_across_threads(&lease);
        assert_eq!(*lease, 7);
        lease.release();
        pool.close().await;
        assert_eq!(pool.health(), Health::Closed);
    }
}
