//! A request's CGI environment written as FastCGI PARAMS records while it
//! is built ([`tern_cgi::env::Layout`]): each variable's two lengths, its
//! name and its value go straight into the records, with no environment
//! block in between. Built once per request and copied whole into each
//! connection the request is started on.

use bytes::Bytes;
use tern_cgi::env::{self, EnvInput, Layout};

use super::decode::parse_pairs;
use super::encode;
use super::record::{padding_for, RecordType, RequestId, HEADER_LEN, MAX_CONTENT_LEN};

/// A request's PARAMS stream, ended: every record but BEGIN_REQUEST's
/// before the body, for request id 1 (tern never multiplexes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    records: Vec<u8>,
    vars: usize,
    content_length: Option<u64>,
}

impl Params {
    /// The environment [`env::build`] would make of `input`, as PARAMS
    /// records, or the same refusal.
    pub fn build(input: &EnvInput<'_>) -> Result<Params, tern_cgi::Error> {
        let vars = 24 + input.inherited.len() + input.request.headers.len();
        let (records, vars) = env::build_into(input, Pairs::with_capacity(vars * 40))?;
        Ok(Params {
            records,
            vars,
            content_length: input.content_length,
        })
    }

    /// The PARAMS records and the empty one that ends them.
    pub fn records(&self) -> &[u8] {
        &self.records
    }

    /// How many variables the records set.
    pub fn len(&self) -> usize {
        self.vars
    }

    /// Whether they set none (never, for a built environment).
    pub fn is_empty(&self) -> bool {
        self.vars == 0
    }

    /// CONTENT_LENGTH, when the request has a body.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }
}

/// The layout: pairs appended after room for a record header, which
/// [`Layout::finish`] fills in (or, past one record's 64 KiB, the pairs
/// are split into records then).
struct Pairs {
    buf: Vec<u8>,
    /// NUL bytes the lengths put there (an empty value's length is one);
    /// any other is in a name or a value.
    zeros: usize,
    /// A name or value too long for a FastCGI length.
    too_long: Option<usize>,
    vars: usize,
}

impl Pairs {
    fn with_capacity(bytes: usize) -> Pairs {
        let mut buf = Vec::with_capacity(HEADER_LEN + bytes);
        buf.resize(HEADER_LEN, 0);
        Pairs {
            buf,
            zeros: 0,
            too_long: None,
            vars: 0,
        }
    }

    /// The pairs, after the room for the first record's header.
    fn content(&self) -> &[u8] {
        &self.buf[HEADER_LEN..]
    }
}

/// The header of a PARAMS record of `content_len` bytes.
fn header(content_len: usize) -> [u8; HEADER_LEN] {
    encode::header(RecordType::Params, RequestId::ONE.get(), content_len)
}

impl Layout for Pairs {
    /// The records, and how many variables they set.
    type Env = (Vec<u8>, usize);

    #[inline]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    #[inline]
    fn start(&mut self, name_len: usize, value_len: usize) {
        if name_len < 0x80 && value_len < 0x80 {
            // Most pairs: two bytes in one write.
            self.buf
                .extend_from_slice(&[name_len as u8, value_len as u8]);
            self.zeros += usize::from(value_len == 0) + usize::from(name_len == 0);
            return;
        }
        match encode::pair_lengths(name_len, value_len) {
            Ok(lengths) => {
                self.zeros += lengths.iter().filter(|&&b| b == 0).count();
                self.buf.extend_from_slice(&lengths);
            }
            // Nothing written: `finish` refuses the environment.
            Err(_) => {
                self.too_long.get_or_insert(name_len.max(value_len));
            }
        }
    }

    #[inline]
    fn middle(&mut self) {}

    #[inline]
    fn end(&mut self) {
        self.vars += 1;
    }

    fn nul(&self) -> Option<String> {
        if env::count_nuls(self.content()) == self.zeros {
            return None;
        }
        let pairs = parse_pairs(&Bytes::copy_from_slice(self.content())).ok()?;
        pairs
            .iter()
            .find(|(n, v)| n.contains(&0) || v.contains(&0))
            .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
    }

    fn finish(mut self) -> Result<(Vec<u8>, usize), tern_cgi::Error> {
        if let Some(len) = self.too_long {
            return Err(tern_cgi::Error::TooLong(len));
        }
        let len = self.buf.len() - HEADER_LEN;
        let mut out = if len <= MAX_CONTENT_LEN {
            self.buf[..HEADER_LEN].copy_from_slice(&header(len));
            self.buf
                .resize(self.buf.len() + usize::from(padding_for(len)), 0);
            self.buf
        } else {
            // Past one record (a very large environment): split, a pair
            // straddling two records as the stream allows.
            let mut out = Vec::with_capacity(len + len / MAX_CONTENT_LEN * 16 + 32);
            for chunk in self.content().chunks(MAX_CONTENT_LEN) {
                out.extend_from_slice(&header(chunk.len()));
                out.extend_from_slice(chunk);
                out.resize(out.len() + usize::from(padding_for(chunk.len())), 0);
            }
            out
        };
        out.extend_from_slice(&header(0));
        Ok((out, self.vars))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::Path;

    use http::request::Parts;
    use tern_config::EnvPolicy;
    use tern_handler::{ConnInfo, PeerAddr};

    use super::*;
    use crate::fastcgi::{Decoder, DecoderConfig, Record, Side, Stream, MAX_PAIR_PART_LEN};
    use bytes::BytesMut;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().uri("/app/x?q=1");
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn input<'a>(
        parts: &'a Parts,
        conn: &'a ConnInfo,
        policy: &'a EnvPolicy,
        path_info: &'a str,
        inherited: &'a [(OsString, OsString)],
    ) -> EnvInput<'a> {
        EnvInput {
            request: parts,
            conn,
            script: env::ScriptVars {
                script_name: "/app",
                script_filename: Path::new("/srv/app"),
                path_info,
                document_root: Path::new("/srv/"),
            },
            content_length: Some(5),
            policy,
            inherited,
        }
    }

    fn conn() -> ConnInfo {
        ConnInfo {
            peer: PeerAddr::Tcp("[2001:db8::7]:51000".parse().unwrap()),
            local: PeerAddr::Tcp("192.0.2.1:8080".parse().unwrap()),
            secure: false,
            tls: None,
        }
    }

    /// What the records carry, decoded as an application decodes them.
    fn decoded(records: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut buf = BytesMut::from(records);
        let mut decoder = Decoder::new(DecoderConfig {
            side: Side::Application,
            ..DecoderConfig::default()
        });
        let mut stream = Vec::new();
        let mut ended = false;
        while let Some(record) = decoder.decode(&mut buf).unwrap() {
            match record {
                Record::Stream {
                    stream: Stream::Params,
                    content,
                    ..
                } if content.is_empty() => ended = true,
                Record::Stream {
                    stream: Stream::Params,
                    content,
                    ..
                } => {
                    assert!(!ended, "content after the empty record");
                    stream.extend_from_slice(&content);
                }
                other => panic!("unexpected record {other:?}"),
            }
        }
        assert!(ended && buf.is_empty(), "the stream is ended, nothing left");
        parse_pairs(&Bytes::from(stream))
            .unwrap()
            .into_iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect()
    }

    /// The same variables, in the same order, as the environment block
    /// `env::build` makes, and the same records as the pair-by-pair
    /// encoder writes: with headers, repeated fields, an empty value, a
    /// value past 127 bytes (the 4-byte length) and an IPv6 peer.
    #[test]
    fn the_records_carry_what_the_block_holds() {
        let long = "v".repeat(300);
        let p = parts(&[
            ("host", "example.com:8080"),
            ("accept", "a"),
            ("accept", "b"),
            ("cookie", "x=1"),
            ("cookie", "y=2"),
            ("x-empty", ""),
            ("x-long", &long),
        ]);
        let (c, policy) = (conn(), EnvPolicy::default());
        let inherited = [(OsString::from("TZ"), OsString::from(""))];
        let input = input(&p, &c, &policy, "/a/b", &inherited);
        let block = env::build(&input).unwrap();
        let params = Params::build(&input).unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = block
            .iter()
            .map(|(n, v)| {
                use std::os::unix::ffi::OsStrExt as _;
                (n.as_bytes().to_vec(), v.as_bytes().to_vec())
            })
            .collect();
        assert_eq!(decoded(params.records()), want);
        let mut encoded = BytesMut::new();
        let pairs = want.iter().map(|(n, v)| (&n[..], &v[..]));
        encode::params(&mut encoded, RequestId::ONE, pairs).unwrap();
        encode::end_stream(&mut encoded, RequestId::ONE, Stream::Params);
        assert_eq!(params.records(), &encoded[..]);
        assert_eq!(params.content_length(), Some(5));
        assert_eq!(params.len(), block.len());
    }

    /// An environment past one record's 64 KiB is split over records, a
    /// pair straddling two.
    #[test]
    fn a_large_environment_spans_records() {
        let big = "x".repeat(50_000);
        let p = parts(&[("x-a", &big), ("x-b", &big), ("x-c", "c")]);
        let (c, policy) = (conn(), EnvPolicy::default());
        let input = input(&p, &c, &policy, "", &[]);
        let params = Params::build(&input).unwrap();
        let pairs = decoded(params.records());
        let find = |name: &[u8]| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.len());
        assert_eq!(find(b"HTTP_X_A"), Some(50_000));
        assert_eq!(find(b"HTTP_X_B"), Some(50_000));
        assert_eq!(find(b"HTTP_X_C"), Some(1));
        assert_eq!(params.records().len() % 8, 0);
    }

    /// A NUL in a decoded path refuses the request naming the variable, as
    /// the block does; empty values (a zero length byte) and 4-byte
    /// lengths with zero bytes in them are not taken for one.
    #[test]
    fn a_nul_refuses_the_request_naming_the_variable() {
        let p = parts(&[("x-empty", ""), ("x-long", &"v".repeat(256))]);
        let (c, policy) = (conn(), EnvPolicy::default());
        let ok = input(&p, &c, &policy, "/a", &[]);
        assert!(Params::build(&ok).is_ok());
        let bad = input(&p, &c, &policy, "/a\0b", &[]);
        let err = Params::build(&bad).unwrap_err();
        assert!(
            matches!(&err, tern_cgi::Error::NulInValue(n) if n == "PATH_INFO"),
            "{err}"
        );
        assert!(matches!(
            env::build(&bad),
            Err(tern_cgi::Error::NulInValue(n)) if n == "PATH_INFO"
        ));
    }

    proptest::proptest! {
        /// Any request's fields (repeated, empty, long, look-alike names
        /// that collide, Shellshock values): the records carry exactly the
        /// block's variables, or both ways refuse the request alike.
        #[test]
        fn the_records_always_agree_with_the_block(
            fields in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "accept", "cookie", "x-a", "x_a", "x-long", "proxy", "authorization",
                        "content-type", "x.y",
                    ]),
                    proptest::string::string_regex("(\\(\\) \\{)?[ -~]{0,20}|v{120,300}").unwrap(),
                ),
                0..8,
            ),
            path_info in proptest::sample::select(vec!["", "/a", "/a/b c", "/a\0b"]),
            shellshock in proptest::bool::ANY,
        ) {
            let mut b = http::Request::builder().uri("/app/x?q=1");
            for (n, v) in &fields {
                b = b.header(*n, v.as_str());
            }
            let p = b.body(()).unwrap().into_parts().0;
            let c = conn();
            let policy = EnvPolicy { refuse_shellshock: shellshock, ..EnvPolicy::default() };
            let input = input(&p, &c, &policy, path_info, &[]);
            match (env::build(&input), Params::build(&input)) {
                (Ok(block), Ok(params)) => {
                    let want: Vec<(Vec<u8>, Vec<u8>)> = block
                        .iter()
                        .map(|(n, v)| {
                            use std::os::unix::ffi::OsStrExt as _;
                            (n.as_bytes().to_vec(), v.as_bytes().to_vec())
                        })
                        .collect();
                    proptest::prop_assert_eq!(decoded(params.records()), want);
                    proptest::prop_assert_eq!(params.len(), block.len());
                }
                (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => proptest::prop_assert!(false, "the block {:?}, the records {:?}", a.map(|e| e.len()), b.map(|p| p.len())),
            }
        }
    }

    /// A length FastCGI cannot say is refused, not wrapped.
    #[test]
    fn a_length_past_31_bits_is_refused() {
        let mut pairs = Pairs::with_capacity(0);
        pairs.start(4, MAX_PAIR_PART_LEN + 1);
        assert!(matches!(
            pairs.finish(),
            Err(tern_cgi::Error::TooLong(n)) if n == MAX_PAIR_PART_LEN + 1
        ));
    }
}
