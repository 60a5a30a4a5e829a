//! The pool and the process helpers driven through real parts: `sh`
//! processes spawned by a pool's manager, Unix sockets in temporary
//! directories, and /proc to see which processes exist.

mod connections;
mod factories;
mod processes;
mod spawned;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

/// The bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// Awaits `fut`, failing the test if it takes longer than [`PATIENCE`].
pub(crate) async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not done within {PATIENCE:?}"),
    }
}

/// Polls `cond` until it holds, failing the test after [`PATIENCE`].
pub(crate) async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    within(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Whether `pid` is a running (not zombie) process.
pub(crate) fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Whether `pid` is gone entirely: exited and reaped (no zombie).
pub(crate) fn reaped(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}
