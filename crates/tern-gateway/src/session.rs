//! One running script, driven by a task of its own: the request body fed
//! to its stdin, its stdout read into the CGI core's `Assembler` (which
//! parses the head and says when the body is answered whole or streamed
//! as it comes), its stderr logged, its silence timed, and its end
//! awaited: it exits by itself, or its process group is stopped (timeout,
//! client gone, bad output, failed upload).
//!
//! All of it is one `select!` loop, so stdin and stdout are pumped at the
//! same time: a script that writes more than a pipe buffer before it reads
//! its body does not deadlock (Apache's mod_cgi writes the whole body
//! first and stalls on such a script until its timeout). The task outlives
//! the handler's future: it owns the child until it is reaped, and the
//! concurrency slot until then.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tern_cgi::response::{Mode, Reply};
use tern_cgi::{Assembler, Delivery, HeadError, Step};
use tern_handler::RequestId;
use tokio::io::AsyncReadExt as _;
use tokio::process::{ChildStderr, ChildStdout};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use tokio::time::Instant;

use crate::input::{self, Feed};
use crate::output::{held_back, room, Chunk, Look, OutputBody, Watch, IN_FLIGHT};
use crate::spawn::Running;
use crate::Error;

/// Bytes asked for per read of stdout: a whole pipe buffer.
pub(crate) const READ_SIZE: usize = 64 * 1024;

/// How long after its head a script's output is gathered before the
/// response starts (see [`Assembler`]). Most scripts are done by then: a
/// small one exits microseconds after its last write. A streaming
/// script's first bytes wait this long; later ones go out as they come.
pub(crate) const SETTLE: Duration = Duration::from_millis(2);

/// How long a script whose stdout ended has to exit before it is stopped,
/// when its head was incomplete (the 502 waits for the exit status, which
/// says whether it crashed).
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// Longest stderr line logged as one record; longer ones are split.
const MAX_LINE: usize = 4096;

/// What the task needs to know about the request.
#[derive(Debug)]
pub(crate) struct ScriptSettings {
    pub(crate) id: RequestId,
    /// The script's file, for log lines.
    pub(crate) script: Arc<str>,
    pub(crate) mode: Mode,
    /// HEAD: the body is read and dropped.
    pub(crate) discard_body: bool,
    /// Longest silence before the script is stopped: nothing written to
    /// its stdout, nothing fed to its stdin, no client holding it back.
    pub(crate) timeout: Duration,
    /// How long the client may hold the script back taking nothing.
    pub(crate) send_timeout: Duration,
    /// Bytes of stderr logged.
    pub(crate) max_stderr: u64,
    /// A script still running this long is logged once, with its pid and
    /// the phase it is in (its stderr lines are logged as they come,
    /// tagged with the same request id).
    pub(crate) slow: Option<Duration>,
}

/// How the body reaches the client.
#[derive(Debug)]
pub(crate) enum Output {
    /// The script had finished writing: all of it, in the pieces it was
    /// read in ([`Delivery::Whole`]).
    Whole(Vec<Bytes>),
    /// It streams as the script writes.
    Stream(OutputBody),
    /// HEAD, or a local redirect: nothing.
    Discarded,
}

/// The head, or why there is none.
pub(crate) type Started = Result<(Reply, Output), Error>;

/// Why the main loop ended.
#[derive(Debug)]
enum End {
    /// stdout reached EOF after a complete head, or the body the length
    /// the script gave.
    Eof,
    /// stdout reached EOF short of the length the script gave, once the
    /// answer streamed.
    Short,
    /// stdout reached EOF before the head was complete.
    Truncated(HeadError),
    Timeout,
    /// The client took none of the output for `send_timeout`.
    Stalled,
    ClientGone,
    BadHead(HeadError),
    Read(io::Error),
}

/// Drives the script to its end. `started` gets the head (or the error
/// the client should see); `slot` is released when the script is reaped.
pub(crate) async fn drive(
    running: Running,
    feed: Feed,
    s: ScriptSettings,
    started: oneshot::Sender<Started>,
    slot: OwnedSemaphorePermit,
) {
    let Running {
        mut child,
        group,
        stdin,
        mut stdout,
        stderr,
    } = running;
    let progress = AtomicU64::new(0);
    let feeding = input::feed(stdin, feed, &progress);
    let logging = log_stderr(stderr, &s);
    tokio::pin!(feeding, logging);
    let (mut fed, mut logged) = (false, false);
    let mut start = Some(started);
    let mut assembler = Assembler::new(s.mode, SETTLE, s.discard_body).honour_length();
    let mut tx: Option<mpsc::Sender<Chunk>> = None;
    let mut buf = BytesMut::new();
    let silence = tokio::time::sleep(s.timeout);
    let settle = tokio::time::sleep(SETTLE);
    tokio::pin!(silence, settle);
    let mut watch = Watch::default();
    // Set inside the select (where `tx` is borrowed by the read), moved
    // into `tx` before the next one.
    let mut opened: Option<mpsc::Sender<Chunk>> = None;
    let mut slow: Option<Pin<Box<tokio::time::Sleep>>> =
        s.slow.map(|d| Box::pin(tokio::time::sleep(d)));

    let end = loop {
        if let Some(t) = opened.take() {
            tx = Some(t);
        }
        tokio::select! {
            () = &mut feeding, if !fed => fed = true,
            () = async { slow.as_mut().expect("guarded").as_mut().await }, if slow.is_some() => {
                slow = None;
                let phase = slow_phase(fed, start.is_none());
                let pid = child.id().map_or_else(|| "?".to_owned(), |p| p.to_string());
                tracing::warn!(
                    id = %s.id,
                    script = %s.script,
                    "cgi: slow request: still running after {:?} as pid {pid}, {phase}; its stderr lines carry the same id",
                    s.slow.unwrap_or_default()
                );
            }
            () = &mut logging, if !logged => logged = true,
            () = client_gone(&mut start, tx.as_ref()), if start.is_some() || tx.is_some() => {
                break End::ClientGone;
            }
            (read, permit) = read_output(&mut stdout, &mut buf, tx.as_ref()) => {
                let n = match read {
                    Read::Data(n) => n,
                    Read::Eof => match assembler.end() {
                        Step::Fail(e) => break End::Truncated(e),
                        Step::Respond(reply, whole) => {
                            respond(reply, whole, &mut start, None);
                            break End::Eof;
                        }
                        Step::Short => break End::Short,
                        _ => break End::Eof,
                    },
                    Read::Gone => break End::ClientGone,
                    Read::Failed(e) => break End::Read(e),
                };
                progress.fetch_add(n as u64, Ordering::Relaxed);
                match assembler.push(buf.split().freeze()) {
                    Step::Read => {}
                    Step::Settle(d) => settle.as_mut().reset(Instant::now() + d),
                    Step::Respond(reply, delivery) => {
                        // Whole before the output ended: at the length
                        // the script gave, and the rest is not waited for.
                        let whole = matches!(delivery, Delivery::Whole(_));
                        opened = respond(reply, delivery, &mut start, assembler.left());
                        if whole {
                            break End::Eof;
                        }
                    }
                    Step::Forward(data) => {
                        if let Some(p) = permit {
                            p.send(Ok(data));
                        }
                    }
                    Step::Last(data) => {
                        if let Some(p) = permit {
                            p.send(Ok(data));
                        }
                        break End::Eof;
                    }
                    Step::Short => break End::Short,
                    Step::Fail(e) => break End::BadHead(e),
                }
            }
            () = &mut settle, if assembler.settling() => {
                if let Step::Respond(reply, delivery) = assembler.settled() {
                    opened = respond(reply, delivery, &mut start, assembler.left());
                }
            }
            () = &mut silence => {
                let progress = progress.load(Ordering::Relaxed);
                match watch.look(progress, held_back(tx.as_ref()), s.timeout, s.send_timeout) {
                    Look::Going => {}
                    Look::Silent => break End::Timeout,
                    Look::Stalled => break End::Stalled,
                }
                silence.as_mut().reset(Instant::now() + s.timeout);
            }
        }
    };

    let fail = |e: Error| Err::<(Reply, Output), Error>(e);
    if let End::Short = end {
        let why = "its output ended short of the Content-Length it gave";
        cut_off(tx.take(), &s, why);
    }
    match end {
        End::Eof | End::Short => {
            // A complete response: end the stream, then wait for the exit
            // (still feeding stdin and logging stderr meanwhile).
            drop(tx);
            silence.as_mut().reset(Instant::now() + s.timeout);
            let status = loop {
                tokio::select! {
                    st = child.wait() => break st.ok(),
                    _ = &mut feeding, if !fed => fed = true,
                    () = &mut logging, if !logged => logged = true,
                    () = &mut silence => break None,
                }
            };
            match status {
                Some(st) => {
                    group.release();
                    if !logged {
                        finish_stderr(logging.as_mut()).await;
                    }
                    if !st.success() {
                        tracing::warn!(id = %s.id, script = %s.script, "cgi: the script ended with {st}");
                    }
                }
                None => {
                    tracing::warn!(id = %s.id, script = %s.script, "cgi: the script closed its output but did not exit within {:?}; stopping it", s.timeout);
                    group.stop(&mut child).await;
                }
            }
        }
        End::Truncated(e) => {
            let status = tokio::time::timeout(EXIT_WAIT, child.wait()).await;
            if !logged {
                finish_stderr(logging.as_mut()).await;
            }
            match status {
                Ok(Ok(st)) => {
                    group.release();
                    tracing::warn!(id = %s.id, script = %s.script, "cgi: the script ended ({st}) before its header was complete");
                }
                _ => group.stop(&mut child).await,
            }
            send(start, fail(Error::from(e)));
        }
        End::Timeout => {
            send(start, fail(Error::Timeout(s.timeout)));
            cut_off(tx, &s, "no output within the timeout");
            group.stop(&mut child).await;
        }
        End::Stalled => {
            cut_off(
                tx,
                &s,
                "the client took none of the output within send_timeout",
            );
            group.stop(&mut child).await;
        }
        End::ClientGone => {
            tracing::info!(id = %s.id, script = %s.script, "cgi: the client left; stopping the script");
            group.stop(&mut child).await;
        }
        End::BadHead(e) => {
            send(start, fail(Error::from(e)));
            group.stop(&mut child).await;
        }
        End::Read(e) => {
            cut_off(tx, &s, "reading the script's output failed");
            send(start, fail(Error::Io(e)));
            group.stop(&mut child).await;
        }
    }
    drop(slot);
}

pub(crate) fn send(to: Option<oneshot::Sender<Started>>, what: Started) {
    if let Some(to) = to {
        let _ = to.send(what);
    }
}

/// Ends a stream that had started with an error, so that the client sees
/// a broken response (no final chunk, or a reset stream) rather than a
/// short one that looks complete.
pub(crate) fn cut_off(tx: Option<mpsc::Sender<Chunk>>, s: &ScriptSettings, why: &str) {
    cut_off_stream(tx, s.id, &s.script, "cgi", why);
}

/// As [`cut_off`], for any gateway kind. The error goes after the chunks
/// already in flight; where they fill the channel (a client that holds the
/// output back) a task waits to put it there, until that client takes
/// them or leaves, so that the response never ends as if it were whole.
pub(crate) fn cut_off_stream(
    tx: Option<mpsc::Sender<Chunk>>,
    id: RequestId,
    script: &str,
    kind: &str,
    why: &str,
) {
    let Some(tx) = tx else {
        return;
    };
    tracing::warn!(%id, %script, "{kind}: response cut off: {why}");
    let err = io::Error::new(io::ErrorKind::TimedOut, why.to_owned());
    if let Err(mpsc::error::TrySendError::Full(err)) = tx.try_send(Err(err)) {
        tokio::spawn(async move {
            let _ = tx.send(err).await;
        });
    }
}

/// Resolves when whoever waits for the script is gone: the handler's
/// future (before the head) or the response body (after it).
///
/// # Cancel safety
/// Cancel safe: it only watches.
pub(crate) async fn client_gone(
    start: &mut Option<oneshot::Sender<Started>>,
    tx: Option<&mpsc::Sender<Chunk>>,
) {
    match (start, tx) {
        (Some(s), _) => s.closed().await,
        (None, Some(t)) => t.closed().await,
        (None, None) => std::future::pending().await,
    }
}

enum Read {
    Data(usize),
    Eof,
    Gone,
    Failed(io::Error),
}

/// One read of stdout into `buf`. While streaming it first takes room in
/// the channel, so a slow client slows the script down (its pipe fills)
/// instead of tern buffering without bound.
///
/// # Cancel safety
/// Cancel safe: a cancelled reserve or read loses nothing.
async fn read_output<'a>(
    stdout: &mut ChildStdout,
    buf: &mut BytesMut,
    tx: Option<&'a mpsc::Sender<Chunk>>,
) -> (Read, Option<mpsc::Permit<'a, Chunk>>) {
    let Ok(permit) = room(tx).await else {
        return (Read::Gone, None);
    };
    buf.reserve(READ_SIZE);
    let read = match stdout.read_buf(buf).await {
        Ok(0) => Read::Eof,
        Ok(n) => Read::Data(n),
        Err(e) => Read::Failed(e),
    };
    (read, permit)
}

/// Gives whoever waits for the head its answer. A streamed body comes
/// through a channel that starts with the bytes gathered so far; its
/// sender, for the rest of the output, is returned.
pub(crate) fn respond(
    reply: Reply,
    delivery: Delivery,
    start: &mut Option<oneshot::Sender<Started>>,
    left: Option<u64>,
) -> Option<mpsc::Sender<Chunk>> {
    let (output, tx) = match delivery {
        Delivery::Whole(b) => (Output::Whole(b), None),
        Delivery::Discarded => (Output::Discarded, None),
        Delivery::Stream(first) => {
            let length = left.map(|l| l + first.len() as u64);
            let (tx, rx) = mpsc::channel(IN_FLIGHT);
            if !first.is_empty() {
                let _ = tx.try_send(Ok(first));
            }
            (Output::Stream(OutputBody::new(rx, length)), Some(tx))
        }
    };
    send(start.take(), Ok((reply, output)));
    tx
}

/// Logs the script's stderr line by line (see [`StderrLog`]).
///
/// # Cancel safety
/// Not cancel safe (a partial line is lost); polled to completion.
async fn log_stderr(mut stderr: ChildStderr, s: &ScriptSettings) {
    let mut log = StderrLog::new(s.id, s.script.clone(), "cgi", s.max_stderr);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => log.push(&chunk[..n]),
        }
    }
    log.finish();
}

/// A worker's stderr on its way to the error log: line by line, tagged
/// with the request id and the script, up to a cap; the rest is dropped
/// (one line says so), so a flood costs a bounded amount of log and
/// memory and never blocks the worker.
#[derive(Debug)]
pub(crate) struct StderrLog {
    id: RequestId,
    script: Arc<str>,
    kind: &'static str,
    max: u64,
    line: Vec<u8>,
    logged: u64,
    full: bool,
    /// The last line logged, for a slow request's report.
    last: String,
}

impl StderrLog {
    pub(crate) fn new(id: RequestId, script: Arc<str>, kind: &'static str, max: u64) -> Self {
        StderrLog {
            id,
            script,
            kind,
            max,
            line: Vec::new(),
            logged: 0,
            full: false,
            last: String::new(),
        }
    }

    /// The last line logged, if any.
    pub(crate) fn last(&self) -> Option<&str> {
        (!self.last.is_empty()).then_some(self.last.as_str())
    }

    /// Takes the next bytes of stderr.
    pub(crate) fn push(&mut self, mut rest: &[u8]) {
        if self.full {
            return;
        }
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(&rest[..i]);
            self.emit(line.strip_suffix(b"\r").unwrap_or(&line));
            line.clear();
            self.line = line;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        while self.line.len() >= MAX_LINE {
            let head: Vec<u8> = self.line.drain(..MAX_LINE).collect();
            self.emit(&head);
        }
        if self.full {
            self.line = Vec::new();
        }
    }

    /// Logs what is left of the last line.
    pub(crate) fn finish(&mut self) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.emit(&line);
        }
    }

    fn emit(&mut self, line: &[u8]) {
        if self.full {
            return;
        }
        let (id, script, kind) = (self.id, &self.script, self.kind);
        if self.logged + line.len() as u64 > self.max {
            self.full = true;
            tracing::warn!(%id, %script, "{kind} stderr: more than {} bytes; the rest is dropped", self.max);
            return;
        }
        self.logged += line.len() as u64;
        let text = printable(line);
        tracing::warn!(%id, %script, "{kind} stderr: {text}");
        self.last = text;
    }
}

/// Where a slow request is, for its log line: `fed` the whole body to
/// the script, `answered` the head to the client.
pub(crate) fn slow_phase(fed: bool, answered: bool) -> &'static str {
    if !fed {
        "sending it the request body"
    } else if !answered {
        "waiting for its response head"
    } else {
        "streaming its response"
    }
}

/// What remains in stderr once the script exited: usually its EOF at once;
/// a descendant still holding the pipe is not waited for long.
async fn finish_stderr(logging: Pin<&mut impl std::future::Future<Output = ()>>) {
    let _ = tokio::time::timeout(Duration::from_millis(100), logging).await;
}

/// A log-safe rendering of a stderr line: control characters (an escape
/// sequence, a CR that would overwrite the line) are shown escaped.
fn printable(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return text.into_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_stderr_are_escaped() {
        assert_eq!(printable(b"plain\ttext"), "plain\ttext");
        assert_eq!(printable(b"a\x1b[31mred\rb"), "a\\u{1b}[31mred\\rb");
    }
}
