//! The access record: everything one log line can say about one request.

use std::borrow::Cow;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

/// One served request, as the server saw it.
///
/// The server fills one in when a response body ends (or is dropped) and
/// hands it to [`AccessLog::log`](crate::AccessLog::log). [`parse`](crate::parse)
/// gives one back; fields the line's format does not carry come back as
/// `None`, zero or empty (see [`LogFormat`](crate::LogFormat)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRecord {
    /// When the request arrived.
    pub time: SystemTime,
    /// The client's address; `None` for Unix-socket clients (written `-`).
    /// Never a host name: tern does no reverse lookups.
    pub remote: Option<IpAddr>,
    /// The client's port, when it has one.
    pub remote_port: Option<u16>,
    /// The authenticated user; `None` (written `-`) when there is none. An
    /// empty name is written `-` as well, so it parses back as `None`.
    pub user: Option<String>,
    /// The request method as received.
    pub method: String,
    /// The request target as received (path and query).
    pub target: String,
    /// `HTTP/1.1`, `HTTP/2.0`.
    pub protocol: String,
    /// The response status code.
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// The Referer header; `None` when the request had none.
    pub referer: Option<String>,
    /// The User-Agent header; `None` when the request had none.
    pub user_agent: Option<String>,
    /// The Host header (or HTTP/2 `:authority`).
    pub host: Option<String>,
    /// From arrival to the last byte sent.
    pub duration: Duration,
    /// The id the server gave the request (written as 16 hex digits).
    pub request_id: u64,
    /// The TLS version (`TLSv1.3`) of a request over TLS; JSON only.
    pub tls_protocol: Option<Cow<'static, str>>,
    /// The TLS cipher suite's IANA name of a request over TLS; JSON only.
    pub tls_cipher: Option<Cow<'static, str>>,
}
