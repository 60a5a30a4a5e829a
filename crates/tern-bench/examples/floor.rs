//! The floor: the least a server can do per request on this machine.
//!
//! A bare epoll loop that answers every request head with the same fixed
//! bytes, the response tern gives for an empty file: no routing, no file,
//! no log, no timers. Its server CPU per request, measured on the same rows
//! as tern and the peers (`tern bench --server-pid`), is the floor that
//! docs/PERFORMANCE.md states tern's cost as a multiple of.
//!
//! It parses only what keeping or closing a connection needs: a head ends
//! at CRLF CRLF; an HTTP/1.0 head without `keep-alive`, or one with
//! `Connection: close`, closes the connection after its answer (as `ab`
//! without `-k` expects). Request bodies are not read: send heads only.
//!
//! ```text
//! cargo build --release -p tern-bench --example floor
//! target/release/examples/floor 127.0.0.1:18099 [THREADS]
//! ```
//!
//! With more than one thread, each has its own epoll set on the shared
//! listening socket, registered with `EPOLLEXCLUSIVE` so that a new
//! connection wakes one of them.

#![allow(unsafe_code)] // epoll through libc: three calls, each with its SAFETY note.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};

/// What every request gets: the head tern sends for an empty file.
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Type: text/plain\r\nDate: Tue, 24 Nov 2026 12:00:00 GMT\r\n\r\n";

/// The listener's token in the epoll set.
const LISTENER: u64 = u64::MAX;

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:18099".to_owned());
    let threads: usize = match args.next() {
        Some(n) => n
            .parse()
            .map_err(|_| io::Error::other(format!("not a thread count: {n}")))?,
        None => 1,
    };
    let listener = TcpListener::bind(&addr)?;
    listener.set_nonblocking(true)?;
    eprintln!("floor: {} threads on {addr}", threads.max(1));
    let workers: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let l = listener.try_clone()?;
            Ok(std::thread::spawn(move || serve(l)))
        })
        .collect::<io::Result<_>>()?;
    for w in workers {
        w.join()
            .map_err(|_| io::Error::other("a worker panicked"))??;
    }
    Ok(())
}

/// A connection: the bytes of a head not yet complete, and answers not
/// yet written.
struct Conn {
    stream: TcpStream,
    head: Vec<u8>,
    out: Vec<u8>,
    /// Registered for EPOLLOUT rather than EPOLLIN.
    writing: bool,
    close: bool,
}

fn serve(listener: TcpListener) -> io::Result<()> {
    // SAFETY: epoll_create1 takes no pointers; the result is checked.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(io::Error::last_os_error());
    }
    ctl(
        ep,
        libc::EPOLL_CTL_ADD,
        listener.as_raw_fd(),
        (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32,
        LISTENER,
    )?;
    let mut conns: HashMap<u64, Conn> = HashMap::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        // SAFETY: `events` is a live buffer of `events.len()` entries.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in &events[..n as usize] {
            let token = ev.u64;
            if token == LISTENER {
                accept_all(ep, &listener, &mut conns)?;
                continue;
            }
            let Some(c) = conns.get_mut(&token) else {
                continue;
            };
            if !step(c, &mut buf) {
                let c = conns.remove(&token).expect("present");
                let _ = ctl(ep, libc::EPOLL_CTL_DEL, c.stream.as_raw_fd(), 0, 0);
                continue;
            }
            // Wait for room to write only while answers are queued.
            let writing = !c.out.is_empty();
            if writing != c.writing {
                c.writing = writing;
                let want = if writing {
                    libc::EPOLLOUT
                } else {
                    libc::EPOLLIN
                };
                ctl(
                    ep,
                    libc::EPOLL_CTL_MOD,
                    c.stream.as_raw_fd(),
                    want as u32,
                    token,
                )?;
            }
        }
    }
}

fn accept_all(ep: RawFd, listener: &TcpListener, conns: &mut HashMap<u64, Conn>) -> io::Result<()> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(true)?;
                stream.set_nodelay(true)?;
                let token = stream.as_raw_fd() as u64;
                ctl(
                    ep,
                    libc::EPOLL_CTL_ADD,
                    stream.as_raw_fd(),
                    libc::EPOLLIN as u32,
                    token,
                )?;
                conns.insert(
                    token,
                    Conn {
                        stream,
                        head: Vec::new(),
                        out: Vec::new(),
                        writing: false,
                        close: false,
                    },
                );
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            // Another thread took it, or the client left: nothing to do.
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads what is there, answers every complete head, writes what it can.
/// False when the connection is done.
fn step(c: &mut Conn, buf: &mut [u8]) -> bool {
    if c.out.is_empty() {
        loop {
            match c.stream.read(buf) {
                Ok(0) => return false,
                Ok(n) => {
                    c.head.extend_from_slice(&buf[..n]);
                    answer(c);
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
    while !c.out.is_empty() {
        match c.stream.write(&c.out) {
            Ok(n) => {
                c.out.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    !c.close
}

/// Queues an answer for every complete head in `c.head`.
fn answer(c: &mut Conn) {
    let mut start = 0;
    while let Some(end) = find(&c.head[start..], b"\r\n\r\n") {
        let head = &c.head[start..start + end];
        if !c.close {
            c.out.extend_from_slice(RESPONSE);
            c.close = closes(head);
        }
        start += end + 4;
    }
    c.head.drain(..start);
}

/// Whether a head asks to close the connection after its answer.
fn closes(head: &[u8]) -> bool {
    let lower = head.to_ascii_lowercase();
    let line_end = find(&lower, b"\r\n").unwrap_or(lower.len());
    let http10 = lower[..line_end].ends_with(b"http/1.0");
    if find(&lower, b"connection: close").is_some() {
        return true;
    }
    http10 && find(&lower, b"keep-alive").is_none()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn ctl(ep: RawFd, op: i32, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: token };
    // SAFETY: `ev` lives across the call; epoll_ctl copies it.
    if unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
