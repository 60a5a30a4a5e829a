//! HTTP/2, on hyper's client: over cleartext TCP with prior knowledge
//! (h2c), or over TLS where ALPN chose `h2`:
//! stream multiplexing, flow control and HPACK are worth a real
//! implementation. Several tasks (`--streams`) share one connection per
//! endpoint; the first to need it opens it, the rest wait for that.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::stream::{open, Endpoint};

use crate::plan::{RequestSpec, Target};
use crate::sample::{ErrorClass, Handshake, Outcome, Sample};

/// A request ready to send on HTTP/2 (cloned per send: hyper consumes it).
#[derive(Debug, Clone)]
pub(crate) struct H2Request {
    pub(crate) endpoint: usize,
    uri: http::Uri,
    method: http::Method,
    headers: HeaderMap,
    body: Bytes,
}

impl H2Request {
    pub(crate) fn new(endpoint: usize, target: &Target, spec: &RequestSpec) -> H2Request {
        let scheme = if target.tls { "https" } else { "http" };
        let uri = format!("{scheme}://{}{}", target.authority(), target.path)
            .parse()
            .unwrap_or_else(|_| http::Uri::from_static("/"));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(concat!("tern-bench/", env!("CARGO_PKG_VERSION"))),
        );
        for (name, value) in &spec.headers {
            // Connection-specific headers do not exist in HTTP/2. Invalid
            // names or values were refused when the arguments were parsed.
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                if !is_connection_header(&n) {
                    headers.insert(n, v);
                }
            }
        }
        H2Request {
            endpoint,
            uri,
            method: spec.method.clone(),
            headers,
            body: spec.body.clone(),
        }
    }

    fn build(&self) -> http::Request<Full<Bytes>> {
        let mut r = http::Request::new(Full::new(self.body.clone()));
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

fn is_connection_header(n: &HeaderName) -> bool {
    use http::header::{CONNECTION, HOST, TE, TRANSFER_ENCODING, UPGRADE};
    [CONNECTION, TE, TRANSFER_ENCODING, UPGRADE, HOST].contains(n) || n.as_str() == "keep-alive"
}

type Slot = Rc<tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>>;

/// The connections (one per endpoint) shared by the tasks of one `-c` slot.
#[derive(Debug, Clone)]
pub(crate) struct H2Pool {
    slots: Rc<Vec<Slot>>,
}

impl H2Pool {
    pub(crate) fn new(endpoints: usize) -> H2Pool {
        H2Pool {
            slots: Rc::new((0..endpoints).map(|_| Slot::default()).collect()),
        }
    }

    /// Sends one request on the endpoint's connection (opening it if needed).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the stream (hyper resets it); the
    /// connection stays usable by the other tasks.
    pub(crate) async fn exchange(
        &self,
        req: &H2Request,
        endpoint: &Endpoint,
        deadline: tokio::time::Instant,
        capture_server: bool,
    ) -> Outcome {
        let sent = Instant::now();
        if sent >= deadline.into_std() {
            return Outcome::too_late(sent);
        }
        let opened = tokio::time::timeout_at(deadline, self.sender(req.endpoint, endpoint)).await;
        let (mut sender, connect, handshake) = match opened {
            Err(_) => return Outcome::failed(ErrorClass::Timeout, sent),
            Ok(Err(class)) => return Outcome::failed(class, sent),
            Ok(Ok(pair)) => pair,
        };
        let written = Instant::now();
        let exchange = async {
            let resp = sender
                .send_request(req.build())
                .await
                .map_err(|e| classify(&e))?;
            let first_byte = Instant::now();
            let status = resp.status().as_u16();
            // HTTP/2 heads are HPACK-compressed; count them as their HTTP/1
            // text would be ("HTTP/2 200\r\n", "name: value\r\n", "\r\n").
            let head_bytes = 12
                + resp
                    .headers()
                    .iter()
                    .map(|(n, v)| n.as_str().len() + v.len() + 4)
                    .sum::<usize>()
                + 2;
            let server = capture_server
                .then(|| resp.headers().get(http::header::SERVER))
                .flatten()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let mut body = resp.into_body();
            let mut body_bytes = 0u64;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| classify(&e))?;
                if let Some(data) = frame.data_ref() {
                    body_bytes += data.len() as u64;
                }
            }
            Ok::<_, ErrorClass>((first_byte, status, head_bytes as u64, body_bytes, server))
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Err(_) => Outcome::failed(ErrorClass::Timeout, sent),
            Ok(Err(class)) => {
                if class != ErrorClass::Protocol {
                    // The connection is likely gone; let the next request reopen it.
                    self.slots[req.endpoint].lock().await.take();
                }
                Outcome::failed(class, sent)
            }
            Ok(Ok((first_byte, status, head_bytes, body_bytes, server))) => {
                Outcome::Response(Sample {
                    sent,
                    connect,
                    handshake,
                    written,
                    first_byte,
                    done: Instant::now(),
                    status,
                    head_bytes,
                    body_bytes,
                    request_bytes: req.body.len() as u64,
                    kept_alive: true,
                    server,
                })
            }
        }
    }

    /// A sender for the endpoint, and the connect time and TLS handshake if
    /// this call opened the connection.
    async fn sender(
        &self,
        index: usize,
        endpoint: &Endpoint,
    ) -> Result<
        (
            SendRequest<Full<Bytes>>,
            Option<Duration>,
            Option<Handshake>,
        ),
        ErrorClass,
    > {
        let mut slot = self.slots[index].lock().await;
        if let Some(s) = slot.as_ref() {
            if !s.is_closed() {
                return Ok((s.clone(), None, None));
            }
        }
        let opened = open(endpoint).await.map_err(|e| e.class())?;
        let (stream, connect, handshake) = (opened.stream, opened.connect, opened.handshake);
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| classify(&e))?;
        // The connection future ends when the connection does.
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        *slot = Some(sender.clone());
        Ok((sender, Some(connect), handshake))
    }
}

/// Classes a hyper error by what it says about the server.
fn classify(e: &hyper::Error) -> ErrorClass {
    if e.is_timeout() {
        return ErrorClass::Timeout;
    }
    if e.is_parse() || e.is_user() {
        return ErrorClass::Protocol;
    }
    if e.is_canceled() || e.is_closed() || e.is_incomplete_message() {
        return ErrorClass::Reset;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.downcast_ref::<std::io::Error>().is_some() {
            return ErrorClass::Reset;
        }
        source = s.source();
    }
    ErrorClass::Protocol
}
