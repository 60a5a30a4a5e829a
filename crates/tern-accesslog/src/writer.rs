//! The writer: one OS thread owns the log file, takes records from a
//! channel, renders them and writes them in batches.
//!
//! Records travel over an unbounded channel, so [`AccessLog::log`] never
//! blocks and never drops a record. The cost is memory when the disk falls
//! behind: a record is a few hundred bytes, so a writer stalled for a second
//! at 100,000 requests/s queues some tens of megabytes. A bounded channel
//! would have to either block a runtime thread or drop records, and both
//! are worse for a log that `tern bench` replays.
//!
//! Commands are handled in the order they were sent, so a flush or a
//! reopen covers every record logged before it.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tern_config::{AccessLogConfig, LogFormat};

use crate::{render, AccessRecord, Error};

/// Bytes gathered before a write: many lines per system call under load.
const BUFFER_BYTES: usize = 64 * 1024;

/// Under a steady stream the queue may never run dry; lines still reach the
/// file at least this often.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// A handle on an open access log. Clones are cheap and share one writer
/// thread; dropping the last one writes out everything logged, stops the
/// thread and waits for it (so drop it from a blocking context, or after
/// the async runtime has stopped).
#[derive(Clone)]
pub struct AccessLog {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    counts: Arc<Counts>,
    commands: Sender<Command>,
    /// Taken by `Drop`, the only place that joins.
    thread: Option<JoinHandle<()>>,
}

/// What the writer thread counted (it alone writes them).
#[derive(Debug, Default)]
struct Counts {
    lines: AtomicU64,
    lost: AtomicU64,
}

/// What an access log has written, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounts {
    /// Lines written (into the file's buffer; flushed within 100 ms).
    pub lines: u64,
    /// Lines lost to failed writes (a full disk).
    pub lost: u64,
}

/// What the writer thread is asked to do.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "nearly every command is a Write; boxing it would cost an allocation per request"
)]
enum Command {
    Write(AccessRecord),
    Reopen,
    /// Write out everything queued before this, then answer.
    Flush(SyncSender<()>),
    /// The last handle is gone: write out everything and exit.
    Stop,
}

impl AccessLog {
    /// Opens (creating it if needed, appending) the configured file now, so
    /// that a bad path fails at startup with an error naming it, and starts
    /// the writer thread.
    pub fn open(cfg: &AccessLogConfig) -> Result<AccessLog, Error> {
        let path = cfg.path.clone();
        let file = open_append(&path).map_err(|source| Error::Open {
            path: path.clone(),
            source,
        })?;
        let (commands, queue) = mpsc::channel();
        let counts = Arc::new(Counts::default());
        let writer = Writer {
            counts: counts.clone(),
            path: path.clone(),
            format: cfg.format,
            file: BufWriter::with_capacity(BUFFER_BYTES, file),
            line: Vec::with_capacity(512),
            trouble: None,
        };
        let thread = thread::Builder::new()
            .name("tern-accesslog".into())
            .spawn(move || writer.run(queue))
            .map_err(|source| Error::Spawn {
                path: path.clone(),
                source,
            })?;
        Ok(AccessLog {
            shared: Arc::new(Shared {
                path,
                counts,
                commands,
                thread: Some(thread),
            }),
        })
    }

    /// Queues a record for the writer. Never blocks (fine on an async
    /// runtime thread); rendering happens on the writer thread.
    pub fn log(&self, rec: AccessRecord) {
        self.send(Command::Write(rec));
    }

    /// Asks the writer to close the file and open the path again (for log
    /// rotation on SIGUSR1: after `mv access.log access.log.1`, later lines
    /// go to a new `access.log`). Records logged before the call go to the
    /// old file. If the path cannot be opened, the error is logged and lines
    /// keep going to the old file.
    pub fn reopen(&self) {
        self.send(Command::Reopen);
    }

    /// Blocks until every record logged so far has been written to the file
    /// (handed to the operating system; no fsync). Call it from a blocking
    /// context, at shutdown.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        self.send(Command::Flush(done));
        // An error means the writer is gone (it panicked, and said so):
        // there is nothing left to wait for.
        let _ = wait.recv();
    }

    /// Lines written and lost so far.
    pub fn counts(&self) -> LogCounts {
        LogCounts {
            lines: self.shared.counts.lines.load(Ordering::Relaxed),
            lost: self.shared.counts.lost.load(Ordering::Relaxed),
        }
    }

    /// The file this log writes to.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    fn send(&self, command: Command) {
        // The writer leaves its loop only on `Stop`, which is sent when the
        // last handle drops, so a send fails only if it panicked; then no
        // one is left to write the record.
        let _ = self.shared.commands.send(command);
    }
}

impl fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessLog")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(thread) = self.thread.take() {
            // A panic in the writer was already reported by the panic hook.
            let _ = thread.join();
        }
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The writer thread's state.
struct Writer {
    counts: Arc<Counts>,
    path: PathBuf,
    format: LogFormat,
    file: BufWriter<File>,
    /// One rendered line, reused.
    line: Vec<u8>,
    /// Set while writes fail, so that a full disk is reported once per
    /// burst of failures rather than once per line.
    trouble: Option<Trouble>,
}

#[derive(Debug)]
struct Trouble {
    /// Lines the buffer refused since the failures began. Lines already in
    /// the buffer are kept and retried on the next flush.
    lost_lines: u64,
}

impl Writer {
    fn run(mut self, queue: Receiver<Command>) {
        // A batch starts with a blocking receive and takes whatever else is
        // queued without blocking; the file is flushed when the queue runs
        // dry, and at least every FLUSH_EVERY within a long batch.
        while let Ok(first) = queue.recv() {
            let mut flushed_at = Instant::now();
            let mut next = Some(first);
            while let Some(command) = next {
                match command {
                    Command::Write(rec) => self.write(&rec),
                    Command::Reopen => self.reopen(),
                    Command::Flush(done) => {
                        self.flush();
                        let _ = done.send(());
                    }
                    Command::Stop => {
                        self.flush();
                        self.report_unwritten();
                        return;
                    }
                }
                if flushed_at.elapsed() >= FLUSH_EVERY {
                    self.flush();
                    flushed_at = Instant::now();
                }
                next = queue.try_recv().ok();
            }
            self.flush();
        }
    }

    fn write(&mut self, rec: &AccessRecord) {
        self.line.clear();
        render(self.format, rec, &mut self.line);
        // The whole line in one write_all: the buffer takes all of it or,
        // when it cannot make room, none of it, so no half line is queued.
        match self.file.write_all(&self.line) {
            Ok(()) => self.counts.lines.fetch_add(1, Ordering::Relaxed),
            Err(error) => {
                self.failed(&error, 1);
                self.counts.lost.fetch_add(1, Ordering::Relaxed)
            }
        };
    }

    fn flush(&mut self) {
        // Flushing an empty buffer writes nothing, so its success says
        // nothing about whether the file takes writes again.
        let writes = !self.file.buffer().is_empty();
        match self.file.flush() {
            Ok(()) if !writes => {}
            Ok(()) => {
                if let Some(trouble) = self.trouble.take() {
                    tracing::warn!(
                        path = %self.path.display(),
                        lost_lines = trouble.lost_lines,
                        "access log writable again",
                    );
                }
            }
            Err(error) => self.failed(&error, 0),
        }
    }

    fn failed(&mut self, error: &io::Error, lost_lines: u64) {
        match &mut self.trouble {
            Some(trouble) => trouble.lost_lines += lost_lines,
            None => {
                tracing::error!(
                    path = %self.path.display(),
                    %error,
                    "cannot write access log; lines are lost until writes succeed again",
                );
                self.trouble = Some(Trouble { lost_lines });
            }
        }
    }

    /// Flushes, then swaps in a freshly opened file at the same path. The
    /// old file is closed only once the new one is open, so a failed reopen
    /// loses nothing.
    fn reopen(&mut self) {
        self.flush();
        match open_append(&self.path) {
            Ok(file) => {
                let new = BufWriter::with_capacity(BUFFER_BYTES, file);
                // Dropping the old writer gives lines a full disk held back
                // one last try at the file they belong to.
                drop(mem::replace(&mut self.file, new));
            }
            Err(error) => tracing::error!(
                path = %self.path.display(),
                %error,
                "cannot reopen access log; still writing to the file open before",
            ),
        }
    }

    fn report_unwritten(&self) {
        if let Some(trouble) = &self.trouble {
            tracing::error!(
                path = %self.path.display(),
                lost_lines = trouble.lost_lines,
                unwritten_bytes = self.file.buffer().len(),
                "access log closed with lines that could not be written",
            );
        }
    }
}
