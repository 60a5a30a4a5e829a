//! One request through a persistent worker (a FastCGI connection, a
//! CGIplus process): the body pumped to it while its events are read —
//! the response head parsed, the body collected briefly and then streamed,
//! stderr logged — until the worker ends the response. What the driver
//! learns decides the worker's fate: [`Finish::Clean`] puts it back in
//! its pool, anything else discards it (its pool replaces it).
//!
//! It is the persistent twin of `session` (which drives a process per
//! request): both drive the CGI core's `Assembler` through its phases,
//! head, settling (so a small response leaves with a Content-Length in
//! one write), stream. A worker that ends the response while the head is
//! complete never waits for the settling timer: the end is the end.

use std::sync::Arc;
use std::time::Duration;

use std::pin::Pin;

use bytes::{Bytes, BytesMut};
use tern_cgi::response::Mode;
use tern_cgi::{Assembler, HeadError, Step};
use tern_handler::RequestId;
use tokio::io::AsyncReadExt as _;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Sleep;

use crate::output::{held_back, room, Chunk, Look, Watch};
use crate::persist::{Broken, Downstream, Event, Upstream};
use crate::session::{
    client_gone, cut_off_stream, respond, send, slow_phase, Started, StderrLog, SETTLE,
};
use crate::Error;

/// What the driver needs to know about the request.
#[derive(Debug, Clone)]
pub(crate) struct RelaySettings {
    pub(crate) id: RequestId,
    /// The script or application, for log lines.
    pub(crate) target: Arc<str>,
    /// "fastcgi" or "cgiplus", for log lines.
    pub(crate) kind: &'static str,
    /// HEAD: the body is read and dropped.
    pub(crate) discard_body: bool,
    /// Longest silence before the worker is given up.
    pub(crate) timeout: Duration,
    /// How long the client may hold the worker back taking nothing.
    pub(crate) send_timeout: Duration,
    /// Bytes of stderr logged.
    pub(crate) max_stderr: u64,
    /// The whole request went out with its head, so it can be sent again:
    /// a channel that closes before the worker answered anything ends the
    /// relay with [`Finish::Unanswered`], and the client is told nothing.
    pub(crate) replayable: bool,
    /// A request still running this long is logged once, with the phase
    /// it is in and the worker's last stderr line (php-fpm's slowlog).
    pub(crate) slow: Option<Duration>,
    /// The worker's process id, for that line.
    pub(crate) worker: Option<u32>,
}

/// The part of the request body the transport's start did not send.
#[derive(Debug)]
pub(crate) enum Rest {
    /// Nothing left: the body (if any) went with the head.
    Nothing,
    /// Spooled in memory.
    Memory(Bytes),
    /// Spooled to a file.
    File(std::fs::File),
}

/// How the worker came out of the request.
#[derive(Debug)]
pub(crate) enum Finish {
    /// It ended the response with the whole body taken: reusable.
    Clean,
    /// It cannot be trusted with another request (why, for the log).
    Dirty(Dirty),
    /// Its channel closed before it answered anything, and the request
    /// can be sent again ([`RelaySettings::replayable`]): nothing was told to
    /// the client; the caller decides where the request goes next.
    Unanswered(Broken),
}

/// Why a worker is not reused.
#[derive(Debug)]
pub(crate) enum Dirty {
    /// It broke: crashed, closed, or spoke out of turn (logged already).
    Broken,
    /// It said nothing for the timeout (hung).
    Silent,
    /// The request was abandoned part way (the client left, the body
    /// failed, the response ended before the body was all sent): the
    /// channel is out of step, but the worker did nothing wrong.
    Abandoned,
}

/// Why the loop ended.
enum End {
    Done,
    Broken(Broken),
    BadHead(HeadError),
    Timeout,
    /// The client took none of the output for `send_timeout`.
    Stalled,
    ClientGone,
    Input(Error),
}

/// Drives one request to its end. `started` gets the head (or the error
/// the client should see).
pub(crate) async fn relay<U: Upstream, D: Downstream>(
    up: &mut U,
    down: &mut D,
    rest: Rest,
    s: &RelaySettings,
    started: oneshot::Sender<Started>,
) -> Finish {
    let mut stderr = StderrLog::new(s.id, s.target.clone(), s.kind, s.max_stderr);
    let mut progress = 0u64;
    let feeding = feed(up, rest);
    tokio::pin!(feeding);
    let mut fed = false;
    let mut start = Some(started);
    let mut assembler = Assembler::new(Mode::Cgi, SETTLE, s.discard_body);
    let mut tx: Option<mpsc::Sender<Chunk>> = None;
    // Timers are made when needed and registered only when first polled:
    // the select below is biased, so neither is polled while the worker's
    // events are ready, and a response that ends with its head (most do)
    // never registers the settling timer at all. Registering a timer
    // earlier than the runtime's next wake-up costs a wake of the driver
    // (an eventfd write, also from the driver's own thread while it runs:
    // tokio-rs/tokio#5207). A 64 KB answer still pays it once; leaving
    // the timer out did not show in CPU per request (PERFORMANCE.md,
    // session 34).
    // The silence timer is the one the channel's last request left, when
    // it kept one: moved later, not made anew.
    let mut silence = match down.take_timer() {
        Some(mut t) => {
            t.as_mut().reset(tokio::time::Instant::now() + s.timeout);
            t
        }
        None => Box::pin(tokio::time::sleep(s.timeout)),
    };
    let mut settle: Option<Pin<Box<Sleep>>> = None;
    // The settling timer's length, until it is first waited on: an answer
    // whose end came in the read that began the settling (a "Hello!")
    // never makes one.
    let mut settle_for: Option<Duration> = None;
    let mut slow: Option<Pin<Box<Sleep>>> = s.slow.map(|d| Box::pin(tokio::time::sleep(d)));
    let mut watch = Watch::default();
    let mut opened: Option<mpsc::Sender<Chunk>> = None;
    // Anything at all came back from the worker.
    let mut heard = false;

    let end = 'relay: loop {
        if let Some(t) = opened.take() {
            tx = Some(t);
        }
        tokio::select! {
            biased;
            r = &mut feeding, if !fed => {
                fed = true;
                match r {
                    Ok(n) => progress += n,
                    Err(e) => break End::Input(e),
                }
            }
            () = client_gone(&mut start, tx.as_ref()), if start.is_some() || tx.is_some() => {
                break End::ClientGone;
            }
            (mut ev, mut permit) = next_event(down, tx.as_ref()) => {
                // This event, then those the same read brought, in one
                // pass: a 64 KB answer's nine records go round the loop
                // once, not nine times (the select's other branches wait
                // at most one read's worth of events).
                loop {
                    heard |= matches!(ev, Next::Event(_));
                    let data = match ev {
                        Next::Event(Event::Stdout(b)) => Some(b),
                        Next::Event(Event::Stderr(b)) => {
                            progress += b.len() as u64;
                            stderr.push(&b);
                            None
                        }
                        Next::Event(Event::End { app_status }) => {
                            if app_status != 0 {
                                tracing::debug!(id = %s.id, target = %s.target, "{}: application status {app_status}", s.kind);
                            }
                            match assembler.end() {
                                Step::Fail(e) => break 'relay End::BadHead(e),
                                Step::Respond(reply, whole) => {
                                    respond(reply, whole, &mut start, None);
                                }
                                _ => {}
                            }
                            break 'relay End::Done;
                        }
                        Next::Broken(b) => break 'relay End::Broken(b),
                        Next::Gone => break 'relay End::ClientGone,
                    };
                    if let Some(data) = data {
                        progress += data.len() as u64;
                        match assembler.push(data) {
                            Step::Read => {}
                            Step::Settle(d) => {
                                settle = None;
                                settle_for = Some(d);
                            }
                            Step::Respond(reply, delivery) => {
                                opened = respond(reply, delivery, &mut start, None);
                            }
                            // (A length is not honoured here: the answer
                            // ends with the application's END_REQUEST.)
                            Step::Forward(data) | Step::Last(data) => {
                                if let Some(p) = permit {
                                    p.send(Ok(data));
                                }
                            }
                            Step::Short => {}
                            Step::Fail(e) => break 'relay End::BadHead(e),
                        }
                    }
                    // A stream just opened is taken up at the loop's top,
                    // before anything is forwarded to it.
                    if opened.is_some() {
                        break;
                    }
                    match buffered(down, tx.as_ref()) {
                        Some(more) => (ev, permit) = more,
                        None => break,
                    }
                }
            }
            () = until(&mut slow), if slow.is_some() => {
                slow = None;
                let phase = slow_phase(fed, start.is_none());
                let worker = s.worker.map_or_else(|| "an external worker".to_owned(), |p| format!("worker pid {p}"));
                tracing::warn!(
                    id = %s.id,
                    target = %s.target,
                    "{}: slow request: still running after {:?} on {worker}, {phase}; its last stderr line: {}",
                    s.kind,
                    s.slow.unwrap_or_default(),
                    stderr.last().unwrap_or("(none)")
                );
            }
            () = until_made(&mut settle, &mut settle_for), if assembler.settling() => {
                if let Step::Respond(reply, delivery) = assembler.settled() {
                    opened = respond(reply, delivery, &mut start, None);
                }
            }
            () = &mut silence => {
                match watch.look(progress, held_back(tx.as_ref()), s.timeout, s.send_timeout) {
                    Look::Going => {}
                    Look::Silent => break End::Timeout,
                    Look::Stalled => break End::Stalled,
                }
                silence.as_mut().reset(tokio::time::Instant::now() + s.timeout);
            }
        }
    };
    stderr.finish();
    down.keep_timer(silence);
    let (id, target, kind) = (s.id, &*s.target, s.kind);
    match end {
        End::Done if fed => Finish::Clean,
        End::Done => {
            // It answered without taking the whole body: the rest would
            // arrive as the start of its next request.
            tracing::debug!(%id, %target, "{kind}: answered before the request body was all sent; not reused");
            Finish::Dirty(Dirty::Abandoned)
        }
        End::Broken(b) if !heard && s.replayable && b.is_close() => {
            tracing::debug!(%id, %target, "{kind}: closed before answering: {b}");
            Finish::Unanswered(b)
        }
        End::Broken(b) => {
            tracing::warn!(%id, %target, "{kind}: {b}");
            cut_off_stream(tx, id, target, kind, "the worker failed");
            send(start, Err(Error::Worker(b.to_string())));
            Finish::Dirty(Dirty::Broken)
        }
        End::BadHead(e) => {
            send(start, Err(Error::from(e)));
            Finish::Dirty(Dirty::Abandoned)
        }
        End::Timeout => {
            cut_off_stream(tx, id, target, kind, "no output within the timeout");
            send(start, Err(Error::Timeout(s.timeout)));
            Finish::Dirty(Dirty::Silent)
        }
        End::Stalled => {
            let why = "the client took none of the output within send_timeout";
            cut_off_stream(tx, id, target, kind, why);
            Finish::Dirty(Dirty::Abandoned)
        }
        End::ClientGone => {
            tracing::info!(%id, %target, "{kind}: the client left mid-response");
            Finish::Dirty(Dirty::Abandoned)
        }
        End::Input(e) => {
            cut_off_stream(tx, id, target, kind, "the request body failed");
            send(start, Err(e));
            Finish::Dirty(Dirty::Abandoned)
        }
    }
}

/// Waits for `timer`, if there is one.
///
/// # Cancel safety
/// Cancel safe.
async fn until(timer: &mut Option<Pin<Box<Sleep>>>) {
    match timer {
        Some(t) => t.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Waits for `timer`, made first from `wanted` when that holds a length.
///
/// # Cancel safety
/// Cancel safe: the timer, once made, stays in `timer`.
async fn until_made(timer: &mut Option<Pin<Box<Sleep>>>, wanted: &mut Option<Duration>) {
    if let Some(d) = wanted.take() {
        *timer = Some(Box::pin(tokio::time::sleep(d)));
    }
    until(timer).await
}

enum Next {
    Event(Event),
    Broken(Broken),
    /// The response body's reader is gone.
    Gone,
}

/// The worker's next event. While streaming it first takes room in the
/// channel, so a slow client slows the worker down instead of tern
/// buffering without bound.
///
/// # Cancel safety
/// Cancel safe: a cancelled reserve loses nothing, and `Downstream::next`
/// is cancel safe.
async fn next_event<'a, D: Downstream>(
    down: &mut D,
    tx: Option<&'a mpsc::Sender<Chunk>>,
) -> (Next, Option<mpsc::Permit<'a, Chunk>>) {
    let Ok(permit) = room(tx).await else {
        return (Next::Gone, None);
    };
    match down.next().await {
        Ok(ev) => (Next::Event(ev), permit),
        Err(b) => (Next::Broken(b), None),
    }
}

/// The worker's next event when the last read already holds it, with
/// room in the channel while streaming; `None` when the relay must wait
/// (for a read, or for the client to take what it was sent).
fn buffered<'a, D: Downstream>(
    down: &mut D,
    tx: Option<&'a mpsc::Sender<Chunk>>,
) -> Option<(Next, Option<mpsc::Permit<'a, Chunk>>)> {
    let permit = match tx {
        Some(tx) => Some(tx.try_reserve().ok()?),
        None => None,
    };
    Some(match down.ready()? {
        Ok(ev) => (Next::Event(ev), permit),
        Err(b) => (Next::Broken(b), None),
    })
}

/// Bytes read from a spooled file per piece.
const FILE_PIECE: usize = 64 * 1024;

/// Sends the rest of the body, then ends it. Returns the bytes sent.
///
/// # Cancel safety
/// Not cancel safe: a cancelled feed leaves the worker's input out of
/// step; the worker is then discarded.
async fn feed<U: Upstream>(up: &mut U, rest: Rest) -> Result<u64, Error> {
    let mut sent = 0u64;
    match rest {
        Rest::Nothing => return Ok(0),
        Rest::Memory(b) => {
            sent += b.len() as u64;
            up.send(b).await?;
        }
        // Boxed: every relay's future holds its feed's, and only a spooled
        // body needs room for a file's reads (about 300 bytes).
        Rest::File(f) => sent += Box::pin(feed_file(up, f)).await?,
    }
    up.finish().await?;
    Ok(sent)
}

/// Sends a spooled body from its file, a piece at a time. Returns the
/// bytes sent.
async fn feed_file<U: Upstream>(up: &mut U, f: std::fs::File) -> Result<u64, Error> {
    let mut sent = 0u64;
    let mut f = tokio::fs::File::from_std(f);
    loop {
        let mut piece = BytesMut::with_capacity(FILE_PIECE);
        if f.read_buf(&mut piece).await? == 0 {
            return Ok(sent);
        }
        sent += piece.len() as u64;
        up.send(piece.freeze()).await?;
    }
}
