//! The suite's temporary directory: the docroot with the registry's
//! fixtures, and one directory per server for its config, pid files and logs.
//! Everything is removed when the suite ends.
//!
//! Servers started as root drop to an unprivileged user, so the docroot is
//! world-readable and the log directories world-writable (sticky).

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::row::{Fixture, FixtureContents};
use crate::Error;

/// The suite's files.
#[derive(Debug)]
pub struct Workdir {
    dir: tempfile::TempDir,
    docroot: PathBuf,
}

/// The bytes the pattern fixtures repeat: printable, one line of 65.
const PATTERN: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/\n";

impl Workdir {
    /// Creates the directory and writes the fixtures.
    pub fn create(fixtures: &[Fixture]) -> Result<Workdir, Error> {
        let dir = tempfile::Builder::new()
            .prefix("tern-suite-")
            .tempdir()
            .map_err(|e| Error::system("creating the suite's temp dir", e))?;
        set_mode(dir.path(), 0o755)?;
        let docroot = dir.path().join("www");
        make_dir(&docroot, 0o755)?;
        for f in fixtures {
            write_fixture(&docroot, f)?;
        }
        Ok(Workdir { dir, docroot })
    }

    /// The docroot every server serves.
    pub fn docroot(&self) -> &Path {
        &self.docroot
    }

    /// A fresh directory for one server, with `run/` and a world-writable
    /// `logs/`.
    pub fn server_dir(&self, name: &str) -> Result<PathBuf, Error> {
        let d = self.dir.path().join("servers").join(name);
        make_dir(&d, 0o755)?;
        make_dir(&d.join("run"), 0o755)?;
        make_dir(&d.join("logs"), 0o1777)?;
        Ok(d)
    }
}

fn make_dir(path: &Path, mode: u32) -> Result<(), Error> {
    fs::create_dir_all(path).map_err(|source| Error::File {
        path: path.to_owned(),
        source,
    })?;
    set_mode(path, mode)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|source| Error::File {
        path: path.to_owned(),
        source,
    })
}

fn write_fixture(docroot: &Path, f: &Fixture) -> Result<(), Error> {
    let path = docroot.join(&f.path);
    if let Some(parent) = path.parent() {
        make_dir(parent, 0o755)?;
    }
    let file_err = |source| Error::File {
        path: path.clone(),
        source,
    };
    let mut file = fs::File::create(&path).map_err(file_err)?;
    match &f.contents {
        FixtureContents::Bytes(b) => file.write_all(b).map_err(file_err)?,
        FixtureContents::Pattern(len) => {
            let block: Vec<u8> = PATTERN
                .iter()
                .copied()
                .cycle()
                .take(PATTERN.len() * 1024)
                .collect();
            let mut left = *len;
            while left > 0 {
                let n = left.min(block.len() as u64) as usize;
                file.write_all(&block[..n]).map_err(file_err)?;
                left -= n as u64;
            }
        }
    }
    drop(file);
    set_mode(&path, if f.executable { 0o755 } else { 0o644 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_fixtures_readable_by_all() {
        let fixtures = [
            Fixture::pattern("a/b.bin", 70_000),
            Fixture {
                path: "run.sh".into(),
                contents: FixtureContents::Bytes(b"#!/bin/sh\n".to_vec()),
                executable: true,
            },
        ];
        let w = Workdir::create(&fixtures).unwrap();
        let data = fs::read(w.docroot().join("a/b.bin")).unwrap();
        assert_eq!(data.len(), 70_000);
        assert_eq!(&data[..65], PATTERN);
        assert_eq!(&data[65..130], PATTERN);
        let mode = fs::metadata(w.docroot().join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        let d = w.server_dir("nginx").unwrap();
        assert_eq!(
            fs::metadata(d.join("logs")).unwrap().permissions().mode() & 0o7777,
            0o1777
        );
        let root = w.dir.path().to_owned();
        drop(w);
        assert!(!root.exists(), "removed at the end");
    }
}
