//! Test support for end-to-end tests: start the `tern` binary on
//! 127.0.0.1:0 with a configuration, find its port from its first line of
//! output, send raw bytes (so no client library normalises a hostile
//! request), read and parse responses, signal and stop the process; and
//! requests for handlers driven directly, without a server ([`Req`]).
#![forbid(unsafe_code)]

mod exchange;
mod process;
mod wire;

pub use exchange::Req;
pub use process::Tern;
pub use wire::{read_some, request, Response, TimedRead};

/// Writes `body` to `dest` with permission bits `mode` through `install(1)`,
/// so that the (threaded) test process never holds the file open for
/// writing: a child forked by another test at that moment would inherit the
/// descriptor and make exec of the file fail with ETXTBSY.
pub fn install(dest: &std::path::Path, body: &[u8], mode: u32) {
    let tmp = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(tmp.path(), body).expect("write temp file");
    std::fs::create_dir_all(dest.parent().expect("a parent directory")).expect("create dirs");
    let ok = std::process::Command::new("install")
        .arg("-m")
        .arg(format!("{mode:o}"))
        .arg(tmp.path())
        .arg(dest)
        .status()
        .expect("run install")
        .success();
    assert!(ok, "install {}", dest.display());
}
