//! The slow path: map the request path to a file beneath the root
//! (directories, index files, listings, redirects), find its sidecars,
//! choose the representation, refresh the cache entry, and answer.
//!
//! It runs first on the worker thread ([`Wait::Never`]), as nginx and
//! lighttpd serve files: opens and stats below the root, and reads of what
//! the page cache holds (`RWF_NOWAIT`). A read that would wait for the disk,
//! or a directory listing, sends the request to tokio's blocking pool,
//! where it runs again from the start ([`Wait::Allowed`]).

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{HeaderMap, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use http::{HeaderValue, Response, StatusCode};
use percent_encoding::utf8_percent_encode;
use tern_handler::path::DecodedPath;
use tern_handler::{error_response, HandlerError, RequestId, ResponseBody};

use crate::body::{read_at, Stride, Wait};
use crate::cache::{Entry, HeldFile, Variant};
use crate::docroot::DocRoot;
use crate::encoding::{AcceptEncoding, Coding, CodingSet};
use crate::listing::{self, SEGMENT};
use crate::representation::{FileStamp, Representation};
use crate::resolve::{classify, Failure, Node, RelPath};
use crate::response::{self, Ask, Source};

/// The parts of a request the slow path needs, owned so they can move to
/// the blocking pool when the worker thread would have to wait.
#[derive(Debug)]
pub(crate) struct Request {
    /// Tags log lines.
    pub(crate) id: RequestId,
    pub(crate) path: DecodedPath,
    pub(crate) query: Option<String>,
    pub(crate) headers: HeaderMap,
    pub(crate) head: bool,
    /// How far a file streamed to the client reads ahead.
    pub(crate) stride: Stride,
    pub(crate) accept: AcceptEncoding,
}

impl Request {
    fn ask(&self, site: &DocRoot) -> Ask<'_> {
        Ask {
            headers: &self.headers,
            head: self.head,
            max_ranges: site.max_ranges,
        }
    }
}

/// Where a request path leads.
#[derive(Debug)]
enum Located {
    /// A regular file (for a directory path, its index file).
    File(RelPath, File, Metadata),
    /// A directory named without its trailing slash.
    Redirect,
    /// A directory without an index file, listed.
    Listing(OwnedFd),
    /// A directory without an index file, not listed.
    NoIndex,
}

/// An open file and its metadata, per coding.
type Found = [Option<(File, Metadata)>; 4];

impl DocRoot {
    /// Answers a request from the file system. Blocking.
    pub(crate) fn serve_blocking(&self, req: &Request) -> Response<ResponseBody> {
        self.serve(req, Wait::Allowed)
            .expect("a request allowed to wait is answered")
    }

    /// Answers a request from the file system without waiting for the
    /// disk: `None` when it would have to.
    pub(crate) fn serve_now(&self, req: &Request) -> Option<Response<ResponseBody>> {
        self.serve(req, Wait::Never)
    }

    fn serve(&self, req: &Request, wait: Wait) -> Option<Response<ResponseBody>> {
        let checked = Instant::now();
        let result = match RelPath::from_request(req.path.as_str(), self.dotfiles) {
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
            Some(rel) => self.locate(rel, req.path.has_trailing_slash()),
        };
        let response = match result {
            Ok(Located::File(rel, file, meta)) => {
                return match self.serve_file(req, checked, &rel, file, meta, wait) {
                    Ok(resp) => Some(resp),
                    Err(e) if wait == Wait::Never && e.kind() == io::ErrorKind::WouldBlock => None,
                    Err(e) => Some(self.fail(req, &e)),
                };
            }
            Err(e) => return Some(self.fail(req, &e)),
            Ok(Located::Redirect) => redirect(req),
            // Reading a directory may wait for the disk.
            Ok(Located::Listing(_)) if wait == Wait::Never => return None,
            Ok(Located::Listing(dir)) => self
                .listing(req, &dir)
                .unwrap_or_else(|e| self.fail(req, &e)),
            Ok(Located::NoIndex) => {
                HandlerError::Forbidden("directory without an index".into()).into_response()
            }
        };
        // The path no longer names a file: whatever was cached is out of date.
        self.forget(req);
        Some(response)
    }

    fn locate(&self, rel: RelPath, trailing_slash: bool) -> io::Result<Located> {
        match self.root.open_node(&rel)? {
            // `/file/` names a directory that does not exist.
            Node::File(..) if trailing_slash => Err(io::Error::from(io::ErrorKind::NotFound)),
            Node::File(file, meta) => Ok(Located::File(rel, file, meta)),
            Node::Dir(_) if !trailing_slash => Ok(Located::Redirect),
            Node::Dir(dir) => {
                for name in &self.index {
                    let candidate = rel.join(name);
                    match self.root.open_node(&candidate) {
                        Ok(Node::File(file, meta)) => {
                            return Ok(Located::File(candidate, file, meta))
                        }
                        Ok(Node::Dir(_)) => {}
                        Err(e) if classify(&e) == Failure::NotFound => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(if self.listing {
                    Located::Listing(dir)
                } else {
                    Located::NoIndex
                })
            }
        }
    }

    fn serve_file(
        &self,
        req: &Request,
        checked: Instant,
        rel: &RelPath,
        file: File,
        meta: Metadata,
        wait: Wait,
    ) -> io::Result<Response<ResponseBody>> {
        let content_type = self.mime.for_name(rel.as_str());
        let mut found: Found = Default::default();
        found[Coding::Identity.index()] = Some((file, meta));
        let mut sidecars = CodingSet::default();
        if self.precompressed {
            for c in Coding::SIDECARS {
                // A sidecar that cannot be opened is simply not offered.
                if let Ok(Node::File(f, m)) = self.root.open_node(&rel.with_suffix(c.suffix())) {
                    sidecars.insert(c);
                    found[c.index()] = Some((f, m));
                }
            }
        }
        let vary = sidecars.any_sidecar();
        let chosen = req.accept.choose(sidecars);
        let (file, meta) = found[chosen.index()]
            .take()
            .expect("chosen among the files found");
        let stamp = FileStamp::of(&meta);

        let Some(cache) = self.cache.as_ref() else {
            let rep = Representation::new(stamp, chosen, content_type, vary);
            let reply = response::decide(req.ask(self), &rep);
            let source = Source::File(Arc::new(file));
            let source = response::read_small(source, &reply, req.head, stamp.len, wait)?;
            return Ok(response::render(reply, &rep, source, req.head, req.stride));
        };

        // Rebuild the entry, keeping representations (and bodies) whose
        // file has not changed since the last check.
        let prev = cache.cache.get(cache.ns, req.path.as_str());
        let mut variants: [Option<Variant>; 4] = Default::default();
        for coding in Coding::ALL {
            let st = match &found[coding.index()] {
                _ if coding == chosen => stamp,
                Some((_, m)) => FileStamp::of(m),
                None => continue,
            };
            let kept = prev
                .as_ref()
                .and_then(|e| e.variant(coding))
                .filter(|v| v.rep.stamp() == st && v.rep.vary() == vary);
            variants[coding.index()] = Some(match kept {
                Some(v) => v.clone(),
                None => Variant {
                    rep: Arc::new(Representation::new(st, coding, content_type.clone(), vary)),
                    body: None,
                    file: None,
                },
            });
        }
        let v = variants[chosen.index()]
            .as_mut()
            .expect("the chosen variant is set");
        let file = Arc::new(file);
        if cache.bodies {
            if v.body.is_none() && stamp.len <= cache.cache.max_entry_bytes() {
                v.body = Some(read_at(&file, 0, stamp.len, wait)?);
            }
            // The file just read, or one with the same stamp as the body kept.
            if v.body.is_some() && v.file.is_none() {
                v.file = HeldFile::beside_body(&file, stamp.len);
            }
        } else if stamp.len == 0 {
            v.body = Some(Bytes::new());
        } else if v.file.is_none() {
            v.file = Some(HeldFile::instead_of_body(&file));
        }
        let rep = Arc::clone(&v.rep);
        let source = v.source().unwrap_or(Source::File(file));
        cache.cache.store(
            cache.ns,
            req.path.as_str(),
            Entry::new(checked, sidecars, variants),
        );
        let reply = response::decide(req.ask(self), &rep);
        let source = response::read_small(source, &reply, req.head, stamp.len, wait)?;
        Ok(response::render(reply, &rep, source, req.head, req.stride))
    }

    fn listing(&self, req: &Request, dir: &OwnedFd) -> io::Result<Response<ResponseBody>> {
        let policy = listing::Policy {
            dotfiles: self.dotfiles,
            symlinks: self.follow_symlinks,
        };
        let html = listing::render(req.path.as_str(), listing::read(dir, policy)?);
        let len = html.len();
        let body = if req.head {
            ResponseBody::empty()
        } else {
            ResponseBody::from(html)
        };
        let mut resp = Response::new(body);
        resp.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        resp.headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(len));
        Ok(resp)
    }

    fn forget(&self, req: &Request) {
        if let Some(c) = &self.cache {
            c.cache.remove(c.ns, req.path.as_str());
        }
    }

    /// The response for an I/O failure; unexpected ones are logged with the
    /// path and the cause (the client sees only the status).
    fn fail(&self, req: &Request, e: &io::Error) -> Response<ResponseBody> {
        match classify(e) {
            Failure::NotFound => {
                self.forget(req);
                HandlerError::NotFound.into_response()
            }
            Failure::Forbidden => HandlerError::Forbidden(e.to_string()).into_response(),
            Failure::Internal => {
                tracing::warn!(
                    id = %req.id,
                    root = %self.root_path.display(),
                    path = %req.path,
                    error = %e,
                    "static: I/O error"
                );
                HandlerError::Internal(e.to_string()).into_response()
            }
        }
    }
}

/// 301 to the path with a slash added, the query kept, each segment
/// percent-encoded again.
fn redirect(req: &Request) -> Response<ResponseBody> {
    let mut location = String::with_capacity(req.path.as_str().len() + 16);
    for segment in req.path.segments() {
        location.push('/');
        location.extend(utf8_percent_encode(segment, SEGMENT));
    }
    location.push('/');
    if let Some(q) = &req.query {
        location.push('?');
        location.push_str(q);
    }
    let mut resp = error_response(StatusCode::MOVED_PERMANENTLY);
    match HeaderValue::try_from(location) {
        Ok(v) => {
            resp.headers_mut().insert(LOCATION, v);
            resp
        }
        Err(_) => HandlerError::BadRequest("query unusable in a Location".into()).into_response(),
    }
}
