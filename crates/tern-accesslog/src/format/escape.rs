//! Escaping of values inside Common and Combined lines, the way nginx does
//! it, and the inverse, which also reads Apache's escapes.
//!
//! A hostile value (a User-Agent with a quote and a newline in it) must not
//! be able to end its field early or forge a second line. nginx writes `"`,
//! `\`, control bytes and every byte outside printable ASCII as `\xHH`;
//! Apache writes `\"`, `\\`, `\n`... and `\xhh`. Both leave a line that holds
//! no raw quote inside a quoted field and no raw line break at all.

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Where a value lands in a line, which decides which bytes are escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Context {
    /// Between double quotes (the request line, Referer, User-Agent).
    Quoted,
    /// A space-delimited word (the user; the method and the protocol inside
    /// the request line): the space is escaped too, so the value cannot
    /// split into two words. nginx and Apache leave spaces alone; tern's
    /// values never hold any in practice, and this keeps parse(render(x)) == x.
    Word,
}

/// Appends `value` with every byte that could break the line or the field
/// written as `\xHH`.
pub(crate) fn escape(out: &mut Vec<u8>, value: &str, context: Context) {
    let bytes = value.as_bytes();
    let mut clean_from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let unsafe_byte = b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b);
        if unsafe_byte || (b == b' ' && context == Context::Word) {
            out.extend_from_slice(&bytes[clean_from..i]);
            out.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
            clean_from = i + 1;
        }
    }
    out.extend_from_slice(&bytes[clean_from..]);
}

/// Undoes [`escape`] and Apache's backslash escapes. A backslash that starts
/// no known escape stays as it is. Bytes that do not form UTF-8 (a TLS
/// handshake sent to a plain HTTP port, logged by nginx as `\x16\x03...`)
/// become U+FFFD, since a record holds text.
pub(crate) fn unescape(raw: &str) -> String {
    if !raw.contains('\\') {
        return raw.to_owned();
    }
    let raw = raw.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let (byte, used) = match raw[i] {
            b'\\' => decode_escape(&raw[i + 1..]).map_or((b'\\', 1), |(b, n)| (b, n + 1)),
            b => (b, 1),
        };
        out.push(byte);
        i += used;
    }
    match String::from_utf8(out) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// The byte an escape stands for and how many bytes after the backslash it
/// used; `None` if `after` starts no escape.
fn decode_escape(after: &[u8]) -> Option<(u8, usize)> {
    let simple = match after.first()? {
        b'x' | b'X' => {
            let high = hex_digit(*after.get(1)?)?;
            let low = hex_digit(*after.get(2)?)?;
            return Some((high << 4 | low, 3));
        }
        b'"' => b'"',
        b'\\' => b'\\',
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'b' => 0x08,
        b'v' => 0x0b,
        b'f' => 0x0c,
        _ => return None,
    };
    Some((simple, 1))
}

fn hex_digit(b: u8) -> Option<u8> {
    char::from(b).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(value: &str, context: Context) -> String {
        let mut out = Vec::new();
        escape(&mut out, value, context);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hostile_bytes_become_nginx_hex_escapes() {
        assert_eq!(
            escaped("a\"b\\c\nd\re\tf\x7fg h", Context::Quoted),
            r"a\x22b\x5Cc\x0Ad\x0De\x09f\x7Fg h"
        );
        assert_eq!(escaped("é", Context::Quoted), r"\xC3\xA9");
        assert_eq!(escaped("a b", Context::Word), r"a\x20b");
        assert_eq!(escaped("plain /x?y=1", Context::Quoted), "plain /x?y=1");
    }

    #[test]
    fn unescape_reads_nginx_and_apache_escapes() {
        assert_eq!(unescape(r"a\x22b\x5Cc\x0a"), "a\"b\\c\n");
        assert_eq!(unescape(r#"a\"b\\c\n\t"#), "a\"b\\c\n\t");
        assert_eq!(unescape(r"\xC3\xA9"), "é");
        // Not escapes: kept as written.
        assert_eq!(unescape(r"C:\dir\x4"), r"C:\dir\x4");
        assert_eq!(unescape("trailing\\"), "trailing\\");
        // Binary junk: not text, so replaced.
        assert_eq!(unescape(r"\x16\x03\xFF"), "\u{16}\u{3}\u{FFFD}");
    }

    #[test]
    fn unescape_inverts_escape() {
        for value in ["", "x", "a\"b\\c\nd", "\\x41", "é ü \u{0}\u{1f}", "-"] {
            for context in [Context::Quoted, Context::Word] {
                assert_eq!(unescape(&escaped(value, context)), value);
            }
        }
    }
}
