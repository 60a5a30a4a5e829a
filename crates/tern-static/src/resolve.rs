//! Containment of the document root: every file is opened beneath the
//! root's directory descriptor (`tern-fs`: `openat2(RESOLVE_BENEATH)`, or
//! a walk by hand where the kernel has none), so no request reads outside
//! the root whatever the path or the symlinks on disk say. The request
//! path's naming rules (dot-files) are this crate's own.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::OFlags;
use rustix::io::Errno;
use tern_fs::{Beneath, Lookup, Symlinks};

/// A request path that passed the site's naming rules, relative to the
/// root: `""` for the root itself, else `a/b/c` (no leading or trailing
/// slash, no empty, `.` or `..` segment). Only [`RelPath::from_request`] and
/// [`RelPath::join`] make one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RelPath(String);

impl RelPath {
    /// Maps a decoded request path (`/a/b/`) to a relative one, or `None`
    /// when a segment starts with `.` and dot-files are not served. The
    /// first segment `.well-known` (RFC 8615) is always allowed.
    pub(crate) fn from_request(decoded: &str, dotfiles: bool) -> Option<RelPath> {
        let rel = decoded.trim_matches('/');
        if !dotfiles {
            let mut segments = rel.split('/');
            if let Some(first) = segments.next() {
                if first.starts_with('.') && first != ".well-known" {
                    return None;
                }
            }
            if segments.any(|s| s.starts_with('.')) {
                return None;
            }
        }
        Some(RelPath(rel.to_owned()))
    }

    /// The path of `name` inside this directory (`name` is one segment).
    pub(crate) fn join(&self, name: &str) -> RelPath {
        if self.0.is_empty() {
            RelPath(name.to_owned())
        } else {
            RelPath(format!("{}/{name}", self.0))
        }
    }

    /// The same path with `suffix` appended to its last segment (sidecars).
    pub(crate) fn with_suffix(&self, suffix: &str) -> RelPath {
        RelPath(format!("{}{suffix}", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a contained path names.
#[derive(Debug)]
pub(crate) enum Node {
    /// A regular file, open for reading.
    File(File, Metadata),
    /// A directory, open for reading its entries.
    Dir(OwnedFd),
}

/// The document root, held as a directory descriptor.
#[derive(Debug)]
pub(crate) struct Root {
    dir: Beneath,
    symlinks: Symlinks,
}

impl Root {
    /// Opens the root directory; fails if it is missing or not a directory.
    pub(crate) fn open(path: &Path, follow_symlinks: bool) -> io::Result<Root> {
        Ok(Root {
            dir: Beneath::open(path)?,
            symlinks: if follow_symlinks {
                Symlinks::Follow
            } else {
                Symlinks::Refuse
            },
        })
    }

    /// Opens `rel` beneath the root. Anything but a regular file or a
    /// directory (fifo, socket, device) is reported as not found. The open
    /// uses O_NONBLOCK so that a fifo cannot block the thread.
    pub(crate) fn open_node(&self, rel: &RelPath) -> io::Result<Node> {
        self.open_node_by(rel, Lookup::Auto)
    }

    fn open_node_by(&self, rel: &RelPath, how: Lookup) -> io::Result<Node> {
        let fd = self.open_fd(rel.as_str(), how)?;
        let file = File::from(fd);
        let meta = file.metadata()?;
        if meta.is_file() {
            Ok(Node::File(file, meta))
        } else if meta.is_dir() {
            Ok(Node::Dir(file.into()))
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                "not a regular file or directory",
            ))
        }
    }

    fn open_fd(&self, rel: &str, how: Lookup) -> io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        self.dir
            .open_by(rel, flags, self.symlinks, how)
            .map_err(io::Error::from)
    }
}

/// How an I/O failure answers: missing things (and things we refuse to
/// follow) are 404, permission problems 403, anything else 500.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    NotFound,
    Forbidden,
    Internal,
}

pub(crate) fn classify(e: &io::Error) -> Failure {
    if e.kind() == io::ErrorKind::NotFound {
        return Failure::NotFound;
    }
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        // ENXIO and ENODEV: a socket or a device without a driver, which
        // open() refuses before we can look at the type.
        Some(
            Errno::NOENT
            | Errno::NOTDIR
            | Errno::LOOP
            | Errno::XDEV
            | Errno::NAMETOOLONG
            | Errno::NXIO
            | Errno::NODEV,
        ) => Failure::NotFound,
        Some(Errno::ACCESS | Errno::PERM) => Failure::Forbidden,
        _ => Failure::Internal,
    }
}

#[cfg(test)]
mod tests {
    use rustix::fs::{FileType, Mode};

    use super::*;

    #[test]
    fn dot_segments_are_hidden_unless_allowed() {
        assert_eq!(RelPath::from_request("/", false).unwrap().as_str(), "");
        assert_eq!(
            RelPath::from_request("/a/b/", false).unwrap().as_str(),
            "a/b"
        );
        assert!(RelPath::from_request("/.git/config", false).is_none());
        assert!(RelPath::from_request("/a/.env", false).is_none());
        assert!(RelPath::from_request("/a/.well-known/x", false).is_none());
        assert!(RelPath::from_request("/.well-known/acme", false).is_some());
        assert!(RelPath::from_request("/.well-known/.x", false).is_none());
        assert!(RelPath::from_request("/a/.env", true).is_some());
        assert!(RelPath::from_request("/a.b/c", false).is_some());
    }

    #[test]
    fn join_and_suffix() {
        let root = RelPath::from_request("/", false).unwrap();
        assert_eq!(root.join("index.html").as_str(), "index.html");
        let d = RelPath::from_request("/d/", false).unwrap();
        assert_eq!(d.join("i.htm").with_suffix(".br").as_str(), "d/i.htm.br");
    }

    /// root/ holds a.txt, sub/deep/b.txt, a fifo and symlinks of every
    /// kind; secret sits beside root/.
    fn tree() -> tempfile::TempDir {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("sub/deep/b.txt"), "b").unwrap();
        std::fs::write(t.path().join("secret"), "s").unwrap();
        symlink("a.txt", root.join("link-in")).unwrap();
        symlink("sub/deep/../../a.txt", root.join("link-dotdot")).unwrap();
        symlink("../secret", root.join("link-out")).unwrap();
        symlink(t.path().join("secret"), root.join("link-abs")).unwrap();
        symlink(root.join("a.txt"), root.join("link-abs-in")).unwrap();
        symlink("sub", root.join("dirlink")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        t
    }

    fn open(root: &Root, rel: &str, how: Lookup) -> Result<String, Failure> {
        let rel = RelPath(rel.to_owned());
        match root.open_node_by(&rel, how) {
            Ok(Node::File(f, _)) => Ok(io::read_to_string(f).unwrap()),
            Ok(Node::Dir(_)) => Ok("<dir>".to_owned()),
            Err(e) => Err(classify(&e)),
        }
    }

    #[test]
    fn openat2_and_the_walk_agree() {
        let t = tree();
        let nf = Err(Failure::NotFound);
        let ok = |s: &str| Ok(s.to_owned());
        let cases: &[(&str, bool, Result<String, Failure>)] = &[
            ("", false, ok("<dir>")),
            ("a.txt", false, ok("a")),
            ("sub/deep/b.txt", false, ok("b")),
            ("sub/deep", false, ok("<dir>")),
            ("missing", false, nf.clone()),
            ("a.txt/x", false, nf.clone()),
            ("fifo", false, nf.clone()),
            ("link-in", false, nf.clone()),
            ("dirlink/deep/b.txt", false, nf.clone()),
            ("link-in", true, ok("a")),
            ("link-dotdot", true, ok("a")),
            ("dirlink/deep/b.txt", true, ok("b")),
            ("link-out", true, nf.clone()),
            ("link-abs", true, nf.clone()),
            // RESOLVE_BENEATH refuses every absolute symlink, even one that
            // points back inside: the root's own path is not trusted.
            ("link-abs-in", true, nf.clone()),
            ("loop", true, nf.clone()),
            ("fifo", true, nf.clone()),
        ];
        for (rel, follow, want) in cases {
            let root = Root::open(&t.path().join("root"), *follow).unwrap();
            for how in [Lookup::Auto, Lookup::Walk] {
                assert_eq!(
                    &open(&root, rel, how),
                    want,
                    "{rel} follow={follow} {how:?}"
                );
            }
        }
    }

    #[test]
    fn root_must_be_a_directory() {
        let t = tree();
        assert!(Root::open(&t.path().join("secret"), false).is_err());
        assert!(Root::open(&t.path().join("nope"), false).is_err());
    }

    #[test]
    fn errors_classify() {
        let e = |n: Errno| io::Error::from(n);
        assert_eq!(classify(&e(Errno::NOENT)), Failure::NotFound);
        assert_eq!(classify(&e(Errno::LOOP)), Failure::NotFound);
        assert_eq!(classify(&e(Errno::XDEV)), Failure::NotFound);
        assert_eq!(classify(&e(Errno::ACCESS)), Failure::Forbidden);
        assert_eq!(classify(&e(Errno::IO)), Failure::Internal);
    }
}
