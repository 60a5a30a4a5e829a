//! The client side of one FastCGI request over a connection (a
//! [`Socket`], opened by [`socket::connect`](super::socket::connect)): the
//! request started ([`start`], then [`FcgiUpstream`] and
//! [`FcgiDownstream`]), and the connection handed back at rest for the
//! next request ([`reunite`]); and the connection's limits asked for
//! ([`get_values`]).
//!
//! The request follows the record layer's rules (see [`super`]): id 1,
//! KEEP_CONN, and the whole head (BEGIN_REQUEST, PARAMS, the empty PARAMS,
//! and a body already in memory with its empty STDIN) in one write. A
//! streamed body goes out one write per piece; when CONTENT_LENGTH says
//! how long it is, the empty STDIN rides in the same write as the last
//! piece, so that no small record ever follows another write on its own.

use std::io;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::time::Sleep;

use super::socket::{rejoin, KeptTimer, ReadHalf, Socket, WriteHalf};
use super::{encode, Connection, Decoder, DecoderConfig, ProtocolStatus, Record, RequestId};
use super::{Params, Role, Stream};
use crate::persist::{Broken, Downstream, Event, Upstream};

/// The request id of every request: tern never multiplexes (see
/// [`super`]).
const ID: RequestId = RequestId::ONE;

/// How much a read asks the kernel for at least.
const READ_CHUNK: usize = 64 * 1024;

/// The first read's buffer on a new connection, or after a short answer:
/// most responses fit, and a small allocation is much cheaper than a
/// 64 KiB one made and freed per request. A read that fills it grows the
/// next one to [`READ_CHUNK`].
const FIRST_READ: usize = 8 * 1024;

/// The largest first read: after an answer this long or longer, the next
/// answer's first read has room for this much.
const FIRST_READ_MAX: usize = 128 * 1024;

/// The first read's room for an answer on a connection whose last answer
/// was `last` bytes long: room for as much, so that an application that
/// answers alike each time (a page, an API's replies) is read in one
/// read(2) into one allocation. A 64 KB answer came in 8 KiB, then 57 KiB
/// (two reads, two allocations); now in one, once the connection has
/// carried one like it.
fn first_read(last: usize) -> usize {
    // Rounded up to a page, for the allocator.
    last.next_multiple_of(4096)
        .clamp(FIRST_READ, FIRST_READ_MAX)
}

pub use crate::persist::StartBody;

/// Starts a request on `sock`: BEGIN_REQUEST (Responder, KEEP_CONN, id
/// 1), the PARAMS records of `params` (the empty one that ends them
/// included) and the body as `body` says, in one write. The socket is
/// registered with the current runtime until [`reunite`].
///
/// # Cancel safety
/// Not cancel safe: a dropped start may have written part of the head;
/// the socket is dropped with it.
pub async fn start(
    sock: Socket,
    params: &Params,
    body: StartBody,
) -> io::Result<(FcgiUpstream, FcgiDownstream)> {
    start_with(sock, params, body, Connection::Keep).await
}

/// As [`start`], for a connection used for this one request: the
/// application closes it after the response (KEEP_CONN unset).
///
/// # Cancel safety
/// As [`start`].
pub async fn start_once(
    sock: Socket,
    params: &Params,
    body: StartBody,
) -> io::Result<(FcgiUpstream, FcgiDownstream)> {
    start_with(sock, params, body, Connection::Close).await
}

async fn start_with(
    mut sock: Socket,
    params: &Params,
    body: StartBody,
    connection: Connection,
) -> io::Result<(FcgiUpstream, FcgiDownstream)> {
    // The request is encoded first and written straight away on the plain
    // socket: a kept connection is writable, and a socket newly registered
    // with the runtime only learns that from its first readiness event (a
    // trip through epoll for nothing). What does not fit is written once
    // registered.
    let first = first_read(sock.last_answer());
    let timer = sock.take_timer().and_then(KeptTimer::take_here);
    // Only a streamed body needs its length.
    let remaining = match body {
        StartBody::Streamed => params.content_length(),
        StartBody::Empty | StartBody::Whole(_) => None,
    };
    let records = params.records();
    let mut buf = BytesMut::with_capacity((records.len() + 64).max(4096));
    encode::begin_request(&mut buf, ID, Role::Responder, connection);
    buf.extend_from_slice(records);
    let ended = match body {
        StartBody::Empty => true,
        StartBody::Whole(bytes) => {
            encode::stream(&mut buf, ID, Stream::Stdin, &bytes);
            true
        }
        StartBody::Streamed => remaining == Some(0),
    };
    if ended {
        encode::end_stream(&mut buf, ID, Stream::Stdin);
    }
    sock.write_now(&mut buf)?;
    // All of it out already (the usual case): the socket is registered for
    // reading only. Registered for writing too, every time the application
    // took in the request the runtime would be woken for a writable event
    // nobody waits for.
    let (read, write) = if ended && buf.is_empty() {
        (sock.register_for_reading()?, WriteHalf::Done)
    } else {
        sock.register()?.split()
    };
    let mut up = FcgiUpstream {
        write,
        buf,
        remaining,
        state: if ended { UpState::Ended } else { UpState::Open },
    };
    if !up.buf.is_empty() {
        up.write_buffer().await?;
    }
    let down = FcgiDownstream {
        read,
        buf: BytesMut::with_capacity(first),
        taken: 0,
        decoder: Decoder::new(DecoderConfig::default()),
        state: DownState::Reading,
        timer,
    };
    Ok((up, down))
}

/// The request body's way to the application: STDIN records.
#[derive(Debug)]
pub struct FcgiUpstream {
    write: WriteHalf,
    /// The records of one write; kept to reuse its memory.
    buf: BytesMut,
    /// Body bytes still to come, when CONTENT_LENGTH gave the length.
    remaining: Option<u64>,
    state: UpState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UpState {
    /// More body may come.
    Open,
    /// The empty STDIN is in the buffer, or went out.
    Ended,
    /// A write failed, was cancelled, or the body broke its length: the
    /// stream is out of step.
    Failed,
}

impl FcgiUpstream {
    /// Appends the empty STDIN to the pending write.
    fn end_in_buffer(&mut self) {
        encode::end_stream(&mut self.buf, ID, Stream::Stdin);
        self.state = UpState::Ended;
    }

    /// Writes the buffer out in one `write_all`. Until it is all out the
    /// state says Failed, so that a cancelled write leaves the connection
    /// unusable rather than silently out of step.
    async fn write_buffer(&mut self) -> io::Result<()> {
        let after = self.state;
        self.state = UpState::Failed;
        self.write.write_all(&self.buf).await?;
        self.buf.clear();
        self.state = after;
        Ok(())
    }

    fn refuse(&self) -> Option<io::Error> {
        match self.state {
            UpState::Open => None,
            UpState::Ended => Some(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the request body already ended",
            )),
            UpState::Failed => Some(io::Error::other(
                "an earlier write to the application failed",
            )),
        }
    }
}

impl Upstream for FcgiUpstream {
    /// STDIN records of `chunk` (split at 65535 bytes) in one write; the
    /// piece that completes CONTENT_LENGTH carries the empty STDIN too.
    async fn send(&mut self, chunk: Bytes) -> io::Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        if let Some(e) = self.refuse() {
            return Err(e);
        }
        let len = chunk.len() as u64;
        if let Some(left) = self.remaining {
            if len > left {
                self.state = UpState::Failed;
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("the body runs {} bytes past CONTENT_LENGTH", len - left),
                ));
            }
            self.remaining = Some(left - len);
        }
        self.buf.clear();
        encode::stream(&mut self.buf, ID, Stream::Stdin, &chunk);
        if self.remaining == Some(0) {
            self.end_in_buffer();
        }
        self.write_buffer().await
    }

    /// The empty STDIN, unless the last piece carried it already.
    async fn finish(&mut self) -> io::Result<()> {
        match self.refuse() {
            None => {}
            Some(_) if self.state == UpState::Ended => return Ok(()),
            Some(e) => return Err(e),
        }
        self.buf.clear();
        self.end_in_buffer();
        self.write_buffer().await
    }
}

/// What the application sends back, as [`Event`]s.
#[derive(Debug)]
pub struct FcgiDownstream {
    read: ReadHalf,
    /// Bytes read and not yet decoded; STDOUT and STDERR content is split
    /// off it without copying.
    buf: BytesMut,
    /// Bytes read in all, for the next answer's first read.
    taken: usize,
    decoder: Decoder,
    state: DownState,
    /// The relay's silence timer: the one the connection's last request
    /// left on this runtime, and kept for its next.
    timer: Option<Pin<Box<Sleep>>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DownState {
    Reading,
    /// END_REQUEST arrived; `buf` holds whatever came after it.
    Ended,
    Broken,
}

/// What one record means for the request: the decision, apart from the
/// reading.
#[derive(Debug)]
enum Step {
    Emit(Event),
    /// Nothing for the driver: a stream's empty end record, or a
    /// management answer nobody asked for here.
    Skip,
    Fail(String),
}

fn step(record: Record) -> Step {
    let wrong_id = |id: RequestId| Step::Fail(format!("a record for request {}", id.get()));
    match record {
        Record::Stream { id, .. } | Record::EndRequest { id, .. } if id != ID => wrong_id(id),
        Record::Stream { content, .. } if content.is_empty() => Step::Skip,
        Record::Stream {
            stream: Stream::Stdout,
            content,
            ..
        } => Step::Emit(Event::Stdout(content)),
        Record::Stream {
            stream: Stream::Stderr,
            content,
            ..
        } => Step::Emit(Event::Stderr(content)),
        Record::EndRequest {
            app_status,
            protocol_status,
            ..
        } => match protocol_status {
            ProtocolStatus::RequestComplete => Step::Emit(Event::End { app_status }),
            ProtocolStatus::CantMpxConn => {
                Step::Fail("the application refused: CANT_MPX_CONN".into())
            }
            ProtocolStatus::Overloaded => Step::Fail("the application refused: OVERLOADED".into()),
            ProtocolStatus::UnknownRole => {
                Step::Fail("the application refused: UNKNOWN_ROLE".into())
            }
        },
        Record::GetValuesResult(_) | Record::UnknownType(_) => Step::Skip,
        other => Step::Fail(format!("unexpected record {other:?}")),
    }
}

impl Downstream for FcgiDownstream {
    /// The next STDOUT or STDERR piece, or the end. Reads 64 KiB at a
    /// time; STDERR is handed on record by record, so a chatty
    /// application costs no memory here.
    async fn next(&mut self) -> Result<Event, Broken> {
        match self.state {
            DownState::Reading => {}
            DownState::Ended => return Err(Broken::Protocol("read past END_REQUEST".into())),
            DownState::Broken => return Err(Broken::Protocol("the connection is broken".into())),
        }
        loop {
            if let Some(event) = self.ready() {
                return event;
            }
            self.fill().await?;
        }
    }

    fn ready(&mut self) -> Option<Result<Event, Broken>> {
        if self.state != DownState::Reading {
            return None;
        }
        loop {
            let record = match self.decoder.decode(&mut self.buf) {
                Ok(Some(record)) => record,
                Ok(None) => return None,
                Err(e) => return Some(Err(self.broken(Broken::Protocol(e.to_string())))),
            };
            match step(record) {
                Step::Skip => {}
                Step::Emit(event) => {
                    if matches!(event, Event::End { .. }) {
                        self.state = DownState::Ended;
                    }
                    return Some(Ok(event));
                }
                Step::Fail(why) => return Some(Err(self.broken(Broken::Protocol(why)))),
            }
        }
    }

    fn take_timer(&mut self) -> Option<Pin<Box<Sleep>>> {
        self.timer.take()
    }

    fn keep_timer(&mut self, timer: Pin<Box<Sleep>>) {
        self.timer = Some(timer);
    }
}

impl FcgiDownstream {
    /// Reads more into the buffer. Cancel safe: a read either lands in the
    /// buffer or did not happen.
    async fn fill(&mut self) -> Result<(), Broken> {
        if self.buf.capacity() - self.buf.len() < FIRST_READ / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        match self.read.read_buf(&mut self.buf).await {
            Ok(0) => Err(self.broken(Broken::Closed)),
            Ok(n) => {
                self.taken += n;
                Ok(())
            }
            Err(e) => Err(self.broken(Broken::Io(e))),
        }
    }

    fn broken(&mut self, why: Broken) -> Broken {
        self.state = DownState::Broken;
        why
    }
}

/// The connection back as a [`Socket`] for the next request, unregistered
/// from the runtime, or `None` when it is out of step: the response did
/// not end cleanly, the body did not end (the application answered
/// without reading it all), a write failed, or bytes came after
/// END_REQUEST (nginx checks the same). Whether the application keeps
/// its end open is for [`Socket::still_open`] to say when the next
/// request is about to use it: an application that ends the connection
/// after a response (php-fpm recycling a worker) does so a moment after
/// END_REQUEST, and one that ends it while idle does so at any time.
pub fn reunite(up: FcgiUpstream, down: FcgiDownstream) -> Option<Socket> {
    let in_step =
        down.state == DownState::Ended && down.buf.is_empty() && up.state == UpState::Ended;
    if !in_step {
        return None;
    }
    let timer = down.timer.and_then(KeptTimer::here);
    rejoin(down.read, up.write, down.taken, timer).ok()
}

/// Asks the application for its limits (FCGI_GET_VALUES, say
/// `FCGI_MPXS_CONNS`) on an idle connection, within `timeout`. Returns
/// the socket for reuse and the answer's pairs (names the application did
/// not know are left out, as the spec says).
///
/// # Cancel safety
/// Not cancel safe: the socket is dropped with the future.
pub async fn get_values(
    sock: Socket,
    names: &[&str],
    timeout: Duration,
) -> io::Result<(Socket, Vec<(String, String)>)> {
    let (mut read, mut write) = sock.register()?.split();
    let exchange = async {
        let mut out = BytesMut::new();
        encode::get_values(&mut out, names.iter().map(|n| n.as_bytes()))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        write.write_all(&out).await?;
        let mut buf = BytesMut::with_capacity(4096);
        let mut decoder = Decoder::new(DecoderConfig::default());
        loop {
            let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
            match decoder.decode(&mut buf).map_err(|e| bad(e.to_string()))? {
                Some(Record::GetValuesResult(pairs)) => {
                    let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
                    return Ok(pairs.iter().map(|(n, v)| (text(n), text(v))).collect());
                }
                Some(Record::UnknownType(code)) => {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!("the application does not know record type {code}"),
                    ))
                }
                Some(other) => return Err(bad(format!("unexpected record {other:?}"))),
                None => {
                    if read.read_buf(&mut buf).await? == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
            }
        }
    };
    let pairs = match tokio::time::timeout(timeout, exchange).await {
        Ok(answer) => answer?,
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no GET_VALUES_RESULT within {timeout:?}"),
            ))
        }
    };
    Ok((rejoin(read, write, 0, None)?, pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_read_has_room_for_an_answer_like_the_last_up_to_a_cap() {
        assert_eq!(first_read(0), FIRST_READ, "a new connection");
        assert_eq!(first_read(300), FIRST_READ, "after a short answer");
        // A 64 KB answer in eight records and its END_REQUEST.
        assert_eq!(first_read(65_704), 69_632);
        assert!(first_read(65_704) >= 65_704);
        assert_eq!(first_read(10 << 20), FIRST_READ_MAX, "after a long one");
    }

    fn end(protocol_status: ProtocolStatus) -> Record {
        Record::EndRequest {
            id: ID,
            app_status: 3,
            protocol_status,
        }
    }

    #[test]
    fn records_become_events_or_failures() {
        let out = |content: &'static [u8]| Record::Stream {
            id: ID,
            stream: Stream::Stdout,
            content: Bytes::from_static(content),
        };
        assert!(matches!(step(out(b"hi")), Step::Emit(Event::Stdout(b)) if b == "hi"));
        assert!(matches!(step(out(b"")), Step::Skip));
        assert!(matches!(
            step(end(ProtocolStatus::RequestComplete)),
            Step::Emit(Event::End { app_status: 3 })
        ));
        assert!(matches!(step(Record::UnknownType(42)), Step::Skip));
        for (status, name) in [
            (ProtocolStatus::CantMpxConn, "CANT_MPX_CONN"),
            (ProtocolStatus::Overloaded, "OVERLOADED"),
            (ProtocolStatus::UnknownRole, "UNKNOWN_ROLE"),
        ] {
            assert!(matches!(step(end(status)), Step::Fail(why) if why.contains(name)));
        }
        let other = Record::Stream {
            id: RequestId::new(2).unwrap(),
            stream: Stream::Stderr,
            content: Bytes::from_static(b"x"),
        };
        assert!(matches!(step(other), Step::Fail(why) if why.contains("request 2")));
    }
}
