//! `/metrics`: every figure as Prometheus or OpenMetrics text. Request
//! metrics follow OpenTelemetry's HTTP semantic conventions
//! (`http.server.request.duration` becomes
//! `http_server_request_duration_seconds`, its attributes
//! `http_request_method`, `http_response_status_code`, `http_route`);
//! process figures follow Prometheus's `process_*` names; the rest is
//! `tern_*`.

use tern_handler::{PoolReport, QUEUE_WAIT_BUCKETS};

use crate::expose::{Exposition, Format, Kind};
use crate::metrics::{Histogram, Metrics, Snapshot, SIZE_BOUNDS};
use crate::parts::Parts;
use crate::process::Process;
use crate::watch::Watch;

/// Everything a scrape shows.
#[derive(Debug)]
pub struct Scrape<'a> {
    /// The request metrics and their labels.
    pub metrics: &'a Metrics,
    /// Their sum now.
    pub snapshot: &'a Snapshot,
    /// The server's parts.
    pub parts: &'a Parts,
    /// tern's process, if /proc could be read.
    pub process: Option<Process>,
    /// The live trace.
    pub watch: &'a Watch,
}

/// The scrape's text in `format`.
pub fn render(s: &Scrape<'_>, format: Format) -> String {
    let mut x = Exposition::new(format);
    requests(&mut x, s);
    connections(&mut x, s.snapshot);
    server(&mut x, s);
    if let Some(c) = &s.parts.cache {
        x.family(
            "tern_cache_hits",
            Kind::Counter,
            None,
            "Requests the file cache answered from memory.",
        );
        x.counter(&[], c.hits as f64);
        x.family(
            "tern_cache_misses",
            Kind::Counter,
            None,
            "Requests on caching sites that needed the file system.",
        );
        x.counter(&[], c.misses as f64);
        x.family(
            "tern_cache_evictions",
            Kind::Counter,
            None,
            "Entries dropped to keep the cache within its size.",
        );
        x.counter(&[], c.evictions as f64);
        x.family(
            "tern_cache_entries",
            Kind::Gauge,
            None,
            "Entries in the file cache.",
        );
        x.gauge(&[], c.entries as f64);
        x.family(
            "tern_cache_size_bytes",
            Kind::Gauge,
            Some("bytes"),
            "Body bytes the file cache holds.",
        );
        x.gauge(&[], c.bytes as f64);
    }
    pools(&mut x, &s.parts.pools);
    if let Some(l) = &s.parts.access_log {
        let labels = [("path", l.path.as_str())];
        x.family(
            "tern_access_log_lines",
            Kind::Counter,
            None,
            "Access log lines written.",
        );
        x.counter(&labels, l.lines as f64);
        x.family(
            "tern_access_log_lines_lost",
            Kind::Counter,
            None,
            "Access log lines lost to failed writes (a full disk).",
        );
        x.counter(&labels, l.lost as f64);
    }
    if let Some(p) = &s.process {
        process(&mut x, p);
    }
    x.finish()
}

/// Which of a series' histograms a family shows.
type Pick = fn(&crate::metrics::Series) -> &Histogram;

/// The request histograms and the requests in flight.
fn requests(x: &mut Exposition, s: &Scrape<'_>) {
    let bounds = s.metrics.time_bounds();
    // Series in a stable order: by route, method, status.
    let mut keys: Vec<_> = s.snapshot.series.keys().copied().collect();
    keys.sort_unstable();
    let names: Vec<_> = keys
        .iter()
        .map(|(r, m, st)| (s.metrics.route_names(*r), m.as_str(), st.to_string()))
        .collect();
    let families: [(&str, &str, &str, &[f64], Pick); 4] = [
        (
            "http_server_request_duration_seconds",
            "seconds",
            "Duration of HTTP server requests, from the head's arrival to the end of the response body.",
            bounds,
            |s| &s.duration,
        ),
        (
            "tern_http_server_time_to_first_byte_seconds",
            "seconds",
            "Time from a request head's arrival to its response head.",
            bounds,
            |s| &s.first_byte,
        ),
        (
            "http_server_request_body_size_bytes",
            "bytes",
            "Size of HTTP server request bodies (as declared by Content-Length).",
            &SIZE_BOUNDS,
            |s| &s.request_size,
        ),
        (
            "http_server_response_body_size_bytes",
            "bytes",
            "Size of HTTP server response bodies sent.",
            &SIZE_BOUNDS,
            |s| &s.response_size,
        ),
    ];
    for (name, unit, help, bounds, pick) in families {
        x.family(name, Kind::Histogram, Some(unit), help);
        for (key, (n, method, status)) in keys.iter().zip(&names) {
            let h = pick(&s.snapshot.series[key]);
            if h.count() == 0 {
                // A response with no head sent (the client left first)
                // has no first byte.
                continue;
            }
            let labels = [
                ("site", &*n.site),
                ("http_route", &*n.route),
                ("handler", n.handler),
                ("http_request_method", method),
                ("http_response_status_code", status.as_str()),
            ];
            x.histogram(&labels, bounds, &h.counts, h.sum);
        }
    }
    x.family(
        "http_server_active_requests",
        Kind::Gauge,
        None,
        "HTTP server requests in flight.",
    );
    x.gauge(&[], s.snapshot.active() as f64);
}

/// Connections, per worker thread.
fn connections(x: &mut Exposition, snap: &Snapshot) {
    let mut threads: Vec<_> = snap.threads.iter().collect();
    threads.sort_by(|a, b| a.thread.cmp(&b.thread));
    x.family(
        "tern_connections_accepted",
        Kind::Counter,
        None,
        "Connections accepted, by the worker thread that accepted them.",
    );
    for t in &threads {
        x.counter(&[("worker", &t.thread)], t.accepted as f64);
    }
    x.family(
        "tern_connections_refused",
        Kind::Counter,
        None,
        "Connections closed at once by a connection limit (max_connections_per_client).",
    );
    for t in &threads {
        x.counter(&[("worker", &t.thread)], t.refused as f64);
    }
    x.family(
        "tern_tls_handshakes",
        Kind::Counter,
        None,
        "TLS handshakes by result: full, resumed (a ticket or session id), failed (or unfinished).",
    );
    for (i, result) in ["full", "resumed", "failed"].into_iter().enumerate() {
        let n: u64 = threads.iter().map(|t| t.handshakes[i]).sum();
        x.counter(&[("result", result)], n as f64);
    }
    x.family(
        "tern_connections",
        Kind::Gauge,
        None,
        "Connections open, by worker thread and state: active (a request in flight) or idle (keep-alive, between requests).",
    );
    for t in &threads {
        let (open, active) = t.open_active();
        x.gauge(&[("worker", &t.thread), ("state", "active")], active as f64);
        x.gauge(
            &[("worker", &t.thread), ("state", "idle")],
            (open - active) as f64,
        );
    }
}

/// Version, configuration and the live trace.
fn server(x: &mut Exposition, s: &Scrape<'_>) {
    x.family(
        "tern_build_info",
        Kind::Gauge,
        None,
        "tern's version; the value is 1.",
    );
    x.gauge(&[("version", env!("CARGO_PKG_VERSION"))], 1.0);
    x.family(
        "tern_config_generation",
        Kind::Gauge,
        None,
        "The configuration generation serving: 1 at start, one more per reload.",
    );
    x.gauge(&[], s.parts.generation as f64);
    x.family(
        "tern_config_loaded_timestamp_seconds",
        Kind::Gauge,
        Some("seconds"),
        "When the serving configuration was loaded, Unix seconds.",
    );
    x.gauge(&[], crate::unix_seconds(s.parts.loaded));
    x.family(
        "tern_watchers",
        Kind::Gauge,
        None,
        "Live-trace watchers attached.",
    );
    x.gauge(&[], s.watch.watchers() as f64);
    x.family(
        "tern_watch_events_dropped",
        Kind::Counter,
        None,
        "Live-trace events lost by watchers that fell behind.",
    );
    x.counter(&[], s.watch.dropped() as f64);
}

/// Every pool's gauges, counters and queue-wait histogram.
fn pools(x: &mut Exposition, pools: &[PoolReport]) {
    let label = |p: &PoolReport| [("pool", p.name.clone()), ("kind", p.kind.to_owned())];
    macro_rules! each {
        ($name:expr, $kind:expr, $help:expr, |$p:ident| $value:expr) => {
            x.family($name, $kind, None, $help);
            for $p in pools {
                let l = label($p);
                let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
                match $kind {
                    Kind::Counter => x.counter(&l, $value as f64),
                    _ => x.gauge(&l, $value as f64),
                }
            }
        };
    }
    x.family(
        "tern_pool_workers",
        Kind::Gauge,
        None,
        "Workers of a pool by state: busy, idle, starting.",
    );
    for p in pools {
        for (state, n) in [("busy", p.busy), ("idle", p.idle), ("starting", p.starting)] {
            x.gauge(
                &[("pool", &p.name), ("kind", p.kind), ("state", state)],
                n as f64,
            );
        }
    }
    each!(
        "tern_pool_queued_requests",
        Kind::Gauge,
        "Requests waiting for a worker of the pool.",
        |p| p.queued
    );
    each!(
        "tern_pool_min_ready_workers",
        Kind::Gauge,
        "The fewest ready workers the pool keeps (readiness asks for them).",
        |p| p.min_ready
    );
    each!(
        "tern_pool_max_workers",
        Kind::Gauge,
        "The most workers the pool runs.",
        |p| p.max
    );
    each!(
        "tern_pool_backing_off",
        Kind::Gauge,
        "1 while the pool waits after failures before it starts workers again.",
        |p| u8::from(p.backing_off)
    );
    each!(
        "tern_pool_spawned",
        Kind::Counter,
        "Workers the pool started.",
        |p| p.spawned
    );
    each!(
        "tern_pool_spawn_failures",
        Kind::Counter,
        "Worker starts that failed.",
        |p| p.spawn_failures
    );
    each!(
        "tern_pool_crashed",
        Kind::Counter,
        "Workers that broke: exited, crashed, or answered out of protocol.",
        |p| p.crashed
    );
    each!(
        "tern_pool_ended",
        Kind::Counter,
        "Workers their peer ended, as it may (no failure).",
        |p| p.ended
    );
    each!(
        "tern_pool_requests",
        Kind::Counter,
        "Requests the pool's workers served to the end.",
        |p| p.requests
    );
    x.family(
        "tern_pool_recycled",
        Kind::Counter,
        None,
        "Workers ended by policy, by cause: idle, requests (max_requests), age (max_age).",
    );
    for p in pools {
        for (cause, n) in [
            ("idle", p.recycled_idle),
            ("requests", p.recycled_requests),
            ("age", p.recycled_age),
        ] {
            x.counter(
                &[("pool", &p.name), ("kind", p.kind), ("cause", cause)],
                n as f64,
            );
        }
    }
    x.family(
        "tern_pool_failures",
        Kind::Counter,
        None,
        "Requests that failed in the handler, by cause (timeout, trap, memory).",
    );
    for p in pools {
        for (cause, n) in &p.failures {
            x.counter(
                &[("pool", &p.name), ("kind", p.kind), ("cause", cause)],
                *n as f64,
            );
        }
    }
    x.family(
        "tern_pool_queue_wait_seconds",
        Kind::Histogram,
        Some("seconds"),
        "Time requests waited for a worker of the pool.",
    );
    for p in pools {
        if p.queue_wait.counts.len() == QUEUE_WAIT_BUCKETS.len() + 1 {
            x.histogram(
                &[("pool", &p.name), ("kind", p.kind)],
                &QUEUE_WAIT_BUCKETS,
                &p.queue_wait.counts,
                p.queue_wait.sum.as_secs_f64(),
            );
        }
    }
}

/// Prometheus's standard process figures.
fn process(x: &mut Exposition, p: &Process) {
    x.family(
        "process_cpu_seconds",
        Kind::Counter,
        Some("seconds"),
        "User and system CPU time the process spent, seconds.",
    );
    x.counter(&[], p.cpu_user + p.cpu_system);
    x.family(
        "process_resident_memory_bytes",
        Kind::Gauge,
        Some("bytes"),
        "Resident memory size, bytes.",
    );
    x.gauge(&[], p.resident_bytes as f64);
    x.family(
        "process_virtual_memory_bytes",
        Kind::Gauge,
        Some("bytes"),
        "Virtual memory size, bytes.",
    );
    x.gauge(&[], p.virtual_bytes as f64);
    x.family(
        "process_open_fds",
        Kind::Gauge,
        None,
        "Open file descriptors.",
    );
    x.gauge(&[], p.open_fds as f64);
    x.family(
        "process_max_fds",
        Kind::Gauge,
        None,
        "The limit on open file descriptors.",
    );
    x.gauge(&[], p.max_fds as f64);
    x.family(
        "process_threads",
        Kind::Gauge,
        None,
        "Threads in the process.",
    );
    x.gauge(&[], p.threads as f64);
    x.family(
        "process_start_time_seconds",
        Kind::Gauge,
        Some("seconds"),
        "When the process started, Unix seconds.",
    );
    x.gauge(&[], p.start_time);
}
