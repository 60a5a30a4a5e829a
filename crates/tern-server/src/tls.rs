//! The TLS handshake of a connection on a TLS listener, in the connection's
//! own task (never the accept loop), under the header-read timeout that
//! `TimedIo` below it keeps from accept.
//!
//! The first byte read tells a TLS client (a handshake record, 22) from
//! one that spoke plain HTTP to this port; that one gets a 400 saying so,
//! as nginx answers, and the connection closes.

use std::sync::Arc;

use bytes::BytesMut;
use tern_handler::{ClientCert, ConnInfo, TlsInfo};
use tern_observe::metrics::Handshake;
use tern_observe::Observer;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_rustls::rustls::{HandshakeKind, ProtocolVersion, ServerConfig, ServerConnection};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::report::read_first;
use crate::rewind::Rewind;
use crate::timeout::{Activity, Expired, TimedIo};

/// The ALPN protocol of an ACME TLS-ALPN-01 validation (RFC 8737).
const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// A TLS record's first byte when it carries a handshake.
const HANDSHAKE_RECORD: u8 = 22;

const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Length: 51\r\n\
Connection: close\r\n\
\r\n\
This port speaks HTTPS: use https:// to reach it.\r\n";

/// Runs the handshake on `io` with `cfg`; on success records what it
/// settled in `conn` and gives the encrypted stream. `None` when the
/// connection is over (one log line says why, unless the client just
/// went away or the server is stopping).
pub(crate) async fn handshake<I>(
    io: TimedIo<I>,
    cfg: Arc<ServerConfig>,
    conn: &mut ConnInfo,
    activity: &Activity,
    cancel: &CancellationToken,
    observer: Option<&Observer>,
) -> Option<TlsStream<Rewind<TimedIo<I>>>>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let (stream, kind) = match settle(io, cfg, conn, activity, cancel).await {
        Settled::Secure(s) => {
            let kind = match s.get_ref().1.handshake_kind() {
                Some(HandshakeKind::Resumed) => Handshake::Resumed,
                _ => Handshake::Full,
            };
            (Some(s), Some(kind))
        }
        Settled::Validated => (None, Some(Handshake::Full)),
        Settled::Plain(mut io) => {
            // Counted before the answer goes out, so that whoever reads
            // the 400 and then the metrics finds the failure there.
            count(observer, Handshake::Failed);
            let _ = io.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = io.shutdown().await;
            return None;
        }
        Settled::Failed => (None, Some(Handshake::Failed)),
        Settled::Gone => (None, None),
    };
    if let Some(kind) = kind {
        count(observer, kind);
    }
    stream
}

fn count(observer: Option<&Observer>, kind: Handshake) {
    if let Some(o) = observer {
        o.metrics.tls_handshake(kind);
    }
}

/// How [`settle`] ended.
// Only ever a return value, moved once: boxing the stream would cost an
// allocation per connection for nothing.
#[allow(clippy::large_enum_variant)]
enum Settled<I> {
    /// The handshake finished: HTTP follows.
    Secure(TlsStream<Rewind<TimedIo<I>>>),
    /// An ACME TLS-ALPN-01 validation: the handshake was the answer.
    Validated,
    /// The client spoke plain HTTP: it gets a 400 saying so.
    Plain(TimedIo<I>),
    /// The handshake failed or was left unfinished.
    Failed,
    /// The server is stopping.
    Gone,
}

/// The handshake itself (see [`handshake`]).
async fn settle<I>(
    mut io: TimedIo<I>,
    cfg: Arc<ServerConfig>,
    conn: &mut ConnInfo,
    activity: &Activity,
    cancel: &CancellationToken,
) -> Settled<I>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut first = BytesMut::with_capacity(512);
    if !read_first(&mut io, &mut first, conn, activity, cancel).await {
        // A client that left before its first byte, or one that timed
        // out, counts as a failed handshake; a server stopping does not.
        return if cancel.is_cancelled() {
            Settled::Gone
        } else {
            Settled::Failed
        };
    }
    if first[0] != HANDSHAKE_RECORD {
        if first[0].is_ascii_alphabetic() {
            tracing::warn!(peer = %conn.peer, "400: plain HTTP request sent to a TLS listener");
            return Settled::Plain(io);
        }
        tracing::info!(peer = %conn.peer, "TLS handshake failed: the client did not start one");
        return Settled::Failed;
    }
    let mut io = Rewind::new(io);
    io.unread(first.freeze());
    let accepted = tokio::select! {
        r = TlsAcceptor::from(cfg).accept(io) => r,
        _ = cancel.cancelled() => return Settled::Gone,
    };
    match accepted {
        Ok(mut stream) if stream.get_ref().1.alpn_protocol() == Some(ACME_TLS_ALPN) => {
            // A TLS-ALPN-01 validation (RFC 8737): the handshake was the
            // answer; no HTTP follows.
            tracing::info!(peer = %conn.peer, sni = ?stream.get_ref().1.server_name(), "ACME TLS-ALPN-01 validation answered");
            let _ = stream.shutdown().await;
            Settled::Validated
        }
        Ok(stream) => {
            conn.secure = true;
            conn.tls = Some(info(stream.get_ref().1));
            Settled::Secure(stream)
        }
        Err(e) => {
            if activity.expired() == Some(Expired::HeaderRead) {
                tracing::warn!(peer = %conn.peer, "TLS handshake not finished within header_read_timeout");
            } else if e.kind() == std::io::ErrorKind::UnexpectedEof {
                tracing::debug!(peer = %conn.peer, "the client left during the TLS handshake");
            } else {
                // The client's doing (scanners, old clients, a wrong name):
                // nginx logs these at `info` too.
                tracing::info!(peer = %conn.peer, "TLS handshake failed: {e}");
            }
            Settled::Failed
        }
    }
}

/// What the handshake settled.
fn info(c: &ServerConnection) -> TlsInfo {
    TlsInfo {
        sni: c.server_name().map(Box::from),
        protocol: match c.protocol_version() {
            Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "TLS",
        },
        cipher: c
            .negotiated_cipher_suite()
            .and_then(|s| s.suite().as_str())
            .unwrap_or("unknown"),
        alpn: match c.alpn_protocol() {
            Some(b"h2") => Some("h2"),
            Some(b"http/1.1") => Some("http/1.1"),
            _ => None,
        },
        client: c
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|leaf| client_cert(leaf)),
    }
}

/// The parts of a client certificate rustls has verified.
fn client_cert(der: &[u8]) -> Option<ClientCert> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    Some(ClientCert {
        subject: cert.subject().to_string().into(),
        issuer: cert.issuer().to_string().into(),
        serial: cert
            .raw_serial_as_string()
            .replace(':', "")
            .to_uppercase()
            .into(),
    })
}
