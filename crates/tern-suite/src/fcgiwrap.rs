//! fcgiwrap, nginx's way to CGI: a [`crate::backend`] started once for all
//! nginx variants on a Unix socket in the suite's directory. Like
//! `bench/peers.sh`, it runs under `spawn-fcgi -n` when that is installed
//! (which binds the socket with mode 0666 and drops to the peers' user when
//! the suite runs as root), else as `fcgiwrap -s unix:PATH` with the socket
//! opened up to 0666 once it appears, so that nginx's workers can connect.

use std::path::{Path, PathBuf};

use crate::backend::{BackendLaunch, Listen};
use crate::process::{find_program, RunAs};

/// fcgiwrap's worker processes (`bench/peers.sh`'s FCGI_PROCS).
pub const WORKERS: u32 = 4;

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
        Some(FcgiwrapPrograms {
            fcgiwrap: find_program(search, "fcgiwrap")?,
            spawn_fcgi: find_program(search, "spawn-fcgi"),
        })
    }

    /// How to start it with its socket in `dir`.
    pub fn launch(&self, dir: &Path, user: Option<&RunAs>) -> BackendLaunch {
        let socket = dir.join("fcgiwrap.sock");
        let (program, args) = self.command(&socket, user);
        BackendLaunch {
            name: "fcgiwrap",
            program,
            args,
            env: vec![],
            socket,
            listen: if self.spawn_fcgi.is_some() {
                Listen::Binds
            } else {
                Listen::BindsPrivately
            },
        }
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
        use crate::backend::Backend;
        use std::os::unix::net::UnixStream;

        let dir = tempfile::tempdir().unwrap();
        let missing = FcgiwrapPrograms {
            fcgiwrap: "/nonexistent/fcgiwrap".into(),
            spawn_fcgi: None,
        };
        let launch = missing.launch(dir.path(), None);
        assert_eq!(launch.listen, Listen::BindsPrivately);
        let err = Backend::start(&launch, dir.path()).unwrap_err();
        assert!(err.contains("cannot start"), "{err}");
        let Some(programs) = FcgiwrapPrograms::find(&crate::default_search_path()) else {
            return; // not installed: the error path above is what the suite sees
        };
        let mut f = Backend::start(&programs.launch(dir.path(), None), dir.path()).unwrap();
        let pid = f.pid();
        assert!(UnixStream::connect(f.socket()).is_ok());
        f.stop();
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "));
        assert!(!alive, "fcgiwrap {pid} still runs");
    }
}
