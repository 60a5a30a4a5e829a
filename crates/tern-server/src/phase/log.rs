//! The log phase: it runs once for every request, when its response ends
//! (sent whole, failed, or dropped because the client left), whatever
//! answered it, and hands what happened to the [`Sinks`]. Armed at
//! admission as a [`LogPhase`] value that travels with the response body
//! and runs when dropped, so no way out of a request skips it.
//!
//! The same value carries the request's live trace: while someone watches
//! (`tern watch`), the phases report to it through [`LogPhase::trace`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tern_accesslog::{AccessLog, AccessRecord};
use tern_handler::{ConnInfo, ServedBy};
use tern_observe::metrics::{Finished, MethodLabel, RouteLabel};
use tern_observe::watch::{Event, Phase};
use tern_observe::Observer;

use crate::timeout::Activity;

/// Where finished requests go. Each sink is a field: an absent one costs
/// one branch per request.
#[derive(Debug, Default)]
pub struct Sinks {
    /// Where access records go, if anywhere.
    pub access_log: Option<AccessLog>,
    /// Metrics, the request history and the live trace (the admin
    /// listener's), if on: one for the life of the process (a reference
    /// every request copies, where an `Arc` would write its shared count
    /// twice per request).
    pub observer: Option<&'static Observer>,
}

/// One request's log phase, run when dropped.
#[derive(Debug)]
pub(crate) struct LogPhase {
    activity: Arc<Activity>,
    /// The response's status; 0 until one is chosen.
    status: u16,
    /// Body bytes sent.
    bytes: u64,
    /// When the request was admitted, if a sink wants to know (read once
    /// for every sink).
    started: Option<Instant>,
    access: Option<Box<AccessEntry>>,
    observed: Option<Box<Observed>>,
}

/// What the observer needs beyond the status and the byte count.
#[derive(Debug)]
struct Observed {
    observer: &'static Observer,
    at: SystemTime,
    id: u64,
    route: RouteLabel,
    method: MethodLabel,
    /// The target as sent (a clone shares hyper's bytes).
    target: http::Uri,
    client: Option<IpAddr>,
    request_bytes: u64,
    first_byte: Option<Duration>,
    served: Option<ServedBy>,
    /// The path for trace events, made with the first one.
    path: Option<Arc<str>>,
    /// Whether a watcher's filter admitted the request when it arrived:
    /// its events are built only then.
    watched: bool,
}

/// What the access log needs beyond the status and the byte count.
#[derive(Debug)]
struct AccessEntry {
    log: AccessLog,
    record: AccessRecord,
}

impl LogPhase {
    /// Arms the log phase of `req`, admitted (its `Host` settled), on a
    /// connection whose requests in flight `activity` counts.
    pub(crate) fn arm<B>(
        sinks: &Sinks,
        activity: &Arc<Activity>,
        req: &http::Request<B>,
        conn: &ConnInfo,
        id: u64,
    ) -> Self {
        activity.begin();
        let any = sinks.observer.is_some() || sinks.access_log.is_some();
        let started = any.then(Instant::now);
        let at = started.map_or(SystemTime::UNIX_EPOCH, tern_observe::wall_clock);
        let observed = sinks.observer.map(|o| {
            o.metrics.begin();
            Box::new(Observed {
                observer: o,
                at,
                id,
                route: RouteLabel::NONE,
                method: MethodLabel::of(req.method().as_str()),
                target: req.uri().clone(),
                client: conn.peer.socket_addr().map(|a| a.ip()),
                request_bytes: req
                    .headers()
                    .get(http::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok()?.parse().ok())
                    .unwrap_or(0),
                first_byte: None,
                served: None,
                path: None,
                watched: o
                    .watch
                    .wants(req.uri().path(), conn.peer.socket_addr().map(|a| a.ip())),
            })
        });
        let mut log = LogPhase {
            activity: activity.clone(),
            status: 0,
            bytes: 0,
            started,
            observed,
            access: sinks.access_log.as_ref().map(|log| {
                Box::new(AccessEntry {
                    log: log.clone(),
                    record: record_for(req, conn, id, at),
                })
            }),
        };
        log.trace(Phase::Request, || {
            let host = req
                .headers()
                .get(http::header::HOST)
                .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
            format!(
                "{} {} {:?}{}",
                req.method(),
                req.uri(),
                req.version(),
                host.map_or_else(String::new, |h| format!(", Host {h}"))
            )
        });
        log
    }

    /// Whether someone watches this request's way.
    pub(crate) fn watching(&self) -> bool {
        self.observed.as_ref().is_some_and(|o| o.watched)
    }

    /// Reports `phase` to the live trace, if someone watches; `detail` is
    /// made only then.
    pub(crate) fn trace(&mut self, phase: Phase, detail: impl FnOnce() -> String) {
        if let Some(o) = self.observed.as_mut() {
            trace(o, self.status, phase, detail);
        }
    }

    /// The route the request was given to (for its metrics' labels).
    pub(crate) fn route(&mut self, label: RouteLabel) {
        if let Some(o) = self.observed.as_mut() {
            o.route = label;
        }
    }

    /// The worker that served the request, as its handler says.
    pub(crate) fn served(&mut self, by: ServedBy) {
        if let Some(o) = self.observed.as_mut() {
            o.served = Some(by);
        }
    }

    /// The response's status, when it is chosen: its head goes out now.
    pub(crate) fn status(&mut self, status: http::StatusCode) {
        self.status = status.as_u16();
        if let (Some(o), Some(started)) = (self.observed.as_mut(), self.started) {
            o.first_byte = Some(started.elapsed());
        }
        let served = self.observed.as_ref().and_then(|o| o.served);
        self.trace(Phase::Response, || {
            let mut d = format!(
                "{} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            );
            if let Some(by) = served {
                if let Some(pid) = by.pid {
                    d.push_str(&format!(", worker pid {pid}"));
                }
                d.push_str(&format!(", waited {:?} for a worker", by.queue_wait));
            }
            d
        });
    }

    /// The user a realm granted the request.
    pub(crate) fn user(&mut self, user: &str) {
        if let Some(e) = self.access.as_mut() {
            e.record.user = Some(user.to_owned());
        }
    }

    /// Counts body bytes sent.
    pub(crate) fn sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }
}

impl Drop for LogPhase {
    fn drop(&mut self) {
        self.activity.end();
        // Dropped before a response was chosen: the client went away
        // (nginx logs this as 499).
        let status = if self.status == 0 { 499 } else { self.status };
        let duration = self.started.map(|s| s.elapsed()).unwrap_or_default();
        let bytes = self.bytes;
        if let Some(o) = self.observed.as_mut() {
            trace(o, status, Phase::Done, || {
                format!(
                    "{status}, {bytes} bytes, {:.3} ms",
                    duration.as_secs_f64() * 1e3
                )
            });
            record(o, status, bytes, duration);
        }
        if let Some(mut e) = self.access.take() {
            e.record.status = status;
            e.record.bytes = bytes;
            e.record.duration = duration;
            e.log.log(e.record);
        }
    }
}

/// Reports `phase` of `o`'s request to the live trace, if someone watches;
/// `detail` is made only then. `status`: 0 until one is chosen.
fn trace(o: &mut Observed, status: u16, phase: Phase, detail: impl FnOnce() -> String) {
    if !o.watched {
        return;
    }
    let path = o
        .path
        .get_or_insert_with(|| Arc::from(o.target.path()))
        .clone();
    let mut e = Event::now(o.id, phase, o.client, path, detail());
    if status != 0 {
        e = e.with_status(status);
    }
    o.observer.watch.emit(e);
}

/// Reports the finished request `o` to the metrics and the request history.
fn record(o: &Observed, status: u16, bytes: u64, duration: Duration) {
    let target = o
        .target
        .path_and_query()
        .map_or_else(|| o.target.path(), |p| p.as_str());
    o.observer.metrics.finish(&Finished {
        id: o.id,
        at: o.at,
        client: o.client,
        target,
        worker: o.served.and_then(|s| s.pid),
        queue_wait: o.served.map(|s| s.queue_wait),
        route: o.route,
        method: o.method,
        status,
        duration,
        first_byte: o.first_byte,
        request_bytes: o.request_bytes,
        response_bytes: bytes,
    });
}

/// An access record's fields known when the request arrives.
fn record_for<B>(
    req: &http::Request<B>,
    conn: &ConnInfo,
    id: u64,
    time: SystemTime,
) -> AccessRecord {
    let h = req.headers();
    let text = |name: http::header::HeaderName| {
        h.get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let peer = conn.peer.socket_addr();
    AccessRecord {
        time,
        remote: peer.map(|a| a.ip()),
        remote_port: peer.map(|a| a.port()),
        user: None,
        method: req.method().as_str().to_owned(),
        target: req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().to_string(), |p| p.as_str().to_owned()),
        protocol: match req.version() {
            http::Version::HTTP_09 => "HTTP/0.9",
            http::Version::HTTP_10 => "HTTP/1.0",
            http::Version::HTTP_2 => "HTTP/2.0",
            http::Version::HTTP_3 => "HTTP/3.0",
            _ => "HTTP/1.1",
        }
        .to_owned(),
        status: 0,
        bytes: 0,
        referer: text(http::header::REFERER),
        user_agent: text(http::header::USER_AGENT),
        host: text(http::header::HOST).or_else(|| req.uri().authority().map(|a| a.to_string())),
        duration: Default::default(),
        request_id: id,
        tls_protocol: conn.tls.as_ref().map(|t| t.protocol.into()),
        tls_cipher: conn.tls.as_ref().map(|t| t.cipher.into()),
    }
}
