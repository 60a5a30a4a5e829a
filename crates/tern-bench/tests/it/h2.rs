//! HTTP/2 with prior knowledge (h2c): streams share connections.

use tern_bench::{Protocol, Reuse};

use crate::server::TestServer;
use crate::{closed, run};

#[test]
fn h2c_streams_share_the_connections() {
    let server = TestServer::start_h2();
    let mut settings = closed(2, 400);
    settings.protocol = Protocol::Http2 { streams: 4 };
    let r = run(&[server.url("/x")], settings);
    assert_eq!(
        (r.counts.responses, r.counts.errors.total()),
        (400, 0),
        "{:?}",
        r.counts.errors
    );
    assert_eq!(server.stats.requests(), 400);
    assert_eq!(server.stats.connections(), 2, "one connection per -c");
    assert_eq!(r.counts.connections, 2);
    assert_eq!(r.counts.bytes_body, 400 * 5);
    assert_eq!(r.concurrency, 8);
    assert!(r.keepalive);
}

#[test]
fn h2c_against_an_http1_server_is_a_protocol_error() {
    let server = TestServer::start();
    let mut settings = closed(1, 3);
    settings.protocol = Protocol::Http2 { streams: 1 };
    settings.reuse = Reuse::KeepAlive;
    let r = run(&[server.url("/")], settings);
    assert_eq!(r.counts.responses, 0);
    assert_eq!(r.counts.errors.protocol, 3, "{:?}", r.counts.errors);
}

#[test]
fn h2c_refused_is_a_connect_error() {
    let url = format!("http://127.0.0.1:{}/", crate::server::refused_port());
    let mut settings = closed(1, 3);
    settings.protocol = Protocol::Http2 { streams: 2 };
    let r = run(&[url], settings);
    assert_eq!(r.counts.errors.connect, 3);
}
