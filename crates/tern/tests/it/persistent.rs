//! Persistent workers end to end: the demo's FastCGI, CGIplus and engine
//! routes through the binary, a reload under load with zero failed
//! requests, and no worker process left behind after shutdown.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::*;

/// The process ids of `parent`'s children.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit(')').next() else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let state = f.next();
        let ppid = f.next().and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) && state != Some("Z") {
            out.push(pid);
        }
    }
    out
}

/// `parent`'s children once there are `n` of them (the pool starts its
/// minimum in the background), or as they are after 10 s.
fn children_when(parent: u32, n: usize) -> Vec<u32> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let now = children(parent);
        if now.len() == n || Instant::now() > end {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            != Some("Z")
    })
}

#[test]
fn the_demo_serves_each_persistent_kind() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tern::spawn(BIN, &["serve", "--listen", "127.0.0.1:0"], dir);
    let r = get(&t, "/fcgi/a?x=1");
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    assert!(
        r.text().starts_with("Hello from a FastCGI application"),
        "{}",
        r.text()
    );
    assert!(
        r.text()
            .contains("SCRIPT_NAME=/fcgi\nPATH_INFO=/a\nQUERY_STRING=x=1\n"),
        "{}",
        r.text()
    );
    let r = get(&t, "/cgiplus-bin/hello.pl?q");
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    assert!(r.text().contains("under CGIplus"), "{}", r.text());
    let r = get(&t, "/face2face.pl");
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    assert!(r.text().contains("<B>Hello!</B>"), "{}", r.text());
    let r = get(&t, "/hello.py?z=9");
    assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
    assert!(r.text().contains("QUERY_STRING=z=9"), "{}", r.text());
    if Path::new("/usr/bin/php-cgi").exists() {
        let r = get(&t, "/php/face2face.php");
        assert_eq!(r.status, 200, "{}\n{}", r.text(), t.log());
        assert!(r.text().contains("<B>Hello!</B>"), "{}", r.text());
    }
}

fn fcgi_config(app: &str, procs: usize) -> String {
    config(
        "",
        &format!(
            "[[site.route]]\nprefix = \"/app\"\nhandler = \"fastcgi\"\ncommand = [\"{app}\"]\nmin_processes = {procs}\nmax_processes = {procs}\n"
        ),
    )
}

/// tern's own binary under the demo's FastCGI name, in `dir`.
pub(crate) fn fastcgi_app(dir: &Path) -> String {
    let app = dir.join("hello.fcgi");
    std::fs::hard_link(BIN, &app)
        .or_else(|_| std::fs::copy(BIN, &app).map(|_| ()))
        .unwrap();
    app.to_string_lossy().into_owned()
}

#[test]
fn a_reload_under_load_fails_no_request_and_leaves_no_worker_behind() {
    let dir = docroot(&[]);
    let app = fastcgi_app(dir.path());
    let t = Tern::start_in(BIN, &fcgi_config(&app, 2), dir);
    assert_eq!(get(&t, "/app/hello-only").text(), "Hello!\n");
    let before = children_when(t.pid(), 2);
    assert_eq!(before.len(), 2, "two workers: {before:?}");
    let addr = t.addr();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut ok, mut failed) = (0u32, Vec::new());
                let end = Instant::now() + Duration::from_secs(30);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < end {
                    match request(
                        addr,
                        b"GET /app/hello-only HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                    ) {
                        Ok(r) if r.status == 200 && r.text() == "Hello!\n" => ok += 1,
                        Ok(r) => failed.push(format!("{} {}", r.status, r.text())),
                        Err(e) => failed.push(e.to_string()),
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    t.signal(1);
    assert!(t.wait_log("reloaded"), "{}", t.log());
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut total = 0;
    for h in load {
        let (ok, failed) = h.join().unwrap();
        assert!(
            failed.is_empty(),
            "failed requests: {failed:?}\n{}",
            t.log()
        );
        total += ok;
    }
    assert!(total > 0);
    // The old generation drains and stops; the new one serves.
    let end = Instant::now() + Duration::from_secs(20);
    while before.iter().any(|p| alive(*p)) {
        assert!(
            Instant::now() < end,
            "old workers still running: {before:?}\n{}",
            t.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(&t, "/app/hello-only").text(), "Hello!\n");
}

#[test]
fn shutdown_stops_every_worker() {
    let dir = docroot(&[]);
    let app = fastcgi_app(dir.path());
    let mut t = Tern::start_in(BIN, &fcgi_config(&app, 3), dir);
    assert_eq!(get(&t, "/app/hello-only").text(), "Hello!\n");
    let workers = children_when(t.pid(), 3);
    assert_eq!(workers.len(), 3, "{workers:?}");
    t.signal(15);
    assert!(
        t.wait_exit(Duration::from_secs(20)).is_some(),
        "{}",
        t.log()
    );
    let end = Instant::now() + Duration::from_secs(10);
    while workers.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < end, "workers outlived tern: {workers:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The directories tern process `pid` made in the temp directory: its
/// run's (`tern-<pid>-<random>`), or a pool's of old (`tern-<pool>-<pid>-<n>`).
fn temp_dirs_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(&format!("tern-{pid}-"))
                || (n.starts_with("tern-") && n.contains(&format!("-{pid}-")))
        })
        .collect()
}

#[test]
fn shutdown_leaves_no_socket_directory() {
    let dir = docroot(&[]);
    let app = fastcgi_app(dir.path());
    // Processes that ignore SIGTERM keep their pool closing for its grace
    // period after the server stopped.
    let wrapper = dir.path().join("slow-stop.sh");
    std::fs::write(&wrapper, format!("#!/bin/sh\ntrap '' TERM\nexec {app}\n")).unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut t = Tern::start_in(BIN, &fcgi_config(&wrapper.to_string_lossy(), 2), dir);
    assert_eq!(get(&t, "/app/hello-only").text(), "Hello!\n");
    let pid = t.pid();
    assert_eq!(temp_dirs_of(pid).len(), 1, "{:?}", temp_dirs_of(pid));
    t.signal(15);
    assert!(
        t.wait_exit(Duration::from_secs(20)).is_some(),
        "{}",
        t.log()
    );
    assert_eq!(temp_dirs_of(pid), Vec::<String>::new(), "{}", t.log());
}

#[test]
fn keep_alive_requests_reuse_one_worker_connection() {
    let dir = docroot(&[]);
    let app = fastcgi_app(dir.path());
    let t = Tern::start_in(BIN, &fcgi_config(&app, 1), dir);
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for i in 1..=50u32 {
        s.write_all(b"GET /app/n HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = Response::read_from(&mut s, false).unwrap();
        assert_eq!(r.status, 200);
        assert!(
            r.text().contains(&format!("request {i} on it")),
            "{}",
            r.text()
        );
    }
    let mut rest = Vec::new();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let _ = s.read_to_end(&mut rest);
}

/// A script's answer leaves in the pieces it came in: a 64 KB FastCGI
/// answer is eight records, written to the client with one vectored write
/// instead of being copied into one buffer. It arrives whole and framed,
/// with the next answer on the same connection after it, on both HTTP/1
/// loops and on HTTP/2. (Framed by its length when the application
/// ends it within the settling time, chunked when it is slower, as on a
/// loaded machine: either way whole.)
#[test]
fn an_answer_in_many_records_arrives_whole_on_every_loop() {
    for top in ["", "[server]\nhttp1 = \"hyper\"\n"] {
        let dir = docroot(&[]);
        let app = fastcgi_app(dir.path());
        let route = format!(
            "[[site.route]]\nprefix = \"/app\"\nhandler = \"fastcgi\"\ncommand = [\"{app}\"]\nmin_processes = 1\nmax_processes = 1\n"
        );
        let t = Tern::start_in(BIN, &config(top, &route), dir);
        let mut s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for round in 0..10 {
            s.write_all(b"GET /app/64k HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            let r = Response::read_from(&mut s, false)
                .unwrap_or_else(|e| panic!("{top:?} round {round}: {e}\n{}", t.log()));
            assert_eq!(r.status, 200, "{top:?} round {round}\n{}", t.log());
            assert_eq!(r.body.len(), 65536, "{top:?} round {round}");
            assert!(r.body.iter().all(|&b| b == b'x'), "{top:?} round {round}");
            // The next answer on the connection starts where the first's
            // framing said it ended. (Not pipelined: the test's reader
            // drops what it reads past one answer.)
            s.write_all(b"GET /app/hello-only HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            let r = Response::read_from(&mut s, false)
                .unwrap_or_else(|e| panic!("{top:?} round {round}, after: {e}\n{}", t.log()));
            assert_eq!(r.text(), "Hello!\n", "{top:?} round {round}");
        }
        let url = format!("http://{}/app/64k", t.addr());
        let (status, body) = hardening::h2(t.addr(), http::Request::get(url));
        assert_eq!(status, 200, "{top:?}");
        assert_eq!(body.len(), 65536, "{top:?}");
        assert!(body.bytes().all(|b| b == b'x'), "{top:?}");
    }
}
