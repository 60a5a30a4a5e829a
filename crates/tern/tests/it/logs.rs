//! Access log lines in each format, flushed at shutdown, reopened on SIGUSR1.

use std::time::Duration;

use super::*;

const SIGTERM: i32 = 15;
const SIGUSR1: i32 = 10;

fn run_one(format: &str) -> String {
    let dir = docroot(&[("index.html", b"0123456789")]);
    let mut t = Tern::start_in(
        BIN,
        &config(
            &format!("[access_log]\npath = \"{{dir}}/access.log\"\nformat = \"{format}\""),
            "",
        ),
        dir,
    );
    let r = request(
        t.addr(),
        b"GET /index.html?q=1 HTTP/1.1\r\nHost: test\r\nUser-Agent: Evil \"agent\"\r\nReferer: http://ref/\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(get(&t, "/missing").status, 404);
    t.signal(SIGTERM);
    assert!(t.wait_exit(Duration::from_secs(10)).unwrap().success());
    std::fs::read_to_string(t.file("access.log")).unwrap()
}

#[test]
fn common_format_line() {
    let log = run_one("common");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].starts_with("127.0.0.1 - - ["), "{}", lines[0]);
    assert!(
        lines[0].ends_with("] \"GET /index.html?q=1 HTTP/1.1\" 200 10"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("\"GET /missing HTTP/1.1\" 404 14"),
        "{}",
        lines[1]
    );
}

#[test]
fn combined_format_line_escapes_quotes() {
    let log = run_one("combined");
    let first = log.lines().next().unwrap();
    assert!(
        first.ends_with(
            "\"GET /index.html?q=1 HTTP/1.1\" 200 10 \"http://ref/\" \"Evil \\x22agent\\x22\""
        ),
        "{first}"
    );
}

#[test]
fn json_format_line() {
    let log = run_one("json");
    let first = log.lines().next().unwrap();
    for part in [
        "\"method\":\"GET\"",
        "\"target\":\"/index.html?q=1\"",
        "\"status\":200",
        "\"bytes\":10",
        "\"user_agent\":\"Evil \\\"agent\\\"\"",
        "\"remote\":\"127.0.0.1\"",
        "\"tls_protocol\":null",
    ] {
        assert!(first.contains(part), "{part} missing in {first}");
    }
}

#[test]
fn sigusr1_reopens_the_log_for_rotation() {
    let dir = docroot(&[("index.html", b"x")]);
    let mut t = Tern::start_in(
        BIN,
        &config(
            "[access_log]\npath = \"{dir}/access.log\"\nformat = \"common\"",
            "",
        ),
        dir,
    );
    get(&t, "/index.html?before");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::rename(t.file("access.log"), t.file("access.log.1")).unwrap();
    t.signal(SIGUSR1);
    assert!(t.wait_log("access log reopened"));
    get(&t, "/index.html?after");
    t.signal(SIGTERM);
    assert!(t.wait_exit(Duration::from_secs(10)).unwrap().success());
    let old = std::fs::read_to_string(t.file("access.log.1")).unwrap();
    let new = std::fs::read_to_string(t.file("access.log")).unwrap();
    assert!(old.contains("?before") && !old.contains("?after"), "{old}");
    assert!(new.contains("?after") && !new.contains("?before"), "{new}");
}
