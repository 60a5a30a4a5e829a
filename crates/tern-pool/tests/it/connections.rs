//! Pools of connections to a Unix socket (a stand-in for php-fpm): a
//! backend that refuses gives quick errors and a growing backoff, and the
//! pool recovers when it comes back.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::time::Duration;

use tern_pool::{Health, Pool, PoolConfig, PoolError};

use crate::factories::Connector;
use crate::{eventually, within};

fn config(min: usize) -> PoolConfig {
    PoolConfig {
        name: "fpm".into(),
        min,
        max: 2,
        // Long: a refusing backend must answer long before this.
        queue_timeout: Duration::from_secs(60),
        check_interval: Duration::from_millis(50),
        backoff_min: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        ..PoolConfig::default()
    }
}

#[tokio::test]
async fn a_refusing_backend_gives_unavailable_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let connector = Connector::new(dir.path().join("php.sock"));
    let pool = Pool::start(config(0), connector.clone()).unwrap();
    // The first checkout makes the pool try, and fails with the cause.
    let err = within("first checkout", pool.checkout()).await.unwrap_err();
    let PoolError::Unavailable(why) = err else {
        panic!("{err:?}")
    };
    assert!(why.contains("cannot create"), "{why}");
    // While backing off, checkouts fail without another attempt.
    let attempts = connector.attempts().len();
    let Health::BackingOff {
        consecutive_failures,
        ..
    } = pool.health()
    else {
        panic!("{:?}", pool.health())
    };
    assert_eq!(consecutive_failures, 1);
    let err = within("second checkout", pool.checkout())
        .await
        .unwrap_err();
    assert!(matches!(err, PoolError::Unavailable(_)), "{err:?}");
    assert_eq!(connector.attempts().len(), attempts);
    let stats = pool.stats();
    assert_eq!((stats.create_failures, stats.created), (1, 0));
    within("close", pool.close()).await;
}

#[tokio::test]
async fn the_wait_between_failed_attempts_doubles_up_to_backoff_max() {
    let dir = tempfile::tempdir().unwrap();
    let connector = Connector::new(dir.path().join("php.sock"));
    let pool = Pool::start(config(1), connector.clone()).unwrap();
    // 50 + 100 + 200 + 400 + 400 ms... about 7 attempts in 2 s.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = connector.attempts();
    within("close", pool.close()).await;
    assert!(
        (3..=9).contains(&attempts.len()),
        "{} attempts",
        attempts.len()
    );
    for (n, pair) in attempts.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let wait = Duration::from_millis(50 << n.min(3));
        assert!(
            gap >= wait,
            "attempt {}: {gap:?} after the previous, want >= {wait:?}",
            n + 2
        );
    }
    assert_eq!(pool.stats().create_failures, attempts.len() as u64);
}

#[tokio::test]
async fn the_pool_recovers_when_the_backend_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("php.sock");
    let connector = Connector::new(path.clone());
    let pool = Pool::start(config(1), connector.clone()).unwrap();
    eventually("a failure", || pool.stats().create_failures >= 1).await;
    let listener = UnixListener::bind(&path).unwrap();
    eventually("a connection", || pool.stats().idle == 1).await;
    let (mut server, _) = listener.accept().unwrap();
    let mut lease = within("checkout", pool.checkout()).await.unwrap();
    lease.write_all(b"ping").unwrap();
    let mut got = [0u8; 4];
    server.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    lease.release();
    assert_eq!(pool.health(), Health::Ready);
    // The same connection serves the next request.
    let mut lease = within("checkout", pool.checkout()).await.unwrap();
    lease.write_all(b"pong").unwrap();
    server.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"pong");
    assert_eq!(lease.requests(), 1);
    lease.release();
    within("close", pool.close()).await;
}

#[tokio::test]
async fn an_idle_connection_the_server_closed_is_no_failure_and_is_made_again_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("php.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let connector = Connector::new(path);
    let pool = Pool::start(config(1), connector.clone()).unwrap();
    eventually("a connection", || pool.stats().idle == 1).await;
    let (server, _) = listener.accept().unwrap();
    drop(server);
    eventually("noticed", || pool.stats().ended == 1).await;
    // Not made again to sit idle and be closed again, and no failure.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(pool.stats().idle, 0);
    assert_eq!(pool.stats().crashed, 0);
    assert_eq!(pool.health(), Health::Ready);
    assert_eq!(connector.attempts().len(), 1);
    let checkout = tokio::spawn({
        let pool = pool.clone();
        async move { pool.checkout().await }
    });
    eventually("a connection on demand", || connector.attempts().len() == 2).await;
    let (mut server, _) = listener.accept().unwrap();
    let mut lease = within("checkout", checkout).await.unwrap().unwrap();
    lease.write_all(b"x").unwrap();
    let mut got = [0u8; 1];
    server.read_exact(&mut got).unwrap();
    lease.release();
    assert_eq!(connector.attempts().len(), 2);
    within("close", pool.close()).await;
}
