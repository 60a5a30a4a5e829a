//! A `tern serve` child process: started with a config file, its stderr
//! (the error log) captured, stopped by PID when dropped (SIGTERM, then
//! SIGKILL if it has not exited within two seconds).

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running tern.
#[derive(Debug)]
pub struct Tern {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<String>>,
    /// What it printed on stdout after its first line.
    out: Arc<Mutex<String>>,
    /// Set by each reader thread (stderr, stdout) when its pipe reached
    /// end of file: only then does `log` hold the process's last lines.
    drained: [Arc<AtomicBool>; 2],
    /// The directory holding the config file (and anything else the test
    /// put there); removed on drop.
    pub dir: tempfile::TempDir,
}

impl Tern {
    /// Starts `bin serve --config DIR/tern.toml` where the file holds
    /// `config` with `{dir}` replaced by the temporary directory. The config
    /// should listen on `127.0.0.1:0`.
    pub fn start(bin: &str, config: &str) -> Tern {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::start_in(bin, config, dir)
    }

    /// Like [`Tern::start`], in a directory the test prepared.
    pub fn start_in(bin: &str, config: &str, dir: tempfile::TempDir) -> Tern {
        let cfg = config.replace("{dir}", &dir.path().to_string_lossy());
        let path = dir.path().join("tern.toml");
        std::fs::write(&path, cfg).expect("write config");
        Self::spawn(bin, &["serve", "--config", &path.to_string_lossy()], dir)
    }

    /// Starts `bin` with `args` (which must make it print its address).
    pub fn spawn(bin: &str, args: &[&str], dir: tempfile::TempDir) -> Tern {
        Self::spawn_env(bin, args, &[], dir)
    }

    /// Like [`Tern::spawn`], with `env` added to its environment.
    pub fn spawn_env(
        bin: &str,
        args: &[&str],
        env: &[(&str, &Path)],
        dir: tempfile::TempDir,
    ) -> Tern {
        // `TERN_TEST_HTTP1=hyper` runs every test's server with hyper's
        // HTTP/1 loop instead of tern's (`tern serve --http1`).
        let http1 = match std::env::var("TERN_TEST_HTTP1") {
            Ok(h) if args.first() == Some(&"serve") => vec!["--http1".to_owned(), h],
            _ => Vec::new(),
        };
        let mut child = Command::new(bin)
            .args(args)
            .args(&http1)
            .envs(env.iter().copied())
            .env("TERN_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tern");
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().expect("stderr");
        let sink = log.clone();
        let drained = [Arc::default(), Arc::default()];
        let done: Arc<AtomicBool> = Arc::clone(&drained[0]);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = match stderr.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            done.store(true, Ordering::Release);
        });
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = match lines.next() {
            Some(Ok(l)) => l,
            _ => {
                let status = child.wait().expect("wait");
                wait_drained(&drained[..1]);
                panic!(
                    "tern exited ({status}) before listening:\n{}",
                    log.lock().unwrap()
                );
            }
        };
        // Keep draining stdout so the child never blocks on it.
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        let done: Arc<AtomicBool> = Arc::clone(&drained[1]);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut out = sink.lock().unwrap();
                out.push_str(&line);
                out.push('\n');
            }
            done.store(true, Ordering::Release);
        });
        let addr = first
            .split("://")
            .nth(1)
            .and_then(|s| s.trim_end_matches('/').parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        Tern {
            child,
            addr,
            log,
            out,
            drained,
            dir,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temporary directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the temporary directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Everything written to stdout so far, after the first line (the
    /// address). Waits up to 10 s for at least one line.
    pub fn stdout(&self) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        while self.out.lock().unwrap().is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.out.lock().unwrap().clone()
    }

    /// The admin listener's address, from the line tern printed for it
    /// (`tern: admin on http://ADDR/status`); waits up to 10 s for it.
    pub fn admin_addr(&self) -> SocketAddr {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.out.lock().unwrap().clone();
            if let Some(addr) = out.lines().find_map(|l| {
                l.strip_prefix("tern: admin on http://")?
                    .strip_suffix("/status")?
                    .parse()
                    .ok()
            }) {
                return addr;
            }
            assert!(
                Instant::now() < end,
                "no admin address in {out:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything written to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits (up to 10 s) until the error log contains `needle`; returns
    /// whether it did.
    pub fn wait_log(&self, needle: &str) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Sends a signal to the process.
    pub fn signal(&self, sig: i32) {
        let pid = i32::try_from(self.child.id()).expect("pid");
        // libc::kill is a plain syscall wrapper; `kill` from std would only
        // send SIGKILL.
        let rc = unsafe_free_kill(pid, sig);
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }

    /// Waits up to `limit` for the process to exit, then for its stderr and
    /// stdout to be read to the end, so that [`Tern::log`] holds what it
    /// wrote last.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Ok(Some(s)) = self.child.try_wait() {
                wait_drained(&self.drained);
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

/// Waits (up to two seconds: a worker process that inherited the pipes
/// may hold them open longer) until the reader threads behind `drained`
/// saw end of file.
fn wait_drained(drained: &[Arc<AtomicBool>]) {
    let end = Instant::now() + Duration::from_secs(2);
    while !drained.iter().all(|d| d.load(Ordering::Acquire)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn unsafe_free_kill(pid: i32, sig: i32) -> i32 {
    // `kill(1)` keeps this crate free of unsafe code.
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    if status.success() {
        0
    } else {
        -1
    }
}

/// How long a dropped tern has to stop by itself after SIGTERM, removing
/// what it made in the temp directory (its demo site, its workers'
/// sockets), before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

impl Drop for Tern {
    fn drop(&mut self) {
        // A tern that died by itself (a signal: the OOM killer, a crash
        // that printed nothing) is said, with its last lines: a request
        // the test saw fail may have been cut short by that, not by a
        // wrong answer. Shown only beside a failing test's output.
        if let Ok(Some(status)) = self.child.try_wait() {
            if status.signal().is_some() {
                wait_drained(&self.drained);
                eprintln!(
                    "tern (pid {}) ended by itself before the test let it go: {status}; its log:\n{}",
                    self.child.id(),
                    self.log()
                );
            }
            return;
        }
        let pid = i32::try_from(self.child.id()).expect("pid");
        if unsafe_free_kill(pid, 15) == 0 && self.wait_exit(STOP_GRACE).is_some() {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
