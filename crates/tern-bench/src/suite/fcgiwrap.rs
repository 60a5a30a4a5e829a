//! fcgiwrap, nginx's way to CGI: started once for all nginx variants on a
//! Unix socket in the suite's directory, in its own process group, and
//! stopped by that group at the end (also when dropped). Like
//! `bench/peers.sh`, it runs under `spawn-fcgi -n` when that is installed
//! (which binds the socket with mode 0666 and drops to the peers' user when
//! the suite runs as root), else as `fcgiwrap -s unix:PATH` with the socket
//! opened up to 0666 once it appears, so that nginx's workers can connect.

use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::peer::RunAs;
use super::server::stop_group;

/// fcgiwrap's worker processes (`bench/peers.sh`'s FCGI_PROCS).
pub const WORKERS: u32 = 4;

/// How long fcgiwrap may take to accept on its socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// The programs that start fcgiwrap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FcgiwrapPrograms {
    /// fcgiwrap itself.
    pub fcgiwrap: PathBuf,
    /// spawn-fcgi, when installed.
    pub spawn_fcgi: Option<PathBuf>,
}

impl FcgiwrapPrograms {
    /// Looks for both in `search`; `None` without fcgiwrap.
    pub fn find(search: &[PathBuf]) -> Option<FcgiwrapPrograms> {
        let find = |name: &str| search.iter().map(|d| d.join(name)).find(|p| p.is_file());
        Some(FcgiwrapPrograms {
            fcgiwrap: find("fcgiwrap")?,
            spawn_fcgi: find("spawn-fcgi"),
        })
    }

    /// The command line: (program, arguments).
    fn command(&self, socket: &Path, user: Option<&RunAs>) -> (PathBuf, Vec<String>) {
        let workers = WORKERS.to_string();
        match &self.spawn_fcgi {
            Some(spawn) => {
                let mut args = vec![
                    "-n".to_owned(),
                    "-s".to_owned(),
                    socket.display().to_string(),
                    "-M".to_owned(),
                    "0666".to_owned(),
                ];
                if let Some(u) = user {
                    args.extend(["-u".to_owned(), u.user.clone()]);
                    args.extend(["-g".to_owned(), u.group.clone()]);
                }
                args.extend([
                    "--".to_owned(),
                    self.fcgiwrap.display().to_string(),
                    "-c".to_owned(),
                    workers,
                ]);
                (spawn.clone(), args)
            }
            None => (
                self.fcgiwrap.clone(),
                vec![
                    "-c".to_owned(),
                    workers,
                    "-s".to_owned(),
                    format!("unix:{}", socket.display()),
                ],
            ),
        }
    }
}

/// A running fcgiwrap. Dropping it stops it.
#[derive(Debug)]
pub struct Fcgiwrap {
    child: Option<Child>,
    socket: PathBuf,
    log: PathBuf,
}

impl Fcgiwrap {
    /// Starts fcgiwrap with its socket and log in `dir` and waits until it
    /// accepts. The error is a note for the report.
    pub fn start(
        programs: &FcgiwrapPrograms,
        dir: &Path,
        user: Option<&RunAs>,
    ) -> Result<Fcgiwrap, String> {
        let socket = dir.join("fcgiwrap.sock");
        let log = dir.join("fcgiwrap.log");
        let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let (program, args) = programs.command(&socket, user);
        let child = Command::new(&program)
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let mut f = Fcgiwrap {
            child: Some(child),
            socket,
            log,
        };
        f.wait_ready(programs.spawn_fcgi.is_none())?;
        Ok(f)
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
                let note = format!("fcgiwrap exited at start: {}", text.trim());
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
            "fcgiwrap did not accept on {} within {START_TIMEOUT:?}",
            self.socket.display()
        ))
    }

    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Process id of fcgiwrap's main process (also its process group).
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

impl Drop for Fcgiwrap {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_follow_peers_sh() {
        let with_spawn = FcgiwrapPrograms {
            fcgiwrap: "/usr/sbin/fcgiwrap".into(),
            spawn_fcgi: Some("/usr/bin/spawn-fcgi".into()),
        };
        let user = RunAs {
            user: "www-data".into(),
            group: "www-data".into(),
        };
        let (p, args) = with_spawn.command(Path::new("/w/f.sock"), Some(&user));
        assert_eq!(p, Path::new("/usr/bin/spawn-fcgi"));
        assert_eq!(
            args.join(" "),
            "-n -s /w/f.sock -M 0666 -u www-data -g www-data -- /usr/sbin/fcgiwrap -c 4"
        );
        let bare = FcgiwrapPrograms {
            spawn_fcgi: None,
            ..with_spawn
        };
        let (p, args) = bare.command(Path::new("/w/f.sock"), None);
        assert_eq!(p, Path::new("/usr/sbin/fcgiwrap"));
        assert_eq!(args.join(" "), "-c 4 -s unix:/w/f.sock");
    }

    #[test]
    fn starts_accepts_and_stops_or_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let missing = FcgiwrapPrograms {
            fcgiwrap: "/nonexistent/fcgiwrap".into(),
            spawn_fcgi: None,
        };
        let err = Fcgiwrap::start(&missing, dir.path(), None).unwrap_err();
        assert!(err.contains("cannot start"), "{err}");
        let Some(programs) = FcgiwrapPrograms::find(&super::super::default_search_path()) else {
            return; // not installed: the error path above is what the suite sees
        };
        let mut f = Fcgiwrap::start(&programs, dir.path(), None).unwrap();
        let pid = f.pid();
        assert!(UnixStream::connect(f.socket()).is_ok());
        f.stop();
        let alive = fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "));
        assert!(!alive, "fcgiwrap {pid} still runs");
    }
}
