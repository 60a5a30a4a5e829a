//! What one request produced: the instants of its life, or the class of its
//! failure. The driver makes these; the recorder turns them into histograms
//! and counts and drops them.

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A failure, classed by what it says about the server (not by which library
/// call failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// No connection: refused, unreachable, unresolvable host, the connect
    /// did not finish in time, or the TLS handshake failed.
    Connect,
    /// No complete response within the timeout, counted from the time the
    /// request was due (open loop: a request that waited too long for a free
    /// connection times out without being sent).
    Timeout,
    /// The connection was reset or closed before the response was complete
    /// (a server that dies mid-run shows up here, then as `Connect`).
    Reset,
    /// The response was not valid HTTP (bad status line or headers, bad
    /// chunked framing, an HTTP/2 protocol error).
    Protocol,
}

impl ErrorClass {
    /// Every class, in report order.
    pub const ALL: [ErrorClass; 4] = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Reset,
        ErrorClass::Protocol,
    ];

    /// Lower-case name, as in the reports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Reset => "reset",
            ErrorClass::Protocol => "protocol",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The life of a request that got a complete response (any status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// When the tool started on it (before connecting, if it had to).
    pub sent: Instant,
    /// Time to connect (TCP), or `None` on a reused connection (ab counts 0
    /// there).
    pub connect: Option<Duration>,
    /// The TLS handshake this request's connection made, when it opened one
    /// over TLS.
    pub handshake: Option<Handshake>,
    /// The request was fully written.
    pub written: Instant,
    /// The first byte of the response arrived.
    pub first_byte: Instant,
    /// The response was complete.
    pub done: Instant,
    /// Final status code.
    pub status: u16,
    /// Bytes of the response head (status line and headers).
    pub head_bytes: u64,
    /// Bytes after the head (the body, with any chunked framing).
    pub body_bytes: u64,
    /// Bytes of the request written (head and body).
    pub request_bytes: u64,
    /// The connection stayed open for another request afterwards.
    pub kept_alive: bool,
    /// The `Server` header, captured only when the recorder asked for it.
    pub server: Option<String>,
}

/// A TLS handshake, after the TCP connect and before the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// From the end of the TCP connect to the end of the handshake.
    pub time: Duration,
    /// The session was resumed (rustls' `HandshakeKind::Resumed`); else it
    /// was full (with or without a HelloRetryRequest).
    pub resumed: bool,
}

/// What became of one ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A complete response.
    Response(Sample),
    /// No complete response.
    Failed {
        /// Why.
        class: ErrorClass,
        /// When the tool started on it, if it got that far.
        sent: Option<Instant>,
        /// When the failure was noticed.
        at: Instant,
    },
}

impl Outcome {
    /// A request that failed after it was sent at `sent`, noticed now.
    pub(crate) fn failed(class: ErrorClass, sent: Instant) -> Outcome {
        Outcome::Failed {
            class,
            sent: Some(sent),
            at: Instant::now(),
        }
    }

    /// A request whose deadline had passed before it could be sent (at
    /// `now`): a timeout that never reached the wire.
    pub(crate) fn too_late(now: Instant) -> Outcome {
        Outcome::Failed {
            class: ErrorClass::Timeout,
            sent: None,
            at: now,
        }
    }
}
