//! A private directory for FastCGI workers' listening sockets.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A directory only tern's user can enter (mode 0700), holding the Unix
/// sockets a pool's workers listen on (h2o's `fastcgi.spawn` does the
/// same). Removed, with its sockets, when dropped.
#[derive(Debug)]
pub struct SocketDir {
    path: PathBuf,
}

/// Tells apart the directories of one tern process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A Unix socket path holds at most 107 bytes: keep the pool's part short.
const NAME_MAX: usize = 24;

impl SocketDir {
    /// Creates `tern-<pool>-<pid>-<n>` in the system's temp directory.
    pub fn new(pool: &str) -> io::Result<Self> {
        Self::new_in(&std::env::temp_dir(), pool)
    }

    /// Creates `tern-<pool>-<pid>-<n>` in `base`. The name is sanitised
    /// (letters, digits, `-` and `_`) and shortened.
    pub fn new_in(base: &Path, pool: &str) -> io::Result<Self> {
        let name: String = pool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(NAME_MAX)
            .collect();
        let pid = std::process::id();
        // A name taken by someone else (EEXIST) is skipped, never reused:
        // the directory must be one this call created, with its mode.
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("tern-{name}-{pid}-{n}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(err),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free name for a socket directory",
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Binds `<n>.sock` in the directory (replacing a socket left there by
    /// a worker that was replaced), returning the blocking, close-on-exec
    /// listener, to pass to a worker as its fd 0, and its path, to connect to.
    pub fn bind(&self, n: usize) -> io::Result<(UnixListener, PathBuf)> {
        let path = self.path.join(format!("{n}.sock"));
        match std::fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        let listener = UnixListener::bind(&path)?;
        Ok((listener, path))
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_directory_is_private_and_removed_on_drop() {
        let base = tempfile::tempdir().unwrap();
        let dir = SocketDir::new_in(base.path(), "php/app with spaces").unwrap();
        let path = dir.path().to_owned();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with("tern-php_app_with_spaces-"), "{name}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
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
}
