//! Pools of spawned `sh` processes: sizing, reuse, queueing, recycling,
//! reaping, and draining.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tern_pool::{Health, Pool, PoolConfig, PoolError, Retire};

use crate::factories::Shells;
use crate::{eventually, reaped, running, within};

fn config(min: usize, max: usize) -> PoolConfig {
    PoolConfig {
        name: "test".into(),
        min,
        max,
        check_interval: Duration::from_millis(50),
        ..PoolConfig::default()
    }
}

fn start(cfg: PoolConfig) -> (Pool<Shells>, Shells) {
    let shells = Shells::sleepers();
    let pool = Pool::start(cfg, shells.clone()).unwrap();
    (pool, shells)
}

#[tokio::test]
async fn min_items_are_created_at_start() {
    let (pool, shells) = start(config(2, 4));
    eventually("two idle workers", || pool.stats().idle == 2).await;
    let pids = shells.pids();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&pid| running(pid)), "{pids:?}");
    assert_eq!(pool.stats().created, 2);
    assert_eq!(pool.health(), Health::Ready);
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_released_worker_is_checked_out_again() {
    let (pool, _shells) = start(config(1, 4));
    let first = within("checkout", pool.checkout()).await.unwrap();
    let pid = first.pid();
    assert_eq!(first.requests(), 0);
    first.release();
    let again = within("checkout", pool.checkout()).await.unwrap();
    assert_eq!(again.pid(), pid);
    assert_eq!(again.requests(), 1);
    again.release();
    let stats = pool.stats();
    assert_eq!((stats.created, stats.requests), (1, 2));
    within("close", pool.close()).await;
}

#[tokio::test]
async fn concurrent_checkouts_grow_the_pool_up_to_max() {
    let (pool, _shells) = start(PoolConfig {
        queue_timeout: Duration::from_millis(300),
        ..config(0, 3)
    });
    let (a, b, c) = within("three checkouts", async {
        tokio::join!(pool.checkout(), pool.checkout(), pool.checkout())
    })
    .await;
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    let mut pids = vec![a.pid(), b.pid(), c.pid()];
    pids.dedup();
    assert_eq!(pids.len(), 3, "three different workers");
    // A fourth waits for a release that does not come.
    let fourth = within("fourth checkout", pool.checkout()).await;
    assert_eq!(
        fourth.unwrap_err(),
        PoolError::Timeout(Duration::from_millis(300))
    );
    let stats = pool.stats();
    assert_eq!((stats.busy, stats.created, stats.queued), (3, 3, 0));
    for lease in [a, b, c] {
        lease.release();
    }
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_full_queue_refuses_at_once_and_a_waiter_times_out() {
    let (pool, _shells) = start(PoolConfig {
        queue: 1,
        queue_timeout: Duration::from_millis(300),
        ..config(1, 1)
    });
    let held = within("checkout", pool.checkout()).await.unwrap();
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.checkout().await.map(|lease| lease.pid()) }
    });
    eventually("one queued", || pool.stats().queued == 1).await;
    assert_eq!(pool.checkout().await.unwrap_err(), PoolError::Full);
    let waited = within("waiter", waiter).await.unwrap();
    assert_eq!(waited, Err(PoolError::Timeout(Duration::from_millis(300))));
    assert_eq!(pool.stats().queued, 0);
    held.release();
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_released_worker_goes_to_a_waiter() {
    let (pool, _shells) = start(config(1, 1));
    let held = within("checkout", pool.checkout()).await.unwrap();
    let pid = held.pid();
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.checkout().await.map(|lease| lease.pid()) }
    });
    eventually("one queued", || pool.stats().queued == 1).await;
    held.release();
    assert_eq!(within("waiter", waiter).await.unwrap(), Ok(pid));
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_cancelled_waiter_does_not_lose_the_worker_handed_to_it() {
    let (pool, _shells) = start(config(1, 1));
    let held = within("checkout", pool.checkout()).await.unwrap();
    let pid = held.pid();
    {
        let mut waiting = pin!(pool.checkout());
        // Poll once: it joins the queue.
        tokio::select! {
            biased;
            _ = &mut waiting => panic!("nothing is free yet"),
            () = std::future::ready(()) => {}
        }
        assert_eq!(pool.stats().queued, 1);
        // The worker is handed to the waiter, which is then dropped
        // before it ever wakes up.
        held.release();
    }
    let stats = pool.stats();
    assert_eq!((stats.queued, stats.busy, stats.idle), (0, 0, 1));
    let again = within("checkout", pool.checkout()).await.unwrap();
    assert_eq!(again.pid(), pid);
    again.release();
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_worker_is_recycled_after_max_requests() {
    let (pool, shells) = start(PoolConfig {
        max_requests: 2,
        ..config(1, 2)
    });
    let mut seen = Vec::new();
    for _ in 0..3 {
        let lease = within("checkout", pool.checkout()).await.unwrap();
        seen.push(lease.pid());
        lease.release();
    }
    assert_eq!(seen[0], seen[1]);
    assert_ne!(seen[1], seen[2], "the third request runs on a new worker");
    eventually("the old worker reaped", || reaped(seen[0])).await;
    assert!(shells.destroyed().contains(&(seen[0], Retire::Recycled)));
    let s = pool.stats();
    assert_eq!(s.retired, 1);
    assert_eq!(
        (s.retired_requests, s.retired_idle, s.retired_age),
        (1, 0, 0)
    );
    within("close", pool.close()).await;
}

#[tokio::test]
async fn an_idle_worker_past_max_age_is_replaced() {
    let (pool, shells) = start(PoolConfig {
        max_age: Some(Duration::from_millis(300)),
        ..config(1, 2)
    });
    eventually("a first worker", || shells.pids().len() == 1).await;
    let first = shells.pids()[0];
    eventually("a replacement", || {
        shells.pids().len() >= 2 && pool.stats().idle == 1
    })
    .await;
    eventually("the aged worker reaped", || reaped(first)).await;
    assert!(shells.destroyed().contains(&(first, Retire::Aged)));
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_leased_worker_past_max_age_is_destroyed_on_release() {
    let (pool, shells) = start(PoolConfig {
        max_age: Some(Duration::from_millis(200)),
        ..config(0, 1)
    });
    let lease = within("checkout", pool.checkout()).await.unwrap();
    let pid = lease.pid();
    tokio::time::sleep(Duration::from_millis(250)).await;
    lease.release();
    eventually("the aged worker reaped", || reaped(pid)).await;
    assert_eq!(shells.destroyed(), [(pid, Retire::Aged)]);
    let s = pool.stats();
    assert_eq!((s.retired, s.retired_age), (1, 1));
    within("close", pool.close()).await;
}

#[tokio::test]
async fn idle_workers_above_min_are_reaped() {
    let (pool, shells) = start(PoolConfig {
        idle_timeout: Duration::from_millis(200),
        ..config(1, 3)
    });
    let (a, b, c) = within("three checkouts", async {
        tokio::join!(pool.checkout(), pool.checkout(), pool.checkout())
    })
    .await;
    for lease in [a.unwrap(), b.unwrap(), c.unwrap()] {
        lease.release();
    }
    eventually("down to min", || {
        let s = pool.stats();
        s.idle == 1 && s.retired == 2 && s.destroying == 0
    })
    .await;
    assert_eq!(pool.stats().retired_idle, 2);
    let idle: Vec<_> = shells
        .destroyed()
        .into_iter()
        .filter(|&(_, why)| why == Retire::Idle)
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(idle.len(), 2);
    assert!(idle.iter().all(|&pid| reaped(pid)));
    let kept: Vec<_> = shells
        .pids()
        .into_iter()
        .filter(|p| !idle.contains(p))
        .collect();
    assert_eq!(kept.len(), 1);
    assert!(running(kept[0]));
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_dead_idle_worker_is_noticed_and_replaced() {
    let (pool, shells) = start(config(1, 2));
    eventually("a first worker", || pool.stats().idle == 1).await;
    let first = shells.pids()[0];
    let pid = rustix::process::Pid::from_raw(first as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    eventually("a replacement", || {
        let s = pool.stats();
        s.crashed == 1 && s.idle == 1 && shells.pids().len() == 2
    })
    .await;
    eventually("the dead worker reaped", || reaped(first)).await;
    assert!(running(shells.pids()[1]));
    let lease = within("checkout", pool.checkout()).await.unwrap();
    assert_eq!(lease.pid(), shells.pids()[1]);
    lease.release();
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_broken_worker_is_destroyed_and_replaced() {
    let (pool, shells) = start(config(1, 1));
    let lease = within("checkout", pool.checkout()).await.unwrap();
    let pid = lease.pid();
    lease.discard(Retire::Broken);
    eventually("the broken worker reaped", || reaped(pid)).await;
    assert_eq!(shells.destroyed(), [(pid, Retire::Broken)]);
    assert!(matches!(
        pool.health(),
        Health::BackingOff {
            consecutive_failures: 1,
            ..
        } | Health::Ready
    ));
    // After the backoff, the minimum is restored.
    eventually("a replacement", || pool.stats().idle == 1).await;
    let next = within("checkout", pool.checkout()).await.unwrap();
    assert_ne!(next.pid(), pid);
    next.release();
    assert_eq!(pool.health(), Health::Ready);
    assert_eq!(pool.stats().crashed, 1);
    within("close", pool.close()).await;
}

#[tokio::test]
async fn a_dropped_lease_destroys_its_worker() {
    let (pool, shells) = start(config(0, 1));
    let lease = within("checkout", pool.checkout()).await.unwrap();
    let pid = lease.pid();
    drop(lease);
    eventually("the abandoned worker reaped", || reaped(pid)).await;
    assert_eq!(shells.destroyed(), [(pid, Retire::Abandoned)]);
    assert_eq!(
        pool.health(),
        Health::Ready,
        "tern's cancellation is no failure"
    );
    within("close", pool.close()).await;
}

#[tokio::test]
async fn close_drains_idle_now_and_leased_workers_when_they_return() {
    let (pool, shells) = start(config(2, 2));
    eventually("two idle workers", || pool.stats().idle == 2).await;
    let lease = within("checkout", pool.checkout()).await.unwrap();
    let leased = lease.pid();
    let idle = *shells.pids().iter().find(|&&p| p != leased).unwrap();
    let closing = tokio::spawn({
        let pool = pool.clone();
        async move { pool.close().await }
    });
    eventually("closed", || pool.health() == Health::Closed).await;
    assert_eq!(pool.checkout().await.unwrap_err(), PoolError::Closed);
    eventually("the idle worker reaped", || reaped(idle)).await;
    assert!(running(leased), "a leased worker finishes its request");
    assert!(!closing.is_finished());
    lease.release();
    within("close", closing).await.unwrap();
    assert!(reaped(leased), "destroyed and reaped before close returned");
    assert!(shells.destroyed().contains(&(leased, Retire::Closed)));
    // Idempotent.
    within("close again", pool.close()).await;
}

#[tokio::test]
async fn close_fails_queued_checkouts() {
    let (pool, _shells) = start(config(1, 1));
    let lease = within("checkout", pool.checkout()).await.unwrap();
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.checkout().await.map(|lease| lease.pid()) }
    });
    eventually("one queued", || pool.stats().queued == 1).await;
    let closing = tokio::spawn({
        let pool = pool.clone();
        async move { pool.close().await }
    });
    assert_eq!(
        within("waiter", waiter).await.unwrap(),
        Err(PoolError::Closed)
    );
    drop(lease);
    within("close", closing).await.unwrap();
}

#[tokio::test]
async fn dropping_the_pool_kills_its_workers() {
    let (pool, shells) = start(config(2, 2));
    eventually("two idle workers", || pool.stats().idle == 2).await;
    let pids = shells.pids();
    drop(pool);
    eventually("every worker reaped", || pids.iter().all(|&p| reaped(p))).await;
}

#[tokio::test]
async fn a_dropped_pool_removes_its_socket_directory_while_its_workers_stop() {
    // Workers that ignore SIGTERM take the whole grace period to stop.
    let shells = Shells::listening("trap '' TERM; exec sleep 1000");
    let dir = shells.socket_dir().unwrap();
    let pool = Pool::start(config(2, 2), shells.clone()).unwrap();
    eventually("two idle workers", || pool.stats().idle == 2).await;
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "two sockets");
    let pids = shells.pids();
    drop(pool);
    eventually("the socket directory removed", || !dir.exists()).await;
    assert!(
        pids.iter().all(|&p| running(p)),
        "removed while the workers still stop"
    );
    eventually("every worker reaped", || pids.iter().all(|&p| reaped(p))).await;
    drop(shells);
    assert!(!dir.exists());
}

#[tokio::test]
async fn a_worker_that_crashes_at_once_is_respawned_ever_more_slowly() {
    let shells = Shells::running("exit 3");
    let pool = Pool::start(
        PoolConfig {
            backoff_min: Duration::from_millis(50),
            backoff_max: Duration::from_secs(10),
            ..config(1, 4)
        },
        shells.clone(),
    )
    .unwrap();
    // Each death is noticed on a tick and doubles the wait: 50, 100, 200,
    // 400, 800 ms... so 2 s hold at most ~6 spawns (a spawn per tick, 40,
    // without the brake).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let spawned = shells.pids().len();
    assert!((2..=8).contains(&spawned), "{spawned} spawns");
    assert!(matches!(pool.health(), Health::BackingOff { .. }));
    // Nothing alive while backing off: a checkout fails at once, with why.
    // (Between the end of a wait and the next tick, a freshly spawned
    // worker is not yet known to be dead and may be lent: it breaks.)
    let mut unavailable = None;
    for _ in 0..100 {
        match within("checkout", pool.checkout()).await {
            Ok(lease) => lease.discard(Retire::Broken),
            Err(err) => {
                unavailable = Some(err);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let err = unavailable.expect("checkouts fail while the workers crash");
    assert!(
        matches!(err, PoolError::Unavailable(ref why) if why.contains("died") || why.contains("broke")),
        "{err}"
    );
    within("close", pool.close()).await;
    assert!(shells.pids().iter().all(|&p| reaped(p)));
}

#[tokio::test]
async fn a_checkout_that_waits_counts_its_wait_in_a_later_bucket() {
    let (pool, _shells) = start(config(1, 1));
    eventually("an idle worker", || pool.stats().idle == 1).await;
    let held = within("checkout", pool.checkout()).await.unwrap();
    let at_once = pool.stats().queue_wait;
    assert_eq!(at_once.counts[0], 1, "served at once: a zero wait");
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.checkout().await.map(tern_pool::Lease::release) }
    });
    eventually("one queued", || pool.stats().queued == 1).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    held.release();
    within("waiter", waiter).await.unwrap().unwrap();
    let wait = pool.stats().queue_wait;
    assert_eq!(wait.counts.iter().sum::<u64>(), 2, "{wait:?}");
    assert_eq!(wait.counts[0], 1, "{wait:?}");
    // 0.01 s and more: beyond the first four buckets.
    assert_eq!(wait.counts[..4].iter().sum::<u64>(), 1, "{wait:?}");
    assert!(wait.sum >= Duration::from_millis(20), "{wait:?}");
    within("close", pool.close()).await;
}

#[tokio::test]
async fn the_snapshot_shows_each_worker_idle_or_busy_until_it_is_destroyed() {
    let (pool, shells) = start(config(2, 2));
    eventually("two idle workers", || pool.stats().idle == 2).await;
    let snap = pool.snapshot();
    let mut pids: Vec<_> = snap.items.iter().map(|i| i.pid.unwrap()).collect();
    pids.sort_unstable();
    let mut made = shells.pids();
    made.sort_unstable();
    assert_eq!(pids, made);
    assert!(pids.iter().all(|&pid| running(pid)));
    assert!(snap.items.iter().all(|i| !i.busy && i.current.is_none()));

    let lease = within("checkout", pool.checkout()).await.unwrap();
    let pid = lease.pid();
    lease.serving(Arc::from("/app/x?y=1"));
    let snap = pool.snapshot();
    let row = snap.items.iter().find(|i| i.pid == Some(pid)).unwrap();
    assert!(row.busy);
    assert_eq!(row.current.as_ref().map(|(t, _)| &**t), Some("/app/x?y=1"));
    assert_eq!(snap.items.iter().filter(|i| i.busy).count(), 1);
    lease.release();
    let snap = pool.snapshot();
    let row = snap.items.iter().find(|i| i.pid == Some(pid)).unwrap();
    assert!(!row.busy && row.current.is_none());
    assert_eq!(row.requests, 1);
    assert!(row.last_duration.is_some());

    let lease = within("checkout", pool.checkout()).await.unwrap();
    let broken = lease.pid();
    lease.discard(Retire::Broken);
    assert!(
        pool.snapshot().items.iter().all(|i| i.pid != Some(broken)),
        "a destroyed worker leaves the snapshot at once"
    );
    eventually("the broken worker reaped", || reaped(broken)).await;
    within("close", pool.close()).await;
    assert!(pool.snapshot().items.is_empty());
}
