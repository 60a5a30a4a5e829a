//! Log files as they come: rotated and gzipped, given in any order,
//! damaged lines, files that are no access log at all.

use std::io::Write as _;

use flate2::write::GzEncoder;
use tern_accesslog::LogFormat;
use tern_workload::{extract, Error, Options};

use crate::extract::write_log;
use crate::gen::{self, Precision};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Splits log text into `n` pieces at line ends.
fn split_lines(text: &[u8], n: usize) -> Vec<Vec<u8>> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let per = lines.len().div_ceil(n);
    lines.chunks(per).map(|c| c.concat()).collect()
}

#[test]
fn rotated_and_gzipped_files_in_any_order_read_as_one_log() {
    let truth = gen::generate(50, Precision::Seconds, 21);
    let text = gen::render_all(&truth.records, LogFormat::Combined);
    let dir = tempfile::tempdir().unwrap();
    let whole = write_log(dir.path(), "whole.log", &text);
    let parts = split_lines(&text, 3);
    // Oldest in .2.gz, then .1, then the current file; the gzipped one has
    // a name that does not say so, to show it is told by its bytes.
    let current = write_log(dir.path(), "access.log", &parts[2]);
    let old = write_log(dir.path(), "access.log.2", &gzip(&parts[0]));
    let older = write_log(dir.path(), "access.log.1.gz", &gzip(&parts[1]));
    let one = extract(&[whole], &Options::default()).unwrap();
    let many = extract(
        &[current.clone(), old.clone(), older.clone()],
        &Options::default(),
    )
    .unwrap();
    // Read oldest first.
    let order: Vec<_> = many.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(order, vec![old, older, current]);
    let mut m = many.model;
    assert_eq!(m.source.files.len(), 3);
    m.source.files = one.model.source.files.clone();
    assert_eq!(m, one.model);
    assert_eq!(m.summary.requests, truth.requests);
}

#[test]
fn malformed_lines_are_counted_and_named() {
    let truth = gen::generate(20, Precision::Millis, 5);
    let text = gen::render_all(&truth.records, LogFormat::Json);
    let mut lines: Vec<Vec<u8>> = text
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    // Lines 4, 11, 12 and 31 damaged; an empty line is not malformed.
    lines.insert(3, b"{\"time\": \"yesterday\"}\n".to_vec());
    lines.insert(10, b"garbage\n".to_vec());
    lines.insert(11, b"\xff\xfe not utf-8\n".to_vec());
    lines.insert(20, b"\n".to_vec());
    lines.insert(30, b"{\"truncated\n".to_vec());
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "damaged.json", &lines.concat());
    let x = extract(&[log], &Options::default()).unwrap();
    assert_eq!(x.model.source.malformed, 4);
    assert_eq!(x.model.source.lines, truth.requests + 4);
    assert_eq!(x.model.summary.requests, truth.requests);
    let named: Vec<String> = x.malformed.iter().map(ToString::to_string).collect();
    let at: Vec<u64> = x.malformed.iter().map(|m| m.line).collect();
    assert_eq!(at, vec![4, 11, 12, 31], "{named:?}");
    assert!(named[0].starts_with(&format!(
        "{}:4: ",
        dir.path().join("damaged.json").display()
    )));
    // The summary names them too.
    let summary = tern_workload::summary::render(&x.model, &x.malformed);
    assert!(summary.contains("damaged.json:11: "), "{summary}");
    assert!(summary.contains("4 malformed"), "{summary}");
}

#[test]
fn only_the_first_five_malformed_lines_are_named() {
    let truth = gen::generate(5, Precision::Seconds, 9);
    let mut text = gen::render_all(&truth.records, LogFormat::Common);
    for _ in 0..8 {
        text.extend_from_slice(b"not a log line\n");
    }
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "access.log", &text);
    let x = extract(&[log], &Options::default()).unwrap();
    assert_eq!(x.model.source.format, "common");
    assert_eq!((x.model.source.malformed, x.malformed.len()), (8, 5));
    let summary = tern_workload::summary::render(&x.model, &x.malformed);
    assert!(summary.contains("... and 3 more"), "{summary}");
}

#[test]
fn a_file_in_no_known_format_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let truth = gen::generate(5, Precision::Seconds, 1);
    let good = write_log(
        dir.path(),
        "access.log",
        &gen::render_all(&truth.records, LogFormat::Combined),
    );
    let csv = write_log(
        dir.path(),
        "export.csv",
        b"time,client,path,status\n2026-11-24T10:00:00Z,192.0.2.1,/,200\n",
    );
    let e = extract(&[good.clone(), csv.clone()], &Options::default()).unwrap_err();
    assert!(
        matches!(&e, Error::NotALog { path, .. } if *path == csv),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("export.csv")
            && msg.contains("not an access log in a known format (common, combined, json)"),
        "{msg}"
    );
    // A format given that the file is not in is named the same way.
    let options = Options {
        format: Some(LogFormat::Json),
        ..Options::default()
    };
    let msg = extract(&[good], &options).unwrap_err().to_string();
    assert!(
        msg.contains("access.log") && msg.contains("(json)"),
        "{msg}"
    );
}

#[test]
fn a_file_of_nothing_but_garbage_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut garbage = Vec::new();
    let mut rng = gen::Rng(99);
    for _ in 0..2000 {
        garbage.push((rng.next() % 256) as u8);
        if rng.next().is_multiple_of(40) {
            garbage.push(b'\n');
        }
    }
    let g = write_log(dir.path(), "garbage.bin", &garbage);
    let e = extract(&[g], &Options::default()).unwrap_err();
    assert!(e.to_string().contains("garbage.bin"), "{e}");
    // Nothing at all (empty files) is an error too, not an empty model.
    let empty = write_log(dir.path(), "empty.log", b"");
    let e = extract(&[empty], &Options::default()).unwrap_err();
    assert!(matches!(e, Error::NothingParsed { .. }), "{e:?}");
    // A file that cannot be opened is named.
    let e = extract(&[dir.path().join("missing.log")], &Options::default()).unwrap_err();
    assert!(e.to_string().contains("missing.log"), "{e}");
}

#[test]
fn far_off_timestamps_are_skipped_and_counted() {
    let truth = gen::generate(20, Precision::Seconds, 13);
    let text = String::from_utf8(gen::render_all(&truth.records, LogFormat::Combined)).unwrap();
    let year = |line: &str, y: &str| line.replacen("/2026:", &format!("/{y}:"), 1);
    let mut lines: Vec<String> = text.lines().map(|l| format!("{l}\n")).collect();
    let n = lines.len();
    let far_future = year(&lines[n / 2], "9999");
    let far_past = year(&lines[n / 3], "1971");
    lines.insert(n / 2, far_future);
    lines.insert(n / 3, far_past);
    let first_far = year(&lines[0], "2031");
    lines.insert(0, first_far);
    let dir = tempfile::tempdir().unwrap();
    let clean = write_log(dir.path(), "clean.log", text.as_bytes());
    let log = write_log(dir.path(), "access.log", lines.concat().as_bytes());
    let want = extract(&[clean], &Options::default()).unwrap().model;
    let x = extract(&[log], &Options::default()).unwrap();
    assert_eq!(x.out_of_range, 3);
    assert_eq!(x.model.summary.requests, truth.requests);
    assert_eq!(
        (&x.model.source.first, &x.model.source.last),
        (&want.source.first, &want.source.last)
    );
    assert_eq!(x.model.arrivals, want.arrivals);
    let summary = tern_workload::summary::render_extraction(&x);
    assert!(summary.contains("3 out of range"), "{summary}");
}

#[test]
fn overlong_lines_are_malformed_and_a_truncated_gzip_keeps_its_lines() {
    let truth = gen::generate(20, Precision::Seconds, 17);
    let text = gen::render_all(&truth.records, LogFormat::Combined);
    let mut lines: Vec<Vec<u8>> = text
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    // A 1 MiB line (no newline for a long way) at line 5.
    let mut long = vec![b'x'; 1 << 20];
    long.push(b'\n');
    lines.insert(4, long);
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "long.log", &lines.concat());
    let x = extract(&[log], &Options::default()).unwrap();
    assert_eq!(x.model.source.malformed, 1);
    assert_eq!(x.malformed[0].line, 5);
    assert!(
        x.malformed[0].error.contains("64 KiB"),
        "{}",
        x.malformed[0]
    );
    assert_eq!(x.model.summary.requests, truth.requests);

    // A gzip cut short: the lines before the cut are read, and a note
    // names the file.
    let whole = gzip(&text);
    let cut = write_log(dir.path(), "cut.log.gz", &whole[..whole.len() * 2 / 3]);
    let x = extract(std::slice::from_ref(&cut), &Options::default()).unwrap();
    assert!(x.model.summary.requests > truth.requests / 3);
    assert!(x.model.summary.requests < truth.requests);
    assert!(
        x.notes
            .iter()
            .any(|n| n.contains("cut.log.gz") && n.contains("truncated")),
        "{:?}",
        x.notes
    );
    let summary = tern_workload::summary::render_extraction(&x);
    assert!(summary.contains("cut.log.gz"), "{summary}");
}

#[test]
fn overlapping_logs_are_merged_by_time() {
    // Two servers' logs of the same hours, a user's requests landing on
    // either (no two at the same millisecond, so that the merged order is
    // the one order there is).
    let mut truth = gen::generate(40, Precision::Millis, 23);
    let mut prev = std::time::UNIX_EPOCH;
    for r in &mut truth.records {
        if r.time <= prev {
            r.time = prev + std::time::Duration::from_millis(1);
        }
        prev = r.time;
    }
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (i, r) in truth.records.iter().enumerate() {
        if i % 2 == 0 { &mut a } else { &mut b }.push(r.clone());
    }
    let dir = tempfile::tempdir().unwrap();
    let whole = write_log(
        dir.path(),
        "whole.json",
        &gen::render_all(&truth.records, LogFormat::Json),
    );
    let la = write_log(dir.path(), "a.json", &gen::render_all(&a, LogFormat::Json));
    let lb = write_log(
        dir.path(),
        "b.json.gz",
        &gzip(&gen::render_all(&b, LogFormat::Json)),
    );
    let one = extract(&[whole], &Options::default()).unwrap().model;
    let mut two = extract(&[lb, la], &Options::default()).unwrap().model;
    two.source.files = one.source.files.clone();
    assert_eq!(two, one);
}
