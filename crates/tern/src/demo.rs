//! The built-in demo site: files compiled into the binary and written to a
//! temporary directory at start, removed at exit. It shows each handler kind.
//!
//! The directory holds the site (`site/`), its CGI scripts (`cgi-bin/`,
//! outside the document root so their source is never served) and the
//! configuration that routes them (`tern.toml`).

use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// The demo's configuration file, inside the directory [`write`] makes.
pub(crate) const CONFIG: &str = "tern.toml";

/// (path inside the demo directory, contents, mode)
const FILES: &[(&str, &[u8], u32)] = &[
    (CONFIG, include_bytes!("../demo/tern.toml"), 0o644),
    (
        "site/index.html",
        include_bytes!("../demo/index.html"),
        0o644,
    ),
    ("site/style.css", include_bytes!("../demo/style.css"), 0o644),
    ("site/hello.txt", include_bytes!("../demo/hello.txt"), 0o644),
    (
        "site/files/readme.txt",
        include_bytes!("../demo/files/readme.txt"),
        0o644,
    ),
    (
        "cgi-bin/hello.sh",
        include_bytes!("../demo/cgi-bin/hello.sh"),
        0o755,
    ),
    (
        "cgi-bin/form.pl",
        include_bytes!("../demo/cgi-bin/form.pl"),
        0o755,
    ),
    (
        "cgi-bin/events.sh",
        include_bytes!("../demo/cgi-bin/events.sh"),
        0o755,
    ),
];

/// The compiled CGI example's name in `cgi-bin/`: tern's own binary, which
/// answers as a CGI program when started under this name (see
/// [`run_compiled_cgi`]). A compiled example that needs no compiler at run
/// time.
pub(crate) const COMPILED_CGI: &str = "hello-compiled.cgi";

/// Writes the demo site into a new temporary directory.
pub(crate) fn write() -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("tern-demo-").tempdir()?;
    write_into(dir.path())?;
    let exe = std::env::current_exe()?;
    let target = dir.path().join("cgi-bin").join(COMPILED_CGI);
    // A hard link costs nothing; across file systems, a copy.
    if std::fs::hard_link(&exe, &target).is_err() {
        std::fs::copy(&exe, &target)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(dir)
}

/// If this process was started as the demo's compiled CGI program (by its
/// name, with a CGI environment), answers the request and returns true.
pub(crate) fn run_compiled_cgi() -> bool {
    use std::io::Write as _;
    let named = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n == COMPILED_CGI))
        .unwrap_or(false);
    if !named || std::env::var_os("GATEWAY_INTERFACE").is_none() {
        return false;
    }
    let var = |n: &str| std::env::var(n).unwrap_or_default();
    let body = format!(
        "Hello from a compiled CGI program: tern's own binary, started by tern as {COMPILED_CGI}.\n\
         REQUEST_METHOD={}\nSCRIPT_NAME={}\nPATH_INFO={}\nQUERY_STRING={}\n",
        var("REQUEST_METHOD"),
        var("SCRIPT_NAME"),
        var("PATH_INFO"),
        var("QUERY_STRING"),
    );
    let mut out = io::stdout().lock();
    let _ = write!(out, "Content-Type: text/plain; charset=utf-8\n\n{body}");
    let _ = out.flush();
    true
}

fn write_into(root: &Path) -> io::Result<()> {
    for (name, body, mode) in FILES {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // Written before any thread of tern's starts a process, so no
        // child can inherit the descriptor and make the exec of a script
        // fail with ETXTBSY.
        std::fs::write(&path, body)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
    }
    Ok(())
}
