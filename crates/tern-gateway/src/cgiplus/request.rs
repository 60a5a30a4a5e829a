//! One request over a CGIplus worker's pipes: the variables (and a body
//! in memory) written at the start, the rest of the body counted against
//! CONTENT_LENGTH, and the response read up to the sentinel, with the
//! callouts taken out of it.

use std::io;

use bytes::{Buf as _, Bytes, BytesMut};
use tern_cgi::env::CgiEnv;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::unix::pipe;

use super::encode::{self, Mode, Refusal};
use super::scan::{self, Callout, Step};
use super::{Framing, NotReusable, Pipes};
use crate::persist::{Broken, Downstream, Event, Upstream};

/// Bytes asked for per read of the worker's stdout: a whole pipe buffer.
const READ_SIZE: usize = 64 * 1024;

/// Bodies in memory up to this size are copied behind the variables so
/// that the request is one write; a larger one follows in a second write
/// rather than being copied.
const COPY_MAX: usize = 16 * 1024;

pub use crate::persist::StartBody;

/// Why a request could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The request cannot be put to this worker (400). Nothing was
    /// written: here are its pipes back, still in step.
    #[error("request refused: {reason}")]
    Refused {
        /// Why.
        reason: Refusal,
        /// The worker, untouched.
        pipes: Pipes,
    },
    /// Writing the request failed (the worker exited while idle: EPIPE):
    /// discard the worker. The worker read none of this request unless
    /// it is still alive, so trying another worker is safe on EPIPE.
    #[error("writing the request to the CGIplus worker: {0}")]
    Io(#[from] io::Error),
}

/// Starts one request on an idle worker: wraps its pipes for the current
/// runtime and writes the start line, the variables and a
/// [`StartBody::Whole`] body (one write when the body is small). Then the
/// driver pumps both halves at once: for [`StartBody::Streamed`], the
/// body through [`Upstream::send`] and [`Upstream::finish`]; for the
/// others the body is complete already ([`Upstream::finish`] may still be
/// called, and does nothing).
///
/// # Panics
/// Outside a tokio runtime with I/O enabled.
///
/// # Cancel safety
/// Not cancel safe: dropping it mid-write drops the pipes, and the worker
/// (reading end of file) exits; its pool replaces it.
pub async fn start(
    pipes: Pipes,
    env: &CgiEnv,
    body: StartBody,
) -> Result<(CgiplusUpstream, CgiplusDownstream), StartError> {
    let mut head = BytesMut::new();
    if let Err(reason) = prepare(&mut head, pipes.mode, env, &body) {
        return Err(StartError::Refused { reason, pipes });
    }
    let Pipes {
        stdin,
        stdout,
        framing,
        mode,
        swallow_newline,
    } = pipes;
    let mut tx = pipe::Sender::from_owned_fd(stdin)?;
    let rx = pipe::Receiver::from_owned_fd(stdout)?;
    let (remaining, state) = match body {
        StartBody::Empty => {
            tx.write_all(&head).await?;
            (0, UpState::Finished)
        }
        StartBody::Whole(b) if b.len() <= COPY_MAX => {
            head.extend_from_slice(&b);
            tx.write_all(&head).await?;
            (0, UpState::Finished)
        }
        StartBody::Whole(b) => {
            tx.write_all(&head).await?;
            tx.write_all(&b).await?;
            (0, UpState::Finished)
        }
        StartBody::Streamed => {
            tx.write_all(&head).await?;
            (encode::content_length(env).unwrap_or(0), UpState::Open)
        }
    };
    let up = CgiplusUpstream {
        tx,
        remaining,
        state,
    };
    let down = CgiplusDownstream {
        rx,
        carry: BytesMut::new(),
        framing,
        next_mode: mode,
        swallow_newline,
        state: DownState::Reading,
    };
    Ok((up, down))
}

/// Checks the body against CONTENT_LENGTH and encodes the variables.
fn prepare(head: &mut BytesMut, mode: Mode, env: &CgiEnv, body: &StartBody) -> Result<(), Refusal> {
    let declared = encode::content_length(env)?;
    let given = match body {
        StartBody::Empty => 0,
        StartBody::Whole(b) => b.len() as u64,
        StartBody::Streamed => declared,
    };
    if given != declared {
        return Err(Refusal::BodyLength { declared, given });
    }
    encode::head(head, mode, env)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UpState {
    /// Body bytes may still be sent.
    Open,
    /// [`Upstream::finish`] succeeded: the whole body is in the pipe.
    Finished,
    /// A write failed or was cancelled, or the caller sent more or less
    /// than CONTENT_LENGTH: the worker is out of step.
    Broken,
}

/// The request body on its way to the worker's stdin.
#[derive(Debug)]
pub struct CgiplusUpstream {
    tx: pipe::Sender,
    /// Body bytes still to come through `send` (CONTENT_LENGTH counts
    /// them: the worker reads exactly that many).
    remaining: u64,
    state: UpState,
}

impl CgiplusUpstream {
    /// Begins one write step, marking the stream broken until it
    /// completes: a failed or cancelled write leaves the worker with part
    /// of a request.
    fn open(&mut self) -> io::Result<()> {
        match self.state {
            UpState::Open => {
                self.state = UpState::Broken;
                Ok(())
            }
            UpState::Finished => Err(io::Error::other("the body was already complete")),
            UpState::Broken => Err(io::Error::other("an earlier body write failed")),
        }
    }

    /// The stdin pipe, if the whole body went out.
    pub(super) fn into_finished(self) -> Option<pipe::Sender> {
        (self.state == UpState::Finished).then_some(self.tx)
    }
}

impl Upstream for CgiplusUpstream {
    async fn send(&mut self, chunk: Bytes) -> io::Result<()> {
        self.open()?;
        if chunk.len() as u64 > self.remaining {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the body is longer than CONTENT_LENGTH",
            ));
        }
        self.tx.write_all(&chunk).await?;
        self.remaining -= chunk.len() as u64;
        self.state = UpState::Open;
        Ok(())
    }

    async fn finish(&mut self) -> io::Result<()> {
        if self.state == UpState::Finished {
            return Ok(());
        }
        self.open()?;
        if self.remaining > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the body ended {} bytes short of CONTENT_LENGTH",
                    self.remaining
                ),
            ));
        }
        self.state = UpState::Finished;
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DownState {
    Reading,
    /// The sentinel was read; `trailing` bytes other than one newline
    /// followed it.
    Ended {
        trailing: usize,
    },
    Broken,
}

/// The worker's response, read from its stdout up to the sentinel.
#[derive(Debug)]
pub struct CgiplusDownstream {
    rx: pipe::Receiver,
    /// Read and not yet returned: at most one read, plus a tail that may
    /// start the sentinel or a callout.
    carry: BytesMut,
    framing: Box<Framing>,
    /// The mode for the next request: the current one, unless a callout
    /// switched it.
    next_mode: Mode,
    /// Before the first byte of this response: drop a leading `\n` (the
    /// last sentinel's newline, late). After the end: whether the next
    /// response must do so.
    swallow_newline: bool,
    state: DownState,
}

/// What [`reunite`](super::reunite) keeps of a downstream that ended.
#[derive(Debug)]
pub(super) struct Ended {
    pub(super) rx: pipe::Receiver,
    pub(super) framing: Box<Framing>,
    pub(super) next_mode: Mode,
    pub(super) swallow_newline: bool,
}

impl CgiplusDownstream {
    pub(super) fn into_ended(self) -> Result<Ended, NotReusable> {
        match self.state {
            DownState::Ended { trailing: 0 } => Ok(Ended {
                rx: self.rx,
                framing: self.framing,
                next_mode: self.next_mode,
                swallow_newline: self.swallow_newline,
            }),
            DownState::Ended { trailing } => Err(NotReusable::TrailingOutput(trailing)),
            DownState::Reading | DownState::Broken => Err(NotReusable::NotEnded),
        }
    }

    /// Does what the scanner says about the bytes held, until there is an
    /// event to return or more must be read.
    fn decide(&mut self) -> Option<Result<Event, Broken>> {
        loop {
            if self.swallow_newline && !self.carry.is_empty() {
                if self.carry[0] == b'\n' {
                    self.carry.advance(1);
                }
                self.swallow_newline = false;
                continue;
            }
            match self.framing.scanner.step(&self.carry) {
                Step::Output(n) => {
                    return Some(Ok(Event::Stdout(self.carry.split_to(n).freeze())));
                }
                Step::End(n) => {
                    self.carry.advance(n);
                    let trailing = match &self.carry[..] {
                        b"" => {
                            self.swallow_newline = true;
                            0
                        }
                        b"\n" => 0,
                        rest => rest.len(),
                    };
                    self.carry.clear();
                    self.state = DownState::Ended { trailing };
                    return Some(Ok(Event::End { app_status: 0 }));
                }
                Step::Callout { text, len } => {
                    match scan::callout(&self.carry[text]) {
                        Callout::Struct => self.next_mode = Mode::Struct,
                        Callout::Record => self.next_mode = Mode::Record,
                        Callout::Other(text) => {
                            tracing::warn!(callout = %text, "CGIplus: unknown callout ignored");
                        }
                    }
                    self.carry.advance(len);
                }
                Step::CalloutTooLong => {
                    self.state = DownState::Broken;
                    return Some(Err(Broken::Protocol(format!(
                        "a callout longer than {} bytes",
                        scan::MAX_CALLOUT
                    ))));
                }
                Step::More => return None,
            }
        }
    }
}

impl Downstream for CgiplusDownstream {
    async fn next(&mut self) -> Result<Event, Broken> {
        loop {
            match self.state {
                DownState::Reading => {}
                DownState::Ended { .. } => {
                    return Err(Broken::Protocol("read past the end of the response".into()))
                }
                DownState::Broken => {
                    return Err(Broken::Protocol("the worker already broke".into()))
                }
            }
            if let Some(event) = self.decide() {
                return event;
            }
            if self.carry.capacity() - self.carry.len() < READ_SIZE / 2 {
                self.carry.reserve(READ_SIZE);
            }
            // Cancel safe: bytes land in `carry` only when the read
            // completes, and everything above is finished before it.
            match self.rx.read_buf(&mut self.carry).await {
                Ok(0) => {
                    self.state = DownState::Broken;
                    return Err(Broken::Closed);
                }
                Ok(_) => {}
                Err(e) => {
                    self.state = DownState::Broken;
                    return Err(Broken::Io(e));
                }
            }
        }
    }

    fn ready(&mut self) -> Option<Result<Event, Broken>> {
        match self.state {
            DownState::Reading => self.decide(),
            DownState::Ended { .. } | DownState::Broken => None,
        }
    }
}
