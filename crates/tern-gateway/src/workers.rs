//! The pools' items and how each carries a request: connections to a
//! running FastCGI server ([`FcgiConnections`]), FastCGI processes tern
//! runs with a listening socket of their own as fd 0
//! ([`FcgiProcesses`]), and CGIplus processes on pipes
//! ([`CgiplusWorkers`]).
//!
//! A pooled item holds plain descriptors only: the pool is shared by every
//! server thread's runtime, so a request registers the channel with its
//! own runtime when it starts and gives it back unregistered at the end
//! (the transports' `start` and `reunite`).

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tern_cgi::env::{CgiEnv, EnvInput};
use tern_config::CommandConfig;
use tern_pool::process::{self, Command, Output, SocketDir, Stdio3, Worker};
use tern_pool::{Check, Factory, Lease, Retire};

use crate::cgiplus::{self, CgiplusDownstream, CgiplusUpstream, Pipes, Sentinels};
use crate::fastcgi::conn::{self, FcgiDownstream, FcgiUpstream};
use crate::fastcgi::socket::{self, Address, Socket};
use crate::fastcgi::Params;
use crate::persist::{peer_gone, Downstream, StartBody, Upstream};
use crate::Error;

/// How long a stopped worker has between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Why a request could not start on a worker.
#[derive(Debug)]
pub(crate) enum StartFailure {
    /// The request cannot be put to this kind of worker (400); the worker
    /// was not touched.
    Refused(Error),
    /// The worker cannot take it, and nothing of the request was acted
    /// on: a connection its server had closed, a process that is gone.
    /// The worker goes for the reason given (no failure when its peer
    /// ended it as it may; a failure when it died young) and the request
    /// goes to another.
    Unusable(Retire, io::Error),
    /// The worker's channel failed otherwise: discard it, answer 502.
    Broken(io::Error),
}

/// What becomes of a worker whose channel closed after the request was
/// sent and before any of an answer came back, and of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// The worker lives and closed only its channel (an idle connection
    /// it had kept): the request goes to it again on a fresh channel.
    Again,
    /// The request goes to another worker; this one goes for the reason
    /// given.
    Elsewhere(Retire),
    /// The transport cannot tell that the worker did not act on the
    /// request: answer 502, and the worker goes as broken.
    Fail,
}

/// A request's environment as a transport carries it: a C environment
/// block (CGIplus), or PARAMS records written as it is built (FastCGI).
pub(crate) trait RequestEnv: Sized + Send + Sync {
    fn build(input: &EnvInput<'_>) -> Result<Self, tern_cgi::Error>;
}

impl RequestEnv for CgiEnv {
    fn build(input: &EnvInput<'_>) -> Result<CgiEnv, tern_cgi::Error> {
        tern_cgi::env::build(input)
    }
}

impl RequestEnv for Params {
    fn build(input: &EnvInput<'_>) -> Result<Params, tern_cgi::Error> {
        Params::build(input)
    }
}

/// How a pooled item carries one request.
pub(crate) trait Transport: Factory + Sized {
    type Up: Upstream + 'static;
    type Down: Downstream + 'static;
    type Env: RequestEnv;

    /// Starts a request: its head (and a body in memory) in one write.
    fn start(
        item: &mut Lease<Self>,
        env: &Self::Env,
        body: StartBody,
    ) -> impl Future<Output = Result<(Self::Up, Self::Down), StartFailure>> + Send;

    /// After a clean end, puts the channel back; false if it cannot carry
    /// another request.
    fn reunite(item: &mut Lease<Self>, up: Self::Up, down: Self::Down) -> bool;

    /// The channel closed before any answer to a request that was sent
    /// whole (see [`Unanswered`]).
    fn unanswered(item: &mut Lease<Self>) -> Unanswered;
}

/// The FastCGI request on `sock`, asking the application to keep the
/// connection unless `once`; a peer found gone on the way is `Unusable`
/// for `gone`.
async fn fcgi_start(
    sock: Socket,
    env: &Params,
    body: StartBody,
    once: bool,
    gone: Retire,
) -> Result<(FcgiUpstream, FcgiDownstream), StartFailure> {
    let started = if once {
        conn::start_once(sock, env, body).await
    } else {
        conn::start(sock, env, body).await
    };
    started.map_err(|e| {
        if peer_gone(&e) {
            StartFailure::Unusable(gone, e)
        } else {
            StartFailure::Broken(e)
        }
    })
}

/// A place for one connection to a running FastCGI server, holding the
/// connection while the server keeps it. A request that finds the place
/// empty connects there and then.
#[derive(Debug)]
pub(crate) struct FcgiConn {
    /// Taken out while a request uses it; `None` after a request that
    /// asked the application to close it.
    sock: Option<Socket>,
    /// The request under way asked the application to close the
    /// connection after its response.
    once: bool,
}

/// Connections to one address of a running FastCGI server.
///
/// On a Unix socket, a request that finds the pool quiet (no other
/// request out, none waiting) asks the application to close the
/// connection after the response, and the next such request connects
/// anew. Why (measured in docs/PERFORMANCE.md, "FastCGI on a Unix socket:
/// a connection per request while quiet"): an application waits for its
/// next request in `read(2)` on a kept connection, and as tern reads the
/// response the kernel frees the application's socket memory and wakes
/// it there for nothing (`unix_write_space`). On an idle machine that
/// wake-up is a whole trip through the scheduler; busy, the application
/// is seldom asleep when tern reads, and connecting anew would cost more
/// than it spares. Over TCP the kernel wakes a writer only past a
/// free-space threshold, and connecting costs more: TCP keeps its
/// connections.
#[derive(Debug)]
pub(crate) struct FcgiConnections {
    addr: Address,
    timeout: Duration,
}

impl FcgiConnections {
    pub(crate) fn new(addr: Address, timeout: Duration) -> Self {
        FcgiConnections { addr, timeout }
    }

    /// Whether a request that finds the pool quiet closes its connection:
    /// on a Unix socket (see above).
    fn once_when_quiet(&self) -> bool {
        matches!(self.addr, Address::Unix(_))
    }
}

impl Factory for FcgiConnections {
    type Item = FcgiConn;

    async fn create(&self) -> io::Result<FcgiConn> {
        let sock = socket::connect(&self.addr, self.timeout).await?;
        Ok(FcgiConn {
            sock: Some(sock),
            once: false,
        })
    }

    /// A connection the server closed while idle (php-fpm closes one that
    /// brings no request within 5 s, and its workers' connections when it
    /// recycles or reaps them) ended as the server may: no failure. An
    /// empty place stays.
    fn check(&self, item: &mut FcgiConn) -> Check {
        match &item.sock {
            Some(sock) if !sock.still_open() => Check::Ended,
            _ => Check::Alive,
        }
    }

    /// A place holding its connection: a quiet request takes it (and asks
    /// that it be closed) before an empty place connects anew, so no new
    /// connection waits for an application process that an idle kept
    /// connection holds.
    fn warm(&self, item: &FcgiConn) -> bool {
        item.sock.is_some()
    }

    fn destroy(&self, item: FcgiConn, _why: Retire) -> impl Future<Output = ()> + Send {
        drop(item);
        std::future::ready(())
    }
}

impl Transport for FcgiConnections {
    type Up = FcgiUpstream;
    type Down = FcgiDownstream;
    type Env = Params;

    /// On the kept connection, or on a new one when the place is empty. A
    /// kept connection the server closed since it was last checked is
    /// passed over, without blame, before anything is written to it; a
    /// refused new one breaks the place (the backoff counts it).
    async fn start(
        item: &mut Lease<Self>,
        env: &Params,
        body: StartBody,
    ) -> Result<(FcgiUpstream, FcgiDownstream), StartFailure> {
        let kept = item.sock.take();
        let factory = item.factory();
        let once = factory.once_when_quiet() && item.alone();
        let sock = match kept {
            Some(sock) if sock.still_open() => sock,
            Some(_) => {
                let e = io::Error::other("the server closed the idle connection");
                return Err(StartFailure::Unusable(Retire::Ended, e));
            }
            None => socket::connect_now(&factory.addr, factory.timeout)
                .await
                .map_err(|e| StartFailure::Unusable(Retire::Broken, e))?,
        };
        item.once = once;
        fcgi_start(sock, env, body, once, Retire::Ended).await
    }

    /// A connection asked to close goes, and its place stays.
    fn reunite(item: &mut Lease<Self>, up: FcgiUpstream, down: FcgiDownstream) -> bool {
        let back = conn::reunite(up, down);
        let in_step = back.is_some();
        item.sock = if item.once { None } else { back };
        in_step
    }

    /// The server closed the connection as the request came (php-fpm
    /// shuts a connection down, reading and dropping what comes, when it
    /// recycles its worker): another connection takes it.
    fn unanswered(_item: &mut Lease<Self>) -> Unanswered {
        Unanswered::Elsewhere(Retire::Ended)
    }
}

/// A FastCGI process tern runs, and tern's connection to it while the
/// application keeps one.
#[derive(Debug)]
pub(crate) struct FcgiProcess {
    worker: Worker,
    /// Its listening socket: connected to when a request needs it.
    path: PathBuf,
    connect_timeout: Duration,
    /// The connection of the last request, while the application keeps
    /// it (libfcgi and php close one that brings no request, 2 and 5 s
    /// after accepting it, and keep one that did).
    sock: Option<Socket>,
    /// The request under way came on a kept connection, not a new one.
    kept: bool,
}

impl FcgiProcess {
    /// The process as the reason it goes when it cannot serve (see
    /// [`gone`]).
    fn gone(lease: &mut Lease<FcgiProcesses>) -> Retire {
        let served = lease.requests();
        gone(&mut lease.worker, served)
    }
}

/// Why a worker that is gone goes: one that exited after serving (its
/// share of requests) ended as it may, no failure; one gone before
/// serving any does not run, and one a signal killed (a crash, the OOM
/// killer, a SIGKILL) crashed: failures, and counted as crashes.
fn gone(worker: &mut Worker, served: u64) -> Retire {
    let killed = process::exited(worker).is_some_and(|status| status.signal().is_some());
    if served > 0 && !killed {
        Retire::Ended
    } else {
        Retire::Broken
    }
}

/// FastCGI processes tern runs: each gets a listening Unix socket of its
/// own as fd 0 (the FastCGI convention), so tern knows which process holds
/// which request and can stop exactly the one that hangs. tern connects
/// when a request comes, not when the process starts: an application
/// closes a connection that brings no request (libfcgi after 2 s, php
/// after 5 s), which says nothing about the process.
#[derive(Debug)]
pub(crate) struct FcgiProcesses {
    cmd: Command,
    sockets: SocketDir,
    next: AtomicU64,
    timeout: Duration,
}

impl FcgiProcesses {
    pub(crate) fn new(
        name: &str,
        cfg: &CommandConfig,
        inherited: Vec<(OsString, OsString)>,
        cwd: PathBuf,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let sockets = SocketDir::new(name).map_err(Error::Io)?;
        Ok(FcgiProcesses {
            cmd: command(
                &cfg.program,
                cfg.args.iter().map(OsString::from),
                env(&inherited, &cfg.env),
                cwd,
            ),
            sockets,
            next: AtomicU64::new(0),
            timeout,
        })
    }
}

impl Factory for FcgiProcesses {
    type Item = FcgiProcess;

    /// Binds the process's socket and starts it; a program that cannot
    /// be run fails here. One that exits at once is found dead on the next
    /// tick, or refuses the first request's connection.
    async fn create(&self) -> io::Result<FcgiProcess> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (listener, path) = self.sockets.bind(n as usize)?;
        match process::spawn(&self.cmd, Stdio3::fastcgi(OwnedFd::from(listener))) {
            Ok(worker) => Ok(FcgiProcess {
                worker,
                path,
                connect_timeout: self.timeout,
                sock: None,
                kept: false,
            }),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }

    fn pid(&self, item: &FcgiProcess) -> Option<u32> {
        Some(item.worker.pid())
    }

    /// The process is what lives or dies; a kept connection the
    /// application closed is dropped here, and the next request connects
    /// anew.
    fn check(&self, item: &mut FcgiProcess) -> Check {
        if process::exited(&mut item.worker).is_some() {
            return Check::Dead;
        }
        if item.sock.as_ref().is_some_and(|s| !s.still_open()) {
            item.sock = None;
        }
        Check::Alive
    }

    /// The sockets' directory goes as the pool closes, while its
    /// processes are still being stopped: they keep their listening
    /// sockets, and nothing connects by name to a closing pool.
    fn closing(&self) {
        self.sockets.remove();
    }

    fn destroy(&self, item: FcgiProcess, _why: Retire) -> impl Future<Output = ()> + Send {
        let FcgiProcess {
            worker, path, sock, ..
        } = item;
        drop(sock);
        async move {
            process::terminate(worker, KILL_GRACE).await;
            let _ = std::fs::remove_file(&path);
        }
    }
}

impl Transport for FcgiProcesses {
    type Up = FcgiUpstream;
    type Down = FcgiDownstream;
    type Env = Params;

    /// On the kept connection while the application keeps it, else on a
    /// new one. A process whose socket refuses the connection is gone.
    async fn start(
        item: &mut Lease<Self>,
        env: &Params,
        body: StartBody,
    ) -> Result<(FcgiUpstream, FcgiDownstream), StartFailure> {
        if let Some(sock) = item.sock.take() {
            if sock.still_open() {
                item.kept = true;
                // Closed between the look and the write: a new connection.
                match fcgi_start(sock, env, body.clone(), false, Retire::Ended).await {
                    Err(StartFailure::Unusable(..)) => {}
                    started => return started,
                }
            }
        }
        item.kept = false;
        let addr = Address::Unix(item.path.clone());
        let sock = match socket::connect_now(&addr, item.connect_timeout).await {
            Ok(sock) => sock,
            Err(e) => return Err(StartFailure::Unusable(FcgiProcess::gone(item), e)),
        };
        let gone = FcgiProcess::gone(item);
        fcgi_start(sock, env, body, false, gone).await
    }

    fn reunite(item: &mut Lease<Self>, up: FcgiUpstream, down: FcgiDownstream) -> bool {
        item.sock = conn::reunite(up, down);
        item.sock.is_some()
    }

    /// A kept connection the application closed as the request came: the
    /// same process again on a new connection, if it lives (php-cgi's
    /// children end their connections when they end, while the process
    /// tern runs lives on). A new connection closed unanswered means the
    /// process is going (one that exits after its share of requests
    /// still takes connections until it is gone): another takes the
    /// request, and the process goes as [`FcgiProcess::gone`] says.
    fn unanswered(item: &mut Lease<Self>) -> Unanswered {
        if item.kept && process::exited(&mut item.worker).is_none() {
            Unanswered::Again
        } else {
            Unanswered::Elsewhere(FcgiProcess::gone(item))
        }
    }
}

/// A CGIplus process and its pipes.
#[derive(Debug)]
pub(crate) struct CgiplusProcess {
    worker: Worker,
    pipes: Option<Pipes>,
}

/// CGIplus processes: a script (or an engine) started once with pipes for
/// stdin and stdout and its sentinels in the environment.
#[derive(Debug)]
pub(crate) struct CgiplusWorkers {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
}

impl CgiplusWorkers {
    pub(crate) fn new(
        program: PathBuf,
        args: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        cwd: PathBuf,
    ) -> Self {
        CgiplusWorkers {
            program,
            args,
            env,
            cwd,
        }
    }
}

impl Factory for CgiplusWorkers {
    type Item = CgiplusProcess;

    async fn create(&self) -> io::Result<CgiplusProcess> {
        let sentinels = Sentinels::generate()?;
        let mut env = self.env.clone();
        env.push(("GATEWAY_INTERFACE".into(), "CGI/1.1".into()));
        env.extend(sentinels.env());
        let cmd = command(
            &self.program,
            self.args.iter().cloned(),
            env,
            self.cwd.clone(),
        );
        let mut worker = process::spawn(&cmd, Stdio3::pipes(Output::Inherit))?;
        let (Some(stdin), Some(stdout)) = (worker.take_stdin(), worker.take_stdout()) else {
            process::terminate(worker, KILL_GRACE).await;
            return Err(io::Error::other("the worker's pipes are missing"));
        };
        Ok(CgiplusProcess {
            worker,
            pipes: Some(Pipes::new(stdin, stdout, sentinels)),
        })
    }

    fn pid(&self, item: &CgiplusProcess) -> Option<u32> {
        Some(item.worker.pid())
    }

    fn check(&self, item: &mut CgiplusProcess) -> Check {
        match process::exited(&mut item.worker) {
            None => Check::Alive,
            Some(_) => Check::Dead,
        }
    }

    fn destroy(&self, item: CgiplusProcess, _why: Retire) -> impl Future<Output = ()> + Send {
        let CgiplusProcess { worker, pipes } = item;
        // Closing its stdin first lets a well-behaved loop end by itself.
        drop(pipes);
        async move {
            process::terminate(worker, KILL_GRACE).await;
        }
    }
}

impl Transport for CgiplusWorkers {
    type Up = CgiplusUpstream;
    type Down = CgiplusDownstream;
    type Env = CgiEnv;

    async fn start(
        item: &mut Lease<Self>,
        env: &CgiEnv,
        body: StartBody,
    ) -> Result<(CgiplusUpstream, CgiplusDownstream), StartFailure> {
        let pipes = item
            .pipes
            .take()
            .ok_or_else(|| StartFailure::Broken(io::Error::other("no pipes")))?;
        match cgiplus::start(pipes, env, body).await {
            Ok(halves) => Ok(halves),
            Err(cgiplus::StartError::Refused { reason, pipes }) => {
                item.pipes = Some(pipes);
                Err(StartFailure::Refused(Error::Refused(reason.to_string())))
            }
            // A script that exited while idle (its pipes closed): after
            // serving, as it may; before, it does not run.
            Err(cgiplus::StartError::Io(e)) if peer_gone(&e) => {
                let served = item.requests();
                Err(StartFailure::Unusable(gone(&mut item.worker, served), e))
            }
            Err(cgiplus::StartError::Io(e)) => Err(StartFailure::Broken(e)),
        }
    }

    fn reunite(item: &mut Lease<Self>, up: CgiplusUpstream, down: CgiplusDownstream) -> bool {
        match cgiplus::reunite(up, down) {
            Ok(p) => {
                item.pipes = Some(p);
                true
            }
            Err(why) => {
                tracing::debug!("cgiplus: worker not reused: {why}");
                false
            }
        }
    }

    /// A script may read the request and exit without a word: it is not
    /// given the request again.
    fn unanswered(_item: &mut Lease<Self>) -> Unanswered {
        Unanswered::Fail
    }
}

fn command(
    program: &Path,
    args: impl Iterator<Item = OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
) -> Command {
    Command::new(program, cwd).args(args).envs(env)
}

/// The inherited allow-list, then the configured variables.
pub(crate) fn env(
    inherited: &[(OsString, OsString)],
    extra: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let mut out = inherited.to_vec();
    for (k, v) in extra {
        out.retain(|(n, _)| n.as_os_str() != k.as_str());
        out.push((k.into(), v.into()));
    }
    out
}
