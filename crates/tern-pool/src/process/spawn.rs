//! Starting a worker with chosen descriptors, and noticing that it exited.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ExitStatus, Stdio};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitIdStatus};

use super::Command;

/// What a worker reads on fd 0.
#[derive(Debug)]
pub enum Input {
    /// This descriptor: a listening socket (FastCGI) or a pipe's read end
    /// the caller made. Passed to the child; the parent's copy is closed.
    Fd(OwnedFd),
    /// A new pipe; its write end is [`Worker::take_stdin`].
    Pipe,
    /// /dev/null.
    Null,
}

/// Where a worker's fd 1 or fd 2 goes.
#[derive(Debug)]
pub enum Output {
    /// This descriptor (a pipe's write end, a log file).
    Fd(OwnedFd),
    /// A new pipe; its read end is [`Worker::take_stdout`] or
    /// [`Worker::take_stderr`].
    Pipe,
    /// /dev/null.
    Null,
    /// tern's own descriptor (its stderr: the error log).
    Inherit,
}

/// A worker's three standard descriptors.
#[derive(Debug)]
pub struct Stdio3 {
    /// fd 0.
    pub stdin: Input,
    /// fd 1.
    pub stdout: Output,
    /// fd 2.
    pub stderr: Output,
}

impl Stdio3 {
    /// `stdin` on fd 0, stdout to /dev/null, stderr to tern's stderr: a
    /// FastCGI worker, which answers through the socket it accepts on fd 0.
    pub fn fastcgi(listener: OwnedFd) -> Self {
        Self {
            stdin: Input::Fd(listener),
            stdout: Output::Null,
            stderr: Output::Inherit,
        }
    }

    /// Pipes for stdin and stdout, stderr as given: a CGIplus worker.
    pub fn pipes(stderr: Output) -> Self {
        Self {
            stdin: Input::Pipe,
            stdout: Output::Pipe,
            stderr,
        }
    }
}

impl Input {
    fn into_std(self) -> Stdio {
        match self {
            Self::Fd(fd) => Stdio::from(fd),
            Self::Pipe => Stdio::piped(),
            Self::Null => Stdio::null(),
        }
    }
}

impl Output {
    fn into_std(self) -> Stdio {
        match self {
            Self::Fd(fd) => Stdio::from(fd),
            Self::Pipe => Stdio::piped(),
            Self::Null => Stdio::null(),
            Self::Inherit => Stdio::inherit(),
        }
    }
}

/// A started worker process, leader of its own process group. Stop it with
/// [`terminate`](super::terminate); dropped instead, it SIGKILLs its group
/// and is reaped (on a short-lived thread if it does not die at once).
#[derive(Debug)]
pub struct Worker {
    /// `None` only after Drop moved it to a reaping thread.
    child: Option<Child>,
    pid: Pid,
    /// Set once reaped: the pid may belong to someone else from then on.
    pub(super) status: Option<ExitStatus>,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

impl Worker {
    /// The worker's pid, which is also its process-group id.
    pub fn pid(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// The write end of the worker's stdin pipe ([`Input::Pipe`]), once.
    pub fn take_stdin(&mut self) -> Option<OwnedFd> {
        self.stdin.take()
    }

    /// The read end of the worker's stdout pipe ([`Output::Pipe`]), once.
    pub fn take_stdout(&mut self) -> Option<OwnedFd> {
        self.stdout.take()
    }

    /// The read end of the worker's stderr pipe ([`Output::Pipe`]), once.
    pub fn take_stderr(&mut self) -> Option<OwnedFd> {
        self.stderr.take()
    }

    pub(super) fn pgid(&self) -> Pid {
        self.pid
    }

    /// Signals the worker's whole group. ESRCH (nobody left) is fine.
    pub(super) fn signal_group(&self, sig: Signal) {
        if self.status.is_none() {
            let _ = rustix::process::kill_process_group(self.pid, sig);
        }
    }

    /// Reaps an exited worker; `None` if it is still running.
    pub(super) fn reap(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let child = self.child.as_mut()?;
            self.status = match child.try_wait() {
                Ok(status) => status,
                // ECHILD: reaped behind our back (SIGCHLD ignored): gone.
                Err(_) => Some(ExitStatus::default()),
            };
        }
        self.status
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
        if self.reap().is_some() {
            return;
        }
        // SIGKILL is not instant (a process in uninterruptible sleep), and
        // Drop may run on a runtime thread, which must not block: reap on a
        // thread of its own. Rare: pools terminate their workers.
        if let Some(mut child) = self.child.take() {
            let reaper = std::thread::Builder::new()
                .name("tern-pool-reap".into())
                .spawn(move || {
                    let _ = child.wait();
                });
            if let Err(err) = reaper {
                tracing::warn!(
                    pid = self.pid(),
                    "cannot start a thread to reap a killed worker: {err}"
                );
            }
        }
    }
}

/// Starts `cmd` with `stdio` as fd 0, 1 and 2, as the leader of a new
/// process group, with SIGKILL as its parent-death signal, and with every
/// other descriptor closed at exec.
///
/// Call it from a thread that outlives the worker (a pool's manager
/// thread): the parent-death signal fires when the spawning thread exits.
pub fn spawn(cmd: &Command, stdio: Stdio3) -> io::Result<Worker> {
    let mut std_cmd = std::process::Command::new(cmd.program());
    std_cmd
        .args(cmd.get_args())
        .env_clear()
        .envs(cmd.get_env().iter().map(|(k, v)| (k, v)))
        .current_dir(cmd.cwd())
        .process_group(0)
        .stdin(stdio.stdin.into_std())
        .stdout(stdio.stdout.into_std())
        .stderr(stdio.stderr.into_std());
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed. It makes three raw system calls
    // (prctl, getppid, close_range) through rustix and libc, allocates
    // nothing, takes no lock, and builds its error from a raw errno.
    #[allow(
        unsafe_code,
        reason = "pre_exec is the only way to set the parent-death signal"
    )]
    unsafe {
        std_cmd.pre_exec(move || prepare_child(parent));
    }
    let mut child = std_cmd.spawn()?;
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::other("a spawned worker has no valid pid"))?;
    Ok(Worker {
        stdin: child.stdin.take().map(OwnedFd::from),
        stdout: child.stdout.take().map(OwnedFd::from),
        stderr: child.stderr.take().map(OwnedFd::from),
        child: Some(child),
        pid,
        status: None,
    })
}

/// In the child, between fork and exec.
fn prepare_child(parent: Pid) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    // The parent died between fork and prctl: the signal will never come.
    if rustix::process::getppid() != Some(parent) {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // Descriptors tern inherited without close-on-exec must not reach the
    // worker. CLOEXEC rather than closing them: std reports an exec failure
    // through a close-on-exec pipe of its own. ENOSYS (Linux < 5.11) is
    // ignored: tern's own descriptors are close-on-exec anyway.
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on
    // descriptors; it takes no pointers and is async-signal-safe.
    #[allow(
        unsafe_code,
        reason = "no safe wrapper for close_range exists in our dependencies"
    )]
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3_u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
    Ok(())
}

/// The worker's exit status if it has exited, without reaping it (an exited
/// worker stays a zombie, holding its pid and group id, until
/// [`terminate`](super::terminate) reaps it).
pub fn exited(worker: &mut Worker) -> Option<ExitStatus> {
    if worker.status.is_some() {
        return worker.status;
    }
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    match rustix::process::waitid(WaitId::Pid(worker.pgid()), options) {
        Ok(Some(status)) => Some(exit_status(&status)),
        Ok(None) => None,
        // ECHILD: not waitable (reaped behind our back): gone.
        Err(_) => worker.reap(),
    }
}

fn exit_status(status: &WaitIdStatus) -> ExitStatus {
    if let Some(code) = status.exit_status() {
        ExitStatus::from_raw((code & 0xff) << 8)
    } else if let Some(signal) = status.terminating_signal() {
        ExitStatus::from_raw(signal | if status.dumped() { 0x80 } else { 0 })
    } else {
        ExitStatus::default()
    }
}
