//! The FastCGI test application: a responder whose behaviour the request
//! picks, to drive tern's FastCGI client through every case it must
//! handle. It serves the listening socket on fd 0, or `--listen PATH` (a
//! Unix socket it binds).
//!
//! By the request's path (REQUEST_URI without its query; QUERY_STRING is N):
//!
//! | path            | answer                                                    |
//! |-----------------|-----------------------------------------------------------|
//! | contains `64k`  | 65536 bytes of body                                       |
//! | `…/env`         | every variable as `NAME=value` lines                      |
//! | `…/echo`        | the body back, its length in `X-Body-Length`              |
//! | `…/pid`         | the process id                                            |
//! | `…/keep`        | `keep` if the request came with KEEP_CONN, else `close`   |
//! | `…/stderr?N`    | N bytes to STDERR, then a small response                  |
//! | `…/crash`       | part of the head, then exit(1) mid-response               |
//! | `…/hang`        | nothing, ever                                             |
//! | `…/stream?N`    | N chunks, each flushed, ~50 ms apart                      |
//! | `…/bad-record`  | a record with version 2                                   |
//! | `…/big-head`    | a 200 KB header line                                      |
//! | `…/after-end`   | "Hello!", then a stray record after END_REQUEST            |
//! | `…/records?N`   | N records of one line each (`0000042\n`), a STDERR record  |
//! |                 | after every 1000th, all in one write                      |
//! | `…/status?N`    | `Status: N`                                               |
//! | `…/exit-after`  | "Hello!", then exit(0) once the response is out           |
//! | anything else   | "Hello!\n"                                                |

use std::io::{self, Write as _};
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::net::UnixListener;
use std::process::ExitCode;
use std::time::Duration;

use bytes::BytesMut;
use tern_gateway::fastcgi::responder::{self, Output, Request};
use tern_gateway::fastcgi::{encode, ProtocolStatus, RequestId, Stream};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let served = match args.as_slice() {
        [] => responder::serve_fd0(respond),
        [flag, path] if flag == "--listen" => {
            // A socket left by an earlier run, and only a socket.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
                let _ = std::fs::remove_file(path);
            }
            UnixListener::bind(path).and_then(|l| responder::serve(l, respond))
        }
        _ => {
            eprintln!(
                "usage: tern-fcgi-app [--listen PATH]  (default: the listening socket on fd 0)"
            );
            return ExitCode::from(2);
        }
    };
    if let Err(e) = served {
        eprintln!("tern-fcgi-app: {e}");
    }
    ExitCode::FAILURE
}

fn respond(req: &Request, out: &mut Output<'_>) -> io::Result<()> {
    let uri = text(req.param("REQUEST_URI"));
    let path = uri.split('?').next().unwrap_or_default();
    let n: usize = text(req.param("QUERY_STRING")).parse().unwrap_or(0);
    let plain = "Content-Type: text/plain\r\n";
    if path.contains("64k") {
        write!(out, "{plain}Content-Length: 65536\r\n\r\n")?;
        return out.stdout(&[b'k'; 65536]);
    }
    match path.rsplit('/').next().unwrap_or_default() {
        "env" => {
            write!(out, "{plain}\r\n")?;
            for (name, value) in &req.params {
                out.stdout(name)?;
                out.stdout(b"=")?;
                out.stdout(value)?;
                out.stdout(b"\n")?;
            }
        }
        "echo" => {
            let len = req.stdin.len();
            write!(out, "{plain}X-Body-Length: {len}\r\n\r\n")?;
            out.stdout(&req.stdin)?;
        }
        "pid" => write!(out, "{plain}\r\n{}\n", std::process::id())?,
        "keep" => {
            let keep = if req.keep_conn { "keep" } else { "close" };
            write!(out, "{plain}\r\n{keep}")?
        }
        "stderr" => {
            for piece in vec![b'e'; n].chunks(10_000) {
                out.stderr(piece)?;
            }
            write!(out, "{plain}\r\nwrote {n} bytes to stderr\n")?;
        }
        "crash" => {
            write!(out, "{plain}X-Partial: yes\r\n")?;
            out.flush()?;
            std::process::exit(1);
        }
        "hang" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "stream" => {
            write!(out, "{plain}\r\n")?;
            for i in 0..n {
                writeln!(out, "chunk {i}")?;
                out.flush()?;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // Version 2: no FastCGI 1.0 client can read on after it.
        "bad-record" => out.write_raw(&[2, 6, 0, 1, 0, 0, 0, 0])?,
        "big-head" => {
            write!(out, "{plain}X-Big: ")?;
            out.stdout(&vec![b'b'; 200_000])?;
            write!(out, "\r\n\r\nHello!\n")?;
        }
        // A whole response, then a stray record in the same write: the
        // connection is out of step and must not be reused.
        "after-end" => {
            let (id, mut raw) = raw_answer(out, &format!("{plain}\r\nHello!\n"));
            encode::end_stream(&mut raw, id, Stream::Stdout);
            encode::end_request(&mut raw, id, 0, ProtocolStatus::RequestComplete);
            encode::stream(&mut raw, id, Stream::Stdout, b"stray");
            out.write_raw(&raw)?;
        }
        // Many records in one write: the client takes them from one read
        // in one pass, and must keep their order and stderr apart.
        "records" => {
            let (id, mut raw) = raw_answer(out, &format!("{plain}\r\n"));
            for i in 0..n {
                encode::stream(&mut raw, id, Stream::Stdout, format!("{i:07}\n").as_bytes());
                if i % 1000 == 999 {
                    encode::stream(&mut raw, id, Stream::Stderr, format!("at {i}\n").as_bytes());
                }
            }
            out.write_raw(&raw)?;
        }
        "status" => write!(out, "Status: {n}\r\n{plain}\r\nstatus {n}\n")?,
        "exit-after" => {
            write!(out, "{plain}\r\nHello!\n")?;
            out.finish(0)?;
            std::process::exit(0);
        }
        _ => write!(out, "{plain}\r\nHello!\n")?,
    }
    Ok(())
}

/// An answer written as records by hand (for `Output::write_raw`): the
/// request's id, and a buffer holding `first` as its first STDOUT record.
fn raw_answer(out: &Output<'_>, first: &str) -> (RequestId, BytesMut) {
    let id = out.request_id();
    let mut raw = BytesMut::new();
    encode::stream(&mut raw, id, Stream::Stdout, first.as_bytes());
    (id, raw)
}

fn text(value: Option<&[u8]>) -> String {
    String::from_utf8_lossy(value.unwrap_or_default()).into_owned()
}
