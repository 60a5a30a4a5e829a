//! Finding the script: the decoded path's segments are walked beneath the
//! script directory until a regular file is found; that file is the
//! script and the rest of the path is PATH_INFO.
//!
//! The split is made only after the file is known to exist, to be a
//! regular file and (for an extension route) to carry the route's
//! extension, so `/upload/x.jpg/a.php` never runs `x.jpg` as a script (the
//! `cgi.fix_pathinfo` class of bugs). Dot-files never run, and a
//! directory never does (403).
//!
//! Each lookup is contained by `tern-fs` (the static files' containment):
//! an `openat2(RESOLVE_BENEATH)` from the directory's descriptor, so
//! neither the request nor a symlink on disk leads outside the directory
//! (symlinks that stay inside are followed; absolute ones never are).
//! Without openat2 (ENOSYS) the walk goes one component at a time with
//! O_NOFOLLOW and refuses every symlink ([`Symlinks::FollowWithOpenat2`]).
//! The lookups are a few metadata syscalls, done on the runtime thread like
//! the spawn that follows them. The script is then executed by its path: a
//! local writer of the script directory could swap a file between the
//! check and the exec, but such a writer can install any script anyway;
//! the check guards against requests.

use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, OFlags};
use rustix::io::Errno;
use tern_fs::{Beneath, Lookup, Symlinks};
use tern_handler::path::DecodedPath;
use tern_handler::RoutePattern;

use crate::Error;

/// A script that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Script {
    /// Its file: the directory joined with the path that found it.
    pub(crate) filename: PathBuf,
    /// Its URL path (SCRIPT_NAME).
    pub(crate) script_name: String,
    /// The rest of the request path (PATH_INFO), `""` or `/...`.
    pub(crate) path_info: String,
    /// Whether its name starts with `nph-`.
    pub(crate) nph: bool,
    /// Its modification time (seconds, nanoseconds), from the lookup's
    /// own stat: a persistent route restarts a script's workers when it
    /// changes.
    pub(crate) modified: (i64, i64),
}

impl Script {
    /// The directory the script runs in.
    pub(crate) fn dir(&self) -> &Path {
        self.filename.parent().unwrap_or(Path::new("/"))
    }
}

/// The script directory, held open.
#[derive(Debug)]
pub(crate) struct ScriptDir {
    dir: Beneath,
    path: PathBuf,
}

/// Deepest walk: paths are bounded by the URI limit anyway.
const MAX_SEGMENTS: usize = 64;

impl ScriptDir {
    /// Opens the directory.
    pub(crate) fn open(path: &Path) -> io::Result<ScriptDir> {
        Ok(ScriptDir {
            dir: Beneath::open(path)?,
            path: path.to_owned(),
        })
    }

    /// Finds the script for `path`, on the route of `pattern`: beneath a
    /// prefix route the path after the prefix is looked up, on an
    /// extension route the whole path. `executable` asks for an execute
    /// bit (no interpreter is configured).
    pub(crate) fn find(
        &self,
        path: &DecodedPath,
        pattern: &RoutePattern,
        executable: bool,
    ) -> Result<Script, Error> {
        self.find_by(path, pattern, executable, Lookup::Auto)
    }

    fn find_by(
        &self,
        path: &DecodedPath,
        pattern: &RoutePattern,
        executable: bool,
        how: Lookup,
    ) -> Result<Script, Error> {
        let full = path.as_str();
        let Some((url_prefix, rest)) = pattern.beneath(path) else {
            return Err(Error::NoScript(format!("{full} is not under {pattern}")));
        };
        // `rest` is "" or "/seg/seg...": walk it one segment at a time.
        let mut end = 0;
        for _ in 0..MAX_SEGMENTS {
            let start = end + 1;
            if start >= rest.len() {
                return Err(Error::NotRunnable(format!("{full}: a directory")));
            }
            end = rest[start..].find('/').map_or(rest.len(), |i| start + i);
            let segment = &rest[start..end];
            if segment.starts_with('.') {
                return Err(Error::NoScript(format!("{full}: a dot-file")));
            }
            let rel = &rest[1..end];
            let kind = match self.stat(rel, how) {
                Ok(st) => (
                    FileType::from_raw_mode(st.st_mode),
                    st.st_mode,
                    (st.st_mtime, st.st_mtime_nsec as i64),
                ),
                Err(Errno::ACCESS | Errno::PERM) => {
                    return Err(Error::NotRunnable(format!("{full}: permission denied")))
                }
                Err(e) => return Err(Error::NoScript(format!("{full}: {e}"))),
            };
            match kind {
                (FileType::Directory, ..) => continue,
                (FileType::RegularFile, mode, modified) => {
                    if let RoutePattern::Extension(ext) = pattern {
                        let has = segment
                            .rsplit_once('.')
                            .is_some_and(|(_, x)| x.eq_ignore_ascii_case(ext));
                        if !has {
                            return Err(Error::NoScript(format!(
                                "{full}: `{rel}` is a file but not a .{ext} script"
                            )));
                        }
                    }
                    if executable && mode & 0o111 == 0 {
                        return Err(Error::NotRunnable(format!("{full}: not executable")));
                    }
                    // Joined by hand: `format!` cost 600 instructions here.
                    let mut script_name = String::with_capacity(url_prefix.len() + end);
                    script_name.push_str(url_prefix);
                    script_name.push_str(&rest[..end]);
                    return Ok(Script {
                        filename: self.path.join(rel),
                        script_name,
                        path_info: rest[end..].to_owned(),
                        nph: segment.starts_with("nph-"),
                        modified,
                    });
                }
                _ => return Err(Error::NoScript(format!("{full}: not a regular file"))),
            }
        }
        Err(Error::NoScript(format!("{full}: too deep")))
    }

    fn stat(&self, rel: &str, how: Lookup) -> Result<rustix::fs::Stat, Errno> {
        let flags = OFlags::PATH | OFlags::CLOEXEC;
        let fd = self
            .dir
            .open_by(rel, flags, Symlinks::FollowWithOpenat2, how)?;
        rustix::fs::fstat(&fd)
    }

    #[cfg(test)]
    fn find_by_walk(&self, path: &DecodedPath, pattern: &RoutePattern) -> Result<Script, Error> {
        self.find_by(path, pattern, true, Lookup::Walk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt as _};

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("cgi");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let exe = |p: &Path| {
            std::fs::write(p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe(&d.join("run.cgi"));
        exe(&d.join("sub/deep.cgi"));
        exe(&d.join("nph-raw"));
        exe(&d.join(".hidden"));
        exe(&t.path().join("outside.cgi"));
        std::fs::write(d.join("x.jpg"), "jpeg").unwrap();
        std::fs::write(d.join("plain.cgi"), "not executable").unwrap();
        symlink("run.cgi", d.join("link-in.cgi")).unwrap();
        symlink("../outside.cgi", d.join("link-out.cgi")).unwrap();
        symlink(t.path().join("outside.cgi"), d.join("link-abs.cgi")).unwrap();
        t
    }

    fn p(s: &str) -> DecodedPath {
        DecodedPath::parse(s).unwrap()
    }

    fn prefix(s: &str) -> RoutePattern {
        RoutePattern::Prefix(s.into())
    }

    #[test]
    fn the_first_file_is_the_script_and_the_rest_is_path_info() {
        let t = tree();
        let dir = ScriptDir::open(&t.path().join("cgi")).unwrap();
        let s = dir
            .find(&p("/cgi-bin/sub/deep.cgi/a/b/"), &prefix("/cgi-bin"), true)
            .unwrap();
        assert_eq!(s.filename, t.path().join("cgi/sub/deep.cgi"));
        assert_eq!(s.script_name, "/cgi-bin/sub/deep.cgi");
        assert_eq!(s.path_info, "/a/b/");
        assert_eq!(s.dir(), t.path().join("cgi/sub"));
        assert!(!s.nph);
        let s = dir
            .find(&p("/run.cgi"), &RoutePattern::root(), true)
            .unwrap();
        assert_eq!(
            (s.script_name.as_str(), s.path_info.as_str()),
            ("/run.cgi", "")
        );
        let s = dir.find(&p("/c/nph-raw"), &prefix("/c"), true).unwrap();
        assert!(s.nph);
    }

    #[test]
    fn refusals() {
        let t = tree();
        let dir = ScriptDir::open(&t.path().join("cgi")).unwrap();
        let find = |path: &str, pattern: &RoutePattern| dir.find(&p(path), pattern, true);
        let pre = &prefix("/cgi-bin");
        let not_found = |r: Result<Script, Error>| matches!(r, Err(Error::NoScript(_)));
        let forbidden = |r: Result<Script, Error>| matches!(r, Err(Error::NotRunnable(_)));
        assert!(not_found(find("/cgi-bin/missing", pre)));
        assert!(not_found(find("/cgi-bin/.hidden", pre)));
        assert!(not_found(find("/cgi-bin/sub/.x/run.cgi", pre)));
        assert!(forbidden(find("/cgi-bin/plain.cgi", pre)));
        assert!(forbidden(find("/cgi-bin/sub", pre)));
        assert!(forbidden(find("/cgi-bin/", pre)));
        assert!(forbidden(find("/cgi-bin", pre)));
        assert!(not_found(find("/cgi-bin/link-out.cgi", pre)));
        assert!(not_found(find("/cgi-bin/link-abs.cgi", pre)));
        assert!(find("/cgi-bin/link-in.cgi", pre).is_ok());
        // The x.jpg/a.cgi class: the first file found is not a script.
        let ext = &RoutePattern::Extension("cgi".into());
        assert!(not_found(find("/x.jpg/a.cgi", ext)));
        assert!(
            find("/RUN.CGI", ext).is_err(),
            "names are case-sensitive on disk"
        );
        assert!(find("/sub/deep.cgi", ext).is_ok());
        // Not executable is fine when an interpreter runs it.
        assert!(dir.find(&p("/cgi-bin/plain.cgi"), pre, false).is_ok());
    }

    #[test]
    fn the_fallback_walk_refuses_every_symlink() {
        let t = tree();
        let dir = ScriptDir::open(&t.path().join("cgi")).unwrap();
        let pre = &prefix("/c");
        assert!(dir.find_by_walk(&p("/c/sub/deep.cgi/x"), pre).is_ok());
        assert!(dir.find_by_walk(&p("/c/link-in.cgi"), pre).is_err());
        assert!(dir.find_by_walk(&p("/c/link-out.cgi"), pre).is_err());
    }
}
