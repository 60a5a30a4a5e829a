//! Private directories for FastCGI workers' listening sockets, all in one
//! directory per run of tern, so that whatever tern could not remove (it
//! was killed) is one directory named after its pid.

use std::hash::{BuildHasher as _, RandomState};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A directory only tern's user can enter (mode 0700), holding the Unix
/// sockets a pool's workers listen on (h2o's `fastcgi.spawn` does the
/// same). Removed, with its sockets, by [`SocketDir::remove`] (a pool
/// calls it as it closes, while its workers are still being stopped) or
/// when dropped.
///
/// Made by [`SocketDir::new`], it lies in this run's directory,
/// `<tmp>/tern-<pid>-<random>/`, made with the first such directory and
/// removed with the last; [`remove_run_dir`] removes it whatever it holds,
/// for a process about to exit with pools still draining.
#[derive(Debug)]
pub struct SocketDir {
    path: PathBuf,
    /// The run's directory it lies in (made by `new`), to leave when removed.
    run: Option<PathBuf>,
    /// Removed: nothing is bound in it any more. Binding and removing
    /// take this lock, so that no socket appears in a directory being
    /// removed.
    removed: Mutex<bool>,
}

/// Tells apart the directories of one tern process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A Unix socket path holds at most 107 bytes: keep the pool's part short.
const NAME_MAX: usize = 24;

/// This run's directory of socket directories, while one exists.
#[derive(Debug)]
struct Run {
    path: PathBuf,
    /// Socket directories in it not yet removed.
    dirs: usize,
}

static RUN: Mutex<Option<Run>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SocketDir {
    /// Creates `<pool>-<n>` in this run's directory of the system's temp
    /// directory (`tern-<pid>-<random>`, made now if there is none).
    pub fn new(pool: &str) -> io::Result<Self> {
        let mut run = lock(&RUN);
        if run.is_none() {
            *run = Some(Run {
                path: make_run_dir(&std::env::temp_dir())?,
                dirs: 0,
            });
        }
        let current = run.as_mut().expect("made above");
        match make_dir(&current.path, &sanitise(pool)) {
            Ok(path) => {
                current.dirs += 1;
                Ok(Self {
                    path,
                    run: Some(current.path.clone()),
                    removed: Mutex::new(false),
                })
            }
            Err(err) => {
                if current.dirs == 0 {
                    let _ = std::fs::remove_dir(&current.path);
                    *run = None;
                }
                Err(err)
            }
        }
    }

    /// Creates `tern-<pool>-<pid>-<n>` in `base`. The name is sanitised
    /// (letters, digits, `-` and `_`) and shortened.
    pub fn new_in(base: &Path, pool: &str) -> io::Result<Self> {
        let name = format!("tern-{}-{}", sanitise(pool), std::process::id());
        Ok(Self {
            path: make_dir(base, &name)?,
            run: None,
            removed: Mutex::new(false),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Binds `<n>.sock` in the directory (replacing a socket left there by
    /// a worker that was replaced), returning the blocking, close-on-exec
    /// listener, to pass to a worker as its fd 0, and its path, to connect to.
    /// Fails once the directory is removed.
    pub fn bind(&self, n: usize) -> io::Result<(UnixListener, PathBuf)> {
        let removed = lock(&self.removed);
        if *removed {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the socket directory was removed (its pool is closing)",
            ));
        }
        let path = self.path.join(format!("{n}.sock"));
        match std::fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        let listener = UnixListener::bind(&path)?;
        Ok((listener, path))
    }

    /// Removes the directory and its sockets, and the run's directory if
    /// it was the last in it. Workers listening keep their sockets; nobody
    /// can connect to them by name any more. Idempotent.
    pub fn remove(&self) {
        let mut removed = lock(&self.removed);
        if std::mem::replace(&mut *removed, true) {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
        if let Some(parent) = &self.run {
            let mut run = lock(&RUN);
            if let Some(current) = run.as_mut().filter(|r| r.path == *parent) {
                current.dirs -= 1;
                if current.dirs == 0 {
                    let _ = std::fs::remove_dir(&current.path);
                    *run = None;
                }
            }
        }
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes this run's directory of sockets with everything in it: for a
/// process about to exit whose pools may still be stopping their workers
/// (they need no socket's name for that). A pool that makes a worker after
/// this fails to (its directory is gone); a later [`SocketDir::new`] makes
/// a new run directory.
pub fn remove_run_dir() {
    if let Some(run) = lock(&RUN).take() {
        let _ = std::fs::remove_dir_all(&run.path);
    }
}

/// Letters, digits, `-` and `_` of `pool`, at most [`NAME_MAX`] of them.
fn sanitise(pool: &str) -> String {
    pool.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(NAME_MAX)
        .collect()
}

/// Makes `<base>/<name>-<n>`, mode 0700. A name taken by someone else
/// (EEXIST) is skipped, never reused: the directory must be one this call
/// created, with its mode.
fn make_dir(base: &Path, name: &str) -> io::Result<PathBuf> {
    make_new_dir(base, |n| format!("{name}-{n}"))
}

/// Makes `<base>/tern-<pid>-<random>`, mode 0700.
fn make_run_dir(base: &Path) -> io::Result<PathBuf> {
    let pid = std::process::id();
    make_new_dir(base, |n| {
        let random = RandomState::new().hash_one(n) as u32;
        format!("tern-{pid}-{random:08x}")
    })
}

/// Makes a directory below `base`, mode 0700, named by `name` from a
/// fresh number; a name that exists already is passed over, never used.
fn make_new_dir(base: &Path, name: impl Fn(u64) -> String) -> io::Result<PathBuf> {
    for _ in 0..100 {
        let path = base.join(name(NEXT.fetch_add(1, Ordering::Relaxed)));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for a socket directory",
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode()
    }

    #[test]
    fn the_directory_is_private_and_removed_on_drop() {
        let base = tempfile::tempdir().unwrap();
        let dir = SocketDir::new_in(base.path(), "php/app with spaces").unwrap();
        let path = dir.path().to_owned();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with("tern-php_app_with_spaces-"), "{name}");
        assert_eq!(mode(&path) & 0o077, 0, "{:o}", mode(&path));
        let (_listener, sock) = dir.bind(0).unwrap();
        assert!(sock.starts_with(&path));
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn binding_again_replaces_a_stale_socket() {
        let base = tempfile::tempdir().unwrap();
        let dir = SocketDir::new_in(base.path(), "p").unwrap();
        let (first, path) = dir.bind(3).unwrap();
        drop(first);
        let (_second, again) = dir.bind(3).unwrap();
        assert_eq!(path, again);
        std::os::unix::net::UnixStream::connect(&again).unwrap();
    }

    #[test]
    fn two_directories_of_one_pool_differ() {
        let base = tempfile::tempdir().unwrap();
        let a = SocketDir::new_in(base.path(), "p").unwrap();
        let b = SocketDir::new_in(base.path(), "p").unwrap();
        assert_ne!(a.path(), b.path());
    }

    #[test]
    fn a_removed_directory_binds_nothing() {
        let base = tempfile::tempdir().unwrap();
        let dir = SocketDir::new_in(base.path(), "p").unwrap();
        let (_listener, sock) = dir.bind(0).unwrap();
        dir.remove();
        assert!(!dir.path().exists());
        assert!(!sock.exists());
        assert_eq!(dir.bind(1).unwrap_err().kind(), io::ErrorKind::NotFound);
        dir.remove();
    }

    /// The only test of this crate's unit tests that uses the run's
    /// directory (a process-wide one), so that nothing else changes it
    /// meanwhile.
    #[test]
    fn the_run_directory_lives_as_long_as_a_socket_directory_in_it() {
        let a = SocketDir::new("a").unwrap();
        let b = SocketDir::new("b").unwrap();
        let run = a.path().parent().unwrap().to_owned();
        assert_eq!(b.path().parent(), Some(run.as_path()));
        let name = run.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with(&format!("tern-{}-", std::process::id())),
            "{name}"
        );
        assert_eq!(mode(&run) & 0o077, 0, "{:o}", mode(&run));
        a.bind(0).unwrap();
        drop(a);
        assert!(run.exists(), "b is still in it");
        b.remove();
        assert!(!run.exists(), "the last one out removes it");
        drop(b);

        // At exit, whatever is left goes at once.
        let c = SocketDir::new("c").unwrap();
        let (_listener, _) = c.bind(0).unwrap();
        let run = c.path().parent().unwrap().to_owned();
        remove_run_dir();
        assert!(!run.exists());
        assert!(c.bind(1).is_err());
        drop(c);
        let d = SocketDir::new("d").unwrap();
        assert_ne!(d.path().parent(), Some(run.as_path()), "a new one");
    }
}
