//! Turning a representation and a request into a reply: first the decision
//! (preconditions, then Range), then the response it renders to, in one place
//! for cached and uncached files alike.

use std::fs::File;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{
    HeaderMap, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG, LAST_MODIFIED, RANGE, VARY,
};
use http::{HeaderValue, Response, StatusCode};
use tern_handler::{
    error_response, shared_response, worth_sending_from_file, ResponseBody, SEND_FILE_MIN,
};

use crate::body::{read_at, FileBody, Segment, Stride, Wait};
use crate::conditional::{self, Precondition};
use crate::multipart::Multipart;
use crate::range::{self, ByteRange, RangeDecision};
use crate::representation::Representation;

/// The request facts a reply depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ask<'a> {
    pub(crate) headers: &'a HeaderMap,
    /// HEAD: the same headers as GET, no body, and Range ignored (RFC 9110
    /// §14.2 defines range handling for GET only).
    pub(crate) head: bool,
    pub(crate) max_ranges: usize,
}

/// What to answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// 304.
    NotModified,
    /// 412.
    PreconditionFailed,
    /// 200 with the whole representation.
    Whole,
    /// 206 with one range.
    Partial(ByteRange),
    /// 206 `multipart/byteranges`.
    Multipart(Vec<ByteRange>),
    /// 416.
    RangeNotSatisfiable,
}

/// Decides the reply: preconditions in RFC 9110 §13.2.2 order, then Range
/// if the preconditions (If-Range) let it apply.
pub(crate) fn decide(ask: Ask<'_>, rep: &Representation) -> Reply {
    // Most requests carry none of the six fields: one look at each of
    // the request's names costs less than six lookups by name.
    if !ask.headers.keys().any(conditional::shapes_the_reply) {
        return Reply::Whole;
    }
    let honour_range = match conditional::evaluate(ask.headers, rep.validators()) {
        Precondition::Failed => return Reply::PreconditionFailed,
        Precondition::NotModified => return Reply::NotModified,
        Precondition::Proceed { honour_range } => honour_range,
    };
    let range = match ask.headers.get(RANGE) {
        Some(r) if honour_range && !ask.head => r,
        _ => return Reply::Whole,
    };
    match range::decide(range.as_bytes(), rep.len(), ask.max_ranges) {
        RangeDecision::Full => Reply::Whole,
        RangeDecision::Single(r) => Reply::Partial(r),
        RangeDecision::Multi(rs) => Reply::Multipart(rs),
        RangeDecision::Unsatisfiable => Reply::RangeNotSatisfiable,
    }
}

/// Where a representation's bytes come from.
#[derive(Debug)]
pub(crate) enum Source {
    /// Held in memory (a cache entry, or a small file read whole).
    Memory(Bytes),
    /// Held in memory, and in this open file the cache keeps (see
    /// `cache::HeldFile`): a connection that can may send it from the file.
    Cached(Bytes, Arc<File>),
    /// An open file, streamed in chunks.
    File(Arc<File>),
}

/// Renders `reply` for `rep`. With `head`, the headers are those of the GET
/// (Content-Length included) and the body is empty. A body streamed from
/// the file reads ahead by `stride`.
pub(crate) fn render(
    reply: Reply,
    rep: &Representation,
    source: Source,
    head: bool,
    stride: Stride,
) -> Response<ResponseBody> {
    match reply {
        Reply::NotModified => not_modified(rep),
        Reply::PreconditionFailed => error_response(StatusCode::PRECONDITION_FAILED),
        Reply::RangeNotSatisfiable => {
            let mut resp = error_response(StatusCode::RANGE_NOT_SATISFIABLE);
            resp.headers_mut().insert(
                CONTENT_RANGE,
                number_value(format!("bytes */{}", rep.len())),
            );
            resp
        }
        Reply::Whole => {
            let all = ByteRange {
                start: 0,
                end: rep.len().saturating_sub(1),
            };
            let body = if head || rep.len() == 0 {
                ResponseBody::empty()
            } else {
                slice(source, all, stride)
            };
            // The prebuilt headers already carry the whole length: a cache
            // hit formats nothing, and shares them rather than clone them.
            shared_response(StatusCode::OK, Arc::clone(rep.fields()), body)
        }
        Reply::Partial(r) => {
            let mut headers = rep.headers().clone();
            let value = format!("bytes {}-{}/{}", r.start, r.end, rep.len());
            headers.insert(CONTENT_RANGE, number_value(value));
            headers.insert(CONTENT_LENGTH, HeaderValue::from(r.len()));
            let body = if head {
                ResponseBody::empty()
            } else {
                slice(source, r, stride)
            };
            respond(StatusCode::PARTIAL_CONTENT, headers, body)
        }
        Reply::Multipart(ranges) => {
            let m = Multipart::new(&ranges, rep.len(), rep.content_type());
            let mut headers = rep.headers().clone();
            headers.insert(CONTENT_TYPE, m.content_type.clone());
            headers.insert(CONTENT_LENGTH, HeaderValue::from(m.len()));
            let body = match source {
                _ if head => ResponseBody::empty(),
                Source::Memory(data) | Source::Cached(data, _) => {
                    ResponseBody::full(m.assemble(&data))
                }
                Source::File(file) => ResponseBody::stream(FileBody::new(file, m.segments, stride)),
            };
            respond(StatusCode::PARTIAL_CONTENT, headers, body)
        }
    }
}

/// 304 carries the validators and Vary, so caches can refresh what they
/// hold (RFC 9110 §15.4.5), and nothing that describes a body.
fn not_modified(rep: &Representation) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::empty());
    *resp.status_mut() = StatusCode::NOT_MODIFIED;
    let h = resp.headers_mut();
    for name in [ETAG, LAST_MODIFIED, VARY] {
        if let Some(v) = rep.headers().get(&name) {
            h.insert(name, v.clone());
        }
    }
    resp
}

fn slice(source: Source, r: ByteRange, stride: Stride) -> ResponseBody {
    match source {
        // Cached bodies hold the whole representation, so the range fits.
        Source::Memory(data) => ResponseBody::full(data.slice(r.start as usize..=r.end as usize)),
        Source::Cached(data, file) => {
            ResponseBody::full(data.slice(r.start as usize..=r.end as usize))
                .with_file(file, r.start)
        }
        Source::File(file) => {
            let segment = Segment::File {
                offset: r.start,
                len: r.len(),
            };
            let body =
                ResponseBody::stream(FileBody::new(Arc::clone(&file), vec![segment], stride));
            if worth_sending_from_file(r.len()) {
                body.with_file(file, r.start)
            } else {
                body
            }
        }
    }
}

/// `source` for `reply`, a representation of `len` bytes: an open file's
/// body below [`SEND_FILE_MIN`] is read now, in the hop that found the
/// file (the response then costs one write); a larger one is left in the
/// file, for the connection to send from it or the body to stream. A body
/// in memory is as it is.
pub(crate) fn read_small(
    source: Source,
    reply: &Reply,
    head: bool,
    len: u64,
    wait: Wait,
) -> io::Result<Source> {
    let wants_body = !head
        && matches!(
            reply,
            Reply::Whole | Reply::Partial(_) | Reply::Multipart(_)
        );
    Ok(match source {
        Source::File(file) if wants_body && len < SEND_FILE_MIN => {
            Source::Memory(read_at(&file, 0, len, wait)?)
        }
        source => source,
    })
}

/// `headers` always hold an explicit Content-Length, so that HEAD (whose
/// body is empty) reports the GET's length.
fn respond(status: StatusCode, headers: HeaderMap, body: ResponseBody) -> Response<ResponseBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    resp
}

fn number_value(s: String) -> HeaderValue {
    HeaderValue::try_from(s).expect("digits and ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::Coding;
    use crate::representation::FileStamp;

    fn rep(len: u64) -> Representation {
        let stamp = FileStamp {
            dev: 1,
            ino: 2,
            len,
            mtime_sec: 1_700_000_000,
            mtime_nsec: 0,
        };
        Representation::new(
            stamp,
            Coding::Identity,
            HeaderValue::from_static("text/plain"),
            false,
        )
    }

    fn ask(pairs: &[(&str, &str)], head: bool) -> Reply {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        decide(
            Ask {
                headers: &h,
                head,
                max_ranges: 5,
            },
            &rep(10),
        )
    }

    #[test]
    fn range_needs_get_and_a_passing_if_range() {
        assert_eq!(
            ask(&[("range", "bytes=0-1")], false),
            Reply::Partial(ByteRange { start: 0, end: 1 })
        );
        assert_eq!(ask(&[("range", "bytes=0-1")], true), Reply::Whole);
        assert_eq!(
            ask(&[("range", "bytes=0-1"), ("if-range", "\"x\"")], false),
            Reply::Whole
        );
        assert_eq!(
            ask(&[("range", "bytes=20-")], false),
            Reply::RangeNotSatisfiable
        );
        assert_eq!(
            ask(&[("range", "bytes=20-"), ("if-none-match", "*")], false),
            Reply::NotModified
        );
    }

    #[test]
    fn not_modified_keeps_validators_only() {
        let r = render(
            Reply::NotModified,
            &rep(10),
            Source::Memory(Bytes::new()),
            false,
            Stride::Long,
        );
        assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
        assert!(r.headers().contains_key(ETAG) && r.headers().contains_key(LAST_MODIFIED));
        assert!(
            !r.headers().contains_key(CONTENT_TYPE) && !r.headers().contains_key(CONTENT_LENGTH)
        );
    }

    #[test]
    fn head_has_length_but_no_body() {
        use http_body::Body as _;
        let mut r = render(
            Reply::Whole,
            &rep(10),
            Source::Memory(Bytes::from_static(b"0123456789")),
            true,
            Stride::Long,
        );
        tern_handler::settle_fields(&mut r);
        assert_eq!(r.headers()[CONTENT_LENGTH], "10");
        assert_eq!(r.body().size_hint().exact(), Some(0));
    }
}
