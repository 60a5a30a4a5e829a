//! No request reads outside the document root: a table of traversal
//! attempts, sent as raw bytes so that no client normalises them first.

use super::*;

const SECRET: &str = "TOPSECRET-outside-the-root";

fn traversal_site() -> Tern {
    let dir = docroot(&[
        ("index.html", b"index"),
        ("sub/page.html", b"page"),
        (".env", b"DOTFILE-SECRET"),
        (".git/config", b"DOTFILE-SECRET"),
    ]);
    std::fs::write(dir.path().join("secret.txt"), SECRET).unwrap();
    std::fs::write(dir.path().join("www/sub/inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), dir.path().join("www/link")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("www/uplink")).unwrap();
    std::os::unix::fs::symlink("inside.txt", dir.path().join("www/sub/innerlink")).unwrap();
    Tern::start_in(BIN, &config("", ""), dir)
}

#[test]
fn traversal_attempts_all_fail() {
    let t = traversal_site();
    let attempts = [
        "/../secret.txt",
        "/..%2fsecret.txt",
        "/..%2Fsecret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/%2e%2e%2fsecret.txt",
        "/sub/../../secret.txt",
        "/sub/%2e%2e/%2e%2e/secret.txt",
        "/./../secret.txt",
        "/%252e%252e/secret.txt",
        "/..%5csecret.txt",
        "/..%5c..%5csecret.txt",
        "/%c0%ae%c0%ae/secret.txt",
        "/%c0%ae%c0%ae%c0%afsecret.txt",
        "/%e0%80%ae%e0%80%ae/secret.txt",
        "/..%c0%afsecret.txt",
        "/..%ef%bc%8fsecret.txt",
        "/link",
        "/link/",
        "/uplink/secret.txt",
        "/uplink/www/index.html",
        "/secret.txt",
        "/secret.txt%00.html",
        "/sub/..%00/secret.txt",
        "/%00/../secret.txt",
        "/.env",
        "/.git/config",
        "/%2eenv",
        "/%2egit/config",
        "/sub/..%2f..%2fsecret.txt",
        "/sub%2f..%2f..%2fsecret.txt",
        "/%2e%2e%5csecret.txt",
        "/.%2e/secret.txt",
        "/%2e./secret.txt",
        "/sub/../sub/../../secret.txt",
        "/index.html/../../secret.txt",
        "/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
        "/..%255c..%255csecret.txt",
        "/%c1%9c..%c1%9csecret.txt",
        "/%u002e%u002e/secret.txt",
        "/..;/secret.txt",
        "/....//secret.txt",
        "/sub/innerlink",
        "/etc/passwd",
        "//etc/passwd",
        "/%2fetc%2fpasswd",
        "/sub/page.html/",
        "/sub/page.html%2f..%2f..%2f..%2fsecret.txt",
    ];
    assert!(attempts.len() >= 40);
    for a in attempts {
        let r = request(
            t.addr(),
            format!("GET {a} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("{a}: no response ({e})"),
        };
        let body = r.text();
        assert!(
            matches!(r.status, 400 | 403 | 404),
            "{a}: status {} body {body:?}",
            r.status
        );
        assert!(
            !body.contains("TOPSECRET") && !body.contains("DOTFILE") && !body.contains("root:"),
            "{a}: leaked {body:?}"
        );
    }
    // Absolute-form targets and backslashes in the raw target are refused too.
    for raw in [
        "GET http://test/../secret.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
        "GET /..\\secret.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
        "GET ../secret.txt HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
    ] {
        let r = request(t.addr(), raw.as_bytes()).unwrap();
        assert!(matches!(r.status, 400 | 403 | 404), "{raw:?}: {}", r.status);
        assert!(!r.text().contains("TOPSECRET"), "{raw:?}");
    }
    // A query string is not a path.
    let r = get(&t, "/index.html?../../secret.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "index"));
    // The symlink inside the root is refused (follow_symlinks is off), the
    // plain file beside it is served, and the server is still up.
    assert_eq!(get(&t, "/sub/inside.txt").text(), "inside");
    assert_eq!(get(&t, "/").text(), "index");
}

#[test]
fn symlinks_inside_the_root_are_followed_only_when_allowed() {
    let dir = docroot(&[("sub/inside.txt", b"inside")]);
    std::fs::write(dir.path().join("secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink("inside.txt", dir.path().join("www/sub/innerlink")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        dir.path().join("www/outlink"),
    )
    .unwrap();
    let t = Tern::start_in(BIN, &config("", "follow_symlinks = true"), dir);
    assert_eq!(get(&t, "/sub/innerlink").text(), "inside");
    let r = get(&t, "/outlink");
    assert_eq!(r.status, 404);
    assert!(!r.text().contains("TOPSECRET"));
}
