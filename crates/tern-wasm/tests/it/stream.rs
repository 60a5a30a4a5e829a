//! Streaming: a response starts while its module still runs, a failure
//! after that cuts it off, and a client that leaves stops the module.

use std::time::Duration;

use http_body_util::BodyExt as _;

use crate::wat;
use crate::{call, start, Req, Route};

/// Bounds a wait for the next frame.
async fn next_frame(
    body: &mut tern_handler::ResponseBody,
) -> Option<Result<http_body::Frame<bytes::Bytes>, Box<dyn std::error::Error + Send + Sync>>> {
    tokio::time::timeout(Duration::from_secs(30), body.frame())
        .await
        .expect("no frame within 30 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_response_starts_while_the_module_runs_and_is_cut_off_at_its_timeout() {
    let mut r = Route::new(&wat::misbehave());
    r.cfg.timeout = Duration::from_secs(2);
    let h = r.handler();
    // The module never ends on its own: a collected response would be 504.
    let resp = start(&h, Req::post("/app", "s")).await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let frame = next_frame(&mut body).await.unwrap().unwrap();
    assert_eq!(frame.into_data().unwrap(), "first\n");
    // Then the deadline ends the run, and the body with an error.
    assert!(next_frame(&mut body).await.unwrap().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_soon_after_the_head_still_gets_its_status() {
    let r = Route::new(&wat::misbehave());
    let resp = call(&r.handler(), Req::post("/app", "p")).await;
    assert_eq!(resp.status, 500);
    assert!(!resp.body.contains("first"), "{}", resp.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_stops_the_module() {
    let mut r = Route::new(&wat::misbehave());
    // One slot, and a deadline longer than `call` waits: the next request
    // gets the slot only if the flooding module was stopped by the
    // client's leaving.
    r.cfg.admission.max_concurrent = 1;
    r.cfg.timeout = Duration::from_secs(120);
    r.cfg.max_output_bytes = u64::MAX;
    let h = r.handler();
    let resp = start(&h, Req::post("/app", "o")).await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    assert!(next_frame(&mut body).await.unwrap().is_ok());
    drop(body);
    let resp = call(&h, Req::get("/app")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "Hello!\n");
}
