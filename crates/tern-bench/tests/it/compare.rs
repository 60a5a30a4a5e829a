//! `tern bench compare`: interleaved rounds, medians, ratios.

use std::time::Duration;

use tern_bench::compare::{compare, render, Contender};
use tern_bench::{Plan, Reuse, StopHandle, Target};

use crate::closed;
use crate::server::TestServer;

#[test]
fn servers_run_in_interleaved_rounds() {
    let (a, b) = (TestServer::start(), TestServer::start());
    let contenders = [
        Contender::parse(&format!("fast={}", a.url("/"))).unwrap(),
        Contender::parse(&format!(
            "slow={},pid={}",
            b.url("/slow/2"),
            std::process::id()
        ))
        .unwrap(),
    ];
    let mut settings = closed(2, 40);
    settings.reuse = Reuse::KeepAlive;
    settings.windows.warmup = Duration::from_millis(50);
    let plan = Plan::new(vec![Target::parse(&a.url("/")).unwrap()], settings).unwrap();
    let mut order = Vec::new();
    let c = compare(
        &plan,
        &contenders,
        3,
        &StopHandle::new(),
        |round, name, _| order.push(format!("{round}{name}")),
    )
    .unwrap();
    assert_eq!(
        order,
        ["1fast", "1slow", "2fast", "2slow", "3fast", "3slow"]
    );
    assert_eq!(c.rounds.len(), 3);
    for round in &c.rounds {
        assert_eq!(
            round.iter().map(|r| r.counts.responses).collect::<Vec<_>>(),
            [40, 40]
        );
        assert!(round[1].server_cpu.is_some() && round[0].server_cpu.is_none());
    }
    // Each server saw its measured requests plus each round's warm-up.
    let excluded: u64 = c.rounds.iter().map(|r| r[0].counts.excluded).sum();
    assert_eq!(a.stats.requests(), 120 + excluded);
    let text = render(&c);
    assert!(text.contains("| fast | "), "{text}");
    let fast_row = text.lines().find(|l| l.starts_with("| fast |")).unwrap();
    assert!(fast_row.ends_with("| 1.00 |"), "{fast_row}");
    let slow_row = text.lines().find(|l| l.starts_with("| slow |")).unwrap();
    let ratio: f64 = slow_row
        .trim_end_matches(" |")
        .rsplit("| ")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        ratio < 1.0,
        "a server that waits 2 ms per request is slower: {slow_row}"
    );
}

#[test]
fn a_stopped_comparison_keeps_what_finished() {
    let a = TestServer::start();
    let contenders = [Contender::parse(&format!("a={}", a.url("/"))).unwrap()];
    let plan = Plan::new(vec![Target::parse(&a.url("/")).unwrap()], closed(1, 10)).unwrap();
    let stop = StopHandle::new();
    let c = compare(&plan, &contenders, 5, &stop, |round, _, _| {
        if round == 2 {
            stop.stop();
        }
    })
    .unwrap();
    assert_eq!(c.rounds.len(), 2);
}
