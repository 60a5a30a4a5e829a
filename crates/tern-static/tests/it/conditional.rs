//! The precondition matrix of RFC 9110 §13.2.2: each header alone, the
//! combinations whose order matters, and If-Range.

use http::StatusCode;

use crate::{Fixture, AFTER, BEFORE, MODES, MTIME_STR};

const BODY: &str = "hello, conditional world\n";

async fn fixture(mode: crate::Mode) -> (Fixture, String) {
    let fx = Fixture::new(mode);
    fx.write("a.txt", BODY);
    let etag = fx
        .get("/a.txt", &[])
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    (fx, etag)
}

#[tokio::test]
async fn plain_get_carries_validators_and_type() {
    for mode in MODES {
        let (fx, etag) = fixture(mode).await;
        let r = fx.get("/a.txt", &[]).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.text(), BODY);
        assert!(etag.starts_with('"') && etag.ends_with('"') && !etag.starts_with("W/"));
        assert_eq!(r.header("last-modified"), Some(MTIME_STR));
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(r.header("content-length"), Some(&*BODY.len().to_string()));
        assert_eq!(r.header("accept-ranges"), Some("bytes"));
        assert_eq!(r.header("vary"), None);
        assert_eq!(r.header("content-encoding"), None);
    }
}

#[tokio::test]
async fn head_has_the_get_headers_and_no_body() {
    for mode in MODES {
        let (fx, _) = fixture(mode).await;
        let get = fx.get("/a.txt", &[]).await;
        let head = fx.head("/a.txt", &[]).await;
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.headers, get.headers);
        assert!(head.body.is_empty());
    }
}

/// (headers, expected status) for one request to /a.txt; `ETAG` in a value
/// stands for the file's entity tag.
type Case = (&'static [(&'static str, &'static str)], StatusCode);

async fn run(cases: &[Case]) {
    for mode in MODES {
        let (fx, etag) = fixture(mode).await;
        let weak = format!("W/{etag}");
        for (headers, want) in cases {
            let headers: Vec<(&str, String)> = headers
                .iter()
                .map(|(k, v)| (*k, v.replace("WEAK", &weak).replace("ETAG", &etag)))
                .collect();
            let borrowed: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = fx.get("/a.txt", &borrowed).await;
            assert_eq!(r.status, *want, "{mode:?} {headers:?}");
            match r.status {
                StatusCode::OK => assert_eq!(r.text(), BODY),
                StatusCode::NOT_MODIFIED => {
                    assert_eq!(r.header("etag"), Some(&*etag));
                    assert_eq!(r.header("last-modified"), Some(MTIME_STR));
                    assert_eq!(r.header("content-length"), None);
                    assert_eq!(r.header("content-type"), None);
                    assert!(r.body.is_empty());
                }
                _ => {}
            }
        }
    }
}

const OK: StatusCode = StatusCode::OK;
const NOT_MODIFIED: StatusCode = StatusCode::NOT_MODIFIED;
const FAILED: StatusCode = StatusCode::PRECONDITION_FAILED;
const PARTIAL: StatusCode = StatusCode::PARTIAL_CONTENT;

#[tokio::test]
async fn if_match() {
    run(&[
        (&[("if-match", "ETAG")], OK),
        (&[("if-match", "*")], OK),
        (&[("if-match", "\"nope\", ETAG")], OK),
        (&[("if-match", "WEAK")], FAILED),
        (&[("if-match", "\"nope\"")], FAILED),
    ])
    .await;
}

#[tokio::test]
async fn if_unmodified_since() {
    run(&[
        (&[("if-unmodified-since", MTIME_STR)], OK),
        (&[("if-unmodified-since", AFTER)], OK),
        (&[("if-unmodified-since", BEFORE)], FAILED),
        (&[("if-unmodified-since", "not a date")], OK),
        // If-Match present: If-Unmodified-Since is not evaluated.
        (&[("if-match", "ETAG"), ("if-unmodified-since", BEFORE)], OK),
    ])
    .await;
}

#[tokio::test]
async fn if_none_match() {
    run(&[
        (&[("if-none-match", "ETAG")], NOT_MODIFIED),
        (&[("if-none-match", "WEAK")], NOT_MODIFIED),
        (&[("if-none-match", "\"x\", ETAG")], NOT_MODIFIED),
        (&[("if-none-match", "*")], NOT_MODIFIED),
        (&[("if-none-match", "\"x\"")], OK),
    ])
    .await;
}

#[tokio::test]
async fn if_modified_since() {
    run(&[
        (&[("if-modified-since", MTIME_STR)], NOT_MODIFIED),
        (&[("if-modified-since", AFTER)], NOT_MODIFIED),
        (&[("if-modified-since", BEFORE)], OK),
        (&[("if-modified-since", "garbage")], OK),
        // If-None-Match present: If-Modified-Since is not evaluated.
        (
            &[("if-none-match", "\"x\""), ("if-modified-since", MTIME_STR)],
            OK,
        ),
        (
            &[("if-none-match", "ETAG"), ("if-modified-since", BEFORE)],
            NOT_MODIFIED,
        ),
    ])
    .await;
}

#[tokio::test]
async fn failures_win_over_not_modified() {
    run(&[
        (&[("if-match", "\"x\""), ("if-none-match", "ETAG")], FAILED),
        (
            &[
                ("if-unmodified-since", BEFORE),
                ("if-modified-since", MTIME_STR),
            ],
            FAILED,
        ),
        (
            &[("if-match", "ETAG"), ("if-none-match", "ETAG")],
            NOT_MODIFIED,
        ),
        (
            &[
                ("if-match", "ETAG"),
                ("if-modified-since", MTIME_STR),
                ("range", "bytes=0-1"),
            ],
            NOT_MODIFIED,
        ),
    ])
    .await;
}

#[tokio::test]
async fn if_range_decides_whether_range_applies() {
    run(&[
        (&[("range", "bytes=0-4"), ("if-range", "ETAG")], PARTIAL),
        (&[("range", "bytes=0-4"), ("if-range", "\"other\"")], OK),
        (&[("range", "bytes=0-4"), ("if-range", "WEAK")], OK),
        (&[("range", "bytes=0-4"), ("if-range", MTIME_STR)], PARTIAL),
        (&[("range", "bytes=0-4"), ("if-range", BEFORE)], OK),
        (&[("range", "bytes=0-4"), ("if-range", AFTER)], OK),
        (&[("range", "bytes=0-4"), ("if-range", "not a date")], OK),
        // If-Range without Range changes nothing.
        (&[("if-range", "\"other\"")], OK),
        // A passing If-Match and a failing If-Range: full 200.
        (
            &[
                ("if-match", "ETAG"),
                ("range", "bytes=0-4"),
                ("if-range", "\"x\""),
            ],
            OK,
        ),
    ])
    .await;
}

#[tokio::test]
async fn head_answers_304_and_412_too() {
    for mode in MODES {
        let (fx, etag) = fixture(mode).await;
        let r = fx.head("/a.txt", &[("if-none-match", &etag)]).await;
        assert_eq!(r.status, NOT_MODIFIED);
        let r = fx.head("/a.txt", &[("if-match", "\"x\"")]).await;
        assert_eq!(r.status, FAILED);
    }
}

#[tokio::test]
async fn a_changed_file_gets_a_new_etag() {
    let fx = Fixture::new(crate::Mode::Uncached);
    let path = fx.write("a.txt", BODY);
    let before = fx
        .get("/a.txt", &[])
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    std::fs::write(&path, "other contents, same idea\n").unwrap();
    crate::set_mtime(&path, crate::MTIME + 5);
    let r = fx.get("/a.txt", &[("if-none-match", &before)]).await;
    assert_eq!(r.status, OK);
    assert_ne!(r.header("etag"), Some(&*before));
}
