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

/// The kernel holds a new connection until its first bytes while
/// connections queue up on the listener, and not while tern waits for
/// each one in turn (listen.rs, `Deferral`). Seen from the kernel's side
/// of a connection that has not spoken: held, it is still half open
/// (SYN_RECV); not held, it is established as soon as the handshake is,
/// however busy tern is.
#[test]
fn new_connections_are_held_until_they_speak_only_while_they_queue_up() {
    let t = Tern::start_in(
        BIN,
        &config("[server]\nworkers = 1\n", ""),
        docroot(&[("index.html", b"hi")]),
    );
    // One client at a time: every accept waits for its connection, and
    // after 64 such accepts the hold goes. The pause lets tern close the
    // connection before: one still open (its lingering close waits for
    // the client's FIN) makes the next accept count as busy, which puts
    // the hold's end eight accepts further on a loaded host.
    let mut asked = 0;
    let released = loop {
        for _ in 0..16 {
            assert_eq!(get(&t, "/").status, 200);
            std::thread::sleep(Duration::from_millis(10));
        }
        asked += 16;
        if asked >= 64 && silent_state(t.addr()) == ESTABLISHED {
            break true;
        }
        if asked >= 320 {
            break false;
        }
    };
    assert!(released, "still held after {asked} requests one at a time");

    // Bursts of clients at once, until accepts find connections waiting.
    let held = (0..10).any(|_| {
        let burst: Vec<_> = (0..64)
            .map(|_| {
                let addr = t.addr();
                std::thread::spawn(move || {
                    request(
                        addr,
                        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    )
                    .map(|r| r.status)
                })
            })
            .collect();
        for c in burst {
            assert_eq!(c.join().unwrap().unwrap(), 200);
        }
        silent_state(t.addr()) == SYN_RECV
    });
    assert!(held, "not held under load");
}

/// /proc/net/tcp's states (include/net/tcp_states.h).
const ESTABLISHED: &str = "01";
const SYN_RECV: &str = "03";

/// Opens a connection to `addr` that sends nothing and returns the
/// state of the server's side of it, from /proc/net/tcp.
fn silent_state(addr: std::net::SocketAddr) -> String {
    let c = std::net::TcpStream::connect(addr).unwrap();
    server_side(addr, &c)[3].clone()
}

/// The fields of /proc/net/tcp's row for the server's side of `client`,
/// a connection to `addr`.
fn server_side(addr: std::net::SocketAddr, client: &std::net::TcpStream) -> Vec<String> {
    let ours = client.local_addr().unwrap().port();
    let hex = |port: u16| format!(":{port:04X}");
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|f| f[1].ends_with(&hex(addr.port())) && f[2].ends_with(&hex(ours)))
        .unwrap_or_else(|| panic!("no server side of {ours} in /proc/net/tcp:\n{table}"))
}

/// A client that asks for a large file and stops reading holds about a
/// megabyte of it in tern's socket (TCP_NOTSENT_LOWAT, listen.rs), not
/// as much as the kernel would take (3.8 MB of this 4 MB body without
/// it): what waits for a slow reader waits in tern, which sends it when
/// the socket has room.
#[test]
fn a_client_that_stops_reading_holds_about_a_megabyte_of_the_body_in_the_kernel() {
    let body = vec![b'x'; 4_000_000];
    let t = Tern::start_in(BIN, &config("", ""), docroot(&[("big.bin", &body)]));
    let mut c = std::net::TcpStream::connect(t.addr()).unwrap();
    c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    // tx_queue: bytes written and not yet acknowledged. It grows while
    // tern writes and stops where the socket refuses more.
    let queued = || {
        let f = server_side(t.addr(), &c);
        usize::from_str_radix(f[4].split(':').next().unwrap(), 16).unwrap()
    };
    let end = Instant::now() + Duration::from_secs(10);
    let mut last = queued();
    let settled = loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = queued();
        if now == last && now > 0 {
            break now;
        }
        assert!(Instant::now() < end, "the queue never settled (last {now})");
        last = now;
    };
    // The limit, one segment's overshoot and the client's window.
    assert!(
        (512 << 10..2 << 20).contains(&settled),
        "{settled} bytes queued for a client that reads nothing"
    );
    // The rest still comes once the client reads.
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let r = Response::read_from(&mut c, false).unwrap();
    assert_eq!(r.status, 200);
    assert!(
        r.body == body,
        "the body arrived changed ({} of {} bytes)",
        r.body.len(),
        body.len()
    );
}
