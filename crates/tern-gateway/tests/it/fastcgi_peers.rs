//! The FastCGI client connection against the applications tern meets in
//! the field: Debian's php-fpm running PHP scripts, and fcgiwrap running a
//! shell CGI script, each started by the test on a Unix socket in a
//! temporary directory.

use std::os::unix::net::UnixStream;
use std::process::Stdio;

use tern_gateway::fastcgi::conn::{self, StartBody};
use tern_gateway::fastcgi::socket::{self, Address, Socket};

use super::fastcgi_conn::{cgi_env, exchange, pattern, Group, LIMIT};
use super::*;

/// The message when a peer program is missing: the test fails, it does
/// not skip.
fn missing(what: &str) -> ! {
    panic!("{what} is not installed: run scripts/test-all, which installs php-fpm, php-cgi and fcgiwrap")
}

/// Waits (up to 10 s) until something accepts on `path`, failing early if
/// the process died; `log` says why it did.
async fn wait_for_socket(process: &mut Group, path: &Path, log: impl Fn() -> String) {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if UnixStream::connect(path).is_ok() {
            return;
        }
        assert!(!process.exited(), "it exited at start:\n{}", log());
        assert!(
            Instant::now() < end,
            "no socket at {} within 10 s:\n{}",
            path.display(),
            log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// php-fpm with a static pool of two workers, its config, log and scripts
/// in a temporary directory.
struct Fpm {
    dir: tempfile::TempDir,
    addr: Address,
    _process: Group,
}

impl Fpm {
    async fn start() -> Fpm {
        let bin = std::fs::read_dir("/usr/sbin")
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))
            })
            .unwrap_or_else(|| missing("php-fpm (/usr/sbin/php-fpm*)"));
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        let root = rustix::process::geteuid().is_root();
        let conf = format!(
            "[global]\nerror_log = {log}\ndaemonize = no\npid = {pid}\n\n\
             [www]\nlisten = {sock}\npm = static\npm.max_children = 2\nclear_env = yes\n{user}",
            log = p("fpm.log").display(),
            pid = p("fpm.pid").display(),
            sock = p("fpm.sock").display(),
            user = if root {
                "user = root\ngroup = root\n"
            } else {
                ""
            },
        );
        std::fs::write(p("fpm.conf"), conf).unwrap();
        let scripts = [
            ("hello.php", "<?php echo \"Hello!\\n\";\n"),
            (
                "server.php",
                "<?php header('Content-Type: text/plain');\n\
                 foreach (['REQUEST_METHOD', 'QUERY_STRING', 'SCRIPT_NAME', 'CONTENT_LENGTH', 'HTTP_HOST'] as $k)\n\
                 echo $k, '=', $_SERVER[$k] ?? '', \"\\n\";\n",
            ),
            (
                "input.php",
                "<?php $b = file_get_contents('php://input');\n\
                 header('X-Body-Length: ' . strlen($b));\necho $b;\n",
            ),
            ("pid.php", "<?php echo getmypid(), \"\\n\";\n"),
            ("log.php", "<?php error_log('tern-test-oops'); echo \"logged\\n\";\n"),
        ];
        for (name, text) in scripts {
            std::fs::write(p(name), text).unwrap();
        }
        let mut cmd = Command::new(&bin);
        cmd.arg("-F")
            .arg("-y")
            .arg(p("fpm.conf"))
            .arg("-p")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if root {
            cmd.arg("-R");
        }
        let mut process = Group::spawn(&mut cmd);
        let log = || std::fs::read_to_string(p("fpm.log")).unwrap_or_default();
        wait_for_socket(&mut process, &p("fpm.sock"), log).await;
        Fpm {
            addr: Address::Unix(p("fpm.sock")),
            _process: process,
            dir,
        }
    }

    fn script(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    async fn connect(&self) -> Socket {
        socket::connect(&self.addr, LIMIT).await.unwrap()
    }
}

#[tokio::test]
async fn php_fpm_says_hello_and_keeps_the_connection_for_the_same_worker() {
    let fpm = Fpm::start().await;
    let hello = cgi_env("GET", "/hello.php", None, &fpm.script("hello.php"));
    let a = exchange(fpm.connect().await, &hello, StartBody::Empty, vec![]).await;
    assert_eq!(a.status(), 0);
    assert_eq!(a.body(), b"Hello!\n");
    let pid = cgi_env("GET", "/pid.php", None, &fpm.script("pid.php"));
    let mut first = exchange(
        a.reused.expect("the connection back"),
        &pid,
        StartBody::Empty,
        vec![],
    )
    .await;
    let second = exchange(
        first.reused.take().expect("again"),
        &pid,
        StartBody::Empty,
        vec![],
    )
    .await;
    assert_eq!(first.body(), second.body(), "one connection, one worker");
    assert!(second.reused.is_some());
}

#[tokio::test]
async fn php_fpm_sees_the_cgi_variables() {
    let fpm = Fpm::start().await;
    let env = cgi_env(
        "POST",
        "/server.php?x=1",
        Some(3),
        &fpm.script("server.php"),
    );
    let a = exchange(
        fpm.connect().await,
        &env,
        StartBody::Whole("abc".into()),
        vec![],
    )
    .await;
    let text = String::from_utf8_lossy(a.body()).into_owned();
    for line in [
        "REQUEST_METHOD=POST",
        "QUERY_STRING=x=1",
        "SCRIPT_NAME=/server.php",
        "CONTENT_LENGTH=3",
        "HTTP_HOST=test.example",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
}

#[tokio::test]
async fn php_fpm_reads_a_1_mb_post_body_whole_and_streamed() {
    let fpm = Fpm::start().await;
    let body = pattern(1 << 20);
    let env = cgi_env(
        "POST",
        "/input.php",
        Some(1 << 20),
        &fpm.script("input.php"),
    );
    let whole = exchange(
        fpm.connect().await,
        &env,
        StartBody::Whole(body.clone()),
        vec![],
    )
    .await;
    assert!(
        whole.text().contains("X-Body-Length: 1048576"),
        "{}",
        whole.text().get(..300).unwrap_or_default()
    );
    assert!(whole.body() == &body[..]);
    let pieces = body.chunks(100_000).map(|c| body.slice_ref(c)).collect();
    let streamed = exchange(whole.reused.unwrap(), &env, StartBody::Streamed, pieces).await;
    assert!(streamed.body() == &body[..]);
    assert!(streamed.reused.is_some());
}

#[tokio::test]
async fn php_fpm_logs_through_stderr_records() {
    let fpm = Fpm::start().await;
    let env = cgi_env("GET", "/log.php", None, &fpm.script("log.php"));
    let a = exchange(fpm.connect().await, &env, StartBody::Empty, vec![]).await;
    assert_eq!(a.body(), b"logged\n");
    let stderr = String::from_utf8_lossy(&a.stderr);
    assert!(stderr.contains("tern-test-oops"), "stderr: {stderr:?}");
}

#[tokio::test]
async fn php_fpm_does_not_multiplex() {
    let fpm = Fpm::start().await;
    let (_, values) = conn::get_values(fpm.connect().await, &["FCGI_MPXS_CONNS"], LIMIT)
        .await
        .unwrap();
    assert_eq!(values, [("FCGI_MPXS_CONNS".to_owned(), "0".to_owned())]);
}

/// fcgiwrap with stderr forwarded over FastCGI (`-f`), and its scripts.
struct Fcgiwrap {
    dir: tempfile::TempDir,
    addr: Address,
    _process: Group,
}

impl Fcgiwrap {
    async fn start() -> Fcgiwrap {
        let bin = Path::new("/usr/sbin/fcgiwrap");
        if !bin.exists() {
            missing("fcgiwrap (/usr/sbin/fcgiwrap)");
        }
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("fcgiwrap.sock");
        let scripts = [
            (
                "hello.cgi",
                "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\necho \"Hello from sh: $REQUEST_METHOD $QUERY_STRING\"\n",
            ),
            (
                "echo.cgi",
                // The whole body first: fcgiwrap passes all of STDIN to the
                // script before it reads the script's output.
                "#!/bin/sh\nt=$(/bin/mktemp)\n/bin/cat > \"$t\"\nprintf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\n/bin/cat \"$t\"\n/bin/rm -f \"$t\"\n",
            ),
            (
                "warn.cgi",
                "#!/bin/sh\necho 'tern-test-warning' >&2\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n",
            ),
        ];
        for (name, text) in scripts {
            install(&dir.path().join(name), text.as_bytes(), 0o755);
        }
        let mut cmd = Command::new(bin);
        cmd.arg("-f")
            .arg("-s")
            .arg(format!("unix:{}", sock.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let mut process = Group::spawn(&mut cmd);
        wait_for_socket(&mut process, &sock, String::new).await;
        Fcgiwrap {
            addr: Address::Unix(sock),
            _process: process,
            dir,
        }
    }

    fn script(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

#[tokio::test]
async fn fcgiwrap_runs_a_shell_script_twice_on_one_connection() {
    let wrap = Fcgiwrap::start().await;
    let env = cgi_env("GET", "/hello.cgi?q=1", None, &wrap.script("hello.cgi"));
    let sock = socket::connect(&wrap.addr, LIMIT).await.unwrap();
    let first = exchange(sock, &env, StartBody::Empty, vec![]).await;
    assert_eq!(first.status(), 0);
    assert_eq!(first.body(), b"Hello from sh: GET q=1\n");
    let again = first.reused.expect("fcgiwrap honours KEEP_CONN");
    let second = exchange(again, &env, StartBody::Empty, vec![]).await;
    assert_eq!(second.body(), b"Hello from sh: GET q=1\n");
}

#[tokio::test]
async fn fcgiwrap_pipes_a_body_through_and_forwards_stderr() {
    let wrap = Fcgiwrap::start().await;
    let body = pattern(300_000);
    let env = cgi_env("POST", "/echo.cgi", Some(300_000), &wrap.script("echo.cgi"));
    let sock = socket::connect(&wrap.addr, LIMIT).await.unwrap();
    let pieces = body.chunks(70_000).map(|c| body.slice_ref(c)).collect();
    let a = exchange(sock, &env, StartBody::Streamed, pieces).await;
    assert!(a.body() == &body[..], "the body came back changed");

    // On the same connection: one fcgiwrap process serves one connection
    // at a time, so a second one would wait for this one to close.
    let env = cgi_env("GET", "/warn.cgi", None, &wrap.script("warn.cgi"));
    let w = exchange(
        a.reused.expect("the connection back"),
        &env,
        StartBody::Empty,
        vec![],
    )
    .await;
    assert_eq!(w.body(), b"ok\n");
    // fcgiwrap ends each stderr line with CRLF.
    assert_eq!(
        String::from_utf8_lossy(&w.stderr).trim_end(),
        "tern-test-warning"
    );
}
