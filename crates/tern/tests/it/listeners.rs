//! Listeners of every kind: IPv4, IPv6 and Unix sockets, several at once.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::*;

#[test]
fn ipv4_ipv6_and_unix_listeners_serve_the_same_site() {
    let dir = docroot(&[("index.html", b"same site")]);
    let v6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    let mut cfg = String::from(
        "[[listen]]\naddress = \"127.0.0.1:0\"\n[[listen]]\naddress = \"unix:{dir}/tern.sock\"\n",
    );
    if v6 {
        cfg.push_str("[[listen]]\naddress = \"[::1]:0\"\n");
    }
    cfg.push_str("[[site]]\nroot = \"{dir}/www\"\n");
    let t = Tern::start_in(BIN, &cfg, dir);
    assert_eq!(get(&t, "/").text(), "same site");

    let sock = t.file("tern.sock");
    let end = Instant::now() + Duration::from_secs(5);
    while !sock.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut s = UnixStream::connect(&sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("same site"), "{out}");

    if v6 {
        // The IPv6 listener's port is not printed first; find it in /proc.
        let port = v6_listen_port(t.pid()).expect("an IPv6 listening socket");
        let r = request(
            format!("[::1]:{port}").parse().unwrap(),
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.text(), "same site");
    }
}

/// The port of the process's IPv6 listening TCP socket on ::1, from
/// /proc/net/tcp6 (state 0A = LISTEN) matched against its open sockets.
fn v6_listen_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")?
                .strip_suffix(']')
                .map(str::to_owned)
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp6").ok()?;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
            let port = f[1].rsplit(':').next()?;
            return u16::from_str_radix(port, 16).ok();
        }
    }
    None
}
