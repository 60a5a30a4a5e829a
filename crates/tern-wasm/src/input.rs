//! A module's stdin when the request body streams in: chunks from the
//! handler's feeder task through a bounded channel, so that a large
//! upload is never held whole in memory and the module starts at once.
//! A body that fails midway (the connection broke, the body limit was
//! passed) stops the module with a [`BodyBroken`] trap rather than an
//! end of file, so that it never takes part of a body for all of it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body::Body as _;
use http_body_util::BodyExt as _;
use tern_handler::{BodyError, RequestBody};
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, Mutex};
use tokio::time::Instant;
use wasmtime_wasi::cli::{IsTerminal, StdinStream};
use wasmtime_wasi::p2::{InputStream, Pollable, StreamError};

use crate::output::Stalled;

/// Chunks read ahead of the module.
const CHUNKS: usize = 4;

/// The trap a read raises when the body failed to arrive whole.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive whole")]
pub(crate) struct BodyBroken;

/// One message from the feeder: a chunk, or word that the body failed.
type Chunk = Result<Bytes, ()>;

/// The module's stdin. Clones share the channel (WASI may open several
/// handles on one stdin).
#[derive(Clone, Debug)]
pub(crate) struct Feed {
    inner: Arc<Mutex<Inner>>,
    deadline: Instant,
}

#[derive(Debug)]
struct Inner {
    rx: mpsc::Receiver<Chunk>,
    /// What the last chunk has left.
    pending: Bytes,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// The body failed: reads trap.
    Broken,
    /// Nothing came by the deadline: reads trap.
    Stalled,
}

/// Starts a task that reads `body` into a new feed. Its result is the
/// body's error, if it failed; the task ends early, without error, when
/// the module no longer reads.
pub(crate) fn feed(
    mut body: RequestBody,
) -> (Feed, tokio::task::JoinHandle<Result<(), BodyError>>) {
    let (tx, rx) = mpsc::channel(CHUNKS);
    let task = tokio::spawn(async move {
        loop {
            // Room first, then the frame: a body is not read ahead of
            // a module that does not read it.
            let Ok(permit) = tx.reserve().await else {
                return Ok(());
            };
            // Also watches for the module's end: a client that stops
            // sending must not keep this task once nobody reads.
            let frame = tokio::select! {
                f = body.frame() => f,
                () = tx.closed() => return Ok(()),
            };
            match frame {
                None => return Ok(()),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            permit.send(Ok(data));
                        }
                    }
                }
                Some(Err(e)) => {
                    permit.send(Err(()));
                    return Err(e);
                }
            }
            if body.is_end_stream() {
                return Ok(());
            }
        }
    });
    let feed = Feed {
        inner: Arc::new(Mutex::new(Inner {
            rx,
            pending: Bytes::new(),
            state: State::Open,
        })),
        // Set by the run when it starts.
        deadline: Instant::now() + Duration::from_secs(365 * 24 * 3600),
    };
    (feed, task)
}

impl Feed {
    /// The feed, given the run's deadline.
    pub(crate) fn until(self, deadline: Instant) -> Feed {
        Feed { deadline, ..self }
    }
}

fn trap(e: impl std::error::Error + Send + Sync + 'static) -> StreamError {
    StreamError::Trap(wasmtime::Error::new(e))
}

impl IsTerminal for Feed {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdinStream for Feed {
    fn async_stream(&self) -> Box<dyn AsyncRead + Send + Sync> {
        // Only WASI preview 2 and 3 hosts read this form; tern links
        // preview 1, which reads through `InputStream`.
        Box::new(tokio::io::empty())
    }

    fn p2_stream(&self) -> Box<dyn InputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Feed {
    async fn ready(&mut self) {
        let mut g = self.inner.lock().await;
        if !g.pending.is_empty() || g.state != State::Open {
            return;
        }
        match tokio::time::timeout_at(self.deadline, g.rx.recv()).await {
            Ok(Some(Ok(b))) => g.pending = b,
            Ok(Some(Err(()))) => g.state = State::Broken,
            // The end: `read` sees the closed channel.
            Ok(None) => {}
            Err(_) => g.state = State::Stalled,
        }
    }
}

#[wasmtime_wasi::async_trait]
impl InputStream for Feed {
    fn read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        // The module is the only reader, and it is not in `ready` now.
        let Ok(mut g) = self.inner.try_lock() else {
            return Ok(Bytes::new());
        };
        match g.state {
            State::Open => {}
            State::Broken => return Err(trap(BodyBroken)),
            State::Stalled => return Err(trap(Stalled)),
        }
        if g.pending.is_empty() {
            match g.rx.try_recv() {
                Ok(Ok(b)) => g.pending = b,
                Ok(Err(())) => {
                    g.state = State::Broken;
                    return Err(trap(BodyBroken));
                }
                Err(mpsc::error::TryRecvError::Empty) => return Ok(Bytes::new()),
                Err(mpsc::error::TryRecvError::Disconnected) => return Err(StreamError::Closed),
            }
        }
        let n = size.min(g.pending.len());
        Ok(g.pending.split_to(n))
    }
}
