//! `Range: bytes=...` (RFC 9110 §14): parsing, satisfiability, coalescing.
//! Pure: the caller supplies the representation's length and the cap on
//! ranges, and renders the decision.

/// An inclusive byte range within a representation, `start <= end < len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ByteRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl ByteRange {
    /// How many bytes the range covers (never 0).
    pub(crate) fn len(self) -> u64 {
        self.end - self.start + 1
    }
}

/// What a `Range` header asks of a representation of a given length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RangeDecision {
    /// Send the whole representation (200): no Range, an invalid one (which
    /// RFC 9110 §14.2 says to ignore), another unit, or more ranges than the
    /// cap (which §14.2 allows a server to ignore).
    Full,
    /// One range (206 with `Content-Range`).
    Single(ByteRange),
    /// Two or more disjoint, non-adjacent ranges in ascending order (206
    /// `multipart/byteranges`).
    Multi(Vec<ByteRange>),
    /// Valid, but no range overlaps the representation (416).
    Unsatisfiable,
}

/// One `range-spec` as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spec {
    /// `first-last` or `first-` (last = u64::MAX).
    From { first: u64, last: u64 },
    /// `-n`: the last n bytes.
    Suffix(u64),
}

/// Decides what `header` asks of a representation of `len` bytes, honouring
/// at most `max_ranges` ranges.
pub(crate) fn decide(header: &[u8], len: u64, max_ranges: usize) -> RangeDecision {
    // An empty representation has no byte to send in a 206: a suffix range is
    // "satisfiable" (RFC 9110 §14.1.2) yet selects nothing, so Range is
    // ignored and the empty 200 goes out (§14.2 allows it; nginx and Go do
    // the same). Never a 416 for a range the RFC calls satisfiable.
    if len == 0 {
        return RangeDecision::Full;
    }
    let Some(specs) = parse(header, max_ranges) else {
        return RangeDecision::Full;
    };
    let mut ranges: Vec<ByteRange> = specs.iter().filter_map(|s| satisfy(*s, len)).collect();
    if ranges.is_empty() {
        return RangeDecision::Unsatisfiable;
    }
    coalesce(&mut ranges);
    if ranges.len() == 1 {
        RangeDecision::Single(ranges[0])
    } else {
        RangeDecision::Multi(ranges)
    }
}

/// Parses `bytes=spec, spec, ...`. `None` when the header is to be ignored:
/// another unit, a syntax error, or more than `max_ranges` specs (parsing
/// stops there, so a huge header costs no more than the cap).
fn parse(header: &[u8], max_ranges: usize) -> Option<Vec<Spec>> {
    let s = std::str::from_utf8(header).ok()?;
    let (unit, set) = s.split_once('=')?;
    if !unit.eq_ignore_ascii_case("bytes") {
        return None;
    }
    let mut specs = Vec::new();
    // `1#range-spec`: empty list elements are allowed and skipped (§5.6.1).
    for item in set.split(',') {
        let item = item.trim_matches([' ', '\t']);
        if item.is_empty() {
            continue;
        }
        if specs.len() == max_ranges {
            return None;
        }
        specs.push(parse_spec(item)?);
    }
    if specs.is_empty() {
        None
    } else {
        Some(specs)
    }
}

fn parse_spec(item: &str) -> Option<Spec> {
    let (first, last) = item.split_once('-')?;
    if first.is_empty() {
        return Some(Spec::Suffix(digits(last)?));
    }
    let first = digits(first)?;
    let last = if last.is_empty() {
        u64::MAX
    } else {
        digits(last)?
    };
    if last < first {
        return None;
    }
    Some(Spec::From { first, last })
}

/// `1*DIGIT`, saturating at u64::MAX: a position past any file is still a
/// well-formed one (unsatisfiable or clamped, not invalid).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

fn satisfy(spec: Spec, len: u64) -> Option<ByteRange> {
    match spec {
        Spec::From { first, last } if first < len => Some(ByteRange {
            start: first,
            end: last.min(len - 1),
        }),
        Spec::From { .. } => None,
        Spec::Suffix(0) => None,
        Spec::Suffix(n) => Some(ByteRange {
            start: len - n.min(len),
            end: len - 1,
        }),
    }
}

/// Sorts and merges overlapping or adjacent ranges (§14.3 allows it whatever
/// the order asked), so no byte is sent twice.
fn coalesce(ranges: &mut Vec<ByteRange>) {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<ByteRange> = Vec::with_capacity(ranges.len());
    for r in ranges.drain(..) {
        match out.last_mut() {
            Some(prev) if r.start <= prev.end.saturating_add(1) => prev.end = prev.end.max(r.end),
            _ => out.push(r),
        }
    }
    *ranges = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeDecision::*;

    fn r(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    fn d(h: &str, len: u64) -> RangeDecision {
        decide(h.as_bytes(), len, 10)
    }

    #[test]
    fn single_ranges() {
        assert_eq!(d("bytes=0-9", 100), Single(r(0, 9)));
        assert_eq!(d("bytes=90-", 100), Single(r(90, 99)));
        assert_eq!(d("bytes=-10", 100), Single(r(90, 99)));
        assert_eq!(d("bytes=-1000", 100), Single(r(0, 99)));
        assert_eq!(d("bytes=50-1000", 100), Single(r(50, 99)));
        assert_eq!(d("BYTES=0-0", 100), Single(r(0, 0)));
        assert_eq!(d("bytes= 5-6 ", 100), Single(r(5, 6)));
    }

    #[test]
    fn beyond_four_gib() {
        let len = 5 << 30;
        assert_eq!(
            d("bytes=5368709000-", len),
            Single(r(5_368_709_000, len - 1))
        );
        assert_eq!(d("bytes=-120", len), Single(r(len - 120, len - 1)));
        assert_eq!(
            d("bytes=0-99999999999999999999999", len),
            Single(r(0, len - 1))
        );
    }

    #[test]
    fn multi_ranges_are_sorted_and_coalesced() {
        assert_eq!(d("bytes=0-1,5-6", 10), Multi(vec![r(0, 1), r(5, 6)]));
        assert_eq!(d("bytes=5-6,0-1", 10), Multi(vec![r(0, 1), r(5, 6)]));
        // Overlapping and adjacent ranges merge into one.
        assert_eq!(d("bytes=0-4,2-6", 10), Single(r(0, 6)));
        assert_eq!(d("bytes=0-4,5-6", 10), Single(r(0, 6)));
        assert_eq!(
            d("bytes=0-1,,3-4, -2", 10),
            Multi(vec![r(0, 1), r(3, 4), r(8, 9)])
        );
        assert_eq!(d("bytes=8-,-5", 10), Single(r(5, 9)));
        // Unsatisfiable members are dropped when others remain.
        assert_eq!(d("bytes=0-1,50-60", 10), Single(r(0, 1)));
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(d("bytes=100-", 100), Unsatisfiable);
        assert_eq!(d("bytes=100-200,300-", 100), Unsatisfiable);
        assert_eq!(d("bytes=-0", 100), Unsatisfiable);
    }

    #[test]
    fn ranges_on_an_empty_file_are_ignored() {
        assert_eq!(d("bytes=0-", 0), Full);
        assert_eq!(d("bytes=-5", 0), Full);
    }

    #[test]
    fn invalid_headers_are_ignored() {
        for h in [
            "bytes=5-4",
            "bytes=",
            "bytes=,",
            "bytes=a-b",
            "bytes=1-2-3",
            "bytes=-",
            "bytes 0-1",
            "items=0-1",
            "bytes=0-1,x",
            "bytes=+1-2",
            "bytes=0x1-2",
        ] {
            assert_eq!(d(h, 100), Full, "{h}");
        }
        assert_eq!(decide(b"bytes=\xff-1", 100, 10), Full);
    }

    #[test]
    fn more_than_max_ranges_means_full() {
        assert_eq!(decide(b"bytes=0-0,2-2,4-4", 10, 2), Full);
        assert_eq!(
            decide(b"bytes=0-0,2-2", 10, 2),
            Multi(vec![r(0, 0), r(2, 2)])
        );
        assert_eq!(decide(b"bytes=0-0", 10, 0), Full);
    }
}
