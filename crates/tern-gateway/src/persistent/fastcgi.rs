//! [`FastCgi`], the handler of FastCGI applications: servers tern
//! connects to (php-fpm, fcgiwrap, a remote host), over kept connections
//! spread over the healthy addresses or a connection per request, or
//! programs tern runs itself, each process with its own listening socket.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use tern_config::{FastCgiApp, FastCgiConfig};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, HandlerFuture, PoolReport, RequestBody, RequestId, RoutePattern,
};
use tern_pool::{Factory, Health, Pool, Stats};

use super::{answer, counters, pool_config, report, run_on, start_pool, Body, Common, Outcome};
use crate::dispatch::{self, Answer, Run};
use crate::fastcgi::socket::{self, Address};
use crate::fastcgi::{conn, Params};
use crate::relay::RelaySettings;
use crate::workers::{FcgiConnections, FcgiProcesses};
use crate::{spawn, Error};

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
        next: AtomicUsize,
    },
    /// A connection per request (`keep_connections = false`).
    Once {
        addrs: Vec<Address>,
        next: AtomicUsize,
        timeout: Duration,
    },
    Spawn(Pool<FcgiProcesses>),
}

impl FastCgi {
    /// Builds the handler for `cfg`; `name` names its pools in logs. A
    /// spawned application's first processes start in the background.
    pub fn new(cfg: &FastCgiConfig, name: &str) -> Result<FastCgi, Error> {
        spawn::seal_inherited_descriptors();
        let common = FastCgi::common(cfg)?;
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
                let inherited =
                    spawn::inherited(&cfg.policy.env.env_allow, |n| std::env::var_os(n));
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
    /// What [`FastCgi::new`] builds before it starts anything, for
    /// `tern check`: it must refuse what serving would, yet start no
    /// process and open no connection.
    pub fn check(cfg: &FastCgiConfig) -> Result<(), Error> {
        FastCgi::common(cfg).map(drop)
    }

    fn common(cfg: &FastCgiConfig) -> Result<Common, Error> {
        let dir = cfg.dir.as_deref();
        Common::new("fastcgi", dir, false, &cfg.document_root, &cfg.policy)
    }

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

impl Handler for FastCgi {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        dispatch::call(&self.route, exchange)
    }

    /// The route's kind: named once, by its `Run` impl.
    fn kind(&self) -> &'static str {
        Run::kind(&*self.route)
    }

    fn redirects_locally(&self) -> bool {
        true
    }

    /// A report per pool: the spawned processes', or one per address
    /// (`<route> <address>`). A connection per request has no pool.
    fn report(&self, out: &mut Vec<PoolReport>) {
        let kind = Run::kind(&*self.route);
        match &self.route.backend {
            Backend::Spawn(p) => out.push(report(kind, p)),
            Backend::Connect { pools, .. } => out.extend(pools.iter().map(|p| report(kind, p))),
            Backend::Once { .. } => {}
        }
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
        body: RequestBody,
        conn: &ConnInfo,
        pattern: &RoutePattern,
        id: RequestId,
    ) -> Result<Answer, Error> {
        let target = self.common.target(path, pattern)?;
        let (env, body) = self.common.prepare(parts, body, conn, &target).await?;
        let settings = self.common.settings(parts, id, target.script.label.clone());
        match &self.backend {
            Backend::Spawn(pool) => run_on(&[pool], env, body, settings).await,
            // One address (the usual case): nothing to spread.
            Backend::Connect { pools, .. } if pools.len() == 1 => {
                run_on(&[&pools[0]], env, body, settings).await
            }
            Backend::Connect { pools, next } => {
                let order = spread(pools, next);
                run_on(&order, env, body, settings).await
            }
            Backend::Once {
                addrs,
                next,
                timeout,
            } => {
                let at = next.fetch_add(1, Ordering::Relaxed) % addrs.len();
                run_once(&addrs[at], *timeout, env, body, settings).await
            }
        }
    }
}

/// The order in which to try `pools` for the next request: round robin
/// over those not backing off after failures, then those that are, the
/// one that recovers first first.
fn spread<'a, F: Factory>(pools: &'a [Pool<F>], next: &AtomicUsize) -> Vec<&'a Pool<F>> {
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

/// Runs one request on a connection of its own to `addr`, closed after
/// the response (the application's processes then wait in accept(), and
/// the kernel's listen queue is the only queue).
async fn run_once(
    addr: &Address,
    connect_timeout: Duration,
    env: Params,
    body: Body,
    settings: RelaySettings,
) -> Result<Answer, Error> {
    let (start, rest) = body.split();
    let sock = socket::connect_now(addr, connect_timeout)
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
