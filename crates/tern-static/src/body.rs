//! A file body streamed from disk: reads run on tokio's blocking pool, one
//! chunk at a time, and the next chunk is read only once the previous one
//! was taken, so a slow client holds at most one chunk of memory.

use std::collections::VecDeque;
use std::fs::File;
use std::future::Future;
use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use tokio::task::JoinHandle;

/// How much one read takes: large enough that the thread hop is amortised
/// (tower-http and actix-files use 64 KiB), small enough to bound memory.
pub(crate) const CHUNK: u64 = 128 * 1024;

/// A piece of a response body: bytes already in memory (multipart headers)
/// or a byte range of the file.
#[derive(Debug)]
pub(crate) enum Segment {
    Bytes(Bytes),
    File { offset: u64, len: u64 },
}

impl Segment {
    fn len(&self) -> u64 {
        match self {
            Segment::Bytes(b) => b.len() as u64,
            Segment::File { len, .. } => *len,
        }
    }
}

/// A body made of segments over one open file, with an exact size.
#[derive(Debug)]
pub(crate) struct FileBody {
    file: Arc<File>,
    segments: VecDeque<Segment>,
    remaining: u64,
    reading: Option<JoinHandle<io::Result<Bytes>>>,
}

impl FileBody {
    pub(crate) fn new(file: Arc<File>, segments: Vec<Segment>) -> FileBody {
        let remaining = segments.iter().map(Segment::len).sum();
        FileBody {
            file,
            segments: segments.into_iter().filter(|s| s.len() > 0).collect(),
            remaining,
            reading: None,
        }
    }
}

impl Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if let Some(task) = &mut this.reading {
            let result = ready!(Pin::new(task).poll(cx));
            this.reading = None;
            let chunk = match result {
                Ok(Ok(chunk)) => chunk,
                Ok(Err(e)) => return fail(this, e),
                Err(join) => return fail(this, io::Error::other(join)),
            };
            this.remaining -= chunk.len() as u64;
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        match this.segments.pop_front() {
            None => Poll::Ready(None),
            Some(Segment::Bytes(b)) => {
                this.remaining -= b.len() as u64;
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Some(Segment::File { offset, len }) => {
                let take = len.min(CHUNK);
                if take < len {
                    this.segments.push_front(Segment::File {
                        offset: offset + take,
                        len: len - take,
                    });
                }
                let file = Arc::clone(&this.file);
                this.reading = Some(tokio::task::spawn_blocking(move || {
                    read_exact_at(&file, offset, take)
                }));
                // Poll the new task at once so its waker is registered.
                self.poll_frame(cx)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0 && self.reading.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

fn fail(body: &mut FileBody, e: io::Error) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
    body.segments.clear();
    body.remaining = 0;
    Poll::Ready(Some(Err(e)))
}

/// Reads exactly `len` bytes at `offset`. A file that shrank under us is an
/// error: the response already promised its Content-Length, so the
/// connection must be cut rather than the body padded or cut short silently.
pub(crate) fn read_exact_at(file: &File, offset: u64, len: u64) -> io::Result<Bytes> {
    let n = usize::try_from(len).map_err(io::Error::other)?;
    let mut buf = BytesMut::zeroed(n);
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use http_body_util::BodyExt;

    #[tokio::test]
    async fn segments_stream_in_order_with_exact_size() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..(CHUNK as usize * 2 + 10))
            .map(|i| (i % 251) as u8)
            .collect();
        f.write_all(&data).unwrap();
        let segments = vec![
            Segment::Bytes(Bytes::from_static(b"head")),
            Segment::File {
                offset: 5,
                len: CHUNK + 100,
            },
            Segment::Bytes(Bytes::new()),
            Segment::File { offset: 0, len: 3 },
        ];
        let body = FileBody::new(Arc::new(f), segments);
        assert_eq!(body.size_hint().exact(), Some(4 + CHUNK + 100 + 3));
        let got = body.collect().await.unwrap().to_bytes();
        let mut want = b"head".to_vec();
        want.extend_from_slice(&data[5..5 + CHUNK as usize + 100]);
        want.extend_from_slice(&data[..3]);
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_truncated_file_is_an_error() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"short").unwrap();
        let body = FileBody::new(
            Arc::new(f),
            vec![Segment::File {
                offset: 0,
                len: 100,
            }],
        );
        assert!(body.collect().await.is_err());
    }
}
