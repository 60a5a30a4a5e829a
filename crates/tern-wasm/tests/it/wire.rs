//! Request bodies off a real connection: the handler behind a bare hyper
//! HTTP/1.1 server on 127.0.0.1, and a client writing raw bytes, so that
//! a body can be chunked, too large, or sent in parts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, PeerAddr, RequestBody, RequestId, RouteMatch, RoutePattern,
};
use tern_wasm::Wasm;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::{wat, Route};

/// Serves `h` on a new port, with a request body limit of `limit`.
async fn serve(h: Wasm, limit: u64) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((sock, peer)) = listener.accept().await {
            let h = h.clone();
            let svc =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let h = h.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let pace = tern_handler::BodyPace {
                            timeout: Duration::from_secs(20),
                            min_rate: 500,
                        };
                        let request = http::Request::from_parts(
                            parts,
                            RequestBody::incoming(body, limit, pace),
                        );
                        let path = DecodedPath::parse(request.uri().path()).unwrap();
                        let exchange = Exchange {
                            request,
                            path,
                            conn: Arc::new(ConnInfo {
                                peer: PeerAddr::Tcp(peer),
                                local: PeerAddr::Tcp(local),
                                secure: false,
                                tls: None,
                            }),
                            route: RouteMatch {
                                site: Arc::from("test"),
                                pattern: RoutePattern::Prefix(Arc::from("/app")),
                            },
                            id: RequestId(9),
                        };
                        Ok::<_, std::convert::Infallible>(h.call(exchange).await)
                    }
                });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(sock), svc)
                    .await;
            });
        }
    });
    local
}

/// Reads from `s` until `needle` has arrived; returns all that came.
async fn read_until(s: &mut TcpStream, got: &mut Vec<u8>, needle: &str) {
    let mut buf = [0u8; 16384];
    while !String::from_utf8_lossy(got).contains(needle) {
        let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no {needle:?} within 30 s: {:?}",
                    String::from_utf8_lossy(got)
                )
            })
            .unwrap();
        assert!(
            n > 0,
            "closed before {needle:?}: {:?}",
            String::from_utf8_lossy(got)
        );
        got.extend_from_slice(&buf[..n]);
    }
}

/// Sends `raw` and reads the response until the connection closes.
async fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(raw).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut got))
        .await
        .expect("no end within 30 s")
        .unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_body_is_read_whole_and_its_length_given() {
    let r = Route::new(&wat::env());
    let addr = serve(r.handler(), 1 << 20).await;
    let got = exchange(
        addr,
        b"POST /app HTTP/1.1\r\nHost: t\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("CONTENT_LENGTH=11\n"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_past_the_limit_is_413() {
    let r = Route::new(&wat::slurp());
    let addr = serve(r.handler(), 10).await;
    let got = exchange(
        addr,
        b"POST /app HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 20\r\n\r\n01234567890123456789",
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 413"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_cut_short_stops_the_module_instead_of_ending_its_input() {
    let r = Route::new(&wat::slurp());
    let addr = serve(r.handler(), 1 << 20).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\nhalf")
        .await
        .unwrap();
    // The client gives up: the module must not answer as if "half" were
    // the whole body.
    s.shutdown().await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut got)).await;
    let got = String::from_utf8_lossy(&got);
    assert!(!got.contains("200 OK"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_is_read_whole_before_the_module_runs() {
    let r = Route::new(&wat::echo());
    let addr = serve(r.handler(), 1 << 20).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /app HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 10\r\n\r\nhello",
    )
    .await
    .unwrap();
    // Half the body: no instance runs yet, so nothing is answered (a
    // client that sends slowly holds no instance).
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "answered before the body was whole: {early:?}"
    );
    s.write_all(b"world").await.unwrap();
    let mut got = Vec::new();
    read_until(&mut s, &mut got, "helloworld").await;
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
}
