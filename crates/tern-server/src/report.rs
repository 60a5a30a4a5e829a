//! Why a connection ended, in one log line: the timeout that closed it, a
//! request head that was too large or malformed, or an error below HTTP.
//! And the read of a connection's first bytes that may end it.

use bytes::BytesMut;
use tern_handler::ConnInfo;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::timeout::{Activity, Expired};

/// Reads more of a connection's first bytes into `buf`: `false` when the
/// connection is over (the client left, the server is stopping, or an
/// error, reported here).
pub(crate) async fn read_first<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
    conn: &ConnInfo,
    activity: &Activity,
    cancel: &CancellationToken,
) -> bool {
    // The read first: a connection's first bytes are there at once, as a
    // rule, and the stop is then never waited for (a waiter put on the
    // token's list and taken off again, per connection).
    let read = tokio::select! {
        biased;
        r = io.read_buf(buf) => r,
        () = cancel.cancelled() => return false,
    };
    match read {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => {
            report(&e, conn, activity.expired());
            false
        }
    }
}

/// One log line for a connection that ended with an error, naming the cause.
pub(crate) fn report(
    e: &(dyn std::error::Error + Send + Sync + 'static),
    conn: &ConnInfo,
    expired: Option<Expired>,
) {
    match expired {
        Some(Expired::Idle) => return,
        Some(Expired::HeaderRead) => {
            tracing::warn!(peer = %conn.peer, "connection closed: the client did not send a request head within header_read_timeout");
            return;
        }
        Some(Expired::Send) => {
            tracing::warn!(peer = %conn.peer, "connection closed: the client did not read its answer within send_timeout");
            return;
        }
        None => {}
    }
    if let Some(he) = find_hyper(e) {
        if he.is_parse_too_large() {
            tracing::warn!(peer = %conn.peer, "431: request head larger than max_header_bytes or more than max_headers fields");
        } else if he.is_parse() {
            tracing::warn!(peer = %conn.peer, "400: malformed request: {he}");
        } else if he.is_incomplete_message() || he.is_canceled() || he.is_closed() {
            tracing::debug!(peer = %conn.peer, "connection ended early: {he}");
        } else if he.is_timeout() {
            tracing::warn!(peer = %conn.peer, "connection timed out: {he}");
        } else {
            tracing::debug!(peer = %conn.peer, "connection error: {he}");
        }
        return;
    }
    tracing::debug!(peer = %conn.peer, "connection error: {e}");
}

fn find_hyper<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a hyper::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return Some(h);
        }
        cur = err.source();
    }
    None
}
