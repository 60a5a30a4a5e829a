//! Integration tests for tern-static: the handler called directly, as the
//! server calls it, over real temporary directories. Most tests run in both
//! modes: uncached (every answer from disk) and cached (each request is sent
//! twice, and the second answer, from memory, must equal the first).

mod cache;
mod conditional;
mod containment;
mod directory;
mod encoding;
mod range;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::BodyExt;
use tern_config::{CacheConfig, StaticConfig};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, PeerAddr, RequestBody, RequestId, RouteMatch, RoutePattern,
};
use tern_static::{CacheStats, FileCache, StaticFiles};

/// The Last-Modified every fixture file gets (see [`Fixture::write`]).
pub(crate) const MTIME: u64 = 1_700_000_000;
pub(crate) const MTIME_STR: &str = "Tue, 14 Nov 2023 22:13:20 GMT";
pub(crate) const BEFORE: &str = "Tue, 14 Nov 2023 22:13:19 GMT";
pub(crate) const AFTER: &str = "Tue, 14 Nov 2023 22:13:21 GMT";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No cache at all.
    Uncached,
    /// The cache, keeping bodies.
    Cached,
    /// The cache with `enabled = false`: open files, no bodies.
    OpenFiles,
}

pub(crate) const MODES: [Mode; 3] = [Mode::Uncached, Mode::Cached, Mode::OpenFiles];

/// A response, body collected.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// The body came with the file region that holds it (a large cached
    /// body: see `ResponseBody::with_file`), and was read from there.
    pub(crate) from_file: bool,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    pub(crate) fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

/// A temporary document root and a handler over it.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) cfg: StaticConfig,
    pub(crate) cache: Option<Arc<FileCache>>,
    pub(crate) handler: StaticFiles,
    pub(crate) mode: Mode,
}

/// The defaults (`index.html`, sidecars served, 100 ranges, cached).
pub(crate) fn static_config(root: &Path) -> StaticConfig {
    StaticConfig::with_root(root.to_owned())
}

pub(crate) fn cache_config() -> CacheConfig {
    CacheConfig {
        enabled: true,
        max_bytes: 1 << 20,
        max_entry_bytes: 64 << 10,
        revalidate: Duration::from_secs(60),
    }
}

impl Fixture {
    pub(crate) fn new(mode: Mode) -> Fixture {
        Fixture::with(mode, |_| {}, cache_config())
    }

    /// A fixture whose site settings `tune` adjusts and whose cache (in
    /// cached mode) has the settings `cache`.
    pub(crate) fn with(
        mode: Mode,
        tune: impl FnOnce(&mut StaticConfig),
        cache: CacheConfig,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let mut cfg = static_config(&root);
        tune(&mut cfg);
        let cache = match mode {
            Mode::Uncached => None,
            Mode::Cached => Some(FileCache::new(&cache)),
            Mode::OpenFiles => Some(FileCache::new(&CacheConfig {
                enabled: false,
                ..cache
            })),
        };
        let handler = StaticFiles::new(&cfg, cache.clone()).unwrap();
        Fixture {
            dir,
            cfg,
            cache,
            handler,
            mode,
        }
    }

    /// Rebuilds the handler after `cfg` was changed (same cache).
    pub(crate) fn rebuild(&mut self) {
        self.handler = StaticFiles::new(&self.cfg, self.cache.clone()).unwrap();
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.cfg.root.clone()
    }

    /// Writes a file beneath the root (parents created) with the fixed
    /// modification time [`MTIME`].
    pub(crate) fn write(&self, rel: &str, data: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, data).unwrap();
        set_mtime(&path, MTIME);
        path
    }

    pub(crate) fn stats(&self) -> CacheStats {
        self.cache.as_ref().map(|c| c.stats()).unwrap_or_default()
    }

    pub(crate) async fn get(&self, target: &str, headers: &[(&str, &str)]) -> Reply {
        self.request(Method::GET, target, headers).await
    }

    pub(crate) async fn head(&self, target: &str, headers: &[(&str, &str)]) -> Reply {
        self.request(Method::HEAD, target, headers).await
    }

    /// Sends the request; in cached mode sends it twice and checks that the
    /// second answer (normally from memory) matches the first.
    pub(crate) async fn request(
        &self,
        method: Method,
        target: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let first = send(&self.handler, method.clone(), target, headers).await;
        if self.mode == Mode::Uncached {
            return first;
        }
        let second = send(&self.handler, method, target, headers).await;
        assert_same(&first, &second, target);
        second
    }

    /// One request, never repeated.
    pub(crate) async fn once(
        &self,
        method: Method,
        target: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        send(&self.handler, method, target, headers).await
    }
}

pub(crate) fn assert_same(a: &Reply, b: &Reply, target: &str) {
    assert_eq!(
        a.status, b.status,
        "{target}: status differs between miss and hit"
    );
    let multipart = a
        .header("content-type")
        .is_some_and(|t| t.starts_with("multipart/"));
    for (name, value) in &a.headers {
        if multipart && name == CONTENT_TYPE {
            continue;
        }
        assert_eq!(
            b.headers.get(name),
            Some(value),
            "{target}: header {name} differs"
        );
    }
    assert_eq!(
        a.headers.len(),
        b.headers.len(),
        "{target}: header count differs"
    );
    if !multipart {
        assert_eq!(a.body, b.body, "{target}: body differs");
    }
}

/// Calls the handler as the server does and collects the body (bounded in
/// time, so a hang fails the test).
pub(crate) async fn send(
    handler: &StaticFiles,
    method: Method,
    target: &str,
    headers: &[(&str, &str)],
) -> Reply {
    let uri: http::Uri = target.parse().unwrap();
    let path = DecodedPath::parse(uri.path()).unwrap();
    let mut builder = http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let exchange = Exchange {
        request: builder.body(RequestBody::empty()).unwrap(),
        path,
        conn: Arc::new(ConnInfo {
            peer: PeerAddr::Tcp("127.0.0.1:40000".parse().unwrap()),
            local: PeerAddr::Tcp("127.0.0.1:8080".parse().unwrap()),
            secure: false,
            tls: None,
        }),
        route: RouteMatch {
            site: Arc::from("test"),
            pattern: RoutePattern::root(),
        },
        id: RequestId(1),
    };
    let work = async {
        let mut resp = handler.call(exchange).await;
        // As the server does before any reader but its HTTP/1 writer.
        tern_handler::settle_fields(&mut resp);
        let (parts, mut body) = resp.into_parts();
        // A body a file holds is read from the file, as a connection that
        // sends files sends it: the region must hold the body's bytes.
        let region = body.take_file();
        let body = match &region {
            Some(r) => {
                use std::os::unix::fs::FileExt as _;
                let mut bytes = vec![0; r.len as usize];
                r.file.read_exact_at(&mut bytes, r.offset).unwrap();
                Bytes::from(bytes)
            }
            None => body.collect().await.expect("body streams").to_bytes(),
        };
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
            from_file: region.is_some(),
        }
    };
    tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .expect("the handler answers within 20 s")
}

pub(crate) fn set_mtime(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

pub(crate) fn touch_now(path: &Path) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now()).unwrap();
}
