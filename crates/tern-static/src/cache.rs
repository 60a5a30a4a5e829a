//! The file cache: ready responses for small files, shared by every site.
//!
//! Like WASD's file cache and nginx's `open_file_cache`, but holding the
//! response itself: each entry is a request path's file (for a directory
//! path, its index file) with every representation that exists on disk
//! (the file and its `.br`/`.zst`/`.gz` sidecars), each with prebuilt
//! headers and, once read, its body as `Bytes`. Keeping the variants of a
//! path in one entry is what lets a hit choose the encoding without a
//! syscall: negotiation needs to know which sidecars exist.
//!
//! A site that keeps no bodies (its `cache = false`, or the cache's
//! `enabled = false`) still keeps entries, as nginx's `open_file_cache` and
//! lighttpd's stat cache do: the headers, which sidecars exist, and the
//! open file, whose bytes a hit reads again (a small body with one `pread`
//! on the worker thread, a larger one sent from the file). So an uncached
//! request costs a read, not the four opens, the stat and the close of a
//! path looked up again. At most [`max_files_held`] files are held open.
//!
//! A hit is a sharded read lock, a hash lookup and reference-count clones.
//! An entry older than `revalidate` is not served until the slow path has
//! re-resolved the file and compared stamps (size, mtime, inode): unchanged
//! bodies are kept, changed ones reloaded, and a vanished file's entry
//! removed. The byte total is bounded by `max_bytes`, the open files by
//! [`max_files_held`] and the entries by [`MAX_ENTRIES`]; eviction is CLOCK
//! (second chance in insertion order): a hit sets an entry's reference bit,
//! and the eviction hand spares a referenced entry once.

use std::collections::VecDeque;
use std::fs::File;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hashbrown::{DefaultHashBuilder, Equivalent, HashMap};
use tern_config::{CacheConfig, StaticConfig};
use tern_handler::worth_sending_from_file;

use crate::encoding::{Coding, CodingSet};
use crate::representation::Representation;
use crate::response::Source;

const SHARDS: usize = 16;

/// A snapshot of the cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests answered from memory without touching the file system.
    pub hits: u64,
    /// Requests on caching sites that needed the file system (absent or
    /// stale entry, variant not loaded, file too large, not a file).
    pub misses: u64,
    /// Entries dropped to stay within `max_bytes`, the open files' limit
    /// or the entries' limit.
    pub evictions: u64,
    /// Entries held now.
    pub entries: u64,
    /// Body bytes held now.
    pub bytes: u64,
}

/// One representation of a cached path.
#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub(crate) rep: Arc<Representation>,
    /// The whole representation; `None` when it was not needed yet or is
    /// larger than `max_entry_bytes`.
    pub(crate) body: Option<Bytes>,
    /// The file the body was read from, kept open for a body worth sending
    /// from it (see [`HeldFile::hold`]).
    pub(crate) file: Option<Arc<HeldFile>>,
}

impl Variant {
    /// Where a response takes this variant's bytes from: its body in
    /// memory (with its open file too, when the cache keeps one), or, on a
    /// site that keeps no bodies, the open file alone. `None` when the
    /// entry has neither.
    pub(crate) fn source(&self) -> Option<Source> {
        Some(match (&self.body, &self.file) {
            (Some(body), Some(held)) => Source::Cached(body.clone(), Arc::clone(&held.0)),
            (Some(body), None) => Source::Memory(body.clone()),
            (None, Some(held)) => Source::File(Arc::clone(&held.0)),
            (None, None) => return None,
        })
    }
}

/// The most files the cache keeps open, over every entry: 1,024 (nginx's
/// `open_file_cache max=1000` is the same idea), or a quarter of the
/// open-file limit if that is lower, so held files never leave connections
/// short of descriptors. Past it, a body cache copies a large body from
/// memory, as it always does a small one, and a site that keeps no bodies
/// makes room by eviction.
pub(crate) fn max_files_held() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        limit.map_or(1024, |n| usize::try_from(n / 4).unwrap_or(1024).min(1024))
    })
}

/// The most entries the cache keeps, whatever their bytes: an empty file's
/// entry holds no body bytes, yet its headers take memory.
pub(crate) const MAX_ENTRIES: usize = 64 * 1024;

/// Files the cache keeps open now.
static FILES_HELD: AtomicUsize = AtomicUsize::new(0);

/// An open file a cache entry keeps, so that a hit on a large body can be
/// sent from the file (`sendfile(2)`, no copy into the socket) with no
/// open or close per request. Its bytes are the entry's: it is the file
/// the body was read from or, on a refresh, one with the same stamp (size,
/// mtime, inode); a file changed in place between two refreshes is sent
/// as it is now, as nginx's `open_file_cache` does.
#[derive(Debug)]
pub(crate) struct HeldFile(pub(crate) Arc<File>);

impl HeldFile {
    /// Keeps `file` open beside a body of `len` bytes in memory, unless it
    /// is not worth sending from the file ([`worth_sending_from_file`]) or
    /// the cache keeps its most files already.
    pub(crate) fn beside_body(file: &Arc<File>, len: u64) -> Option<Arc<HeldFile>> {
        if !worth_sending_from_file(len) {
            return None;
        }
        FILES_HELD
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max_files_held()).then_some(n + 1)
            })
            .ok()?;
        Some(Arc::new(HeldFile(Arc::clone(file))))
    }

    /// Keeps `file` open in place of its body, for a site that keeps no
    /// bodies. Past [`max_files_held`], storing the entry evicts others.
    pub(crate) fn instead_of_body(file: &Arc<File>) -> Arc<HeldFile> {
        FILES_HELD.fetch_add(1, Ordering::Relaxed);
        Arc::new(HeldFile(Arc::clone(file)))
    }
}

impl Drop for HeldFile {
    fn drop(&mut self) {
        FILES_HELD.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Which limit the cache is past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Over {
    No,
    /// Its bytes or its entries: any entry may go.
    Size,
    /// Only the open files: only an entry that holds one helps.
    Files,
}

/// A cached request path. Immutable once stored; a refresh stores a new one.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) checked: Instant,
    pub(crate) sidecars: CodingSet,
    pub(crate) variants: [Option<Variant>; 4],
    generation: u64,
    referenced: AtomicBool,
    bytes: u64,
    /// Whether any representation can be served from the entry: its body
    /// in memory (an empty file's too, with zero bytes) or its open file.
    servable: bool,
    /// Whether any representation keeps its file open.
    holds_files: bool,
}

impl Entry {
    pub(crate) fn new(
        checked: Instant,
        sidecars: CodingSet,
        variants: [Option<Variant>; 4],
    ) -> Entry {
        let holds_files = variants.iter().flatten().any(|v| v.file.is_some());
        let servable = holds_files || variants.iter().flatten().any(|v| v.body.is_some());
        let bytes = variants
            .iter()
            .flatten()
            .filter_map(|v| v.body.as_ref())
            .map(|b| b.len() as u64)
            .sum();
        Entry {
            checked,
            sidecars,
            variants,
            generation: 0,
            referenced: AtomicBool::new(false),
            bytes,
            servable,
            holds_files,
        }
    }

    pub(crate) fn variant(&self, c: Coding) -> Option<&Variant> {
        self.variants[c.index()].as_ref()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    ns: u32,
    path: Arc<str>,
}

/// The borrowed form of [`Key`], so a lookup allocates nothing. Its derived
/// `Hash` hashes the same fields in the same order, hence equal hashes.
#[derive(Hash)]
struct KeyRef<'a> {
    ns: u32,
    path: &'a str,
}

impl Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.ns == key.ns && self.path == &*key.path
    }
}

type Shard = RwLock<HashMap<Key, Arc<Entry>>>;

/// The cache of ready responses, shared by every site (`Send + Sync`).
#[derive(Debug)]
pub struct FileCache {
    shards: Box<[Shard]>,
    hasher: DefaultHashBuilder,
    /// Insertion order for the CLOCK hand: (key, generation). Stale pairs
    /// (replaced or removed entries) are skipped and compacted away.
    clock: Mutex<VecDeque<(Key, u64)>>,
    /// Sites that share a configuration share cache entries (the entry's
    /// headers depend on the site's settings, so different ones do not).
    namespaces: Mutex<Vec<StaticConfig>>,
    /// Whether bodies are kept (`enabled`, and room for some).
    bodies: bool,
    max_bytes: u64,
    max_entry_bytes: u64,
    revalidate: Duration,
    generation: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    entries: AtomicU64,
    bytes: AtomicU64,
}

impl FileCache {
    /// A cache with the given limits. With `enabled = false` it keeps no
    /// bodies, only open files (see the module docs).
    pub fn new(cfg: &CacheConfig) -> Arc<FileCache> {
        Arc::new(FileCache {
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            hasher: DefaultHashBuilder::default(),
            clock: Mutex::default(),
            namespaces: Mutex::default(),
            bodies: cfg.enabled && cfg.max_bytes > 0,
            max_bytes: cfg.max_bytes,
            max_entry_bytes: cfg.max_entry_bytes.min(cfg.max_bytes),
            revalidate: cfg.revalidate,
            generation: AtomicU64::new(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    /// The counters now.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    /// Whether the cache keeps bodies at all (a site may keep none even
    /// so: its `cache = false`).
    pub(crate) fn keeps_bodies(&self) -> bool {
        self.bodies
    }

    /// Largest body kept.
    pub(crate) fn max_entry_bytes(&self) -> u64 {
        self.max_entry_bytes
    }

    /// Whether an entry checked at `checked` may be served at `now` unchecked.
    pub(crate) fn is_fresh(&self, checked: Instant, now: Instant) -> bool {
        now.saturating_duration_since(checked) < self.revalidate
    }

    /// The namespace for a site's settings (same settings, same namespace,
    /// so entries survive a config reload that leaves the site unchanged).
    pub(crate) fn namespace(&self, cfg: &StaticConfig) -> u32 {
        let mut all = self.namespaces.lock().unwrap_or_else(|p| p.into_inner());
        let i = all.iter().position(|c| c == cfg).unwrap_or_else(|| {
            all.push(cfg.clone());
            all.len() - 1
        });
        u32::try_from(i).expect("fewer than 2^32 distinct site configurations")
    }

    pub(crate) fn count_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    fn shard(&self, key: &KeyRef<'_>) -> &Shard {
        let h = self.hasher.hash_one(key);
        &self.shards[(h >> 32) as usize % SHARDS]
    }

    /// The entry for a path, fresh or not, marking it recently used.
    pub(crate) fn get(&self, ns: u32, path: &str) -> Option<Arc<Entry>> {
        let key = KeyRef { ns, path };
        let map = self.shard(&key).read().unwrap_or_else(|p| p.into_inner());
        let entry = map.get(&key)?;
        if !entry.referenced.load(Ordering::Relaxed) {
            entry.referenced.store(true, Ordering::Relaxed);
        }
        Some(Arc::clone(entry))
    }

    /// Stores `entry` for a path, replacing any older one, then evicts until
    /// the totals fit. An entry with nothing to serve from, or too large, is
    /// not kept (and the older one is removed, as it is out of date).
    pub(crate) fn store(&self, ns: u32, path: &str, mut entry: Entry) {
        if !entry.servable || entry.bytes > self.max_bytes {
            self.remove(ns, path);
            return;
        }
        entry.generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let generation = entry.generation;
        let key = Key {
            ns,
            path: Arc::from(path),
        };
        let shard = self.shard(&KeyRef { ns, path });
        let added = entry.bytes;
        let old = {
            let mut map = shard.write().unwrap_or_else(|p| p.into_inner());
            map.insert(key.clone(), Arc::new(entry))
        };
        self.bytes.fetch_add(added, Ordering::Relaxed);
        match old {
            Some(old) => {
                self.bytes.fetch_sub(old.bytes, Ordering::Relaxed);
            }
            None => {
                self.entries.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut clock = self.clock.lock().unwrap_or_else(|p| p.into_inner());
        clock.push_back((key, generation));
        self.evict(&mut clock);
        // Replaced entries leave stale pairs behind; keep the queue within a
        // constant factor of the live entries.
        if clock.len() > 2 * self.entries.load(Ordering::Relaxed) as usize + 64 {
            clock.retain(|(k, g)| self.generation_of(k) == Some(*g));
        }
    }

    /// Forgets a path (its file is gone or no longer cacheable).
    pub(crate) fn remove(&self, ns: u32, path: &str) {
        let key = KeyRef { ns, path };
        let removed = self
            .shard(&key)
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        if let Some(old) = removed {
            self.forget(&old);
        }
    }

    fn forget(&self, old: &Entry) {
        self.bytes.fetch_sub(old.bytes, Ordering::Relaxed);
        self.entries.fetch_sub(1, Ordering::Relaxed);
    }

    fn generation_of(&self, key: &Key) -> Option<u64> {
        let r = KeyRef {
            ns: key.ns,
            path: &key.path,
        };
        let map = self.shard(&r).read().unwrap_or_else(|p| p.into_inner());
        map.get(&r).map(|e| e.generation)
    }

    /// Whether the totals exceed a limit.
    fn over(&self) -> Over {
        if self.bytes.load(Ordering::Relaxed) > self.max_bytes
            || self.entries.load(Ordering::Relaxed) > MAX_ENTRIES as u64
        {
            Over::Size
        } else if FILES_HELD.load(Ordering::Relaxed) > max_files_held() {
            Over::Files
        } else {
            Over::No
        }
    }

    /// The CLOCK hand. Bounded: every entry is spared at most once, so two
    /// passes over the queue suffice.
    fn evict(&self, clock: &mut VecDeque<(Key, u64)>) {
        let mut budget = clock.len() * 2;
        loop {
            let over = self.over();
            if over == Over::No || budget == 0 {
                break;
            }
            budget -= 1;
            let Some((key, generation)) = clock.pop_front() else {
                break;
            };
            let r = KeyRef {
                ns: key.ns,
                path: &key.path,
            };
            let mut map = self.shard(&r).write().unwrap_or_else(|p| p.into_inner());
            let Some(entry) = map.get(&r) else { continue };
            if entry.generation != generation {
                continue;
            }
            // Past the open files' limit, an entry that holds none would go
            // for nothing: a site keeping open files must not empty another
            // site's bodies.
            let spared = over == Over::Files && !entry.holds_files;
            if spared || entry.referenced.swap(false, Ordering::Relaxed) {
                drop(map);
                clock.push_back((key, generation));
                continue;
            }
            let old = map.remove(&r).expect("present under the same lock");
            drop(map);
            self.forget(&old);
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::representation::FileStamp;
    use http::HeaderValue;

    fn cache(max_bytes: u64) -> Arc<FileCache> {
        FileCache::new(&CacheConfig {
            enabled: true,
            max_bytes,
            max_entry_bytes: max_bytes,
            revalidate: Duration::from_secs(60),
        })
    }

    fn entry(len: usize) -> Entry {
        let stamp = FileStamp {
            dev: 1,
            ino: 1,
            len: len as u64,
            mtime_sec: 0,
            mtime_nsec: 0,
        };
        let rep = Representation::new(
            stamp,
            Coding::Identity,
            HeaderValue::from_static("text/plain"),
            false,
        );
        let variant = Variant {
            rep: Arc::new(rep),
            body: Some(Bytes::from(vec![b'x'; len])),
            file: None,
        };
        Entry::new(
            Instant::now(),
            CodingSet::default(),
            [Some(variant), None, None, None],
        )
    }

    /// An entry that keeps `file` open instead of a body.
    fn open_entry(file: &Arc<File>) -> Entry {
        let mut e = entry(0);
        let v = e.variants[0].as_mut().unwrap();
        v.body = None;
        v.file = Some(HeldFile::instead_of_body(file));
        Entry::new(
            Instant::now(),
            CodingSet::default(),
            std::mem::take(&mut e.variants),
        )
    }

    #[test]
    fn past_the_open_files_limit_only_entries_holding_files_go() {
        let c = cache(1 << 20);
        for i in 0..100 {
            c.store(0, &format!("/body{i}"), entry(10));
        }
        let file = Arc::new(tempfile::tempfile().unwrap());
        let max = max_files_held();
        for i in 0..max + 50 {
            c.store(1, &format!("/open{i}"), open_entry(&file));
        }
        for i in 0..100 {
            assert!(c.get(0, &format!("/body{i}")).is_some(), "/body{i} evicted");
        }
        assert!(FILES_HELD.load(Ordering::Relaxed) <= max);
        assert!(c.stats().evictions >= 50, "{:?}", c.stats());
    }

    #[test]
    fn replacing_an_entry_keeps_the_accounting_and_the_clock_bounded() {
        let c = cache(1000);
        for i in 0..500 {
            c.store(0, "/a", entry(10 + i % 3));
        }
        let s = c.stats();
        assert_eq!((s.entries, s.bytes, s.evictions), (1, 10 + 499 % 3, 0));
        assert!(c.clock.lock().unwrap().len() <= 2 + 64 + 1);
        c.remove(0, "/a");
        assert_eq!((c.stats().entries, c.stats().bytes), (0, 0));
    }

    #[test]
    fn namespaces_and_paths_are_separate_keys() {
        let c = cache(1000);
        c.store(0, "/a", entry(1));
        c.store(1, "/a", entry(2));
        c.store(0, "/b", entry(3));
        assert_eq!(c.get(0, "/a").unwrap().bytes, 1);
        assert_eq!(c.get(1, "/a").unwrap().bytes, 2);
        assert!(c.get(1, "/b").is_none());
        assert_eq!(c.stats().entries, 3);
    }

    #[test]
    fn oversized_and_empty_entries_are_not_kept() {
        let c = cache(100);
        c.store(0, "/a", entry(50));
        // The path's new version is too large: the old one goes too.
        c.store(0, "/a", entry(101));
        assert!(c.get(0, "/a").is_none());
        let empty = Entry::new(Instant::now(), CodingSet::default(), Default::default());
        c.store(0, "/b", empty);
        assert_eq!(c.stats(), CacheStats::default());
    }
}
