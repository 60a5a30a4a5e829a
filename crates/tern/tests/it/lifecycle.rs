//! Reload (SIGHUP), graceful shutdown (SIGTERM), cache freshness.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;

const SIGHUP: i32 = 1;
const SIGTERM: i32 = 15;

fn header_config(value: &str) -> String {
    config(
        "",
        &format!("[[site.headers]]\npath = \"*.html\"\nset = {{ \"X-Gen\" = \"{value}\" }}\n"),
    )
}

fn rewrite_config(t: &Tern, body: &str) {
    let body = body.replace("{dir}", &t.path().to_string_lossy());
    std::fs::write(t.file("tern.toml"), body).unwrap();
}

#[test]
fn reload_applies_a_good_config_and_rejects_a_bad_one() {
    let dir = docroot(&[("index.html", b"index")]);
    let t = Tern::start_in(BIN, &header_config("1"), dir);
    assert_eq!(get(&t, "/index.html").header("x-gen"), Some("1"));

    rewrite_config(&t, &header_config("2"));
    t.signal(SIGHUP);
    assert!(t.wait_log("configuration reloaded"), "{}", t.log());
    assert_eq!(get(&t, "/index.html").header("x-gen"), Some("2"));

    rewrite_config(&t, "[[site]]\nroot = \"/no/such/dir\"\nbogus = [\n");
    t.signal(SIGHUP);
    assert!(
        t.wait_log("reload failed, the old configuration keeps serving"),
        "{}",
        t.log()
    );
    assert!(
        t.log().contains("tern.toml:"),
        "the reason names the file: {}",
        t.log()
    );
    let r = get(&t, "/index.html");
    assert_eq!((r.status, r.header("x-gen")), (200, Some("2")));
}

#[test]
fn reload_under_load_drops_no_request() {
    let dir = docroot(&[("index.html", b"index")]);
    let t = Tern::start_in(BIN, &header_config("1"), dir);
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for keepalive in [true, false] {
        let (stop, ok, addr) = (stop.clone(), ok.clone(), t.addr());
        workers.push(std::thread::spawn(move || -> Result<(), String> {
            let mut conn: Option<TcpStream> = None;
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) && n < 20_000 {
                n += 1;
                let s = match conn.as_mut() {
                    Some(s) => s,
                    None => {
                        let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
                        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                        conn.insert(s)
                    }
                };
                let req: &[u8] = if keepalive {
                    b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n"
                } else {
                    b"GET /index.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                };
                s.write_all(req).map_err(|e| format!("request {n}: {e}"))?;
                let r = Response::read_from(s, false).map_err(|e| format!("request {n}: {e}"))?;
                if r.status != 200 || r.body != b"index" {
                    return Err(format!("request {n}: status {}", r.status));
                }
                ok.fetch_add(1, Ordering::Relaxed);
                if !keepalive || r.header("connection") == Some("close") {
                    conn = None;
                }
            }
            Ok(())
        }));
    }
    for gen in 2..7 {
        std::thread::sleep(Duration::from_millis(150));
        rewrite_config(&t, &header_config(&gen.to_string()));
        t.signal(SIGHUP);
    }
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap().unwrap();
    }
    assert!(ok.load(Ordering::Relaxed) > 20, "too few requests ran");
    assert_eq!(
        t.log().matches("configuration reloaded").count(),
        5,
        "{}",
        t.log()
    );
    assert_eq!(get(&t, "/index.html").header("x-gen"), Some("6"));
}

#[test]
fn shutdown_finishes_the_request_in_flight_then_exits_zero() {
    let dir = docroot(&[]);
    // 32 MiB, streamed (not cached): the client reads it slowly.
    let big: Vec<u8> = (0..32u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join("www/big.bin"), &big).unwrap();
    let mut t = Tern::start_in(BIN, &config("[cache]\nenabled = false", ""), dir);
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut first = vec![0u8; 65536];
    s.read_exact(&mut first).unwrap();
    t.signal(SIGTERM);
    assert!(t.wait_log("SIGTERM"), "{}", t.log());
    // New connections are refused once the listener is closed.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        TcpStream::connect(t.addr()).is_err(),
        "still accepting after SIGTERM"
    );
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    let mut all = first;
    all.extend_from_slice(&rest);
    let head_end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(
        all.len() - head_end,
        big.len(),
        "the response in flight was cut"
    );
    assert!(all[head_end..] == big[..]);
    let status = t
        .wait_exit(Duration::from_secs(10))
        .expect("tern did not exit");
    assert!(status.success(), "{status}");
}

#[test]
fn a_changed_file_is_served_fresh_within_the_revalidate_interval() {
    let dir = docroot(&[("page.txt", b"version one")]);
    let t = Tern::start_in(BIN, &config("[cache]\nrevalidate = \"200ms\"", ""), dir);
    assert_eq!(get(&t, "/page.txt").text(), "version one");
    assert_eq!(get(&t, "/page.txt").text(), "version one");
    std::fs::write(t.file("www/page.txt"), "version two, longer").unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(get(&t, "/page.txt").text(), "version two, longer");
    std::fs::remove_file(t.file("www/page.txt")).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(get(&t, "/page.txt").status, 404);
}

/// Sends SIGHUP and waits for the `n`th "configuration reloaded" line.
fn reload(t: &Tern, n: usize) {
    t.signal(SIGHUP);
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while t.log().matches("configuration reloaded").count() < n {
        assert!(
            std::time::Instant::now() < end,
            "no reload {n}:\n{}",
            t.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_reload_keeps_the_file_cache_unless_its_settings_change() {
    // A long revalidate interval: what the cache holds is served as it is,
    // so a changed file shows whether the entry survived.
    let cfg = |max: &str| {
        config(
            &format!("[cache]\nrevalidate = \"1h\"\nmax_bytes = \"{max}\""),
            "",
        )
    };
    let dir = docroot(&[("page.txt", b"version one")]);
    let t = Tern::start_in(BIN, &cfg("64m"), dir);
    assert_eq!(get(&t, "/page.txt").text(), "version one");
    std::fs::write(t.file("www/page.txt"), "version two, longer").unwrap();
    assert_eq!(get(&t, "/page.txt").text(), "version one", "not cached");

    // The same settings: the entry is still there.
    reload(&t, 1);
    assert_eq!(get(&t, "/page.txt").text(), "version one");

    // Other cache settings: a new cache, and the file as it is now.
    rewrite_config(&t, &cfg("32m"));
    reload(&t, 2);
    assert_eq!(get(&t, "/page.txt").text(), "version two, longer");
}
