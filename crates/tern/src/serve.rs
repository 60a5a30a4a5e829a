//! `tern serve`: load the configuration (or build one from the command line,
//! or the demo site), bind, run, and handle signals: SIGHUP reloads, SIGUSR1
//! reopens the access log, SIGTERM/SIGINT stop gracefully.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use tern_config::{Config, ListenAddr};
use tern_server::{BoundListener, Server, ServerHandle};
use tokio::signal::unix::{signal, SignalKind};

use crate::assemble::{self, Generation};
use crate::certwatch::CertWatch;
use crate::demo;
use crate::observe;

/// Arguments of `tern serve`.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// The configuration file (TOML). Without it, tern serves `--root`, or
    /// the built-in demo site.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Serve this directory with default settings (no configuration file).
    #[arg(long, conflicts_with = "config")]
    root: Option<PathBuf>,
    /// Listen here (IP:PORT or unix:PATH) instead of the configuration's
    /// listeners; may be repeated.
    #[arg(long)]
    listen: Vec<String>,
    /// Serve TLS on every listener with this certificate chain (PEM);
    /// needs --tls-key.
    #[arg(long, requires = "tls_key", value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// Serve TLS on every listener with a certificate for localhost from
    /// tern's local CA, made on first use and kept in the state directory
    /// ($TERN_STATE_DIR, else ~/.local/share/tern); prints the root to trust.
    #[arg(long, conflicts_with = "tls_cert")]
    tls_internal: bool,
    /// Keep no file bodies in memory (open files only; `[cache] enabled = false`).
    #[arg(long)]
    no_cache: bool,
    /// Worker threads (default: the configuration's, else the CPU count).
    #[arg(long)]
    workers: Option<usize>,
    /// Turn the admin listener on here (IP:PORT or unix:PATH): metrics,
    /// the status page, the live trace, health and readiness.
    #[arg(long, value_name = "ADDR")]
    admin: Option<String>,
    /// The HTTP/1 connection loop: tern's own for requests without a body,
    /// or hyper's for every request (default: the configuration's
    /// `[server] http1`, else tern).
    #[arg(long, value_name = "LOOP")]
    http1: Option<Http1Arg>,
}

/// `--http1`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Http1Arg {
    Hyper,
    Tern,
}

/// Where the configuration comes from, for reloads.
enum Source {
    File(PathBuf),
    Root(PathBuf),
}

struct Overrides {
    listen: Vec<ListenAddr>,
    admin: Option<ListenAddr>,
    tls: Option<tern_config::TlsConfig>,
    no_cache: bool,
    workers: Option<usize>,
    http1: Option<tern_config::Http1>,
}

impl Overrides {
    fn apply(&self, mut cfg: Config) -> Config {
        if !self.listen.is_empty() {
            cfg.listeners = self
                .listen
                .iter()
                .map(|a| tern_config::Listener {
                    addr: a.clone(),
                    tls: None,
                    redirect_to_https: None,
                })
                .collect();
        }
        if let Some(tls) = &self.tls {
            for l in &mut cfg.listeners {
                l.tls = Some(tls.clone());
            }
        }
        if self.no_cache {
            cfg.cache.enabled = false;
        }
        if let Some(w) = self.workers {
            cfg.server.workers = w.max(1);
        }
        if let Some(h) = self.http1 {
            cfg.server.http1 = h;
        }
        if let Some(addr) = &self.admin {
            cfg.admin
                .get_or_insert_with(tern_config::defaults::admin)
                .listen = Some(addr.clone());
        }
        cfg
    }
}

fn load(source: &Source, ov: &Overrides) -> anyhow::Result<Config> {
    let cfg = match source {
        Source::File(p) => tern_config::load(p).map_err(|e| anyhow::anyhow!("{e}"))?,
        Source::Root(r) => tern_config::for_root(r, &[]).map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    Ok(ov.apply(cfg))
}

pub(crate) fn run(args: ServeArgs) -> ExitCode {
    init_tracing();
    let result = serve(args);
    // The stopped server's pools close in the background, and the process
    // does not wait for them: their sockets' directory goes now.
    tern_gateway::remove_socket_dirs();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tern: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The log filter when `TERN_LOG` sets none. wasmtime-wasi opens an
/// INFO-level span around every WASI call a module makes (its
/// `#[instrument]`s): at `info` these were made, entered and dropped on
/// every call, a tenth of a "Hello!" module's cost, to log nothing.
const DEFAULT_LOG: &str = "info,wasmtime_wasi=warn";

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TERN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Raises the open-file limit to its hard maximum: each connection is a
/// descriptor, and the usual soft limit (1024) would cap connections far below
/// `max_connections` (nginx's `worker_rlimit_nofile`).
fn raise_nofile_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        let raised = Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!("cannot raise the open-file limit: {e}");
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    raise_nofile_limit();
    // Before any thread that forks exists: see its documentation.
    tern_wasm::prepare_process();
    let mut listen = Vec::new();
    for l in &args.listen {
        listen.push(
            l.parse::<ListenAddr>()
                .with_context(|| format!("--listen {l}"))?,
        );
    }
    let tls_on = |certificates, internal| {
        Some(tern_config::TlsConfig {
            certificates,
            profile: Default::default(),
            unknown_names: Default::default(),
            client_auth: None,
            internal,
            ticket_keys: None,
            acme: None,
        })
    };
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => tls_on(
            vec![tern_config::CertificateConfig {
                cert: std::path::absolute(&cert).unwrap_or(cert),
                key: std::path::absolute(&key).unwrap_or(key),
                origin: "--tls-cert/--tls-key".into(),
            }],
            None,
        ),
        _ if args.tls_internal => tls_on(
            Vec::new(),
            Some(tern_config::InternalCa::with_defaults(
                "--tls-internal".into(),
            )),
        ),
        _ => None,
    };
    let admin = args
        .admin
        .as_deref()
        .map(|a| {
            a.parse::<ListenAddr>()
                .with_context(|| format!("--admin {a}"))
        })
        .transpose()?;
    let ov = Overrides {
        admin,
        listen,
        tls,
        no_cache: args.no_cache,
        workers: args.workers,
        http1: args.http1.map(|h| match h {
            Http1Arg::Hyper => tern_config::Http1::Hyper,
            Http1Arg::Tern => tern_config::Http1::Tern,
        }),
    };
    // The demo site lives in a temporary directory for the life of the process.
    let mut demo_dir = None;
    let source = match (args.config, args.root) {
        (Some(c), _) => Source::File(c),
        (None, Some(r)) => Source::Root(r),
        (None, None) => {
            let dir = demo::write().context("writing the demo site")?;
            let config = dir.path().join(demo::CONFIG);
            demo_dir = Some(dir);
            Source::File(config)
        }
    };
    let cfg = load(&source, &ov)?;
    // This runtime only handles signals, reloads and shutdown; connections
    // run on the server's worker threads.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let result = runtime.block_on(run_server(cfg, source, ov, demo_dir.is_some()));
    // Dropping the runtime ends any task still running; the site (and with
    // it the access log writer, which flushes) was dropped in run_server.
    drop(runtime);
    drop(demo_dir);
    result
}

async fn run_server(cfg: Config, source: Source, ov: Overrides, demo: bool) -> anyhow::Result<()> {
    // Handlers first, so that a signal arriving once we print our address is
    // ours to handle (not the default action, which would kill us).
    let signals = Signals::install().context("installing signal handlers")?;
    // The observer outlives reloads: counters never go back.
    let observer = cfg.admin.as_ref().map(observe::observer);
    let (site, generation) = assemble::build(cfg, None, observer)?;
    let cfg = &generation.cfg;
    let mut listeners = Vec::new();
    for l in &cfg.listeners {
        listeners.push(BoundListener::bind(&l.addr)?);
    }
    let admin_listener = match cfg.admin.as_ref().and_then(|a| a.listen.as_ref()) {
        Some(addr) => Some(observe::bind(addr)?),
        None => None,
    };
    // Removed at the stop, as the sites' Unix sockets are.
    let admin_socket = match cfg.admin.as_ref().and_then(|a| a.listen.as_ref()) {
        Some(ListenAddr::Unix(p)) => Some(p.clone()),
        _ => None,
    };
    {
        let mut out = std::io::stdout().lock();
        for (l, c) in listeners.iter().zip(&cfg.listeners) {
            let what = if demo { "the demo site " } else { "" };
            let scheme = if c.tls.is_some() { "https" } else { "http" };
            match l.local_addr() {
                tern_handler::PeerAddr::Tcp(a) => {
                    writeln!(out, "tern: serving {what}on {scheme}://{a}/").ok()
                }
                other => writeln!(out, "tern: serving {what}on {other}").ok(),
            };
        }
        let mut roots: Vec<PathBuf> = cfg
            .listeners
            .iter()
            .filter_map(|l| l.tls.as_ref()?.internal.as_ref())
            .map(tern_tls::root_path)
            .collect();
        roots.dedup();
        for root in roots {
            writeln!(
                out,
                "tern: certificates from the local CA; trust its root: curl --cacert {}",
                root.display()
            )
            .ok();
        }
        if let Some(l) = &admin_listener {
            match l {
                tern_observe::admin::AdminListener::Tcp(t) => {
                    if let Ok(a) = t.local_addr() {
                        writeln!(out, "tern: admin on http://{a}/status").ok();
                    }
                }
                tern_observe::admin::AdminListener::Unix(_) => {
                    if let Some(a) = cfg.admin.as_ref().and_then(|a| a.listen.as_ref()) {
                        writeln!(out, "tern: admin on {a}").ok();
                    }
                }
            }
        }
        out.flush().ok();
    }
    let server = Server::new(site);
    let handle = server.handle();
    let workers = cfg.server.workers;
    let acme = generation.acme.clone();
    let state = Arc::new(observe::State {
        handle: handle.clone(),
        started: std::time::SystemTime::now(),
        workers,
        listeners: listeners
            .iter()
            .map(|l| l.local_addr().to_string())
            .collect(),
        loaded: std::sync::Mutex::new(observe::Loaded {
            generation: 1,
            at: std::time::SystemTime::now(),
            cache: Arc::clone(&generation.cache),
        }),
        stopping: std::sync::atomic::AtomicBool::new(false),
        pools_ready: Default::default(),
    });
    let admin_stop = tokio_util::sync::CancellationToken::new();
    let admin = match (observer, &cfg.admin) {
        (Some(o), Some(a)) => {
            let admin = observe::admin(o, state.clone(), a);
            // The sites' admin routes serve these pages from now on.
            let _ = generation.admin.set(Arc::downgrade(&admin));
            Some(tokio::spawn(admin.run(admin_listener, admin_stop.clone())))
        }
        _ => None,
    };
    // Watched from before the first request: a renewal that lands while
    // the server starts is not missed.
    let certs = CertWatch::new(&generation.cfg);
    let signals = tokio::spawn(watch_signals(
        signals,
        certs,
        handle.clone(),
        generation,
        source,
        ov,
        state,
    ));
    let result = server.run(listeners, workers).await;
    signals.abort();
    acme.stop();
    // The admin listener answers (readiness 503) until the server is
    // done, then records the last minute of activity.
    admin_stop.cancel();
    if let Some(a) = admin {
        let _ = a.await;
    }
    if let Some(p) = admin_socket {
        let _ = std::fs::remove_file(p);
    }
    result.context("starting the worker threads")?;
    // Flush the access log before exiting (blocking; off the runtime threads).
    let site = handle.site();
    if let Some(log) = site.sinks.access_log.clone() {
        tokio::task::spawn_blocking(move || log.flush()).await.ok();
    }
    tracing::info!("stopped");
    Ok(())
}

struct Signals {
    hup: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            hup: signal(SignalKind::hangup())?,
            usr1: signal(SignalKind::user_defined1())?,
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }
}

async fn watch_signals(
    signals: Signals,
    mut certs: CertWatch,
    handle: ServerHandle,
    mut generation: Generation,
    source: Source,
    ov: Overrides,
    state: Arc<observe::State>,
) -> anyhow::Result<()> {
    let Signals {
        mut hup,
        mut usr1,
        mut term,
        mut int,
    } = signals;
    // The local CA's certificates are issued again, when due, as a
    // configuration is built: a daily reload keeps a long-running server's
    // fresh (see tern_tls's internal.rs).
    let mut daily =
        tokio::time::interval_at(tokio::time::Instant::now() + LOCAL_CA_CHECK, LOCAL_CA_CHECK);
    loop {
        let local_ca = uses_local_ca(&generation.cfg);
        let why = tokio::select! {
            _ = hup.recv() => "SIGHUP",
            _ = certs.changed() => "certificate files changed",
            _ = daily.tick(), if local_ca => "the local CA's daily check",
            _ = usr1.recv() => {
                if let Some(log) = handle.site().sinks.access_log.clone() {
                    log.reopen();
                    tracing::info!("access log reopened");
                }
                continue;
            }
            _ = term.recv() => { stop("SIGTERM", &handle, &state, generation.cfg.server.shutdown_delay); continue; }
            _ = int.recv() => { stop("SIGINT", &handle, &state, generation.cfg.server.shutdown_delay); continue; }
        };
        match reload(&handle, &generation, &source, &ov).await {
            Ok(next) => {
                tracing::info!("{why}: configuration reloaded");
                state.loaded(Arc::clone(&next.cache));
                generation = next;
                // The new configuration's files, watched before the old
                // watch goes: a change that came while the reload read
                // them (a renewal's second file) reloads again.
                certs = CertWatch::new(&generation.cfg).after(certs);
            }
            Err(e) => {
                tracing::error!("{why}: reload failed, the old configuration keeps serving: {e:#}")
            }
        }
    }
}

/// A stop asked for by `signal`: readiness turns 503 at once; after
/// `delay` (the time a load balancer takes to stop sending new
/// connections), accepting stops and the connections drain. A second stop
/// signal during the delay stops at once.
fn stop(signal: &str, handle: &ServerHandle, state: &observe::State, delay: std::time::Duration) {
    let first = !state
        .stopping
        .swap(true, std::sync::atomic::Ordering::AcqRel);
    if !first || delay.is_zero() {
        tracing::info!("{signal}: stopping");
        handle.shutdown();
        return;
    }
    tracing::info!(
        "{signal}: not ready from now; serving for {delay:?} (shutdown_delay), then stopping"
    );
    let handle = handle.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        tracing::info!("shutdown_delay over: stopping");
        handle.shutdown();
    });
}

/// How often the local CA's certificates are looked at.
const LOCAL_CA_CHECK: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

fn uses_local_ca(cfg: &Config) -> bool {
    cfg.listeners
        .iter()
        .any(|l| l.tls.as_ref().is_some_and(|t| t.internal.is_some()))
}

async fn reload(
    handle: &ServerHandle,
    old: &Generation,
    source: &Source,
    ov: &Overrides,
) -> anyhow::Result<Generation> {
    let cfg = load(source, ov)?;
    let addresses = |c: &Config| {
        c.listeners
            .iter()
            .map(|l| l.addr.clone())
            .collect::<Vec<_>>()
    };
    if addresses(&cfg) != addresses(&old.cfg) {
        tracing::warn!("listeners changed: the new listeners take effect after a restart");
    }
    if cfg.admin != old.cfg.admin {
        tracing::warn!(
            "[admin] changed: the admin listener and its settings take effect after a restart"
        );
    }
    let current = handle.site();
    let observer = current.sinks.observer;
    let (site, next) = assemble::build(cfg, Some((old, &current)), observer)?;
    let grace = next.cfg.server.grace_period;
    handle.reload(site);
    // Dropping the last handle of a replaced access log joins its writer
    // thread. Keep one handle here past the grace period, so that the last
    // drop happens on the blocking pool rather than on a worker thread that
    // finished the old site's last request.
    if let Some(old_log) = current.sinks.access_log.clone() {
        drop(current);
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            let _ = tokio::task::spawn_blocking(move || drop(old_log)).await;
        });
    }
    Ok(next)
}
