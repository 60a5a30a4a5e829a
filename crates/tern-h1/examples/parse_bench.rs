//! Micro-benchmark of tern-h1's hot paths, best of 5 runs:
//!
//! ```sh
//! cargo run --release -p tern-h1 --example parse_bench
//! ```
//!
//! For scale, `httparse` alone (the tokenizer under both tern-h1 and
//! hyper, without building `http` types) is timed on the same heads.

use std::hint::black_box;
use std::time::Instant;

use bytes::BytesMut;
use http::header::{HeaderMap, HeaderValue};
use http::{StatusCode, Version};
use tern_h1::{
    encode_response_head, parse_head, BodyLength, ChunkedDecoder, DateCache, Decoded, Limits,
    ResponseHead,
};

const BROWSER_GET: &[u8] =
    b"GET /articles/2026/11/a-long-title.html?ref=front&utm_source=x HTTP/1.1\r\n\
Host: www.example.org\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
Accept-Language: en-US,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Connection: keep-alive\r\n\
Referer: https://www.example.org/\r\n\
Cookie: session=8f2e1c9a7b; theme=dark\r\n\
Upgrade-Insecure-Requests: 1\r\n\
If-Modified-Since: Tue, 24 Nov 2026 10:00:00 GMT\r\n\r\n";

const WRK_GET: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

/// Runs `f` `iters` times, five rounds; the best round's ns per call.
fn best_of_5(iters: u32, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(iters)
        })
        .fold(f64::INFINITY, f64::min)
}

fn httparse_only(buf: &[u8]) -> usize {
    let mut fields = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => 0,
    }
}

fn main() {
    let limits = Limits::default();
    for (name, head) in [("browser GET", BROWSER_GET), ("wrk GET", WRK_GET)] {
        let n = parse_head(head, &limits).unwrap().unwrap().headers.len();
        let ns = best_of_5(200_000, || {
            black_box(parse_head(black_box(head), &limits).unwrap());
        });
        let raw = best_of_5(200_000, || {
            black_box(httparse_only(black_box(head)));
        });
        println!(
            "parse_head {name:<12} ({} bytes, {n} fields): {ns:7.1} ns/op   (httparse alone: {raw:.1} ns)",
            head.len()
        );
    }

    // 64 KiB in 1 KiB chunks, as one buffer.
    let mut body = Vec::new();
    for _ in 0..64 {
        body.extend_from_slice(b"400\r\n");
        body.extend_from_slice(&[b'x'; 1024]);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let source = BytesMut::from(&body[..]);
    let ns = best_of_5(20_000, || {
        let mut buf = source.clone();
        let mut d = ChunkedDecoder::new(&limits);
        let mut total = 0;
        loop {
            match d.decode(&mut buf).unwrap() {
                Decoded::Data(b) => total += b.len(),
                Decoded::End(_) => break,
                Decoded::NeedMore => unreachable!(),
            }
        }
        assert_eq!(total, 64 << 10);
        black_box(total);
    });
    let copy = best_of_5(20_000, || {
        black_box(source.clone());
    });
    println!(
        "chunked 64 KiB in 1 KiB chunks:          {:7.1} ns/op   ({:.2} GB/s; the buffer clone alone: {copy:.0} ns)",
        ns - copy,
        (64 << 10) as f64 / (ns - copy)
    );

    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        "last-modified",
        HeaderValue::from_static("Tue, 24 Nov 2026 10:00:00 GMT"),
    );
    headers.insert("etag", HeaderValue::from_static("\"5f2e-1c9a\""));
    headers.insert("accept-ranges", HeaderValue::from_static("bytes"));
    let mut dates = DateCache::new();
    let mut dst = Vec::with_capacity(512);
    let ns = best_of_5(500_000, || {
        dst.clear();
        let head = ResponseHead {
            status: StatusCode::OK,
            reason: None,
            version: Version::HTTP_11,
            lines: b"",
            lines_length: false,
            headers: &headers,
            body: BodyLength::Known(24_414),
            head_request: false,
            keep_alive: true,
        };
        black_box(encode_response_head(&mut dst, &head, dates.now()));
    });
    println!(
        "encode_response_head (4 fields, {} bytes): {ns:7.1} ns/op (DateCache::now included)",
        dst.len()
    );
}
