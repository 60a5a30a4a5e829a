//! The timeline of a run: per-second responses, errors and latency
//! percentiles, in the JSON result and readable from older files without
//! one.

use std::path::Path;
use std::time::Duration;

use tern_bench::report::json;
use tern_bench::{Arrival, Load, PlanSettings, Reuse, Stop};

use super::open::TIMING;
use crate::server::TestServer;
use crate::{closed, run};

#[test]
fn an_open_loop_run_has_one_interval_per_second() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = TestServer::start();
    let r = run(
        &[server.url("/")],
        PlanSettings {
            load: Load::Open {
                rate: 200.0,
                arrival: Arrival::Constant,
                connections: 8,
            },
            stop: Stop::Duration(Duration::from_secs(3)),
            reuse: Reuse::KeepAlive,
            timeout: Duration::from_secs(5),
            ..PlanSettings::default()
        },
    );
    let t = &r.timeline;
    assert_eq!(r.counts.responses, 600);
    assert_eq!(t.interval_ms, 1000);
    // The last responses may complete just after the third second.
    assert!((3..=4).contains(&t.points.len()), "{t:#?}");
    assert_eq!(t.responses(), r.counts.responses);
    assert_eq!(t.errors(), 0);
    for (i, p) in t.points.iter().enumerate() {
        assert_eq!(p.t_ms, i as u64 * 1000);
        assert_eq!(p.bytes, p.responses * 10, "10-byte bodies");
    }
    // About 200 a second in each full second (a busy machine may shift
    // some across a boundary).
    for p in &t.points[..3] {
        assert!((120..=280).contains(&p.responses), "{t:#?}");
        assert!(p.p50_us > 0 && p.p50_us <= p.p90_us && p.p90_us <= p.p99_us);
        assert!(p.p99_us <= p.max_us);
    }
    // The timeline starts at the measured window's start.
    assert!(t.start_unix_us.abs_diff(r.window.start_unix_us) < 100_000);
    let max = t.points.iter().map(|p| p.max_us).max().unwrap();
    let overall = r.histograms.latency.max();
    // 2 significant digits against 3: within 1 %.
    assert!(max.abs_diff(overall) * 100 <= overall, "{max} vs {overall}");
}

#[test]
fn errors_and_several_threads_add_up_in_the_timeline() {
    let server = TestServer::start();
    let mut settings = closed(4, 200);
    settings.threads = 2;
    let urls = [server.url("/"), server.url("/reset")];
    let r = run(&urls, settings);
    let t = &r.timeline;
    assert_eq!(
        t.responses() + t.errors(),
        r.counts.responses + r.counts.errors.total()
    );
    assert_eq!(t.errors(), r.counts.errors.total());
    assert!(t.errors() > 0 && t.responses() > 0);
}

#[test]
fn the_timeline_survives_json_and_old_files_still_load() {
    let server = TestServer::start();
    let r = run(&[server.url("/")], closed(2, 50));
    assert!(!r.timeline.is_empty());
    let text = json::render(&r);
    assert!(text.contains("\"timeline\""));
    let back = json::parse(&text, Path::new("r.json")).unwrap();
    assert_eq!(back, r);
    // A file written before timelines existed.
    let old = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/result-no-timeline.json"),
    )
    .unwrap();
    assert!(!old.contains("timeline"));
    let back = json::parse(&old, Path::new("old.json")).unwrap();
    assert!(back.timeline.is_empty());
    assert!(back.counts.responses > 0);
    // ...and merges with a new one.
    let m = tern_bench::merge::merge(vec![back.clone(), r.clone()]).unwrap();
    assert_eq!(m.timeline.responses(), r.timeline.responses());
    assert_eq!(
        m.counts.responses,
        back.counts.responses + r.counts.responses
    );
}
