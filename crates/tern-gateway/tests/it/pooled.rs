//! The persistent handlers driven directly with real processes: FastCGI
//! applications tern runs itself (the test application, php-cgi), servers
//! it connects to (php-fpm, fcgiwrap, nothing listening), CGIplus scripts
//! and the Perl and Python engines — each failure a worker can have, and
//! the pool replacing it while other requests keep succeeding.

use std::path::Path;

use tern_config::{
    CgiPlusConfig, CommandConfig, Engine, EnvPolicy, FastCgiApp, FastCgiConfig, FcgiAddress,
    GatewayPolicy, PoolSettings,
};
use tern_gateway::{CgiPlus, FastCgi};

use super::fastcgi_conn::{App, Group};
use super::idle_close::workers_in;
use super::*;

pub(crate) fn policy(timeout: Duration) -> GatewayPolicy {
    GatewayPolicy {
        timeout,
        env: EnvPolicy::default(),
        max_stderr_bytes: 4096,
        slow_request: None,
        send_timeout: tern_config::defaults::SEND_TIMEOUT,
    }
}

pub(crate) fn pool(min: usize, max: usize) -> PoolSettings {
    PoolSettings {
        min,
        max,
        queue: 100,
        queue_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        max_requests: 0,
        max_age: None,
    }
}

fn test_app() -> CommandConfig {
    CommandConfig {
        program: PathBuf::from(env!("CARGO_BIN_EXE_tern-fcgi-app")),
        args: Vec::new(),
        env: Vec::new(),
    }
}

fn spawned(site: &Site, app: CommandConfig, pool: PoolSettings, timeout: Duration) -> FastCgi {
    let cfg = FastCgiConfig {
        app: FastCgiApp::Spawn(app),
        dir: None,
        document_root: site.path("www"),
        pool,
        policy: policy(timeout),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    FastCgi::new(&cfg, "test").unwrap()
}

/// A FastCGI server at `addrs`, kept connections, a 10 s timeout.
fn connected_cfg(site: &Site, addrs: Vec<FcgiAddress>, pool: PoolSettings) -> FastCgiConfig {
    FastCgiConfig {
        app: FastCgiApp::Connect(addrs),
        dir: None,
        document_root: site.path("www"),
        pool,
        policy: policy(Duration::from_secs(10)),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    }
}

pub(crate) fn fcgi_get(target: &str) -> Req {
    let mut r = Req::get(target);
    r.pattern = "/app".into();
    r
}

async fn pid_of(h: &dyn Handler, target: &str) -> u32 {
    let r = call(h, fcgi_get(target)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a pid: {:?}", r.text()))
}

#[tokio::test]
async fn a_spawned_application_answers_and_keeps_its_process() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    let r = call(&h, fcgi_get("/app/hello")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "Hello!\n");
    let a = pid_of(&h, "/app/pid").await;
    let b = pid_of(&h, "/app/pid").await;
    assert_eq!(a, b, "one process serves request after request");
    let r = call(&h, fcgi_get("/app/x/64k")).await;
    assert_eq!(r.body.len(), 65536);
}

#[tokio::test]
async fn the_environment_names_the_route_and_the_rest_of_the_path() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    let r = call(&h, fcgi_get("/app/a/env?q=1")).await;
    let text = r.text();
    assert!(text.contains("SCRIPT_NAME=/app\n"), "{text}");
    assert!(text.contains("PATH_INFO=/a/env\n"), "{text}");
    assert!(text.contains("QUERY_STRING=q=1\n"), "{text}");
    assert!(text.contains("GATEWAY_INTERFACE=CGI/1.1\n"), "{text}");
}

#[tokio::test]
async fn a_posted_body_reaches_the_application_whole() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    for len in [0usize, 10, 100_000, 1_000_000] {
        let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut req = Req::post("/app/echo", body.clone());
        req.pattern = "/app".into();
        let r = call(&h, req).await;
        assert_eq!(r.status, 200, "{len}");
        assert_eq!(r.body, body, "{len} bytes back");
    }
}

#[tokio::test]
async fn a_crash_is_a_502_and_the_process_is_replaced() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    let before = pid_of(&h, "/app/pid").await;
    let r = call(&h, fcgi_get("/app/crash")).await;
    assert!(
        r.status == 502 || r.body.ends_with(b">"),
        "{} {}",
        r.status,
        r.text()
    );
    let after = pid_of(&h, "/app/pid").await;
    assert_ne!(before, after, "a new process");
    eventually("the crashed process to be reaped", || is_dead(before)).await;
}

/// The one pool report of `h`.
fn report_of(h: &dyn Handler) -> tern_handler::PoolReport {
    let mut out = Vec::new();
    h.report(&mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    out.pop().unwrap()
}

#[tokio::test]
async fn a_spawned_pool_reports_its_requests_and_its_live_idle_workers() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 2), Duration::from_secs(10));
    let mut pids = std::collections::HashSet::new();
    for _ in 0..5 {
        pids.insert(pid_of(&h, "/app/pid").await);
    }
    eventually("the workers to be idle", || {
        let r = report_of(&h);
        r.busy == 0 && r.workers.iter().all(|w| w.state == "idle")
    })
    .await;
    let r = report_of(&h);
    assert_eq!((r.name.as_str(), r.kind), ("test", "fastcgi"));
    assert_eq!(r.requests, 5, "{r:?}");
    assert_eq!((r.min_ready, r.max), (1, 2));
    assert_eq!((r.crashed, r.queue_wait.counts.len()), (0, 11), "{r:?}");
    assert_eq!(r.queue_wait.counts.iter().sum::<u64>(), 5, "{r:?}");
    assert_eq!(r.workers.len() as u64, r.idle, "{r:?}");
    let served: u64 = r.workers.iter().map(|w| w.requests).sum();
    assert_eq!(served, 5, "{r:?}");
    for w in &r.workers {
        let pid = w.pid.expect("a process tern started has a pid");
        assert!(!is_dead(pid), "worker {pid} is not running");
        assert!(w.current.is_none(), "{w:?}");
        if w.requests > 0 {
            assert!(pids.contains(&pid), "{pid} served, and said so");
            assert!(w.last_duration.is_some(), "{w:?}");
        }
    }
}

#[tokio::test]
async fn a_killed_worker_shows_as_crashed_in_the_next_report() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    let victim = pid_of(&h, "/app/pid").await;
    assert_eq!(report_of(&h).crashed, 0);
    let pid = rustix::process::Pid::from_raw(victim as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    eventually("the killed worker to exit", || is_dead(victim)).await;
    let after = pid_of(&h, "/app/pid").await;
    assert_ne!(after, victim);
    let r = report_of(&h);
    assert_eq!(r.crashed, 1, "{r:?}");
    assert_eq!(r.ended, 0, "a killed worker did not end as it may: {r:?}");
    assert_eq!(r.requests, 2, "{r:?}");
    let pids: Vec<_> = r.workers.iter().map(|w| w.pid).collect();
    assert_eq!(pids, [Some(after)], "{r:?}");
}

#[tokio::test]
async fn a_hang_is_a_504_and_the_process_is_killed() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_millis(500));
    let before = pid_of(&h, "/app/pid").await;
    let r = call(&h, fcgi_get("/app/hang")).await;
    assert_eq!(r.status, 504);
    eventually("the hung process to be killed", || is_dead(before)).await;
    let after = pid_of(&h, "/app/pid").await;
    assert_ne!(before, after);
}

#[tokio::test]
async fn protocol_violations_are_502() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    for path in ["/app/bad-record", "/app/big-head"] {
        let r = call(&h, fcgi_get(path)).await;
        assert_eq!(r.status, 502, "{path}: {}", r.text());
    }
    assert_eq!(call(&h, fcgi_get("/app/hello")).await.status, 200);
}

#[tokio::test]
async fn a_flood_of_stderr_is_logged_up_to_the_cap_and_the_answer_arrives() {
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    let r = call(&h, fcgi_get("/app/stderr?5000000")).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// An answer in many small records, most of them in each read: the relay
/// takes what a read brought in one pass, and every line arrives once and
/// in order, the stderr records between them kept out of the body —
/// whole (it ends while settling) and streamed (past `WHOLE_MAX`, to a
/// reader that pauses, so the relay meets a full channel with records
/// still read and not yet passed on). The connection is in step after it.
#[tokio::test]
async fn many_records_in_one_read_arrive_in_order_whole_and_streamed() {
    use http_body_util::BodyExt as _;
    let site = Site::new();
    let h = spawned(&site, test_app(), pool(1, 1), Duration::from_secs(10));
    let pid = pid_of(&h, "/app/pid").await;
    for n in [3_000usize, 60_000] {
        let resp = h
            .call(fcgi_get(&format!("/app/records?{n}")).exchange())
            .await;
        assert_eq!(resp.status(), 200, "{n}");
        let mut body = resp.into_body();
        let mut got = Vec::new();
        let mut frames = 0;
        let read = async {
            while let Some(frame) = body.frame().await {
                let frame = frame.unwrap_or_else(|e| panic!("{n}: the body failed: {e}"));
                if let Ok(data) = frame.into_data() {
                    got.extend_from_slice(&data);
                }
                frames += 1;
                if frames % 2000 == 0 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), read)
            .await
            .unwrap_or_else(|_| panic!("{n}: the body took longer than 30 s"));
        let want: String = (0..n).map(|i| format!("{i:07}\n")).collect();
        assert_eq!(got.len(), want.len(), "{n}: the body's length");
        assert!(
            got == want.as_bytes(),
            "{n}: the lines arrive once and in order"
        );
        let r = call(&h, fcgi_get("/app/hello")).await;
        assert_eq!(r.text(), "Hello!\n", "{n}: the next request");
    }
    assert_eq!(pid_of(&h, "/app/pid").await, pid, "one process throughout");
}

#[tokio::test]
async fn after_max_requests_the_process_is_replaced() {
    let site = Site::new();
    let mut p = pool(1, 1);
    p.max_requests = 2;
    let h = spawned(&site, test_app(), p, Duration::from_secs(10));
    let a = pid_of(&h, "/app/pid").await;
    let b = pid_of(&h, "/app/pid").await;
    let c = pid_of(&h, "/app/pid").await;
    assert_eq!(a, b);
    assert_ne!(b, c, "recycled after two requests");
    eventually("the recycled process to end", || is_dead(a)).await;
}

#[tokio::test]
async fn idle_processes_above_the_minimum_are_reaped() {
    let site = Site::new();
    let mut p = pool(0, 1);
    p.idle_timeout = Duration::from_millis(300);
    let h = spawned(&site, test_app(), p, Duration::from_secs(10));
    let pid = pid_of(&h, "/app/pid").await;
    eventually("the idle process to be reaped", || is_dead(pid)).await;
    assert_ne!(pid_of(&h, "/app/pid").await, pid, "a new one on demand");
}

#[tokio::test]
async fn a_full_queue_is_a_503_at_once_and_others_keep_working() {
    let site = Site::new();
    let mut p = pool(1, 1);
    p.queue = 1;
    let h = spawned(&site, test_app(), p, Duration::from_millis(1500));
    let hang = {
        let h = h.clone();
        tokio::spawn(async move { call(&h, fcgi_get("/app/hang")).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let queued = {
        let h = h.clone();
        tokio::spawn(async move { call(&h, fcgi_get("/app/hello")).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = call(&h, fcgi_get("/app/hello")).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(!queued.is_finished(), "the queued request waits");
    assert_eq!(hang.await.unwrap().status, 504);
    assert_eq!(
        queued.await.unwrap().status,
        200,
        "served once the hung worker was replaced"
    );
}

#[tokio::test]
async fn a_crash_under_load_fails_only_its_own_request() {
    let site = Site::new();
    let mut p = pool(2, 4);
    p.queue = 1000;
    let h = spawned(&site, test_app(), p, Duration::from_secs(10));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let h = h.clone();
        tasks.push(tokio::spawn(async move {
            let path = if i % 50 == 7 {
                "/app/crash"
            } else {
                "/app/hello"
            };
            (path, call(&h, fcgi_get(path)).await)
        }));
    }
    for t in tasks {
        let (path, r) = t.await.unwrap();
        if path == "/app/hello" {
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!(r.text(), "Hello!\n");
        }
    }
}

/// The socket directories of the pools named `name` in this process's
/// run directory.
fn socket_dirs(name: &str) -> Vec<PathBuf> {
    let run = format!("tern-{}-", std::process::id());
    let mut found = Vec::new();
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&run) {
            continue;
        }
        for dir in std::fs::read_dir(entry.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if dir
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}-"))
            {
                found.push(dir.path());
            }
        }
    }
    found
}

#[tokio::test]
async fn a_dropped_route_removes_its_socket_directory_while_its_processes_stop() {
    let site = Site::new();
    // Processes that ignore SIGTERM take the whole grace period to stop.
    let wrapper = site.path("slow-stop.sh");
    install(
        &wrapper,
        format!(
            "#!/bin/sh\ntrap '' TERM\nexec {}\n",
            env!("CARGO_BIN_EXE_tern-fcgi-app")
        )
        .as_bytes(),
        0o755,
    );
    let cfg = FastCgiConfig {
        app: FastCgiApp::Spawn(CommandConfig {
            program: wrapper,
            args: Vec::new(),
            env: Vec::new(),
        }),
        dir: None,
        document_root: site.path("www"),
        pool: pool(2, 2),
        policy: policy(Duration::from_secs(10)),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    let h = FastCgi::new(&cfg, "dropped-route").unwrap();
    pid_of(&h, "/app/pid").await;
    let dirs = socket_dirs("dropped-route");
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    eventually("two processes", || workers_in(&site.path("www")).len() == 2).await;
    let workers = workers_in(&site.path("www"));
    drop(h);
    eventually("the socket directory removed", || !dirs[0].exists()).await;
    assert!(
        workers.iter().all(|&p| !is_dead(p)),
        "removed while the processes still stop"
    );
    eventually("the processes stopped", || {
        workers.iter().all(|&p| is_dead(p))
    })
    .await;
}

#[tokio::test]
async fn a_server_that_refuses_connections_is_a_quick_502() {
    let site = Site::new();
    let cfg = connected_cfg(
        &site,
        vec![FcgiAddress::Unix(site.path("nothing.sock"))],
        pool(0, 2),
    );
    let h = FastCgi::new(&cfg, "refused").unwrap();
    let started = Instant::now();
    for _ in 0..3 {
        let r = call(&h, fcgi_get("/app/hello")).await;
        assert_eq!(r.status, 502, "{}", r.text());
    }
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "502 without waiting out the queue timeout"
    );
}

#[tokio::test]
async fn connections_to_a_running_application_are_reused_or_made_per_request() {
    for keep in [true, false] {
        let site = Site::new();
        let sock = site.path("app.sock");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let mut app = Command::new(env!("CARGO_BIN_EXE_tern-fcgi-app"));
        app.stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            listener,
        )));
        let app = Group::spawn(&mut app);
        let cfg = FastCgiConfig {
            keep_connections: keep,
            ..connected_cfg(&site, vec![FcgiAddress::Unix(sock.clone())], pool(0, 1))
        };
        let h = FastCgi::new(&cfg, "connect").unwrap();
        for _ in 0..20 {
            assert_eq!(pid_of(&h, "/app/pid").await, app.pid(), "keep: {keep}");
        }
        let mut req = Req::post("/app/echo", vec![b'e'; 200_000]);
        req.pattern = "/app".into();
        let r = call(&h, req).await;
        assert_eq!(r.body.len(), 200_000, "keep: {keep}");
    }
}

/// What the application was asked of the connection by `target`'s
/// request: `keep` (KEEP_CONN) or `close`.
async fn asked(h: &FastCgi, target: &str) -> String {
    let r = call(h, fcgi_get(target)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

/// Connections are kept on a Unix socket as over TCP: one serves request
/// after request. The test application serves one connection at a time,
/// and the pool may hold two: on the Unix socket, a request that has to
/// open a second connection while the first is out waits in the
/// application's listen queue, and the first, as it ends, is closed so
/// that the application takes the second, rather than held while the
/// second waits for its timeout (504). Then the second connection, kept,
/// serves the next requests before the empty place connects anew.
#[tokio::test]
async fn connections_are_kept_and_a_request_waiting_on_a_new_one_gets_the_process() {
    for app in [App::unix(), App::tcp()] {
        let unix = matches!(app.addr, FcgiAddress::Unix(_));
        let site = Site::new();
        let cfg = connected_cfg(&site, vec![app.addr.clone()], pool(1, 2));
        let h = FastCgi::new(&cfg, "kept").unwrap();
        for _ in 0..3 {
            assert_eq!(asked(&h, "/app/keep").await, "keep");
        }
        assert_eq!(h.pools()[0].1.created, 1, "unix: {unix}");
        if !unix {
            continue;
        }
        let slow = {
            let h = h.clone();
            tokio::spawn(async move { call(&h, fcgi_get("/app/stream?4")).await })
        };
        eventually("a request out", || h.pools()[0].1.busy == 1).await;
        // On a second connection, which the application takes only once
        // the first is closed.
        assert_eq!(asked(&h, "/app/keep").await, "keep");
        assert_eq!(slow.await.unwrap().status, 200);
        for _ in 0..2 {
            assert_eq!(asked(&h, "/app/keep").await, "keep");
        }
        let (_, stats) = &h.pools()[0];
        assert_eq!(stats.requests, 7, "{stats:?}");
        assert_eq!(
            (stats.crashed, stats.create_failures, stats.abandoned),
            (0, 0, 0),
            "{stats:?}"
        );
    }
}

/// A kept connection stays registered with the runtime of the request
/// that last used it: requests from one runtime after another (tern runs
/// one per worker thread) each get their answer on the same connection,
/// also after the runtime it was registered with is gone.
#[test]
fn a_kept_connection_serves_one_runtime_after_another() {
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let home = runtime();
    for app in home.block_on(async { [App::unix(), App::tcp()] }) {
        let site = Site::new();
        let cfg = connected_cfg(&site, vec![app.addr.clone()], pool(1, 1));
        let h = home.block_on(async { FastCgi::new(&cfg, "runtimes").unwrap() });
        let (a, b) = (runtime(), runtime());
        for rt in [&a, &a, &b, &a, &b, &b] {
            assert_eq!(rt.block_on(asked(&h, "/app/keep")), "keep");
        }
        drop(a);
        assert_eq!(b.block_on(asked(&h, "/app/keep")), "keep");
        drop(b);
        let c = runtime();
        assert_eq!(c.block_on(asked(&h, "/app/keep")), "keep");
        assert_eq!(c.block_on(asked(&h, "/app/64k")).len(), 65536);
        let (_, stats) = &h.pools()[0];
        assert_eq!((stats.created, stats.requests), (1, 9), "{stats:?}");
        drop(c);
        home.block_on(async { drop(h) });
    }
}

#[tokio::test]
async fn requests_spread_over_addresses_and_skip_one_that_refuses() {
    let site = Site::new();
    let mut apps = Vec::new();
    let mut addrs = Vec::new();
    for name in ["a.sock", "b.sock"] {
        let sock = site.path(name);
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let mut app = Command::new(env!("CARGO_BIN_EXE_tern-fcgi-app"));
        app.stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            listener,
        )));
        apps.push(Group::spawn(&mut app));
        addrs.push(FcgiAddress::Unix(sock.clone()));
    }
    addrs.insert(1, FcgiAddress::Unix(site.path("dead.sock")));
    let cfg = connected_cfg(&site, addrs, pool(0, 1));
    let h = FastCgi::new(&cfg, "spread").unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..30 {
        // Every request succeeds: the dead address passes its requests on.
        seen.insert(pid_of(&h, "/app/pid").await);
    }
    let want: std::collections::HashSet<u32> = apps.iter().map(Group::pid).collect();
    assert_eq!(seen, want, "both live applications served");
    let pools = h.pools();
    assert_eq!(pools.len(), 3);
    let dead = pools.iter().find(|(n, _)| n.contains("dead.sock")).unwrap();
    assert!(dead.1.create_failures >= 1, "{pools:?}");
    let served: u64 = pools.iter().map(|(_, s)| s.requests).sum();
    assert_eq!(served, 30, "{pools:?}");
}

/// php-fpm from Debian, started on a socket in a temporary directory.
pub(crate) struct PhpFpm {
    pub(crate) _group: Group,
    /// Its address, as tern's `connect` takes it.
    pub(crate) addr: String,
}

fn php_fpm(dir: &Path) -> PhpFpm {
    let sock = dir.join("fpm.sock");
    php_fpm_with(
        dir,
        &sock.display().to_string(),
        "pm = static\npm.max_children = 2\n",
    )
}

/// php-fpm listening on `listen` (a socket path, or `127.0.0.1:PORT`),
/// with `pool` as the process-manager lines of its one pool.
pub(crate) fn php_fpm_with(dir: &Path, listen: &str, pool: &str) -> PhpFpm {
    let bin = std::fs::read_dir("/usr/sbin")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("php-fpm"))
        })
        .expect("php-fpm is not installed: run scripts/test-all, which installs it");
    let conf = dir.join("fpm.conf");
    let root = rustix::process::geteuid().is_root();
    let user = if root {
        "user = root\ngroup = root\n"
    } else {
        ""
    };
    std::fs::write(
        &conf,
        format!(
            "[global]\nerror_log = {d}/fpm.log\ndaemonize = no\npid = {d}/fpm.pid\n\n[www]\n{user}listen = {listen}\n{pool}clear_env = yes\n",
            d = dir.display(),
        ),
    )
    .unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg("-F").arg("-y").arg(&conf).arg("-p").arg(dir);
    if root {
        cmd.arg("-R");
    }
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let group = Group::spawn(&mut cmd);
    let end = Instant::now() + Duration::from_secs(20);
    let listening = || {
        if listen.starts_with('/') {
            std::os::unix::net::UnixStream::connect(listen).is_ok()
        } else {
            std::net::TcpStream::connect(listen).is_ok()
        }
    };
    while !listening() {
        assert!(Instant::now() < end, "php-fpm did not open {listen}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = if listen.starts_with('/') {
        format!("unix:{listen}")
    } else {
        listen.to_owned()
    };
    PhpFpm {
        _group: group,
        addr,
    }
}

pub(crate) fn php_site(site: &Site) -> PathBuf {
    let php = site.path("www/php");
    std::fs::create_dir_all(&php).unwrap();
    std::fs::write(php.join("hello.php"), "<?php echo \"Hello!\\n\";\n").unwrap();
    std::fs::write(
        php.join("post.php"),
        "<?php header('X-Script: ' . $_SERVER['SCRIPT_NAME']); echo strlen(file_get_contents('php://input')), ' ', $_SERVER['PATH_INFO'] ?? '-', \"\\n\";\n",
    )
    .unwrap();
    php
}

pub(crate) fn php_req(target: &str) -> Req {
    let mut r = Req::get(target);
    r.pattern = "*.php".into();
    r
}

#[tokio::test]
async fn php_fpm_runs_scripts_beneath_the_directory() {
    let site = Site::new();
    let php = php_site(&site);
    let fpm = php_fpm(site.dir.path());
    let cfg = FastCgiConfig {
        dir: Some(site.path("www")),
        ..connected_cfg(&site, vec![fpm.addr.parse().unwrap()], pool(0, 2))
    };
    let h = FastCgi::new(&cfg, "php-fpm").unwrap();
    for _ in 0..5 {
        let r = call(&h, php_req("/php/hello.php")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "Hello!\n");
    }
    let mut req = Req::post("/php/post.php/extra", vec![b'x'; 300_000]);
    req.pattern = "*.php".into();
    let r = call(&h, req).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "300000 /extra\n");
    assert_eq!(r.header("x-script"), Some("/php/post.php"));
    // No such script: tern answers 404 itself, php-fpm is not asked.
    assert_eq!(call(&h, php_req("/php/missing.php")).await.status, 404);
    drop(php);
}

/// php-fpm with one child, behind a pool that may open four connections:
/// three requests at once to a script that takes 300 ms each get their
/// answers one after the other. Each kept connection holds the child
/// while idle, so without the close of a connection that ends while
/// another waits in php-fpm's listen queue, the second and third would
/// wait there for the 10 s timeout (504).
#[tokio::test]
async fn php_fpm_with_one_child_answers_requests_that_overlap() {
    let site = Site::new();
    let php = php_site(&site);
    std::fs::write(
        php.join("slow.php"),
        "<?php usleep(300000); echo getmypid(), \"\\n\";\n",
    )
    .unwrap();
    let sock = site.path("fpm.sock");
    let fpm = php_fpm_with(
        site.dir.path(),
        &sock.display().to_string(),
        "pm = static\npm.max_children = 1\n",
    );
    let cfg = FastCgiConfig {
        dir: Some(site.path("www")),
        ..connected_cfg(&site, vec![fpm.addr.parse().unwrap()], pool(0, 4))
    };
    let h = FastCgi::new(&cfg, "one-child").unwrap();
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let h = h.clone();
            tokio::spawn(async move { call(&h, php_req("/php/slow.php")).await })
        })
        .collect();
    let mut pids = std::collections::HashSet::new();
    for c in calls {
        let r = c.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        pids.insert(r.text());
    }
    assert_eq!(pids.len(), 1, "one child served all three: {pids:?}");
    // And the kept connection serves what comes next.
    assert_eq!(call(&h, php_req("/php/hello.php")).await.status, 200);
}

#[tokio::test]
async fn php_cgi_runs_as_a_pool_tern_spawns() {
    let site = Site::new();
    php_site(&site);
    let cfg = FastCgiConfig {
        app: FastCgiApp::Spawn(CommandConfig {
            program: PathBuf::from("/usr/bin/php-cgi"),
            args: Vec::new(),
            env: vec![
                ("PHP_FCGI_CHILDREN".into(), "0".into()),
                ("PHP_FCGI_MAX_REQUESTS".into(), "0".into()),
            ],
        }),
        dir: Some(site.path("www")),
        document_root: site.path("www"),
        pool: pool(1, 2),
        policy: policy(Duration::from_secs(10)),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    assert!(
        Path::new("/usr/bin/php-cgi").exists(),
        "php-cgi is not installed: run scripts/test-all, which installs it"
    );
    let h = FastCgi::new(&cfg, "php-cgi").unwrap();
    for _ in 0..5 {
        let r = call(&h, php_req("/php/hello.php")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "Hello!\n");
    }
}

#[tokio::test]
async fn fcgiwrap_runs_cgi_scripts() {
    let site = Site::new();
    site.script(
        "hello.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nHello from %s\\n' \"$SCRIPT_NAME\"\n",
    );
    assert!(
        Path::new("/usr/sbin/fcgiwrap").exists(),
        "fcgiwrap is not installed: run scripts/test-all, which installs it"
    );
    let cfg = FastCgiConfig {
        app: FastCgiApp::Spawn(CommandConfig {
            program: PathBuf::from("/usr/sbin/fcgiwrap"),
            args: Vec::new(),
            env: Vec::new(),
        }),
        dir: Some(site.path("cgi-bin")),
        document_root: site.path("www"),
        pool: pool(1, 1),
        policy: policy(Duration::from_secs(10)),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    let h = FastCgi::new(&cfg, "fcgiwrap").unwrap();
    for _ in 0..3 {
        let r = call(&h, Req::get("/cgi-bin/hello.sh")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "Hello from /cgi-bin/hello.sh\n");
    }
}

fn cgiplus(site: &Site, engine: Engine, pool: PoolSettings) -> CgiPlus {
    let cfg = CgiPlusConfig {
        engine,
        dir: site.path("cgi-bin"),
        document_root: site.path("www"),
        pool,
        policy: policy(Duration::from_secs(10)),
    };
    CgiPlus::new(&cfg, "test").unwrap()
}

/// A CGIplus loop in sh: the pid and a count, so reuse shows.
const SH_LOOP: &str = r#"#!/bin/sh
n=0
while IFS= read -r line; do
  [ "$line" = "!" ] || continue
  while IFS= read -r var && [ -n "$var" ]; do :; done
  n=$((n+1))
  printf 'Content-Type: text/plain\n\n%s %s\n' "$$" "$n"
  [ "$n" = 3 ] && [ -e "$0.crash" ] && { printf 'partial'; exit 3; }
  printf '%s\n' "$CGIPLUSEOF"
done
"#;

#[tokio::test]
async fn a_cgiplus_script_serves_request_after_request_in_one_process() {
    let site = Site::new();
    site.script("loop.sh", SH_LOOP);
    let h = cgiplus(&site, Engine::Scripts, pool(0, 1));
    let mut pids = Vec::new();
    for i in 1..=5 {
        let r = call(&h, Req::get("/cgi-bin/loop.sh")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let text = r.text();
        let (pid, n) = text.trim().split_once(' ').unwrap();
        assert_eq!(n, i.to_string());
        pids.push(pid.to_owned());
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "one process: {pids:?}");
}

#[tokio::test]
async fn an_edited_cgiplus_script_gets_new_workers() {
    let site = Site::new();
    site.script("loop.sh", SH_LOOP);
    let h = cgiplus(&site, Engine::Scripts, pool(0, 1));
    let pid = |r: &Resp| r.text().split(' ').next().unwrap().to_owned();
    let first = call(&h, Req::get("/cgi-bin/loop.sh")).await;
    assert_eq!(
        pid(&call(&h, Req::get("/cgi-bin/loop.sh")).await),
        pid(&first),
        "unchanged: the same process"
    );
    site.script("loop.sh", &SH_LOOP.replace("%s %s", "%s %s "));
    let edited = call(&h, Req::get("/cgi-bin/loop.sh")).await;
    assert_eq!(edited.status, 200, "{}", edited.text());
    assert_ne!(
        pid(&edited),
        pid(&first),
        "the edited file runs in a new process"
    );
}

#[tokio::test]
async fn a_cgiplus_script_that_exits_mid_response_is_replaced() {
    let site = Site::new();
    site.script("loop.sh", SH_LOOP);
    std::fs::write(site.path("cgi-bin/loop.sh.crash"), "").unwrap();
    let h = cgiplus(&site, Engine::Scripts, pool(0, 1));
    for _ in 0..2 {
        assert_eq!(call(&h, Req::get("/cgi-bin/loop.sh")).await.status, 200);
    }
    let r = call(&h, Req::get("/cgi-bin/loop.sh")).await;
    assert!(r.status == 200 || r.status == 502, "{}", r.status);
    assert!(
        r.status == 502 || r.body.ends_with(b">"),
        "the third response is not complete: {:?}",
        r.text()
    );
    let r = call(&h, Req::get("/cgi-bin/loop.sh")).await;
    assert_eq!(r.status, 200);
    assert!(
        r.text().trim().ends_with(" 1"),
        "a new process: {}",
        r.text()
    );
}

#[tokio::test]
async fn the_perl_engine_runs_plain_cgi_scripts_and_reloads_edits() {
    let site = Site::new();
    install(
        &site.path("cgi-bin/a.pl"),
        b"print \"Content-Type: text/plain\\n\\nA $$ $ENV{QUERY_STRING}\\n\";\n",
        0o644,
    );
    install(
        &site.path("cgi-bin/b.pl"),
        b"read(STDIN, my $b, $ENV{CONTENT_LENGTH}); print \"Content-Type: text/plain\\n\\nB \", length($b), \"\\n\"; exit 0;\n",
        0o644,
    );
    let h = cgiplus(&site, Engine::Perl, pool(1, 1));
    let a1 = call(&h, Req::get("/cgi-bin/a.pl?x=1")).await;
    assert_eq!(a1.status, 200, "{}", a1.text());
    let mut post = Req::post("/cgi-bin/b.pl", vec![b'z'; 5000]);
    post.pattern = "/cgi-bin".into();
    let b = call(&h, post).await;
    assert_eq!(b.text(), "B 5000\n");
    let a2 = call(&h, Req::get("/cgi-bin/a.pl?y=2")).await;
    let (p1, p2) = (
        a1.text().split(' ').nth(1).unwrap().to_owned(),
        a2.text().split(' ').nth(1).unwrap().to_owned(),
    );
    assert_eq!(p1, p2, "one engine process: {} / {}", a1.text(), a2.text());
    assert!(a2.text().ends_with("y=2\n"), "{}", a2.text());
    std::thread::sleep(Duration::from_millis(1100));
    install(
        &site.path("cgi-bin/a.pl"),
        b"print \"Content-Type: text/plain\\n\\nedited\\n\";\n",
        0o644,
    );
    assert_eq!(call(&h, Req::get("/cgi-bin/a.pl")).await.text(), "edited\n");
}

#[tokio::test]
async fn the_python_engine_runs_plain_cgi_scripts() {
    let site = Site::new();
    install(
        &site.path("cgi-bin/h.py"),
        b"import os, sys\nprint('Content-Type: text/plain')\nprint()\nprint('py', os.getpid(), os.environ.get('QUERY_STRING'), len(sys.stdin.read()))\n",
        0o644,
    );
    install(
        &site.path("cgi-bin/boom.py"),
        b"raise RuntimeError('boom')\n",
        0o644,
    );
    let h = cgiplus(&site, Engine::Python, pool(1, 1));
    let r1 = call(&h, Req::get("/cgi-bin/h.py?q=1")).await;
    assert_eq!(r1.status, 200, "{}", r1.text());
    assert!(r1.text().ends_with(" q=1 0\n"), "{}", r1.text());
    assert_eq!(call(&h, Req::get("/cgi-bin/boom.py")).await.status, 500);
    let r2 = call(&h, Req::get("/cgi-bin/h.py?q=2")).await;
    assert_eq!(r2.status, 200);
    assert_eq!(
        r1.text().split(' ').nth(1),
        r2.text().split(' ').nth(1),
        "the engine survived the exception"
    );
}

/// The persistent relays keep the same rule as CGI's: a client that takes
/// none of the answer for `send_timeout` gets it cut off (never ended as if
/// whole), and the worker is let go for the next request.
#[tokio::test]
async fn a_client_that_takes_nothing_for_the_send_timeout_lets_the_worker_go() {
    let site = Site::new();
    let cfg = FastCgiConfig {
        app: FastCgiApp::Spawn(test_app()),
        dir: None,
        document_root: site.path("www"),
        pool: pool(1, 1),
        policy: GatewayPolicy {
            send_timeout: Duration::from_millis(1500),
            ..policy(Duration::from_millis(500))
        },
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    let h = FastCgi::new(&cfg, "test").unwrap();
    // 1.6 MB: more than the socket to the application holds.
    let resp = h.call(fcgi_get("/app/records?200000").exchange()).await;
    assert_eq!(resp.status(), 200);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let got = http_body_util::BodyExt::collect(resp.into_body()).await;
    let e = got.expect_err("the answer ended as if it were whole");
    assert!(e.to_string().contains("send_timeout"), "{e}");
    let r = tokio::time::timeout(Duration::from_secs(10), call(&h, fcgi_get("/app/hello")))
        .await
        .expect("the next request was answered");
    assert_eq!(r.text(), "Hello!\n");
}
