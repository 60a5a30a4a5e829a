//! Response fields a handler builds once and shares between every response
//! that carries them: a cached file's `Content-Type`, `Content-Length`,
//! `ETag`, `Last-Modified`, `Accept-Ranges`.
//!
//! Such a response leaves them out of its `HeaderMap` and carries them on
//! its body ([`shared_response`]), both as a map and as the HTTP/1 lines
//! they encode to. tern's HTTP/1 loop writes the lines as they are; every
//! other reader first puts them in the map ([`settle_fields`]): the
//! server does that for HTTP/2 and hyper's connections, and before any
//! rule sets a field. A cached file's answer then costs no map clone, no
//! map drop and no field-by-field encoding, and one reference count where
//! each shared value took one (docs/PERFORMANCE.md, session 37).

use std::sync::Arc;

use http::header::{HeaderMap, CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use http::{Response, StatusCode};

use crate::ResponseBody;

/// Fields shared by many responses, as a map and as HTTP/1 lines.
#[derive(Debug)]
pub struct SharedFields {
    map: HeaderMap,
    /// `name: value\r\n` for each field of `map`, in its order.
    lines: Box<[u8]>,
    /// The `Content-Length` among them, when there is one.
    length: Option<u64>,
    /// No field that frames the message or that the connection writes
    /// (`Connection`, `Transfer-Encoding`, `Date`): the lines may go out
    /// as they are.
    plain: bool,
}

impl SharedFields {
    /// The fields of `map`, encoded once.
    /// The lines are the HTTP/1 encoder's own, and the length is read as
    /// it reads a handler's (`tern_h1::encode_field`, `tern_h1::digits`).
    pub fn new(map: HeaderMap) -> Arc<SharedFields> {
        let mut lines = Vec::new();
        for (name, value) in &map {
            tern_h1::encode_field(&mut lines, name.as_str().as_bytes(), value.as_bytes());
        }
        let length = map
            .get(CONTENT_LENGTH)
            .and_then(|v| tern_h1::digits(v.as_bytes()));
        let plain = (map.get_all(CONTENT_LENGTH).iter().count() <= 1)
            && (map.contains_key(CONTENT_LENGTH) == length.is_some())
            && [CONNECTION, TRANSFER_ENCODING, DATE]
                .iter()
                .all(|n| !map.contains_key(n));
        Arc::new(SharedFields {
            map,
            lines: lines.into_boxed_slice(),
            length,
            plain,
        })
    }

    /// The fields.
    pub fn map(&self) -> &HeaderMap {
        &self.map
    }

    /// The lines to write for a response whose body is `body` bytes long
    /// (`None`: not known), when the lines may go out as they are: none
    /// frames the message, and a `Content-Length` among them is the
    /// body's. The caller writes its own length when `self` holds none.
    pub fn lines_for(&self, body: Option<u64>) -> Option<&[u8]> {
        let fits = match (self.length, body) {
            (None, _) => true,
            (Some(declared), Some(n)) => declared == n,
            (Some(_), None) => false,
        };
        (self.plain && fits).then_some(&*self.lines)
    }

    /// Whether the lines hold a `Content-Length`.
    pub fn has_length(&self) -> bool {
        self.length.is_some()
    }
}

/// A response of `status` with `fields` and `body`: its own map is empty
/// until [`settle_fields`] puts the fields there.
pub fn shared_response(
    status: StatusCode,
    fields: Arc<SharedFields>,
    body: ResponseBody,
) -> Response<ResponseBody> {
    let mut resp = Response::new(body.with_fields(fields));
    *resp.status_mut() = status;
    resp
}

/// Puts the shared fields a response carries (if any) in its map, before
/// the fields it has there itself, which win over a shared one of the same
/// name. Every reader of a response's fields but tern's HTTP/1 writer
/// calls this first.
pub fn settle_fields(resp: &mut Response<ResponseBody>) {
    if let Some(fields) = resp.body_mut().take_fields() {
        settle_into(resp.headers_mut(), &fields);
    }
}

/// [`settle_fields`] on the parts of a response.
pub fn settle_into(headers: &mut HeaderMap, fields: &SharedFields) {
    let own = std::mem::replace(headers, fields.map.clone());
    let mut last = None;
    for (name, value) in own {
        // `into_iter` names a field once, before all of its values.
        match name {
            Some(name) => {
                headers.insert(&name, value);
                last = Some(name);
            }
            None => {
                if let Some(name) = &last {
                    headers.append(name, value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{CONTENT_TYPE, ETAG, SET_COOKIE};
    use http::HeaderValue;

    fn fields() -> Arc<SharedFields> {
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
        map.insert(CONTENT_LENGTH, HeaderValue::from(12u64));
        map.insert(ETAG, HeaderValue::from_static("\"c-1\""));
        SharedFields::new(map)
    }

    #[test]
    fn the_lines_are_the_map_in_its_order() {
        let f = fields();
        assert_eq!(
            f.lines_for(Some(12)),
            Some(&b"content-type: text/html\r\ncontent-length: 12\r\netag: \"c-1\"\r\n"[..])
        );
        assert!(f.has_length());
    }

    #[test]
    fn lines_go_out_only_with_the_length_they_declare() {
        let f = fields();
        assert!(f.lines_for(Some(11)).is_none());
        assert!(f.lines_for(None).is_none());
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
        let no_length = SharedFields::new(map);
        assert!(no_length.lines_for(None).is_some() && !no_length.has_length());
    }

    #[test]
    fn fields_that_frame_or_that_the_connection_writes_are_never_lines() {
        for (name, value) in [
            (CONNECTION, "close"),
            (TRANSFER_ENCODING, "chunked"),
            (DATE, "Mon, 07 Dec 2026 04:00:00 GMT"),
            (CONTENT_LENGTH, "twelve"),
        ] {
            let mut map = HeaderMap::new();
            map.insert(name.clone(), HeaderValue::from_static(value));
            assert!(SharedFields::new(map).lines_for(None).is_none(), "{name}");
        }
        let mut two = HeaderMap::new();
        two.append(CONTENT_LENGTH, HeaderValue::from(1u64));
        two.append(CONTENT_LENGTH, HeaderValue::from(1u64));
        assert!(SharedFields::new(two).lines_for(Some(1)).is_none());
    }

    #[test]
    fn settling_puts_the_shared_fields_first_and_the_own_ones_win() {
        let mut resp = shared_response(StatusCode::OK, fields(), ResponseBody::empty());
        assert!(resp.headers().is_empty());
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        resp.headers_mut()
            .append(SET_COOKIE, HeaderValue::from_static("a=1"));
        resp.headers_mut()
            .append(SET_COOKIE, HeaderValue::from_static("b=2"));
        settle_fields(&mut resp);
        let h = resp.headers();
        assert_eq!(h[CONTENT_TYPE], "text/plain");
        assert_eq!(h.get_all(CONTENT_TYPE).iter().count(), 1);
        assert_eq!(h[CONTENT_LENGTH], "12");
        assert_eq!(h[ETAG], "\"c-1\"");
        let cookies: Vec<_> = h.get_all(SET_COOKIE).iter().collect();
        assert_eq!(cookies, ["a=1", "b=2"]);
        // Settled once: the body no longer carries them.
        assert!(resp.body_mut().take_fields().is_none());
    }
}
