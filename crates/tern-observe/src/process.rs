//! The figures of a process (tern's own, or a worker it started) from
//! `/proc`, Linux only: CPU time, memory, descriptors, threads, start time.
//!
//! These are the `process_*` metrics every Prometheus client exports, read
//! from the same files the other clients read. The parsing is kept apart from
//! the reading (functions over `&str`) so that tests can feed fixed text.

use std::fs;
use std::io;
use std::sync::OnceLock;

/// What /proc says about one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Process {
    /// CPU time in user mode, seconds.
    pub cpu_user: f64,
    /// CPU time in kernel mode, seconds.
    pub cpu_system: f64,
    /// Resident memory, bytes.
    pub resident_bytes: u64,
    /// Virtual memory, bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors (0 when /proc/PID/fd cannot be read, e.g.
    /// another user's process).
    pub open_fds: u64,
    /// The soft limit on open descriptors (RLIMIT_NOFILE; 0 if unknown).
    pub max_fds: u64,
    /// Threads.
    pub threads: u64,
    /// When it started, Unix seconds.
    pub start_time: f64,
}

/// tern's own process.
pub fn this_process() -> io::Result<Process> {
    read("/proc/self")
}

/// Another process (a worker tern started), by pid.
pub fn of(pid: u32) -> io::Result<Process> {
    read(&format!("/proc/{pid}"))
}

/// Reads the process whose `/proc` directory is `dir`. Only `stat` (and the
/// boot time) must be readable: the descriptor count and limit are 0 when
/// they cannot be read, as they cannot for another user's process.
fn read(dir: &str) -> io::Result<Process> {
    let stat = parse_stat(&fs::read_to_string(format!("{dir}/stat"))?)?;
    // USER_HZ, the unit of every time in /proc/PID/stat (fixed per
    // architecture, whatever the kernel's internal tick rate).
    let hz = rustix::param::clock_ticks_per_second().max(1) as f64;
    let page_size = rustix::param::page_size() as u64;
    let open_fds = fs::read_dir(format!("{dir}/fd"))
        // The count includes the descriptor reading the directory when the
        // process is this one, as the other clients' counts do.
        .map(|entries| entries.count() as u64)
        .unwrap_or(0);
    let max_fds = fs::read_to_string(format!("{dir}/limits"))
        .ok()
        .and_then(|text| parse_max_open_files(&text))
        .unwrap_or(0);
    Ok(Process {
        cpu_user: stat.utime as f64 / hz,
        cpu_system: stat.stime as f64 / hz,
        resident_bytes: stat.rss_pages.saturating_mul(page_size),
        virtual_bytes: stat.vsize,
        open_fds,
        max_fds,
        threads: stat.threads,
        start_time: boot_time()? as f64 + stat.start_ticks as f64 / hz,
    })
}

/// The boot time, Unix seconds, from `/proc/stat`. It does not change while
/// the system runs, so it is read once.
fn boot_time() -> io::Result<u64> {
    static BOOT_TIME: OnceLock<u64> = OnceLock::new();
    if let Some(&btime) = BOOT_TIME.get() {
        return Ok(btime);
    }
    // Not get_or_init: a failed read is returned, not cached. Two threads
    // racing here read the same value, so which one sets it does not matter.
    let btime = parse_btime(&fs::read_to_string("/proc/stat")?)?;
    Ok(*BOOT_TIME.get_or_init(|| btime))
}

/// The fields of `/proc/PID/stat` that make a [`Process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// User-mode CPU time, clock ticks.
    utime: u64,
    /// Kernel-mode CPU time, clock ticks.
    stime: u64,
    threads: u64,
    /// Start time, clock ticks since boot.
    start_ticks: u64,
    /// Virtual memory, bytes.
    vsize: u64,
    /// Resident memory, pages.
    rss_pages: u64,
}

/// Parses `/proc/PID/stat`. The command name (field 2) is in parentheses and
/// may itself hold spaces and parentheses, so fields are counted from the
/// last `)`: the first after it is field 3 (the state).
fn parse_stat(text: &str) -> io::Result<Stat> {
    let rest = text
        .rfind(')')
        .map(|i| &text[i + 1..])
        .ok_or_else(|| invalid("/proc/PID/stat: no command name"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> io::Result<u64> {
        let raw = fields
            .get(n - 3)
            .ok_or_else(|| invalid(format!("/proc/PID/stat: no field {n}")))?;
        // rss is signed in the kernel's format (never negative in practice).
        raw.parse::<i64>()
            .map(|v| v.max(0) as u64)
            .or_else(|_| raw.parse::<u64>())
            .map_err(|_| invalid(format!("/proc/PID/stat: field {n} is {raw:?}")))
    };
    Ok(Stat {
        utime: field(14)?,
        stime: field(15)?,
        threads: field(20)?,
        start_ticks: field(22)?,
        vsize: field(23)?,
        rss_pages: field(24)?,
    })
}

/// The `btime` line of `/proc/stat`: the boot time, Unix seconds.
fn parse_btime(text: &str) -> io::Result<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| invalid("/proc/stat: no btime line"))
}

/// The soft limit of the "Max open files" line of `/proc/PID/limits`
/// ("unlimited" is `u64::MAX`); `None` when there is no such line.
fn parse_max_open_files(text: &str) -> Option<u64> {
    let soft = text
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?;
    match soft {
        "unlimited" => Some(u64::MAX),
        n => n.parse().ok(),
    }
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use super::*;

    // A real line (from a `sleep` process), with its comm changed.
    const STAT: &str = "4242 ((a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                        7 3 0 0 20 0 5 0 123456 9437184 250 18446744073709551615 \
                        1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn stat_counts_fields_from_the_last_paren() {
        assert_eq!(
            parse_stat(STAT).unwrap(),
            Stat {
                utime: 7,
                stime: 3,
                threads: 5,
                start_ticks: 123456,
                vsize: 9437184,
                rss_pages: 250,
            }
        );
        let plain = STAT.replace("((a) b)", "(tern)");
        assert_eq!(parse_stat(&plain).unwrap(), parse_stat(STAT).unwrap());
    }

    #[test]
    fn bad_stat_is_invalid_data() {
        for text in [
            "",
            "1 (x",
            "1 (x) S 1 2 3",
            "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u 3 0 0 20 0 5 0 1 2 3",
        ] {
            let err = parse_stat(text).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{text:?}");
        }
    }

    #[test]
    fn btime() {
        let text = "cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5\nctxt 6\nbtime 1700000000\nprocesses 7\n";
        assert_eq!(parse_btime(text).unwrap(), 1_700_000_000);
        assert!(parse_btime("cpu 1 2 3\n").is_err());
    }

    #[test]
    fn max_open_files() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n\
                      Max locked memory         8388608              8388608              bytes     \n";
        assert_eq!(parse_max_open_files(limits), Some(1024));
        let unlimited = limits.replace("1024   ", "unlimited");
        assert_eq!(parse_max_open_files(&unlimited), Some(u64::MAX));
        assert_eq!(parse_max_open_files("Limit Soft Limit\n"), None);
    }

    fn cpu(p: &Process) -> f64 {
        p.cpu_user + p.cpu_system
    }

    #[test]
    fn this_process_is_plausible() {
        let before = this_process().unwrap();
        assert!(before.threads >= 1, "{before:?}");
        assert!(before.resident_bytes > 0, "{before:?}");
        assert!(before.virtual_bytes >= before.resident_bytes, "{before:?}");
        assert!(before.open_fds > 0, "{before:?}");
        assert!(before.max_fds > 0, "{before:?}");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        // btime is whole seconds, so the start time can read up to a second late.
        assert!(
            before.start_time > now - 86_400.0 && before.start_time <= now + 2.0,
            "{before:?} at {now}"
        );

        // CPU time is accounted in clock ticks (10 ms), and on a busy machine
        // a 50 ms spin may be descheduled, so spin again (up to 2 s) until it shows.
        let mut after = before;
        for _ in 0..40 {
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(50) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            after = this_process().unwrap();
            if cpu(&after) > cpu(&before) {
                break;
            }
        }
        assert!(cpu(&after) > cpu(&before), "{before:?} then {after:?}");
        assert_eq!(after.start_time, before.start_time);
    }

    #[test]
    fn of_this_pid_is_this_process() {
        let by_pid = of(std::process::id()).unwrap();
        let own = this_process().unwrap();
        assert_eq!(by_pid.start_time, own.start_time);
        assert!(by_pid.threads >= 1 && by_pid.resident_bytes > 0);
    }

    #[test]
    fn of_a_missing_pid_fails() {
        // Above the kernel's largest pid_max (2^22).
        assert_eq!(of(u32::MAX).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
