//! The file cache: counters, hits without file-system access, freshness,
//! eviction, size limits, and sharing between sites.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use tern_config::CacheConfig;
use tern_static::{FileCache, StaticFiles};

use crate::{cache_config, send, Fixture, Mode};

fn cached(tune: impl FnOnce(&mut CacheConfig)) -> Fixture {
    let mut cfg = cache_config();
    tune(&mut cfg);
    Fixture::with(Mode::Cached, |_| {}, cfg)
}

async fn body(fx: &Fixture, path: &str) -> String {
    let r = fx.once(Method::GET, path, &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{path}");
    r.text().to_owned()
}

#[tokio::test]
async fn a_hit_counts_and_needs_no_file() {
    let fx = cached(|_| {});
    let path = fx.write("a.txt", "cached!");
    assert_eq!(body(&fx, "/a.txt").await, "cached!");
    let s = fx.stats();
    assert_eq!((s.hits, s.misses, s.entries, s.bytes), (0, 1, 1, 7));
    // Within the revalidation window the file system is not consulted: a
    // deleted file is still served from memory.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(body(&fx, "/a.txt").await, "cached!");
    let r = fx
        .once(Method::GET, "/a.txt", &[("range", "bytes=1-2")])
        .await;
    assert_eq!((r.status, r.text()), (StatusCode::PARTIAL_CONTENT, "ac"));
    let s = fx.stats();
    assert_eq!((s.hits, s.misses), (2, 1));
}

#[tokio::test]
async fn a_large_cached_body_comes_with_the_open_file_that_holds_it() {
    // At least SEND_FILE_MIN bytes: a connection that can sends the body
    // from the file the cache keeps open (sendfile); `send` reads it from
    // there, so the bytes below are the region's.
    let fx = cached(|_| {});
    let big: String = (0..40_000)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let path = fx.write("big.txt", &big);
    fx.write("small.txt", "small");
    for round in ["a miss", "a hit"] {
        let r = fx.once(Method::GET, "/big.txt", &[]).await;
        assert!(r.from_file, "{round}");
        assert_eq!(r.text(), big, "{round}");
    }
    let r = fx
        .once(Method::GET, "/big.txt", &[("range", "bytes=20000-39999")])
        .await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert!(r.from_file);
    assert_eq!(r.text(), &big[20_000..]);
    // A range of it is in the file at its offset (whether a short one is
    // worth sending from there is the connection's call).
    let range = fx
        .once(Method::GET, "/big.txt", &[("range", "bytes=7-16")])
        .await;
    assert!(range.from_file);
    assert_eq!(range.text(), &big[7..17]);
    // A small file is not kept open; HEAD has no body to send.
    let small = fx.once(Method::GET, "/small.txt", &[]).await;
    let head = fx.once(Method::HEAD, "/big.txt", &[]).await;
    assert!(!small.from_file && !head.from_file);
    // The file is held open: a hit is sent from it even after the path
    // is gone, as the body in memory is served.
    std::fs::remove_file(&path).unwrap();
    let r = fx.once(Method::GET, "/big.txt", &[]).await;
    assert!(r.from_file);
    assert_eq!(r.text(), big);
}

#[tokio::test]
async fn empty_file_is_cached_too() {
    // The 0 KB file of the reports' tables: it must be a hit like any other.
    let fx = cached(|_| {});
    let path = fx.write("empty.html", "");
    assert_eq!(body(&fx, "/empty.html").await, "");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(body(&fx, "/empty.html").await, "");
    let s = fx.stats();
    assert_eq!((s.hits, s.misses, s.entries, s.bytes), (1, 1, 1, 0));
}

#[tokio::test]
async fn a_changed_file_is_served_fresh_after_revalidate() {
    let fx = cached(|c| c.revalidate = Duration::from_millis(50));
    let path = fx.write("a.txt", "version one");
    assert_eq!(body(&fx, "/a.txt").await, "version one");
    // Same size, new contents and mtime.
    std::fs::write(&path, "version two").unwrap();
    crate::touch_now(&path);
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(body(&fx, "/a.txt").await, "version two");
    assert_eq!(body(&fx, "/a.txt").await, "version two");
    let s = fx.stats();
    // The third request is a hit unless the machine stalled past the window.
    assert!(s.misses >= 2 && s.hits + s.misses == 3, "{s:?}");
    assert_eq!((s.entries, s.bytes), (1, 11));
}

#[tokio::test]
async fn an_unchanged_file_is_revalidated_without_rereading() {
    let fx = cached(|c| c.revalidate = Duration::from_millis(30));
    let path = fx.write("a.txt", "steady");
    let first = fx.once(Method::GET, "/a.txt", &[]).await;
    // New bytes under the same stamp (inode, size, mtime): revalidation
    // finds the file unchanged and keeps the body it holds, which proves
    // the body was not read again.
    std::fs::write(&path, "STEADY").unwrap();
    crate::set_mtime(&path, crate::MTIME);
    tokio::time::sleep(Duration::from_millis(80)).await;
    let again = fx.once(Method::GET, "/a.txt", &[]).await;
    assert_eq!(again.text(), "steady");
    assert_eq!(first.header("etag"), again.header("etag"));
    let s = fx.stats();
    assert_eq!((s.misses, s.entries, s.bytes), (2, 1, 6));
}

#[tokio::test]
async fn a_deleted_file_is_404_after_revalidate() {
    let fx = cached(|c| c.revalidate = Duration::from_millis(30));
    let path = fx.write("gone.txt", "soon gone");
    assert_eq!(body(&fx, "/gone.txt").await, "soon gone");
    std::fs::remove_file(&path).unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    let r = fx.once(Method::GET, "/gone.txt", &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!((fx.stats().entries, fx.stats().bytes), (0, 0));
}

#[tokio::test]
async fn eviction_keeps_the_total_and_spares_recent_hits() {
    let fx = cached(|c| {
        c.max_bytes = 100;
        c.max_entry_bytes = 60;
    });
    let forty = "x".repeat(40);
    for name in ["a", "b", "c"] {
        fx.write(name, &forty);
    }
    body(&fx, "/a").await;
    body(&fx, "/b").await;
    body(&fx, "/a").await; // a hit: a's reference bit is set
    body(&fx, "/c").await; // 120 > 100: the clock spares a, evicts b
    let s = fx.stats();
    assert_eq!((s.evictions, s.entries, s.bytes), (1, 2, 80));
    let before = fx.stats();
    body(&fx, "/a").await;
    body(&fx, "/c").await;
    assert_eq!(fx.stats().hits, before.hits + 2, "a and c stayed");
    body(&fx, "/b").await;
    assert_eq!(fx.stats().misses, before.misses + 1, "b was evicted");
    assert!(fx.stats().bytes <= 100);
}

#[tokio::test]
async fn files_over_max_entry_bytes_stream_uncached() {
    let fx = cached(|c| c.max_entry_bytes = 10);
    fx.write("big.txt", "more than ten bytes");
    for _ in 0..2 {
        assert_eq!(body(&fx, "/big.txt").await, "more than ten bytes");
    }
    let s = fx.stats();
    assert_eq!((s.hits, s.misses, s.entries, s.bytes), (0, 2, 0, 0));
}

#[tokio::test]
async fn each_encoding_is_held_once() {
    let fx = cached(|_| {});
    fx.write("s.js", "plain js");
    fx.write("s.js.br", "br!");
    fx.write("s.js.gz", "gzip!");
    for (accept, want) in [
        ("br", "br!"),
        ("gzip", "gzip!"),
        ("identity", "plain js"),
        ("br", "br!"),
    ] {
        let r = fx
            .once(Method::GET, "/s.js", &[("accept-encoding", accept)])
            .await;
        assert_eq!(r.text(), want);
    }
    let s = fx.stats();
    assert_eq!((s.hits, s.misses, s.entries, s.bytes), (1, 3, 1, 3 + 5 + 8));
}

#[tokio::test]
async fn switched_off_caches_keep_open_files_and_no_bodies() {
    // The cache is off globally, or for one site.
    let globally = cached(|c| c.enabled = false);
    let mut one_site = cached(|_| {});
    one_site.cfg.cache = false;
    one_site.rebuild();
    for fx in [globally, one_site] {
        // A small body, one sent from the file, and one streamed.
        fx.write("a.txt", "a");
        let mid = fx.write("mid.bin", vec![b'm'; 20_000]);
        fx.write("big.bin", vec![b'b'; 300_000]);
        for path in ["/a.txt", "/mid.bin", "/big.bin"] {
            let first = fx.once(Method::GET, path, &[]).await;
            let second = fx.once(Method::GET, path, &[]).await;
            crate::assert_same(&first, &second, path);
        }
        let s = fx.stats();
        assert_eq!((s.hits, s.misses, s.entries, s.bytes), (3, 3, 3, 0));
        // The bytes are read again on every hit: a file changed in place
        // (same size, inode and stamp) is served as it is now.
        std::fs::write(&mid, vec![b'n'; 20_000]).unwrap();
        crate::set_mtime(&mid, crate::MTIME);
        assert_eq!(body(&fx, "/mid.bin").await, "n".repeat(20_000));
        // One that shrank is not answered from the entry: the slow path
        // sees the new stamp.
        std::fs::write(&mid, "short").unwrap();
        crate::set_mtime(&mid, crate::MTIME);
        assert_eq!(body(&fx, "/mid.bin").await, "short");
        assert_eq!(fx.stats().bytes, 0);
    }
}

#[tokio::test]
async fn open_files_are_bounded() {
    let fx = cached(|c| c.enabled = false);
    for i in 0..1100 {
        fx.write(&format!("f{i}.txt"), format!("file {i}"));
    }
    for round in 0..2 {
        for i in 0..1100 {
            assert_eq!(
                body(&fx, &format!("/f{i}.txt")).await,
                format!("file {i}"),
                "round {round}"
            );
        }
    }
    let s = fx.stats();
    assert!(s.entries <= 1024 && s.evictions >= 1100 - 1024, "{s:?}");
    assert_eq!(s.bytes, 0);
}

#[tokio::test]
async fn sites_with_different_settings_do_not_share_entries() {
    let fx = cached(|_| {});
    fx.write("style.css", "css");
    let cache: Arc<FileCache> = fx.cache.clone().unwrap();
    let mut other = fx.cfg.clone();
    other.mime.insert("css".into(), "text/x-special".into());
    let special = StaticFiles::new(&other, Some(Arc::clone(&cache))).unwrap();
    let plain = StaticFiles::new(&fx.cfg, Some(Arc::clone(&cache))).unwrap();
    for _ in 0..2 {
        let a = send(&special, Method::GET, "/style.css", &[]).await;
        let b = send(&plain, Method::GET, "/style.css", &[]).await;
        assert_eq!(a.header("content-type"), Some("text/x-special"));
        assert_eq!(b.header("content-type"), Some("text/css; charset=utf-8"));
    }
    // A handler rebuilt with the same settings (a reload) reuses entries.
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (2, 2, 2));
    assert_eq!(body(&fx, "/style.css").await, "css");
    assert_eq!(cache.stats().hits, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_under_eviction_stay_correct() {
    let fx = Arc::new(cached(|c| {
        c.max_bytes = 3000;
        c.max_entry_bytes = 1000;
        c.revalidate = Duration::from_millis(5);
    }));
    let files: Vec<(String, String)> = (0..8)
        .map(|i| (format!("/f{i}.txt"), format!("{i}").repeat(400 + i * 50)))
        .collect();
    for (p, data) in &files {
        fx.write(&p[1..], data);
    }
    let mut tasks = Vec::new();
    for t in 0..8 {
        let fx = Arc::clone(&fx);
        let files = files.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..60 {
                let (path, data) = &files[(t * 7 + n * 3) % files.len()];
                let r = fx.once(Method::GET, path, &[]).await;
                assert_eq!(r.text(), data);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let s = fx.stats();
    assert!(s.bytes <= 3000, "{s:?}");
    assert_eq!(s.hits + s.misses, 480);
    assert!(s.evictions > 0, "{s:?}");
}
