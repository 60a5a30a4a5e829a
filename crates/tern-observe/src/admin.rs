//! The admin listener: a small HTTP/1.1 server, apart from the sites (its
//! own socket, its own runtime: the binary's control thread), serving
//!
//! | path | what |
//! |---|---|
//! | `/metrics` | Prometheus text, or OpenMetrics when the scraper asks |
//! | `/status` | the status page (HTML; `?json`; `?hours=N` of history) |
//! | `/requests` | the request history, JSON, newest first |
//! | `/watch` | the live trace as server-sent events (`?path=GLOB&client=CIDR&status=RANGE`; `?text` for one line per event) |
//! | `/healthz` | 200 while the process serves |
//! | `/readyz` | 200 when ready for traffic, else 503 and why |
//!
//! Clients: loopback, a Unix socket, or the configured networks; any other
//! gets 403. It shows no secret: the pages are built from counters and
//! names, never from the configuration's keys or passwords.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::FutureExt as _;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::activity::{ActivityError, History, Minute, MINUTES};
use crate::expose::Format;
use crate::page::Status;
use crate::parts::{Readiness, Source};
use crate::process;
use crate::scrape::{self, Scrape};
use crate::watch::{Filter, Watcher};
use crate::Observer;

/// An admin page's body (a whole page, or the live trace's stream).
pub type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

/// The most hours of activity the status page draws (28 days).
const MAX_HOURS: u64 = (MINUTES / 60) as u64;

/// The admin pages' state.
pub struct Admin {
    observer: &'static Observer,
    source: Box<dyn Source>,
    /// Networks served besides loopback.
    allow: Vec<ipnet::IpNet>,
    history: Mutex<Kept>,
    /// The minute a refused client was last logged.
    refused_at: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin")
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// The activity history, and whether it is in its file.
#[derive(Debug)]
struct Kept {
    history: History,
    /// Whether `history` is its file (else it is in memory).
    persistent: bool,
    /// The file, while another process holds it: tried again each minute.
    waiting: Option<std::path::PathBuf>,
}

impl Kept {
    /// Opens the history's file; on failure, logs it and keeps (or goes
    /// on keeping) the history in memory.
    fn open(&mut self, path: &Path) {
        match History::open(path) {
            Ok(mut h) => {
                if let Some(aside) = h.set_aside() {
                    tracing::warn!(
                        "activity history {}: not a history file; set aside as {} and started anew",
                        path.display(),
                        aside.display()
                    );
                }
                if h.cleared_slots() > 0 {
                    tracing::warn!(
                        "activity history {}: {} minutes were torn (a crash while writing) or lay in the future, and are cleared",
                        path.display(),
                        h.cleared_slots()
                    );
                }
                // Minutes kept in memory while the file was held elsewhere.
                if let Some(latest) = self.history.latest() {
                    let first = latest.saturating_sub(MINUTES as u64 - 1);
                    for (i, m) in self.history.range(first, latest + 1).iter().enumerate() {
                        if *m != Minute::default() {
                            if let Err(e) = h.record(first + i as u64, m) {
                                tracing::error!("{e}");
                                break;
                            }
                        }
                    }
                }
                if self.waiting.take().is_some() {
                    tracing::info!("activity history {}: opened", path.display());
                }
                self.history = h;
                self.persistent = true;
            }
            Err(e @ ActivityError::Locked { .. }) => {
                if self.waiting.is_none() {
                    tracing::warn!(
                        "{e}; the activity history is kept in memory until it can be opened (tried each minute)"
                    );
                }
                self.waiting = Some(path.to_owned());
            }
            Err(e) => {
                tracing::error!("{e}; the activity history is kept in memory only");
                self.waiting = None;
            }
        }
    }
}

/// An accepted connection's stream.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// Where the admin listener accepts.
#[derive(Debug)]
pub enum AdminListener {
    /// A TCP socket.
    Tcp(tokio::net::TcpListener),
    /// A Unix socket (its clients are local).
    Unix(tokio::net::UnixListener),
}

impl Admin {
    /// The admin pages over `observer`, with the parts `source` reports,
    /// serving loopback and `allow`, keeping the activity history in
    /// `activity_file` (`None`: in memory only). A history file that
    /// cannot be opened is logged and the history kept in memory: the
    /// server still starts.
    pub fn new(
        observer: &'static Observer,
        source: Box<dyn Source>,
        allow: Vec<ipnet::IpNet>,
        activity_file: Option<&Path>,
    ) -> Admin {
        let mut kept = Kept {
            history: History::in_memory(),
            persistent: false,
            waiting: None,
        };
        if let Some(path) = activity_file {
            kept.open(path);
        }
        Admin {
            observer,
            source,
            allow,
            history: Mutex::new(kept),
            refused_at: Default::default(),
        }
    }

    /// Keeps the activity history (one record a minute, and a last one at
    /// the stop) and serves `listener`, if any, until `stop`.
    pub async fn run(self: Arc<Self>, listener: Option<AdminListener>, stop: CancellationToken) {
        let minutes = tokio::spawn(self.clone().keep_minutes(stop.clone()));
        let Some(listener) = listener else {
            let _ = minutes.await;
            return;
        };
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                a = accept(&listener) => a,
            };
            match accepted {
                Ok((io, peer)) => {
                    if let Some(ip) = peer {
                        if !self.admits(ip) {
                            self.refused_log(ip);
                            tokio::spawn(refuse(io));
                            continue;
                        }
                    }
                    let admin = self.clone();
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let r = admin.answer(req.method(), req.uri(), req.headers(), "");
                            async move { Ok::<_, Infallible>(r) }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(Duration::from_secs(10))
                            .serve_connection(TokioIo::new(io), svc);
                        tokio::pin!(conn);
                        tokio::select! {
                            _ = conn.as_mut() => {}
                            _ = stop.cancelled() => {
                                conn.as_mut().graceful_shutdown();
                                let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
                            }
                        }
                    });
                }
                Err(e) => {
                    tracing::error!("admin listener: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        let _ = minutes.await;
    }

    fn admits(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_loopback() || self.allow.iter().any(|n| n.contains(&ip))
    }

    /// Logs a refused client: the first each minute (a flood of them
    /// must not flood the log).
    fn refused_log(&self, ip: IpAddr) {
        let minute = unix_secs() / 60;
        if self
            .refused_at
            .swap(minute, std::sync::atomic::Ordering::Relaxed)
            != minute
        {
            tracing::warn!(peer = %ip, "admin listener: refused a client outside loopback and [admin] allow (more this minute are not logged)");
        }
    }

    /// Every minute, the requests finished in it go into the history.
    async fn keep_minutes(self: Arc<Self>, stop: CancellationToken) {
        loop {
            // To the millisecond: requests finished in the time a late
            // timer would take count in the next minute.
            let now = unix_millis();
            let next = (now / 60_000 + 1) * 60_000;
            let wait = Duration::from_millis(next - now);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => {
                    self.record_minute(unix_millis() / 60_000);
                    return;
                }
            }
            // The minute just ended.
            self.record_minute(next / 60_000 - 1);
        }
    }

    fn record_minute(&self, minute: u64) {
        let m = self.observer.metrics.take_minute();
        let mut k = self.history.lock().unwrap_or_else(|e| e.into_inner());
        if m != Minute::default() {
            if let Err(e) = k.history.record(minute, &m) {
                tracing::error!("{e}");
            }
        }
        if let Some(path) = k.waiting.clone() {
            k.open(&path);
        }
    }

    /// The answer to a request for `uri`, whose path is the admin pages'
    /// own (`/status`); `base` is where they are mounted (`""` on the
    /// admin listener, the route's prefix on a site).
    pub fn answer(
        &self,
        method: &Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
        base: &str,
    ) -> Response<Body> {
        if method != Method::GET && method != Method::HEAD {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "GET or HEAD\n");
            r.headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        let query = uri.query().unwrap_or("");
        match uri.path() {
            "" | "/" => redirect(&format!("{base}/status")),
            "/healthz" => text(StatusCode::OK, "ok\n"),
            "/readyz" => match self.source.readiness() {
                Readiness::Ready => text(StatusCode::OK, "ready\n"),
                Readiness::NotReady(why) => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("not ready: {why}\n"),
                ),
            },
            "/metrics" => {
                let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
                let format = Format::negotiate(accept);
                let body = self.metrics(format);
                let mut r = Response::new(full(body));
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static(format.content_type()),
                );
                r
            }
            "/status" => self.status(query),
            "/requests" => {
                json(&serde_json::to_value(self.observer.metrics.recent()).unwrap_or_default())
            }
            "/watch" => self.watch(query),
            _ => text(StatusCode::NOT_FOUND, "not found: see /status\n"),
        }
    }

    /// The `/metrics` text.
    pub fn metrics(&self, format: Format) -> String {
        let snapshot = self.observer.metrics.snapshot();
        let parts = self.source.parts();
        scrape::render(
            &Scrape {
                metrics: &self.observer.metrics,
                snapshot: &snapshot,
                parts: &parts,
                process: process::this_process().ok(),
                watch: &self.observer.watch,
            },
            format,
        )
    }

    fn status(&self, query: &str) -> Response<Body> {
        let hours = param(query, "hours")
            .and_then(|h| h.parse::<u64>().ok())
            .unwrap_or(24)
            .clamp(1, MAX_HOURS);
        let now_minute = unix_secs() / 60;
        let first = now_minute + 1 - hours * 60;
        let (mut minutes, persistent) = {
            let k = self.history.lock().unwrap_or_else(|e| e.into_inner());
            (k.history.range(first, now_minute + 1), k.persistent)
        };
        // The running minute, not yet recorded.
        if let Some(last) = minutes.last_mut() {
            last.add(&self.observer.metrics.peek_minute());
        }
        let snapshot = self.observer.metrics.snapshot();
        let parts = self.source.parts();
        let recent = self.observer.metrics.recent();
        let status = Status {
            parts: &parts,
            snapshot: &snapshot,
            process: process::this_process().ok(),
            minutes: &minutes,
            first_minute: first,
            recent: &recent,
            persistent,
        };
        if has(query, "json") {
            return json(&status.json());
        }
        let refresh = param(query, "refresh")
            .and_then(|r| r.parse::<u32>().ok())
            .unwrap_or(10)
            .clamp(1, 3600);
        let mut r = Response::new(full(status.html(refresh)));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        // The page is self-contained: nothing else may load.
        r.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            header::HeaderValue::from_static(
                "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
            ),
        );
        r
    }

    fn watch(&self, query: &str) -> Response<Body> {
        let decoded = |k| param(query, k).map(|v| percent(&v));
        let filter = match Filter::parse(
            decoded("path").as_deref(),
            decoded("client").as_deref(),
            decoded("status").as_deref(),
        ) {
            Ok(f) => f,
            Err(e) => return text(StatusCode::BAD_REQUEST, &format!("{e}\n")),
        };
        let watcher = match self.observer.watch.attach(filter) {
            Ok(w) => w,
            Err(e) => return text(StatusCode::SERVICE_UNAVAILABLE, &format!("{e}\n")),
        };
        let lines = has(query, "text");
        let mut r = Response::new(events(watcher, lines));
        let ct = if lines {
            "text/plain; charset=utf-8"
        } else {
            "text/event-stream"
        };
        r.headers_mut()
            .insert(header::CONTENT_TYPE, header::HeaderValue::from_static(ct));
        r.headers_mut().insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store"),
        );
        r
    }
}

/// The most bytes of events one write of a watch stream carries.
const BATCH: usize = 64 * 1024;

/// How often a quiet watch stream sends a comment, so that a client gone
/// away is noticed (the write fails) and its watcher let go.
const PING: Duration = Duration::from_secs(15);

/// The watcher's events as a body: server-sent events, or lines.
fn events(watcher: Watcher, lines: bool) -> Body {
    let hello = if lines {
        Bytes::from_static(b"watching: one line per phase of each matching request\n")
    } else {
        Bytes::from_static(b": watching\n\n")
    };
    let stream =
        futures_util::stream::unfold((watcher, Some(hello)), move |(mut w, hello)| async move {
            if let Some(h) = hello {
                return Some((Ok(Frame::data(h)), (w, None)));
            }
            let chunk = match tokio::time::timeout(PING, w.next()).await {
                Ok(Some(e)) => {
                    // With every event already waiting: one write for a
                    // burst, not one per event.
                    let mut out = String::new();
                    let mut next = Some(e);
                    while let Some(e) = next.take() {
                        if lines {
                            out.push_str(&e.line());
                            out.push('\n');
                        } else {
                            let data = serde_json::to_string(&*e).unwrap_or_default();
                            out.push_str(&format!("event: {}\ndata: {data}\n\n", phase_name(&e)));
                        }
                        if out.len() < BATCH {
                            // Polled once: `next` is cancel safe.
                            next = w.next().now_or_never().flatten();
                        }
                    }
                    Bytes::from(out)
                }
                Ok(None) => return None,
                // An empty line (which `tern watch` skips): an empty chunk
                // would never be written, and a client gone away never
                // noticed.
                Err(_) if lines => Bytes::from_static(b"\n"),
                Err(_) => Bytes::from_static(b": ping\n\n"),
            };
            Some((Ok(Frame::data(chunk)), (w, None)))
        });
    BodyExt::boxed_unsync(StreamBody::new(stream))
}

fn phase_name(e: &crate::watch::Event) -> String {
    serde_json::to_value(e.phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

async fn accept(l: &AdminListener) -> std::io::Result<(Box<dyn Io>, Option<IpAddr>)> {
    match l {
        AdminListener::Tcp(t) => {
            let (s, peer): (_, SocketAddr) = t.accept().await?;
            let _ = s.set_nodelay(true);
            Ok((Box::new(s), Some(peer.ip())))
        }
        AdminListener::Unix(u) => {
            let (s, _) = u.accept().await?;
            Ok((Box::new(s), None))
        }
    }
}

/// Answers a client outside the allowed networks with 403 and closes.
async fn refuse(io: Box<dyn Io>) {
    let svc = hyper::service::service_fn(|_req: Request<Incoming>| async {
        let mut r = text(
            StatusCode::FORBIDDEN,
            "the admin listener serves loopback and [admin] allow only\n",
        );
        r.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        Ok::<_, Infallible>(r)
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .serve_connection(TokioIo::new(io), svc);
    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
}

fn unix_secs() -> u64 {
    unix_millis() / 1000
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn full(s: impl Into<Bytes>) -> Body {
    BodyExt::boxed_unsync(Full::new(s.into()))
}

fn text(status: StatusCode, s: &str) -> Response<Body> {
    let mut r = Response::new(full(s.to_owned()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn json(v: &serde_json::Value) -> Response<Body> {
    let mut r = Response::new(full(serde_json::to_vec(v).unwrap_or_default()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

fn redirect(to: &str) -> Response<Body> {
    let mut r = Response::new(full(Bytes::new()));
    *r.status_mut() = StatusCode::FOUND;
    if let Ok(v) = header::HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// The value of `key` in a query string, if present.
fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then(|| v.to_owned())
    })
}

/// Whether the query names `key` (with or without a value).
fn has(query: &str, key: &str) -> bool {
    param(query, key).is_some()
}

/// A query value percent-decoded (`+` is a space).
fn percent(v: &str) -> String {
    let v = v.replace('+', " ");
    percent_encoding::percent_decode_str(&v)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_read() {
        assert_eq!(param("a=1&json&b=x", "b").as_deref(), Some("x"));
        assert!(has("a=1&json", "json"));
        assert!(!has("jsonx=1", "json"));
        assert_eq!(percent("%2Fapp%2F%2A%2A+x"), "/app/** x");
        assert_eq!(percent("100%"), "100%");
        assert_eq!(percent("%zz"), "%zz");
    }
}
