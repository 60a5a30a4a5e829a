//! The built-in demo site: files compiled into the binary and written to a
//! temporary directory at start, removed at exit. It shows each handler kind.
//!
//! The directory holds the site (`site/`), its CGI scripts (`cgi-bin/`,
//! outside the document root so their source is never served) and the
//! configuration that routes them (`tern.toml`).

use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// The demo's configuration file, inside the directory [`write()`] makes.
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
    (
        "cgiplus-bin/hello.pl",
        include_bytes!("../demo/cgiplus-bin/hello.pl"),
        0o755,
    ),
    (
        "scripts/face2face.pl",
        include_bytes!("../demo/scripts/face2face.pl"),
        0o644,
    ),
    (
        "scripts/form.pl",
        include_bytes!("../demo/scripts/form.pl"),
        0o644,
    ),
    (
        "scripts/hello.py",
        include_bytes!("../demo/scripts/hello.py"),
        0o644,
    ),
    (
        "wasm/hello.wat",
        include_bytes!("../demo/wasm/hello.wat"),
        0o644,
    ),
];

/// The FastCGI example's name in `fcgi-bin/`: tern's own binary again,
/// which answers as a FastCGI application on the listening socket it gets
/// as fd 0 when started under this name (see [`run_fastcgi`]).
pub(crate) const FASTCGI: &str = "hello.fcgi";

/// PHP, when Debian's php-cgi is installed: tern runs it as a FastCGI
/// pool (as lighttpd does), on the scripts in `site/php/`.
const PHP_CGI: &str = "/usr/bin/php-cgi";

const PHP_ROUTE: &str = r#"
# PHP: php-cgi run by tern as a pool of FastCGI processes (added because
# /usr/bin/php-cgi is installed). php-cgi would recycle itself after 500
# requests and fork children of its own; tern manages both instead.
[[site.route]]
extension = "php"
handler = "fastcgi"
command = ["/usr/bin/php-cgi"]
dir = "site"
env = { PHP_FCGI_CHILDREN = "0", PHP_FCGI_MAX_REQUESTS = "0" }
min_processes = 1
max_processes = 2
"#;

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
    for target in [
        dir.path().join("cgi-bin").join(COMPILED_CGI),
        dir.path().join("fcgi-bin").join(FASTCGI),
    ] {
        std::fs::create_dir_all(target.parent().expect("a file in a directory"))?;
        // A hard link costs nothing; across file systems, a copy.
        if std::fs::hard_link(&exe, &target).is_err() {
            std::fs::copy(&exe, &target)?;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    if Path::new(PHP_CGI).exists() {
        let php = dir.path().join("site/php");
        std::fs::create_dir_all(&php)?;
        std::fs::write(
            php.join("face2face.php"),
            "<?php\necho \"<B>Hello!</B>\"\n?>\n",
        )?;
        std::fs::write(php.join("php_info.php"), "<?php phpinfo();\n")?;
        let mut cfg = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(CONFIG))?;
        io::Write::write_all(&mut cfg, PHP_ROUTE.as_bytes())?;
    }
    Ok(dir)
}

/// If this process was started as the demo's FastCGI program (by its
/// name, with a listening socket as fd 0), serves requests until tern
/// stops it, and returns true.
pub(crate) fn run_fastcgi() -> bool {
    let named = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n == FASTCGI))
        .unwrap_or(false);
    if !named {
        return false;
    }
    let served = tern_gateway::fastcgi::responder::serve_fd0(HelloFastCgi { served: 0 });
    if let Err(e) = served {
        eprintln!("{FASTCGI}: {e}");
    }
    true
}

/// The demo's FastCGI application: "Hello!" with what it knows, or 64 KiB
/// when the path holds `64k` (for the benchmark suite).
struct HelloFastCgi {
    served: u64,
}

impl tern_gateway::fastcgi::responder::Respond for HelloFastCgi {
    fn respond(
        &mut self,
        req: &tern_gateway::fastcgi::responder::Request,
        out: &mut tern_gateway::fastcgi::responder::Output<'_>,
    ) -> io::Result<()> {
        self.served += 1;
        let var = |n: &str| String::from_utf8_lossy(req.param(n).unwrap_or_default()).into_owned();
        let uri = var("REQUEST_URI");
        if uri.contains("64k") {
            out.stdout(b"Content-Type: application/octet-stream\r\n\r\n")?;
            return out.stdout(&[b'x'; 65536]);
        }
        if uri.contains("hello-only") {
            return out.stdout(b"Content-Type: text/plain\r\n\r\nHello!\n");
        }
        let body = format!(
            "Content-Type: text/plain; charset=utf-8\r\n\r\n\
             Hello from a FastCGI application: tern's own binary, process {}, request {} on it.\n\
             SCRIPT_NAME={}\nPATH_INFO={}\nQUERY_STRING={}\n",
            std::process::id(),
            self.served,
            var("SCRIPT_NAME"),
            var("PATH_INFO"),
            var("QUERY_STRING"),
        );
        out.stdout(body.as_bytes())
    }
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
