//! The CGI handler driven directly (no server) with real child processes:
//! shell and Perl scripts written into temporary directories, and a C
//! program compiled with `cc` when there is one.

mod cgiplus;
mod fastcgi_conn;
mod fastcgi_peers;
mod idle_close;
mod pooled;
mod process;
mod protocol;
mod rte_engines;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use tern_config::{Admission, CgiConfig, EnvPolicy, GatewayPolicy};
use tern_gateway::Cgi;
use tern_handler::Handler;

/// A script directory with its handler settings.
pub(crate) struct Site {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) cfg: CgiConfig,
}

impl Site {
    pub(crate) fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("cgi-bin")).unwrap();
        std::fs::create_dir_all(dir.path().join("www")).unwrap();
        let cfg = CgiConfig {
            dir: dir.path().join("cgi-bin"),
            document_root: dir.path().join("www"),
            interpreter: None,
            policy: GatewayPolicy {
                timeout: Duration::from_secs(10),
                env: EnvPolicy::default(),
                max_stderr_bytes: 64 * 1024,
                slow_request: None,
                send_timeout: tern_config::defaults::SEND_TIMEOUT,
            },
            admission: Admission::default(),
        };
        Site { dir, cfg }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes an executable script `cgi-bin/{name}`.
    pub(crate) fn script(&self, name: &str, body: &str) {
        install(
            &self.path(&format!("cgi-bin/{name}")),
            body.as_bytes(),
            0o755,
        );
    }

    pub(crate) fn handler(&self) -> Cgi {
        Cgi::new(&self.cfg).unwrap()
    }
}

pub(crate) use tern_testkit::install;

pub(crate) use tern_testkit::Req;

/// A response as the tests see it.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Resp {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Sends `req` to any handler and reads the whole response (within 30 s).
/// A body that fails part way (a response cut off) ends with a marker.
pub(crate) async fn call(h: &dyn Handler, req: Req) -> Resp {
    let fut = async {
        let resp = h.call(req.exchange()).await;
        let (parts, body) = resp.into_parts();
        let body = match body.collect().await {
            Ok(b) => b.to_bytes().to_vec(),
            Err(e) => format!("<body error: {e}>").into_bytes(),
        };
        Resp {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
    };
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .expect("the response took longer than 30 s")
}

/// Waits (up to 10 s) for `f` to hold.
pub(crate) async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Whether process `pid` no longer runs (gone, or a zombie waiting for a
/// parent that is not us).
pub(crate) fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                == Some("Z")
        }
    }
}

/// Reads a pid a script wrote to `file`, waiting for it to appear.
pub(crate) async fn read_pid(file: &Path) -> u32 {
    let mut pid = None;
    eventually("the script to write its pid", || {
        pid = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    })
    .await;
    pid.unwrap()
}
