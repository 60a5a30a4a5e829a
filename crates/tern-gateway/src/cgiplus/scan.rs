//! Finding the end of a response, and the callouts inside it, in a
//! worker's stdout. Pure: the bytes read so far in, a [`Step`] out; the
//! transport does what it says and reads more.
//!
//! Output is passed on as soon as it cannot be the start of the sentinel
//! or of a callout: only a tail that matches the beginning of one is held
//! back, and passed on once the next read disproves it. So the memory
//! held is one read plus at most a sentinel (or one callout), whatever
//! the response's size.

use std::ops::Range;

use memchr::memmem::Finder;

use super::Sentinels;

/// The most bytes between CGIPLUSESC and CGIPLUSEOT: a callout is a short
/// command, and without a cap a script that never closes one would be
/// buffered without end.
pub(crate) const MAX_CALLOUT: usize = 4096;

/// What to do with the bytes read so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Pass on the first `n` bytes (never 0) as response output.
    Output(usize),
    /// The buffer starts with the sentinel, `n` bytes long: the response
    /// is complete.
    End(usize),
    /// The buffer starts with a callout: its text is at `text`, and the
    /// whole of it, brackets included, is `len` bytes.
    Callout {
        /// The command between the brackets.
        text: Range<usize>,
        /// Bytes to consume.
        len: usize,
    },
    /// Nothing can be decided yet: read more.
    More,
    /// A callout was opened and not closed within [`MAX_CALLOUT`] bytes.
    CalloutTooLong,
}

/// The sentinels of one worker, ready to search for. (`Debug` does not
/// show them: see [`Sentinels`].)
#[derive(Clone)]
pub(crate) struct Scanner {
    eof: Finder<'static>,
    esc: Finder<'static>,
    eot: Finder<'static>,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner").finish_non_exhaustive()
    }
}

impl Scanner {
    pub(crate) fn new(s: &Sentinels) -> Scanner {
        Scanner {
            eof: Finder::new(s.eof()).into_owned(),
            esc: Finder::new(s.esc()).into_owned(),
            eot: Finder::new(s.eot()).into_owned(),
        }
    }

    /// Decides what the start of `buf` is.
    pub(crate) fn step(&self, buf: &[u8]) -> Step {
        let eof = self.eof.find(buf);
        // Only a callout that starts before the sentinel matters.
        let esc = self.esc.find(&buf[..eof.unwrap_or(buf.len())]);
        match (eof, esc) {
            (_, Some(0)) => self.callout(buf),
            (_, Some(at)) => Step::Output(at),
            (Some(0), None) => Step::End(self.eof.needle().len()),
            (Some(at), None) => Step::Output(at),
            (None, None) => {
                let held = partial(buf, self.eof.needle()).max(partial(buf, self.esc.needle()));
                match buf.len() - held {
                    0 => Step::More,
                    n => Step::Output(n),
                }
            }
        }
    }

    /// `buf` starts with CGIPLUSESC.
    fn callout(&self, buf: &[u8]) -> Step {
        let open = self.esc.needle().len();
        let window = &buf[open..buf.len().min(open + MAX_CALLOUT + self.eot.needle().len())];
        match self.eot.find(window) {
            Some(at) => Step::Callout {
                text: open..open + at,
                len: open + at + self.eot.needle().len(),
            },
            None if window.len() >= MAX_CALLOUT + self.eot.needle().len() => Step::CalloutTooLong,
            None => Step::More,
        }
    }
}

/// The length of the longest tail of `buf` that is a proper beginning of
/// `needle` (0 when none is).
fn partial(buf: &[u8], needle: &[u8]) -> usize {
    let longest = buf.len().min(needle.len().saturating_sub(1));
    (1..=longest)
        .rev()
        .find(|&k| buf[buf.len() - k..] == needle[..k])
        .unwrap_or(0)
}

/// What a callout asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Callout {
    /// `!CGIPLUS: struct`: struct mode from the next request on.
    Struct,
    /// `!CGIPLUS: record`: back to record mode from the next request on.
    Record,
    /// Anything else: logged and ignored (tern answers no callout).
    Other(String),
}

/// Reads a callout's text. Surrounding white space and the case of the
/// keyword and the mode do not matter.
pub(crate) fn callout(text: &[u8]) -> Callout {
    let text = text.trim_ascii();
    let lower = text.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix(b"!cgiplus:") {
        match rest.trim_ascii() {
            b"struct" => return Callout::Struct,
            b"record" => return Callout::Record,
            _ => {}
        }
    }
    Callout::Other(String::from_utf8_lossy(text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner() -> (Sentinels, Scanner) {
        let s = Sentinels::generate().unwrap();
        let scan = Scanner::new(&s);
        (s, scan)
    }

    /// Feeds `input` in pieces cut at `cuts` and does what each step says,
    /// the way the transport does: returns the output passed on, the
    /// callouts seen, and what followed the sentinel.
    fn drive(scan: &Scanner, input: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<Callout>, Vec<u8>) {
        let mut pieces = Vec::new();
        let mut last = 0;
        for &c in cuts.iter().chain([input.len()].iter()) {
            pieces.push(&input[last..c]);
            last = c;
        }
        let mut pieces = pieces.into_iter();
        let (mut buf, mut out, mut callouts) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            match scan.step(&buf) {
                Step::Output(n) => {
                    assert!(n > 0);
                    out.extend(buf.drain(..n));
                }
                Step::End(n) => {
                    buf.drain(..n);
                    // Output held back must never be more than the sentinel.
                    return (out, callouts, buf);
                }
                Step::Callout { text, len } => {
                    callouts.push(callout(&buf[text]));
                    buf.drain(..len);
                }
                Step::More => match pieces.next() {
                    Some(p) => buf.extend_from_slice(p),
                    None => panic!("no sentinel in {:?}", String::from_utf8_lossy(input)),
                },
                Step::CalloutTooLong => panic!("callout too long"),
            }
            assert!(buf.len() <= MAX_CALLOUT + 200 + input.len().min(1 << 16));
        }
    }

    #[test]
    fn a_sentinel_split_anywhere_is_found_and_the_output_before_it_is_whole() {
        let (s, scan) = scanner();
        let body = b"Content-Type: text/plain\n\nhello";
        let input = [&body[..], s.eof().as_bytes(), b"\n"].concat();
        for cut in 0..=input.len() {
            let (out, callouts, after) = drive(&scan, &input, &[cut]);
            assert_eq!(out, body, "cut at {cut}");
            assert!(callouts.is_empty());
            // A cut before the end leaves the rest unread; either way only
            // the newline can follow.
            assert!(after.is_empty() || after == b"\n", "cut at {cut}");
        }
    }

    #[test]
    fn a_sentinel_cut_into_one_byte_pieces_is_found() {
        let (s, scan) = scanner();
        let input = [b"abc".as_slice(), s.eof().as_bytes()].concat();
        let cuts: Vec<usize> = (1..input.len()).collect();
        let (out, _, after) = drive(&scan, &input, &cuts);
        assert_eq!(out, b"abc");
        assert!(after.is_empty());
    }

    #[test]
    fn what_only_looks_like_the_start_of_a_sentinel_is_passed_on() {
        let (s, scan) = scanner();
        let eof = s.eof().as_bytes();
        let almost = &eof[..eof.len() - 1];
        // A prefix of the sentinel, then something else; a prefix of a
        // callout bracket; the shared `--tern-cgiplus-` prefix at the end.
        let body = [
            b"x".as_slice(),
            almost,
            b"y--",
            &s.esc().as_bytes()[..20],
            b"z--tern-cgiplus-",
        ]
        .concat();
        let input = [&body[..], eof].concat();
        for cut in 0..=input.len() {
            let (out, _, _) = drive(&scan, &input, &[cut]);
            assert_eq!(out, body, "cut at {cut}");
        }
        // Held back while undecided, and only the undecided tail.
        assert_eq!(scan.step(almost), Step::More);
        assert_eq!(scan.step(&[b"ab", almost].concat()), Step::Output(2));
        assert_eq!(
            scan.step(&[almost, b"!"].concat()),
            Step::Output(almost.len() + 1)
        );
    }

    #[test]
    fn callouts_are_taken_out_of_the_output_wherever_they_are_cut() {
        let (s, scan) = scanner();
        let input = [
            s.esc().as_bytes(),
            b"!CGIPLUS: struct",
            s.eot().as_bytes(),
            b"Status: 204\n\n",
            s.esc().as_bytes(),
            b" !WATCH: hello \n",
            s.eot().as_bytes(),
            s.eof().as_bytes(),
        ]
        .concat();
        for cut in 0..=input.len() {
            let (out, callouts, _) = drive(&scan, &input, &[cut]);
            assert_eq!(out, b"Status: 204\n\n", "cut at {cut}");
            assert_eq!(
                callouts,
                [Callout::Struct, Callout::Other("!WATCH: hello".into())],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_callout_that_never_closes_is_refused_not_buffered() {
        let (s, scan) = scanner();
        let mut buf = s.esc().as_bytes().to_vec();
        buf.extend(std::iter::repeat_n(b'a', MAX_CALLOUT));
        assert_eq!(scan.step(&buf), Step::More);
        buf.extend(std::iter::repeat_n(b'a', s.eot().len()));
        assert_eq!(scan.step(&buf), Step::CalloutTooLong);
        // The longest callout still closes.
        let mut ok = s.esc().as_bytes().to_vec();
        ok.extend(std::iter::repeat_n(b'a', MAX_CALLOUT));
        ok.extend_from_slice(s.eot().as_bytes());
        assert!(matches!(scan.step(&ok), Step::Callout { .. }));
    }

    #[test]
    fn callout_text() {
        assert_eq!(callout(b"!CGIPLUS: struct"), Callout::Struct);
        assert_eq!(callout(b"!cgiplus:STRUCT\n"), Callout::Struct);
        assert_eq!(callout(b"!CGIPLUS: record"), Callout::Record);
        assert_eq!(
            callout(b"!CGIPLUS: other"),
            Callout::Other("!CGIPLUS: other".into())
        );
        assert_eq!(callout(b"AUTH: x"), Callout::Other("AUTH: x".into()));
    }

    proptest::proptest! {
        /// Any output — made of pieces of the sentinels themselves, so
        /// that near misses are common — cut anywhere, comes out whole and
        /// in order before the sentinel.
        #[test]
        fn output_cut_anywhere_comes_out_whole(
            parts in proptest::collection::vec((0u8..4, 0usize..40), 0..24),
            mut cuts in proptest::collection::vec(0usize..2000, 0..12),
        ) {
            let (s, scan) = scanner();
            let eof = s.eof().as_bytes();
            let esc = s.esc().as_bytes();
            let mut body = Vec::new();
            for (kind, n) in parts {
                match kind {
                    // A proper beginning of a sentinel: never the whole.
                    0 => body.extend_from_slice(&eof[..n.min(eof.len() - 1)]),
                    1 => body.extend_from_slice(&esc[..n.min(esc.len() - 1)]),
                    2 => body.extend_from_slice(&eof[eof.len() - 1 - n.min(eof.len() - 2)..]),
                    _ => body.extend(std::iter::repeat_n(b'x', n)),
                }
                body.push(b'.');
            }
            let input = [&body[..], eof, b"\n"].concat();
            cuts.retain(|&c| c < input.len());
            cuts.sort_unstable();
            cuts.dedup();
            let (out, callouts, _) = drive(&scan, &input, &cuts);
            proptest::prop_assert_eq!(out, body);
            proptest::prop_assert!(callouts.is_empty());
        }
    }
}
