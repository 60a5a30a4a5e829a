//! Precompressed sidecars: selection by Accept-Encoding with q-values, and
//! the headers that must follow (Content-Encoding, Content-Length, Vary, a
//! distinct ETag per encoding).

use http::StatusCode;

use crate::{Fixture, Mode, Reply, MODES};

const PLAIN: &str = "body { color: red; } /* the identity representation */\n";
const BR: &[u8] = b"BR-BYTES";
const ZSTD: &[u8] = b"ZSTD-BYTES-";
const GZIP: &[u8] = b"GZIP-BYTES--";

fn fixture(mode: Mode) -> Fixture {
    let fx = Fixture::new(mode);
    fx.write("x.css", PLAIN);
    fx.write("x.css.br", BR);
    fx.write("x.css.zst", ZSTD);
    fx.write("x.css.gz", GZIP);
    fx
}

async fn css(fx: &Fixture, accept: Option<&str>) -> Reply {
    match accept {
        Some(a) => fx.get("/x.css", &[("accept-encoding", a)]).await,
        None => fx.get("/x.css", &[]).await,
    }
}

/// Which representation came back, checked for consistent headers.
fn which(r: &Reply) -> &'static str {
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("text/css; charset=utf-8"));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(r.header("content-length"), Some(&*r.body.len().to_string()));
    let etag = r.header("etag").unwrap();
    let (name, body, suffix): (_, &[u8], _) = match r.header("content-encoding") {
        None => ("identity", PLAIN.as_bytes(), None),
        Some("br") => ("br", BR, Some("-br\"")),
        Some("zstd") => ("zstd", ZSTD, Some("-zstd\"")),
        Some("gzip") => ("gzip", GZIP, Some("-gzip\"")),
        Some(other) => panic!("unexpected coding {other}"),
    };
    assert_eq!(&r.body[..], body);
    match suffix {
        Some(s) => assert!(etag.ends_with(s), "{etag}"),
        None => {
            assert!(!etag.contains("-br") && !etag.contains("-gzip") && !etag.contains("-zstd"))
        }
    }
    name
}

#[tokio::test]
async fn selection_follows_accept_encoding() {
    let cases = [
        (None, "identity"),
        (Some("gzip, deflate, br, zstd"), "br"),
        (Some("gzip, zstd"), "zstd"),
        (Some("gzip"), "gzip"),
        (Some("x-gzip"), "gzip"),
        (Some("br;q=0, gzip"), "gzip"),
        (Some("br;q=0.5, zstd;q=0.6, gzip;q=0.4"), "zstd"),
        (Some("gzip;q=0.3, identity;q=0.5"), "identity"),
        (Some("identity"), "identity"),
        (Some("*"), "br"),
        (Some("*;q=0.5, br;q=0"), "zstd"),
        (Some("compress"), "identity"),
        (Some(""), "identity"),
    ];
    for mode in MODES {
        let fx = fixture(mode);
        for (accept, want) in cases {
            assert_eq!(which(&css(&fx, accept).await), want, "{mode:?} {accept:?}");
        }
    }
}

#[tokio::test]
async fn etags_differ_per_encoding_and_validate_separately() {
    for mode in MODES {
        let fx = fixture(mode);
        let br = css(&fx, Some("br")).await;
        let gz = css(&fx, Some("gzip")).await;
        let id = css(&fx, None).await;
        let tags = [br.header("etag"), gz.header("etag"), id.header("etag")];
        assert!(tags[0] != tags[1] && tags[1] != tags[2] && tags[0] != tags[2]);
        // The brotli tag does not validate the gzip representation.
        let r = fx
            .get(
                "/x.css",
                &[
                    ("accept-encoding", "gzip"),
                    ("if-none-match", tags[0].unwrap()),
                ],
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        let r = fx
            .get(
                "/x.css",
                &[
                    ("accept-encoding", "br"),
                    ("if-none-match", tags[0].unwrap()),
                ],
            )
            .await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED);
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(r.header("etag"), tags[0]);
    }
}

#[tokio::test]
async fn ranges_apply_to_the_chosen_representation() {
    for mode in MODES {
        let fx = fixture(mode);
        let r = fx
            .get(
                "/x.css",
                &[("accept-encoding", "br"), ("range", "bytes=3-")],
            )
            .await;
        assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(&r.body[..], &BR[3..]);
        assert_eq!(
            r.header("content-range"),
            Some(&*format!("bytes 3-{}/{}", BR.len() - 1, BR.len()))
        );
        assert_eq!(r.header("content-encoding"), Some("br"));
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    }
}

#[tokio::test]
async fn vary_only_when_a_sidecar_exists() {
    for mode in MODES {
        let fx = fixture(mode);
        fx.write("plain.css", PLAIN);
        fx.write("only-gz.css", PLAIN);
        fx.write("only-gz.css.gz", GZIP);
        let r = fx
            .get("/plain.css", &[("accept-encoding", "gzip, br")])
            .await;
        assert_eq!(r.header("vary"), None);
        assert_eq!(r.header("content-encoding"), None);
        let r = fx.get("/only-gz.css", &[("accept-encoding", "br")]).await;
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(r.header("content-encoding"), None);
        assert_eq!(r.text(), PLAIN);
    }
}

#[tokio::test]
async fn a_sidecar_without_its_original_is_not_served() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        fx.write("ghost.js.gz", GZIP);
        let r = fx.get("/ghost.js", &[("accept-encoding", "gzip")]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        // The sidecar itself is an ordinary file when asked for by name.
        let r = fx.get("/ghost.js.gz", &[("accept-encoding", "gzip")]).await;
        assert_eq!(r.header("content-type"), Some("application/gzip"));
        assert_eq!(r.header("content-encoding"), None);
    }
}

#[tokio::test]
async fn precompressed_off_serves_identity_without_vary() {
    for mode in MODES {
        let fx = Fixture::with(mode, |c| c.precompressed = false, crate::cache_config());
        fx.write("x.css", PLAIN);
        fx.write("x.css.br", BR);
        let r = fx.get("/x.css", &[("accept-encoding", "br")]).await;
        assert_eq!(r.text(), PLAIN);
        assert_eq!(r.header("vary"), None);
        assert_eq!(r.header("content-encoding"), None);
    }
}

#[tokio::test]
async fn index_files_have_sidecars_too() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        fx.write("docs/index.html", "<p>hi</p>");
        fx.write("docs/index.html.gz", GZIP);
        let r = fx.get("/docs/", &[("accept-encoding", "gzip")]).await;
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(&r.body[..], GZIP);
        let r = fx.get("/docs/", &[]).await;
        assert_eq!(r.text(), "<p>hi</p>");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    }
}

#[tokio::test]
async fn head_of_a_sidecar_reports_its_length() {
    for mode in MODES {
        let fx = fixture(mode);
        let r = fx.head("/x.css", &[("accept-encoding", "zstd")]).await;
        assert_eq!(r.header("content-length"), Some(&*ZSTD.len().to_string()));
        assert_eq!(r.header("content-encoding"), Some("zstd"));
        assert!(r.body.is_empty());
    }
}
