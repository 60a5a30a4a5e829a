//! Reports: the ab report against real ab output (golden samples captured
//! from ApacheBench 2.3 on this machine), the ab -e CSV, the JSON round trip.

use std::path::Path;

use tern_bench::report::ab::{self, AbFailures, AbFigures, AbRow};
use tern_bench::report::{csv, json, render, Format};
use tern_bench::Reuse;

use crate::server::TestServer;
use crate::{closed, run};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/it/fixtures")
            .join(name),
    )
    .unwrap()
}

fn row(min: u64, mean: u64, sd: f64, median: u64, max: u64) -> AbRow {
    AbRow {
        min,
        mean,
        sd,
        median,
        max,
    }
}

/// `ab -n 400 -c 20 -e ... http://127.0.0.1:18412/f64k.bin` against
/// `python3 -m http.server`; the µs figures are ones that print as ab printed.
#[test]
fn ab_report_matches_ab_line_for_line() {
    let f = AbFigures {
        server_software: "SimpleHTTP/0.6".into(),
        tls: None,
        hostname: "127.0.0.1".into(),
        port: 18412,
        path: "/f64k.bin".into(),
        document_length: 65536,
        concurrency: 20,
        // 400 / 0.256023 s = 1562.36 req/s, as ab printed.
        time_taken_us: 256_023,
        complete: 400,
        failed: AbFailures::default(),
        non_2xx: 0,
        keepalive: None,
        handshake: None,
        handshakes: None,
        total_transferred: 26_295_600,
        body_sent: None,
        html_transferred: 26_214_400,
        rows: Some([
            row(120, 230, 100.0, 210, 1010),
            row(1100, 3800, 900.0, 3900, 6600),
            row(900, 3300, 800.0, 3200, 6500),
            row(1319, 4000, 900.0, 4100, 7000),
        ]),
        percentiles: Some([3800, 4200, 4300, 4400, 5100, 5600, 6200, 6700, 7000]),
        heartbeat: true,
    };
    assert_eq!(ab::render(&f), fixture("ab-simplehttp-64k-c20.txt"));
}

/// `ab -k -n 300 -c 5 http://127.0.0.1:18411/missing` against nginx: the
/// Non-2xx and Keep-Alive lines.
#[test]
fn ab_report_matches_ab_with_keepalive_and_non_2xx() {
    let zero = row(10, 16, 10.0, 15, 90);
    let f = AbFigures {
        server_software: "nginx/1.22.1".into(),
        tls: None,
        hostname: "127.0.0.1".into(),
        port: 18411,
        path: "/missing".into(),
        document_length: 153,
        concurrency: 5,
        time_taken_us: 5_064,
        complete: 300,
        failed: AbFailures::default(),
        non_2xx: 300,
        keepalive: Some(300),
        handshake: None,
        handshakes: None,
        total_transferred: 92_400,
        body_sent: None,
        html_transferred: 45_900,
        rows: Some([zero; 4]),
        percentiles: Some([20, 20, 25, 30, 40, 50, 60, 70, 90]),
        heartbeat: true,
    };
    assert_eq!(ab::render(&f), fixture("ab-nginx-404-keepalive.txt"));
}

/// `ab -q -n 1000 -c 1` against nginx: no progress, so "(be patient).....done".
#[test]
fn ab_report_matches_ab_without_heartbeat() {
    let f = AbFigures {
        server_software: "nginx/1.22.1".into(),
        tls: None,
        hostname: "127.0.0.1".into(),
        port: 18411,
        path: "/empty.html".into(),
        document_length: 0,
        concurrency: 1,
        time_taken_us: 89_152,
        complete: 1000,
        failed: AbFailures::default(),
        non_2xx: 0,
        keepalive: None,
        handshake: None,
        handshakes: None,
        total_transferred: 229_000,
        body_sent: None,
        html_transferred: 0,
        rows: Some([
            row(20, 30, 10.0, 30, 400),
            row(40, 50, 40.0, 50, 1200),
            row(30, 40, 40.0, 40, 1100),
            row(48, 80, 45.0, 70, 1491),
        ]),
        percentiles: Some([70, 80, 90, 95, 100, 110, 130, 151, 1491]),
        heartbeat: false,
    };
    assert_eq!(ab::render(&f), fixture("ab-nginx-empty-c1.txt"));
}

/// The lines of a report with the figures taken out. ab's "median and
/// mean ... deviation" warnings depend on the figures, so they go too (their
/// text is checked in the unit tests of the ab module).
fn shape(text: &str) -> String {
    let warning = |l: &str| {
        [
            "WARNING: ",
            "ERROR: ",
            "        These results",
            "       deviation apart",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    };
    text.lines()
        .filter(|l| !warning(l))
        .map(|l| {
            // Values that name the server and the file, not the format.
            let l = ["Server Software:", "Document Path:"]
                .into_iter()
                .find(|p| l.starts_with(p))
                .unwrap_or(l);
            // The label keeps its padding. After the first figure ab pads
            // each column to the width of its figure, so there a run of
            // spaces is one space and a run of digits one '#'.
            let first = l.find(|c: char| c.is_ascii_digit()).unwrap_or(l.len());
            let (label, figures) = l.split_at(first);
            let mut shaped = label.replace('.', "#");
            let mut last = None;
            for c in figures.chars() {
                let class = if c.is_ascii_digit() || c == '.' {
                    '#'
                } else if c.is_whitespace() {
                    ' '
                } else {
                    c
                };
                if (class == '#' || class == ' ') && last == Some(class) {
                    continue;
                }
                shaped.push(class);
                last = Some(class);
            }
            shaped
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn ab_report_of_a_real_run_has_the_shape_of_abs() {
    let server = TestServer::start();
    let r = run(&[server.url("/size/65536")], closed(20, 400));
    let ours = render(&r, Format::Ab);
    assert_eq!(
        shape(&ours),
        shape(&fixture("ab-simplehttp-64k-c20.txt")),
        "{ours}"
    );
    assert!(ours.contains("Complete requests:      400\n"));
    assert!(ours.contains("HTML transferred:       26214400 bytes\n"));

    let mut settings = closed(5, 300);
    settings.reuse = Reuse::KeepAlive;
    let ours = render(&run(&[server.url("/404")], settings), Format::Ab);
    assert_eq!(
        shape(&ours),
        shape(&fixture("ab-nginx-404-keepalive.txt")),
        "{ours}"
    );
    assert!(ours.contains("Keep-Alive requests:    300\n"));
}

/// The CSV of `ab -q -n 1000 -c 1 -e` against nginx, rebuilt from the same
/// numbers: the 101 times it printed, as 1000 samples placed at the indexes
/// ab reads them from.
#[test]
fn csv_matches_ab_e() {
    let golden = fixture("ab-nginx-empty-c1.csv");
    let times: Vec<u64> = golden
        .lines()
        .skip(1)
        .map(|l| {
            let ms: f64 = l.split(',').nth(1).unwrap().parse().unwrap();
            (ms * 1000.0).round() as u64
        })
        .collect();
    assert_eq!(times.len(), 101);
    let n = 1000u64;
    let index = |i: u64| match i {
        0 => 0,
        100 => n - 1,
        _ => (0.5 + n as f64 * i as f64 / 100.0) as u64,
    };
    let server = TestServer::start();
    let mut r = run(&[server.url("/")], closed(1, 1));
    r.histograms.latency.reset();
    for k in 0..n {
        let i = (0..=100).rev().find(|&i| index(i) <= k).unwrap();
        r.histograms.latency.record(times[i as usize]).unwrap();
    }
    assert_eq!(csv::render(&r), golden);
}

#[test]
fn json_round_trips_exactly() {
    let server = TestServer::start();
    let urls = [server.url("/a"), server.url("/404"), server.url("/reset")];
    let mut settings = closed(2, 90);
    settings.reuse = Reuse::KeepAlive;
    let r = run(&urls, settings);
    assert!(r.counts.errors.reset > 0 && r.counts.non_2xx() > 0);
    let text = json::render(&r);
    let back = json::parse(&text, Path::new("x.json")).unwrap();
    assert_eq!(back, r);
    assert_eq!(json::render(&back), text);

    let err = json::parse("{\"format\": \"other/9\"}", Path::new("y.json")).unwrap_err();
    assert!(err.to_string().contains("y.json"), "{err}");
    assert!(json::parse("not json", Path::new("z.json")).is_err());
}
