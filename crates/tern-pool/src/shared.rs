//! What a pool's handles, its leases and its manager thread share: the
//! configuration, the factory, the state under its lock, and the manager's
//! wake-up and done signals. Below `pool.rs`, `lease.rs` and `manager.rs`,
//! which all hold it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::{watch, Notify};

use crate::state::State;
use crate::{Factory, PoolConfig};

/// What the pool's users, its leases and its manager share.
pub(crate) struct Shared<F: Factory> {
    pub(crate) cfg: PoolConfig,
    pub(crate) factory: F,
    state: Mutex<State<F::Item>>,
    /// Wakes the manager: something to create or destroy, or closing.
    /// A wake-up sent while the manager is busy is kept for its next wait.
    pub(crate) wake: Notify,
    /// Becomes true when the manager has destroyed everything and stops.
    pub(crate) done: watch::Sender<bool>,
}

impl<F: Factory> Shared<F> {
    pub(crate) fn new(cfg: PoolConfig, factory: F) -> Self {
        Shared {
            factory,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            done: watch::Sender::new(false),
            cfg,
        }
    }

    /// The state. A panic under the lock (in a factory's `check`) does
    /// not wedge the pool: the state's own updates are never left half done.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State<F::Item>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the manager when `needed`.
    pub(crate) fn wake_if(&self, needed: bool) {
        if needed {
            self.wake.notify_one();
        }
    }
}
