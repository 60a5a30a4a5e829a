//! The contract between a persistent worker's transport (FastCGI records
//! over a socket, CGIplus over pipes) and the driver that serves one
//! request through it. A transport turns one request into an [`Upstream`]
//! (the body going to the worker) and a [`Downstream`] (what the worker
//! sends back, as [`Event`]s); the driver pumps both at once, turns the
//! output into a response with [`tern_cgi::Assembler`], streams the body
//! to the client, and hands the worker back to its pool only after
//! [`Event::End`] arrived cleanly.
//!
//! Public so the transports' integration tests can drive them directly.

use std::future::Future;
use std::io;
use std::pin::Pin;

use bytes::Bytes;
use tokio::time::Sleep;

/// The request body, as far as a transport's `start` needs to know it.
/// FastCGI and CGIplus take the same three cases.
#[derive(Clone, Debug)]
pub enum StartBody {
    /// No body: the transport ends the body with the head (FastCGI's
    /// empty STDIN; nothing for CGIplus).
    Empty,
    /// The whole body, in memory, written with the head. Meant for small
    /// bodies: a worker that writes more than a socket or pipe buffer of
    /// output before it reads a larger one would stall the write; stream
    /// such bodies.
    Whole(Bytes),
    /// The body follows through [`Upstream::send`], then
    /// [`Upstream::finish`]; CONTENT_LENGTH says how long it is.
    Streamed,
}

/// One thing a worker sent back, in order.
#[derive(Debug)]
pub enum Event {
    /// Response bytes (the CGI head first, then the body). Never empty.
    Stdout(Bytes),
    /// Diagnostic bytes for the error log, tagged with the request id by
    /// the driver. Never empty.
    Stderr(Bytes),
    /// The response is complete. `app_status` is FastCGI's appStatus (0
    /// for CGIplus). The connection or pipes are in step and may carry the
    /// next request.
    End {
        /// The application's exit-like status.
        app_status: u32,
    },
}

/// Why a worker can carry no more requests. Every variant means: answer
/// 502 if nothing was sent yet (else cut the stream), log the reason, and
/// discard the worker (its pool kills and replaces it).
#[derive(Debug, thiserror::Error)]
pub enum Broken {
    /// The worker closed its side before ending the response (it crashed,
    /// or exited).
    #[error("the worker closed the connection before ending the response")]
    Closed,
    /// Reading or writing failed.
    #[error("worker i/o: {0}")]
    Io(#[from] io::Error),
    /// The worker broke the protocol (a bad record, a record for another
    /// request, an oversized record, a refusal such as CANT_MPX_CONN or
    /// OVERLOADED, or anything else the transport cannot follow).
    #[error("protocol: {0}")]
    Protocol(String),
}

impl Broken {
    /// The worker's end closed or was reset (EOF, ECONNRESET, EPIPE), as
    /// an application's end does when it closes a connection: not a
    /// protocol error, and not a timeout.
    pub(crate) fn is_close(&self) -> bool {
        match self {
            Broken::Closed => true,
            Broken::Io(e) => peer_gone(e),
            Broken::Protocol(_) => false,
        }
    }
}

/// Whether `e` says the peer is gone (its end closed or reset), as
/// opposed to a request tern could not encode or a timeout.
pub(crate) fn peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::NotConnected
            | io::ErrorKind::UnexpectedEof
    )
}

/// The request body on its way to the worker, after the request head went
/// out (the transport's `start` sends the head, and a body already in
/// memory, in one write).
pub trait Upstream: Send {
    /// Sends the next piece of the body.
    ///
    /// # Cancel safety
    /// Not cancel safe: a cancelled send leaves the stream out of step and
    /// the worker must be discarded.
    fn send(&mut self, chunk: Bytes) -> impl Future<Output = io::Result<()>> + Send;

    /// The body is complete (FastCGI: the empty STDIN record, in the same
    /// write as the last piece when the transport buffers it; CGIplus:
    /// nothing, the worker counts CONTENT_LENGTH bytes).
    ///
    /// # Cancel safety
    /// As [`Upstream::send`].
    fn finish(&mut self) -> impl Future<Output = io::Result<()>> + Send;
}

/// What the worker sends back.
pub trait Downstream: Send {
    /// The next event. After [`Event::End`] it must not be called again.
    ///
    /// # Cancel safety
    /// Cancel safe: bytes read but not yet returned stay buffered, so it
    /// can sit in a `select!` beside [`Upstream::send`].
    fn next(&mut self) -> impl Future<Output = Result<Event, Broken>> + Send;

    /// The next event when the bytes already read hold it, taken without
    /// waiting; `None` when a read is needed first (or the response is
    /// over: [`Downstream::next`] says how). A read brings several events
    /// at once (a 64 KB FastCGI answer is nine records, mostly in one
    /// read), and the relay takes the rest of them in the same pass
    /// instead of going round its `select!` once an event.
    fn ready(&mut self) -> Option<Result<Event, Broken>> {
        None
    }

    /// A timer the channel kept from its last request, for the relay's
    /// silence: moving a timer's deadline later costs much less than
    /// making one (see `fastcgi::socket::KeptTimer`).
    fn take_timer(&mut self) -> Option<Pin<Box<Sleep>>> {
        None
    }

    /// The relay's timer, to keep for the channel's next request.
    fn keep_timer(&mut self, _timer: Pin<Box<Sleep>>) {}
}
