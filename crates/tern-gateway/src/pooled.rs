//! The handlers of persistent workers: [`FastCgi`] (applications tern
//! connects to, or runs itself) and [`CgiPlus`] (scripts that loop, and
//! the run-time engines). A request's way through either: find the script
//! (when the route has a directory), ready the body, build the
//! environment, take a worker from a pool (`tern-pool`), start the
//! request on it (the head, and a body already in memory, in one write),
//! and hand it to its own task (`relay`), which answers with the parsed
//! head and gives the worker back — or discards it — at the end.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use bytes::Bytes;
use http::request::Parts;
use http::Method;
use tern_cgi::env::{self, CgiEnv, EnvInput, EnvPolicy, ScriptVars};
use tern_cgi::response::Reply;
use tern_config::{CgiPlusConfig, Engine, FastCgiApp, FastCgiConfig, GatewayPolicy, PoolSettings};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, HandlerFuture, RequestBody, RequestId, RoutePattern,
};
use tern_pool::{Factory, Health, Lease, Pool, PoolConfig, PoolError, Retire, Stats};
use tokio::sync::oneshot;

use crate::fastcgi::conn::{self, Address};
use crate::persist::{Downstream, StartBody, Upstream};

use crate::dispatch::{self, render, Answer, Run};
use crate::input::{Input, Source};
use crate::relay::{self, Dirty, Finish, Rest, Settings};
use crate::resolve::ScriptDir;
use crate::workers::{
    self, CgiplusWorkers, FcgiConnections, FcgiProcesses, StartFailure, Transport, Unanswered,
};
use crate::{spawn, Error};

/// A body this small, already arrived with the head, goes to the worker
/// in the same write as the request head.
const WHOLE_BODY_MAX: u64 = 64 * 1024;

/// What every persistent route shares: where scripts are, and the policy.
#[derive(Debug)]
struct Common {
    kind: &'static str,
    dir: Option<ScriptDir>,
    /// Scripts must be executable (CGIplus scripts run themselves).
    executable: bool,
    document_root: PathBuf,
    policy: GatewayPolicy,
}

/// A request's script: what the environment says about it.
struct Target {
    script_name: String,
    filename: PathBuf,
    path_info: String,
    /// The file's modification time, when it was looked up beneath `dir`.
    modified: Option<(i64, i64)>,
}

impl Common {
    fn new(
        kind: &'static str,
        dir: Option<&Path>,
        executable: bool,
        document_root: &Path,
        policy: &GatewayPolicy,
    ) -> Result<Common, Error> {
        let dir = match dir {
            Some(d) => Some(ScriptDir::open(d).map_err(|source| Error::ScriptDir {
                path: d.to_owned(),
                source,
            })?),
            None => None,
        };
        Ok(Common {
            kind,
            dir,
            executable,
            document_root: document_root.to_owned(),
            policy: policy.clone(),
        })
    }

    /// The script `path` names: a file beneath the directory, or (without
    /// one) the route itself, the rest of the path being PATH_INFO.
    fn target(&self, path: &DecodedPath, pattern: &RoutePattern) -> Result<Target, Error> {
        if let Some(dir) = &self.dir {
            let s = dir.find(path, pattern, self.executable)?;
            return Ok(Target {
                script_name: s.script_name,
                filename: s.filename,
                path_info: s.path_info,
                modified: Some(s.modified),
            });
        }
        let (script_name, path_info) = pattern.split(path);
        Ok(Target {
            script_name: script_name.to_owned(),
            filename: self.document_root.join(script_name.trim_start_matches('/')),
            path_info: path_info.to_owned(),
            modified: None,
        })
    }

    /// The body readied and the environment built.
    async fn prepare(
        &self,
        parts: &Parts,
        body: Option<RequestBody>,
        conn: &ConnInfo,
        target: &Target,
    ) -> Result<(CgiEnv, Body), Error> {
        let input = match body {
            Some(b) => Input::prepare(b, &parts.headers).await?,
            None => Input::nothing(),
        };
        let env = env::build(&EnvInput {
            request: parts,
            conn,
            script: ScriptVars {
                script_name: &target.script_name,
                script_filename: &target.filename,
                path_info: &target.path_info,
                document_root: &self.document_root,
            },
            content_length: input.length,
            policy: EnvPolicy {
                pass_authorization: self.policy.pass_authorization,
                refuse_shellshock: self.policy.refuse_shellshock,
                underscores_in_headers: self.policy.underscores_in_headers,
                inherited: &[],
            },
        })?;
        Ok((env, Body::of(input.source)))
    }

    fn settings(&self, parts: &Parts, id: RequestId, target: Arc<str>) -> Settings {
        Settings {
            id,
            target,
            kind: self.kind,
            discard_body: parts.method == Method::HEAD,
            timeout: self.policy.timeout,
            max_stderr: self.policy.max_stderr_bytes,
            replayable: false,
        }
    }
}

/// The body as the transports see it: what goes with the head, and the
/// rest the relay sends.
pub(crate) enum Body {
    Empty,
    Whole(Bytes),
    Streamed(Rest),
}

impl Body {
    fn of(source: Source) -> Body {
        match source {
            Source::Nothing => Body::Empty,
            // Written with the head only while small: a worker may answer
            // before it reads its body, and a large body written whole
            // first would wait on it (the relay pumps both ways at once).
            Source::Memory(b) if b.len() as u64 <= WHOLE_BODY_MAX => Body::Whole(b),
            Source::Memory(b) => Body::Streamed(Rest::Memory(b)),
            Source::File(f) => Body::Streamed(Rest::File(f)),
        }
    }

    /// The transport's start body, and the relay's rest.
    pub(crate) fn split(self) -> (StartBody, Rest) {
        match self {
            Body::Empty => (StartBody::Empty, Rest::Nothing),
            Body::Whole(b) => (StartBody::Whole(b), Rest::Nothing),
            Body::Streamed(r) => (StartBody::Streamed, r),
        }
    }
}

/// A worker from the first of `pools` that can give one: a pool whose
/// application cannot be reached (connections refused, failing to start)
/// passes the request to the next, as nothing of it was sent yet.
async fn checkout<F: Factory>(pools: &[&Pool<F>]) -> Result<Lease<F>, Error> {
    let mut last = None;
    for pool in pools {
        match pool.checkout().await {
            Ok(lease) => return Ok(lease),
            Err(PoolError::Unavailable(why)) => last = Some(PoolError::Unavailable(why)),
            Err(e) => return Err(pool_error(e)),
        }
    }
    Err(pool_error(last.unwrap_or(PoolError::Closed)))
}

/// Times one request is sent again after a worker's channel closed
/// before it answered anything, or a worker broke as it came (see
/// [`Unanswered`]): enough for a fresh connection to the same process and
/// two other workers, as a worker that ends after its share of requests
/// (php's `max_requests`) may be the next one asked too.
const RESENDS: u32 = 3;

/// Workers passed over for one request without blame, nothing of it
/// acted on: connections their server closed while they sat idle (a
/// restarted php-fpm closes every one).
const PASSED_OVER: u32 = 16;

/// Runs one request on a worker of the first of `pools` that has one,
/// and waits for its head.
///
/// An application may close a connection that carries no request (php
/// after 5 s, libfcgi after 2 s) or end a worker after its share of
/// requests: a worker that turns out unable to take the request before
/// any of it was acted on is passed over, and a request sent whole whose
/// channel closed before any answer came is sent again (see the
/// transports' `unanswered`), never answered 502 for it.
async fn run_on<F: Transport>(
    pools: &[&Pool<F>],
    env: CgiEnv,
    body: Body,
    mut settings: Settings,
) -> Result<Answer, Error> {
    let (start, rest) = body.split();
    settings.replayable = matches!(rest, Rest::Nothing);
    let mut rest = Some(rest);
    let (mut resent, mut passed) = (0, 0);
    let mut again: Option<Lease<F>> = None;
    loop {
        let mut lease = match again.take() {
            Some(lease) => lease,
            None => checkout(pools).await?,
        };
        let (up, down) = match F::start(&mut lease, &env, start.clone()).await {
            Ok(halves) => halves,
            Err(StartFailure::Refused(e)) => {
                lease.release();
                return Err(e);
            }
            Err(StartFailure::Unusable(why, e)) => {
                lease.discard(why);
                let spent = if why == Retire::Broken {
                    resent += 1;
                    resent > RESENDS
                } else {
                    passed += 1;
                    passed > PASSED_OVER
                };
                if spent {
                    return Err(Error::Worker(format!("starting the request: {e}")));
                }
                tracing::debug!(id = %settings.id, "{}: a worker could not take the request ({e}); trying another", settings.kind);
                continue;
            }
            Err(StartFailure::Broken(e)) => {
                lease.discard(Retire::Broken);
                return Err(Error::Worker(format!("starting the request: {e}")));
            }
        };
        let rest = rest.take().unwrap_or(Rest::Nothing);
        let done = move |finish, up, down| match finish {
            Finish::Clean => {
                if F::reunite(&mut lease, up, down) {
                    lease.release();
                } else {
                    lease.discard(Retire::Recycled);
                }
                None
            }
            Finish::Unanswered(why) => Some((lease, why)),
            Finish::Dirty(Dirty::Abandoned) => {
                lease.discard(Retire::Abandoned);
                None
            }
            Finish::Dirty(Dirty::Broken | Dirty::Silent) => {
                lease.discard(Retire::Broken);
                None
            }
        };
        let (mut lease, why) = match answer(up, down, rest, settings.clone(), done).await {
            Outcome::Answered(answer) => return answer,
            Outcome::Unanswered(back) => back,
        };
        resent += 1;
        let verdict = if resent > RESENDS {
            Unanswered::Fail
        } else {
            F::unanswered(&mut lease)
        };
        tracing::debug!(id = %settings.id, "{}: the worker's channel closed before any answer ({why}): {verdict:?}", settings.kind);
        match verdict {
            Unanswered::Again => again = Some(lease),
            Unanswered::Elsewhere(retire) => lease.discard(retire),
            Unanswered::Fail => {
                tracing::warn!(id = %settings.id, target = %settings.target, "{}: {why}", settings.kind);
                lease.discard(Retire::Broken);
                return Err(Error::Worker(why.to_string()));
            }
        }
    }
}

/// Runs one request on a connection of its own to `addr`, closed after
/// the response (the application's processes then wait in accept(), and
/// the kernel's listen queue is the only queue).
async fn run_once(
    addr: &Address,
    connect_timeout: Duration,
    env: CgiEnv,
    body: Body,
    settings: Settings,
) -> Result<Answer, Error> {
    let (start, rest) = body.split();
    let sock = conn::connect_now(addr, connect_timeout)
        .await
        .map_err(|e| Error::Unavailable(e.to_string()))?;
    let (up, down) = conn::start_once(sock, &env, start)
        .await
        .map_err(|e| Error::Worker(format!("starting the request: {e}")))?;
    drop(env);
    match answer(up, down, rest, settings, |_, _, _| None::<()>).await {
        Outcome::Answered(answer) => answer,
        Outcome::Unanswered(()) => {
            unreachable!("a request on a connection of its own is not replayable")
        }
    }
}

/// How a relay came out, for the handler.
enum Outcome<B> {
    /// The head (or the error the client gets).
    Answered(Result<Answer, Error>),
    /// Nothing was answered and the request may go again: what the relay's
    /// end gave back for that (the worker and why).
    Unanswered(B),
}

/// Relays the request and waits for its head; `done` gets the worker's
/// channel back at the end, and returns what a request sent again needs
/// when the relay ended [`Finish::Unanswered`]. The relay runs here while
/// the response is unknown: most responses end with their head (a
/// "Hello!", a page), and then no task is spawned and no wake-up crosses
/// tasks. A response that streams on after its head gets a task of its
/// own for the rest.
async fn answer<U, D, G, B>(
    mut up: U,
    mut down: D,
    rest: Rest,
    settings: Settings,
    done: G,
) -> Outcome<B>
where
    U: Upstream + 'static,
    D: Downstream + 'static,
    G: FnOnce(Finish, U, D) -> Option<B> + Send + 'static,
    B: Send + 'static,
{
    let (tx, mut rx) = oneshot::channel();
    let mut work = Box::pin(async move {
        let finish = relay::relay(&mut up, &mut down, rest, &settings, tx).await;
        done(finish, up, down)
    });
    let started = tokio::select! {
        biased;
        back = &mut work => match back {
            Some(back) => return Outcome::Unanswered(back),
            None => rx.await,
        },
        r = &mut rx => {
            // The head was sent: the relay does not end unanswered.
            tokio::spawn(async move {
                drop(work.await);
            });
            r
        }
    };
    let answered = started
        .map_err(|_| Error::Worker("the request's relay ended without an answer".into()))
        .and_then(|r| r)
        .map(|(reply, output)| match reply {
            Reply::LocalRedirect(target) => Answer::Redirect(target),
            Reply::Document(h) | Reply::ClientRedirect(h) => Answer::Response(render(h, output)),
        });
    Outcome::Answered(answered)
}

fn pool_error(e: PoolError) -> Error {
    match e {
        PoolError::Full => Error::Busy("every worker is busy and the queue is full"),
        PoolError::Timeout(_) => Error::Busy("no worker became free within the queue timeout"),
        PoolError::Unavailable(why) => Error::Unavailable(why),
        PoolError::Closed => Error::Busy("the pool is shutting down"),
        #[allow(unreachable_patterns)]
        _ => Error::Busy("no worker"),
    }
}

fn pool_config(name: String, p: &PoolSettings) -> PoolConfig {
    PoolConfig {
        name,
        min: p.min,
        max: p.max,
        queue: p.queue,
        queue_timeout: p.queue_timeout,
        idle_timeout: p.idle_timeout,
        max_requests: p.max_requests,
        max_age: p.max_age,
        ..PoolConfig::default()
    }
}

/// Starts a pool, naming it in the error.
fn start_pool<F: Factory>(cfg: PoolConfig, factory: F) -> Result<Pool<F>, Error> {
    let name = cfg.name.clone();
    Pool::start(cfg, factory).map_err(|e| Error::Io(io::Error::other(format!("pool {name}: {e}"))))
}

/// Runs FastCGI applications: servers tern connects to (php-fpm,
/// fcgiwrap, a remote host), or programs it runs itself (php-cgi, any
/// libfcgi program), each process with its own listening socket as fd 0.
#[derive(Debug, Clone)]
pub struct FastCgi {
    route: Arc<FcgiRoute>,
}

#[derive(Debug)]
struct FcgiRoute {
    common: Common,
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    /// One pool of connections per address, load spread over the healthy.
    Connect {
        pools: Vec<Pool<FcgiConnections>>,
        next: std::sync::atomic::AtomicUsize,
    },
    /// A connection per request (`keep_connections = false`).
    Once {
        addrs: Vec<Address>,
        next: std::sync::atomic::AtomicUsize,
        timeout: Duration,
    },
    Spawn(Pool<FcgiProcesses>),
}

impl FastCgi {
    /// Builds the handler for `cfg`; `name` names its pools in logs. A
    /// spawned application's first processes start in the background.
    pub fn new(cfg: &FastCgiConfig, name: &str) -> Result<FastCgi, Error> {
        spawn::seal_inherited_descriptors();
        let common = Common::new(
            "fastcgi",
            cfg.dir.as_deref(),
            false,
            &cfg.document_root,
            &cfg.policy,
        )?;
        let backend = match &cfg.app {
            FastCgiApp::Connect(addrs) if !cfg.keep_connections => Backend::Once {
                addrs: addrs.clone(),
                next: Default::default(),
                timeout: cfg.connect_timeout,
            },
            FastCgiApp::Connect(addrs) => {
                let mut pools = Vec::with_capacity(addrs.len());
                for a in addrs {
                    let factory = FcgiConnections::new(a.clone(), cfg.connect_timeout);
                    pools.push(start_pool(
                        pool_config(format!("{name} {a}"), &cfg.pool),
                        factory,
                    )?);
                }
                Backend::Connect {
                    pools,
                    next: Default::default(),
                }
            }
            FastCgiApp::Spawn(cmd) => {
                let inherited = spawn::inherited(&cfg.policy.env_allow, |n| std::env::var_os(n));
                let cwd = cfg.dir.clone().unwrap_or_else(|| cfg.document_root.clone());
                let factory = FcgiProcesses::new(name, cmd, inherited, cwd, cfg.connect_timeout)?;
                Backend::Spawn(start_pool(
                    pool_config(name.to_owned(), &cfg.pool),
                    factory,
                )?)
            }
        };
        Ok(FastCgi {
            route: Arc::new(FcgiRoute { common, backend }),
        })
    }
}

impl FastCgi {
    /// Each pool's name and counters (busy, idle, queued, created,
    /// crashed, ...), for a status page.
    pub fn pools(&self) -> Vec<(String, Stats)> {
        match &self.route.backend {
            Backend::Spawn(p) => vec![counters(p)],
            Backend::Connect { pools, .. } => pools.iter().map(counters).collect(),
            Backend::Once { .. } => Vec::new(),
        }
    }
}

fn counters<F: Factory>(p: &Pool<F>) -> (String, Stats) {
    (p.config().name.clone(), p.stats())
}

impl Handler for FastCgi {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        dispatch::call(&self.route, exchange)
    }

    fn kind(&self) -> &'static str {
        "fastcgi"
    }
}

impl Run for FcgiRoute {
    fn kind(&self) -> &'static str {
        "fastcgi"
    }

    async fn run(
        &self,
        parts: &Parts,
        path: &DecodedPath,
        body: Option<RequestBody>,
        conn: &ConnInfo,
        pattern: &RoutePattern,
        id: RequestId,
    ) -> Result<Answer, Error> {
        let target = self.common.target(path, pattern)?;
        let (env, body) = self.common.prepare(parts, body, conn, &target).await?;
        let label: Arc<str> = Arc::from(target.filename.to_string_lossy());
        let settings = self.common.settings(parts, id, label);
        match &self.backend {
            Backend::Spawn(pool) => run_on(&[pool], env, body, settings).await,
            Backend::Connect { pools, next } => {
                let order = spread(pools, next);
                run_on(&order, env, body, settings).await
            }
            Backend::Once {
                addrs,
                next,
                timeout,
            } => {
                let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % addrs.len();
                run_once(&addrs[at], *timeout, env, body, settings).await
            }
        }
    }
}

/// The order in which to try `pools` for the next request: round robin
/// over those not backing off after failures, then those that are, the
/// one that recovers first first.
fn spread<'a, F: Factory>(
    pools: &'a [Pool<F>],
    next: &std::sync::atomic::AtomicUsize,
) -> Vec<&'a Pool<F>> {
    use std::sync::atomic::Ordering;
    let n = pools.len();
    let first = next.fetch_add(1, Ordering::Relaxed) % n;
    let mut ready = Vec::with_capacity(n);
    let mut later = Vec::new();
    for i in 0..n {
        let p = &pools[(first + i) % n];
        match p.health() {
            Health::Ready => ready.push(p),
            Health::Closed => {}
            Health::BackingOff { until, .. } => later.push((until, p)),
        }
    }
    later.sort_by_key(|(until, _)| *until);
    ready.extend(later.into_iter().map(|(_, p)| p));
    ready
}

/// Runs CGIplus workers: each script a persistent program of its own, or
/// a run-time engine (Perl, Python, another) that runs many scripts.
#[derive(Debug, Clone)]
pub struct CgiPlus {
    route: Arc<PlusRoute>,
}

#[derive(Debug)]
struct PlusRoute {
    common: Common,
    name: String,
    pool: PoolSettings,
    inherited: Vec<(OsString, OsString)>,
    workers: PlusWorkers,
}

/// Per script: the file's modification time when its pool was made, and
/// the pool.
type ScriptPools = HashMap<PathBuf, (Option<(i64, i64)>, Pool<CgiplusWorkers>)>;

#[derive(Debug)]
enum PlusWorkers {
    /// A pool per script, made at its first request and made again when
    /// the file changes (the old one drains).
    Scripts(Mutex<ScriptPools>),
    /// One engine for every script.
    Engine {
        pool: Pool<CgiplusWorkers>,
        /// Where tern's own engines were written (kept while in use).
        _files: Option<tempfile::TempDir>,
    },
}

impl CgiPlus {
    /// Builds the handler for `cfg`; `name` names its pools in logs.
    pub fn new(cfg: &CgiPlusConfig, name: &str) -> Result<CgiPlus, Error> {
        spawn::seal_inherited_descriptors();
        let scripts = matches!(cfg.engine, Engine::Scripts);
        let common = Common::new(
            "cgiplus",
            Some(&cfg.dir),
            scripts,
            &cfg.document_root,
            &cfg.policy,
        )?;
        let inherited = spawn::inherited(&cfg.policy.env_allow, |n| std::env::var_os(n));
        let engine = |program: PathBuf, args: Vec<OsString>, env: Vec<(String, String)>| {
            CgiplusWorkers::new(
                program,
                args,
                workers::env(&inherited, &env),
                cfg.dir.clone(),
            )
        };
        let workers = match &cfg.engine {
            Engine::Scripts => PlusWorkers::Scripts(Mutex::new(HashMap::new())),
            Engine::Perl | Engine::Python => {
                let files = tempfile::Builder::new()
                    .prefix("tern-rte-")
                    .tempdir()
                    .map_err(Error::Io)?;
                let (perl, python) = crate::rte::write_to(files.path()).map_err(Error::Io)?;
                let (interp, script) = if matches!(cfg.engine, Engine::Perl) {
                    ("/usr/bin/perl", perl)
                } else {
                    ("/usr/bin/python3", python)
                };
                let factory = engine(PathBuf::from(interp), vec![script.into()], Vec::new());
                PlusWorkers::Engine {
                    pool: start_pool(pool_config(name.to_owned(), &cfg.pool), factory)?,
                    _files: Some(files),
                }
            }
            Engine::Command(c) => {
                let factory = engine(
                    c.program.clone(),
                    c.args.iter().map(OsString::from).collect(),
                    c.env.clone(),
                );
                PlusWorkers::Engine {
                    pool: start_pool(pool_config(name.to_owned(), &cfg.pool), factory)?,
                    _files: None,
                }
            }
        };
        Ok(CgiPlus {
            route: Arc::new(PlusRoute {
                common,
                name: name.to_owned(),
                pool: cfg.pool.clone(),
                inherited,
                workers,
            }),
        })
    }
}

impl CgiPlus {
    /// Each pool's name and counters, for a status page.
    pub fn pools(&self) -> Vec<(String, Stats)> {
        match &self.route.workers {
            PlusWorkers::Engine { pool, .. } => vec![counters(pool)],
            PlusWorkers::Scripts(map) => map
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .map(|(_, p)| counters(p))
                .collect(),
        }
    }
}

impl Handler for CgiPlus {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        dispatch::call(&self.route, exchange)
    }

    fn kind(&self) -> &'static str {
        "cgiplus"
    }
}

impl PlusRoute {
    /// The pool of `script`'s own processes: made now if it has none, or
    /// made anew if the file changed since.
    fn script_pool(&self, target: &Target) -> Result<Pool<CgiplusWorkers>, Error> {
        let (script, mtime) = (target.filename.as_path(), target.modified);
        let PlusWorkers::Scripts(map) = &self.workers else {
            unreachable!("only for per-script routes");
        };
        let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, pool)) = map.get(script) {
            if *seen == mtime {
                return Ok(pool.clone());
            }
        }
        let cwd = script.parent().unwrap_or(Path::new("/")).to_owned();
        let factory =
            CgiplusWorkers::new(script.to_owned(), Vec::new(), self.inherited.clone(), cwd);
        let name = format!("{} {}", self.name, script.display());
        let pool = start_pool(pool_config(name, &self.pool), factory)?;
        // A replaced pool drains: its idle workers stop, busy ones finish.
        map.insert(script.to_owned(), (mtime, pool.clone()));
        Ok(pool)
    }
}

impl Run for PlusRoute {
    fn kind(&self) -> &'static str {
        "cgiplus"
    }

    async fn run(
        &self,
        parts: &Parts,
        path: &DecodedPath,
        body: Option<RequestBody>,
        conn: &ConnInfo,
        pattern: &RoutePattern,
        id: RequestId,
    ) -> Result<Answer, Error> {
        let target = self.common.target(path, pattern)?;
        let pool = match &self.workers {
            PlusWorkers::Scripts(_) => self.script_pool(&target)?,
            PlusWorkers::Engine { pool, .. } => pool.clone(),
        };
        let (env, body) = self.common.prepare(parts, body, conn, &target).await?;
        let label: Arc<str> = Arc::from(target.filename.to_string_lossy());
        let settings = self.common.settings(parts, id, label);
        run_on(&[&pool], env, body, settings).await
    }
}
