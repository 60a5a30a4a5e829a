//! The raw spawn+wait rate of a program on this machine: the ceiling for
//! CGI, which pays one spawn per request. It starts the program the way
//! the CGI handler does (`posix_spawn` through `std::process::Command`: a
//! cleared environment of CGI size, its own process group, a working
//! directory, stdout and stderr piped), reads its stdout to the end and
//! reaps it, over and over, from THREADS threads at once, for SECONDS.
//!
//! ```sh
//! printf '#include <stdio.h>\nint main(void) { fputs("Content-Type: text/plain\\n\\nHello!\\n", stdout); return 0; }\n' >/tmp/hello.c
//! cc -O2 -o /tmp/hello-c.cgi /tmp/hello.c
//! cargo run --release -p tern-gateway --example spawn_rate -- /tmp/hello-c.cgi 5 1
//! cargo run --release -p tern-gateway --example spawn_rate -- /tmp/hello-c.cgi 5 2
//! ```
//!
//! Compare with `wrk -t1 -c10 -d5s http://127.0.0.1:PORT/cgi-bin/hello-c.cgi`
//! against tern serving the same program.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(program) = args.next().map(PathBuf::from) else {
        eprintln!("usage: spawn_rate PROGRAM [SECONDS] [THREADS]");
        std::process::exit(2);
    };
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let cwd = program
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    // About as many variables as a CGI request carries.
    let env: Vec<(String, String)> = (0..28)
        .map(|i| (format!("CGI_VARIABLE_{i}"), format!("value number {i}")))
        .chain([("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())])
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (program, cwd, env) = (program.clone(), cwd.clone(), env.clone());
            let (stop, done, failed) = (stop.clone(), done.clone(), failed.clone());
            std::thread::spawn(move || {
                let mut out = Vec::with_capacity(4096);
                while !stop.load(Ordering::Relaxed) {
                    let child = Command::new(&program)
                        .env_clear()
                        .envs(env.iter().map(|(k, v)| (k, v)))
                        .current_dir(&cwd)
                        .process_group(0)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn();
                    let ok = child.is_ok_and(|mut c| {
                        out.clear();
                        let read = c
                            .stdout
                            .take()
                            .is_some_and(|mut s| s.read_to_end(&mut out).is_ok());
                        read && c.wait().is_ok_and(|s| s.success())
                    });
                    let counter = if ok { &done } else { &failed };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed);
    println!(
        "{}: {n} spawns in {elapsed:.2} s with {threads} thread(s): {:.0} spawn+wait/s ({} failed)",
        program.display(),
        n as f64 / elapsed,
        failed.load(Ordering::Relaxed)
    );
}
