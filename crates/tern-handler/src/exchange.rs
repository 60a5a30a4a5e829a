//! What a handler receives: the request, the connection it came on, the route
//! that chose the handler, and the request id that tags every log line.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::body::RequestBody;
use crate::path::DecodedPath;
use crate::pattern::RoutePattern;

/// A request's id, unique within one server process; shown in logs as 16
/// hex digits, the width the access log's `request_id` has, so that one
/// search finds a request in both logs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::RequestId;

    #[test]
    fn request_ids_have_the_access_logs_width() {
        assert_eq!(RequestId(0x4d2).to_string(), "00000000000004d2");
        assert_eq!(RequestId(u64::MAX).to_string(), "ffffffffffffffff");
    }
}

/// One end of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerAddr {
    /// A TCP peer (IPv4 or IPv6).
    Tcp(SocketAddr),
    /// A Unix-domain socket; peers on such sockets have no address. The path is
    /// the listener's (for the local end) or empty (for the peer).
    Unix(Arc<str>),
}

impl PeerAddr {
    /// The socket address of a TCP end, `None` for a Unix socket.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match self {
            PeerAddr::Tcp(a) => Some(*a),
            PeerAddr::Unix(_) => None,
        }
    }
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerAddr::Tcp(a) => write!(f, "{a}"),
            PeerAddr::Unix(p) if p.is_empty() => f.write_str("unix:"),
            PeerAddr::Unix(p) => write!(f, "unix:{p}"),
        }
    }
}

/// Facts about the connection a request arrived on. Shared by every request on
/// the connection.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    /// The client's end.
    pub peer: PeerAddr,
    /// The server's end (the listener's address for TCP).
    pub local: PeerAddr,
    /// Whether the connection is TLS.
    pub secure: bool,
    /// What the TLS handshake settled, on a TLS connection.
    pub tls: Option<TlsInfo>,
}

/// What a connection's TLS handshake settled: for the access log and the
/// variables CGI programs read (mod_ssl's `SSL_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsInfo {
    /// The host name the client asked for (SNI), lower case.
    pub sni: Option<Box<str>>,
    /// `TLSv1.2` or `TLSv1.3`.
    pub protocol: &'static str,
    /// The cipher suite's IANA name (`TLS_AES_128_GCM_SHA256`).
    pub cipher: &'static str,
    /// The protocol chosen by ALPN (`h2`, `http/1.1`), if any.
    pub alpn: Option<&'static str>,
    /// The client's certificate, verified, on a listener that asks for
    /// one and got one.
    pub client: Option<ClientCert>,
}

/// A verified client certificate, as mod_ssl names its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCert {
    /// The subject's distinguished name (`CN=alice,O=Example`).
    pub subject: Box<str>,
    /// The issuer's distinguished name.
    pub issuer: Box<str>,
    /// The serial number, upper-case hex.
    pub serial: Box<str>,
}

/// How the router chose the handler.
#[derive(Clone, Debug)]
pub struct RouteMatch {
    /// The site's name (its first host name, or `"default"`).
    pub site: Arc<str>,
    /// The route's path prefix that matched (`/` for the site's default
    /// route), or its extension.
    pub pattern: RoutePattern,
}

/// One request, as a handler gets it.
#[derive(Debug)]
pub struct Exchange {
    /// The request: method, URI, headers and a body bounded by the body limit.
    pub request: http::Request<RequestBody>,
    /// The request path, percent-decoded and normalised (see [`crate::path`]).
    /// Routing was done on this path; handlers map it, never the raw URI.
    pub path: DecodedPath,
    /// The connection it came on.
    pub conn: Arc<ConnInfo>,
    /// The route that chose this handler.
    pub route: RouteMatch,
    /// The id that tags this request's log lines.
    pub id: RequestId,
}

/// The user an access realm granted a request (by HTTP Basic, or a TLS
/// client certificate's subject): a request extension the authorize phase
/// sets, which CGI reads as `REMOTE_USER` and `AUTH_TYPE` and the access
/// log writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthUser {
    /// The user name, as the client sent it and the password file holds it.
    pub name: Arc<str>,
    /// The scheme that proved it (`Basic`, or `SSL` for a certificate).
    pub scheme: &'static str,
}

/// The request target as the client sent it, when rules rewrote the
/// request's (a request extension the rewrite phase sets): CGI's
/// `REQUEST_URI` stays what the client asked for, as in Apache and nginx,
/// while `SCRIPT_NAME`, `PATH_INFO` and `QUERY_STRING` follow the rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginalTarget(pub http::uri::PathAndQuery);

/// A local redirect (RFC 3875 §6.2.2) a handler does not follow itself,
/// because another route serves its target: a response extension. The
/// server runs the request again, as `parts` say (a GET without a body),
/// through its rewrite, route and authorize phases; the response it comes
/// with (a 302 to the target) is what a server that does not follow it
/// would send.
#[derive(Clone, Debug)]
pub struct InternalRedirect {
    /// The new request's head.
    pub parts: http::request::Parts,
    /// Its path, decoded.
    pub path: DecodedPath,
}

/// What a request made by a local redirect knows of the one before it (a
/// request extension): CGI's `REDIRECT_URL` and `REDIRECT_QUERY_STRING`,
/// and how many redirects led here, so that a loop across routes ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirected {
    /// The path of the request redirected from, as it was sent.
    pub url: String,
    /// Its query, if it had one.
    pub query: Option<String>,
    /// Local redirects this request has followed so far.
    pub hops: usize,
}

/// Local redirects one request may follow, across handlers and routes,
/// before it is answered 500 (a script redirecting to itself, or two to
/// each other).
pub const MAX_LOCAL_REDIRECTS: usize = 10;

/// Variables the site's rules set for the request's script (`set = { env
/// = {...} }`): a request extension the rewrite phase sets, which the CGI
/// environment adds after its own (a name tern sets itself never comes
/// from here: the configuration refuses it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptEnv(pub Vec<(String, String)>);
