//! Measures the per-request cost of the WebAssembly sandbox on this
//! machine, in microseconds: (a) a fresh instance of an empty WASI command
//! from an `InstancePre` on a pooling engine, in a fresh store, run to its
//! end; (b) the same with the WASI context a request really gets (a body
//! on stdin, stdout into a pipe, the memory cap and epoch deadline, and 30
//! CGI variables as one block, which is how tern hands them over); (c) a "Hello!" module through tern's own handler, from
//! the request to the last byte of its response, without HTTP.
//!
//! `cargo run --release -p tern-wasm --example overhead [-- ITERATIONS]`
//! (20 000 by default, after a tenth as many for warm-up).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use tern_config::{Admission, EnvPolicy, WasmConfig};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, PeerAddr, RequestBody, RequestId, RouteMatch, RoutePattern,
};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig, ResourceLimiter, Store,
};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::WasiCtxBuilder;

/// A WASI command that returns at once: the sandbox's own cost.
const EMPTY: &str = r#"(module (memory (export "memory") 1) (func (export "_start")))"#;

/// Writes a CGI "Hello!" response.
const HELLO: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "Content-Type: text/plain\n\nHello!\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 33))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;

/// As tern's binary allocates.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// As tern sizes and tunes a route's engine (`max_concurrent` = 32,
/// 64 MiB; see `engine.rs`).
fn engine() -> wasmtime::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_core_instances(32)
        .total_memories(32)
        .total_tables(32)
        .total_component_instances(0)
        .max_memories_per_module(1)
        .max_memory_size(64 << 20)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10)
        .decommit_batch_size(16)
        .pagemap_scan(Enabled::Auto);
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

/// A store's data for (b): as the handler's.
struct State {
    wasi: WasiP1Ctx,
    _env: Vec<u8>,
    cap: Cap,
}

struct Cap(usize);

impl ResourceLimiter for Cap {
    fn memory_growing(
        &mut self,
        _: usize,
        desired: usize,
        _: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.0)
    }
    fn table_growing(&mut self, _: usize, _: usize, _: Option<usize>) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

/// About the CGI variables a plain GET gets, as a C environment block
/// (`NAME=value` and a NUL each).
fn cgi_env() -> Vec<u8> {
    let pairs = [
        ("GATEWAY_INTERFACE", "CGI/1.1"),
        ("SERVER_SOFTWARE", "tern"),
        ("SERVER_NAME", "localhost"),
        ("SERVER_PORT", "8080"),
        ("SERVER_ADDR", "127.0.0.1"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/app/hello?x=1"),
        ("REQUEST_SCHEME", "http"),
        ("SCRIPT_NAME", "/app"),
        ("SCRIPT_FILENAME", "/srv/www/app.wasm"),
        ("PATH_INFO", "/hello"),
        ("PATH_TRANSLATED", "/srv/www/hello"),
        ("QUERY_STRING", "x=1"),
        ("DOCUMENT_ROOT", "/srv/www"),
        ("REMOTE_ADDR", "127.0.0.1"),
        ("REMOTE_PORT", "40000"),
        ("CONTENT_LENGTH", ""),
        ("CONTENT_TYPE", ""),
        ("HTTP_HOST", "localhost:8080"),
        ("HTTP_USER_AGENT", "tern-bench"),
        ("HTTP_ACCEPT", "*/*"),
        ("HTTP_ACCEPT_ENCODING", "gzip, br"),
        ("HTTP_ACCEPT_LANGUAGE", "en"),
        ("HTTP_CONNECTION", "keep-alive"),
        ("HTTP_CACHE_CONTROL", "no-cache"),
        ("HTTP_COOKIE", "session=0123456789abcdef"),
        ("HTTP_REFERER", "http://localhost:8080/"),
        ("HTTPS", "off"),
        ("REDIRECT_STATUS", "200"),
    ];
    pairs
        .iter()
        .flat_map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes(), b"\0"])
        .flatten()
        .copied()
        .collect()
}

/// (a): instantiate and run, nothing else.
fn bare(
    engine: &Engine,
    module: &Module,
) -> wasmtime::Result<impl FnMut() -> wasmtime::Result<()>> {
    let pre: InstancePre<()> = Linker::new(engine).instantiate_pre(module)?;
    let engine = engine.clone();
    Ok(move || {
        let mut store = Store::new(&engine, ());
        store.set_epoch_deadline(1_000);
        let instance = pre.instantiate(&mut store)?;
        let start = instance.get_typed_func::<(), ()>(&mut store, "_start")?;
        start.call(&mut store, ())?;
        black_box(&store);
        Ok(())
    })
}

/// (b): with the WASI context a request gets.
fn with_wasi(
    engine: &Engine,
    module: &Module,
) -> wasmtime::Result<impl FnMut() -> wasmtime::Result<()>> {
    let mut linker: Linker<State> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut State| &mut s.wasi)?;
    let pre = linker.instantiate_pre(module)?;
    let engine = engine.clone();
    let env = cgi_env();
    Ok(move || {
        let stdout = MemoryOutputPipe::new(1 << 20);
        let mut wasi = WasiCtxBuilder::new();
        wasi.args(&["app.wasm"])
            .stdin(MemoryInputPipe::new(Bytes::new()))
            .stdout(stdout.clone())
            .stderr(MemoryOutputPipe::new(64 * 1024))
            .allow_blocking_current_thread(true);
        let state = State {
            wasi: wasi.build_p1(),
            // A copy per request, as tern builds one per request.
            _env: black_box(&env).clone(),
            cap: Cap(64 << 20),
        };
        let mut store = Store::new(&engine, state);
        store.limiter(|s| &mut s.cap);
        store.set_epoch_deadline(1_000);
        store.epoch_deadline_trap();
        let instance = pre.instantiate(&mut store)?;
        let start = instance.get_typed_func::<(), ()>(&mut store, "_start")?;
        start.call(&mut store, ())?;
        drop(store);
        black_box(stdout.contents());
        Ok(())
    })
}

/// A GET for the handler, as the server would give it.
fn exchange() -> Exchange {
    let request = http::Request::builder()
        .uri("/app")
        .header("host", "localhost:8080")
        .header("user-agent", "tern-bench")
        .body(RequestBody::empty())
        .expect("a valid request");
    Exchange {
        request,
        path: DecodedPath::parse("/app").expect("a valid path"),
        conn: Arc::new(ConnInfo {
            peer: PeerAddr::Tcp(([127, 0, 0, 1], 40000).into()),
            local: PeerAddr::Tcp(([127, 0, 0, 1], 8080).into()),
            secure: false,
            tls: None,
        }),
        route: RouteMatch {
            site: Arc::from("bench"),
            pattern: RoutePattern::Prefix(Arc::from("/app")),
        },
        id: RequestId(1),
    }
}

/// Times `iterations` calls of `f` after a warm-up; the sorted samples.
fn measure(iterations: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..(iterations / 10).max(10) {
        f();
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples.sort_unstable();
    samples
}

fn report(what: &str, samples: &[Duration]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "{what:<58} median {:>8.1} µs   p99 {:>8.1} µs   ({} runs)",
        us(at(0.5)),
        us(at(0.99)),
        samples.len()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iterations: usize = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|e| format!("ITERATIONS `{n}`: {e}"))?,
        None => 20_000,
    };
    if iterations == 0 {
        return Err("ITERATIONS must be at least 1".into());
    }
    if cfg!(debug_assertions) {
        println!("(a debug build: these numbers say nothing; use --release)");
    }
    let engine = engine()?;
    let empty = Module::new(&engine, wat::parse_str(EMPTY)?)?;

    let mut a = bare(&engine, &empty)?;
    let samples = measure(iterations, || a().expect("the empty module runs"));
    report(
        "(a) empty WASI command: fresh store, instance, _start",
        &samples,
    );

    let mut b = with_wasi(&engine, &empty)?;
    let samples = measure(iterations, || b().expect("the empty module runs"));
    report(
        "(b) (a) + the request's WASI context (pipes, limits, env)",
        &samples,
    );

    let dir = tempfile::tempdir()?;
    let module = dir.path().join("hello.wat");
    std::fs::write(&module, HELLO)?;
    let cfg = WasmConfig {
        module,
        document_root: dir.path().to_owned(),
        dir: None,
        memory_limit: 64 << 20,
        timeout: Duration::from_secs(10),
        max_output_bytes: 16 << 20,
        admission: Admission::default(),
        env: EnvPolicy::default(),
        max_stderr_bytes: 64 * 1024,
    };
    let handler = tern_wasm::Wasm::new(&cfg)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let samples = measure(iterations, || {
        let body = rt.block_on(async {
            let resp = handler.call(exchange()).await;
            assert_eq!(resp.status(), 200, "the Hello! module answers");
            resp.into_body().collect().await.map(|b| b.to_bytes())
        });
        assert_eq!(black_box(body.expect("a whole body")).as_ref(), b"Hello!\n");
    });
    report(
        "(c) \"Hello!\" through the handler (env, run, response)",
        &samples,
    );
    Ok(())
}
