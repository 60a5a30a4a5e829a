//! [`StaticFiles`], the handler: method check, the cache fast path inside
//! `call`, then the file system on the runtime thread as long as nothing
//! waits for the disk, and the blocking pool for what would (serve.rs).

use std::sync::Arc;
use std::time::Instant;

use http::header::HeaderMap;
use http::{Method, Response};
use tern_config::StaticConfig;
use tern_handler::path::DecodedPath;
use tern_handler::{Exchange, Handler, HandlerError, HandlerFuture, ResponseBody};

use crate::body::{Stride, Wait};
use crate::cache::FileCache;
use crate::docroot::{DocRoot, SiteCache};
use crate::encoding::{AcceptEncoding, Coding};
use crate::mime::MimeMap;
use crate::representation::FileStamp;
use crate::resolve::Root;
use crate::response::{self, Ask, Source};
use crate::serve::Request;
use crate::Error;

/// Serves files beneath a document root (see the crate docs for the rules).
/// Cheap to clone: the state is shared.
#[derive(Debug, Clone)]
pub struct StaticFiles {
    site: Arc<DocRoot>,
}

impl StaticFiles {
    /// Builds the handler for `cfg`. It caches through `cache` unless that
    /// is `None`: bodies if `cfg.cache` is true and the cache keeps them,
    /// otherwise open files only. Fails if the root cannot be opened as a
    /// directory or a media-type override is not a valid header value.
    pub fn new(cfg: &StaticConfig, cache: Option<Arc<FileCache>>) -> Result<StaticFiles, Error> {
        let root = Root::open(&cfg.root, cfg.follow_symlinks).map_err(|source| Error::Root {
            path: cfg.root.clone(),
            source,
        })?;
        let mime = MimeMap::new(&cfg.mime)
            .map_err(|(extension, value)| Error::MediaType { extension, value })?;
        let cache = cache.map(|cache| SiteCache {
            ns: cache.namespace(cfg),
            bodies: cfg.cache && cache.keeps_bodies(),
            cache,
        });
        Ok(StaticFiles {
            site: Arc::new(DocRoot {
                root,
                root_path: cfg.root.clone(),
                index: cfg.index.clone(),
                listing: cfg.directory_listing,
                follow_symlinks: cfg.follow_symlinks,
                dotfiles: cfg.dotfiles,
                precompressed: cfg.precompressed,
                mime,
                max_ranges: cfg.max_ranges,
                cache,
            }),
        })
    }
}

impl Handler for StaticFiles {
    /// A cache hit is answered here, before any future exists: no
    /// reference to the site is taken and nothing is awaited.
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        let Some(asked) = self.site.asked(&exchange.request) else {
            let refused = HandlerError::MethodNotAllowed { allow: "GET, HEAD" }.into_response();
            return HandlerFuture::ready(refused);
        };
        let headers = exchange.request.headers();
        if let Some(resp) = self.site.serve_cached(&exchange.path, headers, asked) {
            return HandlerFuture::ready(resp);
        }
        let site = Arc::clone(&self.site);
        HandlerFuture::new(site.answer(exchange, asked))
    }

    fn kind(&self) -> &'static str {
        "static"
    }
}

/// What a GET or HEAD asks of the files.
#[derive(Clone, Copy, Debug)]
struct Asked {
    head: bool,
    /// How far a file streamed to it reads ahead: short on an HTTP/2
    /// stream, which shares its connection with up to 127 others.
    stride: Stride,
}

impl DocRoot {
    /// What `req` asks for; `None` for a method other than GET and HEAD.
    fn asked<B>(&self, req: &http::Request<B>) -> Option<Asked> {
        let head = match *req.method() {
            Method::GET => false,
            Method::HEAD => true,
            _ => return None,
        };
        let stride = if req.version() == http::Version::HTTP_2 {
            Stride::Short
        } else {
            Stride::Long
        };
        Some(Asked { head, stride })
    }

    /// The codings the request accepts, where sidecars are served.
    fn accept(&self, headers: &HeaderMap) -> AcceptEncoding {
        if self.precompressed {
            AcceptEncoding::from_headers(headers)
        } else {
            AcceptEncoding::default()
        }
    }

    /// The answer when the cache had none (`call` asked it first): the
    /// file, on this thread unless that would wait for the disk, then on
    /// the blocking pool (see serve.rs).
    async fn answer(self: Arc<Self>, exchange: Exchange, asked: Asked) -> Response<ResponseBody> {
        let (parts, _) = exchange.request.into_parts();
        let id = exchange.id;
        let req = Request {
            id,
            path: exchange.path,
            query: parts.uri.query().map(str::to_owned),
            accept: self.accept(&parts.headers),
            headers: parts.headers,
            head: asked.head,
            stride: asked.stride,
        };
        if let Some(resp) = self.serve_now(&req) {
            return resp;
        }
        let site = Arc::clone(&self);
        match tokio::task::spawn_blocking(move || site.serve_blocking(&req)).await {
            Ok(resp) => resp,
            Err(e) => {
                tracing::warn!(%id, root = %self.root_path.display(), error = %e, "static: file task failed");
                HandlerError::Internal(e.to_string()).into_response()
            }
        }
    }

    /// The fast path: a fresh entry whose chosen representation is in
    /// memory, or open. No syscall for a body in memory, no formatting: a
    /// lookup, reference-count clones, and the header map clone. An open
    /// file's small body costs one read that must not wait for the disk
    /// (if it would, the slow path answers).
    fn serve_cached(
        &self,
        path: &DecodedPath,
        headers: &HeaderMap,
        asked: Asked,
    ) -> Option<Response<ResponseBody>> {
        let Asked { head, stride } = asked;
        let c = self.cache.as_ref()?;
        let hit = c
            .cache
            .get(c.ns, path.as_str())
            .filter(|e| c.cache.is_fresh(e.checked, Instant::now()))
            .and_then(|e| {
                // Only a file with a sidecar looks at `Accept-Encoding`:
                // without one the identity file is the answer whatever it
                // says (`AcceptEncoding::choose`).
                let coding = if e.sidecars.any_sidecar() {
                    self.accept(headers).choose(e.sidecars)
                } else {
                    Coding::Identity
                };
                let v = e.variant(coding)?;
                Some((Arc::clone(&v.rep), v.source()?))
            });
        let ask = Ask {
            headers,
            head,
            max_ranges: self.max_ranges,
        };
        let answer = hit.and_then(|(rep, source)| {
            // Bytes that come from the file again: one changed in place
            // since the check is no longer what the entry's headers
            // describe (an `fstat`, no path walk).
            if let Source::File(file) = &source {
                if FileStamp::of(&file.metadata().ok()?) != rep.stamp() {
                    return None;
                }
            }
            let reply = response::decide(ask, &rep);
            let source = response::read_small(source, &reply, head, rep.len(), Wait::Never).ok()?;
            Some(response::render(reply, &rep, source, head, stride))
        });
        match answer {
            Some(_) => c.cache.count_hit(),
            None => c.cache.count_miss(),
        }
        answer
    }
}
