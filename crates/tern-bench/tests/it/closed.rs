//! Closed loop: request counts, keep-alive, durations, weights, framing.

use std::time::{Duration, Instant};

use tern_bench::{Reuse, Stop};

use crate::server::TestServer;
use crate::{closed, run};

#[test]
fn sends_exactly_n_requests() {
    let server = TestServer::start();
    let r = run(&[server.url("/")], closed(4, 500));
    assert_eq!(r.counts.responses, 500);
    assert_eq!(r.counts.errors.total(), 0);
    assert_eq!(server.stats.requests(), 500);
    assert_eq!(r.counts.status.get(&200), Some(&500));
    assert_eq!(r.histograms.latency.len(), 500);
    assert_eq!(r.document_length, Some(10));
    assert_eq!(r.server_software.as_deref(), Some("tern-test/1"));
    assert_eq!(r.counts.bytes_body, 5000);
}

#[test]
fn without_keepalive_every_request_opens_a_connection() {
    let server = TestServer::start();
    let r = run(&[server.url("/")], closed(2, 100));
    assert_eq!(r.counts.responses, 100);
    assert_eq!(server.stats.connections(), 100);
    assert_eq!(r.counts.connections, 100);
    assert_eq!(r.counts.kept_alive, 0);
}

#[test]
fn with_keepalive_each_connection_is_reused() {
    let server = TestServer::start();
    let mut settings = closed(3, 300);
    settings.reuse = Reuse::KeepAlive;
    let r = run(&[server.url("/")], settings);
    assert_eq!(r.counts.responses, 300);
    assert_eq!(server.stats.connections(), 3);
    assert_eq!(r.counts.connections, 3);
    assert_eq!(r.counts.kept_alive, 300);
    // Only the first request of each connection waited for a connect.
    assert!(r.histograms.connect.count_between(0, 0) >= 297);
}

#[test]
fn threads_share_the_count() {
    let server = TestServer::start();
    let mut settings = closed(4, 401);
    settings.threads = 2;
    settings.reuse = Reuse::KeepAlive;
    let r = run(&[server.url("/")], settings);
    assert_eq!(r.counts.responses, 401);
    assert_eq!(server.stats.requests(), 401);
    assert_eq!(server.stats.connections(), 4);
}

#[test]
fn a_duration_run_ends_by_itself() {
    let server = TestServer::start();
    let mut settings = closed(2, 1);
    settings.stop = Stop::Duration(Duration::from_millis(300));
    settings.reuse = Reuse::KeepAlive;
    let began = Instant::now();
    let r = run(&[server.url("/")], settings);
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(r.counts.responses > 0);
    assert_eq!(r.counts.responses, server.stats.requests());
    assert!(
        r.window.seconds() > 0.2 && r.window.seconds() < 5.0,
        "{}",
        r.window.seconds()
    );
}

#[test]
fn warmup_and_cooldown_are_left_out() {
    let server = TestServer::start();
    let mut settings = closed(1, 50);
    settings.reuse = Reuse::KeepAlive;
    settings.windows.warmup = Duration::from_millis(150);
    settings.windows.cooldown = Duration::from_millis(100);
    let r = run(&[server.url("/slow/5")], settings);
    assert_eq!(r.counts.responses, 50);
    assert!(r.counts.excluded > 0);
    assert_eq!(server.stats.requests(), 50 + r.counts.excluded);
}

#[test]
fn weights_split_requests_exactly() {
    let server = TestServer::start();
    let mut settings = closed(2, 400);
    settings.reuse = Reuse::KeepAlive;
    let urls = [server.url("/a"), server.url("/b")];
    let targets = vec![
        tern_bench::Target::parse(&urls[0]).unwrap().with_weight(3),
        tern_bench::Target::parse(&urls[1]).unwrap(),
    ];
    let plan = tern_bench::Plan::new(targets, settings).unwrap();
    let r = tern_bench::run(&plan, &tern_bench::RunControl::default()).unwrap();
    assert_eq!(r.counts.responses, 400);
    assert_eq!(
        (server.stats.path("/a"), server.stats.path("/b")),
        (300, 100)
    );
}

#[test]
fn reads_chunked_and_large_bodies_on_one_connection() {
    let server = TestServer::start();
    // Chunked bodies count with their framing: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" is 26 bytes.
    for (path, body) in [
        ("/chunked", 26u64),
        ("/size/200000", 200_000),
        ("/size/0", 0),
    ] {
        let mut settings = closed(1, 20);
        settings.reuse = Reuse::KeepAlive;
        let before = server.stats.connections();
        let r = run(&[server.url(path)], settings);
        assert_eq!(
            (r.counts.responses, r.counts.errors.total()),
            (20, 0),
            "{path}"
        );
        assert_eq!(r.counts.bytes_body, 20 * body, "{path}");
        assert_eq!(
            server.stats.connections() - before,
            1,
            "{path}: one connection for all"
        );
    }
}
