//! The pool keys of a persistent route (FastCGI, CGIplus): how many
//! workers, how many requests wait, and when workers are replaced.

use crate::defaults;
use crate::fields::MAX_QUEUE;
use crate::model::PoolSettings;
use crate::walk::{Table, Walker};

/// Most workers a pool may have.
const MAX_WORKERS: u64 = 4096;

/// The pool of a route whose workers are processes tern runs (`spawned`:
/// `min_processes`, `max_processes`) or connections to a running server
/// (`min_connections`, `max_connections`).
pub(crate) fn walk_pool(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    spawned: bool,
) -> Option<PoolSettings> {
    let (min_key, max_key, min_default) = if spawned {
        ("min_processes", "max_processes", defaults::MIN_PROCESSES)
    } else {
        (
            "min_connections",
            "max_connections",
            defaults::MIN_CONNECTIONS,
        )
    };
    let min = w
        .integer_in(t, min_key, 0, MAX_WORKERS)
        .map_or(min_default, |n| n as usize);
    let max = w
        .count(t, max_key, MAX_WORKERS)
        .map_or(defaults::POOL_MAX, |n| n as usize);
    let queue = w
        .count(t, "queue", MAX_QUEUE)
        .map_or(defaults::QUEUE, |n| n as usize);
    let queue_timeout = w
        .duration(t, "queue_timeout", true)
        .unwrap_or(defaults::QUEUE_TIMEOUT);
    let idle_timeout = w
        .duration(t, "idle_timeout", true)
        .unwrap_or(defaults::IDLE_TIMEOUT);
    let max_requests = w
        .integer_in(t, "max_requests", 0, u64::MAX >> 1)
        .unwrap_or(defaults::MAX_REQUESTS);
    let max_age = w.duration(t, "max_age", true);
    if min > max {
        w.error(
            t.span(),
            t.key_path(min_key),
            format!("{min} is more than {max_key} ({max})"),
        );
        return None;
    }
    Some(PoolSettings {
        min,
        max,
        queue,
        queue_timeout,
        idle_timeout,
        max_requests,
        max_age,
    })
}
