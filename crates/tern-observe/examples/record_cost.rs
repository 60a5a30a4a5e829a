//! What the observer costs a request, piece by piece, in a tight loop on
//! one thread: the per-request calls the log phase makes with the admin
//! on (`Metrics::begin` and `finish`, with and without the request
//! history), the live trace's admission check with a filter attached, and
//! the clock reads the log phase adds. A harness for the next change to
//! see a regression (docs/PERFORMANCE.md, "What watching costs"):
//!
//! ```sh
//! cargo run --release -p tern-observe --example record_cost
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tern_observe::metrics::{Finished, MethodLabel, Metrics, DEFAULT_TIME_BOUNDS};
use tern_observe::watch::{Filter, Watch};

const N: u32 = 5_000_000;

/// Nanoseconds per call of `f`, the best of three runs of `N`.
fn per_call(mut f: impl FnMut(u32)) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            for i in 0..N {
                f(i);
            }
            t.elapsed().as_nanos() as f64 / f64::from(N)
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let finished = |route, i: u32| Finished {
        id: u64::from(i),
        at: SystemTime::UNIX_EPOCH + Duration::from_secs(u64::from(i)),
        client: Some([127, 0, 0, 1].into()),
        target: "/0k.html",
        worker: None,
        queue_wait: None,
        route,
        method: MethodLabel::of("GET"),
        status: if i.is_multiple_of(50) { 404 } else { 200 },
        duration: Duration::from_micros(40),
        first_byte: Some(Duration::from_micros(30)),
        request_bytes: 0,
        response_bytes: 0,
    };

    for (name, recent) in [("metrics and a history of 1000", 1000), ("metrics only", 0)] {
        let m = Metrics::new(&DEFAULT_TIME_BOUNDS, recent);
        let route = m.route_label("default", "/", "static");
        let ns = per_call(|i| {
            m.begin();
            m.finish(black_box(&finished(route, i)));
        });
        println!("begin + finish, {name}: {ns:.1} ns");
    }
    let watch = Arc::new(Watch::default());
    println!(
        "watch.wants, no watcher: {:.1} ns",
        per_call(|_| {
            black_box(watch.wants(black_box("/0k.html"), None));
        })
    );
    let _w = watch
        .attach(Filter::parse(Some("/elsewhere/**"), None, None).unwrap())
        .unwrap();
    println!(
        "watch.wants, a watcher of another path: {:.1} ns",
        per_call(|_| {
            black_box(watch.wants(black_box("/0k.html"), None));
        })
    );
    println!(
        "wall_clock(Instant::now()): {:.1} ns",
        per_call(|_| {
            black_box(tern_observe::wall_clock(Instant::now()));
        })
    );
    println!(
        "Instant::now: {:.1} ns, SystemTime::now: {:.1} ns",
        per_call(|_| {
            black_box(Instant::now());
        }),
        per_call(|_| {
            black_box(SystemTime::now());
        })
    );
}
