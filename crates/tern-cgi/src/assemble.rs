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
        }
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
                body.push(data);
                if body.len >= WHOLE_MAX {
                    self.stream()
                } else {
                    Step::Read
                }
            }
            Phase::Streaming => Step::Forward(data),
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

    /// The output ended: a response that was settling is answered whole,
    /// and one that had no complete head fails. Nothing to do otherwise
    /// (a stream ends when its sender is dropped).
    pub fn end(&mut self) -> Step {
        match std::mem::replace(&mut self.phase, Phase::Answered) {
            Phase::Head(reader) => Step::Fail(reader.truncated()),
            Phase::Settling(reply, body) => {
                Step::Respond(reply, Delivery::Whole(body.into_pieces()))
            }
            Phase::Streaming | Phase::Answered => Step::Read,
        }
    }

    fn headed(&mut self, reply: Reply, body: Bytes) -> Step {
        if self.discard_body || matches!(reply, Reply::LocalRedirect(_)) {
            self.phase = Phase::Answered;
            return Step::Respond(reply, Delivery::Discarded);
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
        match std::mem::replace(&mut self.phase, Phase::Streaming) {
            Phase::Settling(reply, body) => {
                Step::Respond(reply, Delivery::Stream(body.into_bytes()))
            }
            other => {
                self.phase = other;
                Step::Read
            }
        }
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
}
