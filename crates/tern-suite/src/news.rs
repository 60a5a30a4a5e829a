//! The bundled model of the "webstone" section: a small news site, the
//! site of `docs/measurements/2026-11-25-webstone/gen-log.py`, built here
//! as a [`Model`] directly (no log, no Python), the same on every run.
//!
//! Ten page classes: the front page (5 files), six articles (5 to 7
//! files: the article, the site's style and logo, and 2 to 4 pictures of
//! its own), two searches (one dynamic file, `/cgi-bin/search?q=WORD`)
//! and the about page (3 files). Users walk the log's page-to-page
//! weights; the think times are lognormal (median about 17 s), as the
//! log's were.

use std::collections::BTreeMap;

use tern_workload::{
    Arrivals, FileRef, Model, PageClass, Quantiles, Rules, SessionClass, Source, Summary, END,
    START,
};

/// What the bundled model is called in the report.
pub const NAME: &str = "bundled news site";

/// Users (one session each) the model is drawn from.
const USERS: usize = 300;

/// The longest session walked.
const MAX_PAGES: usize = 30;

/// Over how long the users arrived (two hours, as the log's).
const SPAN_SECONDS: f64 = 7200.0;

/// SplitMix64: a small generator whose sequence is the same everywhere.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An index below `n`.
    fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n as f64) as usize).min(n - 1)
    }

    /// A lognormal draw (Box–Muller).
    fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mu + sigma * z).exp()
    }
}

/// The kinds of page a user moves between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Front,
    Article,
    Search,
    About,
}

/// Where a user goes next, with weights (the log's `NEXT`); `None` ends
/// the session.
fn next(from: Option<Kind>) -> &'static [(Option<Kind>, u32)] {
    use Kind::{About, Article, Front, Search};
    match from {
        None => &[(Some(Front), 7), (Some(Article), 2), (Some(Search), 1)],
        Some(Front) => &[
            (Some(Article), 6),
            (Some(Search), 2),
            (Some(About), 1),
            (None, 3),
        ],
        Some(Article) => &[
            (Some(Article), 4),
            (Some(Front), 2),
            (Some(Search), 2),
            (None, 4),
        ],
        Some(Search) => &[(Some(Article), 5), (Some(Search), 1), (None, 3)],
        Some(About) => &[(Some(Front), 1), (None, 3)],
    }
}

fn pick(rng: &mut Rng, options: &[(Option<Kind>, u32)]) -> Option<Kind> {
    let total: u32 = options.iter().map(|(_, w)| w).sum();
    let mut left = rng.uniform() * f64::from(total);
    for &(k, w) in options {
        left -= f64::from(w);
        if left < 0.0 {
            return k;
        }
    }
    options[options.len() - 1].0
}

fn file(path: &str, bytes: u64) -> FileRef {
    FileRef {
        path: path.to_owned(),
        method: "GET".to_owned(),
        bytes,
        status: 200,
        dynamic: false,
    }
}

/// Articles in the model.
const ARTICLES: u64 = 6;

/// The words searched for, one page class each.
const WORDS: [&str; 2] = ["tern", "harbor"];

/// The site's pages, each with its kind: front, articles, searches, about.
fn catalogue() -> Vec<(Kind, Vec<FileRef>)> {
    let style = || file("/css/site.css", 14_000);
    let logo = || file("/img/logo.png", 9_000);
    let mut pages = vec![(
        Kind::Front,
        vec![
            file("/index.html", 22_000),
            style(),
            file("/js/site.js", 38_000),
            logo(),
            file("/img/hero.jpg", 120_000),
        ],
    )];
    for n in 1..=ARTICLES {
        let mut files = vec![
            file(&format!("/news/{n}.html"), 18_000 + 500 * (n % 4)),
            style(),
            logo(),
        ];
        for k in 0..2 + n % 3 {
            files.push(file(
                &format!("/img/a{n}-{k}.jpg"),
                40_000 + 1_000 * ((n * 7 + k) % 5),
            ));
        }
        pages.push((Kind::Article, files));
    }
    for (i, word) in WORDS.iter().enumerate() {
        let mut f = file(&format!("/cgi-bin/search?q={word}"), 6_000 + 400 * i as u64);
        f.dynamic = true;
        pages.push((Kind::Search, vec![f]));
    }
    pages.push((
        Kind::About,
        vec![file("/about.html", 6_000), style(), logo()],
    ));
    pages
}

/// The bundled model: 300 sessions walked with a fixed seed, their
/// pages counted into classes (ids by frequency, `p1` the most frequent),
/// their sequences into session classes, and their moves into the
/// transitions.
pub fn model() -> Model {
    let pages = catalogue();
    let of_kind =
        |k: Kind| -> Vec<usize> { (0..pages.len()).filter(|&i| pages[i].0 == k).collect() };
    let mut rng = Rng(2026);
    let mut walks: Vec<Vec<usize>> = Vec::with_capacity(USERS);
    let mut thinks = Vec::new();
    for _ in 0..USERS {
        let mut walk = Vec::new();
        let mut at = pick(&mut rng, next(None));
        while let Some(kind) = at {
            let choices = of_kind(kind);
            walk.push(choices[rng.below(choices.len())]);
            if walk.len() >= MAX_PAGES {
                break;
            }
            at = pick(&mut rng, next(Some(kind)));
            if at.is_some() {
                thinks.push(1.0 + rng.lognormal(2.8, 0.8).min(240.0));
            }
        }
        walks.push(walk);
    }

    // Ids by frequency (ties in catalogue order).
    let mut count = vec![0u64; pages.len()];
    for &p in walks.iter().flatten() {
        count[p] += 1;
    }
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(count[i]));
    let mut id = vec![String::new(); pages.len()];
    for (rank, &i) in order.iter().enumerate() {
        id[i] = format!("p{}", rank + 1);
    }
    let classes: Vec<PageClass> = order
        .iter()
        .map(|&i| PageClass {
            id: id[i].clone(),
            count: count[i],
            files: pages[i].1.clone(),
        })
        .collect();

    let mut sequences: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    let mut moves: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for walk in &walks {
        let ids: Vec<String> = walk.iter().map(|&p| id[p].clone()).collect();
        let mut from = START.to_owned();
        for to in ids.iter().chain(std::iter::once(&END.to_owned())) {
            *moves
                .entry(from)
                .or_default()
                .entry(to.clone())
                .or_default() += 1;
            from = to.clone();
        }
        *sequences.entry(ids).or_default() += 1;
    }
    let mut sessions: Vec<SessionClass> = sequences
        .into_iter()
        .map(|(pages, count)| SessionClass { pages, count })
        .collect();
    sessions.sort_by_key(|s| std::cmp::Reverse(s.count));
    let transitions = moves
        .into_iter()
        .map(|(from, to)| {
            let total: u64 = to.values().sum();
            let to = to
                .into_iter()
                .map(|(next, n)| (next, n as f64 / total as f64))
                .collect();
            (from, to)
        })
        .collect();

    let page_count: u64 = count.iter().sum();
    let requests: u64 = walks
        .iter()
        .flatten()
        .map(|&p| pages[p].1.len() as u64)
        .sum();
    let mut lengths: Vec<f64> = walks.iter().map(|w| w.len() as f64).collect();
    let rate = USERS as f64 / SPAN_SECONDS;
    let mut by_hour = vec![0.0; 24];
    by_hour[9] = rate;
    by_hour[10] = rate;
    Model {
        source: Source {
            files: vec![format!("({NAME}, built by tern suite)")],
            format: "synthetic".to_owned(),
            lines: requests,
            malformed: 0,
            first: "2026-11-24T09:00:00Z".to_owned(),
            last: "2026-11-24T11:00:00Z".to_owned(),
        },
        rules: Rules {
            page_gap: 15.0,
            session_gap: 300.0,
            by_agent: false,
        },
        summary: Summary {
            users: USERS as u64,
            sessions: USERS as u64,
            pages: page_count,
            requests,
            page_classes_before: pages.len() as u64,
            reductions: Vec::new(),
        },
        pages: classes,
        sessions,
        transitions,
        think_time: Quantiles::of(&mut thinks, 21),
        session_pages: Quantiles::of(&mut lengths, 11),
        arrivals: Arrivals { rate, by_hour },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_news_site_holds_together_and_is_the_same_every_time() {
        let m = model();
        m.check().unwrap();
        assert_eq!(m, model(), "deterministic");
        assert_eq!(m.pages.len(), 10);
        let ids: Vec<&str> = m.pages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids[0], "p1");
        assert!(m.pages.windows(2).all(|w| w[0].count >= w[1].count));
        // The front page is the most visited, with its five files.
        assert_eq!(m.pages[0].files[0].path, "/index.html");
        assert_eq!(m.pages[0].files.len(), 5);
        let dynamic: Vec<&PageClass> = m
            .pages
            .iter()
            .filter(|p| p.files.iter().any(|f| f.dynamic))
            .collect();
        assert_eq!(dynamic.len(), 2, "the two searches");
        assert!(dynamic.iter().all(|p| p.files.len() == 1));
        for p in &m.pages {
            assert!(p.count > 0, "{} never visited", p.id);
            let n = p.files.len();
            if p.files[0].path.starts_with("/news/") {
                assert!((5..=7).contains(&n), "{}: {n} files", p.id);
            }
        }
        // Think times: a median of some seconds, as logged by people.
        let median = m.think_time.median();
        assert!((8.0..40.0).contains(&median), "{median}");
        assert_eq!(m.summary.sessions, USERS as u64);
        let in_classes: u64 = m.sessions.iter().map(|s| s.count).sum();
        assert_eq!(in_classes, USERS as u64);
    }
}
