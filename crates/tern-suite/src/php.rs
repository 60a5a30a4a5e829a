//! PHP for the "engines" rows: php-fpm, a [`crate::backend`] started for
//! each server that uses it, with the config `bench/peers.sh` gives it (pm = static with
//! [`FPM_CHILDREN`] children, a Unix socket open to all, the environment
//! cleared), and php-cgi, which servers run as a CGI program per request.
//! Both are looked for in the search path (php-fpm under its versioned
//! Debian name, `php-fpm8.2`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::backend::{BackendLaunch, Listen};
use crate::process::{find_program, RunAs};

/// php-fpm's children (`pm.max_children`, `bench/peers.sh`'s FCGI_PROCS);
/// tern connects with as many connections.
pub const FPM_CHILDREN: u32 = 4;

/// The newest php-fpm in `search`: `php-fpm`, or a versioned `php-fpm8.2`.
pub fn find_fpm(search: &[PathBuf]) -> Option<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = Vec::new();
    for dir in search {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(version) = name.strip_prefix("php-fpm") else {
                continue;
            };
            let numbers: Option<Vec<u32>> = if version.is_empty() {
                Some(Vec::new())
            } else {
                version.split('.').map(|n| n.parse().ok()).collect()
            };
            if let (Some(numbers), true) = (numbers, e.path().is_file()) {
                found.push((numbers, e.path()));
            }
        }
    }
    // The highest version; a plain `php-fpm` only when there is no other.
    found
        .into_iter()
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p)| p)
}

/// php-cgi in `search`.
pub fn find_cgi(search: &[PathBuf]) -> Option<PathBuf> {
    find_program(search, "php-cgi")
}

/// php-fpm's config: its pid file, log and socket in `dir`; its children
/// as `user` when the suite runs as root.
pub fn fpm_config(dir: &Path, user: Option<&RunAs>) -> String {
    let d = dir.display();
    let mut t = String::new();
    let _ = writeln!(t, "[global]");
    let _ = writeln!(t, "pid = {d}/php-fpm.pid");
    let _ = writeln!(t, "error_log = {d}/php-fpm-error.log");
    let _ = writeln!(t, "daemonize = no");
    let _ = writeln!(t, "[suite]");
    if let Some(u) = user {
        let _ = writeln!(t, "user = {}\ngroup = {}", u.user, u.group);
    }
    let _ = writeln!(t, "listen = {d}/php-fpm.sock");
    let _ = writeln!(t, "listen.mode = 0666");
    let _ = writeln!(t, "listen.backlog = 1024");
    let _ = writeln!(t, "pm = static");
    let _ = writeln!(t, "pm.max_children = {FPM_CHILDREN}");
    let _ = writeln!(t, "pm.max_requests = 0");
    let _ = writeln!(t, "clear_env = yes");
    t
}

/// Writes php-fpm's config into `dir` and says how to start it in the
/// foreground (`-F`; `-R` when root, which php-fpm asks for before it runs
/// as root at all).
pub fn fpm_launch(
    program: &Path,
    dir: &Path,
    user: Option<&RunAs>,
) -> Result<BackendLaunch, String> {
    let conf = dir.join("php-fpm.conf");
    std::fs::write(&conf, fpm_config(dir, user))
        .map_err(|e| format!("writing {}: {e}", conf.display()))?;
    let mut args = vec!["-F".to_owned(), "-y".to_owned(), conf.display().to_string()];
    if user.is_some() {
        args.push("-R".to_owned());
    }
    Ok(BackendLaunch {
        name: "php-fpm",
        program: program.to_owned(),
        args,
        env: vec![],
        socket: dir.join("php-fpm.sock"),
        listen: Listen::Binds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn finds_the_newest_fpm_and_php_cgi() {
        let dir = tempfile::tempdir().unwrap();
        let search = vec![dir.path().to_owned()];
        assert_eq!(find_fpm(&search), None);
        for name in [
            "php-fpm",
            "php-fpm7.4",
            "php-fpm8.2",
            "php-fpm8.10",
            "php-fpmx",
            "php-cgi",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("php-fpm9.0")).unwrap();
        assert_eq!(find_fpm(&search), Some(dir.path().join("php-fpm8.10")));
        assert_eq!(find_cgi(&search), Some(dir.path().join("php-cgi")));
    }

    #[test]
    fn fpm_runs_as_configured_and_stops() {
        let user = RunAs {
            user: "www-data".into(),
            group: "www-data".into(),
        };
        let t = fpm_config(Path::new("/w"), Some(&user));
        for line in [
            "listen = /w/php-fpm.sock\n",
            "pm = static\n",
            "pm.max_children = 4\n",
            "user = www-data\n",
            "clear_env = yes\n",
            "daemonize = no\n",
        ] {
            assert!(t.contains(line), "{line}: {t}");
        }
        assert!(!fpm_config(Path::new("/w"), None).contains("user ="));

        let Some(fpm) = find_fpm(&crate::default_search_path()) else {
            return; // not installed: the rows are skipped with a note
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let user = RunAs::for_this_process();
        let launch = fpm_launch(&fpm, dir.path(), user.as_ref()).unwrap();
        assert_eq!(launch.args.contains(&"-R".to_owned()), user.is_some());
        let mut b = Backend::start(&launch, dir.path()).unwrap();
        let mode = std::fs::metadata(b.socket()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
        let pid = b.pid();
        b.stop();
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "));
        assert!(!alive, "php-fpm {pid} still runs");
    }
}
