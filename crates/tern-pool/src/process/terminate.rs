//! Stopping a worker: SIGTERM to its group, a grace period, SIGKILL, reap.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::{exited, Worker};

/// How a worker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Termination {
    /// Its exit status, as reaped.
    pub status: ExitStatus,
    /// It was still running when the grace period ran out and got SIGKILL.
    pub forced: bool,
}

/// The longest pause between two looks at a stopping worker: short enough
/// that a pool's close is not held up, long enough to cost nothing.
const POLL_MAX: Duration = Duration::from_millis(20);

/// After SIGKILL, how long before a worker that still has not died (stuck
/// in the kernel) is reported; tern keeps waiting to reap it.
const STUCK_REPORT: Duration = Duration::from_secs(10);

/// Stops `worker` and reaps it: SIGTERM to its process group, up to `grace`
/// for the worker to exit, then SIGKILL to the group (the worker if it
/// ignored SIGTERM, and whatever it left behind), and the worker is reaped.
/// Never leaves a zombie. Polls the worker every few milliseconds, so it
/// needs a tokio runtime with time enabled.
///
/// # Cancel safety
/// Cancelling it drops the worker, which SIGKILLs the group and reaps it.
pub async fn terminate(mut worker: Worker, grace: Duration) -> Termination {
    let mut forced = false;
    if exited(&mut worker).is_none() {
        worker.signal_group(Signal::TERM);
        forced = !wait_exit(&mut worker, Some(Instant::now() + grace)).await;
    }
    // The leader is dead or dying but not reaped, so its pid still names
    // this group and nobody else's: the SIGKILL cannot hit a stranger.
    worker.signal_group(Signal::KILL);
    if forced {
        wait_exit(&mut worker, None).await;
    }
    let status = worker.reap().unwrap_or_default();
    Termination { status, forced }
}

/// Waits until the worker exited (true) or `deadline` passed (false).
async fn wait_exit(worker: &mut Worker, deadline: Option<Instant>) -> bool {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut reported = false;
    loop {
        if exited(worker).is_some() {
            return true;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return false;
        }
        if !reported && now - started >= STUCK_REPORT {
            reported = true;
            tracing::warn!(
                pid = worker.pid(),
                "a killed worker has not died after {STUCK_REPORT:?}; still waiting to reap it"
            );
        }
        let nap = deadline.map_or(pause, |d| pause.min(d - now));
        tokio::time::sleep(nap).await;
        pause = (pause * 2).min(POLL_MAX);
    }
}
