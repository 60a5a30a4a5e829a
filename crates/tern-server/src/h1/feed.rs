//! A request's body on its way from tern's HTTP/1 loop to its handler
//! (see the loop's doc, `h1.rs`): [`Feed`] decodes it and hands over
//! what each read brought, with `100 Continue` when the handler first asks,
//! and settles what is left of it once the answer is there.

use std::pin::Pin;

use bytes::BytesMut;
use http::Version;
use tern_h1::{BodyDecoder, Decoded, Framing};
use tern_handler::{fed_body, BodyPace, BodySender, FedBody, RequestBody};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use crate::service::ConnBody;

/// Room made in the read buffer for a read of a request body, when less
/// than a quarter of it is free.
const BODY_READ: usize = 16 << 10;

/// What the client is told before it sends a body it waits to send.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// What the connection reads while a handler works: the request's body
/// for it, as it arrives; then ahead (a pipelined head, or the client's
/// end), up to `max_head` bytes. The bytes read, 0 when the client closed.
pub(super) async fn pump<S>(
    io: &mut S,
    buf: &mut BytesMut,
    feed: &mut Feed,
    max_head: usize,
) -> std::io::Result<usize>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if !feed.ended && !feed.broken {
        feed.step(io, buf).await
    } else if buf.len() < max_head {
        io.read_buf(buf).await
    } else {
        std::future::pending().await
    }
}

/// A request body on its way from the connection to its handler.
pub(super) struct Feed {
    decoder: BodyDecoder,
    /// The handler's end; `None` once the body ended or failed, or the
    /// handler let go of it.
    tx: Option<BodySender>,
    /// While `100 Continue` is owed: how much of it is written.
    cont: Option<usize>,
    /// The body has been read to its end: the next request starts at the
    /// front of the buffer.
    ended: bool,
    /// The body's framing is broken: where the next request starts is
    /// unknown.
    broken: bool,
}

impl Feed {
    /// The feed of a body framed as `framing`, and the handler's end of
    /// it; `expect_continue`: the client waits for `100 Continue`.
    pub(super) fn new(
        framing: Framing,
        expect_continue: bool,
        limits: &tern_h1::Limits,
    ) -> (Feed, FedBody) {
        let (tx, body) = fed_body(expect_continue);
        let feed = Feed {
            decoder: BodyDecoder::new(framing, limits),
            tx: Some(tx),
            cont: expect_continue.then_some(0),
            ended: false,
            broken: false,
        };
        (feed, body)
    }

    /// Before the handler first asks: what of the body arrived with its
    /// head is handed over at once (unless the client waits for `100
    /// Continue`), so that a body read whole with its head never makes
    /// its handler wait (nor arm the body's pace clock).
    pub(super) fn prime(&mut self, buf: &mut BytesMut) {
        if self.cont.is_none() {
            self.hand_over(buf);
        }
    }

    /// Moves the body on: what has been read of it handed to the handler
    /// once it took the last, or else a read. The bytes moved, 0 when the
    /// client closed first. Cancel safe: it may be dropped at any await
    /// (the handler answered) and called again.
    async fn step<S>(&mut self, io: &mut S, buf: &mut BytesMut) -> std::io::Result<usize>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        loop {
            let Some(tx) = self.tx.as_mut() else {
                // The handler let go of the body: nothing more is read
                // for it until its answer is there (see `settle`).
                return std::future::pending().await;
            };
            if std::future::poll_fn(|cx| tx.poll_ready(cx)).await.is_err() {
                self.tx = None;
                continue;
            }
            // The handler asked for the body: the client waiting for
            // leave to send it gets it now, once.
            while let Some(written) = self.cont {
                if written == CONTINUE.len() {
                    io.flush().await?;
                    self.cont = None;
                    break;
                }
                let rest = &CONTINUE[written..];
                let n = std::future::poll_fn(|cx| Pin::new(&mut *io).poll_write(cx, rest)).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                self.cont = Some(written + n);
            }
            let moved = self.hand_over(buf);
            if moved > 0 {
                return Ok(moved);
            }
            if buf.capacity() - buf.len() < BODY_READ / 4 {
                buf.reserve(BODY_READ);
            }
            if io.read_buf(buf).await? == 0 {
                if let Some(tx) = self.tx.take() {
                    tx.fail("the client closed the connection before the end of the body");
                }
                return Ok(0);
            }
        }
    }

    /// Hands the handler every piece of the body `buf` holds, and its end
    /// or its failure when they are there. The bytes handed over (at
    /// least 1 when the body ended or failed).
    fn hand_over(&mut self, buf: &mut BytesMut) -> usize {
        let Some(tx) = self.tx.as_mut() else {
            return 0;
        };
        let mut moved = 0;
        loop {
            match self.decoder.decode(buf) {
                Ok(Decoded::Data(data)) => {
                    moved += data.len();
                    tx.send(data);
                    // A length's last piece ends the body with it: the
                    // handler needs no further turn to learn of the end.
                    if matches!(&self.decoder, BodyDecoder::Length(d) if d.remaining() == 0) {
                        self.end(Ok(http::HeaderMap::new()));
                        return moved;
                    }
                }
                Ok(Decoded::End(trailers)) => {
                    self.end(Ok(trailers));
                    return moved.max(1);
                }
                Ok(Decoded::NeedMore) => return moved,
                Err(e) => {
                    self.end(Err(e));
                    return moved.max(1);
                }
            }
        }
    }

    /// The body ended (with these trailers) or its framing broke.
    fn end(&mut self, end: Result<http::HeaderMap, tern_h1::BodyError>) {
        let tx = self.tx.take();
        match end {
            Ok(trailers) => {
                self.ended = true;
                if let Some(tx) = tx {
                    tx.finish(trailers);
                }
            }
            Err(e) => {
                self.broken = true;
                if let Some(tx) = tx {
                    tx.fail(e);
                }
            }
        }
    }

    /// Once the answer is there: the body's bytes already read are
    /// discarded, and whether the body is now read to its end (the
    /// connection can go on). A handler that still holds the body gets an
    /// error from it.
    pub(super) fn settle(&mut self, buf: &mut BytesMut) -> bool {
        self.tx = None;
        while !self.ended && !self.broken {
            match self.decoder.decode(buf) {
                Ok(Decoded::Data(_)) => {}
                Ok(Decoded::End(_)) => self.ended = true,
                Ok(Decoded::NeedMore) => break,
                Err(_) => self.broken = true,
            }
        }
        self.ended && !self.broken
    }
}

/// A request's body as the loop hands it to the service: the handler's
/// end of the body the loop feeds.
pub(super) struct LoopBody(pub(super) FedBody);

impl ConnBody for LoopBody {
    fn into_request_body(self, _: Version, limit: u64, pace: BodyPace) -> (RequestBody, bool) {
        (RequestBody::fed(self.0, limit, pace), false)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http_body_util::BodyExt as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    fn limits() -> tern_h1::Limits {
        tern_h1::Limits::default()
    }

    fn body(fed: FedBody) -> RequestBody {
        let pace = BodyPace {
            timeout: Duration::from_secs(5),
            min_rate: 0,
        };
        RequestBody::fed(fed, u64::MAX, pace)
    }

    /// A body that came whole with its head, chunked and pipelined, is the
    /// handler's before the connection reads anything; the next request
    /// stays in the buffer.
    #[tokio::test]
    async fn a_body_that_came_with_its_head_is_there_at_the_first_look() {
        let mut buf = BytesMut::from(&b"2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\nGET /next"[..]);
        let (mut feed, fed) = Feed::new(Framing::Chunked, false, &limits());
        feed.prime(&mut buf);
        assert!(feed.ended);
        let got = body(fed).collect().await.unwrap().to_bytes();
        assert_eq!(got, "hello");
        assert_eq!(&buf[..], b"GET /next");
        assert!(feed.settle(&mut buf), "the connection goes on");
    }

    /// `100 Continue` goes out only once the handler asks for the body,
    /// and then before the body is read.
    #[tokio::test]
    async fn continue_is_sent_when_the_handler_asks() {
        let (mut ours, mut client) = tokio::io::duplex(1024);
        let mut buf = BytesMut::new();
        let (mut feed, fed) = Feed::new(Framing::Length(4), true, &limits());
        feed.prime(&mut buf);
        // Not asked yet: the step waits, and nothing is written.
        let idle = tokio::time::timeout(Duration::from_millis(50), feed.step(&mut ours, &mut buf));
        assert!(idle.await.is_err());
        let mut line = [0u8; 64];
        let nothing = tokio::time::timeout(Duration::from_millis(20), client.read(&mut line));
        assert!(nothing.await.is_err(), "written before the handler asked");
        let reader = tokio::spawn(async move { body(fed).collect().await.unwrap().to_bytes() });
        let step = tokio::spawn(async move {
            while !feed.ended {
                assert!(feed.step(&mut ours, &mut buf).await.unwrap() > 0);
            }
        });
        let n = client.read(&mut line).await.unwrap();
        assert_eq!(&line[..n], b"HTTP/1.1 100 Continue\r\n\r\n");
        client.write_all(b"ping").await.unwrap();
        step.await.unwrap();
        assert_eq!(reader.await.unwrap(), "ping");
    }

    /// Once the answer is there, what has arrived of an unread body is
    /// discarded and the connection goes on; a body still arriving, or a
    /// broken one, ends it.
    #[test]
    fn the_rest_of_a_body_is_settled_after_the_answer() {
        let (mut feed, fed) = Feed::new(Framing::Length(5), false, &limits());
        drop(fed);
        let mut buf = BytesMut::from(&b"helloGET /"[..]);
        assert!(feed.settle(&mut buf));
        assert_eq!(&buf[..], b"GET /");

        let (mut feed, _fed) = Feed::new(Framing::Length(10), false, &limits());
        let mut buf = BytesMut::from(&b"hello"[..]);
        assert!(!feed.settle(&mut buf), "five bytes are still to come");

        let (mut feed, _fed) = Feed::new(Framing::Chunked, false, &limits());
        let mut buf = BytesMut::from(&b"zz\r\n"[..]);
        assert!(!feed.settle(&mut buf), "a bad chunk size");
    }

    /// A body in chunks of any sizes, arriving in pieces of any sizes with
    /// the next request behind it: the handler reads exactly its bytes,
    /// and the next request is left at the front of the buffer.
    #[test]
    fn any_body_in_any_pieces_reaches_its_handler_whole() {
        use proptest::prelude::*;
        let case = (
            prop::collection::vec(prop::collection::vec(any::<u8>(), 1..300), 0..8),
            prop::collection::vec(1..200usize, 1..20),
            any::<bool>(),
        );
        proptest!(ProptestConfig::with_cases(64), |((chunks, cuts, chunked) in case)| {
            let data: Vec<u8> = chunks.concat();
            let mut wire = Vec::new();
            let framing = if chunked {
                for c in &chunks {
                    wire.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                    wire.extend_from_slice(c);
                    wire.extend_from_slice(b"\r\n");
                }
                wire.extend_from_slice(b"0\r\n\r\n");
                Framing::Chunked
            } else {
                wire.extend_from_slice(&data);
                Framing::Length(data.len() as u64)
            };
            wire.extend_from_slice(b"GET /next");
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let (got, rest) = rt.block_on(async move {
                let (mut ours, mut client) = tokio::io::duplex(64);
                let writer = tokio::spawn(async move {
                    let mut at = 0;
                    for n in cuts.iter().cycle() {
                        if at == wire.len() {
                            break;
                        }
                        let end = (at + n).min(wire.len());
                        client.write_all(&wire[at..end]).await.unwrap();
                        at = end;
                        tokio::task::yield_now().await;
                    }
                    client
                });
                let (mut feed, fed) = Feed::new(framing, false, &limits());
                let reader = tokio::spawn(async move { body(fed).collect().await.unwrap().to_bytes() });
                let mut buf = BytesMut::new();
                feed.prime(&mut buf);
                while !feed.ended {
                    let moved = pump(&mut ours, &mut buf, &mut feed, 1 << 16).await.unwrap();
                    assert!(moved > 0, "the client closed early");
                }
                let got = reader.await.unwrap();
                let _client = writer.await.unwrap();
                // What was read after the body is the next request.
                while buf.len() < b"GET /next".len() {
                    ours.read_buf(&mut buf).await.unwrap();
                }
                (got, buf)
            });
            prop_assert_eq!(&got[..], &data[..]);
            prop_assert_eq!(&rest[..], b"GET /next");
        });
    }

    /// A body whose framing breaks fails for its handler, after the
    /// pieces before the break.
    #[tokio::test]
    async fn a_broken_chunk_fails_the_body() {
        let mut buf = BytesMut::from(&b"2\r\nhe\r\nxyz\r\n"[..]);
        let (mut feed, fed) = Feed::new(Framing::Chunked, false, &limits());
        feed.prime(&mut buf);
        assert!(feed.broken);
        let mut body = body(fed);
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "he");
        assert!(body.frame().await.unwrap().is_err());
    }
}
