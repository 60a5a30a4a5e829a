//! `tern bench merge`: results from several runs add up exactly, through
//! their JSON files.

use tern_bench::merge::merge_files;
use tern_bench::report::json;
use tern_bench::Reuse;

use crate::server::TestServer;
use crate::{closed, run};

#[test]
fn merged_histograms_are_the_sum_of_the_parts() {
    let server = TestServer::start();
    let mut settings = closed(2, 150);
    settings.reuse = Reuse::KeepAlive;
    let a = run(&[server.url("/")], settings.clone());
    let b = run(&[server.url("/slow/3")], settings);
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&pa, json::render(&a)).unwrap();
    std::fs::write(&pb, json::render(&b)).unwrap();

    let m = merge_files(&[pa, pb]).unwrap();
    assert_eq!(m.runs, 2);
    assert_eq!(m.counts.responses, 300);
    assert_eq!(m.counts.status.get(&200), Some(&300));
    assert_eq!(m.concurrency, 4);
    assert_eq!(
        m.counts.bytes_total,
        a.counts.bytes_total + b.counts.bytes_total
    );
    let (ha, hb, hm) = (
        &a.histograms.latency,
        &b.histograms.latency,
        &m.histograms.latency,
    );
    assert_eq!(hm.len(), 300);
    assert_eq!(hm.min(), ha.min().min(hb.min()));
    assert_eq!(hm.max(), ha.max().max(hb.max()));
    // Bucket for bucket: the count at or below every recorded value adds up.
    for v in ha.iter_recorded().chain(hb.iter_recorded()) {
        let v = v.value_iterated_to();
        assert_eq!(
            hm.count_between(0, v),
            ha.count_between(0, v) + hb.count_between(0, v)
        );
    }
    assert_eq!(
        m.window.start_unix_us,
        a.window.start_unix_us.min(b.window.start_unix_us)
    );
    assert_eq!(
        m.window.end_unix_us,
        a.window.end_unix_us.max(b.window.end_unix_us)
    );
}

#[test]
fn merging_nothing_or_a_bad_file_is_an_error() {
    assert!(merge_files(&[]).unwrap_err().is_usage());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    std::fs::write(&p, "{}").unwrap();
    let err = merge_files(&[p]).unwrap_err();
    assert!(err.to_string().contains("bad.json"), "{err}");
    assert!(merge_files(&[dir.path().join("missing.json")]).is_err());
}

#[test]
fn shards_split_the_run_and_merge_into_it() {
    let server = TestServer::start();
    let url = server.url("/");
    let results: Vec<tern_bench::RunResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|index| {
                let url = url.clone();
                scope.spawn(move || {
                    let mut s = closed(4, 101);
                    s.shard = tern_bench::Shard { index, count: 2 };
                    run(&[url], s)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let counts: Vec<u64> = results.iter().map(|r| r.counts.responses).collect();
    assert_eq!(counts, vec![51, 50]);
    let merged = tern_bench::merge::merge(results).unwrap();
    assert_eq!(merged.counts.responses, 101);
    assert_eq!(merged.histograms.latency.len(), 101);
    assert_eq!(server.stats.requests(), 101);
    // More shards than connections cannot share the run.
    let mut s = closed(1, 10);
    s.shard = tern_bench::Shard { index: 0, count: 2 };
    let e = tern_bench::Plan::new(vec![tern_bench::Target::parse(&url).unwrap()], s).unwrap_err();
    assert!(
        e.to_string().contains("cannot be shared by 2 shards"),
        "{e}"
    );
}
