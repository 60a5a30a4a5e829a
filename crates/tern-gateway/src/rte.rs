//! The run-time engines shipped with tern (WASD's RTE): CGIplus scripts
//! that keep one Perl or Python interpreter alive and run unmodified CGI
//! scripts in it, request after request, each compiled once and again
//! when its file changes. The sources live in `rte/` and are built into
//! tern, which writes them out ([`write_to`]) for its pools to start.
//! `docs/cgiplus.md` says how to write scripts for them.
//!
//! Also here: hello scripts in sh, Perl and Python that answer both as
//! plain CGI and as CGIplus, for the demo site and the benchmarks; they
//! are the examples `docs/cgiplus.md` shows.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// `rte/tern-rte.pl`: the Perl engine.
pub const PERL: &str = include_str!("../rte/tern-rte.pl");

/// `rte/tern-rte.py`: the Python engine.
pub const PYTHON: &str = include_str!("../rte/tern-rte.py");

/// `rte/examples/hello.sh`: `Hello!` as plain CGI or CGIplus (record mode,
/// POSIX sh).
pub const HELLO_SH: &str = include_str!("../rte/examples/hello.sh");

/// `rte/examples/hello.pl`: `Hello!` as plain CGI or CGIplus (struct mode,
/// Perl).
pub const HELLO_PL: &str = include_str!("../rte/examples/hello.pl");

/// `rte/examples/hello.py`: `Hello!` as plain CGI or CGIplus (struct mode,
/// Python).
pub const HELLO_PY: &str = include_str!("../rte/examples/hello.py");

/// A run-time engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// `tern-rte.pl`, run by `perl`.
    Perl,
    /// `tern-rte.py`, run by `python3`.
    Python,
}

impl Engine {
    /// Both engines.
    pub const ALL: [Engine; 2] = [Engine::Perl, Engine::Python];

    /// The engine's file name.
    pub fn file_name(self) -> &'static str {
        match self {
            Engine::Perl => "tern-rte.pl",
            Engine::Python => "tern-rte.py",
        }
    }

    /// The engine's source.
    pub fn source(self) -> &'static str {
        match self {
            Engine::Perl => PERL,
            Engine::Python => PYTHON,
        }
    }

    /// The interpreter that runs it, looked up in PATH (the files also
    /// start with a `#!` line and are written executable).
    pub fn interpreter(self) -> &'static str {
        match self {
            Engine::Perl => "perl",
            Engine::Python => "python3",
        }
    }
}

/// Writes both engines into `dir` (created if missing), executable, and
/// returns their paths: `(tern-rte.pl, tern-rte.py)`. A
/// file that already holds the same text is left alone; another is
/// replaced by a rename, so an engine starting meanwhile reads either
/// the old file or the new one, never half of one.
///
/// Blocking file I/O: call it at start-up, not on a runtime thread.
pub fn write_to(dir: &Path) -> io::Result<(PathBuf, PathBuf)> {
    fs::create_dir_all(dir)?;
    Ok((
        write_one(dir, Engine::Perl)?,
        write_one(dir, Engine::Python)?,
    ))
}

fn write_one(dir: &Path, engine: Engine) -> io::Result<PathBuf> {
    let path = dir.join(engine.file_name());
    let text = engine.source().as_bytes();
    let same = fs::read(&path).is_ok_and(|old| old == text)
        && fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if !same {
        let tmp = tempfile::Builder::new()
            .prefix(".tern-rte")
            .tempfile_in(dir)?;
        fs::write(tmp.path(), text)?;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755))?;
        tmp.persist(&path).map_err(|e| e.error)?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_engines_are_written_executable_and_rewritten_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("rte");
        let (perl, python) = write_to(&sub).unwrap();
        assert_eq!(perl, sub.join("tern-rte.pl"));
        assert_eq!(fs::read_to_string(&perl).unwrap(), PERL);
        assert_eq!(fs::read_to_string(&python).unwrap(), PYTHON);
        for p in [&perl, &python] {
            assert_eq!(fs::metadata(p).unwrap().permissions().mode() & 0o777, 0o755);
        }
        fs::write(&perl, "stale").unwrap();
        write_to(&sub).unwrap();
        assert_eq!(fs::read_to_string(&perl).unwrap(), PERL);
        assert!(PERL.starts_with("#!/usr/bin/perl\n"));
        assert!(PYTHON.starts_with("#!/usr/bin/env python3\n"));
    }

    /// The protocol's documentation shows the examples as they ship (and
    /// as the integration tests run them).
    #[test]
    fn the_documentation_shows_the_examples_as_they_are() {
        let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cgiplus.md");
        let doc = fs::read_to_string(doc).unwrap();
        for (lang, source) in [("sh", HELLO_SH), ("perl", HELLO_PL), ("python", HELLO_PY)] {
            let block = format!("```{lang}\n{source}```\n");
            assert!(
                doc.contains(&block),
                "docs/cgiplus.md lacks the {lang} example as shipped"
            );
        }
    }
}
