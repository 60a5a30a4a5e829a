//! What a handler with workers tells the status page and the metrics
//! about them: one [`PoolReport`] per pool, with a [`WorkerReport`] per
//! worker process (php-fpm's `?full`). Plain data, taken when asked (a
//! scrape, a status page), never on a request's way.

use std::time::Duration;

/// One pool of a handler: its gauges and counters, and its workers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolReport {
    /// The pool's name: its route (`site /prefix`), and for a handler with
    /// several pools the address it reaches (`site /prefix 10.0.0.2:9000`).
    pub name: String,
    /// The handler's kind (`"fastcgi"`, `"cgiplus"`).
    pub kind: &'static str,
    /// Workers (processes or connections) serving a request now.
    pub busy: u64,
    /// Workers waiting for a request.
    pub idle: u64,
    /// Workers starting.
    pub starting: u64,
    /// Requests waiting for a worker.
    pub queued: u64,
    /// The fewest ready workers the pool keeps (its readiness floor).
    pub min_ready: u64,
    /// The most workers the pool runs.
    pub max: u64,
    /// Workers started since the pool began.
    pub spawned: u64,
    /// Starts that failed.
    pub spawn_failures: u64,
    /// Workers that broke (exited, crashed, answered out of protocol).
    pub crashed: u64,
    /// Workers ended by policy, by cause: idle too long, `max_requests`,
    /// `max_age`.
    pub recycled_idle: u64,
    /// See [`recycled_idle`](Self::recycled_idle).
    pub recycled_requests: u64,
    /// See [`recycled_idle`](Self::recycled_idle).
    pub recycled_age: u64,
    /// Workers their peer ended, as it may (no failure).
    pub ended: u64,
    /// Requests served to the end.
    pub requests: u64,
    /// Requests that failed in the handler, by cause (`"timeout"`,
    /// `"trap"`, `"memory"`): counters, for the causes the kind has.
    pub failures: Vec<(&'static str, u64)>,
    /// Whether readiness waits for this pool's first `min_ready` workers:
    /// true for the pools the configuration makes at start, false for
    /// pools made on demand (a CGIplus script's on its first request),
    /// which would turn a server unready whenever a new script is asked
    /// for.
    pub gates_readiness: bool,
    /// Whether the pool waits after failures before it starts workers again.
    pub backing_off: bool,
    /// The time requests waited for a worker: cumulative counts per bucket
    /// of [`QUEUE_WAIT_BUCKETS`] (seconds; one more count for `+Inf`), and
    /// the sum of the waits.
    pub queue_wait: WaitHistogram,
    /// One row per worker alive now.
    pub workers: Vec<WorkerReport>,
}

/// Upper bounds, in seconds, of the buckets of a pool's queue-wait
/// histogram.
pub const QUEUE_WAIT_BUCKETS: [f64; 10] =
    [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// Waits for a worker, counted into [`QUEUE_WAIT_BUCKETS`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WaitHistogram {
    /// Waits per bucket, not cumulative; the last is `+Inf`
    /// (`QUEUE_WAIT_BUCKETS.len() + 1` entries, or empty when none yet).
    pub counts: Vec<u64>,
    /// The sum of every wait.
    pub sum: Duration,
}

/// One worker of a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerReport {
    /// Its process id, when it is a process tern started.
    pub pid: Option<u32>,
    /// `"idle"` or `"busy"`.
    pub state: &'static str,
    /// Requests it served to the end.
    pub requests: u64,
    /// How long it has lived.
    pub age: Duration,
    /// The request it serves now: its target, and how long it has taken.
    pub current: Option<(String, Duration)>,
    /// How long its last finished request took.
    pub last_duration: Option<Duration>,
}

/// A response extension a handler with workers sets: which worker served
/// the request, and how long the request waited for it. The log phase
/// reads it for the request history and the live trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedBy {
    /// The worker's process id, when it is a process tern started.
    pub pid: Option<u32>,
    /// How long the request waited for a worker.
    pub queue_wait: Duration,
}
