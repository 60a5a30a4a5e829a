//! The HTTP/1 version of a request line: a higher minor version than 1
//! (`HTTP/1.2`) is read as HTTP/1.1, as RFC 9112 §2.3 asks of a server
//! ("process the request as if it were the highest minor version it
//! supports"). hyper's parser refuses any version but 1.0 and 1.1, so the
//! digit is settled in the bytes before it parses them: at the start of
//! each request head, which the connection's I/O layer knows (`timeout`).

/// The longest request line looked at; a longer one is left as it is.
const MAX_LINE: usize = 16 * 1024;

/// If `head` starts with a complete request line whose version is
/// `HTTP/1.2` to `HTTP/1.9`, makes it `HTTP/1.1`. Anything else is left
/// untouched (the parser judges it).
pub(crate) fn settle(head: &mut [u8]) {
    let window = &head[..head.len().min(MAX_LINE)];
    let Some(lf) = window.iter().position(|&c| c == b'\n') else {
        return;
    };
    let line = &window[..lf];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(version_at) = line.len().checked_sub(b" HTTP/1.x".len()) else {
        return;
    };
    let tail = &line[version_at..];
    if !tail.starts_with(b" HTTP/1.") || !(b'2'..=b'9').contains(&tail[8]) {
        return;
    }
    // The line must look like `method SP target SP`: a token first.
    let method_ok = line
        .iter()
        .position(|&b| b == b' ')
        .is_some_and(|sp| sp > 0 && line[..sp].iter().all(|&b| is_tchar(b)));
    if method_ok {
        head[version_at + 8] = b'1';
    }
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
    fn only_the_first_line_is_touched() {
        let s = "GET / HTTP/1.1\r\nX: GET / HTTP/1.2\r\n\r\n";
        assert_eq!(settled(s), s);
    }
}
