//! A tiny HTTP/1.1 test server on 127.0.0.1 that counts connections and
//! requests and misbehaves on demand, by path:
//!
//! - `/`, `/a`, `/b`, ... : 200 with a 10-byte body (keep-alive honoured)
//! - `/size/N`            : 200 with an N-byte body
//! - `/chunked`           : 200, chunked body "hello world"
//! - `/slow/MS`           : answers after MS milliseconds
//! - `/404`               : 404 with a short body
//! - `/reset`             : reads the request, then resets the connection
//! - `/close`             : reads the request, then closes without answering
//! - `/hang`              : reads the request and never answers
//! - `/garbage`           : answers with something that is not HTTP
//! - `/short`             : closes the connection in the middle of the body
//! - `/then-close`        : answers with keep-alive, then closes the connection

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub by_path: Mutex<HashMap<String, u64>>,
    /// When each request arrived (complete head and body).
    pub arrivals: Mutex<Vec<Instant>>,
    /// Each request: its path, its connection (numbered from 1 in order of
    /// accept), and when it arrived.
    pub seen: Mutex<Vec<(String, u64, Instant)>>,
}

impl Stats {
    pub(crate) fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    pub(crate) fn path(&self, p: &str) -> u64 {
        self.by_path.lock().unwrap().get(p).copied().unwrap_or(0)
    }
}

pub(crate) struct TestServer {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub(crate) fn start() -> TestServer {
        Self::start_with(serve)
    }

    /// An HTTP/2 (h2c, prior knowledge) server on hyper: 200 "hello" on every
    /// path; counts connections and requests.
    pub(crate) fn start_h2() -> TestServer {
        Self::start_with(serve_h2)
    }

    /// Accepts on 127.0.0.1:0 in a thread of its own, counts connections, and
    /// hands each to `conn`.
    fn start_with<F, Fut>(conn: F) -> TestServer
    where
        F: Fn(TcpStream, Arc<Stats>, u64) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let stats = Arc::new(Stats::default());
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let st = Arc::clone(&stats);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => {
                            if let Ok((stream, _)) = accepted {
                                let id = st.connections.fetch_add(1, Ordering::SeqCst) + 1;
                                tokio::spawn(conn(stream, Arc::clone(&st), id));
                            }
                        }
                    }
                }
            });
            // Dropping the runtime cancels every connection task.
        });
        TestServer {
            addr,
            stats,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Stops accepting and drops every connection (a server that dies).
    pub(crate) fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn serve(mut stream: TcpStream, stats: Arc<Stats>, id: u64) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut filled = 0;
    loop {
        // Read one request head (and its Content-Length body).
        let (path, close, head_len, body_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            let parsed = req.parse(&buf[..filled]);
            if parsed.is_err() {
                // Not HTTP/1 (an HTTP/2 preface, say): answer as a real server would.
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
                return;
            }
            if let Ok(httparse::Status::Complete(n)) = parsed {
                let path = req.path.unwrap_or("/").to_owned();
                let mut close = req.version == Some(0);
                let mut body_len = 0usize;
                for h in req.headers.iter() {
                    if h.name.eq_ignore_ascii_case("connection")
                        && h.value.eq_ignore_ascii_case(b"close")
                    {
                        close = true;
                    }
                    if h.name.eq_ignore_ascii_case("content-length") {
                        body_len = std::str::from_utf8(h.value)
                            .unwrap()
                            .trim()
                            .parse()
                            .unwrap();
                    }
                }
                break (path, close, n, body_len);
            }
            match stream.read(&mut buf[filled..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        };
        while filled < head_len + body_len {
            match stream.read(&mut buf[filled..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        }
        buf.copy_within(head_len + body_len..filled, 0);
        filled -= head_len + body_len;
        stats.requests.fetch_add(1, Ordering::SeqCst);
        let now = Instant::now();
        stats.arrivals.lock().unwrap().push(now);
        stats.seen.lock().unwrap().push((path.clone(), id, now));
        *stats
            .by_path
            .lock()
            .unwrap()
            .entry(path.clone())
            .or_default() += 1;

        let conn_header = if close { "Connection: close\r\n" } else { "" };
        let ok = |body: &[u8]| {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nServer: tern-test/1\r\nContent-Length: {}\r\n{conn_header}\r\n",
                body.len()
            )
            .into_bytes();
            r.extend_from_slice(body);
            r
        };
        let response = match path.as_str() {
            "/reset" => {
                let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                return;
            }
            "/close" => return,
            "/hang" => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            "/garbage" => b"SSH-2.0-nonsense\r\n\r\n".to_vec(),
            "/short" => {
                // Promises 100 bytes, sends 10, closes.
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789").await;
                return;
            }
            "/then-close" => {
                // A keep-alive response, then the connection is closed as if
                // by an idle timeout: the next request on it meets EOF.
                let _ = stream.write_all(&ok(b"0123456789")).await;
                return;
            }
            "/404" => format!(
                "HTTP/1.1 404 Not Found\r\nServer: tern-test/1\r\nContent-Length: 9\r\n{conn_header}\r\nnot found"
            )
            .into_bytes(),
            "/chunked" => format!(
                "HTTP/1.1 200 OK\r\nServer: tern-test/1\r\nTransfer-Encoding: chunked\r\n{conn_header}\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
            .into_bytes(),
            p if p.starts_with("/size/") => ok(&vec![b'x'; p[6..].parse().unwrap()]),
            p if p.starts_with("/slow/") => {
                tokio::time::sleep(Duration::from_millis(p[6..].parse().unwrap())).await;
                ok(b"0123456789")
            }
            _ => ok(b"0123456789"),
        };
        if stream.write_all(&response).await.is_err() {
            return;
        }
        if close {
            return;
        }
    }
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
pub(crate) fn refused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// One HTTP/2 connection: 200 "hello" on every path, requests counted.
async fn serve_h2(stream: TcpStream, st: Arc<Stats>, _id: u64) {
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        st.requests.fetch_add(1, Ordering::SeqCst);
        *st.by_path
            .lock()
            .unwrap()
            .entry(req.uri().path().to_owned())
            .or_default() += 1;
        async move {
            let body = http_body_util::Full::new(bytes::Bytes::from_static(b"hello"));
            Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
        }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
        .serve_connection(io, service)
        .await;
}
