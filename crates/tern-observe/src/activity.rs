//! The activity history: per-minute request totals kept 28 days (WASD's
//! figure) in a fixed-size ring, in memory and in a file that survives
//! restarts.
//!
//! # File format
//!
//! Little-endian everywhere. The file has a fixed size (allocated with
//! `set_len` when it is created), so writing a minute never grows it:
//!
//! ```text
//! header (24 bytes)
//!   0..8    magic          b"TERNACT\0"
//!   8..12   version        u32 = 1
//!   12..16  slot count     u32 = MINUTES (40320)
//!   16..20  slot size      u32 = 100
//!   20..24  checksum       u32, FNV-1a 32-bit over bytes 0..20
//! MINUTES slots (100 bytes each), slot i at 24 + i * 100
//!   0..8    minute         u64, minutes since the Unix epoch; 0 = empty
//!   8..28   requests       5 x u32, by status class 1xx..5xx
//!   28..36  bytes          u64, response body bytes
//!   36..96  latency        15 x u32, per bucket of LATENCY_BOUNDS, then +Inf
//!   96..100 checksum       u32, FNV-1a 32-bit over bytes 0..96
//! ```
//!
//! Slot `i` holds the minute `m` with `m % MINUTES == i`. An all-zero slot
//! (what `set_len` leaves) is empty. The total is 4,032,024 bytes.
//!
//! A minute is one `write_at` of its slot alone, with no fsync: a crash can
//! tear at most the slot being written, which its checksum detects on the
//! next load (the slot is cleared, the rest kept). A file whose header does
//! not match is not ours to repair: it is renamed aside and a new history
//! started, so nothing is lost that a person might want to look at.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Minutes the history keeps: 28 days (WASD's figure).
pub const MINUTES: usize = 28 * 24 * 60;

/// Upper bounds (seconds) of the latency buckets: OpenTelemetry's advisory
/// buckets for `http.server.request.duration`.
pub const LATENCY_BOUNDS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

const MAGIC: [u8; 8] = *b"TERNACT\0";
const VERSION: u32 = 1;
const HEADER_SIZE: usize = 24;
const SLOT_SIZE: usize = 100;
const FILE_SIZE: usize = HEADER_SIZE + MINUTES * SLOT_SIZE;

/// One minute's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Minute {
    /// Requests finished in the minute by status class: 1xx, 2xx, 3xx, 4xx,
    /// 5xx (index 0..5).
    pub requests: [u32; 5],
    /// Response body bytes sent.
    pub bytes: u64,
    /// Request durations per bucket of [`LATENCY_BOUNDS`], not cumulative;
    /// the last (index 14) is over 10 s.
    pub latency: [u32; 15],
}

impl Minute {
    /// The number of requests in the minute (all status classes).
    pub fn total(&self) -> u64 {
        self.requests.iter().map(|&n| u64::from(n)).sum()
    }

    /// Adds `other` to these totals, field by field; a counter that would
    /// overflow stays at its maximum rather than wrapping to a small number.
    pub fn add(&mut self, other: &Minute) {
        for (a, b) in self.requests.iter_mut().zip(other.requests) {
            *a = a.saturating_add(b);
        }
        self.bytes = self.bytes.saturating_add(other.bytes);
        for (a, b) in self.latency.iter_mut().zip(other.latency) {
            *a = a.saturating_add(b);
        }
    }

    /// The q-quantile (0..=1) of the latency, in seconds, estimated as
    /// Prometheus's `histogram_quantile` does (linear interpolation inside
    /// the bucket, lower bound of the first bucket 0; a quantile falling in
    /// the +Inf bucket returns the last finite bound 10.0); `None` when no
    /// request. `q` outside 0..=1 is clamped; a NaN `q` gives `None`.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.latency.iter().map(|&n| u64::from(n)).sum();
        if total == 0 || q.is_nan() {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut before = 0u64;
        for (i, &n) in self.latency.iter().enumerate() {
            let cumulative = before + u64::from(n);
            // `cumulative > 0` skips leading empty buckets when q is 0, where
            // Prometheus would divide 0 by 0.
            if cumulative as f64 >= rank && cumulative > 0 {
                let Some(&end) = LATENCY_BOUNDS.get(i) else {
                    return Some(LATENCY_BOUNDS[LATENCY_BOUNDS.len() - 1]);
                };
                let start = if i == 0 { 0.0 } else { LATENCY_BOUNDS[i - 1] };
                let into = (rank - before as f64) / f64::from(n);
                return Some(start + (end - start) * into);
            }
            before = cumulative;
        }
        // Unreachable with rank <= total, but a float rounding must not panic.
        Some(LATENCY_BOUNDS[LATENCY_BOUNDS.len() - 1])
    }
}

/// The activity history could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ActivityError {
    /// I/O on the history file or its directory failed (permissions, a full
    /// disk, a parent that is not a directory).
    #[error("activity history {}: {action}: {source}", path.display())]
    Io {
        /// The history file.
        path: PathBuf,
        /// What was being done, e.g. "creating its directory".
        action: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Another process holds the file (a tern still stopping beside its
    /// replacement): two writers would overwrite each other's minutes.
    #[error("activity history {}: another process has it open", path.display())]
    Locked {
        /// The history file.
        path: PathBuf,
    },
}

impl ActivityError {
    /// The history file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ActivityError::Io { path, .. } | ActivityError::Locked { path } => path,
        }
    }
}

fn io_error<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(io::Error) -> ActivityError + 'a {
    move |source| ActivityError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// One slot of the ring: the minute it holds (0 = empty) and its totals.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    minute: u64,
    totals: Minute,
}

/// The ring of the last [`MINUTES`] minutes, in memory and (when opened on a
/// file) on disk.
#[derive(Debug)]
pub struct History {
    slots: Vec<Slot>,
    file: Option<File>,
    path: Option<PathBuf>,
    set_aside: Option<PathBuf>,
    cleared: usize,
    latest: Option<u64>,
}

impl History {
    /// A history kept only in memory (no state directory, or tests).
    pub fn in_memory() -> History {
        History {
            slots: vec![Slot::default(); MINUTES],
            file: None,
            path: None,
            set_aside: None,
            cleared: 0,
            latest: None,
        }
    }

    /// The history kept in `path`: loaded if it exists, created (with its
    /// parent directories) if not.
    ///
    /// A file that is not a history of this format (wrong magic, version,
    /// size, or header checksum) is renamed aside to
    /// `<path>.corrupt-<unix seconds>` and a new one started:
    /// [`set_aside`](History::set_aside) then returns the new name so the
    /// caller can log it. A slot whose own checksum is wrong (a write torn by
    /// a crash) is cleared, in memory and on disk, and counted in
    /// [`cleared_slots`](History::cleared_slots); the rest is kept. I/O
    /// errors (permissions, disk) are returned as [`ActivityError`] naming
    /// the path.
    pub fn open(path: &Path) -> Result<History, ActivityError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_error(path, "creating its directory"))?;
        }
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return create(path),
            Err(e) => return Err(io_error(path, "opening")(e)),
        };
        lock(&file, path)?;
        let len = file.metadata().map_err(io_error(path, "reading"))?.len();
        // The size is checked before reading so a large foreign file is not
        // read into memory.
        if len == FILE_SIZE as u64 {
            let mut buf = Vec::with_capacity(FILE_SIZE);
            (&file)
                .read_to_end(&mut buf)
                .map_err(io_error(path, "reading"))?;
            if buf.len() == FILE_SIZE && header_ok(&buf[..HEADER_SIZE]) {
                return load(path, file, &buf);
            }
        }
        drop(file);
        let aside = aside_name(path);
        fs::rename(path, &aside).map_err(io_error(path, "setting aside a foreign file"))?;
        let mut history = create(path)?;
        history.set_aside = Some(aside);
        Ok(history)
    }

    /// Where a foreign file found at the history's path was moved by
    /// [`open`](History::open), if one was.
    pub fn set_aside(&self) -> Option<&Path> {
        self.set_aside.as_deref()
    }

    /// How many slots [`open`](History::open) found torn (bad checksum, or
    /// a minute that does not belong in the slot) and cleared.
    pub fn cleared_slots(&self) -> usize {
        self.cleared
    }

    /// Adds `m` to the totals of `minute` (minutes since the Unix epoch).
    ///
    /// The slot is `minute % MINUTES`; a slot holding an older minute is
    /// reset first; a minute older than the one a slot holds is ignored
    /// (returns `Ok`), as is minute 0, which marks an empty slot.
    /// File-backed: that slot alone is written (`FileExt::write_at` at its
    /// offset), with its checksum.
    pub fn record(&mut self, minute: u64, m: &Minute) -> Result<(), ActivityError> {
        if minute == 0 {
            return Ok(());
        }
        let index = slot_index(minute);
        let slot = &mut self.slots[index];
        if slot.minute > minute {
            return Ok(());
        }
        if slot.minute < minute {
            *slot = Slot {
                minute,
                totals: Minute::default(),
            };
        }
        slot.totals.add(m);
        let slot = *slot;
        self.latest = Some(self.latest.map_or(minute, |l| l.max(minute)));
        if let (Some(file), Some(path)) = (&self.file, &self.path) {
            file.write_all_at(&encode_slot(&slot), slot_offset(index))
                .map_err(io_error(path, "writing"))?;
        }
        Ok(())
    }

    /// The minutes in `[from, to)`, oldest first, one entry per minute (a
    /// minute with no slot, or whose slot holds another minute, is all
    /// zeros). `to - from` is capped at [`MINUTES`] (the newest `MINUTES`
    /// are kept).
    pub fn range(&self, from: u64, to: u64) -> Vec<Minute> {
        let from = from.max(to.saturating_sub(MINUTES as u64));
        (from..to)
            .map(|minute| {
                let slot = &self.slots[slot_index(minute)];
                if minute != 0 && slot.minute == minute {
                    slot.totals
                } else {
                    Minute::default()
                }
            })
            .collect()
    }

    /// The newest minute recorded, if any.
    pub fn latest(&self) -> Option<u64> {
        self.latest
    }
}

fn slot_index(minute: u64) -> usize {
    // The remainder is below MINUTES, so it fits a usize.
    (minute % MINUTES as u64) as usize
}

fn slot_offset(index: usize) -> u64 {
    (HEADER_SIZE + index * SLOT_SIZE) as u64
}

/// `<path>.corrupt-<unix seconds>`: next to the history, so whoever looks
/// for it finds it, and dated, so several can pile up without clashing.
fn aside_name(path: &Path) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".corrupt-{secs}"));
    PathBuf::from(name)
}

/// Creates an empty history at `path`. The header is written to a temporary
/// file in the same directory which is then renamed into place, so a crash
/// during creation leaves either no file or a whole one, never a half header.
fn create(path: &Path) -> Result<History, ActivityError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".new-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(&header())?;
        file.set_len(FILE_SIZE as u64)?;
        file.sync_all()?;
        Ok(file)
    })();
    // Locked before it takes the history's name, so that no other process
    // can open it unlocked in between.
    let result = result.and_then(|file| {
        if !try_lock(&file)? {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "locked"));
        }
        fs::rename(&tmp, path)?;
        Ok(file)
    });
    match result {
        Ok(file) => {
            let mut history = History::in_memory();
            // The handle opened on the temporary name is the renamed file.
            history.file = Some(file);
            history.path = Some(path.to_path_buf());
            Ok(history)
        }
        Err(e) => {
            // Best effort: the temporary file is useless, and the error that
            // matters is the one returned.
            let _ = fs::remove_file(&tmp);
            Err(io_error(path, "creating")(e))
        }
    }
}

/// Takes `file`'s exclusive lock (held while the file is open), or
/// [`ActivityError::Locked`].
fn lock(file: &File, path: &Path) -> Result<(), ActivityError> {
    match try_lock(file) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ActivityError::Locked {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(io_error(path, "locking")(e)),
    }
}

/// Whether `file`'s exclusive advisory lock was taken (false: another
/// process holds it).
fn try_lock(file: &File) -> io::Result<bool> {
    use rustix::fs::{flock, FlockOperation};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Builds the history from a whole file whose header was checked.
fn load(path: &Path, file: File, buf: &[u8]) -> Result<History, ActivityError> {
    let mut history = History::in_memory();
    // A minute later than now (written while the clock was ahead) would
    // keep its slot from being written until that minute came: cleared.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(u64::MAX, |d| d.as_secs() / 60);
    let slots = buf[HEADER_SIZE..].chunks_exact(SLOT_SIZE);
    for (index, bytes) in slots.enumerate() {
        if bytes.iter().all(|&b| b == 0) {
            continue;
        }
        match decode_slot(bytes) {
            Some(slot)
                if slot.minute != 0
                    && slot_index(slot.minute) == index
                    && slot.minute <= now.saturating_add(1) =>
            {
                history.latest = Some(history.latest.map_or(slot.minute, |l| l.max(slot.minute)));
                history.slots[index] = slot;
            }
            _ => {
                // Zeroed on disk too, so the next load does not count it again.
                file.write_all_at(&[0; SLOT_SIZE], slot_offset(index))
                    .map_err(io_error(path, "clearing a torn slot"))?;
                history.cleared += 1;
            }
        }
    }
    history.file = Some(file);
    history.path = Some(path.to_path_buf());
    Ok(history)
}

fn header() -> [u8; HEADER_SIZE] {
    let mut h = [0; HEADER_SIZE];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(MINUTES as u32).to_le_bytes());
    h[16..20].copy_from_slice(&(SLOT_SIZE as u32).to_le_bytes());
    let sum = fnv1a(&h[..20]);
    h[20..24].copy_from_slice(&sum.to_le_bytes());
    h
}

fn header_ok(bytes: &[u8]) -> bool {
    bytes == header()
}

fn encode_slot(slot: &Slot) -> [u8; SLOT_SIZE] {
    let mut b = [0; SLOT_SIZE];
    b[0..8].copy_from_slice(&slot.minute.to_le_bytes());
    for (i, n) in slot.totals.requests.iter().enumerate() {
        b[8 + 4 * i..12 + 4 * i].copy_from_slice(&n.to_le_bytes());
    }
    b[28..36].copy_from_slice(&slot.totals.bytes.to_le_bytes());
    for (i, n) in slot.totals.latency.iter().enumerate() {
        b[36 + 4 * i..40 + 4 * i].copy_from_slice(&n.to_le_bytes());
    }
    let sum = fnv1a(&b[..96]);
    b[96..100].copy_from_slice(&sum.to_le_bytes());
    b
}

/// The slot in `b` (SLOT_SIZE bytes), or `None` when its checksum is wrong.
fn decode_slot(b: &[u8]) -> Option<Slot> {
    if fnv1a(&b[..96]) != read_u32(b, 96) {
        return None;
    }
    let mut totals = Minute::default();
    for (i, n) in totals.requests.iter_mut().enumerate() {
        *n = read_u32(b, 8 + 4 * i);
    }
    totals.bytes = read_u64(b, 28);
    for (i, n) in totals.latency.iter_mut().enumerate() {
        *n = read_u32(b, 36 + 4 * i);
    }
    Some(Slot {
        minute: read_u64(b, 0),
        totals,
    })
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// FNV-1a, 32 bits: enough to catch a torn write, and a few lines.
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_process_finds_the_file_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity.bin");
        let first = History::open(&path).unwrap();
        // Another open file description, as another process would have.
        match History::open(&path) {
            Err(ActivityError::Locked { path: p }) => assert_eq!(p, path),
            other => panic!("{other:?}"),
        }
        drop(first);
        assert!(
            History::open(&path).is_ok(),
            "free once the first is closed"
        );
    }

    fn sample(status: usize, n: u32) -> Minute {
        let mut m = Minute::default();
        m.requests[status] = n;
        m.bytes = u64::from(n) * 100;
        m.latency[3] = n;
        m
    }

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn file_size_is_as_documented() {
        assert_eq!(FILE_SIZE, 4_032_024);
    }

    #[test]
    fn record_and_read_back_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/deep/activity");
        let now = 29_000_000;
        {
            let mut h = History::open(&path).unwrap();
            assert_eq!(h.latest(), None);
            assert!(h.set_aside().is_none());
            h.record(now, &sample(1, 3)).unwrap();
            h.record(now, &sample(4, 1)).unwrap();
            h.record(now + 2, &sample(1, 7)).unwrap();
        }
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            FILE_SIZE as u64,
            "the size never changes"
        );
        let h = History::open(&path).unwrap();
        assert_eq!(h.cleared_slots(), 0);
        assert!(h.set_aside().is_none());
        assert_eq!(h.latest(), Some(now + 2));
        let r = h.range(now, now + 3);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].requests, [0, 3, 0, 0, 1]);
        assert_eq!(r[0].bytes, 400);
        assert_eq!(r[0].latency[3], 4);
        assert_eq!(r[1], Minute::default());
        assert_eq!(r[2].total(), 7);
    }

    #[test]
    fn a_minute_28_days_later_reuses_the_slot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity");
        let old = 29_000_000;
        let new = old + MINUTES as u64;
        let mut h = History::open(&path).unwrap();
        h.record(old, &sample(1, 5)).unwrap();
        h.record(new, &sample(2, 2)).unwrap();
        // An older minute than the slot holds is ignored.
        h.record(old, &sample(1, 9)).unwrap();
        let check = |h: &History| {
            assert_eq!(h.range(old, old + 1), vec![Minute::default()]);
            assert_eq!(h.range(new, new + 1)[0].requests, [0, 0, 2, 0, 0]);
            assert_eq!(h.latest(), Some(new));
        };
        check(&h);
        drop(h);
        check(&History::open(&path).unwrap());
    }

    #[test]
    fn ranges_with_gaps_come_back_zero_and_are_capped() {
        let mut h = History::in_memory();
        let t = 29_000_000;
        h.record(t, &sample(1, 1)).unwrap();
        h.record(t + 5, &sample(1, 2)).unwrap();
        let r = h.range(t - 2, t + 7);
        let totals: Vec<u64> = r.iter().map(Minute::total).collect();
        assert_eq!(totals, [0, 0, 1, 0, 0, 0, 0, 2, 0]);
        assert!(h.range(t, t).is_empty());
        assert!(h.range(t + 1, t).is_empty());
        let long = h.range(0, t + 6);
        assert_eq!(long.len(), MINUTES);
        assert_eq!(long[MINUTES - 1].total(), 2);
        assert_eq!(long[MINUTES - 6].total(), 1);
    }

    #[test]
    fn minute_add_saturates() {
        let mut a = Minute {
            requests: [u32::MAX - 1, 1, 0, 0, 0],
            bytes: u64::MAX,
            latency: [0; 15],
        };
        a.add(&sample(0, 5));
        assert_eq!(a.requests[0], u32::MAX);
        assert_eq!(a.bytes, u64::MAX);
        assert_eq!(a.latency[3], 5);
        assert_eq!(a.total(), u64::from(u32::MAX) + 1);
    }

    #[test]
    fn a_torn_slot_is_cleared_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity");
        let t = 29_000_000;
        {
            let mut h = History::open(&path).unwrap();
            for i in 0..3 {
                h.record(t + i, &sample(1, 10 + i as u32)).unwrap();
            }
        }
        let mut bytes = fs::read(&path).unwrap();
        let at = slot_offset(slot_index(t + 1)) as usize + 30;
        bytes[at] ^= 0x40;
        fs::write(&path, &bytes).unwrap();

        let h = History::open(&path).unwrap();
        assert_eq!(h.cleared_slots(), 1);
        assert!(h.set_aside().is_none());
        let totals: Vec<u64> = h.range(t, t + 3).iter().map(Minute::total).collect();
        assert_eq!(totals, [10, 0, 12]);
        drop(h);
        // Cleared on disk as well: the next load finds nothing torn.
        let h = History::open(&path).unwrap();
        assert_eq!(h.cleared_slots(), 0);
        assert_eq!(h.range(t, t + 3)[2].total(), 12);
    }

    #[test]
    fn a_slot_holding_a_minute_of_another_slot_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity");
        History::open(&path).unwrap();
        let slot = Slot {
            minute: 29_000_000,
            totals: sample(1, 1),
        };
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        let wrong = slot_index(slot.minute) + 1;
        file.write_all_at(&encode_slot(&slot), slot_offset(wrong))
            .unwrap();
        let h = History::open(&path).unwrap();
        assert_eq!(h.cleared_slots(), 1);
        assert_eq!(h.latest(), None);
    }

    fn assert_set_aside(path: &Path, original: &[u8]) {
        let mut h = History::open(path).unwrap();
        let aside = h.set_aside().expect("set aside").to_path_buf();
        let name = aside.file_name().unwrap().to_str().unwrap();
        let secs: u64 = name
            .strip_prefix("activity.corrupt-")
            .expect("documented name")
            .parse()
            .unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(secs <= now && now - secs < 60);
        assert_eq!(fs::read(&aside).unwrap(), original);
        fs::remove_file(&aside).unwrap();
        // A fresh history works and persists.
        assert_eq!(h.latest(), None);
        h.record(29_000_000, &sample(2, 4)).unwrap();
        drop(h);
        let h = History::open(path).unwrap();
        assert!(h.set_aside().is_none());
        assert_eq!(h.range(29_000_000, 29_000_001)[0].total(), 4);
    }

    #[test]
    fn foreign_files_are_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("activity");

        // Random bytes of the right size.
        let mut x: u32 = 12345;
        let random: Vec<u8> = (0..FILE_SIZE)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        fs::write(&path, &random).unwrap();
        assert_set_aside(&path, &random);

        // The wrong size (a history cut short).
        let mut short = fs::read(&path).unwrap();
        short.truncate(1000);
        fs::write(&path, &short).unwrap();
        assert_set_aside(&path, &short);

        // The right size and a good checksum, but the wrong magic.
        let mut bytes = fs::read(&path).unwrap();
        bytes[0..8].copy_from_slice(b"TERNXXX\0");
        let sum = fnv1a(&bytes[..20]);
        bytes[20..24].copy_from_slice(&sum.to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        assert_set_aside(&path, &bytes);

        // A version from the future.
        let mut bytes = fs::read(&path).unwrap();
        bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
        let sum = fnv1a(&bytes[..20]);
        bytes[20..24].copy_from_slice(&sum.to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        assert_set_aside(&path, &bytes);

        // Only the history and no leftover temporary file.
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_directory_that_cannot_be_created_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        fs::write(&file, b"not a directory").unwrap();
        let path = file.join("state/activity");
        let err = History::open(&path).unwrap_err();
        assert_eq!(err.path(), path);
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("activity history {}: ", path.display())),
            "{message}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn a_directory_at_the_path_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = History::open(dir.path()).unwrap_err();
        assert_eq!(err.path(), dir.path());
    }

    #[test]
    fn quantile_of_no_request_is_none() {
        assert_eq!(Minute::default().quantile(0.5), None);
        assert_eq!(sample(1, 1).quantile(f64::NAN), None);
    }

    #[test]
    fn quantile_interpolates_inside_the_bucket() {
        let mut m = Minute::default();
        // 10 requests in (0.05, 0.075].
        m.latency[4] = 10;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(m.quantile(0.5).unwrap(), 0.0625));
        assert!(close(m.quantile(1.0).unwrap(), 0.075));
        assert!(close(m.quantile(0.0).unwrap(), 0.05));
        // The first bucket's lower bound is 0.
        let mut m = Minute::default();
        m.latency[0] = 4;
        assert!(close(m.quantile(0.25).unwrap(), 0.00125));
        // Across buckets: 2 in the first, 2 in (0.005, 0.01].
        m.latency[0] = 2;
        m.latency[1] = 2;
        assert!(close(m.quantile(0.75).unwrap(), 0.0075));
        assert!(close(m.quantile(0.5).unwrap(), 0.005));
    }

    #[test]
    fn quantile_in_the_inf_bucket_is_the_last_bound() {
        let mut m = Minute::default();
        m.latency[14] = 3;
        assert_eq!(m.quantile(0.5), Some(10.0));
        m.latency[0] = 97;
        assert_eq!(m.quantile(0.99), Some(10.0));
        assert!(m.quantile(0.9).unwrap() < 0.005);
    }
}
