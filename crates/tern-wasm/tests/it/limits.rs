//! Each limit stops its request, and the next request (or the others at
//! the same time) runs normally.

use std::time::Duration;

use crate::wat;
use crate::{call, Req, Route};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_is_504_and_the_next_request_runs() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.timeout = Duration::from_millis(200);
    let h = r.handler();
    let resp = call(&h, Req::post("/app", "l")).await;
    assert_eq!(resp.status, 504);
    let resp = call(&h, Req::get("/app")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "Hello!\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_grown_without_end_is_500_and_the_next_request_runs() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.memory_limit = 4 << 20;
    let h = r.handler();
    let resp = call(&h, Req::post("/app", "m")).await;
    assert_eq!(resp.status, 500);
    let resp = call(&h, Req::get("/app")).await;
    assert_eq!(resp.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_output_is_stopped_with_502() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.max_output_bytes = 64 * 1024;
    let h = r.handler();
    let resp = call(&h, Req::post("/app", "o")).await;
    assert_eq!(resp.status, 502);
    assert!(resp.body.len() < 1024, "the partial output leaked");
    let resp = call(&h, Req::get("/app")).await;
    assert_eq!(resp.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_is_500_while_concurrent_requests_succeed() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.admission.max_concurrent = 8;
    let h = r.handler();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let h = h.clone();
        tasks.push(tokio::spawn(async move {
            let trap = i % 3 == 0;
            let req = if trap {
                Req::post("/app", "t")
            } else {
                Req::get("/app")
            };
            (trap, call(&h, req).await)
        }));
    }
    let (mut traps, mut good) = (0, 0);
    for t in tasks {
        let (trap, resp) = t.await.unwrap();
        if trap {
            assert_eq!(resp.status, 500);
            traps += 1;
        } else {
            assert_eq!(resp.status, 200);
            assert_eq!(resp.body, "Hello!\n");
            good += 1;
        }
    }
    assert_eq!((traps, good), (17, 33));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_queued_too_long_is_503_with_retry_after() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.admission.max_concurrent = 1;
    r.cfg.admission.queue_timeout = Duration::from_millis(100);
    r.cfg.timeout = Duration::from_secs(1);
    let h = r.handler();
    // Holds the only instance: its head is out, and it loops until its
    // timeout.
    let held = crate::start(&h, Req::post("/app", "s")).await;
    assert_eq!(held.status(), 200);
    let resp = call(&h, Req::get("/app")).await;
    assert_eq!(resp.status, 503);
    assert_eq!(resp.headers["retry-after"], "1");
    drop(held);
    // Once the looping run has been stopped, the route answers again.
    let mut status = 0;
    for _ in 0..50 {
        status = call(&h, Req::get("/app")).await.status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_a_full_queue_is_503_at_once() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.admission.max_concurrent = 1;
    r.cfg.admission.queue = 1;
    r.cfg.timeout = Duration::from_secs(1);
    let h = r.handler();
    let held = crate::start(&h, Req::post("/app", "s")).await;
    let queued = {
        let h = h.clone();
        tokio::spawn(async move { call(&h, Req::get("/app")).await })
    };
    // Give the queued request time to join the queue.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let resp = tokio::time::timeout(Duration::from_secs(5), call(&h, Req::get("/app")))
        .await
        .expect("a full queue refuses at once");
    assert_eq!(resp.status, 503);
    assert_eq!(resp.headers["retry-after"], "1");
    drop(held);
    // The queued one gets the instance when the looping run is stopped.
    let resp = queued.await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "Hello!\n");
}

/// The server runs each thread's requests on one current-thread runtime,
/// and a module runs on it: a module that loops must yield to the other
/// requests there instead of holding the thread until its timeout.
#[tokio::test(flavor = "current_thread")]
async fn a_looping_module_does_not_starve_the_requests_beside_it() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.timeout = Duration::from_secs(10);
    let h = r.handler();
    let looping = {
        let h = h.clone();
        tokio::spawn(async move { call(&h, Req::post("/app", "l")).await })
    };
    // Let the loop start spinning before the others arrive.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let hellos: Vec<_> = (0..20)
        .map(|_| {
            let h = h.clone();
            tokio::spawn(async move { call(&h, Req::get("/app")).await })
        })
        .collect();
    for t in hellos {
        let resp = t.await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, "Hello!\n");
    }
    assert!(
        !looping.is_finished(),
        "the hellos waited for the loop's timeout"
    );
    let resp = looping.await.unwrap();
    assert_eq!(resp.status, 504);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_counts_runs_and_their_traps_timeouts_and_memory_failures() {
    use tern_handler::Handler as _;

    let mut r = Route::new(&wat::misbehave());
    r.cfg.timeout = Duration::from_millis(200);
    r.cfg.memory_limit = 4 << 20;
    r.cfg.admission.max_concurrent = 3;
    let report = |h: &tern_wasm::Wasm| {
        let mut out = Vec::new();
        h.report(&mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        out.pop().unwrap()
    };
    let h = r.handler();
    let first = report(&h);
    assert_eq!(first.name, r.cfg.module.display().to_string());
    assert_eq!((first.kind, first.max, first.requests), ("wasm", 3, 0));
    for (body, status) in [("t", 500), ("l", 504), ("m", 500), ("", 200), ("t", 500)] {
        let resp = call(&h, Req::post("/app", body)).await;
        assert_eq!(resp.status, status, "{body:?}");
    }
    let h = h.named("site /app");
    let got = report(&h);
    assert_eq!(got.name, "site /app");
    assert_eq!((got.busy, got.requests), (0, 5), "{got:?}");
    assert_eq!(
        got.failures,
        [("trap", 2), ("timeout", 1), ("memory", 1)],
        "{got:?}"
    );
    assert!(got.workers.is_empty());
}
