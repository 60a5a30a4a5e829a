//! The process helpers on their own: descriptors, environment, exit
//! detection, stopping a group, the parent-death signal, and a worker
//! accepting on a listening socket passed as fd 0.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use tern_pool::process::{self, Command, Input, Output, SocketDir, Stdio3, Worker};

use crate::factories::sh;
use crate::{eventually, reaped, running, within};

fn with_pipes(cmd: &Command) -> (Worker, std::fs::File, std::fs::File) {
    let mut worker = process::spawn(cmd, Stdio3::pipes(Output::Inherit)).unwrap();
    let stdin = std::fs::File::from(worker.take_stdin().unwrap());
    let stdout = std::fs::File::from(worker.take_stdout().unwrap());
    (worker, stdin, stdout)
}

fn read_line(from: &mut std::fs::File) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while from.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    String::from_utf8(line).unwrap()
}

#[tokio::test]
async fn a_worker_talks_over_its_pipes_with_only_the_given_environment() {
    let cmd = sh(r#"echo "$GREETING/${HOME:-nohome}"; while read line; do echo "got $line"; done"#)
        .env("GREETING", "hello");
    let (worker, mut stdin, mut stdout) = with_pipes(&cmd);
    assert_eq!(read_line(&mut stdout), "hello/nohome");
    stdin.write_all(b"one\n").unwrap();
    assert_eq!(read_line(&mut stdout), "got one");
    drop(stdin);
    let pid = worker.pid();
    let end = within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
    assert!(!end.forced);
    assert!(reaped(pid));
}

#[tokio::test]
async fn a_worker_leads_its_own_process_group() {
    let (worker, _stdin, mut stdout) =
        with_pipes(&sh("echo $$; ps -o pgid= -p $$; exec sleep 1000"));
    let pid = read_line(&mut stdout);
    let pgid = read_line(&mut stdout);
    assert_eq!(pid, worker.pid().to_string());
    assert_eq!(pgid.trim(), pid);
    within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
}

#[tokio::test]
async fn an_inherited_descriptor_without_close_on_exec_does_not_reach_the_worker() {
    // A descriptor as a careless parent would leave it: no close-on-exec.
    let (leaky, _other) = UnixStream::pair().unwrap();
    let fd = rustix::io::dup(&leaky).unwrap();
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty()).unwrap();
    let n = fd.as_raw_fd();
    let (worker, _stdin, mut stdout) = with_pipes(&sh(&format!(
        "if [ -e /proc/$$/fd/{n} ]; then echo leaked; else echo sealed; fi; exec sleep 1000"
    )));
    assert_eq!(read_line(&mut stdout), "sealed");
    within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
}

#[tokio::test]
async fn exited_sees_an_exit_without_reaping_it() {
    let mut worker = process::spawn(
        &sh("exit 3"),
        Stdio3 {
            stdin: Input::Null,
            stdout: Output::Null,
            stderr: Output::Inherit,
        },
    )
    .unwrap();
    let pid = worker.pid();
    eventually("exited", || process::exited(&mut worker).is_some()).await;
    assert_eq!(process::exited(&mut worker).unwrap().code(), Some(3));
    assert!(!reaped(pid), "a zombie until terminate reaps it");
    let end = within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
    assert_eq!(end.status.code(), Some(3));
    assert!(!end.forced);
    assert!(reaped(pid));
}

#[tokio::test]
async fn terminate_stops_a_cooperative_worker_with_sigterm() {
    let (worker, _stdin, mut stdout) = with_pipes(&sh("echo ready; exec sleep 1000"));
    assert_eq!(read_line(&mut stdout), "ready");
    let pid = worker.pid();
    let end = within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
    assert_eq!(end.status.signal(), Some(libc::SIGTERM));
    assert!(!end.forced);
    assert!(reaped(pid));
}

#[tokio::test]
async fn terminate_kills_a_worker_that_ignores_sigterm_after_the_grace() {
    let (worker, _stdin, mut stdout) = with_pipes(&sh("trap '' TERM; echo ready; exec sleep 1000"));
    assert_eq!(read_line(&mut stdout), "ready");
    let pid = worker.pid();
    let end = within(
        "terminate",
        process::terminate(worker, Duration::from_millis(200)),
    )
    .await;
    assert_eq!(end.status.signal(), Some(libc::SIGKILL));
    assert!(end.forced);
    assert!(reaped(pid));
}

#[tokio::test]
async fn terminate_stops_what_the_worker_left_in_its_group() {
    // The shell starts a background sleep, prints its pid, and waits.
    let (worker, _stdin, mut stdout) = with_pipes(&sh("sleep 1000 & echo $!; wait"));
    let child: u32 = read_line(&mut stdout).parse().unwrap();
    assert!(running(child));
    within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
    // Not ours to reap (the shell's child, now re-parented): it must die.
    eventually("the group's straggler killed", || !running(child)).await;
}

#[tokio::test]
async fn a_dropped_worker_is_killed_and_reaped() {
    let (worker, _stdin, mut stdout) = with_pipes(&sh("echo ready; exec sleep 1000"));
    assert_eq!(read_line(&mut stdout), "ready");
    let pid = worker.pid();
    drop(worker);
    eventually("reaped", || reaped(pid)).await;
}

#[tokio::test]
async fn a_worker_dies_when_the_thread_that_spawned_it_ends() {
    let worker = std::thread::spawn(|| {
        let (worker, stdin, mut stdout) = with_pipes(&sh("echo ready; exec sleep 1000"));
        assert_eq!(read_line(&mut stdout), "ready");
        (worker, stdin)
    })
    .join()
    .unwrap();
    let (mut worker, _stdin) = worker;
    eventually("killed by the parent-death signal", || {
        process::exited(&mut worker).is_some()
    })
    .await;
    assert_eq!(
        process::exited(&mut worker).unwrap().signal(),
        Some(libc::SIGKILL)
    );
    within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
}

#[tokio::test]
async fn a_worker_accepts_on_the_listening_socket_passed_as_fd_0() {
    let dir = SocketDir::new("it").unwrap();
    let (listener, path) = dir.bind(0).unwrap();
    let script = "import socket\n\
                  s = socket.socket(fileno=0)\n\
                  c, _ = s.accept()\n\
                  c.sendall(c.recv(16).upper())\n";
    let cmd = Command::new("/usr/bin/env", "/")
        .args(["python3", "-c", script])
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let worker = process::spawn(&cmd, Stdio3::fastcgi(OwnedFd::from(listener))).unwrap();
    let mut conn = UnixStream::connect(&path).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(b"hello").unwrap();
    let mut got = [0u8; 5];
    conn.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"HELLO");
    within(
        "terminate",
        process::terminate(worker, Duration::from_secs(5)),
    )
    .await;
}
