//! One plain HTTP/1.0 GET, to learn the length of a row's body. The driver
//! counts chunked framing as body bytes (as ab does), so a server that
//! chunks a script's output (nginx in front of fcgiwrap) would fail the
//! suite's length check; asked in HTTP/1.0, no server chunks.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Status and body length of `GET path` on 127.0.0.1:`port`, read until the
/// server closes; the error is a note.
pub fn get_length(port: u16, path: &str, timeout: Duration) -> Result<(u16, u64), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if Instant::now() > deadline {
            return Err(format!("no end of response within {timeout:?}"));
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            // A stop and continue (^Z, fg) interrupts a read with a timeout.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let head_end = data
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of head")?;
    let status = std::str::from_utf8(&data[..head_end])
        .ok()
        .and_then(|h| h.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or("no status line")?;
    Ok((status, (data.len() - head_end - 4) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn reads_status_and_body_until_close() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            // The whole head, however it is split: closing with some of it
            // unread would reset the connection under the client.
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0, "the client closed before its head ended");
                req.extend_from_slice(&buf[..n]);
            }
            c.write_all(b"HTTP/1.0 200 OK\r\nX: y\r\n\r\nHello!\n")
                .unwrap();
            String::from_utf8_lossy(&req).into_owned()
        });
        let got = get_length(port, "/cgi-bin/hello.cgi", Duration::from_secs(5)).unwrap();
        assert_eq!(got, (200, 7));
        let req = server.join().unwrap();
        assert!(
            req.starts_with("GET /cgi-bin/hello.cgi HTTP/1.0\r\n"),
            "{req}"
        );
    }
}
