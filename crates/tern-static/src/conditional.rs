//! Conditional requests (RFC 9110 §13): entity-tag comparison and the
//! precondition order of §13.2.2. Pure: it reads request headers and the
//! representation's validators, and returns a decision.

use std::time::UNIX_EPOCH;

use http::header::{
    HeaderMap, HeaderName, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE,
    IF_UNMODIFIED_SINCE, RANGE,
};
use http::HeaderValue;

/// The validators of the selected representation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Validators<'a> {
    /// The strong entity tag as sent, quotes included (`"1f-3a-9c"`).
    pub(crate) etag: &'a [u8],
    /// Last-Modified in whole seconds since the epoch (HTTP dates have no
    /// finer resolution, so comparisons happen at this precision).
    pub(crate) last_modified: u64,
}

/// What the preconditions say to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Precondition {
    /// Send the representation. `honour_range` is false when an `If-Range`
    /// failed, which turns a range request into a full 200.
    Proceed { honour_range: bool },
    /// 304: the client's copy is current.
    NotModified,
    /// 412: an `If-Match` or `If-Unmodified-Since` failed.
    Failed,
}

/// Whether a request field is one that can make the reply other than the
/// whole representation: a precondition, or `Range`.
pub(crate) fn shapes_the_reply(name: &HeaderName) -> bool {
    name == IF_MATCH
        || name == IF_NONE_MATCH
        || name == IF_MODIFIED_SINCE
        || name == IF_UNMODIFIED_SINCE
        || name == IF_RANGE
        || name == RANGE
}

/// Evaluates the preconditions of a GET or HEAD in the order of RFC 9110
/// §13.2.2: If-Match, else If-Unmodified-Since; If-None-Match, else
/// If-Modified-Since; then If-Range.
pub(crate) fn evaluate(headers: &HeaderMap, v: Validators<'_>) -> Precondition {
    if headers.contains_key(IF_MATCH) {
        if !matches_any(headers, IF_MATCH, v.etag, Compare::Strong) {
            return Precondition::Failed;
        }
    } else if let Some(date) = date(headers.get(IF_UNMODIFIED_SINCE)) {
        if v.last_modified > date {
            return Precondition::Failed;
        }
    }
    if headers.contains_key(IF_NONE_MATCH) {
        if matches_any(headers, IF_NONE_MATCH, v.etag, Compare::Weak) {
            return Precondition::NotModified;
        }
    } else if let Some(date) = date(headers.get(IF_MODIFIED_SINCE)) {
        if v.last_modified <= date {
            return Precondition::NotModified;
        }
    }
    let honour_range = match headers.get(IF_RANGE) {
        None => true,
        Some(value) => if_range_holds(value, v),
    };
    Precondition::Proceed { honour_range }
}

/// §13.1.5: an entity tag must match strongly; a date must equal
/// Last-Modified exactly. Anything else (a weak tag, a bad date) fails, so
/// the whole representation is sent, which is always safe.
fn if_range_holds(value: &HeaderValue, v: Validators<'_>) -> bool {
    let bytes = value.as_bytes();
    if bytes.starts_with(b"\"") || bytes.starts_with(b"W/") {
        let mut tags = EtagList { rest: bytes };
        return match (tags.next(), tags.next()) {
            (Some(Ok(tag)), None) => strong_eq(tag, v.etag),
            _ => false,
        };
    }
    date(Some(value)) == Some(v.last_modified)
}

/// An HTTP-date in seconds since the epoch; `None` when absent or invalid,
/// which RFC 9110 §13.1.3-4 says to treat as if the field were absent.
fn date(value: Option<&HeaderValue>) -> Option<u64> {
    let s = value?.to_str().ok()?;
    let t = httpdate::parse_http_date(s.trim()).ok()?;
    Some(t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    Strong,
    Weak,
}

/// Whether any member of the field lists (all lines of `name`) matches
/// `current`; `*` matches any existing representation. A malformed member
/// ends the list: it cannot match, and the members before it still count.
fn matches_any(headers: &HeaderMap, name: HeaderName, current: &[u8], how: Compare) -> bool {
    for value in headers.get_all(name) {
        let bytes = value.as_bytes();
        if trim(bytes) == b"*" {
            return true;
        }
        for tag in (EtagList { rest: bytes }) {
            let Ok(tag) = tag else { break };
            let hit = match how {
                Compare::Strong => strong_eq(tag, current),
                Compare::Weak => opaque(tag) == opaque(current),
            };
            if hit {
                return true;
            }
        }
    }
    false
}

/// Strong comparison (§8.8.3.2): neither tag weak, opaque tags equal.
fn strong_eq(tag: &[u8], current: &[u8]) -> bool {
    !tag.starts_with(b"W/") && !current.starts_with(b"W/") && tag == current
}

/// The opaque part of an entity tag (the quoted string, `W/` removed).
fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t'))
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t'))
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// Iterates the entity tags of `#entity-tag`. Tags may contain commas
/// (`etagc` allows them), so the list is scanned quote to quote rather than
/// split on commas.
struct EtagList<'a> {
    rest: &'a [u8],
}

#[derive(Debug)]
struct Malformed;

impl<'a> Iterator for EtagList<'a> {
    type Item = Result<&'a [u8], Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self
            .rest
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t' | b','))?;
        let s = &self.rest[start..];
        let weak = if s.starts_with(b"W/") { 2 } else { 0 };
        let body = &s[weak..];
        let close = if body.first() == Some(&b'"') {
            body[1..].iter().position(|&c| c == b'"')
        } else {
            None
        };
        let Some(close) = close else {
            self.rest = b"";
            return Some(Err(Malformed));
        };
        let end = weak + 1 + close + 1;
        let (tag, after) = s.split_at(end);
        let after = trim(after);
        if !(after.is_empty() || after.starts_with(b",")) || !tag[weak..].iter().all(|&c| etagc(c))
        {
            self.rest = b"";
            return Some(Err(Malformed));
        }
        self.rest = after;
        Some(Ok(tag))
    }
}

/// `DQUOTE` or `etagc` (%x21 / %x23-7E / obs-text).
fn etagc(c: u8) -> bool {
    c == b'"' || c == 0x21 || (0x23..=0x7e).contains(&c) || c >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;
    use Precondition::*;

    const TAG: &[u8] = b"\"abc-12\"";
    const LM: u64 = 1_700_000_000; // Tue, 14 Nov 2023 22:13:20 GMT
    const LM_STR: &str = "Tue, 14 Nov 2023 22:13:20 GMT";
    const BEFORE: &str = "Tue, 14 Nov 2023 22:13:19 GMT";
    const AFTER: &str = "Tue, 14 Nov 2023 22:13:21 GMT";

    fn eval(pairs: &[(HeaderName, &str)]) -> Precondition {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        evaluate(
            &h,
            Validators {
                etag: TAG,
                last_modified: LM,
            },
        )
    }

    const GO: Precondition = Proceed { honour_range: true };

    #[test]
    fn no_conditions_proceed() {
        assert_eq!(eval(&[]), GO);
    }

    #[test]
    fn if_match_is_strong() {
        assert_eq!(eval(&[(IF_MATCH, "\"abc-12\"")]), GO);
        assert_eq!(eval(&[(IF_MATCH, "\"x\", \"abc-12\"")]), GO);
        assert_eq!(eval(&[(IF_MATCH, "*")]), GO);
        assert_eq!(eval(&[(IF_MATCH, "W/\"abc-12\"")]), Failed);
        assert_eq!(eval(&[(IF_MATCH, "\"other\"")]), Failed);
        assert_eq!(eval(&[(IF_MATCH, "garbage")]), Failed);
    }

    #[test]
    fn if_unmodified_since() {
        assert_eq!(eval(&[(IF_UNMODIFIED_SINCE, LM_STR)]), GO);
        assert_eq!(eval(&[(IF_UNMODIFIED_SINCE, AFTER)]), GO);
        assert_eq!(eval(&[(IF_UNMODIFIED_SINCE, BEFORE)]), Failed);
        assert_eq!(eval(&[(IF_UNMODIFIED_SINCE, "not a date")]), GO);
        // If-Match present: If-Unmodified-Since is not evaluated.
        assert_eq!(eval(&[(IF_MATCH, "*"), (IF_UNMODIFIED_SINCE, BEFORE)]), GO);
    }

    #[test]
    fn if_none_match_is_weak() {
        assert_eq!(eval(&[(IF_NONE_MATCH, "\"abc-12\"")]), NotModified);
        assert_eq!(eval(&[(IF_NONE_MATCH, "W/\"abc-12\"")]), NotModified);
        assert_eq!(
            eval(&[(IF_NONE_MATCH, "\"a,b\", W/\"abc-12\"")]),
            NotModified
        );
        assert_eq!(eval(&[(IF_NONE_MATCH, "*")]), NotModified);
        assert_eq!(eval(&[(IF_NONE_MATCH, "\"nope\"")]), GO);
        // If-None-Match present: If-Modified-Since is not evaluated.
        assert_eq!(
            eval(&[(IF_NONE_MATCH, "\"nope\""), (IF_MODIFIED_SINCE, LM_STR)]),
            GO
        );
    }

    #[test]
    fn if_modified_since() {
        assert_eq!(eval(&[(IF_MODIFIED_SINCE, LM_STR)]), NotModified);
        assert_eq!(eval(&[(IF_MODIFIED_SINCE, AFTER)]), NotModified);
        assert_eq!(eval(&[(IF_MODIFIED_SINCE, BEFORE)]), GO);
        assert_eq!(eval(&[(IF_MODIFIED_SINCE, "yesterday")]), GO);
        // RFC 850 and asctime forms are HTTP-dates too.
        assert_eq!(
            eval(&[(IF_MODIFIED_SINCE, "Tuesday, 14-Nov-23 22:13:20 GMT")]),
            NotModified
        );
        assert_eq!(
            eval(&[(IF_MODIFIED_SINCE, "Tue Nov 14 22:13:20 2023")]),
            NotModified
        );
    }

    #[test]
    fn failures_come_before_not_modified() {
        assert_eq!(
            eval(&[(IF_MATCH, "\"x\""), (IF_NONE_MATCH, "\"abc-12\"")]),
            Failed
        );
        assert_eq!(
            eval(&[(IF_UNMODIFIED_SINCE, BEFORE), (IF_MODIFIED_SINCE, LM_STR)]),
            Failed
        );
    }

    #[test]
    fn if_range() {
        let skip = Proceed {
            honour_range: false,
        };
        assert_eq!(eval(&[(IF_RANGE, "\"abc-12\"")]), GO);
        assert_eq!(eval(&[(IF_RANGE, "W/\"abc-12\"")]), skip);
        assert_eq!(eval(&[(IF_RANGE, "\"other\"")]), skip);
        assert_eq!(eval(&[(IF_RANGE, LM_STR)]), GO);
        assert_eq!(eval(&[(IF_RANGE, AFTER)]), skip);
        assert_eq!(eval(&[(IF_RANGE, "bogus")]), skip);
        assert_eq!(eval(&[(IF_RANGE, "\"abc-12\", \"x\"")]), skip);
    }

    #[test]
    fn etag_lists_parse() {
        let tags: Vec<_> = EtagList {
            rest: b" \"a\" ,W/\"b,c\",, \"\"",
        }
        .collect();
        let tags: Vec<&[u8]> = tags.into_iter().map(Result::unwrap).collect();
        assert_eq!(tags, [&b"\"a\""[..], b"W/\"b,c\"", b"\"\""]);
        let bad: Vec<_> = EtagList {
            rest: b"\"a\" x, \"b\"",
        }
        .collect();
        assert!(bad[0].is_err() && bad.len() == 1);
        assert!(EtagList {
            rest: b"\"unterminated"
        }
        .next()
        .unwrap()
        .is_err());
    }
}
