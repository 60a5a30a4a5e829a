//! Servers under test, running: each [`ServerSpec`] is started in the
//! foreground on a free loopback port, in its own process group, with its
//! output in its log file, after its own backends; the suite waits until it
//! accepts connections, measures its process tree (and the trees of the
//! backends it uses), and stops it by process group (TERM, then KILL after
//! 5 s), then its backends. [`RunningServer`] stops its server when
//! dropped, so an error or a panic in the suite never leaves a server
//! behind.

use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::backends::{Backends, OwnBackends};
use crate::gateway::Gateway;
use crate::peer::{Launch, PeerSetup, TlsListen};
use crate::process::{free_port, stop_group, RunAs};
use crate::row::{CacheMode, Feature};
use crate::spec::{ServerKind, ServerSpec};
use crate::tern::tern_config;
use crate::workdir::Workdir;

/// A started server. Dropping it stops it.
#[derive(Debug)]
pub struct RunningServer {
    spec: ServerSpec,
    port: u16,
    /// The TLS port and the CA that issued its certificate, when the run
    /// has TLS rows.
    tls: Option<(u16, PathBuf)>,
    child: Option<Child>,
    log: PathBuf,
    /// Its own backends (the FastCGI responder, php-fpm), stopped after it.
    own: OwnBackends,
    /// Backends whose CPU counts as the server's in the rows of a feature
    /// (its own, and fcgiwrap for nginx's CGI).
    backends: Vec<(Feature, &'static str, u32)>,
}

/// How long a server may take to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(15);

impl RunningServer {
    /// Starts `spec` (executable `program`) on a free loopback port with
    /// its gateways served by `backends`, and waits until it accepts
    /// connections. The error is a note for the report.
    pub fn start(
        spec: &ServerSpec,
        program: &Path,
        work: &Workdir,
        backends: &Backends,
    ) -> Result<RunningServer, String> {
        let dir = work.server_dir(&spec.id()).map_err(|e| e.to_string())?;
        let port = free_port().map_err(|e| format!("no free port: {e}"))?;
        let tls_port = match work.certificate() {
            Some(_) => Some(free_port().map_err(|e| format!("no free port: {e}"))?),
            None => None,
        };
        let tls = work.certificate().zip(tls_port).map(|(c, port)| TlsListen {
            port,
            cert: &c.cert,
            key: &c.key,
        });
        let own = backends.start_own(&spec.features, &dir)?;
        let gateways = spec
            .features
            .iter()
            .map(|&f| {
                backends
                    .gateway(f, &spec.kind, &own)
                    .ok_or_else(|| format!("nothing here serves {} for {}", f.label(), spec.name()))
            })
            .collect::<Result<Vec<Gateway<'_>>, String>>()?;
        let launch = launch(spec, program, &dir, work.docroot(), (port, tls), &gateways)?;
        let cpu = spec
            .features
            .iter()
            .filter_map(|&f| {
                let b = own.get(f).or_else(|| backends.shared(f, &spec.kind))?;
                Some((f, b.name(), b.pid()))
            })
            .collect();
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
            tls: work
                .certificate()
                .zip(tls_port)
                .map(|(c, port)| (port, c.ca.clone())),
            child: Some(child),
            log,
            own,
            backends: cpu,
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

    /// Its TLS port and the CA file to trust, when the run has TLS rows.
    pub fn tls(&self) -> Option<(u16, &Path)> {
        self.tls.as_ref().map(|(port, ca)| (*port, ca.as_path()))
    }

    /// Process id of the server's main process (also its process group).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Whose CPU is the server's in the rows of `feature`: its process
    /// tree, and the trees of the backends it uses for them.
    pub fn cpu_roots(&self, feature: Feature) -> Vec<u32> {
        let mut roots = vec![self.pid()];
        roots.extend(
            self.backends
                .iter()
                .filter(|(f, _, _)| *f == feature)
                .map(|(_, _, pid)| *pid),
        );
        roots
    }

    /// The backends it uses, by name and process id (its own, stopped with
    /// it, and nginx's fcgiwrap).
    pub fn backends(&self) -> Vec<(&'static str, u32)> {
        self.backends
            .iter()
            .map(|(_, name, pid)| (*name, *pid))
            .collect()
    }

    /// The server is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let ports = [Some(self.port), self.tls.as_ref().map(|t| t.0)];
        let began = Instant::now();
        while began.elapsed() < START_TIMEOUT {
            if !self.is_running() {
                let note = format!("{} exited at start: {}", self.spec.name(), self.log_tail());
                self.stop();
                return Err(note);
            }
            let accepts = |port: u16| {
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            };
            if ports.iter().flatten().all(|&p| accepts(p)) {
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

    /// Stops the server's process group: TERM, then KILL after 5 s; reaps
    /// it; then its own backends.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            stop_group(child);
        }
        self.own.stop();
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Writes the config of `spec` into `dir` and says how to start it.
fn launch(
    spec: &ServerSpec,
    program: &Path,
    dir: &Path,
    docroot: &Path,
    (port, tls): (u16, Option<TlsListen<'_>>),
    gateways: &[Gateway<'_>],
) -> Result<Launch, String> {
    match &spec.kind {
        ServerKind::Tern { binary } => {
            let conf = dir.join("tern.toml");
            std::fs::write(&conf, tern_config(docroot, port, tls, gateways))
                .map_err(|e| format!("writing {}: {e}", conf.display()))?;
            let mut args = vec![
                "serve".to_owned(),
                "--config".to_owned(),
                conf.display().to_string(),
            ];
            if spec.cache == Some(CacheMode::Off) {
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
                cache: spec.cache,
                user: RunAs::for_this_process(),
                gateways,
                tls,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_exits_at_once_is_a_note_and_leaves_nothing() {
        let work = Workdir::create(&[], None).unwrap();
        let spec = ServerSpec {
            kind: ServerKind::Tern {
                binary: "/bin/false".into(),
            },
            cache: None,
            features: vec![],
        };
        let none = Backends::default();
        let err = RunningServer::start(&spec, Path::new("/bin/false"), &work, &none).unwrap_err();
        assert!(err.contains("exited at start"), "{err}");
        let spec = ServerSpec {
            kind: ServerKind::Tern {
                binary: "/nonexistent/tern".into(),
            },
            cache: None,
            features: vec![],
        };
        let err =
            RunningServer::start(&spec, Path::new("/nonexistent/tern"), &work, &none).unwrap_err();
        assert!(err.contains("cannot start"), "{err}");
        // A backend that cannot be had is a note before anything starts.
        let spec = ServerSpec {
            features: vec![Feature::PhpFpm],
            ..spec
        };
        let err =
            RunningServer::start(&spec, Path::new("/nonexistent/tern"), &work, &none).unwrap_err();
        assert_eq!(err, "no php-fpm");
    }
}
