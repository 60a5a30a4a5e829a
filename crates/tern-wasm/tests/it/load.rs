//! Loading: bad files are errors when the handler is built, and a new
//! handler built from a changed file serves the new module.

use crate::wat;
use crate::{call, Req, Route};
use tern_wasm::Wasm;

#[test]
fn a_file_that_is_not_webassembly_is_an_error_naming_it() {
    let mut r = Route::new("");
    let bad = r.path("bad.wasm");
    std::fs::write(&bad, b"#!/bin/sh\necho hi\n").unwrap();
    r.cfg.module = bad;
    let e = Wasm::new(&r.cfg).unwrap_err().to_string();
    assert!(e.contains("bad.wasm"), "{e}");
    assert!(e.contains("not a WebAssembly binary"), "{e}");
}

#[test]
fn a_truncated_binary_is_an_error() {
    let mut r = Route::new("");
    let binary = ::wat::parse_str(wat::hello("x")).unwrap();
    std::fs::write(r.path("cut.wasm"), &binary[..binary.len() / 2]).unwrap();
    r.cfg.module = r.path("cut.wasm");
    let e = Wasm::new(&r.cfg).unwrap_err().to_string();
    assert!(e.contains("cut.wasm`: not a valid module"), "{e}");
}

#[test]
fn bad_webassembly_text_is_an_error() {
    let r = Route::new("(module (func $f (unknown-instruction)))");
    let e = Wasm::new(&r.cfg).unwrap_err().to_string();
    assert!(e.contains("app.wat"), "{e}");
}

#[test]
fn a_module_without_start_or_memory_is_refused() {
    let r = Route::new(r#"(module (memory (export "memory") 1))"#);
    let e = Wasm::new(&r.cfg).unwrap_err().to_string();
    assert!(e.contains("_start"), "{e}");
    let r = Route::new(r#"(module (func (export "_start")))"#);
    let e = Wasm::new(&r.cfg).unwrap_err().to_string();
    assert!(e.contains("memory"), "{e}");
}

#[tokio::test]
async fn a_binary_module_runs() {
    let mut r = Route::new("");
    let binary = ::wat::parse_str(wat::hello("binary\n")).unwrap();
    std::fs::write(r.path("app.wasm"), binary).unwrap();
    r.cfg.module = r.path("app.wasm");
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.body, "binary\n");
}

#[tokio::test]
async fn a_handler_built_again_serves_the_changed_module() {
    let r = Route::new(&wat::hello("one\n"));
    let old = r.handler();
    assert_eq!(call(&old, Req::get("/app")).await.body, "one\n");
    std::fs::write(r.path("app.wat"), wat::hello("two\n")).unwrap();
    let new = r.handler();
    assert_eq!(call(&new, Req::get("/app")).await.body, "two\n");
    // Requests in flight on the old handler finish on the old module.
    assert_eq!(call(&old, Req::get("/app")).await.body, "one\n");
}
