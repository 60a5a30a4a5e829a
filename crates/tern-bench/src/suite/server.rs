//! Servers under test: tern or a peer, in a cache variant. Each is started in
//! the foreground on a free loopback port, in its own process group, with its
//! output in its log file; the suite waits until it accepts connections,
//! measures its process tree, and stops it by process group (TERM, then KILL
//! after 5 s). [`RunningServer`] stops its server when dropped, so an error
//! or a panic in the suite never leaves a server behind.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

use super::peer::{Launch, PeerKind, PeerSetup, RunAs};
use super::row::{CacheMode, Feature, RowSpec};
use super::workdir::Workdir;

/// Which server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerKind {
    /// tern, started as `BINARY serve --listen 127.0.0.1:PORT --root DOCROOT [--no-cache]`.
    Tern {
        /// The tern executable.
        binary: PathBuf,
    },
    /// A peer.
    Peer(PeerKind),
}

/// A server in one variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Which server.
    pub kind: ServerKind,
    /// Cache variant; `None` for servers without a knob (they take the
    /// cache-on rows as they are).
    pub cache: Option<CacheMode>,
}

impl ServerSpec {
    /// "tern", "nginx", ...
    pub fn name(&self) -> &'static str {
        match &self.kind {
            ServerKind::Tern { .. } => "tern",
            ServerKind::Peer(p) => p.name(),
        }
    }

    /// "on", "off" or "default".
    pub fn cache_label(&self) -> &'static str {
        match self.cache {
            Some(CacheMode::On) => "on",
            Some(CacheMode::Off) => "off",
            None => "default",
        }
    }

    /// A unique, file-name-safe label: "nginx-cache-off".
    pub fn id(&self) -> String {
        format!("{}-cache-{}", self.name(), self.cache_label())
    }

    /// Whether the server can serve rows that need `feature`.
    pub fn offers(&self, feature: Feature) -> bool {
        match feature {
            Feature::StaticFiles => true,
        }
    }

    /// Whether this variant takes part in `row`.
    pub fn serves(&self, row: &RowSpec) -> bool {
        self.offers(row.needs)
            && match row.cache {
                CacheMode::On => self.cache != Some(CacheMode::Off),
                CacheMode::Off => self.cache == Some(CacheMode::Off),
            }
    }

    /// The variants to run for a server kind: two with a cache knob, else one.
    pub fn variants(kind: ServerKind) -> Vec<ServerSpec> {
        let knob = match &kind {
            ServerKind::Tern { .. } => true,
            ServerKind::Peer(p) => p.has_cache_knob(),
        };
        if knob {
            vec![
                ServerSpec {
                    kind: kind.clone(),
                    cache: Some(CacheMode::On),
                },
                ServerSpec {
                    kind,
                    cache: Some(CacheMode::Off),
                },
            ]
        } else {
            vec![ServerSpec { kind, cache: None }]
        }
    }

    fn launch(
        &self,
        program: &Path,
        dir: &Path,
        docroot: &Path,
        port: u16,
    ) -> Result<Launch, String> {
        match &self.kind {
            ServerKind::Tern { binary } => {
                let mut args = vec![
                    "serve".to_owned(),
                    "--listen".to_owned(),
                    format!("127.0.0.1:{port}"),
                    "--root".to_owned(),
                    docroot.display().to_string(),
                ];
                if self.cache == Some(CacheMode::Off) {
                    args.push("--no-cache".to_owned());
                }
                Ok(Launch {
                    program: binary.clone(),
                    args,
                    env: vec![],
                })
            }
            ServerKind::Peer(p) => p.configure(
                program,
                &PeerSetup {
                    dir,
                    docroot,
                    port,
                    cache: self.cache,
                    user: RunAs::for_this_process(),
                },
            ),
        }
    }
}

/// A started server. Dropping it stops it.
#[derive(Debug)]
pub struct RunningServer {
    spec: ServerSpec,
    port: u16,
    child: Option<Child>,
    log: PathBuf,
}

/// How long a server may take to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a server may take to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

impl RunningServer {
    /// Starts `spec` (executable `program`) on a free loopback port and waits
    /// until it accepts connections. The error is a note for the report.
    pub fn start(
        spec: &ServerSpec,
        program: &Path,
        work: &Workdir,
    ) -> Result<RunningServer, String> {
        let dir = work.server_dir(&spec.id()).map_err(|e| e.to_string())?;
        let port = free_port().map_err(|e| format!("no free port: {e}"))?;
        let launch = spec.launch(program, &dir, work.docroot(), port)?;
        let log = dir.join("logs").join("output.log");
        let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = Command::new(&launch.program);
        cmd.args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own group: stopped as a whole, untouched by the terminal's Ctrl-C.
            .process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", launch.program.display()))?;
        let mut server = RunningServer {
            spec: spec.clone(),
            port,
            child: Some(child),
            log,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// The spec it was started from.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Its loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Process id of the server's main process (also its process group).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The server is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let began = Instant::now();
        while began.elapsed() < START_TIMEOUT {
            if !self.is_running() {
                let note = format!("{} exited at start: {}", self.spec.name(), self.log_tail());
                self.stop();
                return Err(note);
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let note = format!(
            "{} did not accept connections within {START_TIMEOUT:?}",
            self.spec.name()
        );
        self.stop();
        Err(note)
    }

    /// The last lines of its output, for notes.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(3).collect();
        let tail: Vec<&str> = lines.into_iter().rev().collect();
        if tail.is_empty() {
            "no output".to_owned()
        } else {
            tail.join(" / ")
        }
    }

    /// Stops the server's process group: TERM, then KILL after 5 s; reaps it.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
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
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_rows() {
        let tern = ServerSpec::variants(ServerKind::Tern {
            binary: "/x/tern".into(),
        });
        assert_eq!(
            tern.iter().map(ServerSpec::id).collect::<Vec<_>>(),
            ["tern-cache-on", "tern-cache-off"]
        );
        let caddy = ServerSpec::variants(ServerKind::Peer(PeerKind::Caddy));
        assert_eq!(caddy.len(), 1);
        let mut row = super::super::row::Registry::seed().rows()[0].clone();
        row.cache = CacheMode::Off;
        assert!(tern[1].serves(&row) && !tern[0].serves(&row) && !caddy[0].serves(&row));
        row.cache = CacheMode::On;
        assert!(tern[0].serves(&row) && !tern[1].serves(&row) && caddy[0].serves(&row));
    }

    #[test]
    fn a_server_that_exits_at_once_is_a_note_and_leaves_nothing() {
        let work = Workdir::create(&[]).unwrap();
        let spec = ServerSpec {
            kind: ServerKind::Tern {
                binary: "/bin/false".into(),
            },
            cache: None,
        };
        let err = RunningServer::start(&spec, Path::new("/bin/false"), &work).unwrap_err();
        assert!(err.contains("exited at start"), "{err}");
        let spec = ServerSpec {
            kind: ServerKind::Tern {
                binary: "/nonexistent/tern".into(),
            },
            cache: None,
        };
        let err = RunningServer::start(&spec, Path::new("/nonexistent/tern"), &work).unwrap_err();
        assert!(err.contains("cannot start"), "{err}");
    }
}
