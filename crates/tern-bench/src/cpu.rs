//! CPU accounting of the measured server (and of tern-bench itself): user +
//! system time of a process and all its descendants from `/proc`, or of a
//! cgroup v2 from `cpu.stat`.
//!
//! A process tree is read as utime + stime + cutime + cstime of every
//! process in it, so children that were reaped during the window (CGI
//! processes) are counted through their parent. Children reaped by nobody
//! (a parent that ignores SIGCHLD) escape; a cgroup has no such hole, which is
//! why `--server-cgroup` exists. Reading costs a scan of `/proc`, done twice
//! per run (at the window's start and end), never per request.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Error;

/// Whose CPU to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuSource {
    /// A process and every process descended from it.
    Tree(u32),
    /// Several process trees, summed (a server and its FastCGI helper).
    Trees(Vec<u32>),
    /// One process, without descendants (used for tern-bench itself).
    Process(u32),
    /// A cgroup v2 directory (absolute, or relative to `/sys/fs/cgroup`).
    Cgroup(PathBuf),
}

impl CpuSource {
    /// A cgroup source; a relative path is taken under `/sys/fs/cgroup`.
    pub fn cgroup(path: impl AsRef<Path>) -> CpuSource {
        let p = path.as_ref();
        if p.is_absolute() {
            CpuSource::Cgroup(p.to_owned())
        } else {
            CpuSource::Cgroup(Path::new("/sys/fs/cgroup").join(p))
        }
    }

    /// Human description for reports.
    pub fn describe(&self) -> String {
        match self {
            CpuSource::Tree(pid) => format!("pid {pid} and descendants"),
            CpuSource::Trees(pids) => {
                let list: Vec<String> = pids.iter().map(u32::to_string).collect();
                format!("pids {} and descendants", list.join(", "))
            }
            CpuSource::Process(pid) => format!("pid {pid}"),
            CpuSource::Cgroup(p) => format!("cgroup {}", p.display()),
        }
    }

    /// User + system time consumed so far.
    pub fn read(&self) -> Result<Duration, Error> {
        match self {
            CpuSource::Process(pid) => {
                let text = fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map_err(|e| Error::Cpu(format!("process {pid}: {e}")))?;
                let stat = parse_stat(&text).ok_or_else(|| {
                    Error::Cpu(format!("process {pid}: unreadable /proc/{pid}/stat"))
                })?;
                Ok(ticks(stat.utime + stat.stime))
            }
            CpuSource::Tree(root) => read_tree(&[*root]),
            CpuSource::Trees(roots) => read_tree(roots),
            CpuSource::Cgroup(dir) => read_cgroup(dir),
        }
    }
}

/// The fields of `/proc/PID/stat` that matter here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    pid: u32,
    ppid: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

/// Parses one `/proc/PID/stat` line. The command name is in parentheses and
/// may itself hold spaces and parentheses, so fields are counted from the
/// last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let pid = text.split_whitespace().next()?.parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    let num = |i: usize| -> Option<u64> {
        // cutime/cstime are signed in the kernel's format; never negative in practice.
        f.get(i)?.parse::<i64>().ok().map(|v| v.max(0) as u64)
    };
    Some(Stat {
        pid,
        ppid: u32::try_from(num(1)?).ok()?,
        utime: num(11)?,
        stime: num(12)?,
        cutime: num(13)?,
        cstime: num(14)?,
    })
}

fn ticks(n: u64) -> Duration {
    // USER_HZ, the unit of /proc times (100 on every Linux port in practice).
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Duration::from_nanos(n.saturating_mul(1_000_000_000) / hz)
}

fn read_tree(roots: &[u32]) -> Result<Duration, Error> {
    let entries = fs::read_dir("/proc").map_err(|e| Error::Cpu(format!("/proc: {e}")))?;
    let mut stats: HashMap<u32, Stat> = HashMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // Processes come and go while we scan: a vanished one is simply absent.
        if let Some(stat) = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        {
            stats.insert(stat.pid, stat);
        }
    }
    trees_ticks(roots, &stats)
        .map(ticks)
        .map_err(|missing| Error::Cpu(format!("no process {missing}")))
}

/// Sum over several trees, each process once; `Err(pid)` for a root that
/// does not exist.
fn trees_ticks(roots: &[u32], stats: &HashMap<u32, Stat>) -> Result<u64, u32> {
    let mut total = 0;
    for (i, &root) in roots.iter().enumerate() {
        if !stats.contains_key(&root) {
            return Err(root);
        }
        // A root inside an earlier root's tree is already counted.
        if roots[..i].iter().any(|&r| in_tree(root, r, stats)) {
            continue;
        }
        total += tree_ticks(root, stats);
    }
    Ok(total)
}

/// `pid` is `root` or descends from it.
fn in_tree(pid: u32, root: u32, stats: &HashMap<u32, Stat>) -> bool {
    let mut p = pid;
    for _ in 0..=stats.len() {
        if p == root {
            return true;
        }
        match stats.get(&p) {
            Some(s) if s.ppid != p => p = s.ppid,
            _ => return false,
        }
    }
    false
}

/// Sum of all four times over `root` and its descendants.
fn tree_ticks(root: u32, stats: &HashMap<u32, Stat>) -> u64 {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for s in stats.values() {
        children.entry(s.ppid).or_default().push(s.pid);
    }
    let mut total = 0;
    let mut stack = vec![root];
    let mut seen = 0usize;
    while let Some(pid) = stack.pop() {
        seen += 1;
        if seen > stats.len() {
            break; // a cycle cannot happen in /proc, but never loop forever
        }
        if let Some(s) = stats.get(&pid) {
            total += s.utime + s.stime + s.cutime + s.cstime;
        }
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids.iter().copied().filter(|&k| k != pid));
        }
    }
    total
}

fn read_cgroup(dir: &Path) -> Result<Duration, Error> {
    let file = dir.join("cpu.stat");
    let text =
        fs::read_to_string(&file).map_err(|e| Error::Cpu(format!("{}: {e}", file.display())))?;
    parse_cpu_stat(&text)
        .map(Duration::from_micros)
        .ok_or_else(|| Error::Cpu(format!("{}: no usage_usec", file.display())))
}

/// `usage_usec` from a cgroup v2 `cpu.stat`.
fn parse_cpu_stat(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next()? == "usage_usec").then(|| it.next()?.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let line =
            "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 5 3 2 20 0 1 0 100 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            (s.pid, s.ppid, s.utime, s.stime, s.cutime, s.cstime),
            (4242, 1, 17, 5, 3, 2)
        );
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn sums_a_tree_and_nothing_else() {
        let mk = |pid, ppid, t| Stat {
            pid,
            ppid,
            utime: t,
            stime: t,
            cutime: 0,
            cstime: 1,
        };
        let stats: HashMap<u32, Stat> =
            [mk(10, 1, 1), mk(11, 10, 2), mk(12, 11, 3), mk(20, 1, 100)]
                .into_iter()
                .map(|s| (s.pid, s))
                .collect();
        assert_eq!(tree_ticks(10, &stats), (2 + 1) + (4 + 1) + (6 + 1));
        assert_eq!(tree_ticks(12, &stats), 7);
        assert!(in_tree(12, 10, &stats) && !in_tree(20, 10, &stats));
        assert_eq!(trees_ticks(&[10, 20], &stats), Ok(15 + 201));
        assert_eq!(
            trees_ticks(&[10, 11, 10], &stats),
            Ok(15),
            "each process once"
        );
        assert_eq!(trees_ticks(&[10, 99], &stats), Err(99));
    }

    #[test]
    fn parses_cgroup_cpu_stat() {
        let text = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n";
        assert_eq!(parse_cpu_stat(text), Some(123_456));
        assert_eq!(parse_cpu_stat("user_usec 1\n"), None);
    }

    #[test]
    fn reads_own_process_and_tree() {
        let me = CpuSource::Process(std::process::id());
        let before = me.read().unwrap();
        // Burn CPU until the kernel's tick counter moves (bounded).
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while me.read().unwrap() == before && started.elapsed() < Duration::from_secs(5) {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
        }
        std::hint::black_box(x);
        assert!(me.read().unwrap() > before);
        assert!(
            CpuSource::Tree(std::process::id()).read().unwrap()
                >= me.read().unwrap().saturating_sub(Duration::from_millis(20))
        );
        assert!(CpuSource::Tree(u32::MAX - 1).read().is_err());
        assert!(CpuSource::Trees(vec![std::process::id(), u32::MAX - 1])
            .read()
            .is_err());
        assert!(CpuSource::cgroup("/nonexistent-cgroup").read().is_err());
    }
}
