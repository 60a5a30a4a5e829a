//! Starting a script, and stopping its whole process group.
//!
//! Why the spawn is built this way (it is the hot path: a CGI request is
//! mostly fork and exec):
//! - `std::process::Command` (under `tokio::process`) uses `posix_spawn`,
//!   which glibc implements with `clone(CLONE_VM | CLONE_VFORK)`: the child
//!   shares the parent's memory until it execs, so no page tables are
//!   copied, whatever tern's size. It falls back to fork when asked for
//!   anything posix_spawn cannot do, so nothing here uses `pre_exec`, uid
//!   changes or a PATH search: the program is an absolute path; the cwd
//!   (`posix_spawn_file_actions_addchdir_np`), the new process group
//!   (`POSIX_SPAWN_SETPGROUP`), the cleared environment and the three
//!   pipes are all things posix_spawn does itself.
//! - The child inherits nothing but its three standard descriptors: every
//!   descriptor tern opens (sockets, files, pipes, epoll) is close-on-exec,
//!   as Rust's std, mio and tokio open them all with O_CLOEXEC; those tern
//!   itself inherited from whoever started it (a shell's stray descriptor,
//!   cargo's jobserver pipe) are marked close-on-exec once, when the first
//!   CGI handler is built ([`seal_inherited_descriptors`]). Closing them in
//!   the child instead would need `pre_exec`, and so fork.
//! - The spawn runs on the blocking pool, not on the runtime thread: with
//!   vfork the calling thread is suspended until the child execs (its
//!   glibc prologue resets every signal handler, ~130 syscalls, then the
//!   kernel loads the program), and a runtime thread suspended there serves
//!   none of its other connections. Measured on this machine (2 vCPUs, a C
//!   hello, `wrk -t1`, quiet): spawning on the worker thread serialised the
//!   spawns of every connection it held and left a third of the CPU idle
//!   (1.9k req/s at 10 connections); on the blocking pool spawns overlap
//!   (2.0k), as the raw rate with two spawning threads does
//!   (`examples/spawn_rate`). Spawning in place only when no other script
//!   runs gained nothing at one connection and lost 7% at ten.
//! - tokio reaps the child through a pidfd registered with the reactor: no
//!   SIGCHLD handler, no blocking wait.
//! - Each script leads its own process group, so a timeout or a client
//!   that leaves stops the script and everything it started: SIGTERM to
//!   the group, then SIGKILL after a grace period. Signalling the group
//!   stays safe after the leader is reaped: Linux keeps a pid number in use
//!   while any process still has it as its process-group id.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tern_cgi::env::CgiEnv;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use crate::Error;

/// How long a stopped script has between SIGTERM and SIGKILL (h2o's CGI
/// bridge waits 3 s; a script rarely needs more than a moment to clean up).
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// What to run.
#[derive(Debug)]
pub(crate) struct Program {
    /// The executable: the script, or its interpreter.
    pub(crate) path: PathBuf,
    /// The script, when an interpreter runs it.
    pub(crate) script: Option<PathBuf>,
    /// The working directory (the script's).
    pub(crate) cwd: PathBuf,
    /// The whole environment.
    pub(crate) env: CgiEnv,
}

/// A started script.
#[derive(Debug)]
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) group: Group,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Starts `program` with `stdin` (a pipe, a spooled file or /dev/null).
///
/// The RFC's "search-string" command-line arguments (§4.4, a query without
/// `=`) are not passed: php-cgi took them as options (CVE-2012-1823), and
/// no script needs what QUERY_STRING already holds.
pub(crate) fn start(program: Program, stdin: Stdio) -> Result<Running, Error> {
    let mut cmd = Command::new(&program.path);
    if let Some(script) = &program.script {
        cmd.arg(script);
    }
    cmd.env_clear()
        .envs(program.env.iter())
        .current_dir(&program.cwd)
        .process_group(0)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| Error::Spawn {
        path: program.path.clone(),
        source,
    })?;
    let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
    let (Some(pid), Some(stdout), Some(stderr)) = (pid, child.stdout.take(), child.stderr.take())
    else {
        return Err(Error::Io(std::io::Error::other(
            "a spawned script has no pid or pipes",
        )));
    };
    Ok(Running {
        stdin: child.stdin.take(),
        child,
        group: Group {
            pgid: pid,
            armed: true,
        },
        stdout,
        stderr,
    })
}

/// A script's process group. Dropped while armed (the request's task was
/// cancelled, say at shutdown), it SIGKILLs the group: no script outlives
/// its request unnoticed.
#[derive(Debug)]
pub(crate) struct Group {
    pgid: Pid,
    armed: bool,
}

impl Group {
    fn signal(&self, sig: Signal) {
        // ESRCH: the group is already empty.
        let _ = rustix::process::kill_process_group(self.pgid, sig);
    }

    /// Stops the group: SIGTERM, up to [`KILL_GRACE`] for the script to
    /// exit, then SIGKILL (for it and anything it left behind), and the
    /// script is reaped.
    ///
    /// # Cancel safety
    /// Cancelling it drops the group while armed: SIGKILL at once.
    pub(crate) async fn stop(mut self, child: &mut Child) {
        self.signal(Signal::TERM);
        let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
        self.signal(Signal::KILL);
        self.armed = false;
        let _ = child.wait().await;
    }

    /// The script ended by itself: its group is left alone (a daemon it
    /// started on purpose keeps running, as under Apache).
    pub(crate) fn release(mut self) {
        self.armed = false;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            self.signal(Signal::KILL);
        }
    }
}

/// Marks every descriptor above stderr close-on-exec, once per process, so
/// that descriptors tern inherited never reach a script. Everything tern
/// opens is close-on-exec already, and tern hands no descriptor to any
/// child on purpose, so this changes nothing else.
pub(crate) fn seal_inherited_descriptors() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !cloexec_range() {
            // close_range is Linux 5.11+: else one fcntl per descriptor.
            if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
                let fds: Vec<i32> = dir
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .filter(|&fd| fd > 2)
                    .collect();
                fds.into_iter().for_each(cloexec_one);
            }
        }
    });
}

#[allow(
    unsafe_code,
    reason = "no safe API sets FD_CLOEXEC on a descriptor tern does not own"
)]
fn cloexec_range() -> bool {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC closes nothing and
    // touches no memory: it only sets the close-on-exec flag of open
    // descriptors >= 3. Their owners keep using them unchanged.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    rc == 0
}

#[allow(
    unsafe_code,
    reason = "no safe API sets FD_CLOEXEC on a descriptor tern does not own"
)]
fn cloexec_one(fd: i32) {
    // SAFETY: fcntl(F_GETFD/F_SETFD) reads and sets only the descriptor's
    // flags; on a number that is not (or no longer) open it fails with
    // EBADF, which is ignored.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// The variables tern passes from its own environment: PATH (a default
/// when tern has none) and the allow-listed names that are set.
pub(crate) fn inherited(
    allow: &[String],
    lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let path = lookup("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut out = vec![(OsStr::new("PATH").to_owned(), path)];
    for name in allow {
        if let Some(v) = lookup(name) {
            out.push((name.into(), v));
        }
    }
    out
}
