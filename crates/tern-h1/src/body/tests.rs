use bytes::BytesMut;

use super::*;

/// Decodes `input` fed in pieces of `step` bytes: the body and trailers,
/// the bytes left over, or the error.
fn chunked(input: &[u8], step: usize) -> Result<(Vec<u8>, HeaderMap, Vec<u8>), BodyError> {
    let mut d = ChunkedDecoder::new(&Limits::default());
    let mut buf = BytesMut::new();
    let mut fed = 0;
    let mut body = Vec::new();
    loop {
        match d.decode(&mut buf)? {
            Decoded::Data(b) => {
                assert!(!b.is_empty());
                body.extend_from_slice(&b);
            }
            Decoded::End(t) => return Ok((body, t, buf.to_vec())),
            Decoded::NeedMore => {
                assert!(fed < input.len(), "ran out of input");
                let end = (fed + step).min(input.len());
                buf.extend_from_slice(&input[fed..end]);
                fed = end;
            }
        }
    }
}

fn body_of(input: &str) -> Result<String, BodyError> {
    let mut last = None;
    for step in [1, 2, 3, 7, input.len().max(1)] {
        let got = chunked(input.as_bytes(), step).map(|(b, _, _)| String::from_utf8(b).unwrap());
        if let Some(prev) = &last {
            assert_eq!(&got, prev, "step {step}");
        }
        last = Some(got);
    }
    last.unwrap()
}

#[test]
fn chunks_and_end() {
    assert_eq!(
        body_of("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").unwrap(),
        "hello world"
    );
    assert_eq!(body_of("0\r\n\r\n").unwrap(), "");
    assert_eq!(
        body_of("A\r\n0123456789\r\n0\r\n\r\n").unwrap(),
        "0123456789"
    );
    assert_eq!(
        body_of("a\r\n0123456789\r\n000\r\n\r\n").unwrap(),
        "0123456789"
    );
    assert_eq!(body_of("0005\r\nhello\r\n0\r\n\r\n").unwrap(), "hello");
}

#[test]
fn leftover_stays() {
    let (b, _, rest) = chunked(b"1\r\nx\r\n0\r\n\r\nGET / HTTP/1.1\r\n", 100).unwrap();
    assert_eq!(b, b"x");
    assert_eq!(rest, b"GET / HTTP/1.1\r\n");
}

#[test]
fn whitespace_and_extensions() {
    assert_eq!(body_of("5 \r\nhello\r\n0\t \r\n\r\n").unwrap(), "hello");
    assert_eq!(body_of("5;a=b\r\nhello\r\n0;x\r\n\r\n").unwrap(), "hello");
    assert_eq!(
        body_of("5 ;a=\"q\"\r\nhello\r\n0\r\n\r\n").unwrap(),
        "hello"
    );
    assert_eq!(
        body_of("5;a\nb\r\nhello\r\n0\r\n\r\n"),
        Err(BodyError::ExtensionNewline)
    );
    let long = format!("5;{}\r\nhello\r\n0\r\n\r\n", "e".repeat(16 << 10));
    assert_eq!(
        body_of(&long),
        Err(BodyError::ExtensionsTooLong { limit: 16 << 10 })
    );
    // The bound is for the whole body.
    let mut many = String::new();
    for _ in 0..20 {
        many.push_str(&format!("1;{}\r\nx\r\n", "e".repeat(1000)));
    }
    many.push_str("0\r\n\r\n");
    assert_eq!(
        body_of(&many),
        Err(BodyError::ExtensionsTooLong { limit: 16 << 10 })
    );
}

#[test]
fn bad_sizes() {
    for s in [
        "+5\r\nhello\r\n0\r\n\r\n",
        "-5\r\nhello\r\n0\r\n\r\n",
        "0x5\r\nhello\r\n0\r\n\r\n",
        " 5\r\nhello\r\n0\r\n\r\n",
        "5 5\r\nhello\r\n0\r\n\r\n",
        "g\r\n",
        "\r\n",
        "5\nhello\r\n0\r\n\r\n",
        "5\r\rhello\r\n0\r\n\r\n",
        "0\n\r\n",
    ] {
        assert_eq!(body_of(s), Err(BodyError::ChunkSize), "{s:?}");
    }
    assert_eq!(
        body_of("10000000000000000\r\n"),
        Err(BodyError::ChunkSizeOverflow)
    );
    // 16 hex digits fit; the decoder then waits for data.
    let mut d = ChunkedDecoder::new(&Limits::default());
    let mut b = BytesMut::from(&b"ffffffffffffffff\r\nabc"[..]);
    assert_eq!(d.decode(&mut b), Ok(Decoded::Data("abc".into())));
    assert_eq!(d.decode(&mut b), Ok(Decoded::NeedMore));
}

#[test]
fn data_must_end_with_crlf() {
    for s in [
        "5\r\nhelloX\r\n0\r\n\r\n",
        "5\r\nhello\n0\r\n\r\n",
        "5\r\nhello\r0\r\n\r\n",
        "5\r\nhello0\r\n\r\n",
    ] {
        assert_eq!(body_of(s), Err(BodyError::ChunkDataEnd), "{s:?}");
    }
}

#[test]
fn trailers() {
    let (b, t, _) = chunked(b"1\r\nx\r\n0\r\nA: 1\r\nB: 2\r\n\r\n", 1).unwrap();
    assert_eq!(b, b"x");
    assert_eq!(t.len(), 2);
    assert_eq!(t["b"], "2");
    for s in [
        "0\r\nA 1\r\n\r\n",
        "0\r\nA: 1\r\r\n",
        "0\r\nA: 1\r\n b\r\n\r\n",
        "0\r\nA : 1\r\n\r\n",
        // Two fields on one CRLF line: more than the lines counted (hyper).
        "0\r\nA: 1\nB: 2\r\n\r\n",
    ] {
        assert_eq!(body_of(s), Err(BodyError::Trailers), "{s:?}");
    }
    // A bare LF starts a trailer line that has not ended.
    let mut d = ChunkedDecoder::new(&Limits::default());
    let mut b = BytesMut::from(&b"0\r\n\n"[..]);
    assert_eq!(d.decode(&mut b), Ok(Decoded::NeedMore));
    let big = format!("0\r\nA: {}\r\n\r\n", "x".repeat(16 << 10));
    assert_eq!(
        body_of(&big),
        Err(BodyError::TrailersTooLarge { limit: 16 << 10 })
    );
    let many: String = (0..101).map(|i| format!("T{i}: x\r\n")).collect();
    assert_eq!(
        body_of(&format!("0\r\n{many}\r\n")),
        Err(BodyError::TooManyTrailers { limit: 100 })
    );
    let hundred: String = (0..100).map(|i| format!("T{i}: x\r\n")).collect();
    let (_, t, _) = chunked(format!("0\r\n{hundred}\r\n").as_bytes(), 5).unwrap();
    assert_eq!(t.len(), 100);
}

#[test]
fn errors_stick() {
    let mut d = ChunkedDecoder::new(&Limits::default());
    let mut b = BytesMut::from(&b"x"[..]);
    assert_eq!(d.decode(&mut b), Err(BodyError::ChunkSize));
    let mut b = BytesMut::from(&b"0\r\n\r\n"[..]);
    assert_eq!(d.decode(&mut b), Err(BodyError::ChunkSize));
}

#[test]
fn length_decoder() {
    let mut d = LengthDecoder::new(5);
    let mut b = BytesMut::from(&b"he"[..]);
    assert_eq!(d.decode(&mut b), Decoded::Data("he".into()));
    assert_eq!(d.decode(&mut b), Decoded::NeedMore);
    b.extend_from_slice(b"lloGET");
    assert_eq!(d.decode(&mut b), Decoded::Data("llo".into()));
    assert_eq!(d.decode(&mut b), Decoded::End(HeaderMap::new()));
    assert_eq!(&b[..], b"GET");
    assert_eq!(
        LengthDecoder::new(0).decode(&mut b),
        Decoded::End(HeaderMap::new())
    );
}
