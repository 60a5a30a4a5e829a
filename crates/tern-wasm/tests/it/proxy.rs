//! Components of the WASI HTTP proxy world, as `wasmtime serve` runs
//! them: a core module in WAT implementing
//! `wasi:http/incoming-handler#handle` through the canonical ABI, made a
//! component by `wit-component` against the WIT in `wit/`, and served
//! through the same route setting as a WAGI module.

use std::time::Duration;

use http_body_util::BodyExt as _;
use tern_wasm::Error;
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

use crate::{call, start, Req, Route};

/// The handler; what it does depends on the character after `/app/`:
/// `h` says "Hello!" with two headers, `e` echoes the method, the path,
/// the `x-echo` header and the body, `t` traps, `l` loops, `m` grows its
/// memory without end, `b` writes without end, `n` returns without a
/// response.
const APP: &str = r#"
(module
  (import "wasi:http/types@0.2.12" "[constructor]fields" (func $fields_new (result i32)))
  (import "wasi:http/types@0.2.12" "[method]fields.append"
    (func $fields_append (param i32 i32 i32 i32 i32 i32)))
  (import "wasi:http/types@0.2.12" "[method]fields.get" (func $fields_get (param i32 i32 i32 i32)))
  (import "wasi:http/types@0.2.12" "[constructor]outgoing-response"
    (func $resp_new (param i32) (result i32)))
  (import "wasi:http/types@0.2.12" "[method]outgoing-response.body" (func $resp_body (param i32 i32)))
  (import "wasi:http/types@0.2.12" "[method]outgoing-body.write" (func $body_write (param i32 i32)))
  (import "wasi:http/types@0.2.12" "[static]outgoing-body.finish"
    (func $body_finish (param i32 i32 i32 i32)))
  (import "wasi:http/types@0.2.12" "[static]response-outparam.set"
    (func $out_set (param i32 i32 i32 i32 i64 i32 i32 i32 i32)))
  (import "wasi:http/types@0.2.12" "[method]incoming-request.method" (func $req_method (param i32 i32)))
  (import "wasi:http/types@0.2.12" "[method]incoming-request.path-with-query"
    (func $req_path (param i32 i32)))
  (import "wasi:http/types@0.2.12" "[method]incoming-request.headers"
    (func $req_headers (param i32) (result i32)))
  (import "wasi:http/types@0.2.12" "[method]incoming-request.consume" (func $req_consume (param i32 i32)))
  (import "wasi:http/types@0.2.12" "[method]incoming-body.stream" (func $in_stream (param i32 i32)))
  (import "wasi:io/streams@0.2.12" "[method]output-stream.blocking-write-and-flush"
    (func $write (param i32 i32 i32 i32)))
  (import "wasi:io/streams@0.2.12" "[method]input-stream.blocking-read" (func $read (param i32 i64 i32)))
  (import "wasi:io/streams@0.2.12" "[resource-drop]output-stream" (func $drop_out (param i32)))

  (memory (export "memory") 2)
  ;; Host-allocated results (strings, lists) go above the first page.
  (global $heap (mut i32) (i32.const 65536))
  (global $body (mut i32) (i32.const 0))
  (global $stream (mut i32) (i32.const 0))
  (data (i32.const 16) "Hello!\n")
  (data (i32.const 32) "content-type")
  (data (i32.const 48) "text/plain")
  (data (i32.const 64) "x-tern")
  (data (i32.const 80) "proxy")
  (data (i32.const 96) "x-echo")
  (data (i32.const 104) " \n")
  ;; Method names, four bytes each (get, head, post, put), and lengths.
  (data (i32.const 112) "GET HEADPOSTPUT ")
  (data (i32.const 128) "\03\04\04\03")

  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $size i32)
    (result i32)
    (local $p i32)
    (local.set $p (i32.and
      (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
      (i32.sub (i32.const 0) (local.get $align))))
    (global.set $heap (i32.add (local.get $p) (local.get $size)))
    (if (i32.gt_u (global.get $heap) (i32.shl (memory.size) (i32.const 16)))
      (then (if (i32.eq (i32.const -1) (memory.grow (i32.add (i32.const 1) (i32.shr_u
          (i32.sub (global.get $heap) (i32.shl (memory.size) (i32.const 16))) (i32.const 16)))))
        (then unreachable))))
    (if (local.get $old) (then (memory.copy (local.get $p) (local.get $old) (local.get $old_size))))
    (local.get $p))

  ;; Sets the response (status 200, headers $h) and opens its body.
  (func $respond (param $out i32) (param $h i32)
    (local $resp i32)
    (local.set $resp (call $resp_new (local.get $h)))
    (call $resp_body (local.get $resp) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024)) (then unreachable))
    (global.set $body (i32.load (i32.const 1028)))
    (call $out_set (local.get $out) (i32.const 0) (local.get $resp)
      (i32.const 0) (i64.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))
    (call $body_write (global.get $body) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024)) (then unreachable))
    (global.set $stream (i32.load (i32.const 1028))))

  ;; Writes $n bytes at $p to the body, 4096 at a time.
  (func $send (param $p i32) (param $n i32)
    (local $k i32)
    (block $done (loop $more
      (br_if $done (i32.eqz (local.get $n)))
      (local.set $k (select (i32.const 4096) (local.get $n) (i32.gt_u (local.get $n) (i32.const 4096))))
      (call $write (global.get $stream) (local.get $p) (local.get $k) (i32.const 1024))
      (if (i32.load8_u (i32.const 1024)) (then unreachable))
      (local.set $p (i32.add (local.get $p) (local.get $k)))
      (local.set $n (i32.sub (local.get $n) (local.get $k)))
      (br $more))))

  (func $finish
    (call $drop_out (global.get $stream))
    (call $body_finish (global.get $body) (i32.const 0) (i32.const 0) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024)) (then unreachable)))

  (func $text_headers (result i32)
    (local $h i32)
    (local.set $h (call $fields_new))
    (call $fields_append (local.get $h) (i32.const 32) (i32.const 12) (i32.const 48) (i32.const 10)
      (i32.const 1024))
    (if (i32.load8_u (i32.const 1024)) (then unreachable))
    (local.get $h))

  (func $hello (param $out i32)
    (local $h i32)
    (local.set $h (call $text_headers))
    (call $fields_append (local.get $h) (i32.const 64) (i32.const 6) (i32.const 80) (i32.const 5)
      (i32.const 1024))
    (call $respond (local.get $out) (local.get $h))
    (call $send (i32.const 16) (i32.const 7))
    (call $finish))

  (func $echo (param $req i32) (param $out i32) (param $path i32) (param $path_len i32)
    (local $m i32) (local $in i32)
    (call $respond (local.get $out) (call $text_headers))
    ;; The method, when it is one of the first four.
    (call $req_method (local.get $req) (i32.const 1024))
    (local.set $m (i32.load8_u (i32.const 1024)))
    (if (i32.lt_u (local.get $m) (i32.const 4)) (then
      (call $send (i32.add (i32.const 112) (i32.shl (local.get $m) (i32.const 2)))
        (i32.load8_u (i32.add (i32.const 128) (local.get $m))))))
    (call $send (i32.const 104) (i32.const 1))
    (call $send (local.get $path) (local.get $path_len))
    (call $send (i32.const 105) (i32.const 1))
    ;; The first x-echo header's value.
    (call $fields_get (call $req_headers (local.get $req)) (i32.const 96) (i32.const 6) (i32.const 1024))
    (if (i32.load (i32.const 1028)) (then
      (call $send (i32.load (i32.load (i32.const 1024))) (i32.load offset=4 (i32.load (i32.const 1024))))))
    (call $send (i32.const 105) (i32.const 1))
    ;; The body, to its end.
    (call $req_consume (local.get $req) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024)) (then unreachable))
    (call $in_stream (i32.load (i32.const 1028)) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024)) (then unreachable))
    (local.set $in (i32.load (i32.const 1028)))
    (block $end (loop $more
      (call $read (local.get $in) (i64.const 4096) (i32.const 1040))
      (br_if $end (i32.load8_u (i32.const 1040)))
      (call $send (i32.load (i32.const 1044)) (i32.load (i32.const 1048)))
      (br $more)))
    (call $finish))

  (func (export "wasi:http/incoming-handler@0.2.12#handle") (param $req i32) (param $out i32)
    (local $path i32) (local $len i32) (local $c i32)
    (call $req_path (local.get $req) (i32.const 1024))
    (local.set $path (i32.load (i32.const 1028)))
    (local.set $len (i32.load (i32.const 1032)))
    (if (i32.gt_u (local.get $len) (i32.const 5))
      (then (local.set $c (i32.load8_u offset=5 (local.get $path)))))
    (if (i32.eq (local.get $c) (i32.const 0x74)) (then unreachable))
    (if (i32.eq (local.get $c) (i32.const 0x6c)) (then (loop $spin (br $spin))))
    (if (i32.eq (local.get $c) (i32.const 0x6d)) (then
      (loop $grow (drop (memory.grow (i32.const 16))) (br $grow))))
    (if (i32.eq (local.get $c) (i32.const 0x6e)) (then return))
    (if (i32.eq (local.get $c) (i32.const 0x62)) (then
      (call $respond (local.get $out) (call $text_headers))
      (loop $flood (call $send (i32.const 0) (i32.const 4096)) (br $flood))))
    (if (i32.eq (local.get $c) (i32.const 0x65)) (then
      (call $echo (local.get $req) (local.get $out) (local.get $path) (local.get $len))
      (return)))
    (call $hello (local.get $out)))
)
"#;

/// `core` (WAT) made a component of the test world.
fn component(core: &str) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let wit = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/wit");
    let (pkg, _) = resolve.push_dir(wit).unwrap();
    let world = resolve.select_world(&[pkg], Some("app")).unwrap();
    let mut module = wat::parse_str(core).unwrap();
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .unwrap();
    ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap()
}

/// A route whose file is the component of [`APP`], as `app.wasm`.
fn app() -> Route {
    let mut r = Route::new("");
    let path = r.path("app.wasm");
    std::fs::write(&path, component(APP)).unwrap();
    r.cfg.module = path;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_proxy_answers_with_its_status_headers_and_body() {
    let h = app().handler();
    let resp = call(&h, Req::get("/app/hello")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.headers["content-type"], "text/plain");
    assert_eq!(resp.headers["x-tern"], "proxy");
    assert_eq!(resp.body, "Hello!\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_method_path_headers_and_body_reach_the_component() {
    let h = app().handler();
    let req = Req::post("/app/echo?q=1", "the body").header("x-echo", "echoed");
    let resp = call(&h, req).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "POST /app/echo?q=1\nechoed\nthe body");
    let resp = call(&h, Req::get("/app/echo")).await;
    assert_eq!(resp.body, "GET /app/echo\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_is_500_and_the_next_request_runs() {
    let h = app().handler();
    let resp = call(&h, Req::get("/app/trap")).await;
    assert_eq!(resp.status, 500);
    let resp = call(&h, Req::get("/app/hello")).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "Hello!\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_is_504_and_the_next_request_runs() {
    let mut r = app();
    r.cfg.timeout = Duration::from_millis(200);
    let h = r.handler();
    let resp = call(&h, Req::get("/app/loop")).await;
    assert_eq!(resp.status, 504);
    let resp = call(&h, Req::get("/app/hello")).await;
    assert_eq!(resp.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_grown_without_end_is_500_and_the_next_request_runs() {
    let mut r = app();
    r.cfg.memory_limit = 4 << 20;
    let h = r.handler();
    let resp = call(&h, Req::get("/app/mem")).await;
    assert_eq!(resp.status, 500);
    let resp = call(&h, Req::get("/app/hello")).await;
    assert_eq!(resp.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_output_is_cut_off_at_the_limit() {
    let mut r = app();
    r.cfg.max_output_bytes = 64 * 1024;
    let h = r.handler();
    let resp = start(&h, Req::get("/app/big")).await;
    let mut body = resp.into_body();
    let mut got = 0usize;
    let failed = loop {
        match body.frame().await {
            Some(Ok(f)) => got += f.into_data().map_or(0, |d| d.len()),
            Some(Err(_)) => break true,
            None => break false,
        }
    };
    assert!(failed, "the body ended as if whole");
    assert!(got <= 64 * 1024, "{got} bytes passed the limit");
    let resp = call(&h, Req::get("/app/hello")).await;
    assert_eq!(resp.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_sets_no_response_is_502() {
    let h = app().handler();
    let resp = call(&h, Req::get("/app/none")).await;
    assert_eq!(resp.status, 502);
}

#[test]
fn a_component_that_is_not_a_proxy_is_a_load_error() {
    // Given as text: a `.wat` file may hold a component too.
    let r = Route::new("(component)");
    let err = tern_wasm::Wasm::new(&r.cfg).unwrap_err();
    let Error::Load { path, reason } = &err else {
        panic!("not a load error: {err}");
    };
    assert_eq!(path, &r.cfg.module);
    assert!(reason.contains("wasi:http/incoming-handler"), "{reason}");
}
