//! Server CPU accounting: a process tree over the measured window.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use rustix::process::{kill_process_group, Pid, Signal};
use tern_bench::cpu::CpuSource;
use tern_bench::{Plan, Reuse, RunControl, Stop, Target};

use crate::closed;
use crate::server::TestServer;

#[test]
fn a_process_tree_counts_its_children() {
    // A shell whose child burns CPU: the tree sees it, the shell alone does not.
    let mut sh = Command::new("sh")
        .args(["-c", "yes > /dev/null & sleep 3; kill $!"])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = sh.id();
    let (tree, alone) = (CpuSource::Tree(pid), CpuSource::Process(pid));
    let (t0, a0) = (tree.read().unwrap(), alone.read().unwrap());
    std::thread::sleep(Duration::from_millis(400));
    let (t1, a1) = (tree.read().unwrap(), alone.read().unwrap());
    // The shell leads its own group: stop it and its child together.
    let _ = kill_process_group(Pid::from_raw(pid as i32).unwrap(), Signal::KILL);
    let _ = sh.wait();
    assert!(t1 - t0 >= Duration::from_millis(100), "tree: {:?}", t1 - t0);
    assert!(
        a1 - a0 < Duration::from_millis(50),
        "shell alone: {:?}",
        a1 - a0
    );
}

#[test]
fn server_cpu_covers_the_measured_window() {
    // tern-bench measuring its own process tree: the test server's threads
    // live in this process, so the figure cannot be zero after real work.
    let server = TestServer::start();
    let mut settings = closed(4, 3000);
    settings.reuse = Reuse::KeepAlive;
    let plan = Plan::new(
        vec![Target::parse(&server.url("/size/4096")).unwrap()],
        settings,
    )
    .unwrap();
    let control = RunControl {
        server_cpu: Some(CpuSource::Tree(std::process::id())),
        ..RunControl::default()
    };
    let r = tern_bench::run(&plan, &control).unwrap();
    let cpu = r.server_cpu.expect("measured");
    assert!(cpu.seconds > 0.0, "{cpu:?}");
    assert!((cpu.us_per_request - cpu.seconds * 1e6 / 3000.0).abs() < 1e-6);
    assert!(cpu.source.contains(&std::process::id().to_string()));
    assert!(r.client_cpu.is_some());
}

#[test]
fn a_server_that_vanishes_leaves_a_note() {
    let server = TestServer::start();
    let mut child = Command::new("sleep").arg("0.2").spawn().unwrap();
    let pid = child.id();
    let reaper = std::thread::spawn(move || child.wait());
    let mut settings = closed(1, 1);
    settings.stop = Stop::Duration(Duration::from_millis(600));
    let plan = Plan::new(vec![Target::parse(&server.url("/")).unwrap()], settings).unwrap();
    let control = RunControl {
        server_cpu: Some(CpuSource::Tree(pid)),
        ..RunControl::default()
    };
    let r = tern_bench::run(&plan, &control).unwrap();
    reaper.join().unwrap().unwrap();
    assert!(r.server_cpu.is_none());
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("server CPU not measured")),
        "{:?}",
        r.notes
    );
    assert!(r.counts.responses > 0);
}
