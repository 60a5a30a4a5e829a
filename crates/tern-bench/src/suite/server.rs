//! Servers under test: tern or a peer, in a cache variant. Each is started in
//! the foreground on a free loopback port, in its own process group, with its
//! output in its log file; the suite waits until it accepts connections,
//! measures its process tree, and stops it by process group (TERM, then KILL
//! after 5 s). [`RunningServer`] stops its server when dropped, so an error
//! or a panic in the suite never leaves a server behind.
//!
//! tern runs from a config file the suite writes ([`tern_config`]): the
//! docroot as its one site and a route for each gateway its rows need
//! (`/cgi-bin` as CGI, `/cgiplus-bin` as CGIplus, FastCGI to a responder
//! the suite started for it and to processes it runs itself, the Perl
//! engine, php-fpm, php-cgi).
//! The suite depends on no server crate, so the file is plain TOML in
//! tern's documented format.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

use super::fcgi_app;
use super::gateway::{Backends, Gateway, OwnBackends};
use super::peer::{CgiGateway, Launch, PeerKind, PeerSetup, RunAs};
use super::php::FPM_CHILDREN;
use super::row::{wasm_module_path, CacheMode, Feature, RowSpec, WASM_MODULES};
use super::workdir::Workdir;

/// Which server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerKind {
    /// tern, started as `BINARY serve --config FILE [--no-cache]` with a
    /// config from [`tern_config`].
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
    /// The gateway features it is set up with (so it takes their rows).
    pub features: Vec<Feature>,
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
        feature == Feature::StaticFiles || self.features.contains(&feature)
    }

    /// Whether this variant takes part in `row`.
    pub fn serves(&self, row: &RowSpec) -> bool {
        self.offers(row.needs)
            && match row.cache {
                CacheMode::On => self.cache != Some(CacheMode::Off),
                CacheMode::Off => self.cache == Some(CacheMode::Off),
            }
    }

    /// Whether a server of `kind` can be set up to serve `feature` (tern:
    /// everything; peers: see [`PeerKind::offers`]).
    pub fn can_offer(kind: &ServerKind, feature: Feature) -> bool {
        match kind {
            ServerKind::Tern { .. } => true,
            ServerKind::Peer(p) => p.offers(feature),
        }
    }

    /// How it runs CGI, for notes (`None` for tern and servers without CGI).
    pub fn cgi_gateway(&self) -> Option<CgiGateway> {
        match &self.kind {
            ServerKind::Peer(p) if self.offers(Feature::Cgi) => p.cgi_gateway(),
            _ => None,
        }
    }

    /// The variants to run for a server kind: two with a cache knob, else
    /// one; all without gateways (see [`ServerSpec::with_features`]).
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
                    features: Vec::new(),
                },
                ServerSpec {
                    kind,
                    cache: Some(CacheMode::Off),
                    features: Vec::new(),
                },
            ]
        } else {
            vec![ServerSpec {
                kind,
                cache: None,
                features: Vec::new(),
            }]
        }
    }

    /// The same variant set up with those of `available` it can offer,
    /// when it takes the cache-on rows (gateway rows are all cache-on; the
    /// cache-off variants stay as plain as the static rows want them).
    pub fn with_features(mut self, available: &[Feature]) -> ServerSpec {
        self.features = if self.cache == Some(CacheMode::Off) {
            Vec::new()
        } else {
            available
                .iter()
                .copied()
                .filter(|&f| f != Feature::StaticFiles && ServerSpec::can_offer(&self.kind, f))
                .collect()
        };
        self
    }

    fn launch(
        &self,
        program: &Path,
        dir: &Path,
        docroot: &Path,
        port: u16,
        gateways: &[Gateway<'_>],
    ) -> Result<Launch, String> {
        match &self.kind {
            ServerKind::Tern { binary } => {
                let conf = dir.join("tern.toml");
                std::fs::write(&conf, tern_config(docroot, port, gateways))
                    .map_err(|e| format!("writing {}: {e}", conf.display()))?;
                let mut args = vec![
                    "serve".to_owned(),
                    "--config".to_owned(),
                    conf.display().to_string(),
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
                    gateways,
                },
            ),
        }
    }
}

/// tern's config for the suite: one listener on 127.0.0.1:`port`, the
/// docroot as the one site, and a route for each gateway. Script
/// directories are the docroot's directories named after the prefixes.
/// Pools match the backends: as many connections to the FastCGI
/// responder and php-fpm as they have processes, as many processes of its
/// own for the spawned responder and the Perl engine; CGIplus scripts
/// start one process each and grow to as many on demand.
pub fn tern_config(docroot: &Path, port: u16, gateways: &[Gateway<'_>]) -> String {
    let path = |p: &Path| toml_string(&p.display().to_string());
    let scripts = |f: Feature| path(&docroot.join(&f.prefix()[1..]));
    let mut t = format!(
        "[[listen]]\naddress = \"127.0.0.1:{port}\"\n\n[[site]]\nroot = {}\n",
        path(docroot)
    );
    for g in gateways {
        let f = g.feature();
        if let Gateway::Wasm = g {
            // A wasm route runs one module: a route per module.
            for stem in WASM_MODULES {
                t.push_str(&format!(
                    "\n[[site.route]]\nprefix = \"{}/{stem}\"\nhandler = \"wasm\"\nmodule = {}\n",
                    f.prefix(),
                    path(&docroot.join(wasm_module_path(stem)))
                ));
            }
            continue;
        }
        t.push_str("\n[[site.route]]\n");
        if f == Feature::PhpFpm {
            // Every *.php but php-cgi's, whose prefix wins over an extension.
            t.push_str("extension = \"php\"\n");
        } else {
            t.push_str(&format!("prefix = \"{}\"\n", f.prefix()));
        }
        t.push_str(&match *g {
            Gateway::Cgi { .. } => format!("handler = \"cgi\"\ndir = {}\n", scripts(f)),
            Gateway::CgiPlus => format!(
                "handler = \"cgiplus\"\ndir = {}\nmin_processes = 1\nmax_processes = {}\n",
                scripts(f),
                fcgi_app::PROCESSES
            ),
            Gateway::FastCgi { socket } => format!(
                "handler = \"fastcgi\"\nconnect = {}\nmax_connections = {}\n",
                toml_string(&format!("unix:{}", socket.display())),
                fcgi_app::PROCESSES
            ),
            Gateway::FastCgiSpawned { program } => format!(
                "handler = \"fastcgi\"\ncommand = [{}]\nenv = {{ FCGI_WORKERS = \"1\" }}\nmin_processes = {n}\nmax_processes = {n}\n",
                path(program),
                n = fcgi_app::PROCESSES
            ),
            Gateway::PerlEngine => format!(
                "handler = \"cgiplus\"\nengine = \"perl\"\ndir = {}\nmin_processes = {n}\nmax_processes = {n}\n",
                scripts(f),
                n = fcgi_app::PROCESSES
            ),
            Gateway::PhpFpm { socket } => format!(
                "handler = \"fastcgi\"\nconnect = {}\ndir = {}\nmax_connections = {FPM_CHILDREN}\n",
                toml_string(&format!("unix:{}", socket.display())),
                path(docroot)
            ),
            Gateway::PhpCgi { program } => format!(
                "handler = \"cgi\"\ndir = {}\ninterpreter = {}\n",
                scripts(f),
                path(program)
            ),
            // Written above.
            Gateway::Wasm => String::new(),
        });
    }
    t
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A started server. Dropping it stops it.
#[derive(Debug)]
pub struct RunningServer {
    spec: ServerSpec,
    port: u16,
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
/// How long a server may take to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

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
        let launch = spec.launch(program, &dir, work.docroot(), port, &gateways)?;
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

    /// Stops the server's process group: TERM, then KILL after 5 s; reaps
    /// it; then its own backends.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            stop_group(child);
        }
        self.own.stop();
    }
}

/// Stops the process group led by `child`: TERM, then KILL after 5 s; reaps
/// the leader.
pub(super) fn stop_group(mut child: Child) {
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
        assert!(tern.iter().chain(&caddy).all(|s| s.features.is_empty()));
        assert_eq!(caddy.len(), 1);
        let mut row = super::super::row::Registry::seed().rows()[0].clone();
        row.cache = CacheMode::Off;
        assert!(tern[1].serves(&row) && !tern[0].serves(&row) && !caddy[0].serves(&row));
        row.cache = CacheMode::On;
        assert!(tern[0].serves(&row) && !tern[1].serves(&row) && caddy[0].serves(&row));
    }

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

    #[test]
    fn gateways_go_to_cache_on_variants_of_servers_that_offer_them() {
        let seed = super::super::row::Registry::seed();
        let cgi_row = seed
            .rows()
            .iter()
            .find(|r| r.needs == Feature::Cgi)
            .unwrap();
        let tern: Vec<ServerSpec> = ServerSpec::variants(ServerKind::Tern {
            binary: "/x/tern".into(),
        })
        .into_iter()
        .map(|s| s.with_features(&Feature::GATEWAYS))
        .collect();
        assert_eq!(tern[0].features, Feature::GATEWAYS, "tern offers all");
        assert!(tern[1].features.is_empty(), "cache off stays static");
        assert!(tern[0].serves(cgi_row) && !tern[1].serves(cgi_row));
        assert_eq!(tern[0].cgi_gateway(), None);
        let h2o = ServerSpec::variants(ServerKind::Peer(PeerKind::H2o))
            .remove(0)
            .with_features(&Feature::GATEWAYS);
        assert!(!h2o.serves(cgi_row), "h2o has no CGI");
        assert_eq!(h2o.features, [Feature::FastCgi, Feature::PhpFpm]);
        let apache = ServerSpec::variants(ServerKind::Peer(PeerKind::Apache2))
            .remove(0)
            .with_features(&[Feature::Cgi, Feature::CgiPlus]);
        assert!(apache.serves(cgi_row));
        assert_eq!(apache.features, [Feature::Cgi], "CGIplus is tern's");
        assert_eq!(apache.cgi_gateway(), Some(CgiGateway::ModCgid));
        let plain = apache.clone().with_features(&[]);
        assert!(!plain.serves(cgi_row));
    }

    #[test]
    fn tern_config_has_the_site_and_the_cgi_route() {
        let cgi = [Gateway::Cgi { fcgiwrap: None }];
        let t = tern_config(Path::new("/tmp/s \"q\"/www"), 18081, &cgi);
        assert_eq!(
            t,
            "[[listen]]\naddress = \"127.0.0.1:18081\"\n\n[[site]]\nroot = \"/tmp/s \\\"q\\\"/www\"\n\n\
             [[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"/tmp/s \\\"q\\\"/www/cgi-bin\"\n"
        );
        assert!(!tern_config(Path::new("/w"), 1, &[]).contains("site.route"));
    }

    #[test]
    fn tern_config_routes_every_persistent_gateway() {
        let gateways = [
            Gateway::CgiPlus,
            Gateway::FastCgi {
                socket: Path::new("/s/fcgi-app.sock"),
            },
            Gateway::FastCgiSpawned {
                program: Path::new("/s/bin/fcgi-app"),
            },
            Gateway::PerlEngine,
            Gateway::PhpFpm {
                socket: Path::new("/s/php-fpm.sock"),
            },
            Gateway::PhpCgi {
                program: Path::new("/usr/bin/php-cgi"),
            },
            Gateway::Wasm,
        ];
        let t = tern_config(Path::new("/w"), 1, &gateways);
        let routes: Vec<&str> = t.split("\n[[site.route]]\n").skip(1).collect();
        assert_eq!(
            routes,
            [
                "prefix = \"/cgiplus-bin\"\nhandler = \"cgiplus\"\ndir = \"/w/cgiplus-bin\"\nmin_processes = 1\nmax_processes = 4\n",
                "prefix = \"/fcgi\"\nhandler = \"fastcgi\"\nconnect = \"unix:/s/fcgi-app.sock\"\nmax_connections = 4\n",
                "prefix = \"/fcgi-spawn\"\nhandler = \"fastcgi\"\ncommand = [\"/s/bin/fcgi-app\"]\nenv = { FCGI_WORKERS = \"1\" }\nmin_processes = 4\nmax_processes = 4\n",
                "prefix = \"/rte\"\nhandler = \"cgiplus\"\nengine = \"perl\"\ndir = \"/w/rte\"\nmin_processes = 4\nmax_processes = 4\n",
                "extension = \"php\"\nhandler = \"fastcgi\"\nconnect = \"unix:/s/php-fpm.sock\"\ndir = \"/w\"\nmax_connections = 4\n",
                "prefix = \"/phpcgi\"\nhandler = \"cgi\"\ndir = \"/w/phpcgi\"\ninterpreter = \"/usr/bin/php-cgi\"\n",
                "prefix = \"/wasm/hello\"\nhandler = \"wasm\"\nmodule = \"/w/wasm/hello.wat\"\n",
                "prefix = \"/wasm/64k\"\nhandler = \"wasm\"\nmodule = \"/w/wasm/64k.wat\"\n",
            ]
        );
    }
}
