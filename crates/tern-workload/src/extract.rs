//! Requests → users → pages → sessions (WebStone-SS's access pattern
//! heuristics), streaming: the [`Extractor`] holds only the users active
//! within the session gap, a short reordering window of requests, and what
//! it has classified (files, distinct pages, distinct sessions, bounded
//! samples of think times and session lengths).
//!
//! A user is a client address (with `by_agent`, the address and its user
//! agent); a remote that is no address (a host name, an anonymised one) is
//! keyed as logged, and a line with none at all (a Unix socket, a JSON line
//! without one) by its authenticated user and user agent. A page is a
//! user's requests each within `page_gap` of the one before; it ends at its
//! last request's time plus that request's duration (the latest such end,
//! when a format carries durations; a duration counts at most
//! `session_gap`). A session is a user's pages, each starting less than
//! `session_gap` after the previous page's end; the think time is that
//! difference.
//!
//! Bounds: a page holds at most 1,000 files and spans at most 15 minutes
//! from its first, a session at most 1,000 pages and 24 hours; past them
//! the page (or session) is closed and a new one started, and the closes
//! are counted ([`Extracted::forced_pages`]). A client that never pauses
//! (a bot, many clients taken for one) would otherwise hold one page open
//! for the whole log.
//!
//! Memory: a user is let go (its page and session closed) once it has been
//! idle for longer than both gaps; distinct users are counted by a 64-bit
//! hash of their key (8 bytes each, not the key); think times and session
//! lengths are sampled (at most 65,536 of each). What grows with the log
//! is only what it classifies: distinct files, pages and sessions.

use std::cmp::Reverse;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tern_accesslog::AccessRecord;

/// Microseconds in a second.
pub(crate) const SECOND: i64 = 1_000_000;
const HOUR: i64 = 3600 * SECOND;

/// Logs are written when responses end, so a line's arrival time may be
/// older than the line before it: requests wait this long (in log time,
/// behind the newest request seen) before they are classified, in time
/// order. A request later than that still counts, out of order.
const REORDER_WINDOW: i64 = 60 * SECOND;

/// Samples kept of think times and of session lengths; beyond it, a
/// uniform sample of this size (a fixed seed: the same log gives the same
/// model).
const SAMPLE_CAP: usize = 1 << 16;

/// Distinct sizes (and statuses) counted per file; beyond them, only the
/// ones already counted go on counting (a script answering every request
/// with a new size would otherwise grow without bound).
const MAX_DISTINCT_VALUES: usize = 256;

/// A page holds at most this many files; the next starts a new page.
pub(crate) const MAX_PAGE_FILES: usize = 1000;
/// A page spans at most this long from its first file.
pub(crate) const MAX_PAGE_SPAN: i64 = 15 * 60 * SECOND;
/// A session holds at most this many pages; the next starts a new session.
pub(crate) const MAX_SESSION_PAGES: usize = 1000;
/// A session spans at most this long from its first page.
pub(crate) const MAX_SESSION_SPAN: i64 = 24 * HOUR;

/// The thresholds the extractor cuts with, in microseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cut {
    pub(crate) page_gap: i64,
    pub(crate) session_gap: i64,
    pub(crate) by_agent: bool,
}

impl Cut {
    pub(crate) fn new(page_gap: Duration, session_gap: Duration, by_agent: bool) -> Cut {
        let us = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        Cut {
            page_gap: us(page_gap),
            session_gap: us(session_gap),
            by_agent,
        }
    }
}

/// A file as logged: method and target, and the sizes and statuses it was
/// logged with.
#[derive(Debug)]
pub(crate) struct FileStat {
    pub(crate) method: String,
    pub(crate) target: String,
    sizes: HashMap<u64, u64>,
    statuses: HashMap<u16, u64>,
}

impl FileStat {
    /// A file logged once, with `bytes` and status 200.
    #[cfg(test)]
    pub(crate) fn logged(method: &str, target: &str, bytes: u64) -> FileStat {
        FileStat {
            method: method.into(),
            target: target.into(),
            sizes: HashMap::from([(bytes, 1)]),
            statuses: HashMap::from([(200, 1)]),
        }
    }

    /// The most common size (ties: the larger).
    pub(crate) fn bytes(&self) -> u64 {
        self.sizes
            .iter()
            .max_by_key(|&(size, n)| (*n, *size))
            .map_or(0, |(size, _)| *size)
    }

    /// The most common status (ties: the lower).
    pub(crate) fn status(&self) -> u16 {
        self.statuses
            .iter()
            .max_by_key(|&(status, n)| (*n, Reverse(*status)))
            .map_or(200, |(status, _)| *status)
    }
}

fn count<K: Eq + std::hash::Hash>(map: &mut HashMap<K, u64>, key: K) {
    if let Some(n) = map.get_mut(&key) {
        *n += 1;
    } else if map.len() < MAX_DISTINCT_VALUES {
        map.insert(key, 1);
    }
}

/// A distinct page before reduction: an ordered sequence of file ids.
#[derive(Debug)]
pub(crate) struct RawPage {
    pub(crate) files: Vec<u32>,
    pub(crate) count: u64,
}

/// A request waiting in the reordering window.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    time: i64,
    seq: u64,
    end: i64,
    file: u32,
    user: String,
}

#[derive(Debug)]
struct OpenPage {
    /// Its first file's time.
    first: i64,
    last: i64,
    end: i64,
    files: Vec<u32>,
}

#[derive(Debug)]
struct OpenSession {
    /// Its first page's start.
    start: i64,
    /// End of the session's last closed page.
    last_end: i64,
    pages: Vec<u32>,
}

/// What the extractor has classified: distinct pages and sessions.
#[derive(Debug)]
struct Found {
    page_ids: HashMap<Vec<u32>, u32>,
    pages: Vec<RawPage>,
    sessions: HashMap<Vec<u32>, u64>,
    session_pages: Sample,
    page_count: u64,
}

#[derive(Debug)]
struct User {
    page: Option<OpenPage>,
    session: Option<OpenSession>,
}

impl User {
    /// The latest time this user's open page or session reaches.
    fn reach(&self) -> i64 {
        let page = self.page.as_ref().map_or(i64::MIN, |p| p.end.max(p.last));
        let session = self.session.as_ref().map_or(i64::MIN, |s| s.last_end);
        page.max(session)
    }

    /// Closes the open page (if any): it is counted, and the session
    /// holds it.
    fn close_page(&mut self, found: &mut Found) {
        let Some(page) = self.page.take() else {
            return;
        };
        found.page_count += 1;
        let end = page.end.max(page.last);
        let id = match found.page_ids.get(&page.files) {
            Some(&id) => id,
            None => {
                let id = found.pages.len() as u32;
                found.page_ids.insert(page.files.clone(), id);
                found.pages.push(RawPage {
                    files: page.files,
                    count: 0,
                });
                id
            }
        };
        found.pages[id as usize].count += 1;
        if let Some(s) = &mut self.session {
            s.pages.push(id);
            s.last_end = end;
        }
    }

    /// Closes the open session (if any and it holds a page).
    fn close_session(&mut self, found: &mut Found) {
        let Some(s) = self.session.take() else {
            return;
        };
        if s.pages.is_empty() {
            return;
        }
        found.session_pages.push(s.pages.len() as f64);
        *found.sessions.entry(s.pages).or_insert(0) += 1;
    }

    /// Closes the page, then the session.
    fn close(&mut self, found: &mut Found) {
        self.close_page(found);
        self.close_session(found);
    }
}

/// A uniform sample of at most [`SAMPLE_CAP`] values (Algorithm R with a
/// fixed-seed generator).
#[derive(Debug)]
pub(crate) struct Sample {
    values: Vec<f64>,
    seen: u64,
    rng: u64,
}

impl Sample {
    fn new() -> Sample {
        Sample {
            values: Vec::new(),
            seen: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn push(&mut self, v: f64) {
        self.seen += 1;
        if self.values.len() < SAMPLE_CAP {
            self.values.push(v);
            return;
        }
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.seen;
        if let Some(slot) = self.values.get_mut(r as usize) {
            *slot = v;
        }
    }

    pub(crate) fn into_values(self) -> Vec<f64> {
        self.values
    }
}

/// What an extraction found, before the pages are reduced to classes.
#[derive(Debug)]
pub(crate) struct Extracted {
    pub(crate) files: Vec<FileStat>,
    pub(crate) pages: Vec<RawPage>,
    /// Distinct sessions: sequences of indices into `pages`, with counts.
    pub(crate) sessions: HashMap<Vec<u32>, u64>,
    pub(crate) think: Sample,
    pub(crate) session_pages: Sample,
    pub(crate) users: u64,
    pub(crate) session_count: u64,
    pub(crate) page_count: u64,
    pub(crate) requests: u64,
    /// First and last request times (µs since the epoch).
    pub(crate) first: i64,
    pub(crate) last: i64,
    /// Sessions started in each UTC hour of the day.
    pub(crate) started_by_hour: [u64; 24],
    pub(crate) peak_users: usize,
    /// Pages closed because they reached [`MAX_PAGE_FILES`] or
    /// [`MAX_PAGE_SPAN`].
    pub(crate) forced_pages: u64,
    /// Sessions closed because they reached [`MAX_SESSION_PAGES`] or
    /// [`MAX_SESSION_SPAN`].
    pub(crate) forced_sessions: u64,
}

/// The streaming extractor: requests in (roughly in time order), users,
/// pages and sessions out.
#[derive(Debug)]
pub(crate) struct Extractor {
    cut: Cut,
    file_ids: HashMap<(String, String), u32>,
    files: Vec<FileStat>,
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    newest: i64,
    frontier: i64,
    last_sweep: i64,
    users: HashMap<String, User>,
    seen_users: HashSet<u64>,
    peak_users: usize,
    found: Found,
    think: Sample,
    session_count: u64,
    forced_pages: u64,
    forced_sessions: u64,
    requests: u64,
    first: i64,
    last: i64,
    started_by_hour: [u64; 24],
}

/// Microseconds since the epoch (negative before it).
pub(crate) fn micros(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// The UTC hour of the day of `us`.
pub(crate) fn hour_of_day(us: i64) -> usize {
    us.div_euclid(HOUR).rem_euclid(24) as usize
}

impl Extractor {
    pub(crate) fn new(cut: Cut) -> Extractor {
        Extractor {
            cut,
            file_ids: HashMap::new(),
            files: Vec::new(),
            pending: BinaryHeap::new(),
            seq: 0,
            newest: i64::MIN,
            frontier: i64::MIN,
            last_sweep: i64::MIN,
            users: HashMap::new(),
            seen_users: HashSet::new(),
            peak_users: 0,
            found: Found {
                page_ids: HashMap::new(),
                pages: Vec::new(),
                sessions: HashMap::new(),
                session_pages: Sample::new(),
                page_count: 0,
            },
            think: Sample::new(),
            session_count: 0,
            forced_pages: 0,
            forced_sessions: 0,
            requests: 0,
            first: i64::MAX,
            last: i64::MIN,
            started_by_hour: [0; 24],
        }
    }

    /// Most users held open at once so far.
    #[cfg(test)]
    pub(crate) fn peak_users(&self) -> usize {
        self.peak_users
    }

    /// Takes one parsed request.
    #[cfg(test)]
    pub(crate) fn push(&mut self, rec: AccessRecord) {
        self.push_from(rec, None);
    }

    /// The user a request belongs to: its address; a remote that is no
    /// address (a host name, an anonymised one) as logged, `remote_text`;
    /// with neither (a Unix socket, a JSON line without one), the
    /// authenticated user and the user agent, the best left to tell
    /// clients apart. With `by_agent`, the user agent is added.
    fn user_key(&self, rec: &AccessRecord, remote_text: Option<&str>) -> String {
        let agent = rec.user_agent.as_deref().unwrap_or("-");
        let remote = match (rec.remote, remote_text) {
            (Some(ip), _) => ip.to_string(),
            (None, Some(t)) if !t.is_empty() && t != "-" && t != "unix:" => t.to_owned(),
            (None, _) => {
                let user = rec.user.as_deref().unwrap_or("-");
                return format!("- {user} {agent}");
            }
        };
        if self.cut.by_agent {
            format!("{remote} {agent}")
        } else {
            remote
        }
    }

    /// Takes one parsed request, with its remote as logged when that was
    /// not an address (`None` otherwise, or when the format does not keep
    /// it).
    pub(crate) fn push_from(&mut self, rec: AccessRecord, remote_text: Option<&str>) {
        let time = micros(rec.time);
        // A duration longer than the session gap (a stalled download, a
        // clock gone wrong) counts as the gap: it may not hold a page, and
        // so a session, open for days.
        let duration = i64::try_from(rec.duration.as_micros()).unwrap_or(i64::MAX);
        let end = time.saturating_add(duration.min(self.cut.session_gap));
        self.requests += 1;
        self.first = self.first.min(time);
        self.last = self.last.max(time);
        let user = self.user_key(&rec, remote_text);
        let key = (rec.method, rec.target);
        let file = match self.file_ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.files.len() as u32;
                self.files.push(FileStat {
                    method: key.0.clone(),
                    target: key.1.clone(),
                    sizes: HashMap::new(),
                    statuses: HashMap::new(),
                });
                self.file_ids.insert(key, id);
                id
            }
        };
        let stat = &mut self.files[file as usize];
        count(&mut stat.sizes, rec.bytes);
        count(&mut stat.statuses, rec.status);
        self.seq += 1;
        self.pending.push(Reverse(Pending {
            time,
            seq: self.seq,
            end,
            file,
            user,
        }));
        self.newest = self.newest.max(time);
        while let Some(Reverse(p)) = self.pending.peek() {
            if p.time > self.newest.saturating_sub(REORDER_WINDOW) {
                break;
            }
            let Some(Reverse(p)) = self.pending.pop() else {
                break;
            };
            self.classify(p);
        }
    }

    /// One request, in time order: its user's page goes on, or a new page
    /// (and perhaps a new session) starts. A page that reached
    /// [`MAX_PAGE_FILES`] or [`MAX_PAGE_SPAN`], or a session that reached
    /// [`MAX_SESSION_PAGES`] or [`MAX_SESSION_SPAN`], is closed and a new
    /// one started (a client that never pauses, or many clients taken for
    /// one, would otherwise hold one open for the whole log).
    fn classify(&mut self, p: Pending) {
        self.frontier = self.frontier.max(p.time);
        let cut = self.cut;
        let user = match self.users.get_mut(&p.user) {
            Some(u) => u,
            None => {
                let mut h = DefaultHasher::new();
                p.user.hash(&mut h);
                self.seen_users.insert(h.finish());
                self.users.entry(p.user).or_insert(User {
                    page: None,
                    session: None,
                })
            }
        };
        let mut forced = false;
        if let Some(page) = &mut user.page {
            if p.time - page.last <= cut.page_gap {
                if page.files.len() < MAX_PAGE_FILES && p.time - page.first < MAX_PAGE_SPAN {
                    page.files.push(p.file);
                    page.last = page.last.max(p.time);
                    page.end = page.end.max(p.end);
                    self.after(cut);
                    return;
                }
                forced = true;
                self.forced_pages += 1;
            }
        }
        user.close_page(&mut self.found);
        let mut new_session = true;
        if let Some(s) = &user.session {
            if p.time - s.last_end < cut.session_gap {
                if s.pages.len() >= MAX_SESSION_PAGES || p.time - s.start >= MAX_SESSION_SPAN {
                    self.forced_sessions += 1;
                } else {
                    new_session = false;
                    // A page cut short is no pause: no think time.
                    if !forced {
                        self.think
                            .push((p.time - s.last_end).max(0) as f64 / SECOND as f64);
                    }
                }
            }
        }
        if new_session {
            user.close_session(&mut self.found);
            user.session = Some(OpenSession {
                start: p.time,
                last_end: p.time,
                pages: Vec::new(),
            });
            self.session_count += 1;
            self.started_by_hour[hour_of_day(p.time)] += 1;
        }
        user.page = Some(OpenPage {
            first: p.time,
            last: p.time,
            end: p.end.max(p.time),
            files: vec![p.file],
        });
        self.after(cut);
    }

    /// After a request is classified: the peak noted, idle users swept.
    fn after(&mut self, cut: Cut) {
        self.peak_users = self.peak_users.max(self.users.len());
        // Sweep idle users now and then: often enough that none stays long
        // past its session, seldom enough that the sweeps cost little.
        let every = (cut.session_gap / 16).max(SECOND);
        if self.frontier.saturating_sub(self.last_sweep) >= every {
            self.last_sweep = self.frontier;
            self.sweep(Some(self.frontier));
        }
    }

    /// Closes the users idle for longer than both gaps before `now` (all of
    /// them with `None`), in key order so that the result never depends on
    /// hash order.
    fn sweep(&mut self, now: Option<i64>) {
        let cut = self.cut;
        let mut idle: Vec<String> = self
            .users
            .iter()
            .filter(|(_, u)| match now {
                None => true,
                Some(now) => {
                    let last = u.page.as_ref().map_or(i64::MIN, |p| p.last);
                    now.saturating_sub(last) > cut.page_gap
                        && now.saturating_sub(u.reach()) >= cut.session_gap
                }
            })
            .map(|(k, _)| k.clone())
            .collect();
        idle.sort_unstable();
        for key in idle {
            if let Some(mut user) = self.users.remove(&key) {
                user.close(&mut self.found);
            }
        }
    }

    /// Classifies what is still waiting and closes every user.
    pub(crate) fn finish(mut self) -> Extracted {
        while let Some(Reverse(p)) = self.pending.pop() {
            self.classify(p);
        }
        self.sweep(None);
        Extracted {
            files: self.files,
            pages: self.found.pages,
            sessions: self.found.sessions,
            think: self.think,
            session_pages: self.found.session_pages,
            users: self.seen_users.len() as u64,
            session_count: self.session_count,
            page_count: self.found.page_count,
            requests: self.requests,
            first: self.first,
            last: self.last,
            started_by_hour: self.started_by_hour,
            peak_users: self.peak_users,
            forced_pages: self.forced_pages,
            forced_sessions: self.forced_sessions,
        }
    }
}

/// `us` (since the epoch) as RFC 3339 UTC to the second:
/// `2026-11-24T10:00:00Z`.
pub(crate) fn rfc3339(us: i64) -> String {
    let secs = us.div_euclid(SECOND);
    let at = if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    };
    tern_accesslog::rfc3339_seconds(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: u64, ip: &str, target: &str) -> AccessRecord {
        AccessRecord {
            time: UNIX_EPOCH + Duration::from_secs(t),
            remote: Some(ip.parse().unwrap()),
            remote_port: None,
            user: None,
            method: "GET".into(),
            target: target.into(),
            protocol: "HTTP/1.1".into(),
            status: 200,
            bytes: 100,
            referer: None,
            user_agent: None,
            host: None,
            duration: Duration::ZERO,
            request_id: 0,
            tls_protocol: None,
            tls_cipher: None,
        }
    }

    fn cut() -> Cut {
        Cut::new(Duration::from_secs(15), Duration::from_secs(300), false)
    }

    #[test]
    fn civil_dates_and_rfc3339() {
        assert_eq!(rfc3339(-SECOND), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339(11_016 * 86_400 * SECOND), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // 2026-11-24T10:00:00Z
        assert_eq!(rfc3339(1_795_514_400 * SECOND), "2026-11-24T10:00:00Z");
        assert_eq!(
            rfc3339(1_795_514_400 * SECOND + 3_723_500_000),
            "2026-11-24T11:02:03Z"
        );
    }

    #[test]
    fn pages_and_sessions_follow_the_gaps() {
        let mut x = Extractor::new(cut());
        // One user: a page of 2 files, think 20 s, a page of 1, then after
        // 10 minutes a new session of one page.
        x.push(rec(1000, "192.0.2.1", "/a.html"));
        x.push(rec(1002, "192.0.2.1", "/a.png"));
        x.push(rec(1022, "192.0.2.1", "/b.html"));
        x.push(rec(1622, "192.0.2.1", "/a.html"));
        x.push(rec(1623, "192.0.2.1", "/a.png"));
        let e = x.finish();
        assert_eq!(
            (e.users, e.session_count, e.page_count, e.requests),
            (1, 2, 3, 5)
        );
        assert_eq!(e.pages.len(), 2);
        assert_eq!(e.pages[0].count, 2);
        assert_eq!(e.sessions.len(), 2);
        assert_eq!(e.think.into_values(), vec![20.0]);
        let mut lengths = e.session_pages.into_values();
        lengths.sort_by(f64::total_cmp);
        assert_eq!(lengths, vec![1.0, 2.0]);
    }

    #[test]
    fn a_line_logged_late_is_put_back_in_order() {
        let mut x = Extractor::new(cut());
        x.push(rec(1000, "192.0.2.1", "/a.html"));
        x.push(rec(1003, "192.0.2.1", "/b.png"));
        // Logged after /b.png, though it arrived before.
        x.push(rec(1001, "192.0.2.1", "/a.png"));
        let e = x.finish();
        assert_eq!(e.pages.len(), 1);
        assert_eq!(e.pages[0].files, vec![0, 2, 1]);
    }

    #[test]
    fn a_huge_duration_does_not_hold_a_session_open() {
        let mut x = Extractor::new(cut());
        let mut r = rec(1000, "192.0.2.1", "/slow.iso");
        r.duration = Duration::from_secs(10 * 86_400);
        x.push(r);
        // An hour later: a new session, the think time not counted.
        x.push(rec(4600, "192.0.2.1", "/a.html"));
        let e = x.finish();
        assert_eq!((e.session_count, e.page_count), (2, 2));
        assert!(e.think.into_values().is_empty());
    }

    #[test]
    fn a_page_holds_at_most_a_thousand_files() {
        let mut x = Extractor::new(cut());
        for i in 0..2500u64 {
            let mut r = rec(1000, "192.0.2.1", &format!("/{i}.png"));
            r.time += Duration::from_millis(i);
            x.push(r);
        }
        let e = x.finish();
        assert_eq!((e.session_count, e.page_count), (1, 3));
        let mut sizes: Vec<usize> = e.pages.iter().map(|p| p.files.len()).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![500, 1000, 1000]);
        assert_eq!((e.forced_pages, e.forced_sessions), (2, 0));
    }

    #[test]
    fn a_session_holds_at_most_a_thousand_pages() {
        let mut x = Extractor::new(cut());
        // A page every 20 s (more than the page gap, less than the session
        // gap) for 2,500 pages: 14 hours, within the 24 h bound.
        for i in 0..2500u64 {
            x.push(rec(1000 + 20 * i, "192.0.2.1", &format!("/{i}.html")));
        }
        let e = x.finish();
        assert_eq!((e.session_count, e.page_count), (3, 2500));
        assert_eq!((e.forced_pages, e.forced_sessions), (0, 2));
    }

    #[test]
    fn idle_users_are_let_go() {
        let mut x = Extractor::new(cut());
        for i in 0..1000u64 {
            // A new user every 10 s, each with one request.
            let ip = format!("10.0.{}.{}", i / 256, i % 256);
            x.push(rec(i * 10, &ip, "/"));
        }
        // Active within 300 s + the sweep interval + the reordering window
        // of 60 s: about 40 users, never 1000.
        assert!(x.peak_users() < 50, "{}", x.peak_users());
        let e = x.finish();
        assert_eq!((e.users, e.session_count), (1000, 1000));
    }
}
