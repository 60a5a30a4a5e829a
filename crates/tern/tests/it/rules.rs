//! Rules end to end: `[[site.rules]]`, `[[site.access]]` and
//! `[[site.limit]]` through real requests to the built binary, and the same
//! requests through `tern explain`, which must tell what serving does.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::*;

/// Prints the CGI variables rules change or set, one `NAME=value` a line.
const ENV: &str = "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\n\";\nprint \"$_=$ENV{$_}\\n\" for qw(SCRIPT_NAME PATH_INFO QUERY_STRING REQUEST_URI REMOTE_USER AUTH_TYPE HTTP_AUTHORIZATION REDIRECT_URL REDIRECT_QUERY_STRING APP_MODE);\n";

/// The site every golden case runs against.
const SITE: &str = r#"
[[site.route]]
prefix = "/cgi-bin"
handler = "cgi"
dir = "{dir}/cgi"

[[site.route]]
prefix = "/other"
handler = "cgi"
dir = "{dir}/other"

[[site.rules]]
regex = '^/cgi-bin/env.cgi/(.*)$'
set = { env = { APP_MODE = "m-$1" } }

[[site.rules]]
regex = '^/blog/(\d{4})/(.*)$'
redirect = "/posts/$1/$2"
status = 301

[[site.rules]]
path = "/gone"
return = 410
body = "gone\n"

[[site.rules]]
regex = '^/old/(.*)$'
rewrite = "/new/$1"

[[site.rules]]
path = "/new/**"
set = { headers = { "X-Rule" = "new $path" } }

[[site.rules]]
regex = '^/app/(.*)$'
try_files = ["/static/$1", "/cgi-bin/env.cgi/$1?$query&via=app"]

[[site.rules]]
regex = '^/loop/(.*)$'
rewrite = "/loop/$1"
flow = "last"

[[site.rules]]
method = "DELETE"
fail = 405

[[site.rules]]
path = "/list"
query = { page = "2" }
redirect = "/list/2?"

[[site.rules]]
path = "/dbg"
header = { "X-Debug" = "1" }
return = 204

[[site.access]]
path = "/private/**"
realm = "Staff"
htpasswd = "{dir}/staff.htpasswd"

[[site.access]]
path = "/cgi-bin/whoami.cgi"
realm = "Scripts"
htpasswd = "{dir}/staff.htpasswd"

[[site.access]]
path = "/lan/**"
allow = ["10.0.0.0/8"]

[[site.access]]
path = "/office/**"
allow = ["127.0.0.1"]
htpasswd = "{dir}/staff.htpasswd"
satisfy = "any"
"#;

/// A golden case: a request, and what both serving and explaining say.
struct Case {
    method: &'static str,
    target: &'static str,
    headers: &'static [(&'static str, &'static str)],
    status: u16,
    /// A response header that must be there (`Location`, `X-Rule`...).
    header: Option<(&'static str, &'static str)>,
    /// The final path `tern explain` names (only for cases that route).
    path: Option<&'static str>,
    /// Text the response body must hold.
    body: Option<&'static str>,
}

const fn case(method: &'static str, target: &'static str, status: u16) -> Case {
    Case {
        method,
        target,
        headers: &[],
        status,
        header: None,
        path: None,
        body: None,
    }
}

/// `alice:secret`, Basic.
const ALICE: &str = "Basic YWxpY2U6c2VjcmV0";
/// `alice:wrong`.
const WRONG: &str = "Basic YWxpY2U6d3Jvbmc=";

fn cases() -> Vec<Case> {
    vec![
        Case {
            header: Some(("location", "/posts/2024/hello%20world")),
            ..case("GET", "/blog/2024/hello%20world", 301)
        },
        Case {
            body: Some("gone"),
            ..case("GET", "/gone", 410)
        },
        Case {
            header: Some(("x-rule", "new /new/a.txt")),
            path: Some("/new/a.txt"),
            body: Some("new a"),
            ..case("GET", "/old/a.txt", 200)
        },
        Case {
            path: Some("/static/logo.txt"),
            body: Some("logo"),
            ..case("GET", "/app/logo.txt", 200)
        },
        Case {
            path: Some("/cgi-bin/env.cgi/some/route"),
            body: Some(
                "SCRIPT_NAME=/cgi-bin/env.cgi\nPATH_INFO=/some/route\nQUERY_STRING=x=1&via=app\nREQUEST_URI=/app/some/route?x=1\n",
            ),
            ..case("GET", "/app/some/route?x=1", 200)
        },
        case("GET", "/loop/a", 500),
        Case {
            path: Some("/cgi-bin/env.cgi/x"),
            body: Some("APP_MODE=m-x\n"),
            ..case("GET", "/cgi-bin/env.cgi/x", 200)
        },
        case("DELETE", "/anything", 405),
        Case {
            header: Some(("location", "/list/2")),
            ..case("GET", "/list?page=2", 302)
        },
        Case {
            path: Some("/list"),
            ..case("GET", "/list?page=3", 404)
        },
        Case {
            headers: &[("X-Debug", "1")],
            ..case("GET", "/dbg", 204)
        },
        Case {
            header: Some(("www-authenticate", "Basic realm=\"Staff\", charset=\"UTF-8\"")),
            ..case("GET", "/private/doc.txt", 401)
        },
        Case {
            headers: &[("Authorization", ALICE)],
            path: Some("/private/doc.txt"),
            body: Some("private"),
            ..case("GET", "/private/doc.txt", 200)
        },
        Case {
            headers: &[("Authorization", WRONG)],
            ..case("GET", "/private/doc.txt", 401)
        },
        Case {
            headers: &[("Authorization", ALICE)],
            path: Some("/cgi-bin/whoami.cgi"),
            body: Some("REMOTE_USER=alice\nAUTH_TYPE=Basic\nHTTP_AUTHORIZATION=\n"),
            ..case("GET", "/cgi-bin/whoami.cgi", 200)
        },
        case("GET", "/lan/x.txt", 403),
        Case {
            path: Some("/office/x.txt"),
            body: Some("office"),
            ..case("GET", "/office/x.txt", 200)
        },
    ]
}

/// A docroot with the files the cases reach, CGI scripts, and a password
/// file made by Apache's `htpasswd` (bcrypt).
fn site_dir() -> tempfile::TempDir {
    let dir = docroot(&[
        ("new/a.txt", b"new a"),
        ("static/logo.txt", b"logo"),
        ("private/doc.txt", b"private"),
        ("lan/x.txt", b"lan"),
        ("office/x.txt", b"office"),
    ]);
    for name in ["env.cgi", "whoami.cgi"] {
        tern_testkit::install(&dir.path().join("cgi").join(name), ENV.as_bytes(), 0o755);
    }
    tern_testkit::install(&dir.path().join("other/env.cgi"), ENV.as_bytes(), 0o755);
    for (name, to) in [
        ("jump-static.cgi", "/old/a.txt"),
        ("jump-script.cgi", "/other/env.cgi/x?y=2"),
        ("jump-private.cgi", "/private/doc.txt"),
        ("jump-loop.cgi", "/other/../cgi-bin/jump-loop.cgi"),
    ] {
        let script = format!("#!/bin/sh\nprintf 'Location: {to}\\n\\n'\n");
        tern_testkit::install(&dir.path().join("cgi").join(name), script.as_bytes(), 0o755);
    }
    htpasswd(
        &dir.path().join("staff.htpasswd"),
        &["-B", "-C", "4"],
        "alice",
        "secret",
    );
    dir
}

/// Adds `user` with `password` to `file` with Apache's `htpasswd` and the
/// given format flags.
fn htpasswd(file: &Path, flags: &[&str], user: &str, password: &str) {
    let mut cmd = Command::new("htpasswd");
    cmd.arg("-b");
    if !file.exists() {
        cmd.arg("-c");
    }
    let out = cmd
        .args(flags)
        .arg(file)
        .arg(user)
        .arg(password)
        .output()
        .expect("htpasswd (apache2-utils) is installed: run scripts/test-all");
    assert!(out.status.success(), "htpasswd: {out:?}");
}

fn raw(c: &Case) -> String {
    let mut r = format!(
        "{} {} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n",
        c.method, c.target
    );
    for (n, v) in c.headers {
        r.push_str(&format!("{n}: {v}\r\n"));
    }
    r.push_str("\r\n");
    r
}

/// `tern explain` for the case, against the configuration `t` runs.
fn explain(t: &Tern, c: &Case) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args(["explain", "--config"])
        .arg(t.file("tern.toml"))
        .args(["-X", c.method]);
    for (n, v) in c.headers {
        cmd.args(["-H", &format!("{n}: {v}")]);
    }
    let out = cmd
        .arg(format!("http://test{}", c.target))
        .output()
        .expect("run tern explain");
    assert!(out.status.success(), "tern explain: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn line<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key).map(str::trim))
}

#[test]
fn explain_and_serving_agree_on_every_rule_kind() {
    let t = Tern::start_in(BIN, &config("", SITE), site_dir());
    for c in cases() {
        let what = format!("{} {} {:?}", c.method, c.target, c.headers);
        let r = request(t.addr(), raw(&c).as_bytes())
            .unwrap_or_else(|e| panic!("{what}: {e}\nlog:\n{}", t.log()));
        let told = explain(&t, &c);
        assert_eq!(
            r.status,
            c.status,
            "{what}: served\n{}\nexplained:\n{told}",
            r.text()
        );

        // What explain says the answer is agrees with what was served: the
        // phases answered (their status), or the handler did.
        let answer = line(&told, "answer:").unwrap_or_else(|| panic!("{what}: {told}"));
        if answer == "by the handler" {
            assert!(
                c.path.is_some(),
                "{what}: explain says the handler answers, served {}\n{told}",
                r.status
            );
        } else {
            assert!(
                answer.starts_with(&c.status.to_string()),
                "{what}: explain says {answer}, served {}\n{told}",
                r.status
            );
        }
        if let Some(path) = c.path {
            let told_path = line(&told, "path:").unwrap_or_else(|| panic!("{what}: {told}"));
            assert_eq!(told_path.split('?').next(), Some(path), "{what}\n{told}");
        }
        if let Some((name, value)) = c.header {
            assert_eq!(r.header(name), Some(value), "{what}: served");
            assert!(
                told.contains(&format!("header:  {name}: {value}")),
                "{what}: explained\n{told}"
            );
        }
        if let Some(body) = c.body {
            assert!(r.text().contains(body), "{what}: {:?}", r.text());
        }
    }
    // The loop is logged with the rule that looped.
    assert!(
        t.wait_log("rewrite loop: more than 10 restarts"),
        "log:\n{}",
        t.log()
    );
    assert!(t.log().contains("rules[6]"), "log:\n{}", t.log());
}

#[test]
fn the_access_log_names_the_user_a_realm_granted() {
    let dir = site_dir();
    let t = Tern::start_in(
        BIN,
        &config("[access_log]\npath = \"{dir}/access.log\"\n", SITE),
        dir,
    );
    let c = Case {
        headers: &[("Authorization", ALICE)],
        ..case("GET", "/private/doc.txt", 200)
    };
    assert_eq!(request(t.addr(), raw(&c).as_bytes()).unwrap().status, 200);
    let log = t.file("access.log");
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("/private/doc.txt") {
            assert!(text.contains(" alice ["), "{text}");
            break;
        }
        assert!(Instant::now() < end, "no access log line: {text:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every hash format tern reads, made by the tools that make them: Apache's
/// `htpasswd` (bcrypt, apr1-MD5, SHA-1, SHA-256 and SHA-512 crypt) and
/// Python (`{SSHA}`).
#[test]
fn basic_auth_checks_every_htpasswd_format() {
    let dir = docroot(&[("p/doc.txt", b"doc")]);
    let file = dir.path().join("users.htpasswd");
    let formats: [(&str, &[&str]); 5] = [
        ("bcrypt", &["-B", "-C", "4"]),
        ("apr1", &["-m"]),
        ("sha1", &["-s"]),
        ("sha256", &["-2"]),
        ("sha512", &["-5", "-r", "10000"]),
    ];
    for (user, flags) in formats {
        htpasswd(&file, flags, user, &format!("pw-{user}"));
    }
    // {SSHA}: base64(sha1(password + salt) + salt).
    let out = Command::new("python3")
        .args([
            "-c",
            "import base64,hashlib;s=b'saltsalt';print('ssha:{SSHA}'+base64.b64encode(hashlib.sha1(b'pw-ssha'+s).digest()+s).decode())",
        ])
        .output()
        .expect("python3");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&String::from_utf8(out.stdout).unwrap());
    std::fs::write(&file, &text).unwrap();
    assert!(text.contains("$2y$") && text.contains("$apr1$") && text.contains("{SHA}"));
    assert!(text.contains("$5$") && text.contains("$6$") && text.contains("{SSHA}"));

    let t = Tern::start_in(
        BIN,
        &config(
            "",
            "[[site.access]]\npath = \"/p/**\"\nhtpasswd = \"{dir}/users.htpasswd\"\n",
        ),
        dir,
    );
    let basic = |user: &str, pw: &str| {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
        let raw = format!(
            "GET /p/doc.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\nAuthorization: Basic {token}\r\n\r\n"
        );
        request(t.addr(), raw.as_bytes()).unwrap().status
    };
    for user in ["bcrypt", "apr1", "sha1", "sha256", "sha512", "ssha"] {
        assert_eq!(
            basic(user, &format!("pw-{user}")),
            200,
            "{user}\n{}",
            t.log()
        );
        // Twice: the second is answered from the cache of verified
        // credentials, and must agree.
        assert_eq!(basic(user, &format!("pw-{user}")), 200, "{user} again");
        assert_eq!(basic(user, &format!("pw-{user}x")), 401, "{user} wrong");
        assert_eq!(basic(user, ""), 401, "{user} empty");
    }
    assert_eq!(basic("nobody", "pw-bcrypt"), 401);
    // The weak formats are named in a warning at start.
    assert!(t.log().contains("quick to guess"), "{}", t.log());
}

#[test]
fn a_password_file_tern_cannot_read_is_a_config_error_naming_file_and_line() {
    let dir = docroot(&[]);
    let file = dir.path().join("bad.htpasswd");
    std::fs::write(&file, "# staff\n").unwrap();
    htpasswd(&file, &["-B", "-C", "4"], "alice", "secret");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("bob:plaintext\n");
    std::fs::write(&file, text).unwrap();
    let cfg = config(
        "",
        "[[site.access]]\npath = \"/a/**\"\nhtpasswd = \"bad.htpasswd\"\n",
    )
    .replace("{dir}", &dir.path().to_string_lossy());
    let path = dir.path().join("tern.toml");
    std::fs::write(&path, cfg).unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("site[0].access[0].htpasswd"), "{err}");
    assert!(err.contains("bad.htpasswd: line 3"), "{err}");
    assert!(err.contains("bob"), "{err}");
    assert!(!err.contains("plaintext"), "the hash is never shown: {err}");
}

#[test]
fn limit_req_refuses_over_the_burst_and_delays_within_it() {
    let dir = docroot(&[("nd.txt", b"nd"), ("d.txt", b"d")]);
    let site =
        "[[site.limit]]\npath = \"/nd.txt\"\nrate = \"6r/m\"\nburst = 2\ndelay = \"nodelay\"\n\n\
                [[site.limit]]\npath = \"/d.txt\"\nrate = \"5r/s\"\nburst = 5\n";
    let t = Tern::start_in(BIN, &config("", site), dir);
    // nodelay: the first and a burst of two pass at once; the fourth is
    // refused with a Retry-After (6r/m: one request per 10 s).
    for i in 0..3 {
        assert_eq!(get(&t, "/nd.txt").status, 200, "request {i}");
    }
    let refused = get(&t, "/nd.txt");
    assert_eq!(refused.status, 429);
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=10).contains(&retry), "Retry-After {retry}");
    assert!(t.wait_log("refused by the limit"), "{}", t.log());

    // Delayed (nginx's default): within the burst, each request waits its
    // turn at 5r/s; three at once: the third is held at least 2 x 200 ms.
    let start = Instant::now();
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let addr = t.addr();
            std::thread::spawn(move || {
                request(
                    addr,
                    b"GET /d.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
                )
                .unwrap()
                .status
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 200);
    }
    assert!(
        start.elapsed() >= Duration::from_millis(350),
        "the third request was not held back: {:?}",
        start.elapsed()
    );
}

/// A script's local redirect (`Location: /path`) to another route is
/// served, not sent to the client: through the rules (a rewrite), to
/// another route (static files, another script), and through the realms;
/// a loop across routes ends.
#[test]
fn script_local_redirects_go_through_rules_routes_and_realms() {
    let t = Tern::start_in(BIN, &config("", SITE), site_dir());
    // To a static file, by way of a rewrite rule and a `set` rule.
    let r = get(&t, "/cgi-bin/jump-static.cgi");
    assert_eq!((r.status, r.text().as_str()), (200, "new a"), "{}", t.log());
    assert_eq!(r.header("x-rule"), Some("new /new/a.txt"));
    // To a script of another route, which knows where the request came from.
    let r = get(&t, "/cgi-bin/jump-script.cgi?z=1");
    assert_eq!(r.status, 200);
    let text = r.text();
    for line in [
        "SCRIPT_NAME=/other/env.cgi\n",
        "PATH_INFO=/x\n",
        "QUERY_STRING=y=2\n",
        "REQUEST_URI=/other/env.cgi/x?y=2\n",
        "REDIRECT_URL=/cgi-bin/jump-script.cgi\n",
        "REDIRECT_QUERY_STRING=z=1\n",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    // Into a realm: authorized as any request (no way around a password).
    let r = get(&t, "/cgi-bin/jump-private.cgi");
    assert_eq!(r.status, 401);
    let r = request(
        t.addr(),
        format!("GET /cgi-bin/jump-private.cgi HTTP/1.1\r\nHost: test\r\nConnection: close\r\nAuthorization: {ALICE}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "private"));
    // A loop: bounded, 500, one log line.
    assert_eq!(get(&t, "/cgi-bin/jump-loop.cgi").status, 500);
    assert!(t.wait_log("more than 10 local redirects"), "{}", t.log());
}

/// `max_connections_per_client`: a client's connection over the limit is
/// closed at once, without an answer; its other connections are unharmed,
/// and when one ends there is room for another.
#[test]
fn a_client_over_its_connection_limit_is_closed_and_logged() {
    use std::io::Write;
    use std::net::TcpStream;

    let dir = docroot(&[("a.txt", b"a")]);
    let t = Tern::start_in(
        BIN,
        &config("[limits]\nmax_connections_per_client = 2\n", ""),
        dir,
    );
    let ask = "GET /a.txt HTTP/1.1\r\nHost: test\r\n\r\n";
    let open = || {
        let s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    let served = |s: &mut TcpStream| {
        s.write_all(ask.as_bytes()).unwrap();
        Response::read_from(s, false).map(|r| r.status).ok()
    };
    let mut a = open();
    let mut b = open();
    assert_eq!(served(&mut a), Some(200));
    assert_eq!(served(&mut b), Some(200));
    // The third: closed before any answer.
    let mut c = open();
    let _ = c.write_all(ask.as_bytes());
    let mut buf = [0u8; 64];
    let n = tern_testkit::read_some(&mut c, &mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the third connection was answered: {:?}", &buf[..n]);
    assert!(
        t.wait_log("more than 2 connections from this client"),
        "{}",
        t.log()
    );
    // The first two still serve; when one ends, another gets in.
    assert_eq!(served(&mut a), Some(200));
    drop(b);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let mut d = open();
        if served(&mut d) == Some(200) {
            break;
        }
        assert!(Instant::now() < end, "no room after a connection ended");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Address rules over IPv6 loopback as over IPv4: `::1` is its own
/// address, not 127.0.0.1.
#[test]
fn address_rules_hold_over_ipv6_loopback() {
    let dir = docroot(&[("v6/a.txt", b"v6"), ("v4/a.txt", b"v4")]);
    let site = "[[site.access]]\npath = \"/v6/**\"\nallow = [\"::1\"]\n\n\
                [[site.access]]\npath = \"/v4/**\"\nallow = [\"127.0.0.0/8\"]\n\n\
                [[site.rules]]\npath = \"/who\"\nclient = \"::1\"\nreturn = 200\nbody = \"six\"\n\n\
                [[site.rules]]\npath = \"/who\"\nreturn = 200\nbody = \"four\"\n";
    let v6 = Tern::start_in(
        BIN,
        &format!("[[listen]]\naddress = \"[::1]:0\"\n[[site]]\nroot = \"{{dir}}/www\"\n{site}"),
        dir,
    );
    assert!(v6.addr().is_ipv6());
    assert_eq!(get(&v6, "/v6/a.txt").status, 200);
    assert_eq!(get(&v6, "/v4/a.txt").status, 403);
    assert_eq!(get(&v6, "/who").text(), "six");
    assert!(
        v6.wait_log("client ::1 is not in an allowed network"),
        "{}",
        v6.log()
    );

    let dir = docroot(&[("v6/a.txt", b"v6"), ("v4/a.txt", b"v4")]);
    let v4 = Tern::start_in(BIN, &config("", site), dir);
    assert_eq!(get(&v4, "/v6/a.txt").status, 403);
    assert_eq!(get(&v4, "/v4/a.txt").status, 200);
    assert_eq!(get(&v4, "/who").text(), "four");
}

/// Debian's php-fpm, started for one test on a socket in `dir` and
/// stopped (SIGTERM to its master, which stops its workers) on drop.
struct Fpm {
    child: std::process::Child,
}

impl Fpm {
    fn start(dir: &Path) -> Fpm {
        let bin = std::fs::read_dir("/usr/sbin")
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))
            })
            .expect("php-fpm is installed: run scripts/test-all");
        let p = |name: &str| dir.join(name);
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
        let mut cmd = Command::new(bin);
        cmd.arg("-F")
            .arg("-y")
            .arg(p("fpm.conf"))
            .arg("-p")
            .arg(dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if root {
            cmd.arg("-R");
        }
        let mut fpm = Fpm {
            child: cmd.spawn().expect("start php-fpm"),
        };
        let end = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(p("fpm.sock")).is_err() {
            let log = || std::fs::read_to_string(p("fpm.log")).unwrap_or_default();
            assert!(
                fpm.child.try_wait().unwrap().is_none(),
                "php-fpm exited:\n{}",
                log()
            );
            assert!(
                Instant::now() < end,
                "no php-fpm socket within 10 s:\n{}",
                log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        fpm
    }
}

impl Drop for Fpm {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The front controller of WordPress, Laravel and Symfony on real php-fpm:
/// files and directories are served as they are, every other path runs
/// `index.php`, which sees the path the client asked for in REQUEST_URI.
#[test]
fn try_files_gives_php_fpm_a_front_controller() {
    let dir = docroot(&[
        (
            "index.php",
            b"<?php header('Content-Type: text/plain');\nforeach (['SCRIPT_NAME', 'REQUEST_URI', 'QUERY_STRING'] as $k) echo $k, '=', $_SERVER[$k] ?? '', \"\\n\";\n",
        ),
        ("style.css", b"body{}"),
        ("docs/index.html", b"the docs"),
    ]);
    let _fpm = Fpm::start(dir.path());
    let site = "index = [\"index.html\", \"index.php\"]\n\n\
                [[site.route]]\nextension = \"php\"\nhandler = \"fastcgi\"\n\
                connect = \"unix:{dir}/fpm.sock\"\ndir = \"{dir}/www\"\n\n\
                [[site.rules]]\ntry_files = [\"$path\", \"$path/\", \"/index.php?$query\"]\n";
    let t = Tern::start_in(BIN, &config("", site), dir);

    let r = get(&t, "/style.css");
    assert_eq!((r.status, r.text().as_str()), (200, "body{}"));
    let r = get(&t, "/docs/");
    assert_eq!((r.status, r.text().as_str()), (200, "the docs"));
    let r = get(&t, "/blog/2024/hello-world?utm=x");
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    assert_eq!(
        r.text(),
        "SCRIPT_NAME=/index.php\nREQUEST_URI=/blog/2024/hello-world?utm=x\nQUERY_STRING=utm=x\n"
    );
    // A PHP file that does not exist goes to the front controller too, as
    // with nginx's try_files for WordPress; one that exists runs itself.
    let r = get(&t, "/wp-login.php");
    assert_eq!(r.status, 200);
    assert!(
        r.text().contains("REQUEST_URI=/wp-login.php\n"),
        "{}",
        r.text()
    );
    let r = get(&t, "/index.php?p=1");
    assert!(r.text().contains("QUERY_STRING=p=1\n"), "{}", r.text());
}

/// Rules, realms and password files reload with the configuration, whole:
/// under a stream of requests every answer is the old rule's or the new
/// one's, never an error; a bad rule is refused and the old keep serving.
#[test]
fn rules_and_password_files_reload_atomically_under_load() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let dir = docroot(&[("p/doc.txt", b"doc")]);
    htpasswd(
        &dir.path().join("users"),
        &["-B", "-C", "4"],
        "alice",
        "one",
    );
    let cfg = |to: &str| {
        config(
            "",
            &format!(
                "[[site.rules]]\npath = \"/go\"\nredirect = \"{to}\"\n\n\
                 [[site.access]]\npath = \"/p/**\"\nhtpasswd = \"{{dir}}/users\"\n"
            ),
        )
    };
    let t = Tern::start_in(BIN, &cfg("/old"), dir);
    let write = |body: &str| {
        std::fs::write(
            t.file("tern.toml"),
            body.replace("{dir}", &t.path().to_string_lossy()),
        )
        .unwrap()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let addr = t.addr();
    let load = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !stop.load(Ordering::Relaxed) {
                let r = request(
                    addr,
                    b"GET /go HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
                )
                .expect("a request during reloads");
                assert_eq!(r.status, 302);
                seen.insert(r.header("location").unwrap().to_owned());
            }
            seen
        })
    };
    for (n, to) in ["/new", "/newer", "/newest"].into_iter().enumerate() {
        write(&cfg(to));
        t.signal(1);
        let end = Instant::now() + Duration::from_secs(10);
        while t.log().matches("configuration reloaded").count() < n + 1 {
            assert!(Instant::now() < end, "no reload:\n{}", t.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(get(&t, "/go").header("location"), Some(to));
    }
    stop.store(true, Ordering::Relaxed);
    let seen = load.join().unwrap();
    assert!(
        seen.iter().all(|l| l.starts_with("/new") || l == "/old"),
        "{seen:?}"
    );

    // A bad regex: refused, named, and the rules before it keep serving.
    write(&config(
        "",
        "[[site.rules]]\nregex = '^/(go'\nredirect = \"/x\"\n",
    ));
    t.signal(1);
    assert!(
        t.wait_log("reload failed, the old configuration keeps serving"),
        "{}",
        t.log()
    );
    assert!(t.log().contains("rules[0].regex: bad regex"), "{}", t.log());
    assert_eq!(get(&t, "/go").header("location"), Some("/newest"));

    // A password changed in the file is taken at the next reload.
    let basic = |pw: &str| {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("alice:{pw}"));
        let raw = format!(
            "GET /p/doc.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\nAuthorization: Basic {token}\r\n\r\n"
        );
        request(t.addr(), raw.as_bytes()).unwrap().status
    };
    assert_eq!(basic("one"), 200);
    std::fs::remove_file(t.file("users")).unwrap();
    htpasswd(&t.file("users"), &["-B", "-C", "4"], "alice", "two");
    write(&cfg("/newest"));
    t.signal(1);
    let end = Instant::now() + Duration::from_secs(10);
    while t.log().matches("configuration reloaded").count() < 4 {
        assert!(Instant::now() < end, "no reload:\n{}", t.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(basic("one"), 401, "the old password still opens the realm");
    assert_eq!(basic("two"), 200);
}

/// Password checks run off the event loop: while wrong passwords against
/// a costly bcrypt hash (hundreds of milliseconds each) are being checked,
/// requests for open paths on the same server are answered, all of them
/// before the first of the wrong passwords is refused.
#[test]
fn a_flood_of_wrong_passwords_does_not_stall_other_requests() {
    use std::sync::mpsc;

    let dir = docroot(&[("p/doc.txt", b"doc"), ("open.txt", b"open")]);
    htpasswd(
        &dir.path().join("users"),
        &["-B", "-C", "13"],
        "alice",
        "right",
    );
    let t = Tern::start_in(
        BIN,
        &config(
            "[server]\nworkers = 1\n",
            "[[site.access]]\npath = \"/p/**\"\nhtpasswd = \"{dir}/users\"\n",
        ),
        dir,
    );
    let (tx, rx) = mpsc::channel();
    let wrong = base64::engine::general_purpose::STANDARD.encode("alice:wrong");
    let floods: Vec<_> = (0..6)
        .map(|_| {
            let (addr, tx, wrong) = (t.addr(), tx.clone(), wrong.clone());
            std::thread::spawn(move || {
                let raw = format!(
                    "GET /p/doc.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\nAuthorization: Basic {wrong}\r\n\r\n"
                );
                let status = request(addr, raw.as_bytes()).unwrap().status;
                tx.send(("wrong", status)).unwrap();
            })
        })
        .collect();
    // Let the checks start, then ask for open paths.
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..20 {
        let r = get(&t, "/open.txt");
        assert_eq!(r.status, 200);
        tx.send(("open", r.status)).unwrap();
    }
    for f in floods {
        f.join().unwrap();
    }
    drop(tx);
    let order: Vec<(&str, u16)> = rx.iter().collect();
    let first_wrong = order.iter().position(|(k, _)| *k == "wrong").unwrap();
    assert_eq!(
        first_wrong, 20,
        "open requests waited behind password checks: {order:?}"
    );
    assert!(
        order.iter().all(|(k, s)| *k == "open" || *s == 401),
        "{order:?}"
    );
}

/// A cached file's own fields are shared between its answers and, on
/// tern's HTTP/1 loop, written as they were encoded once; a field a rule
/// sets must still replace the file's own, not go out beside it, whether
/// a `[[site.headers]]` rule or a rule's `set` sets it, and over HTTP/2
/// (hyper writes the map) every field of the file is there.
#[test]
fn rules_replace_a_cached_files_own_fields_on_every_protocol() {
    let dir = docroot(&[("a.txt", b"twelve bytes"), ("r/b.txt", b"four")]);
    let site = "[[site.headers]]\npath = \"/a.txt\"\nset = { \"Content-Type\" = \"text/x-header-rule\" }\n\n\
                [[site.rules]]\npath = \"/r/**\"\nset = { headers = { \"Content-Type\" = \"text/x-set\", \"Accept-Ranges\" = \"none\" } }\n";
    let t = Tern::start_in(BIN, &config("", site), dir);
    let fields = |r: &Response, name: &str| -> Vec<String> {
        (r.headers.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    // Twice each: the second answer comes from the cache.
    for _ in 0..2 {
        let a = get(&t, "/a.txt");
        assert_eq!(a.status, 200, "{}", t.log());
        assert_eq!(fields(&a, "content-type"), ["text/x-header-rule"]);
        assert_eq!(fields(&a, "content-length"), ["12"]);
        assert_eq!(fields(&a, "etag").len(), 1, "{:?}", a.headers);
        let b = get(&t, "/r/b.txt");
        assert_eq!(b.status, 200, "{}", t.log());
        assert_eq!(fields(&b, "content-type"), ["text/x-set"]);
        assert_eq!(fields(&b, "accept-ranges"), ["none"]);
        assert_eq!(fields(&b, "content-length"), ["4"]);
        assert_eq!(b.text(), "four");
    }
    let h2 = |path: &str| {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "20", "--http2-prior-knowledge", "-D-"])
            .arg(format!("http://{}{path}", t.addr()))
            .output()
            .expect("run curl");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).to_lowercase()
    };
    for _ in 0..2 {
        let a = h2("/a.txt");
        assert!(a.starts_with("http/2 200"), "{a}");
        assert_eq!(a.matches("content-type:").count(), 1, "{a}");
        assert!(a.contains("content-type: text/x-header-rule\r\n"), "{a}");
        for field in [
            "content-length: 12\r\n",
            "etag: \"",
            "last-modified: ",
            "accept-ranges: bytes\r\n",
        ] {
            assert!(a.contains(field), "{field} missing: {a}");
        }
        let b = h2("/r/b.txt");
        assert!(b.contains("content-type: text/x-set\r\n"), "{b}");
        assert!(b.contains("accept-ranges: none\r\n"), "{b}");
        assert_eq!(b.matches("accept-ranges:").count(), 1, "{b}");
    }
}
