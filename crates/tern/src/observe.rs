//! The binary's side of observability: the admin listener bound and run,
//! the [`Source`] that reports the server's parts to it (only the binary
//! reaches the file cache, the pools and the access log), readiness, and
//! the two clients of the admin listener: `tern healthcheck` and
//! `tern watch`.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use tern_config::{AdminConfig, ListenAddr};
use tern_observe::admin::{Admin, AdminListener};
use tern_observe::parts::{CacheFigures, LogFigures, Parts, Readiness, Source};
use tern_observe::Observer;
use tern_server::ServerHandle;
use tern_static::FileCache;

/// The admin listener's address when none is given: where `tern
/// healthcheck` and `tern watch` look.
pub(crate) const DEFAULT_ADMIN: &str = "127.0.0.1:9180";

/// What the admin listener reports that changes with each configuration.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) generation: u64,
    pub(crate) at: SystemTime,
    pub(crate) cache: Arc<FileCache>,
}

/// The binary's state as the admin listener sees it.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) handle: ServerHandle,
    pub(crate) started: SystemTime,
    pub(crate) workers: usize,
    pub(crate) listeners: Vec<String>,
    pub(crate) loaded: Mutex<Loaded>,
    /// Set on SIGTERM/SIGINT: readiness answers 503 from then on.
    pub(crate) stopping: AtomicBool,
    /// The pools that have had their minimum of ready workers once: a
    /// pool gates readiness until then (the start), not after. A pool
    /// whose application is down later would otherwise take every
    /// replica out of its load balancer at once; its outage shows in the
    /// metrics and the status page instead.
    pub(crate) pools_ready: Mutex<std::collections::HashSet<String>>,
}

impl State {
    /// A configuration (re)loaded.
    pub(crate) fn loaded(&self, cache: Arc<FileCache>) {
        let mut l = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        l.generation += 1;
        l.at = SystemTime::now();
        l.cache = cache;
    }

    fn pools(&self) -> Vec<tern_handler::PoolReport> {
        let site = self.handle.site();
        let mut pools = Vec::new();
        for routes in site.router.sites() {
            for h in routes.handlers() {
                h.report(&mut pools);
            }
        }
        pools
    }
}

/// The admin pages for the routes that mount them on a site: set once
/// the server exists (the routes are built before it). Weak: the pages
/// reach the site (through the server's handle), and the site must not
/// keep itself alive through them.
pub(crate) type AdminCell = Arc<std::sync::OnceLock<std::sync::Weak<Admin>>>;

/// A site's `handler = "admin"` route.
#[derive(Debug)]
pub(crate) struct Mounted(pub(crate) AdminCell);

impl tern_handler::Handler for Mounted {
    fn call(&self, ex: tern_handler::Exchange) -> tern_handler::HandlerFuture {
        let Some(admin) = self.0.get().and_then(std::sync::Weak::upgrade) else {
            return tern_handler::HandlerFuture::ready(tern_handler::error_response(
                http::StatusCode::SERVICE_UNAVAILABLE,
            ));
        };
        let (base, rest) = ex.route.pattern.split(&ex.path);
        let base = base.trim_end_matches('/').to_owned();
        let rest = if rest.is_empty() { "/" } else { rest };
        let target = match ex.request.uri().query() {
            Some(q) => format!("{rest}?{q}"),
            None => rest.to_owned(),
        };
        let Ok(uri) = target.parse::<http::Uri>() else {
            return tern_handler::HandlerFuture::ready(tern_handler::error_response(
                http::StatusCode::NOT_FOUND,
            ));
        };
        let (parts, _) = ex.request.into_parts();
        // On the blocking pool: a page of 28 days of history, or the rows
        // of many workers read from /proc, must not hold up the worker
        // thread's other connections.
        tern_handler::HandlerFuture::new(async move {
            let answered = tokio::task::spawn_blocking(move || {
                admin.answer(&parts.method, &uri, &parts.headers, &base)
            })
            .await;
            match answered {
                Ok(r) => r.map(tern_handler::ResponseBody::stream),
                Err(_) => tern_handler::error_response(http::StatusCode::INTERNAL_SERVER_ERROR),
            }
        })
    }

    fn kind(&self) -> &'static str {
        "admin"
    }
}

/// [`State`] shared with the admin listener.
#[derive(Debug)]
pub(crate) struct Shared(pub(crate) Arc<State>);

impl Source for Shared {
    fn parts(&self) -> Parts {
        let s = &self.0;
        let (generation, loaded, cache) = {
            let l = s.loaded.lock().unwrap_or_else(|e| e.into_inner());
            (l.generation, l.at, l.cache.clone())
        };
        let site = s.handle.site();
        Parts {
            generation,
            loaded,
            started: s.started,
            workers: s.workers,
            listeners: s.listeners.clone(),
            cache: {
                let st = cache.stats();
                Some(CacheFigures {
                    hits: st.hits,
                    misses: st.misses,
                    evictions: st.evictions,
                    entries: st.entries,
                    bytes: st.bytes,
                })
            },
            pools: s.pools(),
            access_log: site.sinks.access_log.as_ref().map(|l| {
                let c = l.counts();
                LogFigures {
                    path: l.path().display().to_string(),
                    lines: c.lines,
                    lost: c.lost,
                }
            }),
        }
    }

    fn readiness(&self) -> Readiness {
        let s = &self.0;
        if s.stopping.load(Ordering::Acquire) {
            return Readiness::NotReady("shutting down".into());
        }
        if !s.handle.serving() {
            return Readiness::NotReady("the listeners are not accepting yet".into());
        }
        let mut seen = s.pools_ready.lock().unwrap_or_else(|e| e.into_inner());
        for p in s.pools() {
            if !p.gates_readiness || seen.contains(&p.name) {
                continue;
            }
            let ready = p.idle + p.busy;
            if ready < p.min_ready {
                let why = if p.backing_off {
                    "starting them fails (backing off)"
                } else {
                    "starting"
                };
                return Readiness::NotReady(format!(
                    "pool {}: {ready} of {} workers ready, {why}",
                    p.name, p.min_ready
                ));
            }
            seen.insert(p.name);
        }
        Readiness::Ready
    }
}

/// The observer for `admin`'s settings, for the life of the process.
pub(crate) fn observer(admin: &AdminConfig) -> &'static Observer {
    Box::leak(Box::new(Observer {
        metrics: tern_observe::metrics::Metrics::new(
            &admin.duration_buckets,
            admin.request_history,
        ),
        watch: Default::default(),
    }))
}

/// Binds the admin listener (on the calling runtime).
pub(crate) fn bind(addr: &ListenAddr) -> anyhow::Result<AdminListener> {
    match addr {
        ListenAddr::Tcp(a) => {
            let l =
                std::net::TcpListener::bind(a).with_context(|| format!("admin listener {a}"))?;
            l.set_nonblocking(true)?;
            Ok(AdminListener::Tcp(tokio::net::TcpListener::from_std(l)?))
        }
        ListenAddr::Unix(p) => {
            remove_stale_socket(p);
            let l = std::os::unix::net::UnixListener::bind(p)
                .with_context(|| format!("admin listener unix:{}", p.display()))?;
            l.set_nonblocking(true)?;
            Ok(AdminListener::Unix(tokio::net::UnixListener::from_std(l)?))
        }
    }
}

/// Removes a socket file left by a process that is gone (only a socket:
/// never a regular file someone named by mistake).
fn remove_stale_socket(p: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt as _;
    if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
        && std::os::unix::net::UnixStream::connect(p)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
    {
        let _ = std::fs::remove_file(p);
    }
}

/// The admin listener's pages.
pub(crate) fn admin(
    observer: &'static Observer,
    state: Arc<State>,
    cfg: &AdminConfig,
) -> Arc<Admin> {
    Arc::new(Admin::new(
        observer,
        Box::new(Shared(state)),
        cfg.allow.clone(),
        cfg.activity_file.as_deref(),
    ))
}

/// Arguments of `tern healthcheck`.
#[derive(clap::Args, Debug)]
pub(crate) struct HealthArgs {
    /// The admin listener (IP:PORT or unix:PATH).
    #[arg(long, default_value = DEFAULT_ADMIN)]
    admin: String,
    /// Ask whether the process serves (`/healthz`) rather than whether it
    /// is ready for traffic (`/readyz`).
    #[arg(long)]
    live: bool,
}

/// `tern healthcheck`: exit 0 when the admin listener answers 200.
pub(crate) fn healthcheck(args: &HealthArgs) -> ExitCode {
    let path = if args.live { "/healthz" } else { "/readyz" };
    // (A probe of a site's mounted pages goes through that site's rules;
    // this one asks the admin listener.)
    match get(&args.admin, path, Some(Duration::from_secs(3))) {
        Ok(mut r) => {
            let mut body = String::new();
            let _ = r.stream.read_to_string(&mut body);
            let status = r.status;
            let text = body.trim();
            if status == 200 {
                println!("{text}");
                ExitCode::SUCCESS
            } else {
                eprintln!("tern healthcheck: {status}: {text}");
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("tern healthcheck: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Arguments of `tern watch`.
#[derive(clap::Args, Debug)]
pub(crate) struct WatchArgs {
    /// The admin listener (IP:PORT or unix:PATH).
    #[arg(long, default_value = DEFAULT_ADMIN)]
    admin: String,
    /// Only requests whose path matches this glob (`/app/**`).
    #[arg(long)]
    path: Option<String>,
    /// Only requests from this address or network (`10.0.0.0/8`).
    #[arg(long)]
    client: Option<String>,
    /// Only requests whose status is in this range (`500`, `400-499`,
    /// `5xx`); their events are shown when they end.
    #[arg(long)]
    status: Option<String>,
}

/// `tern watch`: prints one line per phase of each matching request until
/// interrupted.
pub(crate) fn watch(args: &WatchArgs) -> ExitCode {
    let mut query = String::from("text");
    for (k, v) in [
        ("path", &args.path),
        ("client", &args.client),
        ("status", &args.status),
    ] {
        if let Some(v) = v {
            query.push_str(&format!(
                "&{k}={}",
                percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
            ));
        }
    }
    let r = match get(&args.admin, &format!("/watch?{query}"), None) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tern watch: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut stream = r.stream;
    if r.status != 200 {
        let mut body = String::new();
        let _ = stream.read_to_string(&mut body);
        eprintln!("tern watch: {}: {}", r.status, body.trim());
        return ExitCode::FAILURE;
    }
    let mut out = std::io::stdout().lock();
    // Empty lines are the listener's keep-alive pings.
    for line in std::io::BufRead::lines(std::io::BufReader::new(stream)) {
        match line {
            Ok(l) if l.is_empty() => {}
            Ok(l) => {
                if writeln!(out, "{l}").and_then(|()| out.flush()).is_err() {
                    return ExitCode::SUCCESS;
                }
            }
            Err(e) => {
                eprintln!("tern watch: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// A response's status, and the stream positioned at its body.
struct Got {
    status: u16,
    stream: Box<dyn ReadWrite>,
}

/// A blocking HTTP/1.0 GET (HTTP/1.0: the body ends when the connection
/// does, with no chunked framing to undo).
fn get(admin: &str, path: &str, timeout: Option<Duration>) -> anyhow::Result<Got> {
    let addr: ListenAddr = admin.parse().with_context(|| format!("--admin {admin}"))?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: tern-admin\r\n\r\n");
    let mut stream: Box<dyn ReadWrite> = match &addr {
        ListenAddr::Tcp(a) => {
            let s = match timeout {
                Some(t) => std::net::TcpStream::connect_timeout(a, t),
                None => std::net::TcpStream::connect(a),
            }
            .with_context(|| format!("connecting to the admin listener {a}"))?;
            s.set_read_timeout(timeout)?;
            Box::new(s)
        }
        ListenAddr::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(p).with_context(|| {
                format!("connecting to the admin listener unix:{}", p.display())
            })?;
            s.set_read_timeout(timeout)?;
            Box::new(s)
        }
    };
    stream.write_all(request.as_bytes())?;
    // The head, byte by byte up to its blank line: the body that follows
    // is the caller's to read.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        // `read_exact` tries again when a stop and continue (^Z, fg)
        // interrupts the read, which has a timeout; a bare `read` failed.
        if let Err(e) = stream.read_exact(&mut byte) {
            if e.kind() != std::io::ErrorKind::UnexpectedEof {
                return Err(e.into());
            }
            anyhow::bail!("the admin listener closed the connection before answering");
        }
        head.push(byte[0]);
        if head.len() > 16 * 1024 {
            anyhow::bail!("the admin listener's answer has no end of head");
        }
    }
    let text = String::from_utf8_lossy(&head);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("the admin listener's answer has no status")?;
    Ok(Got { status, stream })
}

trait ReadWrite: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> ReadWrite for T {}

#[cfg(test)]
mod tests {
    /// The configuration's default buckets are the activity history's:
    /// the two crates cannot share the constant (tern-config depends on no
    /// part of tern), so this holds them together.
    #[test]
    fn the_default_duration_buckets_are_the_activity_historys() {
        assert_eq!(
            tern_config::defaults::DURATION_BUCKETS,
            tern_observe::activity::LATENCY_BOUNDS
        );
    }
}
