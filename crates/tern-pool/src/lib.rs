//! tern's worker supervision: pools of items (spawned worker processes, or
//! connections to an external FastCGI server) that are created, lent out
//! one request at a time, reused, recycled, and destroyed.
//!
//! A [`Pool`] takes a [`Factory`] (how to create, check and destroy one
//! item) and a [`PoolConfig`]. Requests take a [`Lease`] with
//! [`Pool::checkout`] and end it with [`Lease::release`] or
//! [`Lease::discard`]. Behind the pool, a manager thread with its own
//! current_thread runtime keeps `min` items, creates more on demand up to
//! `max`, backs off after failures (the crash-loop brake), reaps idle and
//! aged items, and destroys everything on [`Pool::close`] or when the last
//! handle is dropped.
//!
//! The pool is shared by tern's runtimes (one per worker thread), so items
//! are plain std types and descriptors: the caller registers them with its
//! own runtime after checkout. Every decision is made in one place, under
//! one short lock (`state`); the manager and the handles only act on it.
//!
//! Reports: [`Pool::stats`] for the counters (with the queue waits as a
//! histogram), [`Pool::snapshot`] for those and a row per item alive
//! (idle or leased: each item has a seat in the state, which its lease
//! updates as a request starts and ends, [`Lease::serving`] and
//! [`Lease::release`]).
//!
//! [`process`] has what pools of spawned workers need: spawning into a
//! process group with a parent-death signal, stopping a group (SIGTERM,
//! grace, SIGKILL) and reaping, and a private directory for listening
//! sockets. Its `spawn` holds this crate's only `unsafe` (`pre_exec`).

mod backoff;
mod config;
mod error;
mod factory;
mod lease;
mod manager;
mod pool;
pub mod process;
mod seat;
mod shared;
mod state;
mod stats;

pub use config::PoolConfig;
pub use error::{Error, PoolError};
pub use factory::{Check, Factory, Retire};
pub use lease::Lease;
pub use pool::Pool;
pub use stats::{Health, ItemStats, QueueWait, Snapshot, Stats};
