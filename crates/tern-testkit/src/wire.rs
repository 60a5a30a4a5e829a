//! Raw HTTP/1.1 over a TCP socket: send exact bytes, read one response
//! (Content-Length, chunked, or until close), parse status, headers, body.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One `read` that is tried again when it is interrupted, within the
/// socket's own read timeout.
///
/// A blocking read on a socket with a read timeout fails with `EINTR`
/// when the process is stopped and continued (signal(7): even with no
/// signal handler), as a CI host's freezer or a checkpoint does; a test
/// that took that for the server's answer failed for no fault of the
/// server. `read_exact` and `read_to_end` retry already; a bare `read`
/// does not. The retry waits only for what is left of the timeout: a
/// test that waits 500 ms for nothing to come must not wait longer
/// because it was interrupted (the timeout is set back afterwards).
pub fn read_some<S: TimedRead>(s: &mut S, buf: &mut [u8]) -> std::io::Result<usize> {
    let start = std::time::Instant::now();
    // The socket's timeout, asked for at the first interruption only: an
    // uninterrupted read costs no `getsockopt`.
    let mut timeout: Option<Option<Duration>> = None;
    let r = loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => break r,
        }
        let t = match timeout {
            Some(t) => t,
            None => *timeout.insert(s.read_timeout()?),
        };
        if let Some(t) = t {
            match t.checked_sub(start.elapsed()) {
                Some(left) if !left.is_zero() => s.set_read_timeout(Some(left))?,
                _ => break Err(std::io::ErrorKind::WouldBlock.into()),
            }
        }
    };
    if let Some(Some(t)) = timeout {
        s.set_read_timeout(Some(t))?;
    }
    r
}

/// A socket whose reads can time out.
pub trait TimedRead: Read {
    /// The read timeout (`None`: reads block).
    fn read_timeout(&self) -> std::io::Result<Option<Duration>>;
    /// Sets the read timeout.
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()>;
}

macro_rules! timed_read {
    ($t:ty) => {
        impl TimedRead for $t {
            fn read_timeout(&self) -> std::io::Result<Option<Duration>> {
                <$t>::read_timeout(self)
            }
            fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
                <$t>::set_read_timeout(self, t)
            }
        }
    };
}

timed_read!(TcpStream);
timed_read!(std::os::unix::net::UnixStream);

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields in order, names lower case.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Reads one response from `s`; `head` is true for a response to HEAD.
    pub fn read_from(s: &mut TcpStream, head: bool) -> std::io::Result<Response> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16384];
        let header_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            let n = read_some(s, &mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "closed before a full head: {:?}",
                        String::from_utf8_lossy(&buf)
                    ),
                ));
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head_text = String::from_utf8_lossy(&buf[..header_end]).into_owned();
        let mut lines = head_text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut rest = buf[header_end..].to_vec();
        let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let no_body = head || status == 304 || status == 204 || (100..200).contains(&status);
        let body = if no_body {
            Vec::new()
        } else if let Some(len) = get("content-length") {
            let len: usize = len.parse().map_err(std::io::Error::other)?;
            while rest.len() < len {
                let n = read_some(s, &mut chunk)?;
                if n == 0 {
                    break;
                }
                rest.extend_from_slice(&chunk[..n]);
            }
            rest.truncate(len);
            rest
        } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            dechunk(s, rest)?
        } else {
            s.read_to_end(&mut rest)?;
            rest
        };
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

fn dechunk(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut fill = |buf: &mut Vec<u8>| -> std::io::Result<()> {
        let n = read_some(s, &mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "eof in chunked body",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        Ok(())
    };
    loop {
        let line_end = loop {
            if let Some(i) = find(&buf, b"\r\n") {
                break i;
            }
            fill(&mut buf)?;
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(std::io::Error::other)?;
        buf.drain(..line_end + 2);
        if size == 0 {
            return Ok(out);
        }
        while buf.len() < size + 2 {
            fill(&mut buf)?;
        }
        out.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Sends `raw` on a new connection and reads one response (5 s timeouts).
pub fn request(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Response> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(raw)?;
    let head = raw.starts_with(b"HEAD ");
    Response::read_from(&mut s, head)
}
