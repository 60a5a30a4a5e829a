//! Range requests: single, suffix, open, multipart with exact bytes,
//! coalescing, the cap, 416, invalid headers, streamed files and a file
//! larger than 4 GiB.

use http::{Method, StatusCode};

use crate::{Fixture, Mode, Reply, MODES};

/// 1000 bytes, every position distinct enough to catch an off-by-one.
fn data() -> Vec<u8> {
    (0..1000u32)
        .map(|i| b"0123456789abcdefghijklmnopqrstuvwxyz"[(i % 36) as usize])
        .collect()
}

fn fixture(mode: Mode) -> Fixture {
    let fx = Fixture::new(mode);
    fx.write("d.bin", data());
    fx
}

async fn range(fx: &Fixture, spec: &str) -> Reply {
    fx.get("/d.bin", &[("range", spec)]).await
}

fn assert_partial(r: &Reply, start: usize, end: usize, total: usize, data: &[u8]) {
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        r.header("content-range"),
        Some(&*format!("bytes {start}-{end}/{total}"))
    );
    assert_eq!(
        r.header("content-length"),
        Some(&*(end - start + 1).to_string())
    );
    assert_eq!(&r.body[..], &data[start..=end]);
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert!(r.header("etag").is_some());
}

#[tokio::test]
async fn single_suffix_and_open_ranges() {
    let d = data();
    for mode in MODES {
        let fx = fixture(mode);
        assert_partial(&range(&fx, "bytes=0-9").await, 0, 9, 1000, &d);
        assert_partial(&range(&fx, "bytes=990-").await, 990, 999, 1000, &d);
        assert_partial(&range(&fx, "bytes=-7").await, 993, 999, 1000, &d);
        assert_partial(&range(&fx, "bytes=-5000").await, 0, 999, 1000, &d);
        assert_partial(&range(&fx, "bytes=500-100000").await, 500, 999, 1000, &d);
        // Overlapping and adjacent ranges coalesce into one part.
        assert_partial(
            &range(&fx, "bytes=10-20,15-30,31-40").await,
            10,
            40,
            1000,
            &d,
        );
    }
}

/// Splits a multipart/byteranges body by its boundary and checks every part
/// byte for byte against what RFC 9110 §14.6 prescribes.
fn expect_multipart(
    r: &Reply,
    parts: &[(usize, usize)],
    total: usize,
    data: &[u8],
    part_type: &str,
) {
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    let ct = r.header("content-type").unwrap();
    let boundary = ct
        .strip_prefix("multipart/byteranges; boundary=")
        .expect("multipart type");
    let mut want = Vec::new();
    for (i, (s, e)) in parts.iter().enumerate() {
        if i > 0 {
            want.extend_from_slice(b"\r\n");
        }
        want.extend_from_slice(
            format!("--{boundary}\r\nContent-Type: {part_type}\r\nContent-Range: bytes {s}-{e}/{total}\r\n\r\n")
                .as_bytes(),
        );
        want.extend_from_slice(&data[*s..=*e]);
    }
    want.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    assert_eq!(r.body, want);
    assert_eq!(r.header("content-length"), Some(&*want.len().to_string()));
    assert_eq!(r.header("content-range"), None);
}

#[tokio::test]
async fn several_ranges_make_multipart_byteranges() {
    let d = data();
    for mode in MODES {
        let fx = fixture(mode);
        let r = range(&fx, "bytes=0-1, 5-9").await;
        expect_multipart(&r, &[(0, 1), (5, 9)], 1000, &d, "application/octet-stream");
        // Sorted, with overlaps merged and a suffix resolved.
        let r = range(&fx, "bytes=-3,100-110,105-120,0-0").await;
        expect_multipart(
            &r,
            &[(0, 0), (100, 120), (997, 999)],
            1000,
            &d,
            "application/octet-stream",
        );
    }
}

#[tokio::test]
async fn more_ranges_than_the_cap_send_the_whole_file() {
    for mode in MODES {
        let fx = Fixture::with(mode, |c| c.max_ranges = 2, crate::cache_config());
        fx.write("d.bin", data());
        let r = range(&fx, "bytes=0-0,2-2,4-4").await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body.len(), 1000);
        let r = range(&fx, "bytes=0-0,2-2").await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    }
}

#[tokio::test]
async fn unsatisfiable_is_416_with_the_size() {
    for mode in MODES {
        let fx = fixture(mode);
        for spec in ["bytes=1000-", "bytes=2000-3000, 1500-", "bytes=-0"] {
            let r = range(&fx, spec).await;
            assert_eq!(r.status, StatusCode::RANGE_NOT_SATISFIABLE, "{spec}");
            assert_eq!(r.header("content-range"), Some("bytes */1000"));
        }
    }
}

#[tokio::test]
async fn invalid_range_headers_are_ignored() {
    for mode in MODES {
        let fx = fixture(mode);
        for spec in ["bytes=9-1", "bytes=x-y", "lines=0-1", "bytes=", "0-1"] {
            let r = range(&fx, spec).await;
            assert_eq!(r.status, StatusCode::OK, "{spec}");
            assert_eq!(r.body.len(), 1000);
        }
    }
}

#[tokio::test]
async fn head_ignores_range() {
    for mode in MODES {
        let fx = fixture(mode);
        let r = fx.head("/d.bin", &[("range", "bytes=0-9")]).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-length"), Some("1000"));
        assert!(r.body.is_empty());
    }
}

#[tokio::test]
async fn streamed_files_serve_ranges_and_multipart() {
    // Larger than max_entry_bytes and than one read chunk: never cached,
    // always streamed.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    for mode in MODES {
        let fx = fixture(mode);
        fx.write("big.bin", &big);
        let whole = fx.get("/big.bin", &[]).await;
        assert_eq!(whole.status, StatusCode::OK);
        assert_eq!(whole.header("content-length"), Some("300000"));
        assert_eq!(whole.body, big);
        let r = fx
            .get("/big.bin", &[("range", "bytes=131000-262200")])
            .await;
        assert_partial_bin(&r, 131_000, 262_200, &big);
        let r = fx
            .get("/big.bin", &[("range", "bytes=0-2,150000-290000")])
            .await;
        expect_multipart(
            &r,
            &[(0, 2), (150_000, 290_000)],
            300_000,
            &big,
            "application/octet-stream",
        );
    }
}

fn assert_partial_bin(r: &Reply, start: usize, end: usize, data: &[u8]) {
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        r.header("content-range"),
        Some(&*format!("bytes {start}-{end}/{}", data.len()))
    );
    assert_eq!(&r.body[..], &data[start..=end]);
}

#[tokio::test]
async fn a_sparse_file_beyond_four_gib() {
    const LEN: u64 = 5 << 30;
    let fx = Fixture::new(Mode::Cached);
    let path = fx.root().join("huge.img");
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(LEN).unwrap();
        f.write_all_at(b"THE END!!!", LEN - 10).unwrap();
        f.write_all_at(b"past 4G", (4 << 30) + 3).unwrap();
    }
    let r = fx.once(Method::HEAD, "/huge.img", &[]).await;
    assert_eq!(r.header("content-length"), Some("5368709120"));
    let r = fx
        .once(Method::GET, "/huge.img", &[("range", "bytes=-10")])
        .await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        r.header("content-range"),
        Some("bytes 5368709110-5368709119/5368709120")
    );
    assert_eq!(&r.body[..], b"THE END!!!");
    let start = (4u64 << 30) + 3;
    let spec = format!("bytes={start}-{}", start + 6);
    let r = fx.once(Method::GET, "/huge.img", &[("range", &spec)]).await;
    assert_eq!(&r.body[..], b"past 4G");
    let r = fx
        .once(Method::GET, "/huge.img", &[("range", "bytes=5368709120-")])
        .await;
    assert_eq!(r.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(r.header("content-range"), Some("bytes */5368709120"));
}
