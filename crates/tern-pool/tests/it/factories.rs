//! Test factories: `sh` processes (on a listening socket of their own, if
//! asked), and connections to a Unix socket path.

use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tern_pool::process::{self, Command, Input, Output, SocketDir, Stdio3, Worker};
use tern_pool::{Check, Factory, Retire};

/// Spawns `sh -c <script>` (by default a long sleep), and remembers every
/// pid it created and every item it destroyed.
#[derive(Debug, Clone)]
pub(crate) struct Shells {
    script: String,
    /// With it, each worker gets a listening socket in it as fd 0 (as
    /// FastCGI workers do), and it goes as the pool closes.
    sockets: Option<Arc<SocketDir>>,
    next: Arc<AtomicUsize>,
    pub(crate) pids: Arc<Mutex<Vec<u32>>>,
    pub(crate) destroyed: Arc<Mutex<Vec<(u32, Retire)>>>,
}

impl Shells {
    pub(crate) fn sleepers() -> Self {
        Self::running("exec sleep 1000")
    }

    pub(crate) fn running(script: &str) -> Self {
        Self {
            script: script.to_owned(),
            sockets: None,
            next: Arc::default(),
            pids: Arc::default(),
            destroyed: Arc::default(),
        }
    }

    /// Running `script`, each on a listening socket of its own in a
    /// socket directory of this run.
    pub(crate) fn listening(script: &str) -> Self {
        Self {
            sockets: Some(Arc::new(SocketDir::new("shells").unwrap())),
            ..Self::running(script)
        }
    }

    /// The socket directory, if the workers listen.
    pub(crate) fn socket_dir(&self) -> Option<PathBuf> {
        self.sockets.as_ref().map(|d| d.path().to_owned())
    }

    pub(crate) fn pids(&self) -> Vec<u32> {
        self.pids.lock().unwrap().clone()
    }

    pub(crate) fn destroyed(&self) -> Vec<(u32, Retire)> {
        self.destroyed.lock().unwrap().clone()
    }
}

pub(crate) fn sh(script: &str) -> Command {
    Command::new("/bin/sh", "/")
        .arg("-c")
        .arg(script)
        .env("PATH", "/usr/bin:/bin")
}

impl Factory for Shells {
    type Item = Worker;

    async fn create(&self) -> io::Result<Worker> {
        let stdin = match &self.sockets {
            Some(dir) => {
                let (listener, _) = dir.bind(self.next.fetch_add(1, Ordering::Relaxed))?;
                Input::Fd(OwnedFd::from(listener))
            }
            None => Input::Null,
        };
        let stdio = Stdio3 {
            stdin,
            stdout: Output::Null,
            stderr: Output::Inherit,
        };
        let worker = process::spawn(&sh(&self.script), stdio)?;
        self.pids.lock().unwrap().push(worker.pid());
        Ok(worker)
    }

    fn check(&self, item: &mut Worker) -> Check {
        match process::exited(item) {
            None => Check::Alive,
            Some(_) => Check::Dead,
        }
    }

    fn pid(&self, item: &Worker) -> Option<u32> {
        Some(item.pid())
    }

    fn closing(&self) {
        if let Some(dir) = &self.sockets {
            dir.remove();
        }
    }

    async fn destroy(&self, item: Worker, why: Retire) {
        let pid = item.pid();
        process::terminate(item, Duration::from_secs(2)).await;
        self.destroyed.lock().unwrap().push((pid, why));
    }
}

/// Connects to a Unix socket path (a stand-in for php-fpm), and remembers
/// when each attempt started.
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    path: PathBuf,
    pub(crate) attempts: Arc<Mutex<Vec<Instant>>>,
}

impl Connector {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            attempts: Arc::default(),
        }
    }

    pub(crate) fn attempts(&self) -> Vec<Instant> {
        self.attempts.lock().unwrap().clone()
    }
}

impl Factory for Connector {
    type Item = UnixStream;

    async fn create(&self) -> io::Result<UnixStream> {
        self.attempts.lock().unwrap().push(Instant::now());
        let stream = tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::UnixStream::connect(&self.path),
        )
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
        stream.into_std()
    }

    fn check(&self, item: &mut UnixStream) -> Check {
        // Quiet means open: the peer sends nothing unasked, so a read
        // returns 0 (closed) or data (out of step) only on a dead channel.
        let mut byte = [0u8; 1];
        let quiet = item.set_nonblocking(true).is_ok()
            && matches!(item.read(&mut byte), Err(ref e) if e.kind() == io::ErrorKind::WouldBlock);
        if quiet && item.set_nonblocking(false).is_ok() {
            Check::Alive
        } else {
            Check::Ended
        }
    }

    async fn destroy(&self, item: UnixStream, _why: Retire) {
        drop(item);
    }
}
