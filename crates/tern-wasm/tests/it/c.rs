//! CGI programs written in C, compiled to WASI by Debian's clang and
//! wasi-libc (which `scripts/test-all` installs) and run unchanged: the
//! claim that any CGI program compiled to WASI runs in process, with libc's
//! own `getenv`, `fread`, `printf`, `malloc` and `fopen` on top of tern's
//! WASI.

use std::path::Path;
use std::process::Command;

use crate::{call, Req, Route};

/// `source` compiled to a WASI command.
fn compile(source: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("app.c");
    let wasm = dir.path().join("app.wasm");
    std::fs::write(&c, source).unwrap();
    let out = Command::new("clang")
        .args(["--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-o"])
        .arg(&wasm)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| {
            panic!("clang: {e}: run scripts/test-all, which installs clang, lld and wasi-libc")
        });
    assert!(
        out.status.success(),
        "clang failed (scripts/test-all installs clang, lld, wasi-libc and libclang-rt-dev-wasm32):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&wasm).unwrap()
}

/// A route running the C program `source`.
fn route(source: &str) -> Route {
    Route::file("app.wasm", &compile(source))
}

/// A CGI program as one is written for a process: the request from
/// `getenv` and stdin, the response with `printf`.
const CGI: &str = r#"
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *method = getenv("REQUEST_METHOD");
    const char *query = getenv("QUERY_STRING");
    const char *info = getenv("PATH_INFO");
    const char *length = getenv("CONTENT_LENGTH");
    printf("Status: 201 Made\r\n");
    printf("Content-Type: text/plain\r\n");
    printf("X-Method: %s\r\n\r\n", method ? method : "-");
    printf("query=%s\n", query ? query : "-");
    printf("path_info=%s\n", info ? info : "-");
    printf("home=%s\n", getenv("HOME") ? "set" : "unset");
    long left = length ? strtol(length, NULL, 10) : 0;
    printf("body=");
    char buf[1024];
    while (left > 0) {
        size_t got = fread(buf, 1, sizeof buf, stdin);
        if (got == 0) break;
        fwrite(buf, 1, got, stdout);
        left -= (long)got;
    }
    printf("\n");
    return 0;
}
"#;

#[tokio::test]
async fn a_c_cgi_program_runs_unchanged() {
    let r = route(CGI);
    let h = r.handler();
    let resp = call(&h, Req::get("/app/a/b?x=1")).await;
    assert_eq!(resp.status, 201, "{}", resp.body);
    assert_eq!(resp.headers["x-method"], "GET");
    assert_eq!(
        resp.body, "query=x=1\npath_info=/a/b\nhome=unset\nbody=\n",
        "libc's getenv reads the CGI variables and nothing else"
    );
    let body = "k=".to_owned() + &"v".repeat(50_000);
    let resp = call(&h, Req::post("/app", body.clone())).await;
    assert_eq!(resp.status, 201);
    assert_eq!(resp.headers["x-method"], "POST");
    assert!(
        resp.body.ends_with(&format!("body={body}\n")),
        "{}",
        resp.body
    );
}

/// Allocates `n` MiB with malloc, touching each, and says how far it got:
/// `MiB` on stdin, or 4.
const ALLOCATE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char line[32] = "4";
    fgets(line, sizeof line, stdin);
    long want = strtol(line, NULL, 10);
    long got = 0;
    static char *blocks[1024];
    for (long i = 0; i < want && i < 1024; i++) {
        blocks[i] = malloc(1 << 20);
        if (!blocks[i]) break;
        memset(blocks[i], (int)i + 1, 1 << 20);
        got++;
    }
    /* Read back, so that the compiler keeps every block. */
    long sum = 0;
    for (long i = 0; i < got; i++) sum += blocks[i][i];
    printf("Content-Type: text/plain\n\nallocated %ld MiB (%ld)\n", got, sum);
    return 0;
}
"#;

#[tokio::test]
async fn malloc_beyond_the_memory_limit_is_a_500_and_the_next_request_runs() {
    let mut r = route(ALLOCATE);
    r.cfg.memory_limit = 16 << 20;
    let h = r.handler();
    let resp = call(&h, Req::post("/app", "4")).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body, "allocated 4 MiB (10)\n");
    // libc's malloc asks for more memory; tern refuses it with a trap
    // rather than a -1 the program could ignore.
    let resp = call(&h, Req::post("/app", "64")).await;
    assert_eq!(resp.status, 500, "{}", resp.body);
    let resp = call(&h, Req::post("/app", "2")).await;
    assert_eq!(resp.body, "allocated 2 MiB (3)\n");
}

/// Ends by `abort()` (a trap in wasi-libc) on `a`, by `exit(3)` before any
/// output on `x`, and answers otherwise.
const ENDINGS: &str = r#"
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int c = getchar();
    if (c == 'a') abort();
    if (c == 'x') { fprintf(stderr, "giving up\n"); exit(3); }
    printf("Content-Type: text/plain\n\nfine\n");
    return 0;
}
"#;

#[tokio::test]
async fn abort_is_a_500_and_exit_before_a_head_a_502() {
    let r = route(ENDINGS);
    let h = r.handler();
    assert_eq!(call(&h, Req::post("/app", "a")).await.status, 500);
    assert_eq!(call(&h, Req::post("/app", "x")).await.status, 502);
    let resp = call(&h, Req::post("/app", "-")).await;
    assert_eq!((resp.status, resp.body.as_str()), (200, "fine\n"));
}

/// Reads `/data.txt` with `fopen`, and tries to create `/new.txt`.
const FILES: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    printf("Content-Type: text/plain\n\n");
    FILE *f = fopen("/data.txt", "r");
    char line[64] = "";
    if (f && fgets(line, sizeof line, f)) printf("read: %s", line);
    else printf("read failed: %s\n", strerror(errno));
    FILE *w = fopen("/new.txt", "w");
    printf("write: %s\n", w ? "allowed" : "refused");
    return 0;
}
"#;

#[tokio::test]
async fn libc_file_access_sees_only_the_read_only_directory() {
    let mut r = route(FILES);
    let data = r.path("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("data.txt"), "the data\n").unwrap();
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert!(resp.body.starts_with("read failed"), "{}", resp.body);
    r.cfg.dir = Some(data.clone());
    let resp = call(&r.handler(), Req::get("/app")).await;
    assert_eq!(resp.body, "read: the data\nwrite: refused\n");
    assert!(!Path::new(&data.join("new.txt")).exists());
}
