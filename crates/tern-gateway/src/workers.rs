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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tern_config::CommandConfig;
use tern_pool::process::{self, Command, Output, SocketDir, Stdio3, Worker};
use tern_pool::{Factory, Lease, Retire};

use crate::cgiplus::{self, CgiplusDownstream, CgiplusUpstream, Pipes, Sentinels};
use crate::env::CgiEnv;
use crate::fastcgi::conn::{self, Address, FcgiDownstream, FcgiUpstream, Socket};
use crate::persist::{Downstream, StartBody, Upstream};
use crate::Error;

/// How long a stopped worker has between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Why a request could not start on a worker.
#[derive(Debug)]
pub(crate) enum StartFailure {
    /// The request cannot be put to this kind of worker (400); the worker
    /// was not touched.
    Refused(Error),
    /// The worker's channel failed: discard it.
    Broken(io::Error),
}

/// How a pooled item carries one request.
pub(crate) trait Transport: Factory + Sized {
    type Up: Upstream + 'static;
    type Down: Downstream + 'static;

    /// Starts a request: its head (and a body in memory) in one write.
    fn start(
        item: &mut Lease<Self>,
        env: &CgiEnv,
        body: StartBody,
    ) -> impl Future<Output = Result<(Self::Up, Self::Down), StartFailure>> + Send;

    /// After a clean end, puts the channel back; false if it cannot carry
    /// another request.
    fn reunite(item: &mut Lease<Self>, up: Self::Up, down: Self::Down) -> bool;
}

/// One FastCGI channel: a connection, taken out while a request uses it.
#[derive(Debug)]
pub(crate) struct FcgiConn {
    sock: Option<Socket>,
}

/// A pooled item that carries FastCGI: its connection, taken out while a
/// request uses it.
pub(crate) trait FcgiSlot {
    fn socket(&mut self) -> &mut Option<Socket>;
}

impl FcgiSlot for FcgiConn {
    fn socket(&mut self) -> &mut Option<Socket> {
        &mut self.sock
    }
}

impl FcgiSlot for FcgiProcess {
    fn socket(&mut self) -> &mut Option<Socket> {
        &mut self.sock
    }
}

/// Connections and processes carry a request the same way.
impl<F> Transport for F
where
    F: Factory,
    F::Item: FcgiSlot,
{
    type Up = FcgiUpstream;
    type Down = FcgiDownstream;

    async fn start(
        item: &mut Lease<Self>,
        env: &CgiEnv,
        body: StartBody,
    ) -> Result<(FcgiUpstream, FcgiDownstream), StartFailure> {
        let sock = item
            .socket()
            .take()
            .ok_or_else(|| StartFailure::Broken(io::Error::other("no connection")))?;
        conn::start(sock, env, body)
            .await
            .map_err(StartFailure::Broken)
    }

    fn reunite(item: &mut Lease<Self>, up: FcgiUpstream, down: FcgiDownstream) -> bool {
        let sock = conn::reunite(up, down);
        let ok = sock.is_some();
        *item.socket() = sock;
        ok
    }
}

/// Connections to one address of a running FastCGI server.
#[derive(Debug)]
pub(crate) struct FcgiConnections {
    addr: Address,
    timeout: Duration,
}

impl FcgiConnections {
    pub(crate) fn new(addr: Address, timeout: Duration) -> Self {
        FcgiConnections { addr, timeout }
    }
}

impl Factory for FcgiConnections {
    type Item = FcgiConn;

    async fn create(&self) -> io::Result<FcgiConn> {
        let sock = conn::connect(&self.addr, self.timeout).await?;
        Ok(FcgiConn { sock: Some(sock) })
    }

    fn is_alive(&self, item: &mut FcgiConn) -> bool {
        item.sock.as_ref().is_some_and(Socket::still_open)
    }

    fn destroy(&self, item: FcgiConn, _why: Retire) -> impl Future<Output = ()> + Send {
        drop(item);
        std::future::ready(())
    }
}

/// A FastCGI process tern runs, and tern's connection to it.
#[derive(Debug)]
pub(crate) struct FcgiProcess {
    worker: Worker,
    sock: Option<Socket>,
}

/// FastCGI processes tern runs: each gets a listening Unix socket of its
/// own as fd 0 (the FastCGI convention), so tern knows which process holds
/// which request and can stop exactly the one that hangs.
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

    async fn create(&self) -> io::Result<FcgiProcess> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (listener, path) = self.sockets.bind(n as usize)?;
        let worker = process::spawn(&self.cmd, Stdio3::fastcgi(OwnedFd::from(listener)))?;
        let connected = tokio::time::timeout(self.timeout, async {
            let s = tokio::net::UnixStream::connect(&path).await?;
            s.into_std()
        })
        .await;
        // The process holds the listening socket; its name is no longer
        // needed (tern's one connection is made).
        let _ = std::fs::remove_file(&path);
        let stream = match connected {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                process::terminate(worker, KILL_GRACE).await;
                return Err(e);
            }
            Err(_) => {
                process::terminate(worker, KILL_GRACE).await;
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connecting to the new process",
                ));
            }
        };
        Ok(FcgiProcess {
            worker,
            sock: Some(Socket::unix(stream)?),
        })
    }

    fn is_alive(&self, item: &mut FcgiProcess) -> bool {
        process::exited(&mut item.worker).is_none()
            && item.sock.as_ref().is_some_and(Socket::still_open)
    }

    fn destroy(&self, item: FcgiProcess, _why: Retire) -> impl Future<Output = ()> + Send {
        let FcgiProcess { worker, sock } = item;
        drop(sock);
        async move {
            process::terminate(worker, KILL_GRACE).await;
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

    fn is_alive(&self, item: &mut CgiplusProcess) -> bool {
        process::exited(&mut item.worker).is_none()
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
