//! Request paths: percent-decoding and normalisation, done once by the server
//! before routing, so that routing, authorization and every handler see the
//! same path and no encoding trick can reach around a rule.
//!
//! The rules (what careful servers do; Apache's defaults, nginx's merge of
//! slashes and dot segments):
//! - the path must start with `/`;
//! - `%XX` escapes are decoded; a malformed escape is an error;
//! - an encoded `/` (`%2F`) is refused: it would let a client name a segment
//!   that contains a slash (Apache `AllowEncodedSlashes Off`);
//! - NUL, other control characters and backslashes (raw or encoded) are refused;
//! - the decoded bytes must be valid UTF-8 (which refuses overlong forms);
//! - empty and `.` segments are dropped, `..` removes the previous segment,
//!   and a `..` that would climb above `/` is an error;
//! - a trailing slash is kept, because it means "directory" to handlers.

use std::fmt;

/// A decoded, normalised request path: starts with `/`, has no empty, `.` or
/// `..` segments, no NUL, control characters or backslashes. Only
/// [`DecodedPath::parse`] makes one.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DecodedPath(String);

/// Why a request path was refused (the server answers 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path does not start with `/`.
    #[error("the path does not start with '/'")]
    NotAbsolute,
    /// A `%` not followed by two hex digits.
    #[error("malformed percent-escape")]
    BadEscape,
    /// An encoded slash (`%2F`).
    #[error("encoded slash in the path")]
    EncodedSlash,
    /// NUL or another control character.
    #[error("control character in the path")]
    ControlChar,
    /// A backslash, raw or encoded.
    #[error("backslash in the path")]
    Backslash,
    /// The decoded bytes are not UTF-8.
    #[error("the decoded path is not valid UTF-8")]
    NotUtf8,
    /// A `..` segment that climbs above the root.
    #[error("the path climbs above the root")]
    AboveRoot,
}

impl DecodedPath {
    /// Decodes and normalises the path part of a request target.
    pub fn parse(raw: &str) -> Result<DecodedPath, PathError> {
        let bytes = raw.as_bytes();
        if bytes.first() != Some(&b'/') {
            return Err(PathError::NotAbsolute);
        }
        if is_plain(bytes) {
            return Ok(DecodedPath(raw.to_owned()));
        }
        let decoded = decode(bytes)?;
        let decoded = String::from_utf8(decoded).map_err(|_| PathError::NotUtf8)?;
        normalise(&decoded).map(DecodedPath)
    }

    /// The path as a string, starting with `/`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the path ends with `/` (a directory was asked for).
    pub fn has_trailing_slash(&self) -> bool {
        self.0.ends_with('/')
    }

    /// The non-empty segments, in order.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// The extension of the last segment (after its last `.`), if any.
    pub fn extension(&self) -> Option<&str> {
        let last = self.0.rsplit('/').next()?;
        let dot = last.rfind('.')?;
        if dot == 0 {
            return None;
        }
        Some(&last[dot + 1..])
    }
}

impl fmt::Display for DecodedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DecodedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for DecodedPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// True when the path needs no decoding or normalisation: no escapes, no
/// backslashes or control bytes, no `//`, and no `.` segments. The common case.
fn is_plain(bytes: &[u8]) -> bool {
    let mut prev = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'%' | b'\\' | 0..=0x1f | 0x7f..=0xff => return false,
            b'/' if prev == b'/' => return false,
            b'.' if prev == b'/' => {
                // "/." starts a dot segment only if followed by '/', end, or ".".
                match bytes.get(i + 1) {
                    None | Some(b'/') | Some(b'.') => return false,
                    _ => {}
                }
            }
            _ => {}
        }
        prev = b;
    }
    true
}

fn decode(bytes: &[u8]) -> Result<Vec<u8>, PathError> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let byte = if b == b'%' {
            let hi = bytes.get(i + 1).and_then(|c| hex(*c));
            let lo = bytes.get(i + 2).and_then(|c| hex(*c));
            let (Some(hi), Some(lo)) = (hi, lo) else {
                return Err(PathError::BadEscape);
            };
            i += 3;
            let d = hi << 4 | lo;
            if d == b'/' {
                return Err(PathError::EncodedSlash);
            }
            d
        } else {
            i += 1;
            b
        };
        match byte {
            b'\\' => return Err(PathError::Backslash),
            0..=0x1f | 0x7f => return Err(PathError::ControlChar),
            _ => out.push(byte),
        }
    }
    Ok(out)
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn normalise(decoded: &str) -> Result<String, PathError> {
    let mut segments: Vec<&str> = Vec::new();
    let mut ends_dir = false;
    for seg in decoded.split('/').skip(1) {
        ends_dir = false;
        match seg {
            "" | "." => ends_dir = true,
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::AboveRoot);
                }
                ends_dir = true;
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(decoded.len());
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    if ends_dir || segments.is_empty() {
        out.push('/');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> String {
        DecodedPath::parse(raw).unwrap().0
    }

    #[test]
    fn plain_paths_pass_unchanged() {
        assert_eq!(ok("/"), "/");
        assert_eq!(ok("/a/b.html"), "/a/b.html");
        assert_eq!(ok("/a/.well-known"), "/a/.well-known");
        assert_eq!(ok("/dir/"), "/dir/");
        assert_eq!(ok("/a..b"), "/a..b");
    }

    #[test]
    fn dot_segments_and_slashes_normalise() {
        assert_eq!(ok("/a/./b"), "/a/b");
        assert_eq!(ok("/a//b"), "/a/b");
        assert_eq!(ok("/a/b/.."), "/a/");
        assert_eq!(ok("/a/b/../c"), "/a/c");
        assert_eq!(ok("/a/%2e%2E/c"), "/c");
        assert_eq!(ok("/."), "/");
        assert_eq!(ok("/%7Euser/x%20y"), "/~user/x y");
    }

    #[test]
    fn escapes_above_root_and_bad_bytes_are_refused() {
        use PathError::*;
        for (raw, err) in [
            ("a", NotAbsolute),
            ("/..", AboveRoot),
            ("/a/../..", AboveRoot),
            ("/%2e%2e/etc/passwd", AboveRoot),
            ("/a%2fb", EncodedSlash),
            ("/a%2Fb", EncodedSlash),
            ("/a%00b", ControlChar),
            ("/a%5c..%5cb", Backslash),
            ("/a\\b", Backslash),
            ("/a%zz", BadEscape),
            ("/a%4", BadEscape),
            ("/%c0%ae%c0%ae/x", NotUtf8),
            ("/%ff", NotUtf8),
            ("/a%0d%0ab", ControlChar),
        ] {
            assert_eq!(DecodedPath::parse(raw), Err(err), "{raw}");
        }
    }

    #[test]
    fn extension_of_last_segment() {
        assert_eq!(ok("/a/b.cgi").len(), 8);
        assert_eq!(
            DecodedPath::parse("/a/b.cgi").unwrap().extension(),
            Some("cgi")
        );
        assert_eq!(DecodedPath::parse("/a.d/b").unwrap().extension(), None);
        assert_eq!(DecodedPath::parse("/a/.hidden").unwrap().extension(), None);
    }
}
