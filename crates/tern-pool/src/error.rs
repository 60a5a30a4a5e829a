//! What can go wrong: starting a pool ([`Error`]) and checking an item out
//! of it ([`PoolError`], grouped by the answer a server gives).

use std::io;
use std::time::Duration;

/// A pool could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The settings contradict each other (e.g. `min > max`, `max == 0`).
    #[error("pool {pool}: invalid settings: {problem}")]
    Config {
        /// The pool's name.
        pool: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The manager thread or its runtime could not be started.
    #[error("pool {pool}: cannot start the manager thread")]
    Thread {
        /// The pool's name.
        pool: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Why a checkout got no item. Every variant is an answer the server can
/// give at once; none needs a retry loop in the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The queue of waiting checkouts is full: answer 503 at once.
    #[error("the pool's queue is full")]
    Full,
    /// Waited the configured queue timeout without getting an item: 503.
    #[error("no worker became free within {0:?}")]
    Timeout(Duration),
    /// Creating items is failing and none is alive: 502 or 503 quickly,
    /// with this last error in the log.
    #[error("no worker is available: {0}")]
    Unavailable(String),
    /// The pool is closing or closed.
    #[error("the pool is closed")]
    Closed,
}
