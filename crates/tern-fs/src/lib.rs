//! Containment: a path opened beneath a directory's descriptor never
//! reaches outside that directory, whatever the path or the symlinks on
//! disk say. Shared by the static files (`tern-static`'s document root)
//! and the gateways' script lookup (`tern-gateway`'s script directory).
//!
//! On Linux 5.6+ one `openat2(RESOLVE_BENEATH)` does it: the kernel refuses
//! `..` above the directory, absolute symlinks and (with
//! `RESOLVE_NO_SYMLINKS`) every symlink, at open time, so there is no
//! check-then-open window and no `canonicalize()` (18% of SWS's CPU on its
//! static path). Where `openat2` is missing (ENOSYS: old kernels, some
//! seccomp sandboxes) the same rules are applied one component at a time
//! with `openat(O_NOFOLLOW)`, reading and expanding each symlink by hand
//! when they are followed, as nginx's `disable_symlinks` does; slower, but
//! still free of races because each step starts from a descriptor rather
//! than a path.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// A directory held open; paths are opened beneath it.
#[derive(Debug)]
pub struct Beneath {
    fd: OwnedFd,
}

/// What a lookup does with the symlinks it meets. Whichever is chosen, a
/// symlink never leads outside the directory: an absolute one, or one
/// whose `..` climbs above it, is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symlinks {
    /// Followed, by the kernel or by the walk.
    Follow,
    /// Followed by the kernel (`openat2`, which contains them); refused
    /// by the walk that stands in for it, which then expands none. The
    /// gateways' script lookup has always looked up scripts this way.
    FollowWithOpenat2,
    /// Never followed.
    Refuse,
}

/// How a path is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// `openat2`, or the walk once the kernel said it has none.
    Auto,
    /// The walk, always: for tests that check both ways agree.
    Walk,
}

/// Set once `openat2` answers ENOSYS, so later opens go straight to the walk.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Symlinks expanded in one walk before giving up, as Linux's MAXSYMLINKS.
const MAX_SYMLINKS: usize = 40;

impl Beneath {
    /// Opens the directory; fails if it is missing or not a directory.
    pub fn open(path: &Path) -> io::Result<Beneath> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty())?;
        Ok(Beneath { fd })
    }

    /// Opens `rel` (relative, `/`-separated; `""` or `.` for the directory
    /// itself) beneath the directory with `flags`.
    pub fn open_at(&self, rel: &str, flags: OFlags, symlinks: Symlinks) -> Result<OwnedFd, Errno> {
        self.open_by(rel, flags, symlinks, Lookup::Auto)
    }

    /// As [`Beneath::open_at`], looked up as `how` says.
    pub fn open_by(
        &self,
        rel: &str,
        flags: OFlags,
        symlinks: Symlinks,
        how: Lookup,
    ) -> Result<OwnedFd, Errno> {
        let rel = if rel.is_empty() { "." } else { rel };
        if how == Lookup::Auto && !NO_OPENAT2.load(Ordering::Relaxed) {
            let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            if symlinks == Symlinks::Refuse {
                resolve |= ResolveFlags::NO_SYMLINKS;
            }
            // EAGAIN: a rename raced the lookup; the kernel asks for a retry.
            for _ in 0..8 {
                match rustix::fs::openat2(&self.fd, rel, flags, Mode::empty(), resolve) {
                    Err(Errno::AGAIN) => continue,
                    Err(Errno::NOSYS) => {
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    other => return other,
                }
            }
            if !NO_OPENAT2.load(Ordering::Relaxed) {
                return Err(Errno::AGAIN);
            }
        }
        self.walk(rel, flags, symlinks == Symlinks::Follow)
    }

    /// The fallback: resolves `rel` one component at a time from the
    /// directory's descriptor with O_NOFOLLOW, expanding relative symlinks
    /// by hand when they are followed, and refusing what RESOLVE_BENEATH
    /// refuses: an absolute symlink, or a `..` that climbs above the
    /// directory.
    fn walk(&self, rel: &str, flags: OFlags, follow: bool) -> Result<OwnedFd, Errno> {
        let mut dirs: Vec<OwnedFd> = Vec::new();
        let mut pending: VecDeque<Vec<u8>> = components(rel.as_bytes());
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == b"." {
                continue;
            }
            if name == b".." {
                // Each descriptor in `dirs` is where the walk really went,
                // so popping one is the real parent, never a lexical guess.
                if dirs.pop().is_none() {
                    return Err(Errno::XDEV);
                }
                continue;
            }
            let parent = dirs.last().map_or(self.fd.as_fd(), |d| d.as_fd());
            let path_flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(parent, name.as_slice(), path_flags, Mode::empty())?;
            let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
            if kind == FileType::Symlink {
                if !follow {
                    return Err(Errno::LOOP);
                }
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::LOOP);
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
                let target = target.as_bytes();
                if target.starts_with(b"/") {
                    return Err(Errno::XDEV);
                }
                for c in components(target).into_iter().rev() {
                    pending.push_front(c);
                }
                continue;
            }
            if pending.is_empty() {
                // Reopen with the caller's flags; O_NOFOLLOW refuses a
                // symlink swapped in since the O_PATH open above.
                return rustix::fs::openat(
                    parent,
                    name.as_slice(),
                    flags | OFlags::NOFOLLOW,
                    Mode::empty(),
                );
            }
            if kind != FileType::Directory {
                return Err(Errno::NOTDIR);
            }
            dirs.push(fd);
        }
        let dir = dirs.last().map_or(self.fd.as_fd(), |d| d.as_fd());
        rustix::fs::openat(dir, ".", flags, Mode::empty())
    }
}

fn components(path: &[u8]) -> VecDeque<Vec<u8>> {
    path.split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// dir/ holds a.txt, sub/b.txt and symlinks that stay inside or
    /// leave; secret sits beside dir/.
    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("dir");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        std::fs::write(dir.join("sub/b.txt"), "b").unwrap();
        std::fs::write(t.path().join("secret"), "s").unwrap();
        symlink("a.txt", dir.join("link-in")).unwrap();
        symlink("../secret", dir.join("link-out")).unwrap();
        symlink("sub", dir.join("dirlink")).unwrap();
        t
    }

    fn opens(b: &Beneath, rel: &str, symlinks: Symlinks, how: Lookup) -> bool {
        b.open_by(rel, OFlags::RDONLY | OFlags::CLOEXEC, symlinks, how)
            .is_ok()
    }

    #[test]
    fn each_symlink_choice_holds_for_the_kernel_and_for_the_walk() {
        let t = tree();
        let b = Beneath::open(&t.path().join("dir")).unwrap();
        use Lookup::{Auto, Walk};
        use Symlinks::{Follow, FollowWithOpenat2, Refuse};
        for (rel, symlinks, how, ok) in [
            ("a.txt", Refuse, Walk, true),
            ("sub/b.txt", Refuse, Auto, true),
            ("", Refuse, Walk, true),
            ("link-in", Follow, Auto, true),
            ("link-in", Follow, Walk, true),
            ("dirlink/b.txt", Follow, Walk, true),
            ("link-in", FollowWithOpenat2, Auto, true),
            ("link-in", FollowWithOpenat2, Walk, false),
            ("link-in", Refuse, Auto, false),
            ("link-in", Refuse, Walk, false),
            ("link-out", Follow, Auto, false),
            ("link-out", Follow, Walk, false),
            ("../secret", Follow, Walk, false),
        ] {
            assert_eq!(
                opens(&b, rel, symlinks, how),
                ok,
                "{rel} {symlinks:?} {how:?}"
            );
        }
    }
}
