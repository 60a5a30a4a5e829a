//! One servable representation of a file (the file itself or a sidecar):
//! the stamp that identifies its version, its validators, and the response
//! headers built once, and encoded once, so that serving it again takes a
//! reference to them (`tern_handler::SharedFields`).

use std::fmt::Write as _;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use http::header::{
    HeaderMap, ACCEPT_RANGES, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, ETAG, LAST_MODIFIED,
    VARY,
};
use http::HeaderValue;
use tern_handler::SharedFields;

use crate::conditional::Validators;
use crate::encoding::Coding;

/// What identifies one version of one file; revalidation compares stamps.
/// Inode and device catch a file replaced by rename even when size and
/// mtime happen to match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) len: u64,
    pub(crate) mtime_sec: i64,
    pub(crate) mtime_nsec: i64,
}

impl FileStamp {
    pub(crate) fn of(meta: &Metadata) -> FileStamp {
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_sec: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }

    /// Modification time in nanoseconds since the epoch.
    fn mtime_ns(self) -> i128 {
        i128::from(self.mtime_sec) * 1_000_000_000 + i128::from(self.mtime_nsec)
    }

    /// Modification time in whole seconds (HTTP-date resolution), clamped
    /// at the epoch.
    fn mtime_secs(self) -> u64 {
        u64::try_from(self.mtime_sec).unwrap_or(0)
    }
}

/// A representation ready to serve. Built once per file version; cached
/// ones are shared behind an `Arc` by every request that hits them.
#[derive(Debug)]
pub(crate) struct Representation {
    stamp: FileStamp,
    etag: HeaderValue,
    last_modified: u64,
    content_type: HeaderValue,
    vary: bool,
    /// Content-Type, Content-Length, ETag, Last-Modified, Accept-Ranges, and
    /// when they apply Content-Encoding and Vary.
    fields: Arc<SharedFields>,
}

impl Representation {
    /// Builds the representation of a file with `stamp`, sent with
    /// `coding`, typed `content_type` (the original file's type, also for a
    /// sidecar), and varying on Accept-Encoding when `vary` (the file has
    /// sidecars).
    pub(crate) fn new(
        stamp: FileStamp,
        coding: Coding,
        content_type: HeaderValue,
        vary: bool,
    ) -> Representation {
        let etag = etag(stamp, coding);
        let last_modified = stamp.mtime_secs();
        let date = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(last_modified));
        let mut headers = HeaderMap::with_capacity(7);
        headers.insert(CONTENT_TYPE, content_type.clone());
        headers.insert(CONTENT_LENGTH, HeaderValue::from(stamp.len));
        headers.insert(ETAG, etag.clone());
        headers.insert(LAST_MODIFIED, header_value(date));
        headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        if let Some(token) = coding.token() {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static(token));
        }
        if vary {
            headers.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
        }
        Representation {
            stamp,
            etag,
            last_modified,
            content_type,
            vary,
            fields: SharedFields::new(headers),
        }
    }

    pub(crate) fn stamp(&self) -> FileStamp {
        self.stamp
    }

    pub(crate) fn len(&self) -> u64 {
        self.stamp.len
    }

    pub(crate) fn vary(&self) -> bool {
        self.vary
    }

    pub(crate) fn content_type(&self) -> &HeaderValue {
        &self.content_type
    }

    pub(crate) fn validators(&self) -> Validators<'_> {
        Validators {
            etag: self.etag.as_bytes(),
            last_modified: self.last_modified,
        }
    }

    /// The headers of a 200 (also the base of 206 and 304).
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.fields.map()
    }

    /// The same headers, as a 200 shares them.
    pub(crate) fn fields(&self) -> &Arc<SharedFields> {
        &self.fields
    }
}

/// A strong entity tag: length and mtime in nanoseconds, in hex, with the
/// coding appended so that each variant has its own tag (a cache must never
/// answer a gzip request with brotli bytes by tag). Nothing else of the
/// file system goes in (no inode, no device, as nginx): identical files on
/// replicas (an rsync'd root behind a load balancer) have identical tags,
/// and the tag tells a client nothing about the server's disks.
fn etag(stamp: FileStamp, coding: Coding) -> HeaderValue {
    let mut s = String::with_capacity(48);
    // The i128 -> u128 cast keeps pre-epoch times distinct; they need only be unique.
    #[allow(
        clippy::cast_sign_loss,
        reason = "the tag needs uniqueness, not magnitude"
    )]
    let mtime = stamp.mtime_ns() as u128;
    let _ = write!(s, "\"{:x}-{:x}", stamp.len, mtime);
    if let Some(token) = coding.token() {
        s.push('-');
        s.push_str(token);
    }
    s.push('"');
    header_value(s)
}

/// Our own formatting produces only visible ASCII.
fn header_value(s: String) -> HeaderValue {
    HeaderValue::try_from(s).expect("generated header values are visible ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> FileStamp {
        FileStamp {
            dev: 1,
            ino: 0xab,
            len: 0x10,
            mtime_sec: 1_700_000_000,
            mtime_nsec: 5,
        }
    }

    #[test]
    fn etags_are_strong_and_distinct_per_coding() {
        let plain = Representation::new(
            stamp(),
            Coding::Identity,
            HeaderValue::from_static("text/css"),
            true,
        );
        let br = Representation::new(
            stamp(),
            Coding::Brotli,
            HeaderValue::from_static("text/css"),
            true,
        );
        assert_eq!(plain.headers()[ETAG], "\"10-17979cfe362a0005\"");
        assert_eq!(br.headers()[ETAG], "\"10-17979cfe362a0005-br\"");
        assert_eq!(br.headers()[CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[VARY], "Accept-Encoding");
        assert!(!plain.headers().contains_key(CONTENT_ENCODING));
    }

    #[test]
    fn the_etag_holds_no_inode_or_device() {
        let here = Representation::new(
            stamp(),
            Coding::Identity,
            HeaderValue::from_static("text/css"),
            false,
        );
        let replica = Representation::new(
            FileStamp {
                dev: 9,
                ino: 0x77,
                ..stamp()
            },
            Coding::Identity,
            HeaderValue::from_static("text/css"),
            false,
        );
        assert_eq!(here.headers()[ETAG], replica.headers()[ETAG]);
    }

    #[test]
    fn last_modified_is_an_http_date() {
        let r = Representation::new(
            stamp(),
            Coding::Identity,
            HeaderValue::from_static("text/css"),
            false,
        );
        assert_eq!(r.headers()[LAST_MODIFIED], "Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(r.validators().last_modified, 1_700_000_000);
        assert!(!r.headers().contains_key(VARY));
    }
}
