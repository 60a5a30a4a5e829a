//! The WebAssembly handler driven directly (no server): WAT modules
//! written into temporary directories, compiled by the handler, and run
//! per request by real wasmtime instances.

mod c;
mod limits;
mod load;
mod proxy;
mod stream;
mod wagi;
mod wat;
mod wire;

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::BodyExt as _;
use tern_config::{Admission, EnvPolicy, WasmConfig};
use tern_handler::Handler;
use tern_wasm::Wasm;

/// A temporary directory holding a module, with the route's settings.
pub(crate) struct Route {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) cfg: WasmConfig,
}

impl Route {
    /// A route for a module with the text `wat`, saved as `app.wat`.
    pub(crate) fn new(wat: &str) -> Route {
        Route::file("app.wat", wat.as_bytes())
    }

    /// A route for the module `contents`, saved as `name`.
    pub(crate) fn file(name: &str, contents: &[u8]) -> Route {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join(name);
        std::fs::write(&module, contents).unwrap();
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
        Route { dir, cfg }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn handler(&self) -> Wasm {
        Wasm::new(&self.cfg).unwrap()
    }
}

pub(crate) use tern_testkit::Req;

/// A response as the tests see it.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: String,
}

/// Sends `req` to `h`: the response head, with a bound on how long it
/// may take.
pub(crate) async fn start(h: &Wasm, req: Req) -> http::Response<tern_handler::ResponseBody> {
    let fut = h.call(req.exchange());
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .expect("no answer within 30 s")
}

/// Sends `req` to `h` and reads the whole response.
pub(crate) async fn call(h: &Wasm, req: Req) -> Resp {
    let resp = start(h, req).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}
