//! The C FastCGI responder of the "persistent" and "wasm" rows
//! (`fixtures/fcgi-app.c`, `bench/peers.sh`'s fcgi-app.c): libfcgi's
//! fcgiapp API, "Hello!" or, when the request URI holds "64k", 65536
//! bytes. Built with `cc -O2 ... -lfcgi` (libfcgi-dev) into the suite's
//! `bin/`, it runs two ways: as a [`crate::backend`] of one server,
//! [`PROCESSES`] processes sharing one Unix socket (the suite binds the
//! socket and hands it over as fd 0, as `spawn-fcgi` would; the program
//! forks the others after FCGX_Init), and as the program tern spawns
//! itself, one process per socket.

use std::path::{Path, PathBuf};

use crate::backend::{BackendLaunch, Listen};
use crate::workdir::Workdir;

/// Processes of a server's responder (`bench/peers.sh`'s FCGI_PROCS); tern
/// connects to it with as many connections, and spawns as many of its own.
pub const PROCESSES: u32 = 4;

/// libfcgi's header; without it (no libfcgi-dev) the FastCGI rows are
/// skipped with a note.
pub const HEADER: &str = "/usr/include/fcgiapp.h";

/// The responder's source.
pub const SOURCE: &str = include_str!("fixtures/fcgi-app.c");

/// Builds the responder into the suite's `bin/`; the error is a note.
pub fn build(work: &Workdir) -> Result<PathBuf, String> {
    if !Path::new(HEADER).is_file() {
        return Err(format!("no {HEADER} (libfcgi-dev not installed)"));
    }
    work.build_program("fcgi-app", SOURCE, &["-lfcgi"])
}

/// How to start a server's responder with its socket in `dir`.
pub fn launch(program: &Path, dir: &Path) -> BackendLaunch {
    BackendLaunch {
        name: "fcgi-app",
        program: program.to_owned(),
        args: vec![],
        env: vec![("FCGI_WORKERS".to_owned(), PROCESSES.to_string())],
        socket: dir.join("fcgi-app.sock"),
        listen: Listen::Inherits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;

    /// The processes of a process group.
    fn group_members(pgid: u32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                let after = &stat[stat.rfind(')').unwrap() + 2..];
                let fields: Vec<&str> = after.split(' ').collect();
                fields[0] != "Z" && fields[2] == pgid.to_string()
            })
            .count()
    }

    #[test]
    fn the_responder_runs_its_processes_on_the_socket_it_is_given() {
        let launch = launch(Path::new("/w/bin/fcgi-app"), Path::new("/w"));
        assert_eq!(launch.socket, Path::new("/w/fcgi-app.sock"));
        assert_eq!(launch.listen, Listen::Inherits);
        assert_eq!(launch.env, [("FCGI_WORKERS".to_owned(), "4".to_owned())]);

        let cc = crate::default_search_path()
            .into_iter()
            .map(|d| d.join("cc"))
            .find(|p| p.is_file());
        let work = Workdir::create(&[], cc.as_deref()).unwrap();
        let program = match build(&work) {
            Ok(p) => p,
            Err(note) => {
                // Without libfcgi-dev or a compiler the rows are skipped with this.
                assert!(
                    note.contains("libfcgi-dev") || note.contains("cc"),
                    "{note}"
                );
                return;
            }
        };
        let mut app = Backend::start(&super::launch(&program, work.path()), work.path()).unwrap();
        let began = std::time::Instant::now();
        while group_members(app.pid()) < PROCESSES as usize
            && began.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(group_members(app.pid()), PROCESSES as usize);
        let pid = app.pid();
        app.stop();
        assert_eq!(group_members(pid), 0, "stopped as a group");
    }
}
