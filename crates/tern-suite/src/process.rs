//! What every process the suite starts has in common, below the backends
//! and servers that start them: where programs are looked for, the user
//! they drop to when the suite runs as root, a free loopback port, and
//! stopping a process group.
//!
//! Backends and servers each run in a process group of their own, so that
//! one stop reaches every process they fork (php-fpm's children, nginx's
//! workers), and the terminal's Ctrl-C reaches none of them directly: the
//! suite decides when they go.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

/// How long a process group may take to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// `PATH`, then the sbin directories where Debian puts servers.
pub fn default_search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
        let d = PathBuf::from(d);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// The first file called `name` in the directories of `search`.
pub fn find_program(search: &[PathBuf], name: &str) -> Option<PathBuf> {
    search.iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// An unprivileged user and group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// User name.
    pub user: String,
    /// Group name.
    pub group: String,
}

impl RunAs {
    /// When running as root: `www-data` if the system has it, else `nobody`.
    pub fn for_this_process() -> Option<RunAs> {
        if !rustix::process::geteuid().is_root() {
            return None;
        }
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
        let has = |file: &str, name: &str| file.lines().any(|l| l.split(':').next() == Some(name));
        let user = if has(&passwd, "www-data") {
            "www-data"
        } else {
            "nobody"
        };
        let group = [user, "nogroup", "nobody"]
            .into_iter()
            .find(|g| has(&groups, g))
            .unwrap_or(user);
        Some(RunAs {
            user: user.to_owned(),
            group: group.to_owned(),
        })
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Stops the process group led by `child`: TERM, then KILL after 5 s; reaps
/// the leader.
pub fn stop_group(mut child: Child) {
    let Some(pgid) = Pid::from_raw(child.id() as i32) else {
        return;
    };
    let _ = kill_process_group(pgid, Signal::TERM);
    let began = Instant::now();
    loop {
        // Reap the leader, so that a zombie does not keep the group alive.
        let _ = child.try_wait();
        if test_kill_process_group(pgid).is_err() {
            break;
        }
        if began.elapsed() > STOP_TIMEOUT {
            let _ = kill_process_group(pgid, Signal::KILL);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.wait();
}
