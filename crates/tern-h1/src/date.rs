//! The `Date` field value, formatted once a second.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
const IMF_FIXDATE_LEN: usize = 29;

/// The current IMF-fixdate (RFC 9110 §5.6.7), formatted again only when
/// the second changes. One per worker thread; the clock is the caller's.
#[derive(Debug, Clone)]
pub struct DateCache {
    second: Option<u64>,
    text: [u8; IMF_FIXDATE_LEN],
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache::new()
    }
}

impl DateCache {
    /// An empty cache: the first call formats.
    pub fn new() -> Self {
        DateCache {
            second: None,
            text: [b' '; IMF_FIXDATE_LEN],
        }
    }

    /// The date at `now`.
    pub fn at(&mut self, now: SystemTime) -> &[u8] {
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.at_second(second)
    }

    /// The date `second` seconds after the Unix epoch: for a caller whose
    /// clock gives seconds (a coarse clock costs less to read than
    /// `SystemTime::now`, and a `Date` names only the second).
    pub fn at_second(&mut self, second: u64) -> &[u8] {
        if self.second != Some(second) {
            let text = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(second));
            // Always 29 bytes for years 1970-9999; anything else keeps
            // the previous value.
            if let Ok(text) = <[u8; IMF_FIXDATE_LEN]>::try_from(text.as_bytes()) {
                self.text = text;
                self.second = Some(second);
            }
        }
        &self.text
    }

    /// The date now.
    pub fn now(&mut self) -> &[u8] {
        self.at(SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_caches() {
        let mut c = DateCache::new();
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(c.at(t), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            c.at(t + Duration::from_millis(999)),
            b"Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            c.at(t + Duration::from_secs(1)),
            b"Sun, 06 Nov 1994 08:49:38 GMT"
        );
        assert_eq!(c.now().len(), 29);
        assert_eq!(c.at_second(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
