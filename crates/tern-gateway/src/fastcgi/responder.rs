//! A small synchronous FastCGI responder, the application's side: for
//! tern's demo and the test application (`tern-fcgi-app`). libfcgi, in
//! Rust and without its C.
//!
//! It serves a listening socket: the one on fd 0 ([`serve_fd0`], the
//! FastCGI convention when a process manager spawns the application), or
//! one given ([`serve`]). One connection at a time, its requests in
//! order; each request is read whole (PARAMS and STDIN in memory) before
//! [`Respond::respond`] runs. Like libfcgi it
//! - honours KEEP_CONN: without the flag it closes the connection after
//!   the response;
//! - answers FCGI_GET_VALUES (MAX_CONNS=1, MAX_REQS=1, MPXS_CONNS=0), a
//!   management record of a type it does not know with UNKNOWN_TYPE, a
//!   second request while one is open with CANT_MPX_CONN, and a role other
//!   than Responder with UNKNOWN_ROLE;
//! - buffers output and ends a request with one write: the last STDOUT,
//!   the empty STDOUT, STDERR (with its empty record) only if it was
//!   used, and END_REQUEST. Separate small writes there would invite the
//!   40 ms stall described in [`super`].

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};

use bytes::{Bytes, BytesMut};

use super::{
    encode, parse_pairs, Connection, Decoder, DecoderConfig, ProtocolStatus, Record, RecordType,
    RequestId, Role, Side, Stream, HEADER_LEN, MAX_CONTENT_LEN,
};

/// Output is sent as records once this much is buffered.
const OUTPUT_BUFFER: usize = MAX_CONTENT_LEN;

/// The most PARAMS bytes a request may carry; beyond it the connection is
/// closed. nginx and Apache limit request heads to well below this.
const MAX_PARAMS_LEN: usize = 1024 * 1024;

/// One request, read whole.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The CGI variables, in the order they came.
    pub params: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body.
    pub stdin: Vec<u8>,
    /// The server asked to keep the connection after the response
    /// (KEEP_CONN).
    pub keep_conn: bool,
}

impl Request {
    /// The value of the variable `name`, if sent.
    pub fn param(&self, name: &str) -> Option<&[u8]> {
        self.params
            .iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| v.as_slice())
    }
}

/// What answers requests.
pub trait Respond {
    /// Answers `req` through `out`. An error closes the connection without
    /// ending the request (the client sees the connection close).
    fn respond(&mut self, req: &Request, out: &mut Output<'_>) -> io::Result<()>;
}

impl<F> Respond for F
where
    F: FnMut(&Request, &mut Output<'_>) -> io::Result<()>,
{
    fn respond(&mut self, req: &Request, out: &mut Output<'_>) -> io::Result<()> {
        self(req, out)
    }
}

/// A listening socket to serve.
#[derive(Debug)]
pub enum Listener {
    /// A Unix-domain socket.
    Unix(UnixListener),
    /// A TCP socket; accepted connections get TCP_NODELAY.
    Tcp(TcpListener),
}

impl Listener {
    /// The listening socket on fd 0 (`FCGI_LISTENSOCK_FILENO`), Unix or
    /// TCP. fd 0 itself stays open; this is a duplicate.
    pub fn from_fd0() -> io::Result<Self> {
        let fd = io::stdin().as_fd().try_clone_to_owned()?;
        // getsockname tells the family: std's TCP listener refuses to
        // report a Unix socket's address.
        let tcp = TcpListener::from(fd);
        if tcp.local_addr().is_ok() {
            return Ok(Self::Tcp(tcp));
        }
        let unix = UnixListener::from(OwnedFd::from(tcp));
        unix.local_addr().map_err(|e| {
            io::Error::new(e.kind(), format!("fd 0 is not a listening socket: {e}"))
        })?;
        Ok(Self::Unix(unix))
    }

    fn accept(&self) -> io::Result<Conn> {
        match self {
            Self::Unix(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok(Conn::Unix(s))
            }
            Self::Tcp(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                Ok(Conn::Tcp(s))
            }
        }
    }

    fn set_blocking(&self) -> io::Result<()> {
        match self {
            Self::Unix(l) => l.set_nonblocking(false),
            Self::Tcp(l) => l.set_nonblocking(false),
        }
    }
}

impl From<UnixListener> for Listener {
    fn from(l: UnixListener) -> Self {
        Self::Unix(l)
    }
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Self {
        Self::Tcp(l)
    }
}

/// Serves the listening socket on fd 0, forever.
pub fn serve_fd0(r: impl Respond) -> io::Result<()> {
    serve(Listener::from_fd0()?, r)
}

/// Serves `listener`, one connection at a time, forever. Returns only when
/// accepting fails for a reason other than a connection aborted before it
/// was accepted.
pub fn serve(listener: impl Into<Listener>, mut r: impl Respond) -> io::Result<()> {
    let listener = listener.into();
    // A process manager may hand over a non-blocking socket; this loop
    // blocks on purpose.
    listener.set_blocking()?;
    loop {
        let mut conn = match listener.accept() {
            Ok(conn) => conn,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        // A broken connection is the client's loss only: serve the next.
        let _ = serve_conn(&mut conn, &mut r);
    }
}

/// An accepted connection, blocking.
#[derive(Debug)]
enum Conn {
    Unix(UnixStream),
    Tcp(std::net::TcpStream),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.read(buf),
            Self::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write(buf),
            Self::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Requests on one connection until the client closes it, a request
/// without KEEP_CONN is answered, or something breaks.
fn serve_conn(conn: &mut Conn, r: &mut impl Respond) -> io::Result<()> {
    let mut reader = Reader::new();
    while let Some(incoming) = reader.request(conn)? {
        let mut out = Output::new(conn, incoming.id);
        r.respond(&incoming.request, &mut out)?;
        out.finish(0)?;
        if incoming.connection == Connection::Close || out.close {
            return Ok(());
        }
    }
    Ok(())
}

/// A request as it is read.
#[derive(Debug)]
struct Incoming {
    id: RequestId,
    connection: Connection,
    params: Vec<u8>,
    params_ended: bool,
    request: Request,
}

/// Takes requests off a connection, answering management records and
/// refusals on the way.
#[derive(Debug)]
struct Reader {
    buf: BytesMut,
    chunk: Vec<u8>,
    decoder: Decoder,
}

impl Reader {
    fn new() -> Self {
        Self {
            buf: BytesMut::new(),
            chunk: vec![0; 64 * 1024],
            decoder: Decoder::new(DecoderConfig {
                side: Side::Application,
                ..DecoderConfig::default()
            }),
        }
    }

    /// The next whole request, or `None` when the client closed the
    /// connection between requests (or aborted the open one on a
    /// connection it does not keep).
    fn request(&mut self, conn: &mut Conn) -> io::Result<Option<Incoming>> {
        let mut open: Option<Incoming> = None;
        loop {
            let Some(record) = self.record(conn)? else {
                return match open {
                    None => Ok(None),
                    Some(_) => Err(io::ErrorKind::UnexpectedEof.into()),
                };
            };
            let mut reply = BytesMut::new();
            match record {
                Record::GetValues(names) => {
                    let pairs = names
                        .iter()
                        .filter_map(|n| value_of(n).map(|v| (&n[..], v)));
                    encode::get_values_result(&mut reply, pairs).map_err(io::Error::other)?;
                }
                Record::BeginRequest { id, .. } if open.is_some() => {
                    encode::end_request(&mut reply, id, 0, ProtocolStatus::CantMpxConn);
                }
                Record::BeginRequest {
                    id,
                    role: Role::Responder,
                    connection,
                } => {
                    open = Some(Incoming {
                        id,
                        connection,
                        params: Vec::new(),
                        params_ended: false,
                        request: Request {
                            keep_conn: connection == Connection::Keep,
                            ..Request::default()
                        },
                    });
                }
                Record::BeginRequest { id, .. } => {
                    encode::end_request(&mut reply, id, 0, ProtocolStatus::UnknownRole);
                }
                Record::AbortRequest { id } if open.as_ref().is_some_and(|o| o.id == id) => {
                    encode::end_request(&mut reply, id, 0, ProtocolStatus::RequestComplete);
                    conn.write_all(&reply)?;
                    if open
                        .take()
                        .is_some_and(|o| o.connection == Connection::Close)
                    {
                        return Ok(None);
                    }
                    continue;
                }
                Record::Stream {
                    id,
                    stream,
                    content,
                } => {
                    // Records of refused or aborted requests are dropped.
                    let Some(o) = open.as_mut().filter(|o| o.id == id) else {
                        continue;
                    };
                    if o.take(stream, &content)? {
                        return Ok(open);
                    }
                }
                _ => {}
            }
            if !reply.is_empty() {
                conn.write_all(&reply)?;
            }
        }
    }

    /// The next record, or `None` at the end of the connection. A
    /// management record of a type FastCGI 1.0 lacks is answered with
    /// UNKNOWN_TYPE and skipped.
    fn record(&mut self, conn: &mut Conn) -> io::Result<Option<Record>> {
        loop {
            if let Some(code) = self.skip_unknown_management() {
                let mut reply = BytesMut::new();
                encode::unknown_type(&mut reply, code);
                conn.write_all(&reply)?;
                continue;
            }
            match self.decoder.decode(&mut self.buf) {
                Ok(Some(record)) => return Ok(Some(record)),
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            let n = match conn.read(&mut self.chunk) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            };
            if n == 0 {
                return match self.buf.is_empty() {
                    true => Ok(None),
                    false => Err(io::ErrorKind::UnexpectedEof.into()),
                };
            }
            self.buf.extend_from_slice(&self.chunk[..n]);
        }
    }

    /// Takes a whole record of an unknown type with request id 0 off the
    /// buffer, returning its type code.
    fn skip_unknown_management(&mut self) -> Option<u8> {
        let head = self.buf.first_chunk::<HEADER_LEN>()?;
        let (code, id) = (head[1], u16::from_be_bytes([head[2], head[3]]));
        if head[0] != super::VERSION_1 || RecordType::from_code(code).is_some() || id != 0 {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([head[4], head[5]]));
        let total = HEADER_LEN + len + usize::from(head[6]);
        if self.buf.len() < total {
            return None;
        }
        let _ = self.buf.split_to(total);
        Some(code)
    }
}

impl Incoming {
    /// Adds a stream record; `true` once PARAMS and STDIN have both ended.
    fn take(&mut self, stream: Stream, content: &[u8]) -> io::Result<bool> {
        match stream {
            Stream::Params if content.is_empty() => {
                self.params_ended = true;
                let joined = Bytes::from(std::mem::take(&mut self.params));
                let pairs = parse_pairs(&joined)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.request.params = pairs
                    .into_iter()
                    .map(|(n, v)| (n.to_vec(), v.to_vec()))
                    .collect();
            }
            Stream::Params => {
                if self.params.len() + content.len() > MAX_PARAMS_LEN {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "PARAMS longer than 1 MiB",
                    ));
                }
                self.params.extend_from_slice(content);
            }
            // The empty STDIN ends the request; PARAMS come first by the
            // spec, and an application waits for both.
            Stream::Stdin if content.is_empty() => return Ok(self.params_ended),
            Stream::Stdin => self.request.stdin.extend_from_slice(content),
            _ => {}
        }
        Ok(false)
    }
}

/// This application's answer to a GET_VALUES name, if it knows it: one
/// connection, one request at a time.
fn value_of(name: &[u8]) -> Option<&'static [u8]> {
    match name {
        b"FCGI_MAX_CONNS" | b"FCGI_MAX_REQS" => Some(b"1"),
        b"FCGI_MPXS_CONNS" => Some(b"0"),
        _ => None,
    }
}

/// A response on its way: STDOUT and STDERR, buffered. `write!` goes to
/// STDOUT.
#[derive(Debug)]
pub struct Output<'c> {
    conn: &'c mut Conn,
    id: RequestId,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    stderr_used: bool,
    finished: bool,
    close: bool,
}

impl<'c> Output<'c> {
    fn new(conn: &'c mut Conn, id: RequestId) -> Self {
        Self {
            conn,
            id,
            stdout: Vec::new(),
            stderr: Vec::new(),
            stderr_used: false,
            finished: false,
            close: false,
        }
    }

    /// The request's id, for records written with [`Output::write_raw`].
    pub fn request_id(&self) -> RequestId {
        self.id
    }

    /// Adds `bytes` to STDOUT; sent once a record's worth is buffered.
    pub fn stdout(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.check_open()?;
        self.stdout.extend_from_slice(bytes);
        self.send_if_full()
    }

    /// Adds `bytes` to STDERR; sent once a record's worth is buffered.
    pub fn stderr(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.check_open()?;
        self.stderr_used |= !bytes.is_empty();
        self.stderr.extend_from_slice(bytes);
        self.send_if_full()
    }

    /// Sends what is buffered now, as records, in one write.
    pub fn flush(&mut self) -> io::Result<()> {
        self.check_open()?;
        let mut out = BytesMut::new();
        self.drain_into(&mut out);
        self.send(&out)
    }

    /// Ends the request now: what is buffered, the empty STDOUT, the empty
    /// STDERR if STDERR was used, and END_REQUEST with `app_status`, in one
    /// write. Afterwards the responder may go on working (PHP's
    /// `fastcgi_finish_request`), but not write. A second call does
    /// nothing.
    pub fn finish(&mut self, app_status: u32) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        let mut out = BytesMut::new();
        self.drain_into(&mut out);
        encode::end_stream(&mut out, self.id, Stream::Stdout);
        if self.stderr_used {
            encode::end_stream(&mut out, self.id, Stream::Stderr);
        }
        encode::end_request(
            &mut out,
            self.id,
            app_status,
            ProtocolStatus::RequestComplete,
        );
        self.finished = true;
        self.send(&out)
    }

    /// Closes the connection after this response, even if the client
    /// asked to keep it.
    pub fn close_connection(&mut self) {
        self.close = true;
    }

    /// Sends what is buffered, then `bytes` as they are: for test
    /// applications that must break the protocol on purpose.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.flush()?;
        self.send(bytes)
    }

    fn check_open(&self) -> io::Result<()> {
        match self.finished {
            false => Ok(()),
            true => Err(io::Error::other("the request has finished")),
        }
    }

    fn send_if_full(&mut self) -> io::Result<()> {
        match self.stdout.len() + self.stderr.len() >= OUTPUT_BUFFER {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// Moves the buffered output into `out` as records.
    fn drain_into(&mut self, out: &mut BytesMut) {
        encode::stream(out, self.id, Stream::Stderr, &self.stderr);
        encode::stream(out, self.id, Stream::Stdout, &self.stdout);
        self.stderr.clear();
        self.stdout.clear();
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        match bytes.is_empty() {
            true => Ok(()),
            false => self.conn.write_all(bytes),
        }
    }
}

impl Write for Output<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stdout(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Output::flush(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's side of a socket pair to a responder on its own thread.
    fn pair(r: impl Respond + Send + 'static) -> (UnixStream, std::thread::JoinHandle<()>) {
        let (client, server) = UnixStream::pair().unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut r = r;
        let worker = std::thread::spawn(move || {
            let _ = serve_conn(&mut Conn::Unix(server), &mut r);
        });
        (client, worker)
    }

    /// Reads records until END_REQUEST or the end of the connection.
    fn records(client: &mut UnixStream) -> Vec<Record> {
        let mut dec = Decoder::new(DecoderConfig::default());
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            while let Some(r) = dec.decode(&mut buf).unwrap() {
                let end = matches!(r, Record::EndRequest { .. });
                out.push(r);
                if end {
                    return out;
                }
            }
            let n = tern_testkit::read_some(client, &mut chunk).unwrap();
            if n == 0 {
                return out;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn request(connection: Connection, body: &[u8]) -> BytesMut {
        let id = RequestId::ONE;
        let mut b = BytesMut::new();
        encode::begin_request(&mut b, id, Role::Responder, connection);
        encode::params(&mut b, id, [(&b"REQUEST_URI"[..], &b"/x"[..])]).unwrap();
        encode::end_stream(&mut b, id, Stream::Params);
        encode::stream(&mut b, id, Stream::Stdin, body);
        encode::end_stream(&mut b, id, Stream::Stdin);
        b
    }

    fn echo(req: &Request, out: &mut Output<'_>) -> io::Result<()> {
        out.stdout(req.param("REQUEST_URI").unwrap_or_default())?;
        out.stdout(b" ")?;
        out.stdout(&req.stdin)
    }

    #[test]
    fn a_small_response_is_one_write_and_keep_conn_keeps_the_connection() {
        let (mut client, worker) = pair(echo);
        for body in [&b"one"[..], b"two"] {
            client.write_all(&request(Connection::Keep, body)).unwrap();
            let got = records(&mut client);
            let want_out = [b"/x ", body].concat();
            assert_eq!(got.len(), 3, "{got:?}");
            assert!(
                matches!(&got[0], Record::Stream { stream: Stream::Stdout, content, .. } if content[..] == want_out[..])
            );
            assert!(
                matches!(&got[1], Record::Stream { stream: Stream::Stdout, content, .. } if content.is_empty())
            );
            assert!(matches!(
                got[2],
                Record::EndRequest {
                    protocol_status: ProtocolStatus::RequestComplete,
                    ..
                }
            ));
        }
        drop(client);
        worker.join().unwrap();
    }

    #[test]
    fn without_keep_conn_the_application_closes() {
        let (mut client, worker) = pair(echo);
        client.write_all(&request(Connection::Close, b"")).unwrap();
        assert_eq!(records(&mut client).len(), 3);
        worker.join().unwrap();
        assert_eq!(
            tern_testkit::read_some(&mut client, &mut [0; 8]).unwrap(),
            0
        );
    }

    #[test]
    fn management_records_are_answered() {
        let (mut client, worker) = pair(echo);
        let mut b = BytesMut::new();
        encode::get_values(
            &mut b,
            [&b"FCGI_MPXS_CONNS"[..], b"FCGI_NOPE", b"FCGI_MAX_REQS"],
        )
        .unwrap();
        // An unknown management type (200), a whole record of 3 bytes.
        b.extend_from_slice(&[1, 200, 0, 0, 0, 3, 5, 0, 1, 2, 3, 0, 0, 0, 0, 0]);
        client.write_all(&b).unwrap();
        let mut dec = Decoder::new(DecoderConfig::default());
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        while got.len() < 2 {
            let mut chunk = [0u8; 256];
            let n = tern_testkit::read_some(&mut client, &mut chunk).unwrap();
            assert_ne!(n, 0, "closed early");
            buf.extend_from_slice(&chunk[..n]);
            while let Some(r) = dec.decode(&mut buf).unwrap() {
                got.push(r);
            }
        }
        let pairs = |p: &[(&'static [u8], &'static [u8])]| {
            p.iter()
                .map(|(n, v)| (Bytes::from_static(n), Bytes::from_static(v)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            got[0],
            Record::GetValuesResult(pairs(&[
                (b"FCGI_MPXS_CONNS", b"0"),
                (b"FCGI_MAX_REQS", b"1")
            ]))
        );
        assert_eq!(got[1], Record::UnknownType(200));
        drop(client);
        worker.join().unwrap();
    }

    #[test]
    fn a_second_request_while_one_is_open_is_refused() {
        let (mut client, worker) = pair(echo);
        let two = RequestId::new(2).unwrap();
        let mut b = BytesMut::new();
        encode::begin_request(&mut b, RequestId::ONE, Role::Responder, Connection::Keep);
        encode::begin_request(&mut b, two, Role::Responder, Connection::Keep);
        encode::begin_request(&mut b, two, Role::Authorizer, Connection::Keep);
        client.write_all(&b).unwrap();
        let got = records(&mut client);
        assert_eq!(
            got,
            [Record::EndRequest {
                id: two,
                app_status: 0,
                protocol_status: ProtocolStatus::CantMpxConn
            }]
        );
        drop(client);
        worker.join().unwrap();
    }

    #[test]
    fn stderr_is_ended_only_when_used() {
        let (mut client, worker) = pair(|_: &Request, out: &mut Output<'_>| {
            out.stderr(b"warn")?;
            out.stdout(b"ok")
        });
        client.write_all(&request(Connection::Keep, b"")).unwrap();
        let got = records(&mut client);
        let kinds: Vec<_> = got
            .iter()
            .map(|r| match r {
                Record::Stream {
                    stream, content, ..
                } => format!("{stream:?}{}", content.len()),
                other => format!("{other:?}").chars().take(10).collect(),
            })
            .collect();
        assert_eq!(
            kinds,
            ["Stderr4", "Stdout2", "Stdout0", "Stderr0", "EndRequest"]
        );
        drop(client);
        worker.join().unwrap();
    }
}
