//! A request's variables as the worker reads them from its stdin, in
//! record mode or struct mode. Pure: an environment in, bytes out.
//!
//! Record mode: `!\n`, then `NAME=value\n` per variable, then `\n`.
//! Struct mode: `!!<len>\n`, then `<len>` bytes: per variable a `u32`
//! little-endian length and that many bytes of `NAME=value`, then a `u32`
//! zero. The body (CONTENT_LENGTH bytes) follows either form.

use std::os::unix::ffi::OsStrExt as _;

use bytes::{BufMut as _, BytesMut};
use tern_cgi::env::CgiEnv;

/// How a worker reads each request's variables. Every worker starts in
/// [`Mode::Record`]; a `!CGIPLUS: struct` callout switches it from the
/// next request on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// `!`, `NAME=value` lines, an empty line: any language can read it,
    /// `sh` included, but a value cannot hold a line break.
    #[default]
    Record,
    /// `!!<len>` and a block of length-prefixed `NAME=value` items: one
    /// read, no line parsing, and any byte in a value.
    Struct,
}

/// Why a request cannot be put to the worker. The worker was not touched
/// and stays usable; the request gets a 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A value (a decoded PATH_INFO with `%0A`, say) holds CR or LF, which
    /// record mode cannot carry. Escaping it instead would hand the
    /// script a value it did not ask for; a struct-mode worker takes it.
    #[error("`{0}` contains a line break, which a record-mode CGIplus script cannot receive")]
    LineBreak(String),
    /// A name with `=` (or a line break), which no reader could split.
    #[error("variable name `{0}` cannot be sent to a CGIplus script")]
    BadName(String),
    /// A variable longer than a `u32` can say.
    #[error("`{0}` is too long for a CGIplus struct block")]
    TooLong(String),
    /// CONTENT_LENGTH is not a decimal number.
    #[error("CONTENT_LENGTH `{0}` is not a number")]
    ContentLength(String),
    /// The body given to `start` is not CONTENT_LENGTH bytes long (a
    /// caller's mistake: the script would wait for bytes that never come,
    /// or read the rest as the next request).
    #[error("the body is {given} bytes but CONTENT_LENGTH says {declared}")]
    BodyLength {
        /// What CONTENT_LENGTH says (0 when unset).
        declared: u64,
        /// The body's length.
        given: u64,
    },
}

/// The body length the worker will read: CONTENT_LENGTH, or 0 when it is
/// not set.
pub(crate) fn content_length(env: &CgiEnv) -> Result<u64, Refusal> {
    match env.get("CONTENT_LENGTH") {
        None => Ok(0),
        Some(v) => {
            let text = v.as_bytes();
            // `u64::from_str` takes a leading `+`; CGI does not.
            let digits = !text.is_empty() && text.iter().all(u8::is_ascii_digit);
            std::str::from_utf8(text)
                .ok()
                .filter(|_| digits)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| Refusal::ContentLength(v.to_string_lossy().into_owned()))
        }
    }
}

/// Appends the request's start line and variables to `out`.
pub(crate) fn head(out: &mut BytesMut, mode: Mode, env: &CgiEnv) -> Result<(), Refusal> {
    for (name, _) in env.iter() {
        let name = name.as_bytes();
        if name.is_empty() || name.iter().any(|b| matches!(b, b'=' | b'\n' | b'\r')) {
            return Err(Refusal::BadName(String::from_utf8_lossy(name).into_owned()));
        }
    }
    match mode {
        Mode::Record => record(out, env),
        Mode::Struct => block(out, env),
    }
}

fn record(out: &mut BytesMut, env: &CgiEnv) -> Result<(), Refusal> {
    let mut len = 3;
    for (name, value) in env.iter() {
        if value.as_bytes().iter().any(|b| matches!(b, b'\n' | b'\r')) {
            return Err(Refusal::LineBreak(name.to_string_lossy().into_owned()));
        }
        len += name.len() + value.len() + 2;
    }
    out.reserve(len);
    out.put_slice(b"!\n");
    for (name, value) in env.iter() {
        out.put_slice(name.as_bytes());
        out.put_u8(b'=');
        out.put_slice(value.as_bytes());
        out.put_u8(b'\n');
    }
    out.put_u8(b'\n');
    Ok(())
}

fn block(out: &mut BytesMut, env: &CgiEnv) -> Result<(), Refusal> {
    let mut len: usize = 4;
    for (name, value) in env.iter() {
        let item = name.len() + 1 + value.len();
        if u32::try_from(item).is_err() {
            return Err(Refusal::TooLong(name.to_string_lossy().into_owned()));
        }
        len += 4 + item;
    }
    let start = format!("!!{len}\n");
    out.reserve(start.len() + len);
    out.put_slice(start.as_bytes());
    for (name, value) in env.iter() {
        // Checked above.
        let item = (name.len() + 1 + value.len()) as u32;
        out.put_u32_le(item);
        out.put_slice(name.as_bytes());
        out.put_u8(b'=');
        out.put_slice(value.as_bytes());
    }
    out.put_u32_le(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tern_cgi::env::{build, EnvInput, ScriptVars};
    use tern_config::EnvPolicy;
    use tern_handler::{ConnInfo, PeerAddr};

    fn env(uri: &str, path_info: &str, body: Option<u64>) -> CgiEnv {
        let parts = http::Request::builder()
            .uri(uri)
            .header("host", "h")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        build(&EnvInput {
            request: &parts,
            conn: &ConnInfo {
                peer: PeerAddr::Tcp("127.0.0.1:5000".parse().unwrap()),
                local: PeerAddr::Tcp("127.0.0.1:80".parse().unwrap()),
                secure: false,
                tls: None,
            },
            script: ScriptVars {
                script_name: "/s",
                script_filename: Path::new("/srv/s"),
                path_info,
                document_root: Path::new("/srv"),
            },
            content_length: body,
            policy: &EnvPolicy::default(),
            inherited: &[],
        })
        .unwrap()
    }

    fn lines(env: &CgiEnv) -> Vec<u8> {
        let mut want = Vec::new();
        for (n, v) in env.iter() {
            want.extend_from_slice(n.as_bytes());
            want.push(b'=');
            want.extend_from_slice(v.as_bytes());
            want.push(b'\n');
        }
        want
    }

    #[test]
    fn record_mode_is_a_bang_line_then_name_value_lines_then_an_empty_line() {
        let e = env("/s/a?q=1", "/a", None);
        let mut out = BytesMut::new();
        head(&mut out, Mode::Record, &e).unwrap();
        let mut want = b"!\n".to_vec();
        want.extend_from_slice(&lines(&e));
        want.push(b'\n');
        assert_eq!(&out[..], &want[..]);
        assert!(out.starts_with(b"!\nGATEWAY_INTERFACE=CGI/1.1\n"));
    }

    #[test]
    fn struct_mode_is_length_prefixed_items_ended_by_zero() {
        let e = env("/s/a", "/a\nb", None);
        let mut out = BytesMut::new();
        head(&mut out, Mode::Struct, &e).unwrap();
        let nl = out.iter().position(|&b| b == b'\n').unwrap();
        let len: usize = std::str::from_utf8(&out[2..nl]).unwrap().parse().unwrap();
        assert_eq!(&out[..2], b"!!");
        let block = &out[nl + 1..];
        assert_eq!(block.len(), len);
        // Walk it the way a script would.
        let mut items = Vec::new();
        let mut at = 0;
        loop {
            let n = u32::from_le_bytes(block[at..at + 4].try_into().unwrap()) as usize;
            at += 4;
            if n == 0 {
                break;
            }
            items.push(block[at..at + n].to_vec());
            at += n;
        }
        assert_eq!(at, len, "the zero ends the block");
        let want: Vec<Vec<u8>> = e
            .iter()
            .map(|(n, v)| [n.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        assert_eq!(items, want);
        assert!(items.contains(&b"PATH_INFO=/a\nb".to_vec()));
    }

    #[test]
    fn record_mode_refuses_a_line_break_and_writes_nothing() {
        for path_info in ["/a\nb", "/a\rb"] {
            let e = env("/s/x", path_info, None);
            let mut out = BytesMut::new();
            let err = head(&mut out, Mode::Record, &e).unwrap_err();
            assert_eq!(err, Refusal::LineBreak("PATH_INFO".into()));
            assert!(out.is_empty());
        }
    }

    #[test]
    fn content_length_is_digits_or_absent() {
        assert_eq!(content_length(&env("/s", "", None)), Ok(0));
        assert_eq!(content_length(&env("/s", "", Some(12))), Ok(12));
    }
}
