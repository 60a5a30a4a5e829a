//! A generator of access logs with a known ground truth: users (distinct
//! addresses), page classes (fixed file lists of fixed sizes), sessions
//! drawn from known page sequences, think times between the page gap and
//! the session gap, and gaps between sessions longer than the session gap.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use tern_accesslog::{render, AccessRecord, LogFormat};

/// 2026-11-24T00:00:00Z.
pub(crate) const EPOCH: u64 = 1_795_478_400;

/// splitmix64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// Uniform in 0..1.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Time resolution of a generated log: whole seconds without durations
/// (Common, Combined), or milliseconds with durations (JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Precision {
    Seconds,
    Millis,
}

/// The page classes: a front page, the shared logo, images of their own
/// (and a script for one of them). No two share a front page, a file set,
/// or three quarters of their files, so no heuristic combines them.
pub(crate) fn classes() -> Vec<Vec<(String, u64)>> {
    (0..6u64)
        .map(|k| {
            let mut files = vec![
                (format!("/s{k}/index.html"), 2000 + 100 * k),
                ("/logo.png".to_owned(), 1500),
            ];
            for j in 0..=k {
                files.push((format!("/s{k}/img{j}.png"), 10_000 + 1000 * j + 37 * k));
            }
            if k == 2 {
                files.push(("/cgi-bin/search.pl?q=s2".to_owned(), 777));
            }
            files
        })
        .collect()
}

/// Session templates (page class indices) and their weights.
pub(crate) const TEMPLATES: [(&[usize], f64); 5] = [
    (&[0], 0.3),
    (&[0, 1, 2], 0.25),
    (&[3, 4], 0.2),
    (&[0, 5, 1, 3], 0.15),
    (&[2, 2], 0.1),
];

/// What was generated.
#[derive(Debug)]
pub(crate) struct Truth {
    pub(crate) users: u64,
    pub(crate) sessions: u64,
    pub(crate) pages: u64,
    pub(crate) requests: u64,
    /// Pages of each class.
    pub(crate) class_counts: Vec<u64>,
    /// Sessions by sequence of class indices.
    pub(crate) session_counts: HashMap<Vec<usize>, u64>,
    /// Think times (s).
    pub(crate) think: Vec<f64>,
    /// Every request, in time order.
    pub(crate) records: Vec<AccessRecord>,
}

pub(crate) fn record(t_ms: u64, dur_ms: u64, ip: String, target: &str, bytes: u64) -> AccessRecord {
    AccessRecord {
        time: UNIX_EPOCH + Duration::from_millis(t_ms),
        remote: Some(ip.parse().unwrap()),
        remote_port: Some(40_000),
        user: None,
        method: "GET".into(),
        target: target.into(),
        protocol: "HTTP/1.1".into(),
        status: 200,
        bytes,
        referer: None,
        user_agent: Some("gen/1.0".into()),
        host: Some("example.test".into()),
        duration: Duration::from_millis(dur_ms),
        request_id: 0,
        tls_protocol: None,
        tls_cipher: None,
    }
}

/// `users` users, each with 1 to 4 sessions.
pub(crate) fn generate(users: u64, precision: Precision, seed: u64) -> Truth {
    let mut rng = Rng(seed);
    let classes = classes();
    let unit = match precision {
        Precision::Seconds => 1000,
        Precision::Millis => 1,
    };
    // A duration in ms, within the resolution.
    let span = |rng: &mut Rng, lo_s: u64, hi_s: u64| match precision {
        Precision::Seconds => rng.range(lo_s, hi_s) * 1000,
        Precision::Millis => rng.range(lo_s * 1000, hi_s * 1000),
    };
    let mut truth = Truth {
        users,
        sessions: 0,
        pages: 0,
        requests: 0,
        class_counts: vec![0; classes.len()],
        session_counts: HashMap::new(),
        think: Vec::new(),
        records: Vec::new(),
    };
    for u in 0..users {
        let ip = format!("10.1.{}.{}", u / 200, u % 200 + 1);
        let mut t = EPOCH * 1000 + span(&mut rng, 0, 3 * 3600);
        for _ in 0..rng.range(1, 4) {
            let mut pick = rng.unit();
            let template = TEMPLATES
                .iter()
                .find(|(_, w)| {
                    pick -= w;
                    pick < 0.0
                })
                .unwrap_or(&TEMPLATES[0])
                .0;
            truth.sessions += 1;
            *truth.session_counts.entry(template.to_vec()).or_insert(0) += 1;
            let mut prev_end = 0;
            for (i, &class) in template.iter().enumerate() {
                if i > 0 {
                    let think = span(&mut rng, 20, 200);
                    truth.think.push(think as f64 / 1000.0);
                    t = prev_end + think;
                }
                truth.pages += 1;
                truth.class_counts[class] += 1;
                let mut end = t;
                for (j, (target, bytes)) in classes[class].iter().enumerate() {
                    if j > 0 {
                        t += span(&mut rng, 0, 3);
                    }
                    let dur = if unit == 1 { rng.range(1, 50) } else { 0 };
                    truth
                        .records
                        .push(record(t, dur, ip.clone(), target, *bytes));
                    truth.requests += 1;
                    end = end.max(t + dur);
                }
                prev_end = end;
                t = end;
            }
            t = prev_end + span(&mut rng, 400, 2000);
        }
    }
    // Stable: a user's requests in the same second keep their order.
    truth.records.sort_by_key(|r| r.time);
    truth
}

/// The records as log text.
pub(crate) fn render_all(records: &[AccessRecord], format: LogFormat) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        render(format, r, &mut out);
    }
    out
}
