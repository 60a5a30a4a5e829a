//! The FastCGI client connection driven directly (start, send, finish,
//! next, reunite) against the test application `tern-fcgi-app`, started
//! on a listening socket passed as its fd 0, over Unix sockets and TCP on
//! 127.0.0.1. The helpers here serve the php-fpm and fcgiwrap tests too.

use std::net::TcpListener;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Stdio};

use tern_cgi::env::{EnvInput, ScriptVars};
use tern_config::EnvPolicy;
use tern_gateway::fastcgi::conn::{self, StartBody};
use tern_gateway::fastcgi::socket::{self, Address, Socket};
use tern_gateway::fastcgi::{Decoder, DecoderConfig, Params, Record, Side, Stream};
use tern_gateway::persist::{Broken, Downstream as _, Event, Upstream as _};
use tern_handler::{ConnInfo, PeerAddr};

use super::*;

/// Every exchange and connect in these tests ends within this.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);

/// A process started in a process group of its own. On drop the group
/// gets SIGTERM, so that a manager (php-fpm) reaps its workers, then
/// SIGKILL if the leader still runs after 5 s; the leader is reaped.
pub(crate) struct Group {
    child: Child,
}

impl Group {
    pub(crate) fn spawn(cmd: &mut Command) -> Group {
        let child = cmd
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        Group { child }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited (reaping it if so).
    pub(crate) fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        use rustix::process::{kill_process_group, Pid, Signal};
        let group = Pid::from_raw(self.child.id() as i32).unwrap();
        let _ = kill_process_group(group, Signal::TERM);
        let end = Instant::now() + Duration::from_secs(5);
        while !self.exited() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = kill_process_group(group, Signal::KILL);
        let _ = self.child.wait();
    }
}

/// `tern-fcgi-app` serving a listening socket it got as fd 0.
pub(crate) struct App {
    pub(crate) addr: Address,
    pub(crate) process: Group,
    _dir: tempfile::TempDir,
}

impl App {
    fn start(listener: OwnedFd, addr: Address, dir: tempfile::TempDir) -> App {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tern-fcgi-app"));
        cmd.stdin(Stdio::from(listener)).stdout(Stdio::null());
        App {
            addr,
            process: Group::spawn(&mut cmd),
            _dir: dir,
        }
    }

    /// On a Unix socket in a temporary directory.
    pub(crate) fn unix() -> App {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        let listener = UnixListener::bind(&path).unwrap();
        App::start(listener.into(), Address::Unix(path), dir)
    }

    /// On 127.0.0.1, a port the kernel picks.
    pub(crate) fn tcp() -> App {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = Address::Tcp(listener.local_addr().unwrap().to_string());
        App::start(listener.into(), addr, tempfile::tempdir().unwrap())
    }

    pub(crate) async fn connect(&self) -> Socket {
        socket::connect(&self.addr, LIMIT).await.unwrap()
    }
}

/// The CGI environment of a request for `target` as PARAMS, as the
/// FastCGI handler builds it; `script` is SCRIPT_FILENAME.
pub(crate) fn cgi_env(method: &str, target: &str, body_len: Option<u64>, script: &Path) -> Params {
    let (parts, ()) = http::Request::builder()
        .method(method)
        .uri(target)
        .header("host", "test.example")
        .body(())
        .unwrap()
        .into_parts();
    let conn = ConnInfo {
        peer: PeerAddr::Tcp("127.0.0.1:40000".parse().unwrap()),
        local: PeerAddr::Tcp("127.0.0.1:8080".parse().unwrap()),
        secure: false,
        tls: None,
    };
    let script_name = parts.uri.path().to_owned();
    Params::build(&EnvInput {
        request: &parts,
        conn: &conn,
        script: ScriptVars {
            script_name: &script_name,
            script_filename: script,
            path_info: "",
            document_root: script.parent().unwrap(),
        },
        content_length: body_len,
        policy: &EnvPolicy::default(),
        inherited: &[],
    })
    .unwrap()
}

/// A GET for `target` with no body.
pub(crate) fn get(target: &str) -> Params {
    cgi_env("GET", target, None, Path::new("/srv/app"))
}

/// What came back for one request.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    pub(crate) stderr_events: usize,
    /// The app status, or why the connection broke.
    pub(crate) end: Result<u32, Broken>,
    /// The connection for the next request, when [`conn::reunite`] gave
    /// it back.
    pub(crate) reused: Option<Socket>,
}

impl Answer {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The body: what follows the head's blank line.
    pub(crate) fn body(&self) -> &[u8] {
        let at = find(&self.stdout, b"\r\n\r\n")
            .map(|i| i + 4)
            .or_else(|| find(&self.stdout, b"\n\n").map(|i| i + 2))
            .expect("a response head");
        &self.stdout[at..]
    }

    pub(crate) fn status(&self) -> u32 {
        match &self.end {
            Ok(status) => *status,
            Err(e) => panic!("the request broke: {e}; stdout {:?}", self.text()),
        }
    }
}

pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Runs one request: `body` at the start, then `pieces` through the
/// upstream (and `finish`) while the downstream is read, as the driver
/// pumps both at once.
pub(crate) async fn exchange(
    sock: Socket,
    env: &Params,
    body: StartBody,
    pieces: Vec<Bytes>,
) -> Answer {
    let run = async {
        let (mut up, mut down) = conn::start(sock, env, body).await.unwrap();
        let send = async {
            for piece in pieces {
                up.send(piece).await?;
            }
            up.finish().await
        };
        let receive = async {
            let mut answer = Answer {
                stdout: Vec::new(),
                stderr: Vec::new(),
                stderr_events: 0,
                end: Ok(0),
                reused: None,
            };
            answer.end = loop {
                match down.next().await {
                    Ok(Event::Stdout(b)) => answer.stdout.extend_from_slice(&b),
                    Ok(Event::Stderr(b)) => {
                        answer.stderr_events += 1;
                        answer.stderr.extend_from_slice(&b);
                    }
                    Ok(Event::End { app_status }) => break Ok(app_status),
                    Err(e) => break Err(e),
                }
            };
            answer
        };
        let (sent, mut answer) = tokio::join!(send, receive);
        if answer.end.is_ok() {
            sent.expect("sending the body");
            answer.reused = conn::reunite(up, down);
        }
        answer
    };
    tokio::time::timeout(LIMIT, run)
        .await
        .expect("the request took longer than the limit")
}

/// `n` bytes that are not all alike, so a misplaced piece shows.
pub(crate) fn pattern(n: usize) -> Bytes {
    (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into()
}

#[tokio::test]
async fn hello_over_a_unix_socket_and_the_connection_comes_back() {
    let app = App::unix();
    let a = exchange(
        app.connect().await,
        &get("/hello"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert_eq!(a.status(), 0);
    assert_eq!(a.text(), "Content-Type: text/plain\r\n\r\nHello!\n");
    assert!(
        a.reused.is_some(),
        "a cleanly ended request keeps its connection"
    );
}

#[tokio::test]
async fn hello_over_tcp() {
    let app = App::tcp();
    let a = exchange(
        app.connect().await,
        &get("/hello"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert_eq!(a.body(), b"Hello!\n");
    assert!(a.reused.is_some());
}

#[tokio::test]
async fn keep_conn_carries_two_requests_to_the_same_process() {
    for app in [App::unix(), App::tcp()] {
        let mut first = exchange(app.connect().await, &get("/pid"), StartBody::Empty, vec![]).await;
        let again = first.reused.take().expect("the connection back");
        let second = exchange(again, &get("/pid"), StartBody::Empty, vec![]).await;
        assert_eq!(first.body(), second.body());
        assert_eq!(first.body(), format!("{}\n", app.process.pid()).as_bytes());
        assert!(second.reused.is_some());
    }
}

#[tokio::test]
async fn a_whole_body_of_1_mb_comes_back() {
    let app = App::unix();
    let body = pattern(1 << 20);
    let env = cgi_env("POST", "/echo", Some(1 << 20), Path::new("/srv/app"));
    let a = exchange(
        app.connect().await,
        &env,
        StartBody::Whole(body.clone()),
        vec![],
    )
    .await;
    assert!(a.text().contains("X-Body-Length: 1048576\r\n"));
    assert!(a.body() == &body[..], "the body came back changed");
    assert!(a.reused.is_some());
}

#[tokio::test]
async fn a_streamed_body_of_1_mb_comes_back() {
    let app = App::tcp();
    let body = pattern(1 << 20);
    // Pieces of odd sizes, one larger than a record.
    let pieces: Vec<Bytes> = [1usize, 70_000, 300_001]
        .into_iter()
        .cycle()
        .scan(0usize, |at, len| {
            let start = *at;
            *at = (start + len).min(body.len());
            (start < body.len()).then(|| body.slice(start..*at))
        })
        .collect();
    let env = cgi_env("POST", "/echo", Some(1 << 20), Path::new("/srv/app"));
    let a = exchange(app.connect().await, &env, StartBody::Streamed, pieces).await;
    assert!(a.body() == &body[..], "the body came back changed");
    assert!(a.reused.is_some());
}

#[tokio::test]
async fn a_streamed_body_without_a_length_is_ended_by_finish() {
    let app = App::unix();
    // No CONTENT_LENGTH: only `finish` can end STDIN.
    let a = exchange(
        app.connect().await,
        &get("/echo"),
        StartBody::Streamed,
        vec![Bytes::from_static(b"abc"), Bytes::from_static(b"def")],
    )
    .await;
    assert_eq!(a.body(), b"abcdef");
    assert!(a.reused.is_some());
}

#[tokio::test]
async fn an_empty_body_still_ends_stdin() {
    let app = App::unix();
    let post = cgi_env("POST", "/echo", Some(0), Path::new("/srv/app"));
    for body in [
        StartBody::Empty,
        StartBody::Streamed,
        StartBody::Whole(Bytes::new()),
    ] {
        // `exchange` fails the test if the application waits for more.
        let a = exchange(app.connect().await, &post, body, vec![]).await;
        assert!(a.text().contains("X-Body-Length: 0\r\n"), "{}", a.text());
    }
}

#[tokio::test]
async fn a_body_longer_than_content_length_is_refused() {
    let app = App::unix();
    let env = cgi_env("POST", "/echo", Some(3), Path::new("/srv/app"));
    let (mut up, _down) = conn::start(app.connect().await, &env, StartBody::Streamed)
        .await
        .unwrap();
    let err = up.send(Bytes::from_static(b"four")).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(up.finish().await.is_err(), "the stream is out of step now");
}

#[tokio::test]
async fn the_environment_arrives_as_params() {
    let app = App::unix();
    let env = cgi_env("POST", "/env?a=b", Some(2), Path::new("/srv/env"));
    let a = exchange(
        app.connect().await,
        &env,
        StartBody::Whole("hi".into()),
        vec![],
    )
    .await;
    let text = a.text();
    for line in [
        "REQUEST_METHOD=POST",
        "REQUEST_URI=/env?a=b",
        "QUERY_STRING=a=b",
        "CONTENT_LENGTH=2",
        "SCRIPT_FILENAME=/srv/env",
        "HTTP_HOST=test.example",
        "GATEWAY_INTERFACE=CGI/1.1",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
    assert_eq!(text.lines().filter(|l| l.contains('=')).count(), env.len());
}

#[tokio::test]
async fn stderr_streams_out_as_events_beside_the_response() {
    let app = App::unix();
    let a = exchange(
        app.connect().await,
        &get("/stderr?300000"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert_eq!(a.stderr.len(), 300_000);
    assert!(a.stderr.iter().all(|&b| b == b'e'));
    assert!(
        a.stderr_events >= 5,
        "{} events: no record is above 64 KiB",
        a.stderr_events
    );
    assert_eq!(a.body(), b"wrote 300000 bytes to stderr\n");
    assert!(a.reused.is_some());
}

#[tokio::test]
async fn a_64k_body_and_a_200k_head_line_arrive_whole() {
    let app = App::tcp();
    let a = exchange(app.connect().await, &get("/64k"), StartBody::Empty, vec![]).await;
    assert_eq!(a.body(), &[b'k'; 65536][..]);
    let b = exchange(
        a.reused.unwrap(),
        &get("/big-head"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert!(b.stdout.len() > 200_000);
    assert_eq!(b.body(), b"Hello!\n");
}

#[tokio::test]
async fn the_status_line_is_the_applications() {
    let app = App::unix();
    let a = exchange(
        app.connect().await,
        &get("/status?404"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert!(a.text().starts_with("Status: 404\r\n"), "{}", a.text());
}

#[tokio::test]
async fn a_crash_mid_response_is_closed() {
    let app = App::unix();
    let a = exchange(
        app.connect().await,
        &get("/crash"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert!(matches!(a.end, Err(Broken::Closed)), "{:?}", a.end);
    assert!(
        a.text().contains("X-Partial: yes"),
        "the part before the crash came"
    );
}

#[tokio::test]
async fn a_malformed_record_is_a_protocol_error() {
    let app = App::unix();
    let a = exchange(
        app.connect().await,
        &get("/bad-record"),
        StartBody::Empty,
        vec![],
    )
    .await;
    match a.end {
        Err(Broken::Protocol(why)) => assert!(why.contains("version 2"), "{why}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn bytes_after_end_request_keep_the_connection_from_reuse() {
    let app = App::unix();
    let a = exchange(
        app.connect().await,
        &get("/after-end"),
        StartBody::Empty,
        vec![],
    )
    .await;
    assert_eq!(a.status(), 0);
    assert_eq!(a.body(), b"Hello!\n");
    assert!(a.reused.is_none(), "a stray record followed END_REQUEST");
}

#[tokio::test]
async fn a_connection_the_application_closed_is_found_closed_before_reuse() {
    let mut app = App::unix();
    let run = async {
        let sock = app.connect().await;
        let (up, mut down) = conn::start(sock, &get("/exit-after"), StartBody::Empty)
            .await
            .unwrap();
        let mut events = Vec::new();
        loop {
            let event = down.next().await.unwrap();
            let end = matches!(event, Event::End { .. });
            events.push(event);
            if end {
                break;
            }
        }
        (up, down)
    };
    let (up, down) = tokio::time::timeout(LIMIT, run).await.unwrap();
    eventually("the application to exit", || app.process.exited()).await;
    let back = conn::reunite(up, down).expect("the response ended in step");
    assert!(!back.still_open());
}

#[tokio::test]
async fn a_request_given_up_on_is_not_reused() {
    let app = App::unix();
    let (up, mut down) = conn::start(app.connect().await, &get("/hang"), StartBody::Empty)
        .await
        .unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(200), down.next()).await;
    assert!(waited.is_err(), "a hanging application sent {waited:?}");
    assert!(conn::reunite(up, down).is_none());
}

#[tokio::test]
async fn next_is_cancel_safe() {
    let app = App::unix();
    let sock = app.connect().await;
    let (_up, mut down) = conn::start(sock, &get("/stream?6"), StartBody::Empty)
        .await
        .unwrap();
    let mut stdout = Vec::new();
    let mut cancelled = 0;
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(Instant::now() < deadline, "no end within the limit");
        // Chunks come 50 ms apart: most of these waits are cut short.
        let event = tokio::select! {
            e = down.next() => e.unwrap(),
            () = tokio::time::sleep(Duration::from_millis(7)) => {
                cancelled += 1;
                continue;
            }
        };
        match event {
            Event::Stdout(b) => stdout.extend_from_slice(&b),
            Event::End { .. } => break,
            Event::Stderr(_) => panic!("no stderr expected"),
        }
    }
    assert!(cancelled > 6, "only {cancelled} waits were cut short");
    let text = String::from_utf8(stdout).unwrap();
    let chunks: Vec<&str> = text.lines().filter(|l| l.starts_with("chunk")).collect();
    assert_eq!(
        chunks,
        ["chunk 0", "chunk 1", "chunk 2", "chunk 3", "chunk 4", "chunk 5"]
    );
}

#[tokio::test]
async fn get_values_reports_one_request_at_a_time() {
    for app in [App::unix(), App::tcp()] {
        let sock = app.connect().await;
        let names = [
            "FCGI_MAX_CONNS",
            "FCGI_MAX_REQS",
            "FCGI_MPXS_CONNS",
            "FCGI_UNKNOWN",
        ];
        let (sock, mut values) = conn::get_values(sock, &names, LIMIT).await.unwrap();
        values.sort();
        let want = [
            ("FCGI_MAX_CONNS", "1"),
            ("FCGI_MAX_REQS", "1"),
            ("FCGI_MPXS_CONNS", "0"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(values, want);
        // The connection still carries a request afterwards.
        let a = exchange(sock, &get("/hello"), StartBody::Empty, vec![]).await;
        assert_eq!(a.body(), b"Hello!\n");
    }
}

#[tokio::test]
async fn connect_errors_name_the_address() {
    let dir = tempfile::tempdir().unwrap();
    let addr = Address::Unix(dir.path().join("nobody.sock"));
    let err = socket::connect(&addr, LIMIT).await.unwrap_err();
    assert!(err.to_string().contains("nobody.sock"), "{err}");
}

/// Reads what arrives in one read, as records.
fn one_read(s: &mut std::os::unix::net::UnixStream) -> Vec<Record> {
    let mut chunk = vec![0u8; 1 << 20];
    let n = tern_testkit::read_some(s, &mut chunk).unwrap();
    let mut buf = bytes::BytesMut::from(&chunk[..n]);
    let mut dec = Decoder::new(DecoderConfig {
        side: Side::Application,
        ..DecoderConfig::default()
    });
    let mut out = Vec::new();
    while let Some(r) = dec.decode(&mut buf).unwrap() {
        out.push(r);
    }
    assert!(buf.is_empty(), "a record was split across writes");
    out
}

/// The stream a record belongs to and its length; `None` for others.
fn stream_of(r: &Record) -> Option<(Stream, usize)> {
    match r {
        Record::Stream {
            stream, content, ..
        } => Some((*stream, content.len())),
        _ => None,
    }
}

/// The 40 ms rule: nothing small ever follows another write on its own.
/// A peer that reads as soon as anything arrives sees the whole head with
/// its body in one read, and the last streamed piece with the empty
/// STDIN.
#[tokio::test]
async fn the_head_goes_in_one_write_and_the_last_piece_carries_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("peer.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // Two connections: one read of the first, three of the second.
    let peer = std::thread::spawn(move || {
        for reads in [1, 3] {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(LIMIT)).unwrap();
            for _ in 0..reads {
                tx.send(one_read(&mut s)).unwrap();
            }
        }
    });
    let addr = Address::Unix(path);
    let recv = || rx.recv_timeout(LIMIT).expect("the peer's read");

    let post = cgi_env("POST", "/x", Some(5), Path::new("/srv/x"));
    let (_up, _down) = conn::start(
        socket::connect(&addr, LIMIT).await.unwrap(),
        &post,
        StartBody::Whole("hello".into()),
    )
    .await
    .unwrap();
    let head = recv();
    assert!(matches!(head[0], Record::BeginRequest { .. }));
    let tail: Vec<_> = head[head.len() - 3..].iter().map(stream_of).collect();
    assert_eq!(
        tail,
        [
            Some((Stream::Params, 0)),
            Some((Stream::Stdin, 5)),
            Some((Stream::Stdin, 0))
        ]
    );

    let (mut up, _down) = conn::start(
        socket::connect(&addr, LIMIT).await.unwrap(),
        &post,
        StartBody::Streamed,
    )
    .await
    .unwrap();
    let head = recv();
    assert_eq!(stream_of(head.last().unwrap()), Some((Stream::Params, 0)));
    up.send(Bytes::from_static(b"hel")).await.unwrap();
    assert_eq!(
        recv().iter().map(stream_of).collect::<Vec<_>>(),
        [Some((Stream::Stdin, 3))]
    );
    up.send(Bytes::from_static(b"lo")).await.unwrap();
    let last = recv().iter().map(stream_of).collect::<Vec<_>>();
    assert_eq!(last, [Some((Stream::Stdin, 2)), Some((Stream::Stdin, 0))]);
    up.finish().await.unwrap();
    peer.join().unwrap();
}
