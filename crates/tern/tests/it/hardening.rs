//! What outside conformance suites and a new user found, pinned end to end:
//! the authority that chooses the site, transfer codings tern does not
//! decode, request forms a server must answer, underscore header names,
//! clients that half-close, slow request bodies on script routes, ETags,
//! and the demo's listing.

use std::io::Write as _;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt as _;
use std::time::{Duration, Instant};

use http_body_util::BodyExt as _;

use super::*;

/// Prints its environment, one `NAME=value` a line, then its stdin.
const ENV: &str = "#!/usr/bin/perl\nbinmode STDIN; my $in = do { local $/; <STDIN> };\nprint \"Content-Type: text/plain\\n\\n\";\nprint \"$_=$ENV{$_}\\n\" for sort keys %ENV;\nprint \"--\\n$in\";\n";

/// Two sites, `a.test` (the default) and `b.test`, each with its own
/// index (`A`, `B`) and the same `/cgi-bin` of `scripts`; `route` adds
/// keys to both CGI routes.
fn two_sites(route: &str) -> Tern {
    let dir = tempfile::tempdir().unwrap();
    write_files(&dir.path().join("a"), &[("index.html", b"A")]);
    write_files(&dir.path().join("b"), &[("index.html", b"B")]);
    tern_testkit::install(&dir.path().join("cgi/env"), ENV.as_bytes(), 0o755);
    let site = |host: &str| {
        format!(
            "[[site]]\nhosts = [\"{host}\"]\nroot = \"{{dir}}/{}\"\n[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{{dir}}/cgi\"\n{route}\n",
            &host[..1]
        )
    };
    let cfg = format!(
        "[[listen]]\naddress = \"127.0.0.1:0\"\n{}{}",
        site("a.test"),
        site("b.test")
    );
    Tern::start_in(BIN, &cfg, dir)
}

fn send(t: &Tern, raw: &str) -> Response {
    request(t.addr(), raw.as_bytes()).unwrap_or_else(|e| panic!("{raw:?}: {e}\nlog:\n{}", t.log()))
}

/// The value of `name` in an [`ENV`] script's answer.
fn var(r: &Response, name: &str) -> Option<String> {
    let text = r.text();
    let vars = text.split("\n--\n").next().unwrap_or("");
    vars.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .map(str::to_owned)
}

/// One HTTP/2 request (prior knowledge) made by hyper's client:
/// (status, body).
pub(crate) fn h2(addr: SocketAddr, req: http::request::Builder) -> (u16, String) {
    h2_windowed(addr, None, async |send| {
        let req = req
            .version(http::Version::HTTP_2)
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(10), send.send_request(req))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    })
}

/// An HTTP/2 client (hyper's, prior knowledge) whose streams start with
/// `window` bytes of flow-control window (hyper's own without one); `f`
/// runs with its request sender.
fn h2_windowed<T>(
    addr: SocketAddr,
    window: Option<u32>,
    f: impl AsyncFnOnce(
        &mut hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>,
    ) -> T,
) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut client =
            hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
        if let Some(window) = window {
            client.initial_stream_window_size(window);
        }
        let (mut send, conn) = client
            .handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        f(&mut send).await
    })
}

/// Whether the server closed the connection after its answer.
fn closed_after(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    matches!(tern_testkit::read_some(&mut s, &mut buf), Ok(0) | Err(_))
}

#[test]
fn http11_without_exactly_one_valid_host_is_400() {
    let t = two_sites("");
    for (head, cause) in [
        ("GET / HTTP/1.1\r\n", "HTTP/1.1 request without Host"),
        (
            "GET /cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nHost: evil.test\r\n",
            "more than one Host field",
        ),
        ("GET / HTTP/1.1\r\nHost: b.test x\r\n", "invalid Host value"),
        (
            "GET / HTTP/1.1\r\nHost: b.test/../\r\n",
            "invalid Host value",
        ),
        (
            "GET / HTTP/1.1\r\nHost: a.test@b.test\r\n",
            "invalid Host value",
        ),
        (
            "GET / HTTP/1.1\r\nHost: a.test, b.test\r\n",
            "invalid Host value",
        ),
        (
            "GET / HTTP/1.0\r\nHost: a.test\r\nHost: b.test\r\n",
            "more than one Host field",
        ),
    ] {
        let mut s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(format!("{head}\r\n").as_bytes()).unwrap();
        let r = Response::read_from(&mut s, false).unwrap();
        assert_eq!(r.status, 400, "{head:?}: {}", r.text());
        assert_eq!(r.header("connection"), Some("close"), "{head:?}");
        assert!(closed_after(s), "{head:?}: still open");
        assert!(
            t.wait_log(cause),
            "{head:?}: no log line {cause:?}\n{}",
            t.log()
        );
    }
    // The site still serves.
    assert_eq!(
        send(
            &t,
            "GET / HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n"
        )
        .text(),
        "B"
    );
}

#[test]
fn http10_without_host_is_served_by_the_default_site() {
    let t = two_sites("");
    let r = send(&t, "GET / HTTP/1.0\r\n\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "A"));
    // An empty Host names no authority: the default site too.
    let r = send(&t, "GET / HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "A"));
}

#[test]
fn the_absolute_form_authority_chooses_the_site_and_is_what_scripts_see() {
    let t = two_sites("");
    let r = send(
        &t,
        "GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((r.status, r.text().as_str()), (200, "B"));
    let r = send(
        &t,
        "GET http://b.test:8080/cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(var(&r, "HTTP_HOST").as_deref(), Some("b.test:8080"));
    assert_eq!(var(&r, "SERVER_NAME").as_deref(), Some("b.test"));
    assert!(
        var(&r, "DOCUMENT_ROOT").unwrap().ends_with("/b"),
        "{}",
        r.text()
    );
    // User information in the target is refused, not routed.
    let r = send(
        &t,
        "GET http://a.test@b.test/ HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400);
}

#[test]
fn h2_authority_chooses_the_site_and_reaches_scripts_as_http_host() {
    let t = two_sites("");
    let (status, body) = h2(t.addr(), http::Request::get("http://b.test/"));
    assert_eq!((status, body.as_str()), (200, "B"));
    // Only :authority: scripts still get HTTP_HOST (PHP reads it).
    let (status, body) = h2(t.addr(), http::Request::get("http://b.test/cgi-bin/env"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\nHTTP_HOST=b.test\n"), "{body}");
    assert!(body.contains("\nSERVER_NAME=b.test\n"), "{body}");
    // A host field naming another authority makes the request malformed:
    // it never chooses the site.
    let (status, body) = h2(
        t.addr(),
        http::Request::get("http://b.test/cgi-bin/env").header("host", "a.test"),
    );
    assert_eq!(status, 400, "{body}");
    assert!(t.wait_log("host differs from :authority"), "{}", t.log());
}

#[test]
fn transfer_codings_other_than_chunked_are_501() {
    let t = two_sites("");
    for (te, status) in [
        ("cow, chunked", 501),
        ("gzip, chunked", 501),
        ("chunked, identity", 400),
    ] {
        let mut s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(
            format!("POST /cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: {te}\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let r = Response::read_from(&mut s, false).unwrap();
        assert_eq!(r.status, status, "{te}: {}", r.text());
        assert!(closed_after(s), "{te}: still open");
    }
    assert!(
        t.wait_log("501: a transfer coding other than chunked"),
        "{}",
        t.log()
    );
    let r = send(
        &t,
        "POST /cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert!(r.text().ends_with("--\nhello"), "{}", r.text());
}

#[test]
fn options_asterisk_connect_and_higher_minor_versions_are_answered() {
    let t = two_sites("");
    let r = send(
        &t,
        "OPTIONS * HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert!(
        r.header("allow").unwrap().contains("GET"),
        "{:?}",
        r.header("allow")
    );
    let r = send(
        &t,
        "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
    );
    assert_eq!(r.status, 405);
    assert!(r.header("allow").is_some());
    // HTTP/1.2 is HTTP/1.1 to a server (RFC 9112 §2.3), on every request
    // of a kept connection.
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for _ in 0..3 {
        s.write_all(b"GET / HTTP/1.2\r\nHost: b.test\r\n\r\n")
            .unwrap();
        let r = Response::read_from(&mut s, false).unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "B"));
    }
    // Another major version is 505 (RFC 9110 §15.6.6), as nginx and
    // Apache answer it, on either loop.
    for line in ["GET / HTTP/2.0", "GET / HTTP/3.0", "GET / HTTP/0.9"] {
        let r = send(&t, &format!("{line}\r\nHost: a.test\r\n\r\n"));
        assert_eq!(r.status, 505, "{line}");
    }
    assert!(t.wait_log("505: a request line of an HTTP version other than 1.x"));
}

#[test]
fn underscore_header_names_do_not_reach_scripts() {
    let t = two_sites("");
    let r = send(
        &t,
        "GET /cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nX_Forwarded_For: 6.6.6.6\r\nX-Real: 1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(var(&r, "HTTP_X_FORWARDED_FOR"), None, "{}", r.text());
    assert_eq!(var(&r, "HTTP_X_REAL").as_deref(), Some("1"));
    let (status, body) = h2(
        t.addr(),
        http::Request::get("http://a.test/cgi-bin/env").header("x_forwarded_for", "6.6.6.6"),
    );
    assert_eq!(status, 200);
    assert!(!body.contains("HTTP_X_FORWARDED_FOR"), "{body}");
    // Both spellings: refused, whatever the route says.
    let r = send(
        &t,
        "GET /cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nX-Forwarded-For: 1.2.3.4\r\nX_Forwarded_For: 6.6.6.6\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400);

    let t = two_sites("underscores_in_headers = true");
    let r = send(
        &t,
        "GET /cgi-bin/env HTTP/1.1\r\nHost: a.test\r\nX_Custom: 7\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        var(&r, "HTTP_X_CUSTOM").as_deref(),
        Some("7"),
        "{}",
        r.text()
    );
}

/// Sends `raw` then shuts down the sending side at once, as `nc -N` does;
/// the status of the answer.
fn half_closed(addr: SocketAddr, raw: &str) -> std::io::Result<u16> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(raw.as_bytes())?;
    s.shutdown(Shutdown::Write)?;
    Ok(Response::read_from(&mut s, false)?.status)
}

#[test]
fn a_client_that_half_closes_after_its_request_is_answered() {
    let dir = docroot(&[("index.html", b"index")]);
    tern_testkit::install(&dir.path().join("cgi/env"), ENV.as_bytes(), 0o755);
    write_files(
        &dir.path().join("wasm"),
        &[("hello.wat", wasm::hello("hi\n").as_bytes())],
    );
    let site = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\n[[site.route]]\nprefix = \"/wasm\"\nhandler = \"wasm\"\nmodule = \"{dir}/wasm/hello.wat\"\n";
    let t = Tern::start_in(BIN, &config("", site), dir);
    for (path, times) in [("/index.html", 20), ("/cgi-bin/env", 5), ("/wasm", 10)] {
        for i in 0..times {
            let raw = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
            let r = half_closed(t.addr(), &raw);
            assert!(matches!(r, Ok(200)), "{path}, try {i}: {r:?}\n{}", t.log());
        }
    }
    // HTTP/1.0, the same.
    assert!(matches!(
        half_closed(t.addr(), "GET /cgi-bin/env HTTP/1.0\r\n\r\n"),
        Ok(200)
    ));
}

/// A client that asks to close, half-closes at once and reads its answer
/// only later gets all of it, on either HTTP/1 loop: a cached file larger
/// than the sockets hold at first is all the body, so the request is over
/// while most of the answer still waits to go out. (hyper then read the
/// FIN as a client that left, and the rest of the answer was lost: 1.2 MB
/// of 3 MiB arrived.)
#[test]
fn a_client_that_half_closes_and_reads_late_gets_all_of_a_large_answer() {
    const SIZE: usize = 3 << 20;
    let body: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    for http1 in ["tern", "hyper"] {
        let dir = docroot(&[("big.bin", &body)]);
        let t = Tern::start_in(
            BIN,
            &config(&format!("[server]\nhttp1 = \"{http1}\"\n"), ""),
            dir,
        );
        let mut s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        // The server fills the sockets and waits for the client.
        std::thread::sleep(Duration::from_millis(300));
        let r = Response::read_from(&mut s, false);
        let r = r.unwrap_or_else(|e| panic!("{http1}: {e}\n{}", t.log()));
        assert_eq!(r.status, 200, "{http1}");
        assert!(r.body == body, "{http1}: {} bytes of {SIZE}", r.body.len());
    }
}

/// Starts a client that sends a POST head to `path` with
/// `Content-Length: 100000`, then a byte every 200 ms for at most `for_`;
/// it returns the status tern answered, if any.
fn trickle(addr: SocketAddr, path: &str, for_: Duration) -> std::thread::JoinHandle<Option<u16>> {
    let head = format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_millis(200))).ok()?;
        s.write_all(head.as_bytes()).ok()?;
        let end = Instant::now() + for_;
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while Instant::now() < end {
            if s.write_all(b"x").is_err() {
                break;
            }
            match tern_testkit::read_some(&mut s, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    break;
                }
                Err(_) => {} // the read timeout: trickle on
            }
        }
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        if got.is_empty() {
            let n = tern_testkit::read_some(&mut s, &mut buf).ok()?;
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
    })
}

/// Four clients trickle bodies to `slow` on a route with one slot (or
/// worker); meanwhile a plain request to `fast` on the same route is
/// answered, and the tricklers get 408 from the body's pace.
fn slow_bodies_leave_the_route_serving(t: &Tern, slow: &str, fast: &str) {
    let tricklers: Vec<_> = (0..4)
        .map(|_| trickle(t.addr(), slow, Duration::from_secs(6)))
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    let r = send(
        t,
        &format!("GET {fast} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(
        r.status,
        200,
        "{fast} while bodies trickle: {}\n{}",
        r.text(),
        t.log()
    );
    for h in tricklers {
        assert_eq!(h.join().unwrap(), Some(408), "{}", t.log());
    }
    assert!(t.wait_log("408: "), "{}", t.log());
}

const SLOW_LIMITS: &str = "[limits]\nbody_timeout = \"1s\"\nbody_min_rate = 500\n";

#[test]
fn slow_request_bodies_do_not_take_a_cgi_route_offline() {
    let dir = docroot(&[]);
    tern_testkit::install(&dir.path().join("cgi/env"), ENV.as_bytes(), 0o755);
    let site = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\nmax_concurrent = 1\nqueue = 10\nqueue_timeout = \"3s\"\n";
    let t = Tern::start_in(BIN, &config(SLOW_LIMITS, site), dir);
    slow_bodies_leave_the_route_serving(&t, "/cgi-bin/env", "/cgi-bin/env");
}

#[test]
fn slow_request_bodies_do_not_take_a_fastcgi_pool_offline() {
    let dir = docroot(&[]);
    let app = dir.path().join("hello.fcgi");
    std::fs::hard_link(BIN, &app)
        .or_else(|_| std::fs::copy(BIN, &app).map(|_| ()))
        .unwrap();
    let site = format!(
        "[[site.route]]\nprefix = \"/app\"\nhandler = \"fastcgi\"\ncommand = [\"{}\"]\nmin_processes = 1\nmax_processes = 1\nqueue_timeout = \"3s\"\n",
        app.display()
    );
    let t = Tern::start_in(BIN, &config(SLOW_LIMITS, &site), dir);
    slow_bodies_leave_the_route_serving(&t, "/app/hello-only", "/app/hello-only");
}

#[test]
fn slow_request_bodies_do_not_take_a_cgiplus_engine_offline() {
    let dir = docroot(&[]);
    write_files(&dir.path().join("scripts"), &[("env.pl", ENV.as_bytes())]);
    let site = "[[site.route]]\nextension = \"pl\"\nhandler = \"cgiplus\"\nengine = \"perl\"\ndir = \"{dir}/scripts\"\nmax_processes = 1\nqueue_timeout = \"3s\"\n";
    let t = Tern::start_in(BIN, &config(SLOW_LIMITS, site), dir);
    slow_bodies_leave_the_route_serving(&t, "/env.pl", "/env.pl");
}

#[test]
fn slow_request_bodies_do_not_take_a_wasm_route_offline() {
    let dir = docroot(&[]);
    write_files(
        &dir.path().join("wasm"),
        &[("echo.wat", wasm::echo().as_bytes())],
    );
    let site = "[[site.route]]\nprefix = \"/app\"\nhandler = \"wasm\"\nmodule = \"{dir}/wasm/echo.wat\"\nmax_concurrent = 1\nqueue_timeout = \"3s\"\n";
    let t = Tern::start_in(BIN, &config(SLOW_LIMITS, site), dir);
    slow_bodies_leave_the_route_serving(&t, "/app", "/app");
}

#[test]
fn a_body_that_keeps_its_pace_is_not_cut_off() {
    // 6 KB at 3 KB/s over 2 s, with body_timeout 1s: each 500 bytes earns
    // a second, so the pace holds and the script gets it whole.
    let dir = docroot(&[]);
    tern_testkit::install(&dir.path().join("cgi/env"), ENV.as_bytes(), 0o755);
    let site = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\n";
    let t = Tern::start_in(BIN, &config(SLOW_LIMITS, site), dir);
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"POST /cgi-bin/env HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 6000\r\n\r\n")
        .unwrap();
    for _ in 0..20 {
        s.write_all(&[b'y'; 300]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = Response::read_from(&mut s, false).unwrap();
    assert_eq!(r.status, 200, "{}", t.log());
    assert!(r.text().ends_with(&"y".repeat(6000)));
}

#[test]
fn etags_hold_no_inode_and_agree_between_identical_files() {
    let dir = docroot(&[("a/f.txt", b"same bytes"), ("b/f.txt", b"same bytes")]);
    let when = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for p in ["a/f.txt", "b/f.txt"] {
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("www").join(p))
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let ino = std::fs::metadata(dir.path().join("www/a/f.txt"))
        .unwrap()
        .ino();
    let t = Tern::start_in(BIN, &config("", ""), dir);
    let a = get(&t, "/a/f.txt");
    let b = get(&t, "/b/f.txt");
    let tag = a.header("etag").unwrap().to_owned();
    assert_eq!(Some(tag.as_str()), b.header("etag"));
    assert!(
        !tag.contains(&format!("{ino:x}")),
        "{tag} holds inode {ino:x}"
    );
}

#[test]
fn the_demo_lists_its_files_directory() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tern::spawn(BIN, &["serve", "--listen", "127.0.0.1:0"], dir);
    let r = get(&t, "/files/");
    assert_eq!(r.status, 200, "{}", t.log());
    assert!(r.text().contains("readme.txt"), "{}", r.text());
}

/// The error code of the GOAWAY tern sends after `blocks` (HPACK field
/// blocks, each sent as one HEADERS frame on streams 1, 3, ...).
fn goaway_code(addr: SocketAddr, blocks: &[&[u8]]) -> Option<u32> {
    let mut req = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    req.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]); // SETTINGS
    for (i, block) in blocks.iter().enumerate() {
        let len = block.len();
        let stream = 1 + 2 * i as u8;
        // HEADERS, END_STREAM | END_HEADERS.
        req.extend_from_slice(&[0, 0, len as u8, 0x1, 0x5, 0, 0, 0, stream]);
        req.extend_from_slice(block);
    }
    goaway_after(addr, &req)
}

/// Sends `raw` (a preface and frames), then reads frames until a GOAWAY:
/// its error code.
fn goaway_after(addr: SocketAddr, raw: &[u8]) -> Option<u32> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(raw).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut i = 0;
        while i + 9 <= buf.len() {
            let flen = (buf[i] as usize) << 16 | (buf[i + 1] as usize) << 8 | buf[i + 2] as usize;
            if i + 9 + flen > buf.len() {
                break;
            }
            if buf[i + 3] == 0x7 {
                let p = &buf[i + 9..i + 9 + flen];
                return Some(u32::from_be_bytes([p[4], p[5], p[6], p[7]]));
            }
            i += 9 + flen;
        }
        match tern_testkit::read_some(&mut s, &mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn a_field_block_that_does_not_decode_is_a_compression_error() {
    let dir = docroot(&[("a.txt", b"a")]);
    let t = Tern::start_in(BIN, &config("", ""), dir);
    // :method GET, :scheme http, :path /a.txt, :authority t.
    let get: &[u8] = &[
        0x82, 0x86, 0x44, 6, b'/', b'a', b'.', b't', b'x', b't', 0x41, 1, b't',
    ];
    let with = |prefix: &[u8], suffix: &[u8]| [prefix, get, suffix].concat();
    const COMPRESSION_ERROR: u32 = 0x9;
    // A table size update above 4096 (RFC 7541 §6.3), one at the end of
    // the block (§4.2), and a block that ends inside a string.
    for block in [
        with(&[0x3f, 0xe2, 0x1f], &[]),
        with(&[], &[0x20]),
        with(&[], &[0x40, 3, b'a']),
    ] {
        assert_eq!(
            goaway_code(t.addr(), &[&block]),
            Some(COMPRESSION_ERROR),
            "{block:?}"
        );
    }
    // A good block first, on the same connection: still the same code for
    // the bad one after it, and the good one was answered.
    let good_then_bad = with(&[0x3f, 0xe1, 0x1f], &[]); // 4096: allowed
    assert_eq!(
        goaway_code(t.addr(), &[&good_then_bad, &with(&[], &[0x20])]),
        Some(COMPRESSION_ERROR)
    );
    // Other connection errors keep their own code: a HEADERS frame on
    // stream 0 is still PROTOCOL_ERROR.
    let mut req = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    req.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
    req.extend_from_slice(&[0, 0, 1, 0x1, 0x5, 0, 0, 0, 0, 0x82]);
    const PROTOCOL_ERROR: u32 = 0x1;
    assert_eq!(goaway_after(t.addr(), &req), Some(PROTOCOL_ERROR));
}

fn h2_get(method: &str, path: &str) -> http::Request<http_body_util::Empty<bytes::Bytes>> {
    http::Request::builder()
        .method(method)
        .uri(format!("http://t{path}"))
        .version(http::Version::HTTP_2)
        .body(http_body_util::Empty::new())
        .unwrap()
}

/// An HTTP/2 stream whose client keeps its window shut while it reads the
/// socket (no write waits, so the connection's send timeout cannot see
/// it) is reset once it has held its answer `send_timeout`, as nginx does,
/// with one log line; the connection and its other streams go on. Both a
/// file from the cache and one streamed from disk (larger than the
/// cache's entries).
#[test]
fn an_http2_stream_whose_window_stays_shut_is_reset_after_the_send_timeout() {
    let big = vec![b'x'; 3 << 20];
    let dir = docroot(&[("small.bin", &big[..200_000]), ("big.bin", &big)]);
    let cfg = config(
        "[limits]\nsend_timeout = \"1s\"\n[cache]\nmax_entry_bytes = 500000\n",
        "",
    );
    let t = Tern::start_in(BIN, &cfg, dir);
    h2_windowed(t.addr(), Some(0), async |send| {
        for path in ["/small.bin", "/big.bin"] {
            let start = Instant::now();
            let resp = tokio::time::timeout(
                Duration::from_secs(10),
                send.send_request(h2_get("GET", path)),
            )
            .await
            .expect("a head within 10 s")
            .unwrap();
            assert_eq!(resp.status(), 200);
            let body = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
                .await
                .unwrap_or_else(|_| panic!("{path}: not reset within 10 s\n{}", t.log()));
            let e = body.expect_err("a body through a shut window");
            assert!(
                start.elapsed() >= Duration::from_secs(1),
                "{path}: reset after {:?}: {e}",
                start.elapsed()
            );
            // The same connection still answers.
            let head = send.send_request(h2_get("HEAD", path)).await.unwrap();
            assert_eq!(head.status(), 200, "{path}");
        }
    });
    assert!(
        t.wait_log("HTTP/2 stream reset: the client did not take its answer within send_timeout"),
        "{}",
        t.log()
    );
}

/// A slow HTTP/2 reader that opens its window a little at a time, each
/// pause shorter than `send_timeout` but all of them far longer, gets its
/// whole answer: the timeout counts a stall, not the answer's time. The
/// file streams from disk in chunks of two frames, and the reader opens one
/// frame's room at a time: a stall rule that looked at the chunks alone
/// would cut it.
#[test]
fn a_slow_http2_reader_that_keeps_reading_gets_its_whole_answer() {
    let big = vec![b'y'; 80_000];
    let dir = docroot(&[("big.bin", &big)]);
    let cfg = config(
        "[limits]\nsend_timeout = \"1s\"\n[cache]\nmax_entry_bytes = 50000\n",
        "",
    );
    let t = Tern::start_in(BIN, &cfg, dir);
    let got = h2_windowed(t.addr(), Some(16_384), async |send| {
        let resp = send.send_request(h2_get("GET", "/big.bin")).await.unwrap();
        let mut body = resp.into_body();
        let mut got = 0;
        while let Some(frame) = body.frame().await {
            let frame = frame.unwrap_or_else(|e| panic!("after {got} bytes: {e}\n{}", t.log()));
            got += frame.data_ref().map_or(0, |d| d.len());
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
        got
    });
    assert_eq!(got, big.len());
}

/// A client that asks and then reads nothing is cut off once a write of
/// its answer has waited `send_timeout`, with one log line naming it, and
/// what served it is let go (nginx's `send_timeout`): here a CGI route
/// with one slot, whose script blocks writing to a client that does not
/// read, answers the next client instead of holding the slot until that
/// client leaves. A script blocked by its client is not silent, so the
/// route's own `timeout` (30 s) does not end it.
#[test]
fn a_client_that_stops_reading_is_cut_off_after_the_send_timeout() {
    const SIZE: usize = 8 << 20;
    let dir = docroot(&[("big.bin", &vec![b'x'; SIZE])]);
    // 20 MB of output: far more than a socket and a pipe hold.
    let flood = "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nexec head -c 20000000 /dev/zero\n";
    tern_testkit::install(&dir.path().join("cgi/flood"), flood.as_bytes(), 0o755);
    tern_testkit::install(
        &dir.path().join("cgi/small"),
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nsmall'\n",
        0o755,
    );
    let site = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\nmax_concurrent = 1\nqueue_timeout = \"20s\"\n";
    let t = Tern::start_in(BIN, &config("[limits]\nsend_timeout = \"1s\"\n", site), dir);
    let stalled = |path: &str| {
        let mut s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        s
    };

    // A static file: the connection ends before the client has read it all.
    let mut s = stalled("/big.bin");
    assert!(
        t.wait_log("did not read its answer within send_timeout"),
        "{}",
        t.log()
    );
    let mut got = Vec::new();
    let end = std::io::Read::read_to_end(&mut s, &mut got);
    assert!(
        got.len() < SIZE,
        "{} bytes of {SIZE}, then {end:?}: the whole answer arrived",
        got.len()
    );

    // The script's only slot: taken by a client that does not read, then
    // given to the next one.
    let _flooded = stalled("/cgi-bin/flood");
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let r = get(&t, "/cgi-bin/small");
    assert_eq!(
        (r.status, r.text()),
        (200, "small".to_owned()),
        "after {:?}\n{}",
        start.elapsed(),
        t.log()
    );
}
