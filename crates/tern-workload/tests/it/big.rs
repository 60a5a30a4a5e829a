//! A million-line log is read in bounded memory: the extractor holds only
//! the users active within the session gap, never all of them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::Write as _;

use tern_accesslog::{render, LogFormat};
use tern_workload::{extract, Options};

use crate::gen::{self, Rng, EPOCH, TEMPLATES};

/// Lines written.
const LINES: u64 = 1_000_000;
/// A new user every this many milliseconds.
const STAGGER_MS: u64 = 400;

#[test]
fn a_million_line_log_is_read_with_few_users_held_at_once() {
    let classes = gen::classes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut rng = Rng(2026);
    // Requests merged in time order across the users active at once; each
    // user's requests are made when the user starts.
    let mut heap: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut active: HashMap<u64, Vec<(u64, usize, usize)>> = HashMap::new();
    let (mut users, mut planned, mut written, mut sessions) = (0u64, 0u64, 0u64, 0u64);
    let mut line = Vec::new();
    loop {
        while planned < LINES
            && heap
                .peek()
                .is_none_or(|Reverse((t, _, _))| EPOCH * 1000 + users * STAGGER_MS <= *t)
        {
            let mut t = EPOCH * 1000 + users * STAGGER_MS;
            let mut pick = rng.unit();
            let template = TEMPLATES
                .iter()
                .find(|(_, w)| {
                    pick -= w;
                    pick < 0.0
                })
                .unwrap_or(&TEMPLATES[0])
                .0;
            let mut reqs = Vec::new();
            for (i, &class) in template.iter().enumerate() {
                if i > 0 {
                    t += rng.range(20_000, 120_000);
                }
                for j in 0..classes[class].len() {
                    if j > 0 {
                        t += rng.range(0, 2000);
                    }
                    reqs.push((t, class, j));
                }
            }
            planned += reqs.len() as u64;
            sessions += 1;
            heap.push(Reverse((reqs[0].0, users, 0)));
            active.insert(users, reqs);
            users += 1;
        }
        let Some(Reverse((_, u, i))) = heap.pop() else {
            break;
        };
        let reqs = &active[&u];
        let (t, class, j) = reqs[i];
        let (target, bytes) = &classes[class][j];
        let ip = format!("10.{}.{}.{}", u >> 16, (u >> 8) & 255, u & 255);
        line.clear();
        render(
            LogFormat::Combined,
            &gen::record(t, 0, ip, target, *bytes),
            &mut line,
        );
        out.write_all(&line).unwrap();
        written += 1;
        if i + 1 < reqs.len() {
            heap.push(Reverse((reqs[i + 1].0, u, i + 1)));
        } else {
            active.remove(&u);
        }
    }
    out.flush().unwrap();
    drop(out);
    assert!(written >= LINES);

    let started = std::time::Instant::now();
    let x = extract(&[path], &Options::default()).unwrap();
    eprintln!(
        "{written} lines, {users} users: extracted in {:?}, at most {} users held",
        started.elapsed(),
        x.peak_users
    );
    let s = &x.model.summary;
    assert_eq!(
        (s.requests, s.users, s.sessions),
        (written, users, sessions)
    );
    assert_eq!(x.model.pages.len(), classes.len());
    // A user is active for at most ~6 minutes of log time, then held at
    // most the session gap (5 min), a sweep interval and the reordering
    // window longer: about a thousand users of some 90,000.
    assert!(users > 50_000, "{users}");
    assert!(x.peak_users < 2_500, "{} users held at once", x.peak_users);
}
