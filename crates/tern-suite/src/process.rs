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

/// A port on 127.0.0.1 that was free a moment ago, for a server to be
/// told before it starts. Chosen outside the kernel's ephemeral range
/// (`ip_local_port_range`): a port from there (what binding port 0 gives)
/// can be taken by any outgoing connection between this look and the
/// server's bind, and a load generator opens thousands a second, so the
/// server then failed with "address already in use" now and then. Ports
/// below the range, else above it, tried at random; port 0's if none is
/// free.
pub fn free_port() -> std::io::Result<u16> {
    let (lo, hi) = ephemeral_range();
    let (from, to) = if lo > 11_024 {
        (10_000, lo - 1)
    } else {
        (hi.saturating_add(1), 65_535)
    };
    if from < to {
        let span = u32::from(to - from) + 1;
        let mut x = seed();
        for _ in 0..256 {
            // xorshift64: a different sequence per call (see `seed`).
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let port = from + (x % u64::from(span)) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The kernel's ephemeral ports, `(first, last)` (Linux's default if it
/// cannot be read).
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|n| n.parse::<u16>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32_768, 60_999))
}

/// A seed that differs between calls, threads and processes.
fn seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let calls = CALLS.fetch_add(1, Ordering::Relaxed);
    let mixed =
        nanos ^ (u64::from(std::process::id()) << 32) ^ calls.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    mixed | 1
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Ports for servers come from outside the range outgoing connections
    /// take theirs from, differ from call to call, and can be bound.
    #[test]
    fn a_free_port_is_outside_the_ephemeral_range() {
        let (lo, hi) = ephemeral_range();
        let ports: Vec<u16> = (0..20).map(|_| free_port().unwrap()).collect();
        for &p in &ports {
            assert!(!(lo..=hi).contains(&p), "{p} in {lo}-{hi}");
            TcpListener::bind(("127.0.0.1", p)).unwrap();
        }
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 15, "{ports:?}");
    }
}
