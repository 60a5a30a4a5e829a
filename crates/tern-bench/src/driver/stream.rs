//! Opening a connection to an endpoint: TCP (TCP_NODELAY), then, for an
//! `https://` endpoint, the TLS handshake, each timed on its own. Both the
//! HTTP/1.1 and the HTTP/2 client read and write the [`Stream`] this gives.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::result::TlsSession;
use crate::sample::{ErrorClass, Handshake};

/// A resolved host and port, and how to speak TLS to it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// `None` when the host did not resolve: every request is a connect
    /// error, not a crash.
    pub(crate) addr: Option<SocketAddr>,
    /// For an `https://` endpoint: the run's client configuration and the
    /// name sent as SNI and verified.
    pub(crate) tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
}

/// A connection as the HTTP clients see it.
#[derive(Debug)]
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// A new connection and what opening it cost.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) stream: Stream,
    /// The TCP connect.
    pub(crate) connect: Duration,
    /// The TLS handshake, on an `https://` endpoint.
    pub(crate) handshake: Option<Handshake>,
}

/// Why a connection could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The TCP connect failed (or the host did not resolve).
    Connect(io::Error),
    /// The TLS handshake failed (an untrusted certificate, a version or
    /// ALPN the server refuses, a reset).
    Handshake(io::Error),
}

impl OpenError {
    /// How the request that needed the connection failed.
    pub(crate) fn class(&self) -> ErrorClass {
        ErrorClass::Connect
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Connect(e) => write!(f, "connect: {e}"),
            OpenError::Handshake(e) => write!(f, "TLS handshake failed: {e}"),
        }
    }
}

/// Connects to `endpoint` and, for TLS, completes the handshake.
///
/// # Cancel safety
/// Dropping the future drops the half-open connection; nothing else is lost.
pub(crate) async fn open(endpoint: &Endpoint) -> Result<Opened, OpenError> {
    let addr = endpoint.addr.ok_or_else(|| {
        OpenError::Connect(io::Error::new(
            io::ErrorKind::NotFound,
            "the host did not resolve",
        ))
    })?;
    let began = Instant::now();
    let tcp = TcpStream::connect(addr).await.map_err(OpenError::Connect)?;
    // Requests are written whole; never wait for Nagle.
    let _ = tcp.set_nodelay(true);
    let connected = Instant::now();
    let connect = connected - began;
    let Some((config, name)) = &endpoint.tls else {
        return Ok(Opened {
            stream: Stream::Plain(tcp),
            connect,
            handshake: None,
        });
    };
    let tls = TlsConnector::from(Arc::clone(config))
        .connect(name.clone(), tcp)
        .await
        .map_err(OpenError::Handshake)?;
    let resumed = tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    Ok(Opened {
        stream: Stream::Tls(Box::new(tls)),
        connect,
        handshake: Some(Handshake {
            time: connected.elapsed(),
            resumed,
        }),
    })
}

impl Stream {
    /// What a TLS stream negotiated; `None` in plain text. The server name
    /// is the caller's to fill in (rustls does not say what SNI it sent).
    pub(crate) fn tls_session(&self) -> Option<TlsSession> {
        let Stream::Tls(s) = self else { return None };
        let conn = s.get_ref().1;
        let protocol = match conn.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_owned(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_owned(),
            other => format!("{other:?}"),
        };
        let cipher = conn.negotiated_cipher_suite()?.suite();
        Some(TlsSession {
            protocol,
            cipher: cipher
                .as_str()
                .map_or_else(|| format!("{cipher:?}"), str::to_owned),
            group: conn
                .negotiated_key_exchange_group()
                .map(|g| format!("{:?}", g.name())),
            server_name: None,
        })
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
