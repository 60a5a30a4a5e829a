//! Failures of the server are counted by class, never a crash.

use std::time::{Duration, Instant};

use tern_bench::{ErrorClass, Reuse, Stop};

use crate::server::{refused_port, TestServer};
use crate::{closed, run};

#[test]
fn refused_connections_are_connect_errors() {
    let url = format!("http://127.0.0.1:{}/", refused_port());
    let r = run(&[url], closed(2, 20));
    assert_eq!(r.counts.responses, 0);
    assert_eq!(r.counts.errors.get(ErrorClass::Connect), 20);
}

#[test]
fn an_unresolvable_host_is_a_connect_error() {
    let r = run(&["http://no-such-host.invalid/".to_owned()], closed(1, 3));
    assert_eq!(r.counts.errors.connect, 3);
}

#[test]
fn resets_early_closes_and_short_bodies_are_reset_errors() {
    let server = TestServer::start();
    for path in ["/reset", "/close", "/short"] {
        let r = run(&[server.url(path)], closed(2, 10));
        assert_eq!(r.counts.errors.get(ErrorClass::Reset), 10, "{path}");
    }
}

#[test]
fn a_server_that_never_answers_times_out() {
    let server = TestServer::start();
    let mut settings = closed(2, 4);
    settings.timeout = Duration::from_millis(200);
    let began = Instant::now();
    let r = run(&[server.url("/hang")], settings);
    assert_eq!(r.counts.errors.get(ErrorClass::Timeout), 4);
    assert!(began.elapsed() < Duration::from_secs(5));
}

#[test]
fn garbage_is_a_protocol_error_and_404_is_a_status() {
    let server = TestServer::start();
    let r = run(&[server.url("/garbage")], closed(1, 5));
    assert_eq!(r.counts.errors.get(ErrorClass::Protocol), 5);
    let r = run(&[server.url("/404")], closed(1, 5));
    assert_eq!(
        (
            r.counts.responses,
            r.counts.non_2xx(),
            r.counts.status_class(4)
        ),
        (5, 5, 5)
    );
    assert_eq!(r.counts.errors.total(), 0);
}

#[test]
fn a_server_that_dies_mid_run_shows_as_errors() {
    let mut server = TestServer::start();
    let url = server.url("/slow/2");
    let mut settings = closed(2, 1);
    settings.stop = Stop::Duration(Duration::from_millis(800));
    settings.reuse = Reuse::KeepAlive;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        server.stop();
    });
    let r = run(&[url], settings);
    killer.join().unwrap();
    assert!(r.counts.responses > 0);
    assert!(
        r.counts.errors.connect + r.counts.errors.reset > 0,
        "{:?}",
        r.counts.errors
    );
}

#[test]
fn a_keepalive_connection_closed_while_idle_is_reopened_not_an_error() {
    let server = TestServer::start();
    let mut settings = closed(1, 20);
    settings.reuse = Reuse::KeepAlive;
    let r = run(&[server.url("/then-close")], settings);
    assert_eq!(
        (r.counts.responses, r.counts.errors.total()),
        (20, 0),
        "{:?}",
        r.counts.errors
    );
    assert_eq!(server.stats.connections(), 20);
    assert_eq!(
        server.stats.requests(),
        20,
        "each request was sent once, on a live connection"
    );
}

#[test]
fn a_stop_ends_a_run_of_instant_failures() {
    // Failures that never wait (no address at all) must not keep the
    // connection tasks from seeing a stop.
    let mut settings = closed(2, 1);
    settings.stop = Stop::Duration(Duration::from_secs(30));
    let plan = tern_bench::Plan::new(
        vec![tern_bench::Target::parse("http://no-such-host.invalid/").unwrap()],
        settings,
    )
    .unwrap();
    let control = tern_bench::RunControl::default();
    let stop = control.stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stop.stop();
    });
    let began = Instant::now();
    let r = tern_bench::run(&plan, &control).unwrap();
    stopper.join().unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert!(r.counts.errors.connect > 0);
    assert!(r.notes.iter().any(|n| n.contains("stopped early")));
}
