//! The live request trace (WASD's WATCH): the server emits one [`Event`]
//! per phase of each request while someone watches, and each [`Watcher`]
//! reads those its [`Filter`] matches.
//!
//! It never slows a request: with no watcher, emitting is one relaxed load
//! that says "off"; with watchers, an event goes into a bounded broadcast
//! ring, and a watcher that falls behind loses the oldest events (counted,
//! and told to it as a `dropped` event) rather than holding anything up.

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::broadcast;

/// The most watchers at once: each costs the requests' events a copy into
/// its view, so their number is bounded (WASD allowed one).
pub const MAX_WATCHERS: usize = 4;

/// Events the ring holds for a slow watcher before it loses the oldest.
const RING: usize = 4096;

/// A phase of a request, in the order they happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The head arrived and was admitted (or refused).
    Request,
    /// The rewrite rules decided.
    Rules,
    /// A site and a handler were chosen.
    Route,
    /// The access rules decided.
    Authorize,
    /// The handler answered: the response head.
    Response,
    /// The response ended (or the client left).
    Done,
    /// Not a request's: events this watcher lost.
    Dropped,
}

/// One event of one request.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    /// The request's id.
    pub id: u64,
    /// When, Unix seconds.
    pub time: f64,
    /// Which phase.
    pub phase: Phase,
    /// The client's address.
    pub client: Option<IpAddr>,
    /// The request's path (as the client sent it).
    pub path: Arc<str>,
    /// The status, once one is chosen.
    pub status: Option<u16>,
    /// What happened, in words.
    pub detail: String,
}

impl Event {
    /// An event of request `id` now.
    pub fn now(
        id: u64,
        phase: Phase,
        client: Option<IpAddr>,
        path: Arc<str>,
        detail: String,
    ) -> Event {
        Event {
            id,
            time: crate::unix_seconds(SystemTime::now()),
            phase,
            client,
            path,
            status: None,
            detail,
        }
    }

    /// With the status chosen.
    pub fn with_status(mut self, status: u16) -> Event {
        self.status = Some(status);
        self
    }

    /// One line for a terminal: time, id, phase, client, detail.
    pub fn line(&self) -> String {
        let secs = self.time.rem_euclid(86_400.0);
        let (h, m, s) = (
            (secs / 3600.0) as u32,
            ((secs % 3600.0) / 60.0) as u32,
            secs % 60.0,
        );
        let client = self
            .client
            .map_or_else(|| "-".to_owned(), |c| c.to_string());
        format!(
            "{h:02}:{m:02}:{s:06.3} #{:<6} {:<9} {client:<15} {}",
            self.id,
            format!("{:?}", self.phase).to_lowercase(),
            self.detail
        )
    }
}

/// Which requests a watcher sees.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Paths matching this glob (`*` within a segment, `**` across).
    pub path: Option<globset::GlobMatcher>,
    /// Clients in this network.
    pub client: Option<ipnet::IpNet>,
    /// Requests whose status falls in this range: their events are held
    /// until the request is done, then shown if it matches.
    pub status: Option<RangeInclusive<u16>>,
}

/// A filter's text was not understood.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// A bad path glob.
    #[error("path {0:?}: {1}")]
    Path(String, globset::Error),
    /// A bad client network.
    #[error("client {0:?}: not an address or a network (10.0.0.0/8)")]
    Client(String),
    /// A bad status range.
    #[error("status {0:?}: not a status or a range (500, 400-499, 5xx)")]
    Status(String),
}

impl Filter {
    /// A filter from its three texts (each optional), as `tern watch`
    /// and the admin listener's query take them.
    pub fn parse(
        path: Option<&str>,
        client: Option<&str>,
        status: Option<&str>,
    ) -> Result<Filter, FilterError> {
        let path = path
            .map(|p| {
                globset::GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .map(|g| g.compile_matcher())
                    .map_err(|e| FilterError::Path(p.to_owned(), e))
            })
            .transpose()?;
        let client = client
            .map(|c| {
                c.parse::<ipnet::IpNet>()
                    .or_else(|_| c.parse::<IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| FilterError::Client(c.to_owned()))
            })
            .transpose()?;
        let status = status
            .map(|s| parse_status(s).ok_or_else(|| FilterError::Status(s.to_owned())))
            .transpose()?;
        Ok(Filter {
            path,
            client,
            status,
        })
    }

    /// Whether events with this path and client pass (the status is
    /// judged at the end).
    fn admits(&self, e: &Event) -> bool {
        self.admits_request(&e.path, e.client)
    }

    /// Whether a request for `path` from `client` passes.
    fn admits_request(&self, path: &str, client: Option<IpAddr>) -> bool {
        if let Some(p) = &self.path {
            if !p.is_match(path) {
                return false;
            }
        }
        if let Some(net) = &self.client {
            if !client.is_some_and(|c| net.contains(&c)) {
                return false;
            }
        }
        true
    }
}

/// `500`, `400-499`, or `5xx`.
fn parse_status(s: &str) -> Option<RangeInclusive<u16>> {
    let s = s.trim();
    let code = |t: &str| {
        t.trim()
            .parse::<u16>()
            .ok()
            .filter(|c| (100..=999).contains(c))
    };
    if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (code(a)?, code(b)?);
        return (a <= b).then_some(a..=b);
    }
    if let Some(class) = s.strip_suffix("xx").or_else(|| s.strip_suffix("XX")) {
        let c = class.parse::<u16>().ok().filter(|c| (1..=9).contains(c))?;
        return Some(c * 100..=c * 100 + 99);
    }
    code(s).map(|c| c..=c)
}

/// Where the server sends events.
#[derive(Debug)]
pub struct Watch {
    watchers: AtomicUsize,
    tx: broadcast::Sender<Arc<Event>>,
    dropped: AtomicU64,
    /// The attached watchers' filters, by watcher, and the list a request
    /// reads (swapped whole when a watcher comes or goes): a request no
    /// filter admits builds no event at all.
    filters: std::sync::Mutex<Vec<(u64, Filter)>>,
    admitting: arc_swap::ArcSwap<Vec<Filter>>,
    next_id: AtomicU64,
}

impl Default for Watch {
    fn default() -> Self {
        Watch {
            watchers: AtomicUsize::new(0),
            tx: broadcast::channel(RING).0,
            dropped: AtomicU64::new(0),
            filters: Default::default(),
            admitting: Default::default(),
            next_id: AtomicU64::new(0),
        }
    }
}

/// [`MAX_WATCHERS`] are attached already.
#[derive(Debug, thiserror::Error)]
#[error("{MAX_WATCHERS} watchers are attached already")]
pub struct Busy;

impl Watch {
    /// Whether anyone watches: the server builds events only then.
    #[inline]
    pub fn on(&self) -> bool {
        self.watchers.load(Ordering::Relaxed) > 0
    }

    /// Whether some watcher's filter admits a request for `path` from
    /// `client`: its events are built only then. One relaxed load when no
    /// one watches.
    pub fn wants(&self, path: &str, client: Option<IpAddr>) -> bool {
        self.on()
            && self
                .admitting
                .load()
                .iter()
                .any(|f| f.admits_request(path, client))
    }

    fn publish(&self, filters: &[(u64, Filter)]) {
        self.admitting
            .store(Arc::new(filters.iter().map(|(_, f)| f.clone()).collect()));
    }

    /// Sends `e` to the watchers (nowhere, if none).
    pub fn emit(&self, e: Event) {
        let _ = self.tx.send(Arc::new(e));
    }

    /// Events watchers lost by falling behind, since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Watchers attached now.
    pub fn watchers(&self) -> usize {
        self.watchers.load(Ordering::Relaxed)
    }

    /// A watcher of the events `filter` admits, unless there are
    /// [`MAX_WATCHERS`] already.
    pub fn attach(self: &Arc<Self>, filter: Filter) -> Result<Watcher, Busy> {
        self.watchers
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                (n < MAX_WATCHERS).then_some(n + 1)
            })
            .map_err(|_| Busy)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut fs = self.filters.lock().unwrap_or_else(|e| e.into_inner());
            fs.push((id, filter.clone()));
            self.publish(&fs);
        }
        Ok(Watcher {
            id,
            rx: self.tx.subscribe(),
            watch: self.clone(),
            filter,
            held: HashMap::new(),
            order: std::collections::VecDeque::new(),
            ready: std::collections::VecDeque::new(),
        })
    }
}

/// Requests a watcher with a status filter holds events for at once; past
/// this the oldest request's events are let go (counted as dropped).
const HELD_REQUESTS: usize = 1024;

/// One attached watcher; detaches when dropped.
#[derive(Debug)]
pub struct Watcher {
    id: u64,
    rx: broadcast::Receiver<Arc<Event>>,
    watch: Arc<Watch>,
    filter: Filter,
    /// With a status filter: the events of requests not yet done.
    held: HashMap<u64, Vec<Arc<Event>>>,
    /// The held requests' ids, oldest first (ids are not in order: each
    /// worker gives out its own block of them).
    order: std::collections::VecDeque<u64>,
    /// Events released and not yet read.
    ready: std::collections::VecDeque<Arc<Event>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        {
            let mut fs = self.watch.filters.lock().unwrap_or_else(|e| e.into_inner());
            fs.retain(|(id, _)| *id != self.id);
            self.watch.publish(&fs);
        }
        self.watch.watchers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Watcher {
    /// The next event this watcher's filter admits; `None` once the
    /// server's watch is gone. Cancel safe: an event is taken from the
    /// ring only when it is returned or held.
    pub async fn next(&mut self) -> Option<Arc<Event>> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(e);
            }
            let e = match self.rx.recv().await {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    self.watch.dropped.fetch_add(n, Ordering::Relaxed);
                    return Some(Arc::new(Event::now(
                        0,
                        Phase::Dropped,
                        None,
                        Arc::from(""),
                        format!("{n} events dropped: this watcher fell behind"),
                    )));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            if !self.filter.admits(&e) {
                continue;
            }
            let Some(range) = &self.filter.status else {
                return Some(e);
            };
            if e.phase != Phase::Done {
                if !self.held.contains_key(&e.id) {
                    self.order.push_back(e.id);
                }
                while self.held.len() >= HELD_REQUESTS && !self.held.contains_key(&e.id) {
                    let Some(oldest) = self.order.pop_front() else {
                        break;
                    };
                    if let Some(lost) = self.held.remove(&oldest) {
                        self.watch
                            .dropped
                            .fetch_add(lost.len() as u64, Ordering::Relaxed);
                    }
                }
                self.held.entry(e.id).or_default().push(e);
                continue;
            }
            let held = self.held.remove(&e.id).unwrap_or_default();
            // Ids of requests done linger in the order until it is worth
            // sweeping them out.
            if self.order.len() > 2 * HELD_REQUESTS {
                let live = &self.held;
                self.order.retain(|id| live.contains_key(id));
            }
            if e.status.is_some_and(|s| range.contains(&s)) {
                self.ready.extend(held);
                self.ready.push_back(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: u64, phase: Phase, path: &str, client: &str) -> Event {
        Event::now(
            id,
            phase,
            Some(client.parse().unwrap()),
            Arc::from(path),
            String::new(),
        )
    }

    #[test]
    fn status_filters_parse() {
        assert_eq!(parse_status("500"), Some(500..=500));
        assert_eq!(parse_status("400-499"), Some(400..=499));
        assert_eq!(parse_status("5xx"), Some(500..=599));
        for bad in ["", "abc", "99", "500-400", "0xx", "1000"] {
            assert_eq!(parse_status(bad), None, "{bad}");
        }
        assert!(Filter::parse(Some("/a/[b"), None, None).is_err());
        assert!(Filter::parse(None, Some("10.0.0.0/33"), None).is_err());
        assert!(Filter::parse(None, Some("::1"), Some("2xx")).is_ok());
    }

    #[tokio::test]
    async fn a_watcher_sees_what_its_filter_admits() {
        let watch = Arc::new(Watch::default());
        assert!(!watch.on());
        let filter = Filter::parse(Some("/app/**"), Some("10.0.0.0/8"), None).unwrap();
        let mut w = watch.attach(filter).unwrap();
        assert!(watch.on());
        watch.emit(ev(1, Phase::Request, "/other", "10.0.0.1"));
        watch.emit(ev(2, Phase::Request, "/app/x", "192.168.0.1"));
        watch.emit(ev(3, Phase::Request, "/app/x", "10.1.2.3"));
        let e = w.next().await.unwrap();
        assert_eq!(e.id, 3);
        drop(w);
        assert!(!watch.on());
    }

    #[test]
    fn a_request_no_filter_admits_is_not_wanted() {
        let watch = Arc::new(Watch::default());
        let client = Some("10.1.2.3".parse().unwrap());
        assert!(!watch.wants("/app/x", client), "no watcher");
        let a = watch
            .attach(Filter::parse(Some("/app/**"), None, None).unwrap())
            .unwrap();
        let b = watch
            .attach(Filter::parse(None, Some("192.168.0.0/16"), None).unwrap())
            .unwrap();
        assert!(watch.wants("/app/x", client));
        assert!(!watch.wants("/other", client));
        assert!(watch.wants("/other", Some("192.168.1.1".parse().unwrap())));
        drop(a);
        assert!(!watch.wants("/app/x", client), "its filter left with it");
        drop(b);
        assert!(!watch.wants("/other", Some("192.168.1.1".parse().unwrap())));
    }

    #[tokio::test]
    async fn a_status_filter_holds_a_request_until_it_is_done() {
        let watch = Arc::new(Watch::default());
        let mut w = watch
            .attach(Filter::parse(None, None, Some("5xx")).unwrap())
            .unwrap();
        watch.emit(ev(1, Phase::Request, "/a", "::1"));
        watch.emit(ev(2, Phase::Request, "/b", "::1"));
        watch.emit(ev(1, Phase::Done, "/a", "::1").with_status(200));
        watch.emit(ev(2, Phase::Done, "/b", "::1").with_status(502));
        let a = w.next().await.unwrap();
        let b = w.next().await.unwrap();
        assert_eq!((a.id, a.phase), (2, Phase::Request));
        assert_eq!((b.id, b.phase, b.status), (2, Phase::Done, Some(502)));
    }

    #[tokio::test]
    async fn watchers_are_bounded_and_a_slow_one_loses_events() {
        let watch = Arc::new(Watch::default());
        let mut ws: Vec<_> = (0..MAX_WATCHERS)
            .map(|_| watch.attach(Filter::default()).unwrap())
            .collect();
        assert!(watch.attach(Filter::default()).is_err());
        for i in 0..(RING as u64 + 10) {
            watch.emit(ev(i, Phase::Request, "/", "::1"));
        }
        let first = ws[0].next().await.unwrap();
        assert_eq!(first.phase, Phase::Dropped);
        assert!(watch.dropped() >= 10);
        ws.pop();
        assert!(watch.attach(Filter::default()).is_ok());
    }
}
