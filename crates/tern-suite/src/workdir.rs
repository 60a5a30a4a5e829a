//! The suite's temporary directory: the docroot with the registry's
//! fixtures (programs compiled with `cc -O2`), `bin/` for the programs the
//! suite runs beside the servers (the FastCGI responder), and one directory
//! per server for its config, pid files and logs. Everything is removed
//! when the suite ends.
//!
//! Servers started as root drop to an unprivileged user, so the docroot is
//! world-readable and the log directories world-writable (sticky).

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::certificate::SuiteCertificate;
use crate::row::{Fixture, FixtureContents};
use tern_bench::Error;

/// The suite's files.
#[derive(Debug)]
pub struct Workdir {
    dir: tempfile::TempDir,
    docroot: PathBuf,
    cc: Option<PathBuf>,
    unbuilt: Vec<Unbuilt>,
    certificate: Option<SuiteCertificate>,
}

/// A program fixture that could not be made (no compiler, it failed, or
/// its interpreter is not installed): the rows that fetch it are skipped
/// with a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unbuilt {
    /// The fixture's path under the docroot.
    pub path: String,
    /// Why, for the note.
    pub why: String,
}

/// How long one `cc` may take.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(60);

/// The bytes the pattern fixtures repeat: printable, one line of 65.
const PATTERN: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/\n";

impl Workdir {
    /// Creates the directory and writes the fixtures, compiling programs
    /// with `cc` (`None`: none found, so programs are [`Workdir::unbuilt`]).
    pub fn create(fixtures: &[Fixture], cc: Option<&Path>) -> Result<Workdir, Error> {
        let dir = tempfile::Builder::new()
            .prefix("tern-suite-")
            .tempdir()
            .map_err(|e| Error::system("creating the suite's temp dir", e))?;
        set_mode(dir.path(), 0o755)?;
        let docroot = dir.path().join("www");
        make_dir(&docroot, 0o755)?;
        let src = dir.path().join("src");
        let mut unbuilt = Vec::new();
        for f in fixtures {
            let made = match &f.contents {
                FixtureContents::C(source) => {
                    let out = docroot.join(&f.path);
                    compile(cc, &src, &out, source, &[])
                }
                FixtureContents::Script { interpreter, .. }
                    if !Path::new(interpreter).is_file() =>
                {
                    Err(format!("{interpreter} not installed"))
                }
                _ => {
                    write_fixture(&docroot, f)?;
                    Ok(())
                }
            };
            if let Err(why) = made {
                unbuilt.push(Unbuilt {
                    path: f.path.clone(),
                    why,
                });
            }
        }
        Ok(Workdir {
            dir,
            docroot,
            cc: cc.map(Path::to_owned),
            unbuilt,
            certificate: None,
        })
    }

    /// Compiles `source` into `bin/NAME` with `cc -O2`, linking `libs`
    /// (`["-lfcgi"]`); the error is a note.
    pub fn build_program(
        &self,
        name: &str,
        source: &str,
        libs: &[&str],
    ) -> Result<PathBuf, String> {
        let out = self.dir.path().join("bin").join(name);
        let src = self.dir.path().join("src");
        compile(self.cc.as_deref(), &src, &out, source, libs)?;
        Ok(out)
    }

    /// Makes the run's TLS certificate in `tls/` (outside the docroot):
    /// every server then gets a TLS port serving it.
    pub fn make_certificate(&mut self) -> Result<&SuiteCertificate, Error> {
        let c = SuiteCertificate::write(&self.dir.path().join("tls"))?;
        Ok(self.certificate.insert(c))
    }

    /// The run's TLS certificate, when the rows need one.
    pub fn certificate(&self) -> Option<&SuiteCertificate> {
        self.certificate.as_ref()
    }

    /// The programs that could not be built.
    pub fn unbuilt(&self) -> &[Unbuilt] {
        &self.unbuilt
    }

    /// The suite's own directory (helpers put their sockets here).
    pub fn path(&self) -> &Path {
        self.dir.path()
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

/// Compiles `source` into `out` with `cc -O2`, then `libs`; the error is a
/// note.
fn compile(
    cc: Option<&Path>,
    src: &Path,
    out: &Path,
    source: &str,
    libs: &[&str],
) -> Result<(), String> {
    let cc = cc.ok_or("no C compiler (cc) found")?;
    if let Some(parent) = out.parent() {
        make_dir(parent, 0o755).map_err(|e| e.to_string())?;
    }
    make_dir(src, 0o755).map_err(|e| e.to_string())?;
    let name = out
        .strip_prefix(src.parent().unwrap_or(src))
        .unwrap_or(out)
        .to_string_lossy()
        .replace('/', "_");
    let c_file = src.join(name).with_extension("c");
    fs::write(&c_file, source).map_err(|e| format!("{}: {e}", c_file.display()))?;
    let log = src.join("cc.log");
    let log_file = fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = Command::new(cc)
        .arg("-O2")
        .arg("-o")
        .arg(out)
        .arg(&c_file)
        .args(libs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", cc.display()))?;
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if began.elapsed() > COMPILE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} took over {COMPILE_TIMEOUT:?}", cc.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        let text = fs::read_to_string(&log).unwrap_or_default();
        // The first error says more than the "In function ..." before it.
        let first = text
            .lines()
            .find(|l| l.contains("error"))
            .or_else(|| text.lines().next())
            .unwrap_or("no output");
        return Err(format!("{} failed ({status}): {first}", cc.display()));
    }
    // cc made it executable for us; make it runnable by an unprivileged user.
    set_mode(out, 0o755).map_err(|e| e.to_string())
}

pub(crate) fn write_fixture(docroot: &Path, f: &Fixture) -> Result<(), Error> {
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
        FixtureContents::C(source) => file.write_all(source.as_bytes()).map_err(file_err)?,
        FixtureContents::Script { interpreter, body } => {
            let text = format!("#!{interpreter}\n{body}");
            file.write_all(text.as_bytes()).map_err(file_err)?;
        }
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
    set_mode(&path, f.mode)
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
                mode: 0o755,
            },
        ];
        let w = Workdir::create(&fixtures, None).unwrap();
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

    fn cc() -> Option<PathBuf> {
        crate::default_search_path()
            .into_iter()
            .map(|d| d.join("cc"))
            .find(|p| p.is_file())
    }

    #[test]
    fn compiles_programs_or_says_why_not() {
        let hello = Fixture::c_program("cgi-bin/hello.cgi", crate::row::HELLO_C);
        let broken = Fixture::c_program("cgi-bin/broken.cgi", "int main(void) { return }\n");
        let w = Workdir::create(&[hello.clone(), broken.clone()], None).unwrap();
        assert_eq!(w.unbuilt().len(), 2);
        assert!(w.unbuilt()[0].why.contains("no C compiler"));
        assert!(!w.docroot().join("cgi-bin/hello.cgi").exists());

        let Some(cc) = cc() else {
            return; // the no-compiler path is covered above
        };
        let w = Workdir::create(&[hello, broken], Some(&cc)).unwrap();
        assert_eq!(w.unbuilt().len(), 1, "{:?}", w.unbuilt());
        assert_eq!(w.unbuilt()[0].path, "cgi-bin/broken.cgi");
        assert!(w.unbuilt()[0].why.contains("failed"), "{:?}", w.unbuilt());
        assert!(w.unbuilt()[0].why.contains("error"), "{:?}", w.unbuilt());
        let program = w.docroot().join("cgi-bin/hello.cgi");
        let out = Command::new(&program).output().unwrap();
        assert_eq!(out.stdout, b"Content-Type: text/plain\n\nHello!\n");
        let mode = fs::metadata(&program).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn the_cgiplus_program_answers_as_cgi_and_loops_under_cgiplus() {
        use crate::row::CGIPLUS_C;
        use std::io::Read as _;

        let Some(cc) = cc() else {
            return; // its rows are skipped with a note, as above
        };
        let f = Fixture::c_program("cgiplus-bin/plus-hello.cgi", CGIPLUS_C);
        let w = Workdir::create(&[f], Some(&cc)).unwrap();
        assert!(w.unbuilt().is_empty(), "{:?}", w.unbuilt());
        let program = w.docroot().join("cgiplus-bin/plus-hello.cgi");

        // Plain CGI: the request in the environment, one response.
        let out = Command::new(&program)
            .env_clear()
            .env("SCRIPT_NAME", "/cgi-bin/plus-64k.cgi")
            .output()
            .unwrap();
        assert!(out.status.success());
        let head = b"Content-Type: application/octet-stream\n\n";
        assert_eq!(&out.stdout[..head.len()], head);
        assert_eq!(out.stdout.len(), head.len() + 65_536);

        // CGIplus: two requests (the first with a body that looks like
        // requests, to be skipped by its length), each
        // answered and ended by the sentinel and one newline; end of input
        // ends the loop.
        let mut child = Command::new(&program)
            .env_clear()
            .env("CGIPLUSEOF", "--eof-1234--")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(
                b"!\nREQUEST_METHOD=POST\nCONTENT_LENGTH=5\nSCRIPT_NAME=/cgiplus-bin/plus-hello.cgi\n\n!\n\n\n\n\
                  !\nREQUEST_URI=/cgiplus-bin/plus-64k.cgi\nSCRIPT_NAME=/cgiplus-bin/plus-64k.cgi\n\n",
            )
            .unwrap();
        drop(stdin);
        let mut text = Vec::new();
        child.stdout.take().unwrap().read_to_end(&mut text).unwrap();
        assert!(child.wait().unwrap().success());
        let first = b"Content-Type: text/plain\n\nHello!\n--eof-1234--\n";
        assert_eq!(&text[..first.len()], first);
        let rest = &text[first.len()..];
        assert_eq!(&rest[..head.len()], head);
        assert_eq!(rest.len(), head.len() + 65_536 + b"--eof-1234--\n".len());
        assert!(rest.ends_with(b"xx--eof-1234--\n"));
    }
}
