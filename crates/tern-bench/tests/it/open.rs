//! Open loop: the rate is kept whatever the server does, and a stalled
//! server shows in the corrected latency (no coordinated omission).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};
use tern_bench::histogram::Stats;
use tern_bench::{Arrival, Load, PlanSettings, Reuse, Stop};

use crate::run;
use crate::server::TestServer;

/// Tests that assert on timing run one at a time, so that they do not
/// disturb each other on a small machine.
pub(crate) static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open_loop(rate: f64, arrival: Arrival, connections: u32, duration: Duration) -> PlanSettings {
    PlanSettings {
        load: Load::Open {
            rate,
            arrival,
            connections,
        },
        stop: Stop::Duration(duration),
        reuse: Reuse::KeepAlive,
        timeout: Duration::from_secs(5),
        ..PlanSettings::default()
    }
}

#[test]
fn constant_rate_is_kept() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = TestServer::start();
    let r = run(
        &[server.url("/")],
        open_loop(400.0, Arrival::Constant, 8, Duration::from_secs(1)),
    );
    // Exactly rate x duration requests are due in the window.
    assert_eq!(r.counts.responses, 400);
    assert_eq!(r.counts.errors.total(), 0);
    // How many sends were late is the machine's doing (a loaded 2-core
    // box runs late), so it is reported, not asserted; that the schedule
    // is kept is what the span and the spread below show.
    let arrivals = server.stats.arrivals.lock().unwrap().clone();
    let first = *arrivals.iter().min().unwrap();
    let span = arrivals
        .iter()
        .max()
        .unwrap()
        .duration_since(first)
        .as_secs_f64();
    assert!(
        (0.9..1.3).contains(&span),
        "sent over {span} s, expected about 1 s"
    );
    // Spread evenly, not in bursts: each quarter second gets about 100.
    for q in 0..4 {
        let from = first + Duration::from_millis(250 * q);
        let to = from + Duration::from_millis(250);
        let n = arrivals.iter().filter(|&&t| t >= from && t < to).count();
        assert!((60..=140).contains(&n), "quarter {q}: {n} requests");
    }
}

#[test]
fn poisson_arrivals_average_the_rate() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = TestServer::start();
    let r = run(
        &[server.url("/")],
        open_loop(1000.0, Arrival::Poisson, 8, Duration::from_millis(800)),
    );
    let n = r.counts.responses as f64;
    assert!(
        (n - 800.0).abs() < 100.0,
        "{n} requests, expected about 800"
    );
    assert_eq!(r.counts.errors.total(), 0);
}

#[test]
fn a_backlog_times_out_instead_of_stretching_the_run() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = TestServer::start();
    let mut settings = open_loop(200.0, Arrival::Constant, 1, Duration::from_millis(500));
    settings.timeout = Duration::from_millis(100);
    let began = Instant::now();
    // One connection, every answer after 300 ms: most requests are due while
    // it is busy and reach their deadline soon after they are sent.
    let r = run(&[server.url("/slow/300")], settings);
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "a backlog must not stretch the run"
    );
    assert_eq!(r.counts.errors.timeout + r.counts.responses, 100);
    assert!(r.counts.errors.timeout >= 90, "{:?}", r.counts);
    assert!(server.stats.requests() <= 100);
}

/// A server in a child process that we can stop and continue.
pub(crate) struct PausableServer {
    child: Child,
    pub(crate) port: u16,
}

impl PausableServer {
    pub(crate) fn start() -> PausableServer {
        const SCRIPT: &str = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        # One write: a head and body written apart meet Nagle and delayed ACK.
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    def log_message(self, *args):
        pass
# A listen backlog for the connections that arrive during a pause (the
# default, 5, drops SYNs, and their retries add seconds).
http.server.ThreadingHTTPServer.request_queue_size = 128
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
        let python = ["/usr/bin/python3", "python3"]
            .into_iter()
            .find(|p| !p.starts_with('/') || std::path::Path::new(p).exists())
            .unwrap();
        let mut child = Command::new(python)
            .args(["-c", SCRIPT])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 runs the paused server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        PausableServer { child, port }
    }

    pub(crate) fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32).unwrap()
    }
}

impl Drop for PausableServer {
    fn drop(&mut self) {
        let _ = kill_process(self.pid(), Signal::CONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Gil Tene's ^Z test: pause the server for part of an open-loop run. The
/// corrected p99 must show the pause; the uncorrected one, measured from
/// when requests were actually sent, hides it (only the two requests in
/// flight at the pause waited; the backlog was sent after it).
#[test]
fn a_paused_server_shows_in_corrected_latency_only() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = PausableServer::start();
    let url = format!("http://127.0.0.1:{}/", server.port);
    let pid = server.pid();
    let pause = Duration::from_millis(600);
    let pauser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        kill_process(pid, Signal::STOP).unwrap();
        std::thread::sleep(pause);
        kill_process(pid, Signal::CONT).unwrap();
    });
    let mut settings = open_loop(300.0, Arrival::Constant, 2, Duration::from_secs(2));
    settings.windows.warmup = Duration::from_millis(100);
    let r = run(&[url], settings);
    pauser.join().unwrap();

    assert_eq!(
        (r.counts.responses, r.counts.errors.total()),
        (600, 0),
        "{:?}",
        r.counts.errors
    );
    let corrected = Stats::of(&r.histograms.latency);
    let uncorrected = Stats::of(&r.histograms.latency_uncorrected);
    let ms = |us: u64| us as f64 / 1000.0;
    let (c99, u99) = (
        ms(corrected.percentile(99.0)),
        ms(uncorrected.percentile(99.0)),
    );
    let cmax = ms(corrected.max());
    assert!(
        c99 >= 400.0,
        "corrected p99 {c99} ms must reflect the {pause:?} pause"
    );
    assert!(
        (500.0..1500.0).contains(&cmax),
        "corrected max {cmax} ms is about the pause"
    );
    assert!(u99 <= 150.0, "uncorrected p99 {u99} ms hides the pause");
    // Requests due during the pause are about 30 % of the run; their
    // corrected latencies spread from the pause down to zero.
    let p90 = ms(corrected.percentile(90.0));
    assert!(p90 >= 200.0, "corrected p90 {p90} ms");
}
