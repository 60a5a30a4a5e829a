//! Properties: no input makes a decoder panic, and a valid request reads
//! back the same however its bytes are split.

use bytes::{Buf as _, BytesMut};
use http::{HeaderMap, Method, Version};
use proptest::prelude::*;
use tern_h1::{
    encode_chunk, encode_last_chunk, parse_head, BodyDecoder, ChunkedDecoder, Decoded, Framing,
    LengthDecoder, Limits,
};

fn small_limits() -> impl Strategy<Value = Limits> {
    (1usize..200, 0usize..8, 0usize..64, 1usize..64, 1u64..64).prop_map(
        |(head, headers, target, trailer, ext)| Limits {
            max_head_bytes: head,
            max_headers: headers,
            max_target: target,
            max_trailer_bytes: trailer,
            max_chunk_ext_bytes: ext,
        },
    )
}

/// Bytes that look a little like HTTP, so the parsers get past the start.
fn httpish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"GET / HTTP/1.1\r\n".to_vec()),
        Just(b"POST /x HTTP/1.0\r\n".to_vec()),
        Just(b"Transfer-Encoding: chunked\r\n".to_vec()),
        Just(b"Content-Length: 5\r\n".to_vec()),
        Just(b"Host: a\r\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"5\r\nhello\r\n".to_vec()),
        Just(b"0\r\n\r\n".to_vec()),
        Just(b";ext=1".to_vec()),
        Just(b"HTTP/1.2".to_vec()),
        Just(b"HTTP/2.0\r\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

fn any_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![proptest::collection::vec(any::<u8>(), 0..300), httpish()]
}

/// Feeds `input` to a body decoder in pieces cut at `cuts`; never more
/// than a bounded number of steps.
fn drive(mut decoder: BodyDecoder, input: &[u8], cuts: &[usize]) {
    let mut buf = BytesMut::new();
    let mut fed = 0;
    let mut cuts = cuts.iter().copied();
    for _ in 0..10_000 {
        match decoder.decode(&mut buf) {
            Ok(Decoded::Data(d)) => assert!(!d.is_empty()),
            Ok(Decoded::End(_)) | Err(_) => return,
            Ok(Decoded::NeedMore) => {
                if fed == input.len() {
                    return;
                }
                let end = cuts
                    .next()
                    .map_or(input.len(), |c| (fed + c.max(1)).min(input.len()));
                buf.extend_from_slice(&input[fed..end]);
                fed = end;
            }
        }
    }
    panic!("decoder made no progress");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn heads_never_panic(input in any_input(), limits in small_limits()) {
        let _ = parse_head(&input, &limits);
        let _ = parse_head(&input, &Limits::default());
        for end in 0..input.len().min(64) {
            let _ = parse_head(&input[..end], &limits);
        }
    }

    /// A connection parses the head again as bytes arrive: a prefix
    /// never decides otherwise than the whole.
    #[test]
    fn prefixes_agree_with_the_whole(input in any_input(), limits in small_limits()) {
        for limits in [limits, Limits::default()] {
            let whole = parse_head(&input, &limits);
            for end in 0..=input.len() {
                match parse_head(&input[..end], &limits) {
                    Ok(None) => {}
                    Ok(Some(p)) => {
                        let w = whole.as_ref().unwrap().as_ref().unwrap();
                        prop_assert_eq!(p.head_len, w.head_len);
                        prop_assert_eq!(&p.headers, &w.headers);
                        break;
                    }
                    Err(e) => {
                        prop_assert_eq!(Err(e), whole.as_ref().map(|_| ()).map_err(Clone::clone));
                        break;
                    }
                }
            }
        }
    }

    #[test]
    fn bodies_never_panic(
        input in any_input(),
        limits in small_limits(),
        cuts in proptest::collection::vec(1usize..20, 0..20),
        len in 0u64..400,
    ) {
        drive(BodyDecoder::Chunked(ChunkedDecoder::new(&limits)), &input, &cuts);
        drive(BodyDecoder::Chunked(ChunkedDecoder::new(&Limits::default())), &input, &cuts);
        drive(BodyDecoder::Length(LengthDecoder::new(len)), &input, &cuts);
    }
}

/// A request to write out and read back.
#[derive(Debug, Clone)]
struct Req {
    method: Method,
    target: String,
    http10: bool,
    fields: Vec<(String, String)>,
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    None,
    Length(Vec<u8>),
    Chunked {
        chunks: Vec<(Vec<u8>, String)>,
        trailers: Vec<(String, String)>,
    },
}

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}"
}

fn field_name() -> impl Strategy<Value = String> {
    token().prop_filter("framing fields are the generator's", |n| {
        ![
            "host",
            "content-length",
            "transfer-encoding",
            "connection",
            "expect",
            "upgrade",
        ]
        .contains(&n.to_ascii_lowercase().as_str())
    })
}

fn field_value() -> impl Strategy<Value = String> {
    // Visible ASCII with inner spaces and tabs; no surrounding whitespace
    // (the parser trims it).
    "([!-~]([ \t]*[!-~]){0,20})?"
}

fn req() -> impl Strategy<Value = Req> {
    let method = prop_oneof![
        Just(Method::GET),
        Just(Method::POST),
        Just(Method::PUT),
        Just(Method::DELETE),
        token().prop_map(|t| Method::from_bytes(t.as_bytes()).unwrap()),
    ];
    let target = prop_oneof![
        "/[A-Za-z0-9._~%!$&'()*+,;=:@/-]{0,40}(\\?[A-Za-z0-9=&%/?-]{0,20})?",
        Just("*".to_string()),
        "http://[a-z]{1,10}(:[0-9]{1,4})?/[a-z]{0,10}",
    ];
    let fields = proptest::collection::vec((field_name(), field_value()), 0..12);
    let bytes = proptest::collection::vec(any::<u8>(), 0..300);
    let ext = prop_oneof![Just(String::new()), ";[a-z]{1,5}(=[a-z0-9]{1,5})?"];
    let body = prop_oneof![
        Just(Body::None),
        bytes.clone().prop_map(Body::Length),
        (
            proptest::collection::vec((bytes, ext), 0..6),
            proptest::collection::vec((field_name(), field_value()), 0..4),
        )
            .prop_map(|(chunks, trailers)| Body::Chunked { chunks, trailers }),
    ];
    (method, target, any::<bool>(), fields, body).prop_map(
        |(method, target, http10, fields, body)| {
            let body = match body {
                // No chunked on HTTP/1.0.
                Body::Chunked { chunks, .. } if http10 => Body::Length(chunks.concat_data()),
                b => b,
            };
            Req {
                method,
                target,
                http10,
                fields,
                body,
            }
        },
    )
}

trait ConcatData {
    fn concat_data(&self) -> Vec<u8>;
}

impl ConcatData for Vec<(Vec<u8>, String)> {
    fn concat_data(&self) -> Vec<u8> {
        self.iter().flat_map(|(d, _)| d.iter().copied()).collect()
    }
}

impl Req {
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let version = if self.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
        out.extend_from_slice(format!("{} {} {version}\r\n", self.method, self.target).as_bytes());
        out.extend_from_slice(b"Host: h\r\n");
        if self.http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        for (n, v) in &self.fields {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        match &self.body {
            Body::None => out.extend_from_slice(b"\r\n"),
            Body::Length(b) => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
            }
            Body::Chunked { chunks, trailers } => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for (data, ext) in chunks {
                    if data.is_empty() {
                        continue;
                    }
                    if ext.is_empty() {
                        encode_chunk(&mut out, data);
                    } else {
                        out.extend_from_slice(format!("{:X}{ext}\r\n", data.len()).as_bytes());
                        out.extend_from_slice(data);
                        out.extend_from_slice(b"\r\n");
                    }
                }
                let mut t = HeaderMap::new();
                for (n, v) in trailers {
                    t.append(
                        http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                        v.parse().unwrap(),
                    );
                }
                encode_last_chunk(&mut out, (!t.is_empty()).then_some(&t));
            }
        }
        out
    }

    fn body_data(&self) -> Vec<u8> {
        match &self.body {
            Body::None => Vec::new(),
            Body::Length(b) => b.clone(),
            Body::Chunked { chunks, .. } => chunks.concat_data(),
        }
    }
}

/// Reads requests off `input` fed in pieces cut at `cuts`, as a connection
/// would: the head parsed again on each new piece, then the body.
fn read_all(input: &[u8], cuts: &[usize], n: usize) -> Vec<(tern_h1::Parsed, Vec<u8>, HeaderMap)> {
    let limits = Limits::default();
    let mut buf = BytesMut::new();
    let mut fed = 0;
    let mut cuts = cuts.iter().copied().cycle();
    let mut more = |buf: &mut BytesMut| {
        assert!(fed < input.len(), "ran out of input");
        let end = (fed + cuts.next().unwrap_or(input.len())).min(input.len());
        buf.extend_from_slice(&input[fed..end]);
        fed = end;
    };
    let mut out = Vec::new();
    while out.len() < n {
        let head = loop {
            match parse_head(&buf, &limits).unwrap() {
                Some(h) => break h,
                None => more(&mut buf),
            }
        };
        buf.advance(head.head_len);
        let mut dec = BodyDecoder::new(head.framing, &limits);
        let mut body = Vec::new();
        let trailers = loop {
            match dec.decode(&mut buf).unwrap() {
                Decoded::Data(d) => body.extend_from_slice(&d),
                Decoded::NeedMore => more(&mut buf),
                Decoded::End(t) => break t,
            }
        };
        out.push((head, body, trailers));
    }
    assert!(buf.is_empty() && fed == input.len(), "bytes left over");
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn requests_read_back_however_split(
        reqs in proptest::collection::vec(req(), 1..4),
        cuts in proptest::collection::vec(1usize..64, 1..16),
    ) {
        let input: Vec<u8> = reqs.iter().flat_map(|r| r.bytes()).collect();
        let whole = read_all(&input, &[input.len()], reqs.len());
        let split = read_all(&input, &cuts, reqs.len());
        for ((req, (head, body, trailers)), (h2, b2, t2)) in reqs.iter().zip(&whole).zip(&split) {
            prop_assert_eq!(&head.method, &req.method);
            prop_assert_eq!(head.target.to_string(), req.target.clone());
            prop_assert_eq!(
                head.version,
                if req.http10 { Version::HTTP_10 } else { Version::HTTP_11 }
            );
            prop_assert!(head.keep_alive);
            prop_assert_eq!(head.hosts, 1);
            // Same values per name, in order (a HeaderMap groups a name's
            // values together).
            let others = head
                .headers
                .keys()
                .filter(|n| {
                    !matches!(n.as_str(), "host" | "connection" | "content-length" | "transfer-encoding")
                })
                .map(|n| head.headers.get_all(n).iter().count())
                .sum::<usize>();
            prop_assert_eq!(others, req.fields.len());
            for (n, _) in &req.fields {
                let want: Vec<&[u8]> = req
                    .fields
                    .iter()
                    .filter(|(m, _)| m.eq_ignore_ascii_case(n))
                    .map(|(_, v)| v.as_bytes())
                    .collect();
                let got: Vec<&[u8]> = head.headers.get_all(n.as_str()).iter().map(|v| v.as_bytes()).collect();
                prop_assert_eq!(got, want);
            }
            let framing = match &req.body {
                Body::None => Framing::None,
                Body::Length(b) => Framing::Length(b.len() as u64),
                Body::Chunked { .. } => Framing::Chunked,
            };
            prop_assert_eq!(head.framing, framing);
            prop_assert_eq!(body, &req.body_data());
            if let Body::Chunked { trailers: want, .. } = &req.body {
                prop_assert_eq!(trailers.len(), want.len());
            }
            // Split or whole: the same.
            prop_assert_eq!(&h2.method, &head.method);
            prop_assert_eq!(&h2.target, &head.target);
            prop_assert_eq!(&h2.headers, &head.headers);
            prop_assert_eq!(h2.head_len, head.head_len);
            prop_assert_eq!(b2, body);
            prop_assert_eq!(t2, trailers);
        }
    }
}
