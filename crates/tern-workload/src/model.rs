//! The model: what a replay needs to load a server the way a site's users
//! did, written as TOML a person can read and edit.
//!
//! ```toml
//! [source]          # where it came from
//! [rules]           # the thresholds it was cut with
//! [summary]         # users, sessions, pages, requests, reductions
//! [[page]]          # page classes: id, count, files (the first is the front)
//! [[session]]       # session classes: a sequence of page ids, and a count
//! [transitions]     # from a page id (or "start") to the next (or "end")
//! [think_time]      # seconds between one page's end and the next's start
//! [session_pages]   # pages per session
//! [arrivals]        # sessions per second, and by hour of the day
//! ```
//!
//! Distributions are [`Quantiles`]: evenly spaced quantile points from the
//! least to the greatest value, sampled by linear interpolation; a person
//! can read them as "the median think time is 8 s" and edit them as such.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The state a session walk starts from in [`Model::transitions`].
pub const START: &str = "start";
/// The state a session walk ends in.
pub const END: &str = "end";

/// The longest file path a model may hold, in bytes (it goes on a request
/// line).
pub const MAX_PATH: usize = 8 * 1024;
/// The largest think time a model may hold, in seconds.
pub const MAX_THINK_TIME: f64 = 1e6;
/// The most pages per session a model may hold.
pub const MAX_SESSION_PAGES: f64 = 1e6;

/// A workload model (see the module docs for its layout).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Where the model came from.
    pub source: Source,
    /// The thresholds and keys it was cut with.
    pub rules: Rules,
    /// What the logs held, and how much the heuristics reduced it.
    pub summary: Summary,
    /// The page classes, most frequent first.
    #[serde(rename = "page", default)]
    pub pages: Vec<PageClass>,
    /// The session classes (page sequences), most frequent first.
    #[serde(rename = "session", default)]
    pub sessions: Vec<SessionClass>,
    /// Page-to-page transition probabilities: from a page id or [`START`]
    /// to a page id or [`END`].
    #[serde(default)]
    pub transitions: BTreeMap<String, BTreeMap<String, f64>>,
    /// Seconds from the end of a page to the start of the user's next page
    /// in the same session.
    pub think_time: Quantiles,
    /// Pages per session.
    pub session_pages: Quantiles,
    /// How often sessions start.
    pub arrivals: Arrivals,
}

/// Where a model came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The log files read, as given.
    pub files: Vec<String>,
    /// The format detected (or given): `common`, `combined`, `json`.
    pub format: String,
    /// Lines read.
    pub lines: u64,
    /// Lines that did not parse (counted, never fatal unless none parsed).
    pub malformed: u64,
    /// The first and last request times (RFC 3339, UTC).
    pub first: String,
    /// See `first`.
    pub last: String,
}

/// The thresholds and keys a model was cut with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Files a user fetched within this many seconds of the previous one
    /// belong to one page (WebStone-SS: 15).
    pub page_gap: f64,
    /// Pages less than this many seconds apart belong to one session
    /// (WebStone-SS: 300).
    pub session_gap: f64,
    /// A user is a client address and its user agent, not the address
    /// alone (many users behind one proxy or NAT).
    pub by_agent: bool,
}

/// What the logs held, and how much the heuristics reduced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Distinct users.
    pub users: u64,
    /// Sessions.
    pub sessions: u64,
    /// Pages.
    pub pages: u64,
    /// Requests (parsed lines).
    pub requests: u64,
    /// Distinct pages (file sets) before any reduction.
    pub page_classes_before: u64,
    /// Each heuristic, in the order applied.
    pub reductions: Vec<Reduction>,
}

/// One reduction heuristic's effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reduction {
    /// What it combines ("same file sets", ...).
    pub heuristic: String,
    /// Page classes before it.
    pub before: u64,
    /// Page classes after it.
    pub after: u64,
    /// `before / after`, as the report's table gives it.
    pub factor: f64,
}

/// A page class: the files one page fetches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageClass {
    /// The class's id (`p1`, `p2`, ... by frequency), referenced by
    /// sessions and transitions.
    pub id: String,
    /// How many logged pages fell in this class.
    pub count: u64,
    /// The files, the page's first file (its front) first; a replay fetches
    /// the front, then the rest in parallel.
    pub files: Vec<FileRef>,
}

/// One file of a page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRef {
    /// The request target (path and query) as logged.
    pub path: String,
    /// The method as logged.
    #[serde(default = "get")]
    pub method: String,
    /// Body bytes sent (the most common size logged for it).
    pub bytes: u64,
    /// The status logged (the most common one).
    #[serde(default = "ok")]
    pub status: u16,
    /// Produced by a program (a query, a script's extension or directory,
    /// a method other than GET and HEAD), not a file.
    #[serde(default)]
    pub dynamic: bool,
}

fn get() -> String {
    "GET".into()
}

fn ok() -> u16 {
    200
}

/// A session class: a sequence of pages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionClass {
    /// Page class ids, in order.
    pub pages: Vec<String>,
    /// How many logged sessions fell in this class.
    pub count: u64,
}

/// How often sessions start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arrivals {
    /// Sessions per second over the whole log.
    pub rate: f64,
    /// Sessions per second in each hour of the day (UTC), averaged over the
    /// days the log covers; 24 values.
    pub by_hour: Vec<f64>,
}

/// A distribution as evenly spaced quantiles: `points[0]` is the least
/// value, the last the greatest, and `points[i]` the `i / (n - 1)`
/// quantile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quantiles {
    /// At least one point, never decreasing.
    pub points: Vec<f64>,
}

impl Quantiles {
    /// The distribution of `values` as `n` (at least 2) evenly spaced
    /// quantile points; `[0.0]` when there are no values.
    pub fn of(values: &mut [f64], n: usize) -> Self {
        if values.is_empty() {
            return Self { points: vec![0.0] };
        }
        values.sort_by(f64::total_cmp);
        let n = n.max(2);
        let last = (values.len() - 1) as f64;
        let points = (0..n)
            .map(|i| {
                let at = last * i as f64 / (n - 1) as f64;
                let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
                values[lo] + (values[hi] - values[lo]) * (at - lo as f64)
            })
            .collect();
        Self { points }
    }

    /// The value at quantile `u` (0..=1), interpolated between points.
    pub fn sample(&self, u: f64) -> f64 {
        let Some(&first) = self.points.first() else {
            return 0.0;
        };
        if self.points.len() == 1 {
            return first;
        }
        let at = u.clamp(0.0, 1.0) * (self.points.len() - 1) as f64;
        let lo = at.floor() as usize;
        let hi = (lo + 1).min(self.points.len() - 1);
        self.points[lo] + (self.points[hi] - self.points[lo]) * (at - lo as f64)
    }

    /// The median.
    pub fn median(&self) -> f64 {
        self.sample(0.5)
    }
}

/// A model that cannot be read or does not hold together.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a model (TOML syntax, a missing or unknown key).
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// toml's message (it names the line and the key).
        message: String,
    },
    /// The model parses but does not hold together.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, naming the page, session or transition.
        message: String,
    },
}

impl Model {
    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: name.clone(),
            source,
        })?;
        let model: Model = toml::from_str(&text).map_err(|e| ModelError::Syntax {
            path: name.clone(),
            message: e.to_string(),
        })?;
        model.check().map_err(|message| ModelError::Invalid {
            path: name,
            message,
        })?;
        Ok(model)
    }

    /// Writes the model as TOML.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        std::fs::write(path, self.to_toml()).map_err(|source| ModelError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// The model as TOML text.
    pub fn to_toml(&self) -> String {
        // Plain data with string keys: serialization cannot fail.
        toml::to_string(self).expect("a model serializes")
    }

    /// Checks that the model holds together: every page has files whose
    /// paths start with `/`, hold no control character or whitespace and
    /// are at most [`MAX_PATH`] bytes; every reference names a page;
    /// probabilities are finite, in 0..=1 and sum to 1 per state; quantile
    /// points are finite, from 0 to [`MAX_THINK_TIME`] seconds or
    /// [`MAX_SESSION_PAGES`] pages, and never decrease; arrival rates are
    /// finite and not negative; and something can be replayed. Messages
    /// name the key (`think_time.points[3]`, `page "p4" file 2 path`).
    pub fn check(&self) -> Result<(), String> {
        let mut ids = HashSet::new();
        for p in &self.pages {
            if !ids.insert(p.id.as_str()) {
                return Err(format!("page {:?} is defined twice", p.id));
            }
            if p.id == START || p.id == END {
                return Err(format!("page id {:?} is reserved", p.id));
            }
            if p.files.is_empty() {
                return Err(format!("page {:?} has no files", p.id));
            }
            for (i, f) in p.files.iter().enumerate() {
                let at = || format!("page {:?} file {} path", p.id, i + 1);
                if !f.path.starts_with('/') {
                    return Err(format!("{}: {:?} does not start with /", at(), f.path));
                }
                if f.path.len() > MAX_PATH {
                    return Err(format!(
                        "{}: {} bytes, more than {MAX_PATH}",
                        at(),
                        f.path.len()
                    ));
                }
                if f.path
                    .chars()
                    .any(|c| c.is_ascii_control() || c.is_whitespace())
                {
                    return Err(format!(
                        "{}: {:?} holds a control character or whitespace (it goes on a request line as it is; percent-encode them)",
                        at(),
                        f.path
                    ));
                }
            }
        }
        if self.pages.is_empty() {
            return Err("the model has no pages".into());
        }
        for (i, s) in self.sessions.iter().enumerate() {
            if s.pages.is_empty() {
                return Err(format!("session {} has no pages", i + 1));
            }
            if let Some(p) = s.pages.iter().find(|p| !ids.contains(p.as_str())) {
                return Err(format!(
                    "session {} names page {p:?}, which is not defined",
                    i + 1
                ));
            }
        }
        for (from, to) in &self.transitions {
            if from != START && !ids.contains(from.as_str()) {
                return Err(format!("transitions from {from:?}: no such page"));
            }
            let mut sum = 0.0;
            for (next, &p) in to {
                if next != END && !ids.contains(next.as_str()) {
                    return Err(format!("transition {from:?} -> {next:?}: no such page"));
                }
                if !p.is_finite() || !(0.0..=1.0).contains(&p) {
                    return Err(format!(
                        "transition {from:?} -> {next:?}: probability {p} is not in 0..=1"
                    ));
                }
                sum += p;
            }
            if (sum - 1.0).abs() > 0.01 {
                return Err(format!("transitions from {from:?} sum to {sum:.3}, not 1"));
            }
        }
        if self.sessions.is_empty() && !self.transitions.contains_key(START) {
            return Err("the model has neither sessions nor transitions from \"start\"".into());
        }
        for (name, q, max, unit) in [
            ("think_time", &self.think_time, MAX_THINK_TIME, "seconds"),
            (
                "session_pages",
                &self.session_pages,
                MAX_SESSION_PAGES,
                "pages",
            ),
        ] {
            if q.points.is_empty() {
                return Err(format!("{name} has no points"));
            }
            for (i, &v) in q.points.iter().enumerate() {
                if !v.is_finite() || !(0.0..=max).contains(&v) {
                    return Err(format!(
                        "{name}.points[{i}] is {v}: not a number from 0 to {max:e} {unit}"
                    ));
                }
            }
            if let Some(i) = q.points.windows(2).position(|w| w[1] < w[0]) {
                return Err(format!(
                    "{name}.points[{}] is less than the point before it: points never decrease",
                    i + 1
                ));
            }
        }
        let rate = self.arrivals.rate;
        if !rate.is_finite() || rate < 0.0 {
            return Err(format!(
                "arrivals.rate is {rate}: not a finite number of sessions per second, at least 0"
            ));
        }
        if self.arrivals.by_hour.len() != 24 {
            return Err(format!(
                "arrivals.by_hour has {} values, not 24",
                self.arrivals.by_hour.len()
            ));
        }
        for (i, &v) in self.arrivals.by_hour.iter().enumerate() {
            if !v.is_finite() || v < 0.0 {
                return Err(format!(
                    "arrivals.by_hour[{i}] is {v}: not a finite number of sessions per second, at least 0"
                ));
            }
        }
        Ok(())
    }

    /// The page class with id `id`.
    pub fn page(&self, id: &str) -> Option<&PageClass> {
        self.pages.iter().find(|p| p.id == id)
    }

    /// A session class drawn by weight (`u` uniform in 0..1); `None` when
    /// the model has none.
    pub fn pick_session(&self, u: f64) -> Option<&SessionClass> {
        let total = self
            .sessions
            .iter()
            .fold(0u64, |t, s| t.saturating_add(s.count.max(1)));
        let mut left = u.clamp(0.0, 1.0) * total as f64;
        for s in &self.sessions {
            left -= s.count.max(1) as f64;
            if left < 0.0 {
                return Some(s);
            }
        }
        self.sessions.last()
    }

    /// The next state after `from` (a page id or [`START`]) drawn from the
    /// transitions (`u` uniform in 0..1): a page id, or [`END`] when the
    /// walk ends (also when `from` has no transitions).
    pub fn next_page(&self, from: &str, u: f64) -> &str {
        let Some(to) = self.transitions.get(from) else {
            return END;
        };
        let mut left = u.clamp(0.0, 1.0) * to.values().sum::<f64>();
        for (next, p) in to {
            left -= p;
            if left < 0.0 {
                return next;
            }
        }
        to.keys().next_back().map_or(END, String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn tiny() -> Model {
        let file = |path: &str, bytes| FileRef {
            path: path.into(),
            method: "GET".into(),
            bytes,
            status: 200,
            dynamic: false,
        };
        Model {
            source: Source {
                files: vec!["access.log".into()],
                format: "combined".into(),
                lines: 5,
                malformed: 0,
                first: "2026-11-24T00:00:00Z".into(),
                last: "2026-11-24T00:10:00Z".into(),
            },
            rules: Rules {
                page_gap: 15.0,
                session_gap: 300.0,
                by_agent: false,
            },
            summary: Summary {
                users: 1,
                sessions: 1,
                pages: 2,
                requests: 5,
                page_classes_before: 2,
                reductions: vec![],
            },
            pages: vec![
                PageClass {
                    id: "p1".into(),
                    count: 1,
                    files: vec![file("/index.html", 1000), file("/logo.png", 5000)],
                },
                PageClass {
                    id: "p2".into(),
                    count: 1,
                    files: vec![file("/about.html", 800)],
                },
            ],
            sessions: vec![SessionClass {
                pages: vec!["p1".into(), "p2".into()],
                count: 1,
            }],
            transitions: BTreeMap::from([
                (START.into(), BTreeMap::from([("p1".into(), 1.0)])),
                (
                    "p1".into(),
                    BTreeMap::from([("p2".into(), 0.5), (END.into(), 0.5)]),
                ),
            ]),
            think_time: Quantiles {
                points: vec![1.0, 2.0, 3.0],
            },
            session_pages: Quantiles {
                points: vec![1.0, 2.0],
            },
            arrivals: Arrivals {
                rate: 0.001,
                by_hour: vec![0.0; 24],
            },
        }
    }

    #[test]
    fn a_model_round_trips_through_toml() {
        let m = tiny();
        let text = m.to_toml();
        assert!(text.contains("[[page]]"), "{text}");
        let back: Model = toml::from_str(&text).unwrap();
        assert_eq!(back, m);
        back.check().unwrap();
    }

    #[test]
    fn check_names_what_does_not_hold_together() {
        let mut m = tiny();
        m.sessions[0].pages.push("p9".into());
        assert!(m.check().unwrap_err().contains("\"p9\""));
        let mut m = tiny();
        m.transitions.get_mut("p1").unwrap().insert(END.into(), 0.9);
        assert!(m.check().unwrap_err().contains("sum to 1.400"));
        let mut m = tiny();
        m.think_time.points = vec![3.0, 1.0];
        assert!(m.check().unwrap_err().contains("think_time"));
        let mut m = tiny();
        m.arrivals.by_hour.pop();
        assert!(m.check().unwrap_err().contains("23 values"));
    }

    #[test]
    fn check_refuses_numbers_and_paths_a_replay_cannot_use() {
        let err = |f: &dyn Fn(&mut Model)| {
            let mut m = tiny();
            f(&mut m);
            m.check().expect_err("refused")
        };
        let has = |e: String, want: &str| assert!(e.contains(want), "{want:?} in {e:?}");
        has(
            err(&|m| m.think_time.points[2] = f64::NAN),
            "think_time.points[2]",
        );
        has(
            err(&|m| m.think_time.points[2] = f64::INFINITY),
            "think_time.points[2]",
        );
        has(
            err(&|m| m.think_time.points[2] = 2e6),
            "think_time.points[2]",
        );
        has(
            err(&|m| m.session_pages.points[0] = -1.0),
            "session_pages.points[0]",
        );
        has(
            err(&|m| m.session_pages.points[1] = 1e7),
            "session_pages.points[1]",
        );
        has(err(&|m| m.arrivals.rate = f64::NAN), "arrivals.rate");
        has(err(&|m| m.arrivals.rate = -1.0), "arrivals.rate");
        has(err(&|m| m.arrivals.rate = f64::INFINITY), "arrivals.rate");
        has(
            err(&|m| m.arrivals.by_hour[5] = f64::NAN),
            "arrivals.by_hour[5]",
        );
        has(
            err(&|m| m.arrivals.by_hour[7] = -0.5),
            "arrivals.by_hour[7]",
        );
        has(
            err(&|m| {
                m.transitions
                    .get_mut("p1")
                    .unwrap()
                    .insert("p2".into(), f64::NAN);
            }),
            "\"p1\" -> \"p2\"",
        );
        for bad in ["/a b.html", "/a\nGET /x", "/a\tb", "/a\u{7f}", "/a\rb"] {
            has(
                err(&|m| m.pages[0].files[1].path = bad.into()),
                "page \"p1\" file 2 path",
            );
        }
        has(
            err(&|m| m.pages[1].files[0].path = format!("/{}", "a".repeat(8192))),
            "page \"p2\" file 1 path",
        );
        // At the limits: accepted.
        let mut m = tiny();
        m.pages[1].files[0].path = format!("/{}", "a".repeat(8191));
        m.think_time.points = vec![0.0, 1e6];
        m.session_pages.points = vec![1.0, 1e6];
        m.check().unwrap();
    }

    #[test]
    fn huge_session_counts_do_not_overflow() {
        let mut m = tiny();
        m.sessions[0].count = u64::MAX;
        m.sessions.push(SessionClass {
            pages: vec!["p2".into()],
            count: u64::MAX,
        });
        m.check().unwrap();
        assert_eq!(m.pick_session(0.0).unwrap().pages[0], "p1");
        assert!(m.pick_session(1.0).is_some());
    }

    #[test]
    fn load_names_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.toml");
        std::fs::write(&path, tiny().to_toml().replace("page_gap", "page_gapp")).unwrap();
        let e = Model::load(&path).unwrap_err().to_string();
        assert!(e.contains("model.toml") && e.contains("page_gapp"), "{e}");
    }

    #[test]
    fn quantiles_interpolate_and_sample() {
        let q = Quantiles::of(&mut [4.0, 1.0, 3.0, 2.0, 5.0], 5);
        assert_eq!(q.points, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(q.sample(0.0), 1.0);
        assert_eq!(q.sample(1.0), 5.0);
        assert_eq!(q.median(), 3.0);
        assert_eq!(q.sample(0.125), 1.5);
        assert_eq!(Quantiles::of(&mut [], 5).points, vec![0.0]);
    }

    #[test]
    fn sessions_and_transitions_are_drawn_by_weight() {
        let m = tiny();
        assert_eq!(m.pick_session(0.3).unwrap().pages[0], "p1");
        assert_eq!(m.next_page(START, 0.7), "p1");
        assert_eq!(m.next_page("p1", 0.2), END);
        assert_eq!(m.next_page("p1", 0.8), "p2");
        assert_eq!(m.next_page("p2", 0.5), END);
    }
}
