//! The handlers of persistent workers: [`FastCgi`] (applications tern
//! connects to, or runs itself; `fastcgi`) and [`CgiPlus`] (scripts that
//! loop, and the run-time engines; `cgiplus`). A request's way through
//! either: find the script (when the route has a directory), ready the
//! body, build the environment (this module's `Common`), take a worker
//! from a pool (`tern-pool`), start the request on it (the head, and a
//! body already in memory, in one write), and hand it to `relay`, which
//! answers with the parsed head and gives the worker back, or discards
//! it, at the end (this module's `run_on` and `answer`).

mod cgiplus;
mod fastcgi;

use std::borrow::Cow;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::request::Parts;
use http::Method;
use tern_cgi::env::{EnvInput, ScriptVars};
use tern_cgi::response::Reply;
use tern_config::{GatewayPolicy, PoolSettings};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, PoolReport, RequestBody, RequestId, RoutePattern, ServedBy, WaitHistogram,
    WorkerReport,
};
use tern_pool::{
    Factory, Health, ItemStats, Lease, Pool, PoolConfig, PoolError, Retire, Snapshot, Stats,
};
use tokio::sync::oneshot;

use crate::dispatch::{render, Answer};
use crate::input::{Input, Source};
use crate::persist::{Downstream, StartBody, Upstream};
use crate::relay::{self, Dirty, Finish, RelaySettings, Rest};
use crate::resolve::ScriptDir;
use crate::workers::{RequestEnv, StartFailure, Transport, Unanswered};
use crate::Error;

pub use cgiplus::CgiPlus;
pub use fastcgi::FastCgi;

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
    /// The script named last: a prefix route names one for every
    /// request, and a directory's requests mostly the same one, so its
    /// name and label are made once, not copied and converted per
    /// request.
    named: Mutex<Option<Arc<Script>>>,
}

/// A script as the environment and the logs name it.
#[derive(Debug)]
struct Script {
    name: Box<str>,
    filename: PathBuf,
    /// The file name as log lines and the status page give it.
    label: Arc<str>,
}

impl Script {
    fn new(name: &str, filename: PathBuf) -> Script {
        Script {
            name: name.into(),
            label: Arc::from(filename.to_string_lossy()),
            filename,
        }
    }
}

/// A request's script: what the environment says about it.
struct Target<'a> {
    script: Arc<Script>,
    path_info: Cow<'a, str>,
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
            named: Mutex::new(None),
        })
    }

    /// The script `path` names: a file beneath the directory, or (without
    /// one) the route itself, the rest of the path being PATH_INFO.
    fn target<'a>(
        &self,
        path: &'a DecodedPath,
        pattern: &'a RoutePattern,
    ) -> Result<Target<'a>, Error> {
        if let Some(dir) = &self.dir {
            let s = dir.find(path, pattern, self.executable)?;
            let script = match self.last_named(&s.script_name, Some(&s.filename)) {
                Some(script) => script,
                None => self.name(Script::new(&s.script_name, s.filename)),
            };
            return Ok(Target {
                script,
                path_info: Cow::Owned(s.path_info),
                modified: Some(s.modified),
            });
        }
        let (script_name, path_info) = pattern.split(path);
        let script = match self.last_named(script_name, None) {
            Some(script) => script,
            None => {
                let filename = self.document_root.join(script_name.trim_start_matches('/'));
                self.name(Script::new(script_name, filename))
            }
        };
        Ok(Target {
            script,
            path_info: Cow::Borrowed(path_info),
            modified: None,
        })
    }

    /// The script named last, if it is `name` (with `filename`, when
    /// given: a directory's lookup found it).
    fn last_named(&self, name: &str, filename: Option<&Path>) -> Option<Arc<Script>> {
        let named = self.named.lock().unwrap_or_else(|p| p.into_inner());
        named
            .as_ref()
            .filter(|s| {
                *s.name == *name && filename.is_none_or(|f| s.filename.as_os_str() == f.as_os_str())
            })
            .cloned()
    }

    /// `script`, kept as the one named last.
    fn name(&self, script: Script) -> Arc<Script> {
        let script = Arc::new(script);
        *self.named.lock().unwrap_or_else(|p| p.into_inner()) = Some(script.clone());
        script
    }

    /// The body readied and the environment built, as the transport
    /// carries it.
    async fn prepare<E: RequestEnv>(
        &self,
        parts: &Parts,
        body: RequestBody,
        conn: &ConnInfo,
        target: &Target<'_>,
    ) -> Result<(E, Body), Error> {
        let input = Input::prepare(body, &parts.headers).await?;
        let env = E::build(&EnvInput {
            request: parts,
            conn,
            script: ScriptVars {
                script_name: &target.script.name,
                script_filename: &target.script.filename,
                path_info: &target.path_info,
                document_root: &self.document_root,
            },
            content_length: input.length,
            policy: &self.policy.env,
            // A worker's own environment holds the allow-list; a request's
            // carries only what the request says.
            inherited: &[],
        })?;
        Ok((env, Body::of(input.source)))
    }

    fn settings(&self, parts: &Parts, id: RequestId, target: Arc<str>) -> RelaySettings {
        RelaySettings {
            id,
            target,
            kind: self.kind,
            discard_body: parts.method == Method::HEAD,
            timeout: self.policy.timeout,
            send_timeout: self.policy.send_timeout,
            max_stderr: self.policy.max_stderr_bytes,
            replayable: false,
            slow: self.policy.slow_request,
            worker: None,
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
    env: F::Env,
    body: Body,
    mut settings: RelaySettings,
) -> Result<Answer, Error> {
    let (start, rest) = body.split();
    settings.replayable = matches!(rest, Rest::Nothing);
    let mut rest = Some(rest);
    let (mut resent, mut passed) = (0, 0);
    let mut again: Option<Lease<F>> = None;
    let mut waited = Duration::ZERO;
    loop {
        let mut lease = match again.take() {
            Some(lease) => lease,
            None => {
                // The wait is timed only when there is one: a worker free
                // at once (the many) costs no clock reads.
                let mut out = std::pin::pin!(checkout(pools));
                match std::future::poll_fn(|cx| Poll::Ready(out.as_mut().poll(cx))).await {
                    Poll::Ready(lease) => lease?,
                    Poll::Pending => {
                        let asked = Instant::now();
                        let lease = out.await?;
                        waited += asked.elapsed();
                        lease
                    }
                }
            }
        };
        // For the request history and the live trace.
        let served = ServedBy {
            pid: lease.worker_pid(),
            queue_wait: waited,
        };
        settings.worker = served.pid;
        // For the status page's row of this worker.
        lease.serving(settings.target.clone());
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
            Outcome::Answered(Ok(Answer::Response(mut r))) => {
                r.extensions_mut().insert(served);
                return Ok(Answer::Response(r));
            }
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
///
/// The relay's future is boxed before this one is made, so that this one
/// holds only the box and the channel, not the relay's parts beside them
/// (an async fn would keep its arguments' slots after moving them on).
fn answer<U, D, G, B>(
    mut up: U,
    mut down: D,
    rest: Rest,
    settings: RelaySettings,
    done: G,
) -> impl Future<Output = Outcome<B>> + Send
where
    U: Upstream + 'static,
    D: Downstream + 'static,
    G: FnOnce(Finish, U, D) -> Option<B> + Send + 'static,
    B: Send + 'static,
{
    let (tx, mut rx) = oneshot::channel();
    let mut work = tern_handler::pin_boxed(|| async move {
        let finish = relay::relay(&mut up, &mut down, rest, &settings, tx).await;
        done(finish, up, down)
    });
    async move {
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
                Reply::Document(h) | Reply::ClientRedirect(h) => {
                    Answer::Response(render(h, output))
                }
            });
        Outcome::Answered(answered)
    }
}

fn pool_error(e: PoolError) -> Error {
    match e {
        PoolError::Full => Error::Busy("every worker is busy and the queue is full"),
        PoolError::Timeout(_) => Error::Busy("no worker became free within the queue timeout"),
        PoolError::Unavailable(why) => Error::Unavailable(why),
        PoolError::Closed => Error::Busy("the pool is shutting down"),
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

fn counters<F: Factory>(p: &Pool<F>) -> (String, Stats) {
    (p.config().name.clone(), p.stats())
}

/// A pool as the status page and the metrics see it, named as its
/// configuration names it (the route, and the address or script it
/// serves). These kinds count no failures of their own beyond the
/// pool's: a request's 502 or 504 shows as the worker it broke.
fn report<F: Factory>(kind: &'static str, pool: &Pool<F>) -> PoolReport {
    let Snapshot { stats: s, items } = pool.snapshot();
    let cfg = pool.config();
    PoolReport {
        name: cfg.name.clone(),
        kind,
        busy: s.busy as u64,
        idle: s.idle as u64,
        starting: s.starting as u64,
        queued: s.queued as u64,
        min_ready: cfg.min as u64,
        max: cfg.max as u64,
        spawned: s.created,
        spawn_failures: s.create_failures,
        crashed: s.crashed,
        recycled_idle: s.retired_idle,
        recycled_requests: s.retired_requests,
        recycled_age: s.retired_age,
        ended: s.ended,
        requests: s.requests,
        failures: Vec::new(),
        gates_readiness: true,
        backing_off: matches!(pool.health(), Health::BackingOff { .. }),
        queue_wait: WaitHistogram {
            counts: s.queue_wait.counts.to_vec(),
            sum: s.queue_wait.sum,
        },
        workers: items.into_iter().map(worker_report).collect(),
    }
}

fn worker_report(item: ItemStats) -> WorkerReport {
    WorkerReport {
        pid: item.pid,
        state: if item.busy { "busy" } else { "idle" },
        requests: item.requests,
        age: item.age,
        current: item.current.map(|(target, ran)| (target.to_string(), ran)),
        last_duration: item.last_duration,
    }
}
