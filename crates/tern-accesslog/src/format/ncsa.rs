//! The NCSA formats nginx and Apache write: Common, `%h %l %u %t "%r" %>s %b`,
//! and Combined, which adds `"%{Referer}i" "%{User-Agent}i"`; tern's
//! CombinedTls adds `%{SSL_PROTOCOL}x %{SSL_CIPHER}x` to that (`-` in
//! plain HTTP).
//!
//! ```text
//! 127.0.0.1 - frank [10/Oct/2000:13:55:36 +0000] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://example.com/start.html" "Mozilla/4.08"
//! ```
//!
//! Parsing reads what nginx and Apache write too: any time-zone offset,
//! Apache's backslash escapes, and extra fields after the last one (the
//! common `"$http_x_forwarded_for"` suffix), which are ignored.

use std::borrow::Cow;
use std::net::IpAddr;
use std::time::Duration;

use super::escape::{escape, unescape, Context};
use super::timestamp::{parse_clf, write_clf};
use crate::{AccessRecord, ParseError};

/// Whether the line ends after `%b` or carries Referer and User-Agent too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    Common,
    Combined,
    CombinedTls,
}

pub(crate) fn render(variant: Variant, rec: &AccessRecord, out: &mut Vec<u8>) {
    match rec.remote {
        Some(ip) => push_display(out, ip),
        None => out.push(b'-'),
    }
    // %l, the identd answer: nobody runs identd, every server writes "-".
    out.extend_from_slice(b" - ");
    match rec.user.as_deref() {
        None | Some("") => out.push(b'-'),
        Some(user) => escape_distinct_from_absent(out, user, Context::Word),
    }
    out.extend_from_slice(b" [");
    write_clf(out, rec.time);
    out.extend_from_slice(b"] \"");
    escape(out, &rec.method, Context::Word);
    out.push(b' ');
    escape(out, &rec.target, Context::Quoted);
    out.push(b' ');
    escape(out, &rec.protocol, Context::Word);
    out.extend_from_slice(b"\" ");
    push_display(out, rec.status);
    out.push(b' ');
    // Apache's %b: "-" rather than 0 when no body was sent.
    match rec.bytes {
        0 => out.push(b'-'),
        n => push_display(out, n),
    }
    if variant != Variant::Common {
        out.push(b' ');
        write_quoted_header(out, rec.referer.as_deref());
        out.push(b' ');
        write_quoted_header(out, rec.user_agent.as_deref());
    }
    if variant == Variant::CombinedTls {
        for value in [&rec.tls_protocol, &rec.tls_cipher] {
            out.push(b' ');
            match value.as_deref() {
                None | Some("") => out.push(b'-'),
                Some(v) => escape_distinct_from_absent(out, v, Context::Word),
            }
        }
    }
    out.push(b'\n');
}

pub(crate) fn parse(variant: Variant, line: &str) -> Result<AccessRecord, ParseError> {
    let mut line = Cursor::new(line.trim_end_matches(['\n', '\r']));
    // A host name (Apache with HostnameLookups on) or nginx's "unix:" is no
    // address; the record keeps None rather than rejecting the line.
    let remote = line.word("remote address")?.parse::<IpAddr>().ok();
    line.space("ident")?;
    line.word("ident")?;
    line.space("user")?;
    let user = absent_or(line.word("user")?);
    line.space("time")?;
    let time = line.bracketed("time", parse_clf)?;
    line.space("request line")?;
    let request = line.quoted("request line")?;
    let (method, target, protocol) = split_request(request);
    line.space("status")?;
    let status = line.word_as("status", digits)?;
    line.space("bytes")?;
    let bytes = line.word_as("bytes", |n| match n {
        "-" => Some(0),
        n => digits(n),
    })?;
    let (referer, user_agent) = match variant {
        Variant::Common => (None, None),
        Variant::Combined | Variant::CombinedTls => {
            line.space("referer")?;
            let referer = absent_or(line.quoted("referer")?);
            line.space("user agent")?;
            (referer, absent_or(line.quoted("user agent")?))
        }
    };
    let (tls_protocol, tls_cipher) = match variant {
        Variant::CombinedTls => {
            line.space("TLS protocol")?;
            let protocol = absent_or(line.word("TLS protocol")?);
            line.space("TLS cipher")?;
            let cipher = absent_or(line.word("TLS cipher")?);
            (protocol.map(Cow::Owned), cipher.map(Cow::Owned))
        }
        _ => (None, None),
    };
    line.end_or_more_fields()?;
    Ok(AccessRecord {
        time,
        remote,
        remote_port: None,
        user,
        method: unescape(method),
        target: unescape(target),
        protocol: unescape(protocol),
        status,
        bytes,
        referer,
        user_agent,
        host: None,
        duration: Duration::ZERO,
        request_id: 0,
        tls_protocol,
        tls_cipher,
    })
}

/// `"-"` for an absent header, else the escaped value between quotes.
fn write_quoted_header(out: &mut Vec<u8>, value: Option<&str>) {
    out.push(b'"');
    match value {
        None => out.push(b'-'),
        Some(value) => escape_distinct_from_absent(out, value, Context::Quoted),
    }
    out.push(b'"');
}

/// Escapes a value whose field uses `-` for "absent"; a value that is
/// literally `-` is written `\x2D` so that it parses back as itself.
fn escape_distinct_from_absent(out: &mut Vec<u8>, value: &str, context: Context) {
    match value {
        "-" => out.extend_from_slice(br"\x2D"),
        _ => escape(out, value, context),
    }
}

fn absent_or(raw: &str) -> Option<String> {
    (raw != "-").then(|| unescape(raw))
}

/// Splits a raw (still escaped) request line into method, target and
/// protocol at its first and last space; the target may hold spaces. A line
/// that is not a request at all (`-`, junk) becomes the method alone.
fn split_request(raw: &str) -> (&str, &str, &str) {
    match raw.split_once(' ') {
        None => (raw, "", ""),
        Some((method, rest)) => match rest.rsplit_once(' ') {
            Some((target, protocol)) => (method, target, protocol),
            // HTTP/0.9: "GET /".
            None => (method, rest, ""),
        },
    }
}

fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| s.parse().ok())
        .flatten()
}

fn push_display(out: &mut Vec<u8>, value: impl std::fmt::Display) {
    use std::io::Write as _;
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{value}");
}

/// Reads a line field by field, remembering where it is for errors.
#[derive(Debug)]
struct Cursor<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(line: &'a str) -> Cursor<'a> {
        Cursor { line, at: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.line[self.at..]
    }

    fn error(&self, field: &'static str) -> ParseError {
        ParseError::Field { field, at: self.at }
    }

    fn space(&mut self, next_field: &'static str) -> Result<(), ParseError> {
        if !self.rest().starts_with(' ') {
            return Err(self.error(next_field));
        }
        self.at += 1;
        Ok(())
    }

    /// A non-empty run of bytes up to the next space or the end.
    fn word(&mut self, field: &'static str) -> Result<&'a str, ParseError> {
        let rest = self.rest();
        let word = &rest[..rest.find(' ').unwrap_or(rest.len())];
        if word.is_empty() {
            return Err(self.error(field));
        }
        self.at += word.len();
        Ok(word)
    }

    /// A word read by `read`; the error points at the word's start.
    fn word_as<T>(
        &mut self,
        field: &'static str,
        read: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, ParseError> {
        let start = self.error(field);
        read(self.word(field)?).ok_or(start)
    }

    /// The text between `[` and the next `]`, read by `read`.
    fn bracketed<T>(
        &mut self,
        field: &'static str,
        read: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, ParseError> {
        let value = self
            .rest()
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(inner, _)| Some((inner.len(), read(inner)?)))
            .ok_or(self.error(field))?;
        self.at += value.0 + 2;
        Ok(value.1)
    }

    /// The raw (still escaped) text between `"` and the closing `"`; a quote
    /// after a backslash (Apache's `\"`) does not close the field.
    fn quoted(&mut self, field: &'static str) -> Result<&'a str, ParseError> {
        let Some(rest) = self.rest().strip_prefix('"') else {
            return Err(self.error(field));
        };
        let bytes = rest.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => {
                    self.at += i + 2;
                    return Ok(&rest[..i]);
                }
                _ => i += 1,
            }
        }
        Err(self.error(field))
    }

    fn end_or_more_fields(&self) -> Result<(), ParseError> {
        match self.rest() {
            "" => Ok(()),
            more if more.starts_with(' ') => Ok(()),
            _ => Err(self.error("end of line")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_split_at_first_and_last_space() {
        assert_eq!(
            split_request("GET /a b HTTP/1.1"),
            ("GET", "/a b", "HTTP/1.1")
        );
        assert_eq!(split_request("GET /"), ("GET", "/", ""));
        assert_eq!(split_request("-"), ("-", "", ""));
        assert_eq!(split_request(""), ("", "", ""));
        assert_eq!(split_request("X  "), ("X", "", ""));
    }

    #[test]
    fn errors_point_at_the_bad_field() {
        let line = r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 2x0 5"#;
        match parse(Variant::Common, line) {
            Err(ParseError::Field { field, at }) => {
                assert_eq!(field, "status");
                assert_eq!(&line[at..at + 3], "2x0");
            }
            other => panic!("{other:?}"),
        }
        let line = r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1 200 5"#;
        assert!(matches!(
            parse(Variant::Common, line),
            Err(ParseError::Field {
                field: "request line",
                ..
            })
        ));
    }
}
