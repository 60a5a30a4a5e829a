//! Request and connection metrics, kept in per-thread shards: a request
//! finished on a worker thread writes only that thread's shard (its lock is
//! never contended but by a scrape), and a scrape sums the shards.
//!
//! Labels are bounded by construction: a request's site, route and handler
//! come from the configuration (interned once per configuration as a
//! [`RouteLabel`]), its method folds into the nine of RFC 9110 and PATCH or
//! `_OTHER` (OpenTelemetry's rule), and its status is one of 100-999. A
//! flood of odd hosts, methods or paths adds no series.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::activity::{Minute, LATENCY_BOUNDS};

/// Upper bounds (bytes) of the body-size buckets: 256 × 4^k, as Caddy's.
pub const SIZE_BOUNDS: [f64; 8] = [
    256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
];

/// The methods a series may carry; any other is `_OTHER`.
pub const METHODS: [&str; 10] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "_OTHER",
];

/// A request method folded to its label (an index into [`METHODS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MethodLabel(u8);

impl MethodLabel {
    /// The label of `method`.
    pub fn of(method: &str) -> MethodLabel {
        let i = METHODS[..9].iter().position(|m| *m == method).unwrap_or(9);
        MethodLabel(i as u8)
    }

    /// The label's text.
    pub fn as_str(self) -> &'static str {
        METHODS[self.0 as usize]
    }
}

/// A route's labels, interned: site, route and handler kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteLabel(u32);

impl RouteLabel {
    /// Requests answered before a site was chosen (refused at admission).
    pub const NONE: RouteLabel = RouteLabel(0);
}

/// The labels a [`RouteLabel`] stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteNames {
    /// The site's name.
    pub site: Arc<str>,
    /// The route: its prefix, `*.ext`, or `/` for the site's static files.
    pub route: Arc<str>,
    /// The handler's kind.
    pub handler: &'static str,
}

/// One finished request, as the log phase reports it.
#[derive(Debug, Clone, Copy)]
pub struct Finished<'a> {
    /// The request's id.
    pub id: u64,
    /// When it was admitted.
    pub at: SystemTime,
    /// The client's address, when it has one.
    pub client: Option<IpAddr>,
    /// The target as the client sent it.
    pub target: &'a str,
    /// The worker process that served it, for scripts.
    pub worker: Option<u32>,
    /// How long it waited for a worker, for scripts.
    pub queue_wait: Option<Duration>,
    /// Its route.
    pub route: RouteLabel,
    /// Its method.
    pub method: MethodLabel,
    /// The status sent (499 when the client left first).
    pub status: u16,
    /// From admission to the end of the response body.
    pub duration: Duration,
    /// From admission to the response head; `None` when none was sent.
    pub first_byte: Option<Duration>,
    /// Request body bytes (as declared by Content-Length; 0 without).
    pub request_bytes: u64,
    /// Response body bytes sent.
    pub response_bytes: u64,
}

/// Observations per bucket (not cumulative; the last is `+Inf`) and their
/// sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Counts per bucket, one more than the bounds.
    pub counts: Box<[u64]>,
    /// The sum of the observed values.
    pub sum: f64,
}

impl Histogram {
    fn new(bounds: usize) -> Histogram {
        Histogram {
            counts: vec![0; bounds + 1].into_boxed_slice(),
            sum: 0.0,
        }
    }

    fn observe(&mut self, bounds: &[f64], value: f64) {
        let i = bounds
            .iter()
            .position(|b| value <= *b)
            .unwrap_or(bounds.len());
        self.counts[i] += 1;
        self.sum += value;
    }

    fn add(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.sum += other.sum;
    }

    /// How many observations.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The histograms of one series (route, method, status).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Request durations, seconds, over the configured bounds.
    pub duration: Histogram,
    /// Time to the response head, seconds, over the same bounds.
    pub first_byte: Histogram,
    /// Request body sizes, bytes, over [`SIZE_BOUNDS`].
    pub request_size: Histogram,
    /// Response body sizes, bytes, over [`SIZE_BOUNDS`].
    pub response_size: Histogram,
}

impl Series {
    fn new(time_bounds: usize) -> Series {
        Series {
            duration: Histogram::new(time_bounds),
            first_byte: Histogram::new(time_bounds),
            request_size: Histogram::new(SIZE_BOUNDS.len()),
            response_size: Histogram::new(SIZE_BOUNDS.len()),
        }
    }

    fn add(&mut self, other: &Series) {
        self.duration.add(&other.duration);
        self.first_byte.add(&other.first_byte);
        self.request_size.add(&other.request_size);
        self.response_size.add(&other.response_size);
    }
}

/// A series' key: route, method, status.
type Key = (RouteLabel, MethodLabel, u16);

/// What a thread's requests wrote, under its shard's lock.
#[derive(Debug, Default)]
struct Tally {
    /// hashbrown's hasher: the key is three small integers, hashed on every
    /// request (std's SipHash costs several times more).
    series: hashbrown::HashMap<Key, Series>,
    /// Per-minute totals for the activity history, since the last take.
    minute: Minute,
    /// The thread's last requests, oldest first.
    recent: VecDeque<Kept>,
}

/// One request of the request history.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Recent {
    /// The request's id.
    pub id: u64,
    /// When it was admitted, Unix seconds.
    pub time: f64,
    /// The client's address.
    pub client: Option<IpAddr>,
    /// Its method (folded, as in the metrics).
    pub method: &'static str,
    /// The target as sent (cut at [`TARGET_MAX`] bytes).
    pub target: String,
    /// The site.
    pub site: Arc<str>,
    /// The route.
    pub route: Arc<str>,
    /// The handler's kind.
    pub handler: &'static str,
    /// The status sent.
    pub status: u16,
    /// Response body bytes sent.
    pub bytes: u64,
    /// Seconds waiting for a worker (scripts).
    pub queue_wait: Option<f64>,
    /// Seconds to the response head.
    pub first_byte: Option<f64>,
    /// Seconds to the end of the body.
    pub total: f64,
    /// The worker process, for scripts.
    pub worker: Option<u32>,
}

/// The longest target the request history keeps.
pub const TARGET_MAX: usize = 512;

/// A request of the history as a thread keeps it: small and plain (the
/// names and the seconds are made when the history is read).
#[derive(Debug, Clone)]
struct Kept {
    id: u64,
    at: SystemTime,
    client: Option<IpAddr>,
    method: MethodLabel,
    target: String,
    label: RouteLabel,
    status: u16,
    bytes: u64,
    queue_wait: Option<Duration>,
    first_byte: Option<Duration>,
    total: Duration,
    worker: Option<u32>,
}

impl Kept {
    fn empty() -> Kept {
        Kept {
            id: 0,
            at: SystemTime::UNIX_EPOCH,
            client: None,
            method: MethodLabel::of("GET"),
            target: String::new(),
            label: RouteLabel::NONE,
            status: 0,
            bytes: 0,
            queue_wait: None,
            first_byte: None,
            total: Duration::ZERO,
            worker: None,
        }
    }

    /// Overwrites this entry with `f`, keeping the target's buffer.
    fn fill(&mut self, f: &Finished<'_>) {
        self.id = f.id;
        self.at = f.at;
        self.client = f.client;
        self.method = f.method;
        self.target.clear();
        let mut cut = f.target.len().min(TARGET_MAX);
        while !f.target.is_char_boundary(cut) {
            cut -= 1;
        }
        self.target.push_str(&f.target[..cut]);
        self.label = f.route;
        self.status = f.status;
        self.bytes = f.response_bytes;
        self.queue_wait = f.queue_wait;
        self.first_byte = f.first_byte;
        self.total = f.duration;
        self.worker = f.worker;
    }

    fn recent(&self, names: &RouteNames) -> Recent {
        Recent {
            id: self.id,
            time: self
                .at
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            client: self.client,
            method: self.method.as_str(),
            target: self.target.clone(),
            site: names.site.clone(),
            route: names.route.clone(),
            handler: names.handler,
            status: self.status,
            bytes: self.bytes,
            queue_wait: self.queue_wait.map(|d| d.as_secs_f64()),
            first_byte: self.first_byte.map(|d| d.as_secs_f64()),
            total: self.total.as_secs_f64(),
            worker: self.worker,
        }
    }
}

/// One thread's metrics.
#[derive(Debug)]
struct Shard {
    /// The thread's name when it first recorded (`tern-worker-0`).
    thread: String,
    tally: Mutex<Tally>,
    /// Requests admitted and not yet finished.
    active: AtomicI64,
    /// Connections open now (accepted here, or moved here, minus closed).
    open: AtomicI64,
    accepted: AtomicU64,
    refused: AtomicU64,
    /// TLS handshakes by [`Handshake`].
    handshakes: [AtomicU64; 3],
}

/// How a TLS handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// A full handshake (with or without a HelloRetryRequest).
    Full = 0,
    /// A session resumed (a ticket or a session id).
    Resumed = 1,
    /// Failed, or left unfinished (timed out, the client went away, not TLS).
    Failed = 2,
}

/// The metrics of one server (kept across reloads: counters never go
/// back).
#[derive(Debug)]
pub struct Metrics {
    /// Distinguishes this instance's shards in a thread's cache.
    id: u64,
    /// Upper bounds (seconds) of the time histograms.
    time_bounds: Arc<[f64]>,
    shards: Mutex<Vec<Arc<Shard>>>,
    routes: Mutex<Routes>,
    /// Requests each thread keeps for the request history.
    recent: usize,
}

/// The route labels interned so far.
#[derive(Debug, Default)]
struct Routes {
    names: Vec<RouteNames>,
    index: HashMap<RouteNames, RouteLabel>,
}

thread_local! {
    /// This thread's shard of each `Metrics` it recorded into: few (one
    /// server per process outside tests), so a list.
    static SHARDS: std::cell::RefCell<Vec<(u64, Arc<Shard>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// OpenTelemetry's advisory buckets for `http.server.request.duration`.
pub const DEFAULT_TIME_BOUNDS: [f64; 14] = LATENCY_BOUNDS;

/// Requests the request history keeps by default.
pub const DEFAULT_RECENT: usize = 1000;

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(&DEFAULT_TIME_BOUNDS, DEFAULT_RECENT)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a shard's lock leaves counts that are still
    // counts: go on with them.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Metrics {
    /// Metrics whose time histograms use `time_bounds` (seconds,
    /// ascending), keeping the last `recent` requests (0: no request
    /// history).
    pub fn new(time_bounds: &[f64], recent: usize) -> Metrics {
        let none = RouteNames {
            site: Arc::from("_none"),
            route: Arc::from("_none"),
            handler: "none",
        };
        let mut routes = Routes::default();
        routes.index.insert(none.clone(), RouteLabel::NONE);
        routes.names.push(none);
        Metrics {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            time_bounds: time_bounds.into(),
            shards: Mutex::new(Vec::new()),
            routes: Mutex::new(routes),
            recent,
        }
    }

    /// The time histograms' bounds.
    pub fn time_bounds(&self) -> &[f64] {
        &self.time_bounds
    }

    /// The label of a route (the same names give the same label, across
    /// reloads).
    pub fn route_label(&self, site: &str, route: &str, handler: &'static str) -> RouteLabel {
        let names = RouteNames {
            site: Arc::from(site),
            route: Arc::from(route),
            handler,
        };
        let mut routes = lock(&self.routes);
        if let Some(l) = routes.index.get(&names) {
            return *l;
        }
        let label = RouteLabel(routes.names.len() as u32);
        routes.names.push(names.clone());
        routes.index.insert(names, label);
        label
    }

    /// The names of `label`.
    pub fn route_names(&self, label: RouteLabel) -> RouteNames {
        lock(&self.routes).names[label.0 as usize].clone()
    }

    /// This thread's shard, made on first use.
    fn with_shard<R>(&self, f: impl FnOnce(&Shard) -> R) -> R {
        SHARDS.with(|s| {
            let mut s = s.borrow_mut();
            if let Some((_, shard)) = s.iter().find(|(id, _)| *id == self.id) {
                return f(shard);
            }
            let shard = Arc::new(Shard {
                thread: std::thread::current()
                    .name()
                    .unwrap_or("unnamed")
                    .to_owned(),
                tally: Mutex::new(Tally::default()),
                active: AtomicI64::new(0),
                open: AtomicI64::new(0),
                accepted: AtomicU64::new(0),
                refused: AtomicU64::new(0),
                handshakes: Default::default(),
            });
            lock(&self.shards).push(shard.clone());
            let r = f(&shard);
            s.push((self.id, shard));
            r
        })
    }

    /// A request was admitted.
    pub fn begin(&self) {
        self.with_shard(|s| s.active.fetch_add(1, Ordering::Relaxed));
    }

    /// A request finished (whatever thread began it).
    pub fn finish(&self, f: &Finished<'_>) {
        let bounds = &self.time_bounds;
        self.with_shard(|s| {
            s.active.fetch_sub(1, Ordering::Relaxed);
            let mut t = lock(&s.tally);
            let series = t
                .series
                .entry((f.route, f.method, f.status))
                .or_insert_with(|| Series::new(bounds.len()));
            let secs = f.duration.as_secs_f64();
            series.duration.observe(bounds, secs);
            if let Some(fb) = f.first_byte {
                series.first_byte.observe(bounds, fb.as_secs_f64());
            }
            series
                .request_size
                .observe(&SIZE_BOUNDS, f.request_bytes as f64);
            series
                .response_size
                .observe(&SIZE_BOUNDS, f.response_bytes as f64);
            let m = &mut t.minute;
            let class = (f.status / 100).clamp(1, 5) as usize - 1;
            m.requests[class] = m.requests[class].saturating_add(1);
            m.bytes = m.bytes.saturating_add(f.response_bytes);
            let i = LATENCY_BOUNDS
                .iter()
                .position(|b| secs <= *b)
                .unwrap_or(LATENCY_BOUNDS.len());
            m.latency[i] = m.latency[i].saturating_add(1);
            if self.recent > 0 {
                // Each thread keeps the whole count: the history merges
                // the threads' newest, and one busy thread must not cut
                // the history short.
                let mut entry = if t.recent.len() >= self.recent {
                    t.recent.pop_front().expect("a full ring")
                } else {
                    Kept::empty()
                };
                entry.fill(f);
                t.recent.push_back(entry);
            }
        });
    }

    /// The last requests (at most the configured count), newest first.
    pub fn recent(&self) -> Vec<Recent> {
        let shards: Vec<Arc<Shard>> = lock(&self.shards).clone();
        let mut all: Vec<Kept> = Vec::new();
        for s in &shards {
            all.extend(lock(&s.tally).recent.iter().cloned());
        }
        all.sort_by(|a, b| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
        all.truncate(self.recent);
        let routes = lock(&self.routes);
        all.iter()
            .map(|k| k.recent(&routes.names[k.label.0 as usize]))
            .collect()
    }

    /// A connection was accepted, on the thread that accepted it.
    pub fn connection_accepted(&self) {
        self.with_shard(|s| s.accepted.fetch_add(1, Ordering::Relaxed));
    }

    /// A connection is served on this thread from now (accepted here, or
    /// handed or moved here).
    pub fn connection_opened(&self) {
        self.with_shard(|s| s.open.fetch_add(1, Ordering::Relaxed));
    }

    /// A connection closed (or left this thread for another).
    pub fn connection_closed(&self) {
        self.with_shard(|s| s.open.fetch_sub(1, Ordering::Relaxed));
    }

    /// A connection was refused (a connection limit).
    pub fn connection_refused(&self) {
        self.with_shard(|s| s.refused.fetch_add(1, Ordering::Relaxed));
    }

    /// A TLS handshake ended as `h`.
    pub fn tls_handshake(&self, h: Handshake) {
        self.with_shard(|s| s.handshakes[h as usize].fetch_add(1, Ordering::Relaxed));
    }

    /// The totals since the start, summed over the threads.
    pub fn snapshot(&self) -> Snapshot {
        let shards: Vec<Arc<Shard>> = lock(&self.shards).clone();
        let mut snap = Snapshot {
            series: HashMap::new(),
            threads: Vec::with_capacity(shards.len()),
        };
        for s in &shards {
            {
                let t = lock(&s.tally);
                for (k, v) in &t.series {
                    match snap.series.get_mut(k) {
                        Some(sum) => sum.add(v),
                        None => {
                            snap.series.insert(*k, v.clone());
                        }
                    }
                }
            }
            let f = ThreadFigures {
                thread: s.thread.clone(),
                active: s.active.load(Ordering::Relaxed),
                open: s.open.load(Ordering::Relaxed),
                accepted: s.accepted.load(Ordering::Relaxed),
                refused: s.refused.load(Ordering::Relaxed),
                handshakes: [0, 1, 2].map(|i| s.handshakes[i].load(Ordering::Relaxed)),
            };
            // Threads of one name (a pool's, a name given twice) are one
            // row: a label set may appear once in a scrape.
            match snap.threads.iter_mut().find(|t| t.thread == f.thread) {
                Some(t) => t.add(&f),
                None => snap.threads.push(f),
            }
        }
        snap
    }

    /// The requests finished since the last [`take_minute`](Self::take_minute),
    /// left in place (the status page's running minute).
    pub fn peek_minute(&self) -> Minute {
        let shards: Vec<Arc<Shard>> = lock(&self.shards).clone();
        let mut sum = Minute::default();
        for s in &shards {
            sum.add(&lock(&s.tally).minute);
        }
        sum
    }

    /// The requests finished since the last call, for the activity
    /// history (one caller: the minute timer).
    pub fn take_minute(&self) -> Minute {
        let shards: Vec<Arc<Shard>> = lock(&self.shards).clone();
        let mut sum = Minute::default();
        for s in &shards {
            let m = std::mem::take(&mut lock(&s.tally).minute);
            sum.add(&m);
        }
        sum
    }
}

/// The metrics summed over the threads.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Every series seen, by route, method and status.
    pub series: HashMap<(RouteLabel, MethodLabel, u16), Series>,
    /// Each thread's connection and request figures (the scoreboard).
    pub threads: Vec<ThreadFigures>,
}

/// One thread's connections and requests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ThreadFigures {
    /// The thread's name.
    pub thread: String,
    /// Requests in flight.
    pub active: i64,
    /// Connections open.
    pub open: i64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections refused.
    pub refused: u64,
    /// TLS handshakes: full, resumed, failed.
    pub handshakes: [u64; 3],
}

impl ThreadFigures {
    fn add(&mut self, o: &ThreadFigures) {
        self.active += o.active;
        self.open += o.open;
        self.accepted += o.accepted;
        self.refused += o.refused;
        for (a, b) in self.handshakes.iter_mut().zip(o.handshakes) {
            *a += b;
        }
    }

    /// Connections open, and of them those with a request in flight (the
    /// rest wait between requests): both clamped to sense while the
    /// counts of a moving connection settle.
    pub fn open_active(&self) -> (i64, i64) {
        let open = self.open.max(0);
        (open, self.active.clamp(0, open))
    }
}

impl Snapshot {
    /// Requests in flight, over every thread.
    pub fn active(&self) -> i64 {
        self.threads.iter().map(|t| t.active).sum::<i64>().max(0)
    }

    /// Connections open, over every thread.
    pub fn open(&self) -> i64 {
        self.threads.iter().map(|t| t.open).sum::<i64>().max(0)
    }

    /// Requests finished, over every series.
    pub fn requests(&self) -> u64 {
        self.series.values().map(|s| s.duration.count()).sum()
    }

    /// Response body bytes sent, over every series.
    pub fn bytes(&self) -> f64 {
        self.series.values().map(|s| s.response_size.sum).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(route: RouteLabel, method: &str, status: u16, ms: u64) -> Finished<'static> {
        Finished {
            id: 1,
            at: SystemTime::now(),
            client: None,
            target: "/x",
            worker: None,
            queue_wait: None,
            route,
            method: MethodLabel::of(method),
            status,
            duration: Duration::from_millis(ms),
            first_byte: Some(Duration::from_millis(ms / 2)),
            request_bytes: 0,
            response_bytes: 1000,
        }
    }

    #[test]
    fn methods_fold_into_other() {
        assert_eq!(MethodLabel::of("GET").as_str(), "GET");
        assert_eq!(MethodLabel::of("PATCH").as_str(), "PATCH");
        assert_eq!(MethodLabel::of("BREW").as_str(), "_OTHER");
        assert_eq!(MethodLabel::of("get").as_str(), "_OTHER");
    }

    #[test]
    fn route_labels_are_interned() {
        let m = Metrics::default();
        let a = m.route_label("main", "/", "static");
        let b = m.route_label("main", "/cgi-bin", "cgi");
        assert_ne!(a, b);
        assert_eq!(m.route_label("main", "/", "static"), a);
        assert_eq!(&*m.route_names(b).route, "/cgi-bin");
        assert_eq!(&*m.route_names(RouteLabel::NONE).site, "_none");
    }

    #[test]
    fn threads_sum_into_one_snapshot() {
        let m = Arc::new(Metrics::default());
        let r = m.route_label("main", "/", "static");
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        m.begin();
                        m.finish(&finished(r, "GET", 200, 3));
                    }
                    m.begin();
                    m.finish(&finished(r, "BREW", 405, 30));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = m.snapshot();
        assert_eq!(s.requests(), 303);
        assert_eq!(s.active(), 0);
        let ok = &s.series[&(r, MethodLabel::of("GET"), 200)];
        assert_eq!(ok.duration.count(), 300);
        assert_eq!(ok.duration.counts[0], 300, "3 ms is under 5 ms");
        let other = &s.series[&(r, MethodLabel::of("PUTT"), 405)];
        assert_eq!(other.duration.count(), 3);
        assert_eq!(other.duration.counts[3], 3, "30 ms is in the 50 ms bucket");
        let minute = m.take_minute();
        assert_eq!(minute.requests, [0, 300, 0, 3, 0]);
        assert_eq!(minute.bytes, 303_000);
        assert_eq!(m.take_minute(), Minute::default(), "taken once");
    }

    #[test]
    fn the_request_history_keeps_the_newest() {
        let m = Metrics::new(&DEFAULT_TIME_BOUNDS, 3);
        let r = m.route_label("main", "/", "static");
        let long = "/".repeat(TARGET_MAX + 10);
        for id in 1..=5u64 {
            let mut f = finished(r, "GET", 200, 1);
            f.id = id;
            f.at = SystemTime::UNIX_EPOCH + Duration::from_secs(id);
            f.target = if id == 5 { &long } else { "/a" };
            m.begin();
            m.finish(&f);
        }
        let recent = m.recent();
        assert_eq!(recent.iter().map(|r| r.id).collect::<Vec<_>>(), [5, 4, 3]);
        assert_eq!(recent[0].target.len(), TARGET_MAX);
        assert_eq!(&*recent[1].site, "main");
        assert!(Metrics::new(&DEFAULT_TIME_BOUNDS, 0).recent().is_empty());
    }

    #[test]
    fn connections_are_counted_per_thread() {
        let m = Metrics::default();
        m.connection_accepted();
        m.connection_opened();
        m.connection_accepted();
        m.connection_opened();
        m.connection_closed();
        m.connection_refused();
        let s = m.snapshot();
        assert_eq!(s.open(), 1);
        assert_eq!(s.threads.len(), 1);
        assert_eq!((s.threads[0].accepted, s.threads[0].refused), (2, 1));
    }
}
