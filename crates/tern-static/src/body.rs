//! A file body streamed from disk, in chunks. A chunk the page cache holds
//! is read on the worker thread (`RWF_NOWAIT`); from the first one that
//! would wait for the disk, reads run on tokio's blocking pool, with one
//! chunk read ahead while the previous one is being sent, so the disk read
//! overlaps the socket write. A slow client holds at most the reads ahead
//! of its [`Stride`]: two chunks of 256 KiB on a connection of its own, one
//! of 32 KiB on an HTTP/2 stream, one of up to 128 a connection carries.

use std::collections::VecDeque;
use std::fs::File;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::task::JoinHandle;

/// How much one read takes: large enough that the thread hop to the blocking
/// pool is amortised (a 3.9 MB file is 16 hops), small enough to bound memory.
/// Measured: 128 KiB chunks read one at a time cost ~2x the CPU per byte of
/// nginx's sendfile; 256 KiB with read-ahead brings it within reach.
pub(crate) const CHUNK: u64 = 256 * 1024;

/// File reads in flight per body (the chunk being sent is not counted).
const READ_AHEAD: usize = 2;

/// The chunk of a body that shares its connection ([`Stride::Short`]).
const SHORT_CHUNK: u64 = 32 * 1024;

/// How far a body reads ahead of its client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stride {
    /// [`CHUNK`]s, [`READ_AHEAD`] of them in flight: the answer has its
    /// connection to itself (HTTP/1).
    Long,
    /// [`SHORT_CHUNK`]s, one in flight: the answer is one of the streams
    /// of an HTTP/2 connection, up to 128 of them. hyper takes a chunk
    /// before it waits for the stream's window, and `h2` keeps what the
    /// window did not let go, so a client that opens streams and never
    /// their windows holds three chunks a stream: with long strides 830
    /// KB a stream, 100 MB a connection, for its few bytes of HEADERS.
    Short,
}

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
    /// Segments not yet started.
    segments: VecDeque<Segment>,
    /// Pieces started, in order: bytes ready, or a read in flight.
    pending: VecDeque<Pending>,
    reads_in_flight: usize,
    remaining: u64,
    /// The chunk, and the reads in flight at most.
    chunk: u64,
    ahead: usize,
}

#[derive(Debug)]
enum Pending {
    Ready(Bytes),
    Reading(JoinHandle<io::Result<Bytes>>),
}

impl FileBody {
    pub(crate) fn new(file: Arc<File>, segments: Vec<Segment>, stride: Stride) -> FileBody {
        let remaining = segments.iter().map(Segment::len).sum();
        let (chunk, ahead) = match stride {
            Stride::Long => (CHUNK, READ_AHEAD),
            Stride::Short => (SHORT_CHUNK, 1),
        };
        FileBody {
            file,
            segments: segments.into_iter().filter(|s| s.len() > 0).collect(),
            pending: VecDeque::new(),
            reads_in_flight: 0,
            remaining,
            chunk,
            ahead,
        }
    }

    /// Starts reads until `ahead` are in flight or nothing is left.
    /// While none is, the next chunk is read here first ([`Wait::Never`]),
    /// as the slow path reads a small file, `ahead` chunks ahead at
    /// most: bytes the page cache holds cost no hop to the blocking pool.
    /// The first chunk that would wait for the disk goes to the pool, and
    /// the reads after it follow there, overlapping the sending.
    fn fill(&mut self) {
        while self.reads_in_flight < self.ahead {
            let here = self.reads_in_flight == 0;
            if here && self.pending.len() >= self.ahead {
                return;
            }
            match self.segments.pop_front() {
                None => return,
                Some(Segment::Bytes(b)) => self.pending.push_back(Pending::Ready(b)),
                Some(Segment::File { offset, len }) => {
                    let take = len.min(self.chunk);
                    if take < len {
                        self.segments.push_front(Segment::File {
                            offset: offset + take,
                            len: len - take,
                        });
                    }
                    if here {
                        // Any failure here (the file shrank, say) is met
                        // again, and reported, by the pool's read.
                        if let Ok(bytes) = read_at(&self.file, offset, take, Wait::Never) {
                            self.pending.push_back(Pending::Ready(bytes));
                            continue;
                        }
                    }
                    let file = Arc::clone(&self.file);
                    self.pending
                        .push_back(Pending::Reading(tokio::task::spawn_blocking(move || {
                            read_exact_at(&file, offset, take)
                        })));
                    self.reads_in_flight += 1;
                }
            }
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
        this.fill();
        let chunk = match this.pending.front_mut() {
            None => return Poll::Ready(None),
            Some(Pending::Ready(_)) => match this.pending.pop_front() {
                Some(Pending::Ready(b)) => b,
                _ => unreachable!("front was Ready"),
            },
            Some(Pending::Reading(task)) => {
                let result = match Pin::new(task).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(r) => r,
                };
                this.pending.pop_front();
                this.reads_in_flight -= 1;
                match result {
                    Ok(Ok(chunk)) => chunk,
                    Ok(Err(e)) => return fail(this, e),
                    Err(join) => return fail(this, io::Error::other(join)),
                }
            }
        };
        // Start the next read now, so it runs while this chunk is sent.
        this.fill();
        this.remaining -= chunk.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0 && self.pending.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

impl Drop for FileBody {
    fn drop(&mut self) {
        // Reads already running finish on the pool; their results are dropped.
        for p in self.pending.drain(..) {
            if let Pending::Reading(task) = p {
                task.abort();
            }
        }
    }
}

fn fail(body: &mut FileBody, e: io::Error) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
    body.segments.clear();
    body.pending.clear();
    body.remaining = 0;
    Poll::Ready(Some(Err(e)))
}

/// Reads exactly `len` bytes at `offset`. A file that shrank under us is an
/// error: the response already promised its Content-Length, so the
/// connection must be cut rather than the body padded or cut short silently.
pub(crate) fn read_exact_at(file: &File, offset: u64, len: u64) -> io::Result<Bytes> {
    read_at(file, offset, len, Wait::Allowed)
}

/// Whether a read may wait for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// It may (the blocking pool).
    Allowed,
    /// It may not (a worker thread): bytes not in the page cache are a
    /// `WouldBlock` error (`preadv2` with `RWF_NOWAIT`), and the caller
    /// reads them on the blocking pool instead.
    Never,
}

/// [`read_exact_at`], or with [`Wait::Never`] only what the page cache
/// holds.
pub(crate) fn read_at(file: &File, offset: u64, len: u64, wait: Wait) -> io::Result<Bytes> {
    let n = usize::try_from(len).map_err(io::Error::other)?;
    if wait == Wait::Never {
        return read_cached_at(file, offset, n);
    }
    // Read into spare capacity: zeroing the buffer first would cost a pass
    // over every byte for nothing.
    let mut buf: Vec<u8> = Vec::with_capacity(n);
    while buf.len() < n {
        let at = offset + buf.len() as u64;
        let got = rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at)
            .map_err(io::Error::from)?;
        if got == 0 {
            return Err(shrank());
        }
    }
    // The allocator may have given more capacity than asked; bytes read past
    // the range are not the range's.
    buf.truncate(n);
    Ok(Bytes::from(buf))
}

/// Reads `n` bytes at `offset` that the page cache holds, or fails with
/// `WouldBlock`. The buffer is zeroed first (`preadv2` takes initialised
/// slices): these are small files, read on a worker thread.
fn read_cached_at(file: &File, offset: u64, n: usize) -> io::Result<Bytes> {
    use rustix::io::{preadv2, Errno, ReadWriteFlags};
    let mut buf = vec![0u8; n];
    let mut done = 0;
    while done < n {
        let at = offset + done as u64;
        let mut slices = [io::IoSliceMut::new(&mut buf[done..])];
        match preadv2(file, &mut slices, at, ReadWriteFlags::NOWAIT) {
            Ok(0) => return Err(shrank()),
            Ok(got) => done += got,
            // EOPNOTSUPP: a file system without RWF_NOWAIT; EAGAIN: not
            // in the page cache. Either way: the blocking pool's turn.
            Err(Errno::AGAIN | Errno::OPNOTSUPP) => {
                return Err(io::Error::from(io::ErrorKind::WouldBlock))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Bytes::from(buf))
}

/// A file that ended before the length its response promised.
fn shrank() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the file shrank while it was being sent",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use http_body_util::BodyExt;

    /// A temporary file of `len` patterned bytes, written back to disk (so
    /// that its pages may be dropped from the page cache), and the bytes.
    fn patterned_file(len: usize) -> (File, Vec<u8>) {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        (f, data)
    }

    /// A file dropped from the page cache is not read on a worker thread:
    /// the read says it would wait, and the blocking pool's read (which
    /// may) brings it back, after which a worker may read it.
    #[test]
    fn a_read_that_must_not_wait_leaves_what_is_not_cached() {
        let (f, data) = patterned_file(65536);
        // The kernel drops a file's pages when asked only if nothing else
        // holds them at that moment; on a 2-CPU VM it kept them in about
        // one run of three. So it is asked again until a read that must
        // not wait says it would; a read that waited anyway never says
        // so, and the test fails.
        let mut said = None;
        for _ in 0..100 {
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            match read_at(&f, 0, 65536, Wait::Never) {
                Err(e) => {
                    said = Some(e);
                    break;
                }
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        let e = said.expect("read whole, without waiting, 100 times after its pages were dropped");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        assert_eq!(read_at(&f, 0, 65536, Wait::Allowed).unwrap(), data);
        assert_eq!(read_at(&f, 4, 10, Wait::Never).unwrap(), data[4..14]);
    }

    #[tokio::test]
    async fn segments_stream_in_order_with_exact_size() {
        let (f, data) = patterned_file(CHUNK as usize * 2 + 10);
        let segments = vec![
            Segment::Bytes(Bytes::from_static(b"head")),
            Segment::File {
                offset: 5,
                len: CHUNK + 100,
            },
            Segment::Bytes(Bytes::new()),
            Segment::File { offset: 0, len: 3 },
        ];
        let body = FileBody::new(Arc::new(f), segments, Stride::Long);
        assert_eq!(body.size_hint().exact(), Some(4 + CHUNK + 100 + 3));
        let got = body.collect().await.unwrap().to_bytes();
        let mut want = b"head".to_vec();
        want.extend_from_slice(&data[5..5 + CHUNK as usize + 100]);
        want.extend_from_slice(&data[..3]);
        assert_eq!(got, want);
    }

    /// Chunks the page cache holds are read on the worker; once one is not,
    /// the rest go to the pool: either way the bytes arrive whole, in order.
    #[tokio::test]
    async fn a_file_partly_out_of_the_page_cache_streams_whole() {
        let (f, data) = patterned_file(CHUNK as usize * 5 + 7);
        let tail = 2 * CHUNK;
        rustix::fs::fadvise(&f, tail, None, rustix::fs::Advice::DontNeed).unwrap();
        let whole = Segment::File {
            offset: 0,
            len: data.len() as u64,
        };
        let body = FileBody::new(Arc::new(f), vec![whole], Stride::Long);
        let got = body.collect().await.unwrap().to_bytes();
        assert!(got == data, "the bytes differ");
    }

    /// What a body holds once it has handed its first chunk and is not
    /// asked again (a client that keeps its window shut): the chunks
    /// read ahead, by stride.
    #[tokio::test]
    async fn a_short_stride_holds_one_small_chunk_ahead() {
        let (f, data) = patterned_file(CHUNK as usize * 4);
        let f = Arc::new(f);
        for (stride, chunk, ahead) in [
            (Stride::Long, CHUNK, READ_AHEAD),
            (Stride::Short, SHORT_CHUNK, 1),
        ] {
            let whole = Segment::File {
                offset: 0,
                len: data.len() as u64,
            };
            let mut body = FileBody::new(Arc::clone(&f), vec![whole], stride);
            let first = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
                .await
                .unwrap()
                .unwrap()
                .into_data()
                .unwrap();
            assert_eq!(first.len() as u64, chunk, "{stride:?}");
            assert_eq!(body.pending.len(), ahead, "{stride:?}");
            let held: u64 = body
                .pending
                .iter()
                .map(|p| match p {
                    Pending::Ready(b) => b.len() as u64,
                    Pending::Reading(_) => chunk,
                })
                .sum();
            assert_eq!(held, chunk * ahead as u64, "{stride:?}");
            let rest = body.collect().await.unwrap().to_bytes();
            assert!(
                rest == data[chunk as usize..],
                "{stride:?}: the bytes differ"
            );
        }
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
            Stride::Long,
        );
        assert!(body.collect().await.is_err());
    }
}
