//! The HTTP/1.1 client of the hot path: writes pre-built request bytes, reads
//! the response into one reused buffer, parses only the head (`httparse`) and
//! skips the body by its framing. No allocation per request.
//!
//! Why not hyper's client here: a load generator must cost less per request
//! than the server it measures, and on a 2-core machine the two share the
//! CPU. wrk reaches its rates with exactly this shape (one thread, epoll,
//! pre-built requests, a minimal parser); a general client adds a request
//! object, header map and body stream per request. HTTP/2 uses hyper
//! (`h2.rs`), where framing and flow control are worth the cost. The
//! comparison with wrk on this machine (rate, and client CPU per request) is
//! kept in docs/PERFORMANCE.md.

use std::io;
use std::time::Instant;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::stream::{open, Endpoint, Opened, Stream};
use super::wire::{parse_head, ChunkedScanner, Framing, HeadError, Scan};
use crate::plan::Reuse;
use crate::sample::{ErrorClass, Outcome, Sample};

/// Read buffer size: large enough that a 64 KB body takes few reads.
const BUF_SIZE: usize = 64 * 1024;

/// A request ready to send on HTTP/1.1.
#[derive(Debug, Clone)]
pub(crate) struct H1Request {
    /// Index of the endpoint (distinct host and port) it goes to.
    pub(crate) endpoint: usize,
    /// The bytes to write.
    pub(crate) bytes: Bytes,
    /// A HEAD request: the response has no body whatever it says.
    pub(crate) head: bool,
}

/// One connection slot of a worker: at most one open connection per
/// endpoint, reused while keep-alive allows.
#[derive(Debug)]
pub(crate) struct H1Client {
    conns: Vec<Option<Stream>>,
    buf: Box<[u8]>,
    reuse: Reuse,
}

/// How a round trip on an open connection failed.
#[derive(Debug)]
enum TripError {
    /// Closed or reset before any byte of the response: on a reused
    /// connection that means the server had dropped it while idle, and the
    /// request is retried once on a new one.
    BeforeResponse(ErrorClass),
    /// Anything else.
    Failed(ErrorClass),
}

/// A complete response, as the round trip saw it.
#[derive(Debug)]
struct Trip {
    written: Instant,
    first_byte: Instant,
    done: Instant,
    status: u16,
    head_bytes: u64,
    body_bytes: u64,
    reusable: bool,
    server: Option<String>,
}

impl H1Client {
    /// A client for `endpoints` endpoints.
    pub(crate) fn new(endpoints: usize, reuse: Reuse) -> H1Client {
        H1Client::with_buffer(endpoints, reuse, BUF_SIZE)
    }

    /// A client with a read buffer of `size` bytes (a replay holds six
    /// connections per user, and thousands of users: 16 KiB each is
    /// enough there).
    pub(crate) fn with_buffer(endpoints: usize, reuse: Reuse, size: usize) -> H1Client {
        H1Client {
            conns: (0..endpoints).map(|_| None).collect(),
            buf: vec![0; size].into_boxed_slice(),
            reuse,
        }
    }

    /// Sends `req` to `endpoint` and reads the response, all before `deadline`.
    ///
    /// # Cancel safety
    /// Not cancel safe in the sense of resuming: dropping the future drops
    /// the connection in use (it may be mid-response). The slot is left
    /// empty and the next call opens a new connection, which is correct.
    pub(crate) async fn exchange(
        &mut self,
        req: &H1Request,
        endpoint: &Endpoint,
        deadline: tokio::time::Instant,
        capture_server: bool,
    ) -> Outcome {
        let sent = Instant::now();
        if sent >= deadline.into_std() {
            return Outcome::too_late(sent);
        }
        let mut retried = false;
        loop {
            let (mut stream, connect, handshake) = match self.conns[req.endpoint].take() {
                Some(s) => (s, None, None),
                None => match tokio::time::timeout_at(deadline, open(endpoint)).await {
                    Ok(Ok(Opened {
                        stream,
                        connect,
                        handshake,
                    })) => (stream, Some(connect), handshake),
                    Ok(Err(e)) => return Outcome::failed(e.class(), sent),
                    Err(_) => return Outcome::failed(ErrorClass::Connect, sent),
                },
            };
            let trip = tokio::time::timeout_at(
                deadline,
                round_trip(&mut stream, &mut self.buf, req, capture_server),
            );
            match trip.await {
                Err(_) => return Outcome::failed(ErrorClass::Timeout, sent),
                Ok(Err(TripError::BeforeResponse(_))) if connect.is_none() && !retried => {
                    retried = true;
                }
                Ok(Err(TripError::BeforeResponse(class) | TripError::Failed(class))) => {
                    return Outcome::failed(class, sent)
                }
                Ok(Ok(t)) => {
                    let kept_alive = t.reusable && self.reuse == Reuse::KeepAlive;
                    if kept_alive {
                        self.conns[req.endpoint] = Some(stream);
                    }
                    return Outcome::Response(Sample {
                        sent,
                        connect,
                        handshake,
                        written: t.written,
                        first_byte: t.first_byte,
                        done: t.done,
                        status: t.status,
                        head_bytes: t.head_bytes,
                        body_bytes: t.body_bytes,
                        request_bytes: req.bytes.len() as u64,
                        kept_alive,
                        server: t.server,
                    });
                }
            }
        }
    }
}

fn io_class(e: &io::Error) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorClass::Timeout,
        io::ErrorKind::InvalidData => ErrorClass::Protocol,
        _ => ErrorClass::Reset,
    }
}

/// Writes the request and reads one complete response.
async fn round_trip(
    stream: &mut Stream,
    buf: &mut [u8],
    req: &H1Request,
    capture_server: bool,
) -> Result<Trip, TripError> {
    stream
        .write_all(&req.bytes)
        .await
        .map_err(|e| TripError::BeforeResponse(io_class(&e)))?;
    // TLS: the records leave now, not when the next read needs the socket.
    stream
        .flush()
        .await
        .map_err(|e| TripError::BeforeResponse(io_class(&e)))?;
    let written = Instant::now();

    // The head (skipping interim 1xx heads).
    let mut filled = 0;
    let mut first_byte = None;
    let mut head_bytes = 0u64;
    let head = loop {
        if filled > 0 {
            match parse_head(&buf[..filled], req.head, capture_server) {
                Ok(h) if h.interim => {
                    head_bytes += h.len as u64;
                    buf.copy_within(h.len..filled, 0);
                    filled -= h.len;
                    continue;
                }
                Ok(h) => break h,
                Err(HeadError::Invalid) => return Err(TripError::Failed(ErrorClass::Protocol)),
                Err(HeadError::Partial) => {}
            }
        }
        if filled == buf.len() {
            return Err(TripError::Failed(ErrorClass::Protocol)); // a head over 64 KiB
        }
        let before_response = first_byte.is_none();
        let fail = |class| {
            if before_response {
                TripError::BeforeResponse(class)
            } else {
                TripError::Failed(class)
            }
        };
        let n = stream
            .read(&mut buf[filled..])
            .await
            .map_err(|e| fail(io_class(&e)))?;
        if n == 0 {
            return Err(fail(ErrorClass::Reset));
        }
        first_byte.get_or_insert_with(Instant::now);
        filled += n;
    };
    let first_byte = first_byte.unwrap_or(written);
    head_bytes += head.len as u64;

    // The body: count bytes until the framing says it is complete.
    let mut body_bytes = 0u64;
    let mut reusable = head.reusable;
    let already = filled - head.len;
    match head.framing {
        Framing::Empty => reusable &= already == 0,
        Framing::Length(len) => {
            let mut have = already as u64;
            while have < len {
                have += read_some(stream, buf).await? as u64;
            }
            body_bytes = len;
            reusable &= have == len;
        }
        Framing::Chunked => {
            let mut scanner = ChunkedScanner::default();
            let (mut from, mut to) = (head.len, filled);
            loop {
                let scan = scanner.feed(&buf[from..to]);
                match scan.map_err(|_| TripError::Failed(ErrorClass::Protocol))? {
                    Scan::Done(n) => {
                        body_bytes += n as u64;
                        reusable &= n == to - from;
                        break;
                    }
                    Scan::More => {
                        body_bytes += (to - from) as u64;
                        (from, to) = (0, read_some(stream, buf).await?);
                    }
                }
            }
        }
        Framing::UntilClose => {
            body_bytes = already as u64;
            loop {
                match stream.read(buf).await {
                    Ok(0) => break,
                    Ok(n) => body_bytes += n as u64,
                    Err(e) => return Err(TripError::Failed(io_class(&e))),
                }
            }
            reusable = false;
        }
    }
    Ok(Trip {
        written,
        first_byte,
        done: Instant::now(),
        status: head.status,
        head_bytes,
        body_bytes,
        reusable,
        server: head.server,
    })
}

/// Reads at least one byte of body; EOF is a failure (the body is short).
async fn read_some(stream: &mut Stream, buf: &mut [u8]) -> Result<usize, TripError> {
    match stream.read(buf).await {
        Ok(0) => Err(TripError::Failed(ErrorClass::Reset)),
        Ok(n) => Ok(n),
        Err(e) => Err(TripError::Failed(io_class(&e))),
    }
}
