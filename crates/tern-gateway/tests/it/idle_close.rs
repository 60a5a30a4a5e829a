//! FastCGI applications close connections that carry no request: libfcgi
//! (and so fcgiwrap) about 2 s after accept(), php-cgi and php-fpm after
//! about 5 s, php-fpm again when it recycles a worker (`pm.max_requests`)
//! or reaps an idle one. None of that is a failure of the application:
//! the pool keeps its processes (no kill, no backoff) and no request is
//! answered 502 for it. Each test idles past the application's own close
//! and then sends requests one after another and a few at once.

use std::collections::BTreeSet;
use std::path::Path;

use tern_config::{CommandConfig, FastCgiApp, FastCgiConfig, PoolSettings};
use tern_gateway::FastCgi;

use super::pooled::{fcgi_get, php_fpm_with, php_req, php_site, policy, pool};
use super::*;

/// libfcgi closes an accepted Unix connection that brings nothing within
/// 2 s; a little more, so that the close has happened.
const LIBFCGI_IDLE: Duration = Duration::from_millis(2600);

/// php-cgi and php-fpm close an accepted connection that brings nothing
/// within 5 s.
const PHP_IDLE: Duration = Duration::from_millis(5600);

/// A route to a program tern runs, in `cwd`'s directory of scripts (or
/// none), with its processes' working directory `cwd`.
fn spawned(
    site: &Site,
    program: &str,
    env: &[(&str, &str)],
    dir: Option<PathBuf>,
    pool: PoolSettings,
) -> FastCgi {
    assert!(
        Path::new(program).exists(),
        "{program} is not installed: run scripts/test-all, which installs it"
    );
    let cfg = FastCgiConfig {
        app: FastCgiApp::Spawn(CommandConfig {
            program: PathBuf::from(program),
            args: Vec::new(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }),
        dir,
        document_root: site.path("www"),
        pool,
        policy: policy(Duration::from_secs(10)),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    FastCgi::new(&cfg, "idle").unwrap()
}

/// A route to a running server at `addr`.
fn connected(site: &Site, addr: &str, pool: PoolSettings) -> FastCgi {
    let cfg = FastCgiConfig {
        app: FastCgiApp::Connect(vec![addr.parse().unwrap()]),
        dir: Some(site.path("www")),
        document_root: site.path("www"),
        pool,
        policy: policy(Duration::from_secs(10)),
        connect_timeout: Duration::from_secs(3),
        keep_connections: true,
    };
    FastCgi::new(&cfg, "idle").unwrap()
}

/// The live processes this test binary started whose working directory
/// is `cwd`: the workers of the pool that runs there.
pub(crate) fn workers_in(cwd: &Path) -> BTreeSet<u32> {
    let me = std::process::id().to_string();
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if fields.first() == Some(&"Z") || fields.get(1) != Some(&me.as_str()) {
            continue;
        }
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|d| d == cwd) {
            found.insert(pid);
        }
    }
    found
}

/// What a round of requests got: the answers that were not 200, and the
/// pids the 200s named.
#[derive(Debug, Default)]
struct Load {
    failed: Vec<(u16, String)>,
    pids: BTreeSet<u32>,
}

/// `sequential` requests one after another, then `rounds` of `width`
/// requests at once.
async fn load(
    h: &FastCgi,
    req: fn() -> Req,
    sequential: usize,
    rounds: usize,
    width: usize,
) -> Load {
    let mut got = Load::default();
    let mut note = |r: Resp| {
        if r.status != 200 {
            got.failed.push((r.status, r.text()));
        } else if let Ok(pid) = r.text().trim().parse() {
            got.pids.insert(pid);
        } else {
            got.failed.push((r.status, r.text()));
        }
    };
    for _ in 0..sequential {
        note(call(h, req()).await);
    }
    for _ in 0..rounds {
        let tasks: Vec<_> = (0..width)
            .map(|_| {
                let h = h.clone();
                tokio::spawn(async move { call(&h, req()).await })
            })
            .collect();
        for t in tasks {
            note(t.await.unwrap());
        }
    }
    got
}

/// The pool of `h` (whose processes run in `cwd`) idles from its start
/// and between requests for `idle`, longer than the application keeps an
/// unused connection: its processes stay the same throughout, none counts
/// as crashed, and every request is answered.
async fn idles_without_churn(
    h: &FastCgi,
    cwd: &Path,
    workers: usize,
    idle: Duration,
    req: fn() -> Req,
) {
    eventually("the pool's processes", || workers_in(cwd).len() == workers).await;
    let before = workers_in(cwd);
    tokio::time::sleep(idle).await;
    assert_eq!(
        workers_in(cwd),
        before,
        "idle from the start, the processes were replaced: {:?}",
        h.pools()
    );
    let first = load(h, req, 10, 3, workers * 2).await;
    assert!(
        first.failed.is_empty(),
        "after idling from the start: {:?}",
        first.failed
    );
    assert!(
        first.pids.is_subset(&before),
        "{:?} not in {before:?}",
        first.pids
    );
    tokio::time::sleep(idle).await;
    let second = load(h, req, 10, 3, workers * 2).await;
    assert!(
        second.failed.is_empty(),
        "after idling between requests: {:?}",
        second.failed
    );
    assert_eq!(workers_in(cwd), before, "{:?}", h.pools());
    let (_, stats) = &h.pools()[0];
    assert_eq!(
        (stats.crashed, stats.created),
        (0, workers as u64),
        "{stats:?}"
    );
}

/// A libfcgi responder (fcgiapp) that answers its pid: compiled here.
fn libfcgi_app(dir: &Path) -> PathBuf {
    assert!(
        Path::new("/usr/include/fcgiapp.h").exists(),
        "libfcgi-dev is not installed: run scripts/test-all, which installs it"
    );
    let src = dir.join("pid-app.c");
    let bin = dir.join("pid-app");
    std::fs::write(
        &src,
        "#include <fcgiapp.h>\n#include <unistd.h>\n\
         int main(void) {\n\
           FCGX_Request r;\n\
           if (FCGX_Init() != 0 || FCGX_InitRequest(&r, 0, 0) != 0) return 1;\n\
           while (FCGX_Accept_r(&r) >= 0) {\n\
             FCGX_FPrintF(r.out, \"Content-Type: text/plain\\r\\n\\r\\n%d\\n\", (int)getpid());\n\
             FCGX_Finish_r(&r);\n\
           }\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let built = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .arg("-lfcgi")
        .output()
        .expect("cc (Debian's gcc) is needed to build the libfcgi test application");
    assert!(
        built.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    bin
}

/// The PHP scripts of `site`, with `pid.php`, which answers its process id.
fn php_pid_site(site: &Site) {
    let php = php_site(site);
    std::fs::write(php.join("pid.php"), "<?php echo getmypid(), \"\\n\";\n").unwrap();
}

#[tokio::test]
async fn a_libfcgi_application_that_closes_unused_connections_keeps_its_processes() {
    let site = Site::new();
    let bin = libfcgi_app(site.dir.path());
    let h = spawned(&site, bin.to_str().unwrap(), &[], None, pool(2, 2));
    idles_without_churn(&h, &site.path("www"), 2, LIBFCGI_IDLE, || {
        fcgi_get("/app/pid")
    })
    .await;
}

#[tokio::test]
async fn fcgiwrap_run_by_tern_keeps_its_processes_while_idle() {
    let site = Site::new();
    site.script(
        "ppid.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s\\n' \"$PPID\"\n",
    );
    let h = spawned(
        &site,
        "/usr/sbin/fcgiwrap",
        &[],
        Some(site.path("cgi-bin")),
        pool(2, 2),
    );
    idles_without_churn(&h, &site.path("cgi-bin"), 2, LIBFCGI_IDLE, || {
        Req::get("/cgi-bin/ppid.sh")
    })
    .await;
}

#[tokio::test]
async fn php_cgi_run_by_tern_keeps_its_processes_while_idle() {
    let site = Site::new();
    php_pid_site(&site);
    let h = spawned(
        &site,
        "/usr/bin/php-cgi",
        &[("PHP_FCGI_CHILDREN", "0"), ("PHP_FCGI_MAX_REQUESTS", "0")],
        Some(site.path("www")),
        pool(2, 2),
    );
    idles_without_churn(&h, &site.path("www"), 2, PHP_IDLE, || {
        php_req("/php/pid.php")
    })
    .await;
}

#[tokio::test]
async fn php_cgi_ending_itself_every_3_requests_costs_no_502() {
    let site = Site::new();
    php_pid_site(&site);
    // Each process shuts its connection down after its third response
    // and exits: tern starts another.
    let h = spawned(
        &site,
        "/usr/bin/php-cgi",
        &[("PHP_FCGI_CHILDREN", "0"), ("PHP_FCGI_MAX_REQUESTS", "3")],
        Some(site.path("www")),
        pool(1, 2),
    );
    let got = load(&h, || php_req("/php/pid.php"), 30, 10, 4).await;
    assert!(got.failed.is_empty(), "{:?}", got.failed);
    assert!(got.pids.len() >= 15, "recycled: {:?}", got.pids);
}

#[tokio::test]
async fn php_fpm_closing_unused_connections_is_no_failure() {
    let site = Site::new();
    php_pid_site(&site);
    let sock = site.path("fpm.sock");
    let fpm = php_fpm_with(
        site.dir.path(),
        sock.to_str().unwrap(),
        "pm = static\npm.max_children = 2\n",
    );
    // Two connections made at the start, which php-fpm closes unused.
    let h = connected(&site, &fpm.addr, pool(2, 2));
    eventually("two connections", || h.pools()[0].1.created == 2).await;
    tokio::time::sleep(PHP_IDLE).await;
    let (_, stats) = &h.pools()[0];
    assert_eq!((stats.crashed, stats.create_failures), (0, 0), "{stats:?}");
    let got = load(&h, || php_req("/php/pid.php"), 10, 3, 4).await;
    assert!(got.failed.is_empty(), "{:?}", got.failed);
    let (_, stats) = &h.pools()[0];
    assert_eq!((stats.crashed, stats.create_failures), (0, 0), "{stats:?}");
}

/// A free TCP port on 127.0.0.1 (free when this returns).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn php_fpm_recycling_its_workers_every_3_requests_costs_no_502() {
    for tcp in [false, true] {
        let site = Site::new();
        php_pid_site(&site);
        let listen = if tcp {
            format!("127.0.0.1:{}", free_port())
        } else {
            site.path("fpm.sock").display().to_string()
        };
        let fpm = php_fpm_with(
            site.dir.path(),
            &listen,
            "pm = static\npm.max_children = 2\npm.max_requests = 3\n",
        );
        let h = connected(&site, &fpm.addr, pool(0, 2));
        let got = load(&h, || php_req("/php/pid.php"), 30, 10, 4).await;
        assert!(got.failed.is_empty(), "{listen}: {:?}", got.failed);
        assert!(got.pids.len() >= 15, "{listen}: recycled: {:?}", got.pids);
    }
}

#[tokio::test]
async fn php_fpm_reaping_idle_workers_under_kept_connections_costs_no_502() {
    let site = Site::new();
    php_pid_site(&site);
    let sock = site.path("fpm.sock");
    let fpm = php_fpm_with(
        site.dir.path(),
        sock.to_str().unwrap(),
        "pm = ondemand\npm.max_children = 2\npm.process_idle_timeout = 1s\n",
    );
    let h = connected(&site, &fpm.addr, pool(0, 2));
    for _ in 0..3 {
        let got = load(&h, || php_req("/php/pid.php"), 3, 2, 2).await;
        assert!(got.failed.is_empty(), "{:?}", got.failed);
        // php-fpm ends the idle workers, and with them the connections
        // tern keeps to them.
        tokio::time::sleep(Duration::from_millis(2200)).await;
    }
    let (_, stats) = &h.pools()[0];
    assert_eq!(stats.create_failures, 0, "{stats:?}");
}
