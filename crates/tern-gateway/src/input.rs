//! The request body on its way to the script's stdin.
//!
//! The body is read whole before the request takes a slot or a worker
//! (nginx's request buffering): a client that sends its body slowly then
//! holds only its own connection, never one of the route's few programs,
//! and the body's pace (`BodyPace`, enforced as it is read) cuts off one
//! that trickles. It is spooled up to the site's body limit (beyond it the
//! client gets 413): in memory while small, then in an unlinked temporary
//! file, which then becomes the script's stdin itself, with no copy
//! through tern. CGI has no transfer codings on stdin: CONTENT_LENGTH is
//! then exact (RFC 3875 §4.2), whatever framing the client used.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use http::{header, HeaderMap};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use tern_handler::RequestBody;
use tokio::io::{AsyncSeekExt as _, AsyncWriteExt as _};
use tokio::process::ChildStdin;

use crate::Error;

/// Bodies up to this size are spooled in memory; larger ones go to a file.
const MEMORY_SPOOL: usize = 256 * 1024;

/// The body, ready for the script.
#[derive(Debug)]
pub(crate) struct Input {
    /// CONTENT_LENGTH, when there is a body.
    pub(crate) length: Option<u64>,
    pub(crate) source: Source,
}

/// Where the script's stdin comes from.
#[derive(Debug)]
pub(crate) enum Source {
    /// No body: stdin is /dev/null.
    Nothing,
    /// Spooled in memory, fed through a pipe.
    Memory(Bytes),
    /// Spooled to a file, which is the script's stdin.
    File(std::fs::File),
}

impl Input {
    /// Reads `body` whole (see the module's doc).
    ///
    /// # Cancel safety
    /// Not cancel safe: a cancelled spool loses the body (the request is
    /// gone with it).
    pub(crate) async fn prepare(body: RequestBody, headers: &HeaderMap) -> Result<Input, Error> {
        let declared = headers.contains_key(header::CONTENT_LENGTH);
        if body.is_end_stream() {
            return Ok(Input {
                length: declared.then_some(0),
                source: Source::Nothing,
            });
        }
        spool(body).await
    }
}

async fn spool(mut body: RequestBody) -> Result<Input, Error> {
    let mut memory = BytesMut::new();
    let mut file: Option<tokio::fs::File> = None;
    let mut total = 0u64;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers: CGI has no place for them
        };
        total += data.len() as u64;
        match file.as_mut() {
            Some(f) => f.write_all(&data).await?,
            None if memory.len() + data.len() <= MEMORY_SPOOL => memory.extend_from_slice(&data),
            None => {
                // O_TMPFILE: unlinked from the start, gone when closed.
                let std = tokio::task::spawn_blocking(tempfile::tempfile)
                    .await
                    .map_err(io::Error::other)??;
                let mut f = tokio::fs::File::from_std(std);
                f.write_all(&memory).await?;
                f.write_all(&data).await?;
                memory = BytesMut::new();
                file = Some(f);
            }
        }
    }
    let source = match file {
        Some(mut f) => {
            f.flush().await?;
            f.rewind().await?;
            Source::File(f.into_std().await)
        }
        None if memory.is_empty() => Source::Nothing,
        None => Source::Memory(memory.freeze()),
    };
    Ok(Input {
        length: Some(total),
        source,
    })
}

/// What is left to write to the script's stdin once it runs.
#[derive(Debug)]
pub(crate) enum Feed {
    Nothing,
    Memory(Bytes),
}

/// Writes the body to the script's stdin, then closes it (the script sees
/// EOF). A script that closes its stdin early (EPIPE) simply gets no more:
/// it may answer without reading the body. Each byte written is counted in
/// `progress` (the silence timer reads it).
///
/// # Cancel safety
/// Not cancel safe: the body is lost. It is polled to completion or
/// dropped with the script.
pub(crate) async fn feed(stdin: Option<ChildStdin>, feed: Feed, progress: &AtomicU64) {
    let Some(mut stdin) = stdin else {
        return;
    };
    match feed {
        Feed::Nothing => {}
        Feed::Memory(b) => {
            if stdin.write_all(&b).await.is_ok() {
                progress.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
        }
    }
}
