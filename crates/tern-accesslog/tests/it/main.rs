//! The access log writer against real files in temporary directories.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, UNIX_EPOCH};

use tern_accesslog::{parse, AccessLog, AccessRecord, Error, LogFormat};
use tern_config::AccessLogConfig;

fn config(path: &Path, format: LogFormat) -> AccessLogConfig {
    AccessLogConfig {
        path: path.to_owned(),
        format,
    }
}

/// Record `id`: its id is in the target too, so every format carries it.
/// Whole milliseconds, so a JSON line gives back the very same record.
fn record(id: u64) -> AccessRecord {
    AccessRecord {
        time: UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + id),
        remote: Some([127, 0, 0, 1].into()),
        remote_port: Some(40_000 + (id % 20_000) as u16),
        user: None,
        method: "GET".into(),
        target: format!("/item/{id}?q=a%20b"),
        protocol: "HTTP/1.1".into(),
        status: 200,
        bytes: id * 7,
        referer: None,
        user_agent: Some("bench \"quoted\"\nsecond line".into()),
        host: Some("example.test".into()),
        duration: Duration::from_micros(id),
        request_id: id,
        tls_protocol: None,
        tls_cipher: None,
    }
}

/// The ids of the lines of `path`, in file order; every line must parse.
fn ids(path: &Path, format: LogFormat) -> Vec<u64> {
    let text = fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "last line cut short"
    );
    text.lines()
        .map(|line| {
            let rec = parse(format, line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            let id = rec.target["/item/".len()..].split('?').next().unwrap();
            id.parse().unwrap()
        })
        .collect()
}

/// Logs ids `0..threads * per_thread`, each thread a contiguous share.
fn log_from_threads(log: &AccessLog, threads: u64, per_thread: u64) {
    thread::scope(|scope| {
        for t in 0..threads {
            let log = log.clone();
            scope.spawn(move || {
                for i in 0..per_thread {
                    log.log(record(t * per_thread + i));
                }
            });
        }
    });
}

fn assert_each_once(mut ids: Vec<u64>, count: u64) {
    ids.sort_unstable();
    assert_eq!(ids, (0..count).collect::<Vec<_>>());
}

#[test]
fn dropping_the_last_handle_writes_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let log = AccessLog::open(&config(&path, LogFormat::Json)).unwrap();
    log_from_threads(&log, 4, 2_500);
    drop(log);

    let text = fs::read_to_string(&path).unwrap();
    let mut seen = vec![false; 10_000];
    for line in text.lines() {
        let rec = parse(LogFormat::Json, line).unwrap();
        assert_eq!(rec, record(rec.request_id));
        assert!(!std::mem::replace(&mut seen[rec.request_id as usize], true));
    }
    assert!(seen.iter().all(|&seen| seen), "records missing");
    assert!(text.ends_with('\n'));
}

#[test]
fn flush_waits_for_every_record_logged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let log = AccessLog::open(&config(&path, LogFormat::Combined)).unwrap();
    log_from_threads(&log, 4, 2_500);
    log.flush();
    assert_each_once(ids(&path, LogFormat::Combined), 10_000);
    // Still logging after a flush.
    log.log(record(10_000));
    log.flush();
    assert_each_once(ids(&path, LogFormat::Combined), 10_001);
}

#[test]
fn reopen_after_rename_splits_the_lines_between_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let rotated = dir.path().join("access.log.1");
    let log = AccessLog::open(&config(&path, LogFormat::Common)).unwrap();
    for id in 0..3_000 {
        log.log(record(id));
    }
    // No flush: the records queued before reopen must still land in the
    // old file, which the writer holds open across the rename.
    fs::rename(&path, &rotated).unwrap();
    log.reopen();
    for id in 3_000..6_000 {
        log.log(record(id));
    }
    log.flush();
    assert_eq!(
        ids(&rotated, LogFormat::Common),
        (0..3_000).collect::<Vec<_>>()
    );
    assert_eq!(
        ids(&path, LogFormat::Common),
        (3_000..6_000).collect::<Vec<_>>()
    );
}

#[test]
fn failed_reopen_keeps_writing_to_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    let log = AccessLog::open(&config(&logs.join("access.log"), LogFormat::Json)).unwrap();
    log.log(record(0));
    // The directory goes away (with the open file), so the path cannot be
    // opened again.
    let moved = dir.path().join("moved");
    fs::rename(&logs, &moved).unwrap();
    log.reopen();
    log.log(record(1));
    drop(log);
    assert_eq!(ids(&moved.join("access.log"), LogFormat::Json), [0, 1]);
    assert!(!logs.exists());
}

#[test]
fn opening_in_a_missing_directory_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("access.log");
    let err = AccessLog::open(&config(&path, LogFormat::Combined)).unwrap_err();
    assert!(matches!(&err, Error::Open { source, .. } if source.kind() == io::ErrorKind::NotFound));
    assert_eq!(err.path(), path);
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

/// Everything the tracing subscriber prints, for tests that read it.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines_with(&self, needles: &[&str]) -> usize {
        let text = String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
        text.lines()
            .filter(|line| needles.iter().all(|needle| line.contains(needle)))
            .count()
    }
}

#[test]
fn a_full_disk_is_reported_once_per_burst_and_nothing_panics() {
    let full = PathBuf::from("/dev/full");
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .finish();
    // The only test in this binary that installs a subscriber; the lines it
    // counts name /dev/full, which no other test writes to.
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let log = AccessLog::open(&config(&full, LogFormat::Combined)).unwrap();
    // More than the writer's buffer holds, in several batches.
    for batch in 0..4 {
        for id in 0..2_000 {
            log.log(record(batch * 2_000 + id));
        }
        log.flush();
    }
    drop(log);

    let write_errors = captured.lines_with(&["ERROR", "/dev/full", "cannot write access log"]);
    assert_eq!(write_errors, 1);
    // The writer thread lived to the end and said what it could not write.
    let closed = captured.lines_with(&["/dev/full", "closed with lines that could not be written"]);
    assert_eq!(closed, 1);
}

#[test]
fn handles_are_cheap_to_share_across_threads() {
    fn send_sync_clone<T: Send + Sync + Clone>() {}
    send_sync_clone::<AccessLog>();
}
