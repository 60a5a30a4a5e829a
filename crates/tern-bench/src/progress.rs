//! Progress on stderr, drawn by its own thread from the driver's atomic
//! counters: a bar on a terminal (requests, rate, errors; erased at the end,
//! nothing at all when stderr is not a terminal), or ab's "Completed N
//! requests" lines for `--format ab`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::driver::ProgressCounters;

/// What "done" means for the bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extent {
    /// This many requests.
    Requests(u64),
    /// This long.
    Time(Duration),
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Style {
    /// A bar, only on a terminal.
    Bar(Extent),
    /// ab's lines: "Completed N requests" every `every` requests, then
    /// "Finished N requests".
    AbHeartbeat {
        /// Requests between lines.
        every: u64,
    },
}

/// Running progress; stops (and erases a bar) when dropped.
#[derive(Debug)]
pub struct Progress {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress (a bar only if stderr is a terminal).
    pub fn start(counters: Arc<ProgressCounters>, style: Style) -> Progress {
        if matches!(style, Style::Bar(_)) && !std::io::stderr().is_terminal() {
            return Progress {
                stop: None,
                thread: None,
            };
        }
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tern-bench-progress".into())
            .spawn(move || match style {
                Style::Bar(extent) => draw_loop(&counters, extent, &rx),
                Style::AbHeartbeat { every } => heartbeat_loop(&counters, every, &rx),
            })
            .ok();
        Progress {
            stop: Some(tx),
            thread,
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn draw_loop(counters: &ProgressCounters, extent: Extent, stop: &mpsc::Receiver<()>) {
    let started = Instant::now();
    let mut err = std::io::stderr();
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(Duration::from_millis(250)) {
        let line = render_line(
            counters.done.load(Ordering::Relaxed),
            counters.errors.load(Ordering::Relaxed),
            started.elapsed(),
            extent,
        );
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
    }
    let _ = write!(err, "\r\x1b[K");
    let _ = err.flush();
}

fn heartbeat_loop(counters: &ProgressCounters, every: u64, stop: &mpsc::Receiver<()>) {
    let every = every.max(1);
    let mut printed = 0;
    let mut err = std::io::stderr();
    loop {
        let finished = !matches!(
            stop.recv_timeout(Duration::from_millis(50)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        let done = counters.done.load(Ordering::Relaxed);
        while printed + every <= done {
            printed += every;
            let _ = writeln!(err, "Completed {printed} requests");
        }
        if finished {
            let _ = writeln!(err, "Finished {done} requests");
            return;
        }
    }
}

/// One progress line (without the carriage return).
pub fn render_line(done: u64, errors: u64, elapsed: Duration, extent: Extent) -> String {
    let fraction = match extent {
        Extent::Requests(n) if n > 0 => done as f64 / n as f64,
        Extent::Time(d) if !d.is_zero() => elapsed.as_secs_f64() / d.as_secs_f64(),
        _ => 0.0,
    }
    .clamp(0.0, 1.0);
    const WIDTH: usize = 30;
    let filled = (fraction * WIDTH as f64).round() as usize;
    let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
    format!(
        "[{}{}] {:3.0}%  {done} requests  {rate:.0} req/s  {errors} errors",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        fraction * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_fraction_rate_and_errors() {
        let line = render_line(500, 3, Duration::from_secs(1), Extent::Requests(1000));
        assert_eq!(
            line,
            format!(
                "[{}{}]  50%  500 requests  500 req/s  3 errors",
                "#".repeat(15),
                ".".repeat(15)
            )
        );
        let line = render_line(
            10,
            0,
            Duration::from_secs(20),
            Extent::Time(Duration::from_secs(10)),
        );
        assert!(
            line.starts_with(&format!("[{}] 100%", "#".repeat(30))),
            "{line}"
        );
    }
}
