//! CGI semantics: the environment, the body, the response head, exit
//! statuses and stderr.

use http_body::Body as _;

use crate::wat;
use crate::{call, start, Req, Route};

#[tokio::test]
async fn hello() {
    let r = Route::new(&wat::hello("Hello!\n"));
    // A short run is answered whole: its length is known.
    let resp = start(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.body().size_hint().exact(), Some(7));
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.headers["content-type"], "text/plain");
    assert_eq!(resp.body, "Hello!\n");
}

#[tokio::test]
async fn the_environment_is_the_cgi_variables_and_nothing_else() {
    let r = Route::new(&wat::env());
    let req = Req::get("/app/extra/path?q=1").header("x-thing", "value");
    let resp = call(&r.handler(), req).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    let vars: Vec<&str> = resp.body.lines().collect();
    for want in [
        "GATEWAY_INTERFACE=CGI/1.1",
        "REQUEST_METHOD=GET",
        "SCRIPT_NAME=/app",
        "PATH_INFO=/extra/path",
        "QUERY_STRING=q=1",
        "HTTP_X_THING=value",
        "REMOTE_ADDR=127.0.0.1",
    ] {
        assert!(vars.contains(&want), "{want} missing from {vars:?}");
    }
    // Not tern's own environment: no PATH, no HOME.
    assert!(!vars.iter().any(|v| v.starts_with("PATH=")), "{vars:?}");
    assert!(!vars.iter().any(|v| v.starts_with("HOME=")), "{vars:?}");
}

#[tokio::test]
async fn the_environment_reads_the_same_through_its_pointer_table() {
    let r = Route::new(&wat::env_by_pointer());
    let req = Req::get("/app/x?q=1").header("x-thing", "value");
    let by_pointer = call(&r.handler(), req).await;
    assert_eq!(by_pointer.status, 200, "{}", by_pointer.body);
    let r = Route::new(&wat::env());
    let req = Req::get("/app/x?q=1").header("x-thing", "value");
    let as_block = call(&r.handler(), req).await;
    // Each route has its own directory; the rest is the same.
    let same = |body: &str| -> Vec<String> {
        body.lines()
            .filter(|l| {
                !["SCRIPT_FILENAME=", "PATH_TRANSLATED=", "DOCUMENT_ROOT="]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(same(&by_pointer.body), same(&as_block.body));
    assert_eq!(
        by_pointer.body.lines().count(),
        as_block.body.lines().count()
    );
    assert!(by_pointer.body.lines().any(|l| l == "HTTP_X_THING=value"));
}

#[tokio::test]
async fn environment_pointers_outside_memory_get_efault_and_write_nothing() {
    let r = Route::new(&wat::env_out_of_bounds());
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body, "21 21 intact");
}

#[tokio::test]
async fn the_body_is_stdin() {
    let r = Route::new(&wat::echo());
    let body = "a=1&b=".to_owned() + &"z".repeat(20_000);
    let resp = call(&r.handler(), Req::post("/app", body.clone())).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, body);
}

#[tokio::test]
async fn content_length_is_set_for_a_body() {
    let r = Route::new(&wat::env());
    let resp = call(&r.handler(), Req::post("/app", "12345")).await;
    assert!(
        resp.body.lines().any(|l| l == "CONTENT_LENGTH=5"),
        "{}",
        resp.body
    );
}

#[tokio::test]
async fn a_nonzero_exit_after_a_whole_head_is_the_response() {
    let r = Route::new(&wat::misbehave());
    let resp = call(&r.handler(), Req::post("/app", "e")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "partial\n");
}

#[tokio::test]
async fn a_nonzero_exit_before_a_head_is_502_and_stderr_stays_out_of_the_response() {
    let r = Route::new(&wat::misbehave());
    let resp = call(&r.handler(), Req::post("/app", "x")).await;
    assert_eq!(resp.status, 502);
    assert!(!resp.body.contains("something went wrong"), "{}", resp.body);
}

#[tokio::test]
async fn head_requests_get_no_body() {
    let r = Route::new(&wat::hello("Hello!\n"));
    let mut req = Req::get("/app");
    req.method = "HEAD";
    let resp = call(&r.handler(), req).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "");
}

#[tokio::test]
async fn a_bad_head_is_502() {
    let mut w = wat::Wat::default();
    let p = w.print(1, "not a header\n\nbody");
    let r = Route::new(&w.module(&format!("(func (export \"_start\") {p})")));
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.status, 502);
}

#[tokio::test]
async fn the_directory_is_readable_but_not_writable_and_contains_the_module() {
    let mut r = Route::new(&wat::files());
    let dir = r.path("data");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("data.txt"), "the data\n").unwrap();
    std::fs::write(r.path("outside.txt"), "secret\n").unwrap();
    r.cfg.dir = Some(dir.clone());
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.body,
        "the data\ncould not create new.txt\ncould not open ../outside.txt\n"
    );
    assert!(!dir.join("new.txt").exists());
}

#[tokio::test]
async fn without_a_directory_there_is_no_file_system() {
    let r = Route::new(&wat::files());
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.status, 200);
    assert!(resp.body.starts_with("no data.txt\n"), "{}", resp.body);
}
