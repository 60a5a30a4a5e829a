//! WebAssembly routes end to end: the binary compiles WAT modules at start
//! and on reload, and runs them per request for raw requests over real
//! sockets.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

const SIGHUP: i32 = 1;

/// The WASI imports the test modules use, and `$write`, which writes a
/// whole buffer to stdout.
const PRELUDE: &str = r#"
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (memory (export "memory") 4)
  (func $write (param $ptr i32) (param $len i32)
    (block $done (loop $more
      (br_if $done (i32.eqz (local.get $len)))
      (i32.store (i32.const 0) (local.get $ptr))
      (i32.store (i32.const 4) (local.get $len))
      (br_if $done (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $ptr (i32.add (local.get $ptr) (i32.load (i32.const 8))))
      (local.set $len (i32.sub (local.get $len) (i32.load (i32.const 8))))
      (br $more))))
"#;

/// A module that answers `text` as plain text.
pub(crate) fn hello(text: &str) -> String {
    let out = format!("Content-Type: text/plain\n\n{text}");
    format!(
        "(module{PRELUDE}\n  (data (i32.const 1024) {out:?})\n  (func (export \"_start\") (call $write (i32.const 1024) (i32.const {})))\n)\n",
        out.len()
    )
}

/// A module that answers with its environment, one `NAME=value` a line,
/// then `--`, then its stdin (the request body).
pub(crate) fn echo() -> String {
    let head = "Content-Type: text/plain\n\n";
    format!(
        r#"(module{PRELUDE}
  (data (i32.const 1024) {head:?})
  (data (i32.const 1100) "--\n")
  (func (export "_start") (local $i i32) (local $n i32)
    (call $write (i32.const 1024) (i32.const {len}))
    ;; NUL-terminated NAME=value strings at 65536; each NUL becomes a line break.
    (drop (call $environ_sizes_get (i32.const 12) (i32.const 16)))
    (drop (call $environ_get (i32.const 8192) (i32.const 65536)))
    (local.set $n (i32.load (i32.const 16)))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (i32.eqz (i32.load8_u (i32.add (i32.const 65536) (local.get $i))))
        (then (i32.store8 (i32.add (i32.const 65536) (local.get $i)) (i32.const 10))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $each)))
    (call $write (i32.const 65536) (local.get $n))
    (call $write (i32.const 1100) (i32.const 3))
    ;; stdin to stdout until its end.
    (block $eof (loop $copy
      (i32.store (i32.const 0) (i32.const 131072))
      (i32.store (i32.const 4) (i32.const 65536))
      (br_if $eof (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
      (br_if $eof (i32.eqz (i32.load (i32.const 8))))
      (call $write (i32.const 131072) (i32.load (i32.const 8)))
      (br $copy))))
)
"#,
        len = head.len()
    )
}

/// A module that traps at once.
const TRAP: &str = r#"(module (memory (export "memory") 1) (func (export "_start") unreachable))"#;

/// A site whose `www/` holds `index.html`, with a wasm route per
/// (prefix, module file name, WAT text).
fn wasm_site(modules: &[(&str, &str, &str)]) -> (tempfile::TempDir, String) {
    let dir = docroot(&[("index.html", b"index")]);
    let mut site = String::new();
    for (prefix, file, text) in modules {
        write_files(&dir.path().join("wasm"), &[(file, text.as_bytes())]);
        site.push_str(&format!(
            "[[site.route]]\nprefix = \"{prefix}\"\nhandler = \"wasm\"\nmodule = \"{{dir}}/wasm/{file}\"\n"
        ));
    }
    (dir, config("", &site))
}

fn send(t: &Tern, raw: &str) -> Response {
    request(t.addr(), raw.as_bytes()).unwrap_or_else(|e| panic!("{raw:?}: {e}\nlog:\n{}", t.log()))
}

#[test]
fn the_demo_answers_from_its_module() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tern::spawn(BIN, &["serve", "--listen", "127.0.0.1:0"], dir);
    let r = get(&t, "/wasm/x?a=1");
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    assert!(
        r.text().starts_with("Hello from WebAssembly!"),
        "{}",
        r.text()
    );
    assert!(
        r.text().contains("PATH_INFO=/x\n") && r.text().contains("QUERY_STRING=a=1\n"),
        "{}",
        r.text()
    );
}

#[test]
fn the_environment_and_the_body_round_trip() {
    let (dir, cfg) = wasm_site(&[("/app", "echo.wat", &echo())]);
    let t = Tern::start_in(BIN, &cfg, dir);
    let body = "a=1&b=\u{e9}t\u{e9}\n".repeat(1000);
    let r = send(
        &t,
        &format!(
            "POST /app/more/path?q=2 HTTP/1.1\r\nHost: test\r\nX-Custom: yes\r\nContent-Type: text/plain\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    let text = r.text();
    let (env, echoed) = text.split_once("--\n").expect("the separator");
    assert_eq!(echoed, body, "the body comes back whole");
    let vars: Vec<(&str, &str)> = env.lines().filter_map(|l| l.split_once('=')).collect();
    let var = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    assert_eq!(var("REQUEST_METHOD"), Some("POST"));
    assert_eq!(var("SCRIPT_NAME"), Some("/app"));
    assert_eq!(var("PATH_INFO"), Some("/more/path"));
    assert_eq!(var("QUERY_STRING"), Some("q=2"));
    assert_eq!(var("CONTENT_LENGTH"), Some(body.len().to_string().as_str()));
    assert_eq!(var("CONTENT_TYPE"), Some("text/plain"));
    assert_eq!(var("HTTP_X_CUSTOM"), Some("yes"));
    assert_eq!(var("GATEWAY_INTERFACE"), Some("CGI/1.1"));
    assert_eq!(var("REMOTE_ADDR"), Some("127.0.0.1"));
    // Nothing of tern's own environment reaches the module.
    assert_eq!(var("TERN_LOG"), None, "{env}");
    assert_eq!(var("PATH"), None, "{env}");
    for name in ["HOME", "USER", "PWD", "LANG"] {
        assert_eq!(var(name), None, "{env}");
    }
}

#[test]
fn a_trapping_module_gets_500_while_a_good_one_keeps_answering() {
    let (dir, cfg) = wasm_site(&[
        ("/trap", "trap.wat", TRAP),
        ("/good", "good.wat", &hello("good\n")),
    ]);
    let t = Tern::start_in(BIN, &cfg, dir);
    let addr = t.addr();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                for i in 0..20 {
                    let path = if (w + i) % 2 == 0 { "/trap" } else { "/good" };
                    let raw =
                        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
                    let r = request(addr, raw.as_bytes()).expect("an answer");
                    seen.push((path, r.status, r.text()));
                }
                seen
            })
        })
        .collect();
    let (mut traps, mut good) = (0, 0);
    for w in workers {
        for (path, status, text) in w.join().unwrap() {
            if path == "/trap" {
                assert_eq!(status, 500, "{text}");
                traps += 1;
            } else {
                assert_eq!((status, text.as_str()), (200, "good\n"));
                good += 1;
            }
        }
    }
    assert_eq!((traps, good), (40, 40));
    assert!(
        t.wait_log("trap.wat"),
        "a log line names the module: {}",
        t.log()
    );
    assert!(t.log().contains("unreachable"), "and the trap: {}", t.log());
    // The server is still there.
    assert_eq!(get(&t, "/good").text(), "good\n");
}

/// Runs `tern ARGS` to its end (at most 60 s): (success, stderr).
fn run_to_end(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tern {args:?} did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.success(), err)
}

#[test]
fn an_invalid_module_fails_check_and_serve_naming_the_file_and_the_route() {
    let (dir, cfg) = wasm_site(&[("/bad", "bad.wat", "(module (func $f (result i32)")]);
    let path = dir.path().join("tern.toml");
    std::fs::write(&path, cfg.replace("{dir}", &dir.path().to_string_lossy())).unwrap();
    let path = path.to_string_lossy();
    // `check` compiles the module as `serve` would.
    let (ok, err) = run_to_end(&["check", "--config", &path]);
    assert!(!ok, "check passed an invalid module: {err}");
    assert!(err.contains("bad.wat") && err.contains("/bad"), "{err}");
    let (ok, err) = run_to_end(&["serve", "--config", &path]);
    assert!(!ok, "serve started with an invalid module: {err}");
    assert!(err.contains("bad.wat"), "names the file: {err}");
    assert!(err.contains("/bad"), "names the route: {err}");
    assert!(
        err.contains("not valid WebAssembly text"),
        "says why: {err}"
    );

    // A module that is not there is a configuration error for `check`
    // too, naming the file and the key.
    std::fs::remove_file(dir.path().join("wasm/bad.wat")).unwrap();
    let (ok, err) = run_to_end(&["check", "--config", &path]);
    assert!(!ok);
    assert!(err.contains("bad.wat") && err.contains("module"), "{err}");
}

#[test]
fn a_reload_serves_the_changed_module() {
    let (dir, cfg) = wasm_site(&[("/app", "app.wat", &hello("first\n"))]);
    let t = Tern::start_in(BIN, &cfg, dir);
    assert_eq!(get(&t, "/app").text(), "first\n");
    std::fs::write(t.path().join("wasm/app.wat"), hello("second\n")).unwrap();
    // Unchanged until the reload: the module was compiled at start.
    assert_eq!(get(&t, "/app").text(), "first\n");
    t.signal(SIGHUP);
    assert!(t.wait_log("configuration reloaded"), "{}", t.log());
    assert_eq!(get(&t, "/app").text(), "second\n");

    // A broken module fails the reload; the old one keeps serving.
    std::fs::write(t.path().join("wasm/app.wat"), "(module").unwrap();
    t.signal(SIGHUP);
    assert!(
        t.wait_log("reload failed, the old configuration keeps serving"),
        "{}",
        t.log()
    );
    assert_eq!(get(&t, "/app").text(), "second\n");
}
