//! The pools' items and how each carries a request: connections to a
//! running FastCGI server ([`FcgiConnections`]), FastCGI processes tern
//! runs with a listening socket of their own as fd 0
//! ([`FcgiProcesses`]), and CGIplus processes on pipes
//! ([`CgiplusWorkers`]).
//!
//! The pool is shared by every server thread's runtime, so a request
//! registers the channel with its own runtime when it starts, and gives
//! it back at the end (the transports' `start` and `reunite`): a FastCGI
//! connection stays registered for reading with that runtime while idle,
//! and is registered anew only when a request on another runtime takes
//! it ([`socket`](crate::fastcgi::socket)); pipes go back unregistered.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
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
/// connection; a peer found gone on the way is `Unusable` for `gone`.
async fn fcgi_start(
    sock: Socket,
    env: &Params,
    body: StartBody,
    gone: Retire,
) -> Result<(FcgiUpstream, FcgiDownstream), StartFailure> {
    let started = conn::start(sock, env, body).await;
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
    /// Taken out while a request uses it; `None` after it was closed.
    sock: Option<Socket>,
    /// The request under way is on a new connection (see [`NewOut`]).
    new: Option<NewOut>,
}

/// Connections to one address of a running FastCGI server, kept while
/// the application keeps them, on a Unix socket as over TCP.
///
/// Kept connections cost the least per request on both (measured in
/// docs/PERFORMANCE.md, "FastCGI on a Unix socket: kept connections
/// again"): at one client a request on a kept Unix-socket connection
/// takes 9 system calls of tern's and the application's (its
/// registration kept too, [`socket`](crate::fastcgi::socket)) and about
/// 4.5 context switches, against 19 and 5.7-6.2 with a connection per
/// request (connect, accept, the application's lingering close). The application
/// waiting for its next request in `read(2)` is still woken once for
/// nothing as tern reads the response (`unix_write_space`); over TCP it
/// is not.
///
/// An application process serves one connection at a time, and takes
/// the next from its listen queue only when the one it serves closes. A
/// request on a new connection may therefore wait behind a process that
/// tern's kept connection holds: an application with fewer processes
/// than `max_connections` (one process, or php-fpm's `pm.max_children`
/// below it). On a Unix socket, where tern can see that the application
/// has not read the request (`SIOCOUTQ`), a request that ends while one
/// waits so closes its own connection, and the process it held goes back
/// to `accept()` for the one waiting ([`NewConns`]). Over TCP nothing
/// tells, and `max_connections` must not exceed the application's
/// processes (docs/configuration.md).
#[derive(Debug)]
pub(crate) struct FcgiConnections {
    addr: Address,
    timeout: Duration,
    new_conns: Arc<NewConns>,
}

impl FcgiConnections {
    pub(crate) fn new(addr: Address, timeout: Duration) -> Self {
        FcgiConnections {
            addr,
            timeout,
            new_conns: Arc::default(),
        }
    }
}

/// Requests out on Unix-socket connections that carried none before
/// (made by the pool, or by the request for an empty place): the
/// application may not have taken them from its listen queue yet.
#[derive(Debug, Default)]
struct NewConns {
    /// How many are out: read as every request ends, so that the list is
    /// locked only while some are.
    out: AtomicUsize,
    list: Mutex<Vec<NewConn>>,
}

#[derive(Debug)]
struct NewConn {
    /// A second descriptor of the connection, for [`socket::unread`]; its
    /// number names the entry while the entry holds it open.
    twin: OwnedFd,
    /// Its request was written.
    sent: bool,
}

impl NewConns {
    fn list(&self) -> MutexGuard<'_, Vec<NewConn>> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a request out on a new connection may wait behind a
    /// process a kept connection holds: it is not written yet, or the
    /// application has not read it all.
    fn waiting(&self) -> bool {
        self.out.load(Ordering::Relaxed) > 0
            && self
                .list()
                .iter()
                .any(|c| !c.sent || socket::unread(c.twin.as_fd()) > 0)
    }
}

/// One request's place in [`NewConns`], from its start until its end (or
/// until its place is dropped).
#[derive(Debug)]
struct NewOut {
    conns: Arc<NewConns>,
    /// Its entry's `twin`.
    twin: RawFd,
}

impl NewOut {
    /// `None` over TCP.
    fn count(conns: &Arc<NewConns>, sock: &Socket) -> Option<NewOut> {
        let twin = sock.unix_twin()?;
        let fd = twin.as_raw_fd();
        conns.list().push(NewConn { twin, sent: false });
        conns.out.fetch_add(1, Ordering::Relaxed);
        Some(NewOut {
            conns: Arc::clone(conns),
            twin: fd,
        })
    }

    fn sent(&self) {
        let mut list = self.conns.list();
        if let Some(c) = list.iter_mut().find(|c| c.twin.as_raw_fd() == self.twin) {
            c.sent = true;
        }
    }
}

impl Drop for NewOut {
    fn drop(&mut self) {
        self.conns
            .list()
            .retain(|c| c.twin.as_raw_fd() != self.twin);
        self.conns.out.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Factory for FcgiConnections {
    type Item = FcgiConn;

    async fn create(&self) -> io::Result<FcgiConn> {
        let sock = socket::connect(&self.addr, self.timeout).await?;
        Ok(FcgiConn {
            sock: Some(sock),
            new: None,
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

    /// A place holding its connection: a request takes it before an empty
    /// place connects anew, so no new connection waits for an application
    /// process that an idle kept connection holds.
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
        // A connection the pool made that no request has used yet, or one
        // made now.
        let new = kept.is_none() || item.requests() == 0;
        let factory = item.factory();
        let replayable = !matches!(body, StartBody::Streamed);
        let sock = match kept {
            Some(sock) if sock.ready_for(replayable) => sock,
            Some(_) => {
                let e = io::Error::other("the server closed the idle connection");
                return Err(StartFailure::Unusable(Retire::Ended, e));
            }
            None => socket::connect_now(&factory.addr, factory.timeout)
                .await
                .map_err(|e| StartFailure::Unusable(Retire::Broken, e))?,
        };
        let new = new
            .then(|| NewOut::count(&factory.new_conns, &sock))
            .flatten();
        let started = fcgi_start(sock, env, body, Retire::Ended).await;
        if let Some(new) = &new {
            new.sent();
        }
        item.new = new;
        started
    }

    /// The connection stays for the next request, unless a request on a
    /// new connection may wait behind the process it holds (see
    /// [`FcgiConnections`]): then it is closed, and its place stays.
    fn reunite(item: &mut Lease<Self>, up: FcgiUpstream, down: FcgiDownstream) -> bool {
        item.new = None;
        let Some(back) = conn::reunite(up, down) else {
            return false;
        };
        if item.factory().new_conns.waiting() {
            tracing::debug!(
                addr = %item.factory().addr,
                "fastcgi: a kept connection closed for a request waiting on a new one \
                 (the application has fewer processes than max_connections?)"
            );
        } else {
            item.sock = Some(back);
        }
        true
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
            if sock.ready_for(!matches!(body, StartBody::Streamed)) {
                item.kept = true;
                // Closed between the look and the write: a new connection.
                match fcgi_start(sock, env, body.clone(), Retire::Ended).await {
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
        fcgi_start(sock, env, body, gone).await
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
