//! The HTTP/1 version of a request line: a higher minor version than 1
//! (`HTTP/1.2`) is read as HTTP/1.1, as RFC 9112 §2.3 asks of a server
//! ("process the request as if it were the highest minor version it
//! supports"). hyper's parser refuses any version but 1.0 and 1.1, so the
//! digit is settled in the bytes before it parses them: at the start of
//! each request head, which the connection's I/O layer knows (`timeout`).
//! Another major version (`HTTP/2.0`, `HTTP/0.9`) is told apart here too,
//! for the 505 hyper would not give (`conn.rs`).

/// The longest request line looked at; a longer one is left as it is.
const MAX_LINE: usize = 16 * 1024;

/// If `head` starts with a complete request line whose version is
/// `HTTP/1.2` to `HTTP/1.9`, makes it `HTTP/1.1`. Anything else is left
/// untouched (the parser judges it).
pub(crate) fn settle(head: &mut [u8]) {
    if let Some((at, b'1', b'2'..=b'9')) = request_version(head) {
        head[at + 2] = b'1';
    }
}

/// Whether `head` starts with a complete request line of a well-formed
/// HTTP version whose major is not 1 (`HTTP/2.0`, `HTTP/0.9`): answered
/// 505 (RFC 9110 §15.6.6), as nginx and Apache do, where hyper's parser
/// says 400 (`conn.rs`).
pub(crate) fn unsupported(head: &[u8]) -> bool {
    request_version(head).is_some_and(|(_, major, _)| major != b'1')
}

/// The version of the request line `head` starts with, if it is complete
/// and reads `method SP target SP HTTP/D.D`: where its major digit is, and
/// its two digits.
fn request_version(head: &[u8]) -> Option<(usize, u8, u8)> {
    let window = &head[..head.len().min(MAX_LINE)];
    let lf = window.iter().position(|&c| c == b'\n')?;
    let line = &window[..lf];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let version_at = line.len().checked_sub(b" HTTP/1.x".len())?;
    let tail = &line[version_at..];
    let (major, minor) = match tail {
        [b' ', b'H', b'T', b'T', b'P', b'/', major, b'.', minor] => (*major, *minor),
        _ => return None,
    };
    if !major.is_ascii_digit() || !minor.is_ascii_digit() {
        return None;
    }
    // The line must look like `method SP target SP`: a token first.
    let method_ok = line
        .iter()
        .position(|&b| b == b' ')
        .is_some_and(|sp| sp > 0 && sp < version_at && line[..sp].iter().all(|&b| is_tchar(b)));
    method_ok.then_some((version_at + 6, major, minor))
}

/// RFC 9110 §5.6.2 token characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::settle;

    fn settled(s: &str) -> String {
        let mut b = s.as_bytes().to_vec();
        settle(&mut b);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn higher_minor_versions_become_1_1() {
        assert_eq!(
            settled("GET / HTTP/1.2\r\nHost: a\r\n\r\n"),
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        );
        assert_eq!(settled("GET /x HTTP/1.9\n"), "GET /x HTTP/1.1\n");
    }

    #[test]
    fn everything_else_is_left_to_the_parser() {
        for s in [
            "GET / HTTP/1.1\r\n",
            "GET / HTTP/1.0\r\n",
            "GET / HTTP/2.0\r\n",
            "GET / HTTP/1.2",     // incomplete line
            " / HTTP/1.2\r\n",    // no method
            "G(T / HTTP/1.2\r\n", // not a token
            "GET / HTTP/1.22\r\n",
            "GET / HTTP/1.2 \r\n",
            "HTTP/1.2\r\n",
            "",
        ] {
            assert_eq!(settled(s), s, "{s:?}");
        }
    }

    #[test]
    fn another_major_version_is_unsupported() {
        for s in [
            "GET / HTTP/2.0\r\n",
            "GET / HTTP/0.9\r\n",
            "PRI * HTTP/2.0\r\n",
        ] {
            assert!(super::unsupported(s.as_bytes()), "{s:?}");
        }
        for s in [
            "GET / HTTP/1.1\r\n",
            "GET / HTTP/1.7\r\n",
            "GET / HTTP/2.0",   // incomplete line
            "GET / HTTP/2\r\n", // malformed: the parser's 400
            "G(T / HTTP/2.0\r\n",
            " / HTTP/2.0\r\n",
            "HTTP/2.0\r\n",
        ] {
            assert!(!super::unsupported(s.as_bytes()), "{s:?}");
        }
    }

    #[test]
    fn only_the_first_line_is_touched() {
        let s = "GET / HTTP/1.1\r\nX: GET / HTTP/1.2\r\n\r\n";
        assert_eq!(settled(s), s);
    }
}
