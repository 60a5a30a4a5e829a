//! The response phase every runner of CGI programs shares, with no I/O
//! (rustls's design: bytes in, decisions out). A program's output goes in
//! as it is read; the head is parsed, then the output is gathered for a
//! moment ("settling"): a program done by then is answered whole, with a
//! Content-Length and in one write, instead of a chunked stream and a
//! second write for its end; one that goes on is answered as a stream
//! that starts with what was gathered, and what it writes later is passed
//! on as it comes.
//!
//! The caller owns the reading, the clock and the channel to the client:
//! it arms a timer when told to [`Step::Settle`], calls
//! [`Assembler::settled`] when the timer fires and [`Assembler::end`] when
//! the output ends, and acts on each [`Step`]. The settling time is the
//! runner's: a process per request is done microseconds after its last
//! write, a WebAssembly run a little later.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::response::{HeadReader, Mode, Reply, MAX_HEAD_BYTES};
use crate::HeadError;

/// The most output gathered while settling; more, and the response
/// streams at once.
pub const WHOLE_MAX: usize = 256 * 1024;

/// One response being put together from a program's output.
#[derive(Debug)]
pub struct Assembler {
    phase: Phase,
    settle: Duration,
    discard_body: bool,
    /// Whether a document's own length ([`crate::Head::length`]) ends
    /// its body ([`Assembler::honour_length`]).
    honour: bool,
    /// Bytes of the body still to come, while a length is honoured.
    left: Option<u64>,
}

#[derive(Debug)]
enum Phase {
    /// Reading the head.
    Head(HeadReader),
    /// The head is in; the output after it is gathered.
    Settling(Reply, Gathered),
    /// The client has the head; output is passed on.
    Streaming,
    /// Answered: whole, or with the output discarded. Anything more is
    /// dropped.
    Answered,
}

/// Output gathered while settling: the pieces as they came. An answer
/// that ends while settling keeps them apart (the client's write gathers
/// them, `writev`); one that streams copies them into one buffer once.
#[derive(Debug, Default)]
struct Gathered {
    /// Pieces moved out of `pieces` when there were too many, in order:
    /// each byte is moved there once, and the buffer grows by doubling.
    spilled: BytesMut,
    pieces: Vec<Bytes>,
    len: usize,
}

/// Pieces kept apart at most; past it they are spilled into one buffer,
/// so output that trickles in bytes costs no more than a buffer of its
/// length.
const MAX_PIECES: usize = 64;

/// Pieces room is made for at the first.
const FIRST_PIECES: usize = 16;

impl Gathered {
    fn push(&mut self, piece: Bytes) {
        if piece.is_empty() {
            return;
        }
        if self.pieces.len() == MAX_PIECES {
            for p in self.pieces.drain(..) {
                self.spilled.extend_from_slice(&p);
            }
        } else if self.pieces.is_empty() {
            // Room for a 64 KB FastCGI answer's nine records at once:
            // grown from empty, the vector was reallocated three times.
            self.pieces.reserve(FIRST_PIECES);
        }
        self.len += piece.len();
        self.pieces.push(piece);
    }

    /// All of it as pieces in order, none empty: what was spilled, then
    /// the pieces kept apart. Nothing is copied.
    fn into_pieces(mut self) -> Vec<Bytes> {
        if !self.spilled.is_empty() {
            self.pieces.insert(0, self.spilled.freeze());
        }
        self.pieces
    }

    /// All of it as one buffer: a lone piece as it is, several copied once
    /// into a buffer of their total length (after what was spilled).
    fn into_bytes(mut self) -> Bytes {
        if self.spilled.is_empty() && self.pieces.len() <= 1 {
            return self.pieces.pop().unwrap_or_default();
        }
        let mut all = self.spilled;
        all.reserve(self.len - all.len());
        for piece in &self.pieces {
            all.extend_from_slice(piece);
        }
        all.freeze()
    }
}

/// What the caller does next.
#[derive(Debug)]
pub enum Step {
    /// Nothing for the client yet: read on.
    Read,
    /// The head is complete: read on, and call [`Assembler::settled`]
    /// after this long unless an answer comes first.
    Settle(Duration),
    /// Answer the client now.
    Respond(Reply, Delivery),
    /// Pass these bytes on to the streaming body.
    Forward(Bytes),
    /// Pass these bytes on: they end the body, at the length its head
    /// gave. End the stream; any more output is dropped.
    Last(Bytes),
    /// The output ended short of the length its head gave, after the
    /// answer began: cut the stream off, so the client sees a broken
    /// answer, not a short one.
    Short,
    /// The program's head is malformed, or its output ended without one
    /// (502).
    Fail(HeadError),
}

/// How the body after the head reaches the client.
#[derive(Debug)]
pub enum Delivery {
    /// The program's output ended while settling: all of it, in the
    /// pieces it came in, in order, none empty (none at all for an empty
    /// body). A 64 KB FastCGI answer comes in eight records: sent as they
    /// are, they cost a vectored write and no copy.
    Whole(Vec<Bytes>),
    /// It goes on: a stream starting with these bytes (maybe none).
    Stream(Bytes),
    /// No body: a HEAD request, or a local redirect (the output is read
    /// and dropped, as Apache does).
    Discarded,
}

impl Assembler {
    /// An assembler for output that begins as `mode` says; `settle` is
    /// the gathering time, and `discard_body` drops the body (HEAD).
    pub fn new(mode: Mode, settle: Duration, discard_body: bool) -> Self {
        Assembler {
            phase: Phase::Head(HeadReader::new(mode, MAX_HEAD_BYTES)),
            settle,
            discard_body,
            honour: false,
            left: None,
        }
    }

    /// Ends a document's body at the length its head gave, not at the end
    /// of the output ([`Step::Last`]): for a program whose output may stay
    /// open after its answer (a CGI script's child holding its stdout),
    /// as Apache and lighttpd do.
    pub fn honour_length(mut self) -> Self {
        self.honour = true;
        self
    }

    /// Bytes of the body still to come after what was handed out, when
    /// the head gave its length and it is honoured: a streamed body's
    /// exact length is what it started with plus this.
    pub fn left(&self) -> Option<u64> {
        self.left
    }

    /// `data` cut to what is `left` of an honoured length, counted off it.
    fn take(left: &mut Option<u64>, mut data: Bytes) -> Bytes {
        if let Some(left) = left {
            if data.len() as u64 > *left {
                data.truncate(*left as usize);
            }
            *left -= data.len() as u64;
        }
        data
    }

    /// Whether the body reached its honoured length.
    fn complete(&self) -> bool {
        self.left == Some(0)
    }

    /// Whether the head is in and the output is being gathered: the
    /// settling timer runs.
    pub fn settling(&self) -> bool {
        matches!(self.phase, Phase::Settling(..))
    }

    /// Takes the next bytes of output.
    pub fn push(&mut self, data: Bytes) -> Step {
        match &mut self.phase {
            Phase::Head(reader) => match reader.push_bytes(data) {
                Ok(None) => Step::Read,
                Ok(Some((reply, body))) => self.headed(reply, body),
                Err(e) => {
                    self.phase = Phase::Answered;
                    Step::Fail(e)
                }
            },
            Phase::Settling(_, body) => {
                body.push(Self::take(&mut self.left, data));
                if self.left == Some(0) {
                    self.whole()
                } else if body.len >= WHOLE_MAX {
                    self.stream()
                } else {
                    Step::Read
                }
            }
            Phase::Streaming => {
                let data = Self::take(&mut self.left, data);
                if self.complete() {
                    self.phase = Phase::Answered;
                    Step::Last(data)
                } else {
                    Step::Forward(data)
                }
            }
            Phase::Answered => Step::Read,
        }
    }

    /// The settling time passed: the response starts as a stream.
    pub fn settled(&mut self) -> Step {
        if self.settling() {
            self.stream()
        } else {
            Step::Read
        }
    }

    /// The output ended: a response that was settling is answered whole
    /// (with the output's own length, if it fell short of its head's), and
    /// one that had no complete head fails. A stream ends when its sender
    /// is dropped, or is cut off short of its honoured length.
    pub fn end(&mut self) -> Step {
        match std::mem::replace(&mut self.phase, Phase::Answered) {
            Phase::Head(reader) => Step::Fail(reader.truncated()),
            Phase::Settling(reply, body) => {
                Step::Respond(reply, Delivery::Whole(body.into_pieces()))
            }
            Phase::Streaming if self.left.is_some_and(|l| l > 0) => Step::Short,
            Phase::Streaming | Phase::Answered => Step::Read,
        }
    }

    /// The settling answer, whole now: its length is reached.
    fn whole(&mut self) -> Step {
        self.deliver_settling(Phase::Answered, |body| Delivery::Whole(body.into_pieces()))
    }

    /// The settling answer, delivered as `deliver` makes it, the phase
    /// going on to `next`; without one, nothing changes and output is read.
    fn deliver_settling(
        &mut self,
        next: Phase,
        deliver: impl FnOnce(Gathered) -> Delivery,
    ) -> Step {
        match std::mem::replace(&mut self.phase, next) {
            Phase::Settling(reply, body) => Step::Respond(reply, deliver(body)),
            other => {
                self.phase = other;
                Step::Read
            }
        }
    }

    fn headed(&mut self, reply: Reply, body: Bytes) -> Step {
        if self.discard_body || matches!(reply, Reply::LocalRedirect(_)) {
            self.phase = Phase::Answered;
            return Step::Respond(reply, Delivery::Discarded);
        }
        self.left = match &reply {
            Reply::Document(head) if self.honour => head.length,
            _ => None,
        };
        let body = Self::take(&mut self.left, body);
        if self.complete() {
            let pieces = if body.is_empty() { vec![] } else { vec![body] };
            self.phase = Phase::Answered;
            return Step::Respond(reply, Delivery::Whole(pieces));
        }
        if body.len() >= WHOLE_MAX {
            // More came with the head than settling would gather.
            self.phase = Phase::Streaming;
            return Step::Respond(reply, Delivery::Stream(body));
        }
        let mut gathered = Gathered::default();
        gathered.push(body);
        self.phase = Phase::Settling(reply, gathered);
        Step::Settle(self.settle)
    }

    fn stream(&mut self) -> Step {
        self.deliver_settling(Phase::Streaming, |body| Delivery::Stream(body.into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLE: Duration = Duration::from_millis(2);

    fn cgi() -> Assembler {
        Assembler::new(Mode::Cgi, SETTLE, false)
    }

    fn head() -> Bytes {
        Bytes::from_static(b"Content-Type: text/plain\n\n")
    }

    #[test]
    fn output_that_ends_while_settling_is_answered_whole() {
        let mut a = cgi();
        assert!(matches!(
            a.push(Bytes::from_static(b"Content-Type: text/plain\n")),
            Step::Read
        ));
        assert!(matches!(a.push(Bytes::from_static(b"\nHel")), Step::Settle(d) if d == SETTLE));
        assert!(a.settling());
        assert!(matches!(a.push(Bytes::from_static(b"lo")), Step::Read));
        match a.end() {
            Step::Respond(Reply::Document(h), Delivery::Whole(b)) => {
                assert_eq!(h.headers["content-type"], "text/plain");
                assert!(b.iter().all(|p| !p.is_empty()));
                assert_eq!(b.concat(), b"Hello");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn output_that_trickles_in_is_gathered_whole_and_in_order() {
        let mut a = cgi();
        assert!(matches!(a.push(head()), Step::Settle(_)));
        let mut want = Vec::new();
        for i in 0..1000u32 {
            let piece = format!("{i},");
            want.extend_from_slice(piece.as_bytes());
            assert!(matches!(a.push(Bytes::from(piece)), Step::Read));
            if let Phase::Settling(_, g) = &a.phase {
                assert!(g.pieces.len() <= MAX_PIECES + 1);
            }
        }
        match a.end() {
            Step::Respond(_, Delivery::Whole(b)) => {
                assert!(b.len() <= MAX_PIECES + 1, "{} pieces", b.len());
                assert_eq!(b.concat(), want);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn when_the_settling_time_passes_the_stream_starts_with_what_was_gathered() {
        let mut a = cgi();
        assert!(matches!(a.push(head()), Step::Settle(_)));
        assert!(matches!(a.push(Bytes::from_static(b"first")), Step::Read));
        match a.settled() {
            Step::Respond(Reply::Document(_), Delivery::Stream(b)) => assert_eq!(b, "first"),
            other => panic!("{other:?}"),
        }
        assert!(!a.settling());
        assert!(matches!(a.push(Bytes::from_static(b"next")), Step::Forward(b) if b == "next"));
        assert!(matches!(a.end(), Step::Read));
    }

    #[test]
    fn more_than_whole_max_gathered_streams_at_once() {
        let mut a = cgi();
        assert!(matches!(a.push(head()), Step::Settle(_)));
        let big = Bytes::from(vec![b'x'; WHOLE_MAX]);
        assert!(
            matches!(a.push(big), Step::Respond(_, Delivery::Stream(b)) if b.len() == WHOLE_MAX)
        );
        let mut a = cgi();
        let mut all = head().to_vec();
        all.extend_from_slice(&[b'y'; WHOLE_MAX]);
        assert!(matches!(
            a.push(Bytes::from(all)),
            Step::Respond(_, Delivery::Stream(_))
        ));
    }

    #[test]
    fn a_head_request_and_a_local_redirect_discard_the_body() {
        let mut a = Assembler::new(Mode::Cgi, SETTLE, true);
        let mut out = head().to_vec();
        out.extend_from_slice(b"body");
        assert!(matches!(
            a.push(Bytes::from(out)),
            Step::Respond(Reply::Document(_), Delivery::Discarded)
        ));
        assert!(matches!(a.push(Bytes::from_static(b"more")), Step::Read));
        assert!(matches!(a.end(), Step::Read));
        let mut a = cgi();
        let step = a.push(Bytes::from_static(b"Location: /next?a=1\n\nignored"));
        assert!(
            matches!(step, Step::Respond(Reply::LocalRedirect(t), Delivery::Discarded) if t == "/next?a=1")
        );
    }

    #[test]
    fn output_that_ends_before_its_head_fails_as_truncated() {
        let mut a = cgi();
        assert!(matches!(
            a.push(Bytes::from_static(b"Content-Type: a/b\n")),
            Step::Read
        ));
        assert!(matches!(a.end(), Step::Fail(HeadError::Truncated(18))));
    }

    #[test]
    fn a_malformed_head_fails_and_the_rest_is_dropped() {
        let mut a = cgi();
        assert!(matches!(
            a.push(Bytes::from_static(b"no colon\n\n")),
            Step::Fail(HeadError::NotAField(1))
        ));
        assert!(matches!(a.push(Bytes::from_static(b"x")), Step::Read));
        assert!(matches!(a.settled(), Step::Read));
    }

    fn length(len: usize) -> Bytes {
        Bytes::from(format!("Content-Type: a/b\nContent-Length: {len}\n\n"))
    }

    fn body(delivery: Delivery) -> Vec<u8> {
        match delivery {
            Delivery::Whole(pieces) => pieces.concat(),
            Delivery::Stream(first) => first.to_vec(),
            Delivery::Discarded => vec![],
        }
    }

    /// A script whose output stays open after its answer (a child of it
    /// holds its stdout) is answered at the length it gave, and what it
    /// writes past it is dropped.
    #[test]
    fn an_honoured_length_ends_the_body_without_the_end_of_the_output() {
        // Whole while settling: with the head, and after it.
        let mut a = cgi().honour_length();
        let step = a.push([length(3), Bytes::from_static(b"abcdef")].concat().into());
        let Step::Respond(Reply::Document(h), d) = step else {
            panic!("{step:?}")
        };
        assert_eq!((h.length, body(d)), (Some(3), b"abc".to_vec()));
        assert!(matches!(a.push(Bytes::from_static(b"more")), Step::Read));
        assert!(matches!(a.end(), Step::Read));

        let mut a = cgi().honour_length();
        assert!(matches!(a.push(length(5)), Step::Settle(_)));
        assert!(matches!(a.push(Bytes::from_static(b"ab")), Step::Read));
        let step = a.push(Bytes::from_static(b"cdefg"));
        assert!(
            matches!(&step, Step::Respond(_, Delivery::Whole(_))),
            "{step:?}"
        );
        let Step::Respond(_, d) = step else {
            unreachable!()
        };
        assert_eq!(body(d), b"abcde");

        // Streaming: the last piece is cut to the length and ends it.
        let mut a = cgi().honour_length();
        assert!(matches!(a.push(length(10)), Step::Settle(_)));
        assert!(matches!(a.push(Bytes::from_static(b"abcd")), Step::Read));
        let Step::Respond(_, Delivery::Stream(first)) = a.settled() else {
            panic!("a stream")
        };
        assert_eq!((&first[..], a.left()), (&b"abcd"[..], Some(6)));
        assert!(matches!(a.push(Bytes::from_static(b"efg")), Step::Forward(b) if b == "efg"));
        assert!(matches!(a.push(Bytes::from_static(b"hijkl")), Step::Last(b) if b == "hij"));
        assert!(matches!(a.push(Bytes::from_static(b"x")), Step::Read));
        assert!(matches!(a.end(), Step::Read));

        // A length of nothing: answered with the head.
        let mut a = cgi().honour_length();
        let step = a.push(length(0));
        assert!(
            matches!(&step, Step::Respond(_, Delivery::Whole(p)) if p.is_empty()),
            "{step:?}"
        );
    }

    /// Output that ends short of its length: whole while settling (with
    /// the output's own length, as a script without one), cut off once it
    /// streamed; and without `honour_length` the length changes nothing.
    #[test]
    fn output_short_of_its_length_is_cut_off_once_it_streams() {
        let mut a = cgi().honour_length();
        assert!(matches!(a.push(length(10)), Step::Settle(_)));
        assert!(matches!(a.push(Bytes::from_static(b"abc")), Step::Read));
        let Step::Respond(_, d) = a.end() else {
            panic!("whole")
        };
        assert_eq!(body(d), b"abc");

        let mut a = cgi().honour_length();
        assert!(matches!(a.push(length(10)), Step::Settle(_)));
        assert!(matches!(a.settled(), Step::Respond(_, Delivery::Stream(_))));
        assert!(matches!(
            a.push(Bytes::from_static(b"abc")),
            Step::Forward(_)
        ));
        assert!(matches!(a.end(), Step::Short));

        let mut a = cgi();
        assert!(matches!(a.push(length(3)), Step::Settle(_)));
        assert!(matches!(a.push(Bytes::from_static(b"abcdef")), Step::Read));
        assert!(a.left().is_none());
        let Step::Respond(_, d) = a.end() else {
            panic!("whole")
        };
        assert_eq!(body(d), b"abcdef");
    }
}
