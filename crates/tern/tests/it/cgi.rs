//! CGI end to end: the binary runs real scripts for raw requests over
//! real sockets; the error log and /proc show what happened to them.

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

/// Prints its environment sorted, one `NAME=value` a line (Perl adds no
/// variables of its own, unlike a shell).
const ENV: &str = "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\n\";\nprint \"$_=$ENV{$_}\\n\" for sort keys %ENV;\n";

/// tern with `/cgi-bin` -> `{dir}/cgi` holding `scripts`; `route` adds
/// keys to the route, `top` adds top-level tables.
fn cgi_site(scripts: &[(&str, &str)], route: &str, top: &str) -> Tern {
    let dir = docroot(&[("index.html", b"index")]);
    for (name, body) in scripts {
        tern_testkit::install(&dir.path().join("cgi").join(name), body.as_bytes(), 0o755);
    }
    let site = format!(
        "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{{dir}}/cgi\"\n{route}\n"
    );
    Tern::start_in(BIN, &config(top, &site), dir)
}

fn send(t: &Tern, raw: &str) -> Response {
    request(t.addr(), raw.as_bytes()).unwrap_or_else(|e| panic!("{raw:?}: {e}\nlog:\n{}", t.log()))
}

fn env_of(r: &Response) -> Vec<(String, String)> {
    r.text()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

/// A pid a script wrote to `file`, waiting for it.
fn read_pid(file: &Path) -> u32 {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no pid in {}", file.display());
}

/// (state, parent pid) of a process, or None when it is gone.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.rsplit(')').next()?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}

fn is_dead(pid: u32) -> bool {
    matches!(proc_state(pid), None | Some(('Z', _)))
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for: {what}");
}

/// A script that records its pid and its child's, then hangs silently.
fn hang_script(dir: &Path, name: &str) -> String {
    format!(
        "#!/bin/sh\nsleep 300 &\necho $! > {d}/{name}.kid.tmp && mv {d}/{name}.kid.tmp {d}/{name}.kid\n\
         echo $$ > {d}/{name}.pid.tmp && mv {d}/{name}.pid.tmp {d}/{name}.pid\nwait\n",
        d = dir.display()
    )
}

#[test]
fn the_environment_matches_the_golden_list() {
    let t = cgi_site(&[("env.cgi", ENV)], "", "");
    let r = send(
        &t,
        "POST /cgi-bin/env.cgi/a%20b/c?x=1&y HTTP/1.1\r\nHost: site.test\r\nContent-Type: text/plain\r\n\
         Content-Length: 3\r\nProxy: http://evil.test:3128\r\nAuthorization: Basic dTpw\r\n\
         Proxy-Authorization: Basic dTpw\r\nX-Custom: one\r\nX-Custom: two\r\nConnection: close\r\n\r\nabc",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let dir = t.path();
    let port = t.addr().port().to_string();
    let want: Vec<(String, String)> = [
        ("CONTENT_LENGTH", "3".to_owned()),
        ("CONTENT_TYPE", "text/plain".into()),
        ("DOCUMENT_ROOT", format!("{}/www", dir.display())),
        ("GATEWAY_INTERFACE", "CGI/1.1".into()),
        ("HTTP_CONNECTION", "close".into()),
        ("HTTP_HOST", "site.test".into()),
        ("HTTP_X_CUSTOM", "one, two".into()),
        (
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        ("PATH_INFO", "/a b/c".into()),
        ("PATH_TRANSLATED", format!("{}/www/a b/c", dir.display())),
        ("QUERY_STRING", "x=1&y".into()),
        ("REDIRECT_STATUS", "200".into()),
        ("REMOTE_ADDR", "127.0.0.1".into()),
        ("REMOTE_HOST", "127.0.0.1".into()),
        ("REQUEST_METHOD", "POST".into()),
        ("REQUEST_SCHEME", "http".into()),
        ("REQUEST_URI", "/cgi-bin/env.cgi/a%20b/c?x=1&y".into()),
        ("SCRIPT_FILENAME", format!("{}/cgi/env.cgi", dir.display())),
        ("SCRIPT_NAME", "/cgi-bin/env.cgi".into()),
        ("SERVER_ADDR", "127.0.0.1".into()),
        ("SERVER_NAME", "site.test".into()),
        ("SERVER_PORT", port),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        (
            "SERVER_SOFTWARE",
            format!("tern/{}", env!("CARGO_PKG_VERSION")),
        ),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v))
    .collect();
    // REMOTE_PORT is the client's ephemeral port: present and numeric.
    let mut got = env_of(&r);
    let remote_port = got
        .iter()
        .position(|(n, _)| n == "REMOTE_PORT")
        .expect("REMOTE_PORT");
    assert!(got.remove(remote_port).1.parse::<u16>().is_ok());
    assert_eq!(
        got, want,
        "httpoxy, Authorization and tern's own environment stay out"
    );
}

#[test]
fn authorization_passes_only_when_the_route_opts_in() {
    let t = cgi_site(&[("env.cgi", ENV)], "pass_authorization = true", "");
    let r = send(
        &t,
        "GET /cgi-bin/env.cgi HTTP/1.1\r\nHost: t\r\nAuthorization: Basic dTpw\r\nConnection: close\r\n\r\n",
    );
    assert!(env_of(&r).contains(&("HTTP_AUTHORIZATION".into(), "Basic dTpw".into())));
}

#[test]
fn colliding_headers_and_shellshock_values_are_refused_and_logged() {
    let t = cgi_site(&[("env.cgi", ENV)], "", "");
    let r = send(
        &t,
        "GET /cgi-bin/env.cgi HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 1.2.3.4\r\nX_Forwarded_For: 6.6.6.6\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400);
    assert!(t.wait_log("map to the same variable"), "{}", t.log());
    let r = send(
        &t,
        "GET /cgi-bin/env.cgi HTTP/1.1\r\nHost: t\r\nUser-Agent: () { :; }; /bin/id\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400);
    assert!(t.wait_log("Shellshock"), "{}", t.log());

    let t = cgi_site(&[("env.cgi", ENV)], "refuse_shellshock = false", "");
    let r = send(
        &t,
        "GET /cgi-bin/env.cgi HTTP/1.1\r\nHost: t\r\nUser-Agent: () { :; }; /bin/id\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
}

/// Sends `head` and then `body` from another thread while this one reads
/// the response, so neither side waits for the other to finish first.
fn exchange_streaming(t: &Tern, head: String, body: Vec<u8>, chunked: bool) -> Response {
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        w.write_all(head.as_bytes())?;
        for piece in body.chunks(100_000) {
            if chunked {
                w.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                w.write_all(piece)?;
                w.write_all(b"\r\n")?;
            } else {
                w.write_all(piece)?;
            }
        }
        if chunked {
            w.write_all(b"0\r\n\r\n")?;
        }
        Ok(())
    });
    let r = Response::read_from(&mut s, false).unwrap_or_else(|e| panic!("{e}\n{}", t.log()));
    let _ = writer.join();
    r
}

#[test]
fn large_bodies_stream_both_ways_with_a_script_that_writes_before_it_reads() {
    let t = cgi_site(
        &[(
            "echo.cgi",
            "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\nhead -c 1048576 /dev/zero\ncat\n",
        )],
        "",
        "",
    );
    let body: Vec<u8> = (0..8_000_000u32).map(|i| (i % 253) as u8).collect();
    let head = format!(
        "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let r = exchange_streaming(&t, head, body.clone(), false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 1_048_576 + body.len());
    assert!(r.body[1_048_576..] == body[..], "the echo came back intact");
}

#[test]
fn chunked_bodies_are_spooled_for_an_exact_content_length_or_refused_with_413() {
    let t = cgi_site(
        &[(
            "count.cgi",
            "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s ' \"$CONTENT_LENGTH\"\nwc -c | tr -d ' '\n",
        )],
        "",
        "[limits]\nmax_body_bytes = \"2m\"",
    );
    for size in [10usize, 1_500_000] {
        let head = "POST /cgi-bin/count.cgi HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        let r = exchange_streaming(&t, head.into(), vec![b'x'; size], true);
        assert_eq!(r.text().trim(), format!("{size} {size}"), "size {size}");
    }
    let head = "POST /cgi-bin/count.cgi HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let r = exchange_streaming(&t, head.into(), vec![b'x'; 3_000_000], true);
    assert_eq!(r.status, 413);
}

#[test]
fn local_and_client_redirects() {
    let t = cgi_site(
        &[
            ("from.cgi", "#!/bin/sh\nprintf 'Location: /cgi-bin/to.cgi/p?q=1\\n\\ndiscarded'\n"),
            (
                "to.cgi",
                "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s %s %s %s' \"$REQUEST_METHOD\" \"$PATH_INFO\" \"$QUERY_STRING\" \"${CONTENT_LENGTH:-none}\"\n",
            ),
            ("away.cgi", "#!/bin/sh\nprintf 'Location: http://example.test/x\\n\\n'\n"),
            ("loop.cgi", "#!/bin/sh\nprintf 'Location: /cgi-bin/loop.cgi\\n\\n'\n"),
            // PHP's `header("Location: login.php")`, and a local path
            // with `Status: 200`, as Apache reads them.
            (
                "php.cgi",
                "#!/bin/sh\nprintf 'Status: 302 Found\\nLocation: login.php\\nContent-Type: text/html\\n\\n'\n",
            ),
            (
                "ok.cgi",
                "#!/bin/sh\nprintf 'Status: 200 OK\\nLocation: /cgi-bin/to.cgi/ok\\n\\n'\n",
            ),
        ],
        "",
        "",
    );
    let r = send(
        &t,
        "POST /cgi-bin/from.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody",
    );
    assert_eq!((r.status, r.text().as_str()), (200, "GET /p q=1 none"));
    let r = get(&t, "/cgi-bin/away.cgi");
    assert_eq!(
        (r.status, r.header("location")),
        (302, Some("http://example.test/x"))
    );
    let r = get(&t, "/cgi-bin/php.cgi");
    assert_eq!((r.status, r.header("location")), (302, Some("login.php")));
    let r = get(&t, "/cgi-bin/ok.cgi");
    assert_eq!((r.status, r.text().as_str()), (200, "GET /ok  none"));
    assert_eq!(get(&t, "/cgi-bin/loop.cgi").status, 500);
    assert!(t.wait_log("more than 10 local redirects"), "{}", t.log());
}

#[test]
fn nph_and_head() {
    let t = cgi_site(
        &[
            (
                "nph-raw.cgi",
                "#!/bin/sh\nprintf 'HTTP/1.1 207 Multi\\r\\nContent-Type: text/plain\\r\\nX-Raw: 1\\r\\n\\r\\nraw'\n",
            ),
            (
                "page.cgi",
                "#!/bin/sh\nprintf 'Content-Type: text/html\\nX-Method: %s\\n\\n<p>page</p>' \"$REQUEST_METHOD\"\n",
            ),
        ],
        "",
        "",
    );
    let r = get(&t, "/cgi-bin/nph-raw.cgi");
    assert_eq!(
        (r.status, r.text().as_str(), r.header("x-raw")),
        (207, "raw", Some("1"))
    );
    // The script's own reason phrase goes out, on tern's loop as on hyper's.
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /cgi-bin/nph-raw.cgi HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    let _ = std::io::Read::read_to_end(&mut s, &mut raw);
    assert!(
        raw.starts_with(b"HTTP/1.1 207 Multi\r\n"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    // HEAD on a keep-alive connection: no body, and the next request on
    // the same connection is answered (so no stray body bytes were sent).
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"HEAD /cgi-bin/page.cgi HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = Response::read_from(&mut s, true).unwrap();
    assert_eq!((r.status, r.header("x-method")), (200, Some("HEAD")));
    s.write_all(b"GET /cgi-bin/page.cgi HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = Response::read_from(&mut s, false).unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "<p>page</p>"));
}

#[test]
fn bad_scripts_are_404_403_or_502_with_a_log_line_and_harm_nobody() {
    let t = cgi_site(
        &[
            ("ok.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok'\n"),
            ("silent.cgi", "#!/bin/sh\nexit 3\n"),
            ("garbage.cgi", "#!/bin/sh\necho 'no header at all'\necho\n"),
            ("crash.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n'\nkill -SEGV $$\n"),
            (
                "inject.cgi",
                "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-A: a\\rSet-Cookie: evil=1\\n\\n'\n",
            ),
            ("nul.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-A: a\\000b\\n\\n'\n"),
        ],
        "",
        "",
    );
    tern_testkit::install(&t.path().join("cgi/data.txt"), b"not a script", 0o644);
    assert_eq!(get(&t, "/cgi-bin/missing.cgi").status, 404);
    assert_eq!(get(&t, "/cgi-bin/data.txt").status, 403);
    for (path, logged) in [
        ("/cgi-bin/silent.cgi", "exit status: 3"),
        ("/cgi-bin/garbage.cgi", "line 1: not a header field"),
        ("/cgi-bin/crash.cgi", "SIGSEGV"),
        (
            "/cgi-bin/inject.cgi",
            "control character in the value of `x-a`",
        ),
        (
            "/cgi-bin/nul.cgi",
            "control character in the value of `x-a`",
        ),
    ] {
        let r = get(&t, path);
        assert_eq!(r.status, 502, "{path}");
        assert!(r.header("set-cookie").is_none(), "{path}");
        assert!(t.wait_log(logged), "{path}: {logged}\n{}", t.log());
    }
    assert!(t.wait_log("502: bad gateway"), "{}", t.log());
    assert_eq!(get(&t, "/cgi-bin/ok.cgi").text(), "ok");
}

#[test]
fn stderr_is_logged_with_the_request_id_and_bounded() {
    let t = cgi_site(
        &[(
            "noisy.cgi",
            "#!/bin/sh\necho 'first complaint' >&2\nhead -c 3000000 /dev/zero | tr '\\0' 'e' >&2\nprintf 'Content-Type: text/plain\\n\\ndone'\n",
        )],
        "max_stderr_bytes = 2000",
        "",
    );
    let r = get(&t, "/cgi-bin/noisy.cgi");
    assert_eq!((r.status, r.text().as_str()), (200, "done"));
    assert!(t.wait_log("the rest is dropped"), "{}", t.log());
    let log = t.log();
    let line = log
        .lines()
        .find(|l| l.contains("first complaint"))
        .expect("the stderr line");
    assert!(line.contains("id="), "{line}");
    assert!(
        log.len() < 50_000,
        "the flood reached the log: {} bytes",
        log.len()
    );
}

#[test]
fn a_silent_script_times_out_with_504_and_its_process_group_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let t = cgi_site(
        &[("hang.cgi", &hang_script(dir.path(), "hang"))],
        "timeout = \"700ms\"",
        "",
    );
    let started = Instant::now();
    let r = get(&t, "/cgi-bin/hang.cgi");
    assert_eq!(r.status, 504);
    assert!(started.elapsed() >= Duration::from_millis(700));
    let pid = read_pid(&dir.path().join("hang.pid"));
    let kid = read_pid(&dir.path().join("hang.kid"));
    wait_until("the script and its child to die", || {
        is_dead(pid) && is_dead(kid)
    });
    assert!(t.wait_log("504: gateway timeout"), "{}", t.log());
}

#[test]
fn a_client_that_disconnects_stops_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let t = cgi_site(&[("hang.cgi", &hang_script(dir.path(), "gone"))], "", "");
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.write_all(b"GET /cgi-bin/hang.cgi HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let pid = read_pid(&dir.path().join("gone.pid"));
    let kid = read_pid(&dir.path().join("gone.kid"));
    assert!(!is_dead(pid));
    drop(s);
    wait_until("the script and its child to die", || {
        is_dead(pid) && is_dead(kid)
    });
    assert!(t.wait_log("the client left"), "{}", t.log());
}

/// A streamed response reaches the client as the script writes it, not
/// when it ends: the script writes one line, then waits (at most 10 s)
/// until the client has read it before it writes the next. A server that
/// held the first line back until more came would leave the client
/// waiting; server-sent events and progress output need each write on its
/// way (the demo's `events.sh` arrived all at once on tern's own HTTP/1
/// loop until this was fixed).
#[test]
fn a_streamed_response_reaches_the_client_as_the_script_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let script = format!(
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nfirst\\n'\n\
         i=0; while [ ! -e '{}' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n\
         printf 'second\\n'\n",
        go.display()
    );
    let t = cgi_site(&[("stream.cgi", &script)], "", "");
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /cgi-bin/stream.cgi HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("first") {
        match tern_testkit::read_some(&mut s, &mut chunk) {
            Ok(0) => panic!("the connection ended before the first line: {got:?}"),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) => panic!(
                "the first line did not arrive while the script waited ({e}): {:?}\nlog:\n{}",
                String::from_utf8_lossy(&got),
                t.log()
            ),
        }
    }
    assert!(
        !String::from_utf8_lossy(&got).contains("second"),
        "the second line came before the script was let go"
    );
    std::fs::write(&go, b"").unwrap();
    std::io::Read::read_to_end(&mut s, &mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("second"), "{text}");
}

#[test]
fn a_full_route_queues_then_answers_503() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let script = format!(
        "#!/bin/sh\nwhile [ ! -e {g} ]; do sleep 0.02; done\nprintf 'Content-Type: text/plain\\n\\n%s' \"$QUERY_STRING\"\n",
        g = gate.display()
    );
    let t = cgi_site(
        &[("gated.cgi", &script)],
        "max_concurrent = 1\nqueue = 1",
        "",
    );
    let addr = t.addr();
    let fetch = move |q: &str| {
        let raw =
            format!("GET /cgi-bin/gated.cgi?{q} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        Response::read_from(&mut s, false).unwrap()
    };
    let first = std::thread::spawn(move || fetch("first"));
    wait_until("the first script to run", || {
        children_of(t.pid()).iter().any(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.contains("gated.cgi"))
        })
    });
    // With the slot taken, of two more requests one waits in the queue
    // and the other is refused at once (which one depends on arrival).
    let second = std::thread::spawn(move || fetch("second"));
    let third = std::thread::spawn(move || fetch("third"));
    assert!(t.wait_log("the queue is full"), "{}", t.log());
    std::fs::write(&gate, "").unwrap();
    assert_eq!(first.join().unwrap().text(), "first");
    let mut others = [second.join().unwrap(), third.join().unwrap()];
    others.sort_by_key(|r| r.status);
    assert_eq!(others[0].status, 200);
    assert!(["second", "third"].contains(&others[0].text().as_str()));
    assert_eq!(
        (others[1].status, others[1].header("retry-after")),
        (503, Some("1"))
    );
}

fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| proc_state(p).is_some_and(|(_, pp)| pp == parent))
        .collect()
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn a_burst_of_1000_requests_leaves_no_zombie_and_no_descriptor() {
    let t = cgi_site(
        &[
            (
                "ok.cgi",
                "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok'\n",
            ),
            ("bad.cgi", "#!/bin/sh\necho nope\n"),
        ],
        "queue = 1000",
        "",
    );
    // Warm up: the runtimes' lazily made descriptors exist from here on.
    for _ in 0..20 {
        assert_eq!(get(&t, "/cgi-bin/ok.cgi").status, 200);
    }
    let before = fd_count(t.pid());
    let addr = t.addr();
    let workers: Vec<_> = (0..10)
        .map(|w| {
            std::thread::spawn(move || -> Result<(), String> {
                let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                for i in 0..100 {
                    let bad = (w + i) % 10 == 0;
                    let path = if bad { "bad" } else { "ok" };
                    let raw = format!("GET /cgi-bin/{path}.cgi HTTP/1.1\r\nHost: t\r\n\r\n");
                    s.write_all(raw.as_bytes()).map_err(|e| e.to_string())?;
                    let r =
                        Response::read_from(&mut s, false).map_err(|e| format!("{w}/{i}: {e}"))?;
                    let want = if bad { 502 } else { 200 };
                    if r.status != want {
                        return Err(format!("{w}/{i}: {} instead of {want}", r.status));
                    }
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap().unwrap();
    }
    let pid = t.pid();
    // Every script reaped: no child left at all, zombie or not.
    wait_until("tern to have no child", || children_of(pid).is_empty());
    wait_until("tern's descriptors back to where they were", || {
        fd_count(pid) <= before
    });
}

#[test]
fn the_demo_site_runs_its_cgi_examples() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tern::spawn(BIN, &["serve", "--listen", "127.0.0.1:0"], dir);
    let r = get(&t, "/cgi-bin/hello.sh/x?a=1");
    assert_eq!(r.status, 200, "{}", t.log());
    assert!(
        r.text().contains("PATH_INFO=/x\nQUERY_STRING=a=1\n"),
        "{}",
        r.text()
    );
    let r = send(
        &t,
        "POST /cgi-bin/form.pl HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 11\r\nConnection: close\r\n\r\nwords=a%3Cb",
    );
    assert!(r.text().contains("You said: <b>a&lt;b</b>"), "{}", r.text());
    // The configuration beside the site is not served.
    assert_eq!(get(&t, "/tern.toml").status, 404);
}

/// An answer delimited by the close (a script's body of unknown length to
/// an HTTP/1.0 client that asked to keep the connection) closes a
/// connection the client meant to go on with, and may have pipelined more
/// on: the server reads that off after the answer instead of resetting
/// the connection, which would throw away the answer's tail still in the
/// send queue, and here the close is all that tells the client the body
/// ended.
#[test]
fn a_close_delimited_answer_to_a_pipelining_client_is_not_cut_short() {
    const LEN: usize = 4 << 20;
    let t = cgi_site(
        &[(
            "big.cgi",
            "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nhead -c 4194304 /dev/zero | tr '\\0' x\n",
        )],
        "",
        "",
    );
    let head = b"GET /cgi-bin/big.cgi HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    let next = b"GET /index.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    for round in 0..3 {
        let (text, end) = answer_under_a_flood(t.addr(), head, next, LEN);
        assert!(
            text.starts_with("HTTP/1.0 200 "),
            "round {round}: {:?} ({end:?})",
            &text[..text.len().min(200)]
        );
        assert!(
            !text.to_ascii_lowercase().contains("content-length"),
            "round {round}: the body is not delimited by its close"
        );
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        assert_eq!(body.len(), LEN, "round {round}: {end:?}");
        assert!(end.is_ok(), "round {round}: {end:?}");
    }
}
