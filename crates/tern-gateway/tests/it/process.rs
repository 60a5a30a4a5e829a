//! The script as a process: its group stopped on timeout and when the
//! client leaves, slots and the queue, descriptors, working directory,
//! stderr, and reaping.

use super::*;

/// A script that records its pid and the pid of a child it starts, then
/// waits forever without a word of output.
fn hang(site: &Site, name: &str) -> (PathBuf, PathBuf) {
    let pid = site.path(&format!("{name}.pid"));
    let kid = site.path(&format!("{name}.kid"));
    site.script(
        name,
        &format!(
            "#!/bin/sh\nsleep 300 &\necho $! > {kid}.tmp && mv {kid}.tmp {kid}\necho $$ > {pid}.tmp && mv {pid}.tmp {pid}\nwait\n",
            pid = pid.display(),
            kid = kid.display()
        ),
    );
    (pid, kid)
}

#[tokio::test]
async fn a_silent_script_times_out_with_504_and_its_group_is_stopped() {
    let mut site = Site::new();
    site.cfg.policy.timeout = Duration::from_millis(500);
    let (pid_file, kid_file) = hang(&site, "hang.cgi");
    let h = site.handler();
    let started = Instant::now();
    let r = call(&h, Req::get("/cgi-bin/hang.cgi")).await;
    assert_eq!(r.status, 504);
    assert!(started.elapsed() >= Duration::from_millis(500));
    let (pid, kid) = (read_pid(&pid_file).await, read_pid(&kid_file).await);
    eventually("the script and its child to be stopped", || {
        is_dead(pid) && is_dead(kid)
    })
    .await;
}

#[tokio::test]
async fn a_script_that_ignores_sigterm_gets_sigkill() {
    let mut site = Site::new();
    site.cfg.policy.timeout = Duration::from_millis(300);
    let pid_file = site.path("stubborn.pid");
    site.script(
        "stubborn.cgi",
        &format!(
            "#!/bin/sh\ntrap '' TERM\necho $$ > {p}.tmp && mv {p}.tmp {p}\nwhile :; do sleep 0.05; done\n",
            p = pid_file.display()
        ),
    );
    let r = call(&site.handler(), Req::get("/cgi-bin/stubborn.cgi")).await;
    assert_eq!(r.status, 504);
    let pid = read_pid(&pid_file).await;
    eventually("SIGKILL after the grace period", || is_dead(pid)).await;
}

#[tokio::test]
async fn a_client_that_leaves_stops_the_script() {
    let site = Site::new();
    let (pid_file, kid_file) = hang(&site, "wait.cgi");
    let h = site.handler();
    let pending = tokio::spawn({
        let h = h.clone();
        async move { h.call(Req::get("/cgi-bin/wait.cgi").exchange()).await }
    });
    let (pid, kid) = (read_pid(&pid_file).await, read_pid(&kid_file).await);
    assert!(!is_dead(pid));
    // The server drops the handler's future when the connection closes.
    pending.abort();
    eventually("the script and its child to be stopped", || {
        is_dead(pid) && is_dead(kid)
    })
    .await;
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_stops_the_script() {
    let site = Site::new();
    let pid_file = site.path("stream.pid");
    site.script(
        "stream.cgi",
        &format!(
            "#!/bin/sh\necho $$ > {p}.tmp && mv {p}.tmp {p}\nprintf 'Content-Type: text/plain\\n\\n'\nwhile :; do echo tick; sleep 0.05; done\n",
            p = pid_file.display()
        ),
    );
    let resp = site
        .handler()
        .call(Req::get("/cgi-bin/stream.cgi").exchange())
        .await;
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(first.is_data());
    let pid = read_pid(&pid_file).await;
    drop(body);
    eventually("the streaming script to be stopped", || is_dead(pid)).await;
}

/// A script that prints its whole answer with a Content-Length and leaves
/// a child holding its stdout is answered at that length, at once, as
/// Apache and lighttpd answer it: whole while settling, and streamed with
/// the length as its size when it writes slowly. (Without the length, the
/// answer would end only with the output: at the child's end, or the
/// route's timeout.) Output that ends short of its length once streamed is
/// cut off. The script's child, started on purpose, keeps running past the
/// route's timeout: the answer is over, not silent.
#[tokio::test]
async fn a_script_whose_child_holds_its_output_is_answered_at_the_length_it_gave() {
    let mut site = Site::new();
    site.cfg.policy.timeout = Duration::from_secs(1);
    let kid = site.path("kid");
    let leaves_a_child = format!(
        "sleep 300 &\necho $! > {k}.tmp && mv {k}.tmp {k}\n",
        k = kid.display()
    );
    site.script(
        "whole.cgi",
        &format!("#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 6\\r\\n\\r\\nHello!'\n{leaves_a_child}"),
    );
    site.script(
        "slow.cgi",
        &format!("#!/bin/sh\nprintf 'Content-Type: text/plain\\nContent-Length: 200000\\n\\n'\nhead -c 100000 /dev/zero\nsleep 0.2\nhead -c 100005 /dev/zero\n{leaves_a_child}"),
    );
    site.script(
        "short.cgi",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\nContent-Length: 100\\n\\nabc'\nsleep 0.2\n",
    );
    let h = site.handler();
    let mut children = Vec::new();
    for (name, len) in [("whole.cgi", 6), ("slow.cgi", 200_000), ("short.cgi", 100)] {
        let resp = h
            .call(Req::get(&format!("/cgi-bin/{name}")).exchange())
            .await;
        let hint = http_body::Body::size_hint(resp.body()).exact();
        assert_eq!(hint, Some(len as u64), "{name}");
        let body = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
            .await
            .unwrap_or_else(|_| panic!("{name}: no end within 10 s"));
        if name == "short.cgi" {
            assert!(
                body.is_err(),
                "{name}: an answer short of its length looked whole"
            );
            continue;
        }
        let body = body.unwrap_or_else(|e| panic!("{name}: {e}")).to_bytes();
        assert_eq!(body.len(), len, "{name}");
        children.push((name, read_pid(&kid).await));
        std::fs::remove_file(&kid).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for (name, child) in children {
        let alive = !is_dead(child);
        let _ = Command::new("kill").arg(child.to_string()).status();
        assert!(alive, "{name}: the child it started was stopped");
    }
}

#[tokio::test]
async fn slots_queue_and_503() {
    let mut site = Site::new();
    site.cfg.admission.max_concurrent = 1;
    site.cfg.admission.queue = 1;
    let gate = site.path("gate");
    site.script(
        "gated.cgi",
        &format!(
            "#!/bin/sh\nwhile [ ! -e {g} ]; do sleep 0.02; done\nprintf 'Content-Type: text/plain\\n\\n%s' \"$QUERY_STRING\"\n",
            g = gate.display()
        ),
    );
    let h = site.handler();
    let running = tokio::spawn({
        let h = h.clone();
        async move { call(&h, Req::get("/cgi-bin/gated.cgi?first")).await }
    });
    // Wait until the first has its slot (its script is running).
    eventually("the first script to start", || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("cmdline"))
                .is_ok_and(|c| c.contains(&*site.path("cgi-bin/gated.cgi").to_string_lossy()))
        })
    })
    .await;
    let queued = tokio::spawn({
        let h = h.clone();
        async move { call(&h, Req::get("/cgi-bin/gated.cgi?second")).await }
    });
    // The queue holds one: a third is refused at once, with Retry-After.
    let mut third = None;
    eventually("the queue to fill", || {
        let r = futures_now(call(&h, Req::get("/cgi-bin/gated.cgi?third")));
        let full = r.as_ref().is_some_and(|r| r.status == 503);
        third = r;
        full
    })
    .await;
    assert_eq!(third.unwrap().header("retry-after"), Some("1"));
    std::fs::write(&gate, "").unwrap();
    assert_eq!(running.await.unwrap().text(), "first");
    assert_eq!(queued.await.unwrap().text(), "second");
}

/// Polls `f` once: its output if it is ready at once.
fn futures_now<F: std::future::Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

#[tokio::test]
async fn a_queued_request_times_out_with_503() {
    let mut site = Site::new();
    site.cfg.admission.max_concurrent = 1;
    site.cfg.admission.queue_timeout = Duration::from_millis(200);
    site.cfg.policy.timeout = Duration::from_millis(1500);
    let (pid_file, _) = hang(&site, "slow.cgi");
    let h = site.handler();
    let first = tokio::spawn({
        let h = h.clone();
        async move { call(&h, Req::get("/cgi-bin/slow.cgi")).await }
    });
    read_pid(&pid_file).await;
    assert_eq!(call(&h, Req::get("/cgi-bin/slow.cgi")).await.status, 503);
    assert_eq!(first.await.unwrap().status, 504);
}

#[tokio::test]
async fn the_script_inherits_only_stdio_and_runs_in_its_directory() {
    let site = Site::new();
    site.script(
        "fds.cgi",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\npwd\nexec ls -l /proc/self/fd\n",
    );
    let r = call(&site.handler(), Req::get("/cgi-bin/fds.cgi")).await;
    let text = r.text();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(&*site.path("cgi-bin").to_string_lossy()),
        "cwd is the script's directory"
    );
    // `ls` itself holds one descriptor on the directory it lists.
    let fds: Vec<&str> = lines
        .filter(|l| l.contains(" -> "))
        .filter(|l| !l.contains("/proc/"))
        .map(|l| l.split(" -> ").next().unwrap().rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(fds, ["0", "1", "2"], "{text}");
}

#[tokio::test]
async fn a_stderr_flood_is_bounded_and_the_reply_still_served() {
    let mut site = Site::new();
    site.cfg.policy.max_stderr_bytes = 1000;
    site.script(
        "noisy.cgi",
        "#!/bin/sh\nhead -c 5000000 /dev/zero | tr '\\0' 'e' >&2\nprintf 'Content-Type: text/plain\\n\\nstill here'\n",
    );
    let r = call(&site.handler(), Req::get("/cgi-bin/noisy.cgi")).await;
    assert_eq!((r.status, r.text().as_str()), (200, "still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_leaves_no_zombie_and_no_descriptor_behind() {
    let mut site = Site::new();
    site.cfg.admission.queue = 1000;
    site.script(
        "ok.cgi",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok'\n",
    );
    site.script("bad.cgi", "#!/bin/sh\necho nope\n");
    let h = site.handler();
    let fds_before = open_fds();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let h = h.clone();
        let path = if i % 5 == 0 {
            "/cgi-bin/bad.cgi"
        } else {
            "/cgi-bin/ok.cgi"
        };
        tasks.push(tokio::spawn(async move {
            call(&h, Req::get(path)).await.status
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let want = if i % 5 == 0 { 502 } else { 200 };
        assert_eq!(t.await.unwrap(), want, "request {i}");
    }
    let me = std::process::id();
    eventually("every script to be reaped", || zombies_of(me).is_empty()).await;
    eventually("descriptors back to where they were", || {
        open_fds() <= fds_before
    })
    .await;
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Children of `parent` in state Z.
pub(crate) fn zombies_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let mut rest = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let state = rest.next();
        let ppid = rest.next().and_then(|p| p.parse::<u32>().ok());
        if state == Some("Z") && ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// A script that writes 4 MB, under `timeout` and `send_timeout`, to a
/// client that takes nothing for `pause` and then reads all it can: the
/// body, or how it ended.
async fn big_answer_held_for(
    timeout: Duration,
    send_timeout: Duration,
    pause: Duration,
) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>> {
    let mut site = Site::new();
    site.cfg.policy.timeout = timeout;
    site.cfg.policy.send_timeout = send_timeout;
    site.script(
        "big.cgi",
        "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\nhead -c 4000000 /dev/zero\n",
    );
    let resp = site
        .handler()
        .call(Req::get("/cgi-bin/big.cgi").exchange())
        .await;
    assert_eq!(resp.status(), 200);
    tokio::time::sleep(pause).await;
    resp.into_body().collect().await.map(|b| b.to_bytes())
}

#[tokio::test]
async fn a_slow_client_does_not_make_a_busy_script_look_silent() {
    // The timeout long enough that a loaded machine does not starve the
    // script that long. The client reads nothing for three times as long:
    // the script blocks on its full pipe, held back by the client, not
    // silent by itself.
    let body = big_answer_held_for(
        Duration::from_millis(2000),
        Duration::from_secs(60),
        Duration::from_millis(6000),
    )
    .await
    .expect("the whole body");
    assert_eq!(body.len(), 4_000_000);
}

/// A client that takes none of the output for `send_timeout` (an HTTP/2
/// stream whose window it keeps shut, which the socket's own timeout does
/// not see) stalls the script: it is stopped, and the answer ends broken,
/// never as if it were whole.
#[tokio::test]
async fn a_client_that_takes_nothing_for_the_send_timeout_stops_the_script() {
    // Nothing taken for longer than the send timeout and a look more.
    let got = big_answer_held_for(
        Duration::from_millis(500),
        Duration::from_millis(1500),
        Duration::from_millis(3000),
    )
    .await;
    let e = got.expect_err("the answer ended as if it were whole");
    assert!(e.to_string().contains("send_timeout"), "{e}");
}
