//! A backend: a program the suite starts beside the servers, serving one
//! Unix socket (fcgiwrap, in the suite's directory and shared by nginx's
//! variants; a server's own C FastCGI responder and php-fpm, in that
//! server's directory). A backend runs in its own process group, with its
//! output in its log; the suite waits until its socket accepts, counts its
//! process tree's CPU with the server that uses it, and stops it by that
//! group at the end (also when dropped, so an error or a panic never leaves
//! one behind).

use std::fs::{self, File};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::stop_group;

/// How long a backend may take to accept on its socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How a backend's socket comes to be, and how servers run as another user
/// get to connect to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// The program binds it itself, open to all (mode 0666).
    Binds,
    /// The program binds it with its own mode; the suite opens it up to
    /// 0666 once it appears (`fcgiwrap -s`).
    BindsPrivately,
    /// The suite binds it (mode 0666) and hands the listening socket over
    /// as fd 0, the FastCGI convention (what `spawn-fcgi` does).
    Inherits,
}

/// How to start a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendLaunch {
    /// Its name, for notes and its log file ("php-fpm").
    pub name: &'static str,
    /// Executable.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// The socket it serves.
    pub socket: PathBuf,
    /// How the socket comes to be.
    pub listen: Listen,
}

/// A running backend. Dropping it stops it.
#[derive(Debug)]
pub struct Backend {
    name: &'static str,
    child: Option<Child>,
    socket: PathBuf,
    log: PathBuf,
}

impl Backend {
    /// Starts `launch` with its log in `dir` and waits until its socket
    /// accepts. The error is a note for the report.
    pub fn start(launch: &BackendLaunch, dir: &Path) -> Result<Backend, String> {
        let name = launch.name;
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let stdin = match launch.listen {
            Listen::Inherits => Stdio::from(bind_open(&launch.socket)?),
            Listen::Binds | Listen::BindsPrivately => Stdio::null(),
        };
        let child = Command::new(&launch.program)
            .args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(stdin)
            .stdout(out)
            .stderr(err)
            // Its own group: stopped as a whole, untouched by the terminal's Ctrl-C.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", launch.program.display()))?;
        let mut b = Backend {
            name,
            child: Some(child),
            socket: launch.socket.clone(),
            log,
        };
        b.wait_ready(launch.listen == Listen::BindsPrivately)?;
        Ok(b)
    }

    fn wait_ready(&mut self, open_up: bool) -> Result<(), String> {
        let began = Instant::now();
        while began.elapsed() < START_TIMEOUT {
            let exited = self
                .child
                .as_mut()
                .is_none_or(|c| !matches!(c.try_wait(), Ok(None)));
            if exited {
                let text = fs::read_to_string(&self.log).unwrap_or_default();
                let note = format!("{} exited at start: {}", self.name, last_lines(&text));
                self.stop();
                return Err(note);
            }
            if UnixStream::connect(&self.socket).is_ok() {
                if open_up {
                    fs::set_permissions(&self.socket, fs::Permissions::from_mode(0o666))
                        .map_err(|e| format!("{}: {e}", self.socket.display()))?;
                }
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        Err(format!(
            "{} did not accept on {} within {START_TIMEOUT:?}",
            self.name,
            self.socket.display()
        ))
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Process id of its main process (also its process group).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Stops its process group (TERM, then KILL) and reaps it.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            stop_group(child);
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A listening Unix socket at `path`, open to every user (servers that
/// dropped to an unprivileged user connect to it).
fn bind_open(path: &Path) -> Result<OwnedFd, String> {
    let _ = fs::remove_file(path);
    let listener = UnixListener::bind(path).map_err(|e| format!("{}: {e}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(OwnedFd::from(listener))
}

/// The last three lines of a log, on one line.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        "no output".to_owned()
    } else {
        tail.join(" / ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
    }

    #[test]
    fn an_inherited_socket_is_served_then_stopped_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        // python3 accepts on fd 0 as a FastCGI program would; its child is
        // in its group and goes with it.
        let launch = BackendLaunch {
            name: "echo",
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "sleep 600 & exec python3 -c 'import socket,time; s=socket.socket(fileno=0); c,_=s.accept(); c.sendall(b\"hi\"); time.sleep(600)'".into(),
            ],
            env: vec![],
            socket: dir.path().join("echo.sock"),
            listen: Listen::Inherits,
        };
        let mut b = Backend::start(&launch, dir.path()).unwrap();
        let mode = fs::metadata(b.socket()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
        // wait_ready's probe took the one accept; a second connection waits
        // in the backlog, which is what a server sees before the program
        // gets to it.
        assert!(UnixStream::connect(b.socket()).is_ok());
        let pid = b.pid();
        assert!(alive(pid));
        b.stop();
        assert!(!alive(pid), "backend {pid} still runs");
    }

    #[test]
    fn a_backend_that_exits_or_cannot_start_is_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let mut launch = BackendLaunch {
            name: "broken",
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "echo no such config >&2; exit 1".into()],
            env: vec![],
            socket: dir.path().join("broken.sock"),
            listen: Listen::Binds,
        };
        let err = Backend::start(&launch, dir.path()).unwrap_err();
        assert_eq!(err, "broken exited at start: no such config");
        launch.program = "/nonexistent/backend".into();
        let err = Backend::start(&launch, dir.path()).unwrap_err();
        assert!(
            err.starts_with("cannot start /nonexistent/backend"),
            "{err}"
        );
    }
}
