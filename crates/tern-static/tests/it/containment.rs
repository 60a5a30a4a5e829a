//! Containment and refusals: dot-files, symlinks inside and outside the
//! root with following on and off, special files, methods.

use std::os::unix::fs::symlink;

use http::{Method, StatusCode};

use crate::{cache_config, Fixture, MODES};

/// A root with a file, a secret beside the root, and symlinks of each kind.
fn fixture(mode: crate::Mode, follow: bool) -> Fixture {
    let fx = Fixture::with(mode, |c| c.follow_symlinks = follow, cache_config());
    let root = fx.root();
    fx.write("real.txt", "real");
    fx.write("sub/inner.txt", "inner");
    std::fs::write(fx.dir.path().join("secret.txt"), "secret").unwrap();
    std::fs::create_dir(fx.dir.path().join("outside")).unwrap();
    std::fs::write(fx.dir.path().join("outside/o.txt"), "outside").unwrap();
    symlink("real.txt", root.join("link.txt")).unwrap();
    symlink("sub", root.join("linkdir")).unwrap();
    symlink("../secret.txt", root.join("escape.txt")).unwrap();
    symlink(fx.dir.path().join("secret.txt"), root.join("absolute.txt")).unwrap();
    symlink("../outside", root.join("outdir")).unwrap();
    symlink("sub/../../secret.txt", root.join("sneaky.txt")).unwrap();
    fx
}

async fn status(fx: &Fixture, path: &str) -> (StatusCode, String) {
    let r = fx.get(path, &[]).await;
    (r.status, r.text().to_owned())
}

#[tokio::test]
async fn symlinks_refused_when_not_followed() {
    for mode in MODES {
        let fx = fixture(mode, false);
        assert_eq!(status(&fx, "/real.txt").await.0, StatusCode::OK);
        for path in [
            "/link.txt",
            "/linkdir/inner.txt",
            "/linkdir/",
            "/escape.txt",
            "/absolute.txt",
            "/outdir/o.txt",
            "/sneaky.txt",
        ] {
            assert_eq!(
                status(&fx, path).await.0,
                StatusCode::NOT_FOUND,
                "{mode:?} {path}"
            );
        }
    }
}

#[tokio::test]
async fn followed_symlinks_stay_inside_the_root() {
    for mode in MODES {
        let fx = fixture(mode, true);
        assert_eq!(
            status(&fx, "/link.txt").await,
            (StatusCode::OK, "real".into())
        );
        assert_eq!(
            status(&fx, "/linkdir/inner.txt").await,
            (StatusCode::OK, "inner".into())
        );
        assert_eq!(
            status(&fx, "/linkdir").await.0,
            StatusCode::MOVED_PERMANENTLY
        );
        for path in [
            "/escape.txt",
            "/absolute.txt",
            "/outdir/o.txt",
            "/outdir/",
            "/sneaky.txt",
        ] {
            let (code, body) = status(&fx, path).await;
            assert_eq!(code, StatusCode::NOT_FOUND, "{mode:?} {path}");
            assert!(!body.contains("secret") && !body.contains("outside"));
        }
    }
}

#[tokio::test]
async fn a_symlink_swapped_in_after_caching_is_not_followed() {
    let fx = Fixture::with(
        crate::Mode::Cached,
        |_| {},
        tern_config::CacheConfig {
            revalidate: std::time::Duration::ZERO,
            ..cache_config()
        },
    );
    let path = fx.write("swap.txt", "original");
    std::fs::write(fx.dir.path().join("secret.txt"), "secret").unwrap();
    assert_eq!(status(&fx, "/swap.txt").await.1, "original");
    std::fs::remove_file(&path).unwrap();
    symlink("../secret.txt", &path).unwrap();
    assert_eq!(status(&fx, "/swap.txt").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn dotfiles_are_hidden_unless_allowed() {
    for mode in MODES {
        let mut fx = Fixture::new(mode);
        fx.write(".env", "SECRET=1");
        fx.write(".git/config", "[core]");
        fx.write("a/.hidden/x.txt", "x");
        fx.write(".well-known/security.txt", "Contact: mailto:a@b");
        for path in ["/.env", "/.git/config", "/.git/", "/a/.hidden/x.txt"] {
            assert_eq!(status(&fx, path).await.0, StatusCode::NOT_FOUND, "{path}");
        }
        assert_eq!(
            status(&fx, "/.well-known/security.txt").await.0,
            StatusCode::OK
        );
        fx.cfg.dotfiles = true;
        fx.rebuild();
        assert_eq!(
            status(&fx, "/.env").await,
            (StatusCode::OK, "SECRET=1".into())
        );
        assert_eq!(status(&fx, "/a/.hidden/x.txt").await.0, StatusCode::OK);
    }
}

#[tokio::test]
async fn special_files_are_404_and_never_block() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        let fifo = fx.root().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        // `send` has a timeout: a handler blocked on the fifo fails the test.
        assert_eq!(status(&fx, "/pipe").await.0, StatusCode::NOT_FOUND);
        let sock = fx.root().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert_eq!(status(&fx, "/sock").await.0, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn missing_files_are_404() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        assert_eq!(status(&fx, "/nope.txt").await.0, StatusCode::NOT_FOUND);
        assert_eq!(status(&fx, "/no/such/dir/").await.0, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn only_get_and_head() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        fx.write("a.txt", "a");
        for method in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::OPTIONS,
            Method::PATCH,
        ] {
            let r = fx.get_with(method.clone(), "/a.txt").await;
            assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(r.header("allow"), Some("GET, HEAD"));
        }
    }
}

impl Fixture {
    async fn get_with(&self, method: Method, path: &str) -> crate::Reply {
        self.request(method, path, &[]).await
    }
}

#[test]
fn a_missing_or_file_root_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    for root in [dir.path().join("missing"), file] {
        let cfg = crate::static_config(&root);
        let err = tern_static::StaticFiles::new(&cfg, None).unwrap_err();
        assert!(matches!(err, tern_static::Error::Root { .. }), "{err}");
    }
}
