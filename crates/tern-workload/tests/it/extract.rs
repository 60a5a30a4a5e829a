//! Models drawn from generated logs recover what was generated.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tern_accesslog::LogFormat;
use tern_workload::{extract, Model, Options, END, START};

use crate::gen::{self, Precision, Truth};

pub(crate) fn write_log(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Checks a model against the truth it was drawn from.
fn check_against(model: &Model, truth: &Truth) {
    model.check().unwrap();
    let s = &model.summary;
    assert_eq!(
        (s.users, s.sessions, s.pages, s.requests),
        (truth.users, truth.sessions, truth.pages, truth.requests)
    );
    let classes = gen::classes();
    assert_eq!(s.page_classes_before, classes.len() as u64);
    assert_eq!(
        model.pages.len(),
        classes.len(),
        "no heuristic combines these"
    );
    // Each model page is one generated class: same files, same order,
    // same sizes, same count.
    let mut class_of_id = HashMap::new();
    for p in &model.pages {
        let files: Vec<(String, u64)> = p.files.iter().map(|f| (f.path.clone(), f.bytes)).collect();
        let k = classes
            .iter()
            .position(|c| *c == files)
            .unwrap_or_else(|| panic!("page {} is no generated class: {files:?}", p.id));
        assert_eq!(p.count, truth.class_counts[k], "page {} (class {k})", p.id);
        for f in &p.files {
            assert_eq!(f.dynamic, f.path.contains("cgi-bin"), "{}", f.path);
            assert_eq!((f.method.as_str(), f.status), ("GET", 200));
        }
        class_of_id.insert(p.id.clone(), k);
    }
    // Ids by count, descending.
    assert!(model.pages.windows(2).all(|w| w[0].count >= w[1].count));
    // Session classes.
    let got: HashMap<Vec<usize>, u64> = model
        .sessions
        .iter()
        .map(|s| (s.pages.iter().map(|id| class_of_id[id]).collect(), s.count))
        .collect();
    assert_eq!(got, truth.session_counts);
    // Think times: the quantiles span exactly the generated ones.
    let min = truth.think.iter().copied().fold(f64::INFINITY, f64::min);
    let max = truth.think.iter().copied().fold(0.0, f64::max);
    let q = &model.think_time.points;
    assert_eq!(q.len(), 21);
    assert!(
        (q[0] - min).abs() < 0.002 && (q[20] - max).abs() < 0.002,
        "{q:?} vs {min}..{max}"
    );
    assert!(q.iter().all(|&v| (20.0..=200.0).contains(&v)), "{q:?}");
    let sp = &model.session_pages.points;
    assert_eq!((sp[0], sp[20]), (1.0, 4.0));
    // Transitions: exactly the generated sessions' frequencies...
    let mut counts: HashMap<(String, String), u64> = HashMap::new();
    for (seq, n) in &truth.session_counts {
        let ids: Vec<String> = seq
            .iter()
            .map(|k| class_of_id.iter().find(|(_, v)| *v == k).unwrap().0.clone())
            .collect();
        let states: Vec<String> = std::iter::once(START.to_owned())
            .chain(ids)
            .chain(std::iter::once(END.to_owned()))
            .collect();
        for w in states.windows(2) {
            *counts.entry((w[0].clone(), w[1].clone())).or_insert(0) += n;
        }
    }
    for (from, to) in &model.transitions {
        let total: u64 = counts
            .iter()
            .filter(|((f, _), _)| f == from)
            .map(|(_, n)| n)
            .sum();
        for (next, p) in to {
            let n = counts[&(from.clone(), next.clone())];
            assert!(
                (p - n as f64 / total as f64).abs() < 1e-5,
                "{from} -> {next}: {p}"
            );
        }
    }
    // ... and the generating probabilities within sampling error: a
    // session starts on class 0 with templates 0, 1 and 3.
    let id0 = class_of_id.iter().find(|(_, v)| **v == 0).unwrap().0;
    let p0 = model.transitions[START][id0];
    let n = truth.sessions as f64;
    let expected = 0.3 + 0.25 + 0.15;
    let sigma = (expected * (1.0 - expected) / n).sqrt();
    assert!(
        (p0 - expected).abs() < 4.0 * sigma,
        "{p0} vs {expected} ± {sigma}"
    );
    // Arrivals.
    assert!(model.arrivals.rate > 0.0);
    assert_eq!(model.arrivals.by_hour.len(), 24);
    assert!(
        model.source.first.starts_with("2026-11-24T0"),
        "{}",
        model.source.first
    );
}

#[test]
fn a_combined_log_gives_back_its_users_pages_sessions_and_classes() {
    let truth = gen::generate(60, Precision::Seconds, 7);
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(
        dir.path(),
        "access.log",
        &gen::render_all(&truth.records, LogFormat::Combined),
    );
    let x = extract(&[log], &Options::default()).unwrap();
    assert_eq!(x.model.source.format, "combined");
    assert_eq!(x.model.source.lines, truth.requests);
    assert_eq!(x.model.source.malformed, 0);
    check_against(&x.model, &truth);
    // The summary: counts, the reduction table, the top classes.
    let summary = tern_workload::summary::render(&x.model, &x.malformed);
    for want in [
        format!("users 60, sessions {}", truth.sessions),
        "heuristic".to_owned(),
        "same front (.html) page".to_owned(),
        format!("p1     {:>8}", x.model.pages[0].count),
        "think time: median".to_owned(),
        "session arrivals:".to_owned(),
    ] {
        assert!(summary.contains(&want), "{want:?} in\n{summary}");
    }
    // Every heuristic ran, and none combined anything.
    assert_eq!(x.model.summary.reductions.len(), 3);
    assert!(x
        .model
        .summary
        .reductions
        .iter()
        .all(|r| r.before == r.after && r.factor == 1.0));
}

#[test]
fn a_json_log_gives_back_the_same_with_durations() {
    let truth = gen::generate(60, Precision::Millis, 11);
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(
        dir.path(),
        "access.json",
        &gen::render_all(&truth.records, LogFormat::Json),
    );
    let x = extract(std::slice::from_ref(&log), &Options::default()).unwrap();
    assert_eq!(x.model.source.format, "json");
    check_against(&x.model, &truth);
    // Without reduction: the same classes, and an empty reductions list.
    let options = Options {
        reduce: false,
        ..Options::default()
    };
    let plain = extract(&[log], &options).unwrap();
    assert!(plain.model.summary.reductions.is_empty());
    check_against(&plain.model, &truth);
}

#[test]
fn the_same_log_gives_the_same_model_and_it_round_trips() {
    let truth = gen::generate(30, Precision::Seconds, 3);
    let dir = tempfile::tempdir().unwrap();
    let text = gen::render_all(&truth.records, LogFormat::Combined);
    let a = write_log(dir.path(), "a.log", &text);
    let b = write_log(dir.path(), "b.log", &text);
    let ma = extract(&[a], &Options::default()).unwrap().model;
    let mut mb = extract(&[b], &Options::default()).unwrap().model;
    mb.source.files = ma.source.files.clone();
    assert_eq!(ma.to_toml(), mb.to_toml());
    let path = dir.path().join("model.toml");
    ma.save(&path).unwrap();
    assert_eq!(Model::load(&path).unwrap(), ma);
}

#[test]
fn users_behind_one_address_are_told_apart_by_agent() {
    // Two browsers behind one address fetch pages at once: by address they
    // are one user; by address and agent, two.
    let mut records = Vec::new();
    for (agent, offset) in [("a/1", 0u64), ("b/2", 1)] {
        for i in 0..3u64 {
            let mut r = gen::record(
                gen::EPOCH * 1000 + (offset + i * 60) * 1000,
                0,
                "192.0.2.9".into(),
                &format!("/{agent}/{i}.html"),
                100,
            );
            r.user_agent = Some(agent.into());
            records.push(r);
        }
    }
    records.sort_by_key(|r| r.time);
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(
        dir.path(),
        "access.log",
        &gen::render_all(&records, LogFormat::Combined),
    );
    let one = extract(std::slice::from_ref(&log), &Options::default())
        .unwrap()
        .model;
    assert_eq!((one.summary.users, one.summary.pages), (1, 3));
    let options = Options {
        by_agent: true,
        ..Options::default()
    };
    let two = extract(&[log], &options).unwrap().model;
    assert!(two.rules.by_agent);
    assert_eq!(
        (two.summary.users, two.summary.pages, two.summary.sessions),
        (2, 6, 2)
    );
}

/// A Combined line from `remote` at `t` seconds after [`gen::EPOCH`].
fn combined_line(remote: &str, t: u64, target: &str, agent: &str) -> String {
    let mut r = gen::record((gen::EPOCH + t) * 1000, 0, "192.0.2.1".into(), target, 100);
    r.user_agent = Some(agent.into());
    let mut out = Vec::new();
    tern_accesslog::render(LogFormat::Combined, &r, &mut out);
    let line = String::from_utf8(out).unwrap();
    line.replacen("192.0.2.1", remote, 1)
}

#[test]
fn remotes_that_are_not_addresses_are_still_told_apart() {
    // Host names (HostnameLookups on): two clients browsing at once, each
    // a page a minute for ten minutes.
    let mut text = String::new();
    for i in 0..10u64 {
        for host in ["a.example.net", "b.example.org"] {
            text.push_str(&combined_line(
                host,
                i * 60,
                &format!("/{host}/{i}.html"),
                "x/1",
            ));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "access.log", text.as_bytes());
    let m = extract(&[log], &Options::default()).unwrap().model;
    assert_eq!(
        (m.summary.users, m.summary.sessions, m.summary.pages),
        (2, 2, 20)
    );
}

#[test]
fn a_client_that_never_rests_is_cut_into_bounded_pages_and_sessions() {
    // A bot fetching every 5 s for 26 hours: one user, its requests never
    // a page gap apart.
    let mut text = String::new();
    let n = 26 * 3600 / 5;
    for i in 0..n {
        text.push_str(&combined_line("198.51.100.7", i * 5, "/feed.xml", "bot/1"));
    }
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "access.log", text.as_bytes());
    let x = extract(&[log], &Options::default()).unwrap();
    let m = &x.model;
    assert_eq!(m.summary.users, 1);
    // Pages of at most 15 minutes: 180 files each; sessions of at most 24 h.
    assert_eq!(m.summary.pages, 26 * 4, "{}", m.summary.pages);
    assert_eq!(m.summary.sessions, 2);
    assert!(
        x.forced_page_closes >= 26 * 4 - 2,
        "{}",
        x.forced_page_closes
    );
    assert_eq!(x.forced_session_closes, 1);
    let summary = tern_workload::summary::render_extraction(&x);
    assert!(summary.contains("forced"), "{summary}");
    m.check().unwrap();
}

#[test]
fn json_lines_without_an_address_and_odd_targets_still_make_a_loadable_model() {
    // No remote at all: users told apart by their agents; targets with a
    // space and a line end are percent-encoded, not put on a request line
    // as they are.
    let mut records = Vec::new();
    for i in 0..5u64 {
        for agent in ["a/1", "b/2"] {
            let mut r = gen::record(
                (gen::EPOCH + i * 60) * 1000,
                0,
                "192.0.2.1".into(),
                &format!("/{agent}/page {i}\n.html"),
                100,
            );
            r.remote = None;
            r.user_agent = Some(agent.into());
            records.push(r);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(
        dir.path(),
        "access.json",
        &gen::render_all(&records, LogFormat::Json),
    );
    let m = extract(&[log], &Options::default()).unwrap().model;
    assert_eq!((m.summary.users, m.summary.sessions), (2, 2));
    m.check().unwrap();
    assert!(m
        .pages
        .iter()
        .flat_map(|p| &p.files)
        .any(|f| f.path == "/a/1/page%200%0A.html"));
}
