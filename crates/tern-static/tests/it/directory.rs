//! Directories: the trailing-slash redirect, index files, listings, and a
//! file asked for as a directory.

use http::StatusCode;

use crate::{cache_config, Fixture, MODES};

#[tokio::test]
async fn a_directory_without_slash_redirects() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        fx.write("docs/index.html", "idx");
        fx.write("a b/ü/index.html", "idx");
        let r = fx.get("/docs", &[]).await;
        assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(r.header("location"), Some("/docs/"));
        let r = fx.get("/docs?x=1&y=%20z", &[]).await;
        assert_eq!(r.header("location"), Some("/docs/?x=1&y=%20z"));
        let r = fx.get("/a%20b/%C3%BC", &[]).await;
        assert_eq!(r.header("location"), Some("/a%20b/%C3%BC/"));
    }
}

#[tokio::test]
async fn index_files_in_configured_order() {
    for mode in MODES {
        let fx = Fixture::with(
            mode,
            |c| c.index = vec!["index.htm".into(), "index.html".into()],
            cache_config(),
        );
        fx.write("index.html", "root html");
        fx.write("both/index.htm", "htm wins");
        fx.write("both/index.html", "html loses");
        fx.write("one/index.html", "only html");
        std::fs::create_dir_all(fx.root().join("dirindex/index.htm")).unwrap();
        fx.write(
            "dirindex/index.html",
            "a directory named index.htm is skipped",
        );
        let r = fx.get("/", &[]).await;
        assert_eq!((r.status, r.text()), (StatusCode::OK, "root html"));
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(fx.get("/both/", &[]).await.text(), "htm wins");
        assert_eq!(fx.get("/one/", &[]).await.text(), "only html");
        assert_eq!(
            fx.get("/dirindex/", &[]).await.text(),
            "a directory named index.htm is skipped"
        );
    }
}

#[tokio::test]
async fn no_index_and_no_listing_is_403() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        fx.write("empty/file.txt", "x");
        assert_eq!(fx.get("/empty/", &[]).await.status, StatusCode::FORBIDDEN);
    }
}

#[tokio::test]
async fn listings_escape_names_and_hide_dotfiles() {
    for mode in MODES {
        let mut fx = Fixture::with(mode, |c| c.directory_listing = true, cache_config());
        fx.write("list/<script>alert(1)&\"'.txt", "evil name");
        fx.write("list/plain.txt", "12345");
        fx.write("list/.secret", "hidden");
        std::fs::create_dir_all(fx.root().join("list/sub dir")).unwrap();
        let r = fx.get("/list/", &[]).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(r.header("content-length"), Some(&*r.body.len().to_string()));
        let html = r.text();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains(">&lt;script&gt;alert(1)&amp;&quot;&#39;.txt</a>"));
        assert!(html.contains("href=\"./%3Cscript%3Ealert%281%29%26%22%27.txt\""));
        assert!(html.contains("href=\"./sub%20dir/\">sub dir/</a>"));
        assert!(html.contains("href=\"./plain.txt\">plain.txt</a></td><td>5</td>"));
        assert!(html.contains("href=\"../\""));
        assert!(!html.contains("secret"));
        // Directories come first, then files by name.
        let (sub, evil, plain) = (
            html.find("sub dir/").unwrap(),
            html.find("&lt;script").unwrap(),
            html.find(">plain.txt<").unwrap(),
        );
        assert!(sub < evil && evil < plain);
        // The listed link works.
        let r = fx
            .get("/list/%3Cscript%3Ealert%281%29%26%22%27.txt", &[])
            .await;
        assert_eq!(r.text(), "evil name");

        fx.cfg.dotfiles = true;
        fx.rebuild();
        assert!(fx.get("/list/", &[]).await.text().contains(">.secret<"));
    }
}

#[tokio::test]
async fn head_of_a_listing() {
    for mode in MODES {
        let fx = Fixture::with(mode, |c| c.directory_listing = true, cache_config());
        fx.write("d/a.txt", "a");
        let get = fx.get("/d/", &[]).await;
        let head = fx.head("/d/", &[]).await;
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.header("content-length"), get.header("content-length"));
        assert!(head.body.is_empty());
    }
}

#[tokio::test]
async fn a_file_with_a_trailing_slash_is_404() {
    for mode in MODES {
        let fx = Fixture::new(mode);
        fx.write("a.txt", "a");
        assert_eq!(fx.get("/a.txt/", &[]).await.status, StatusCode::NOT_FOUND);
        assert_eq!(fx.get("/a.txt", &[]).await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn an_index_that_appears_later_is_found() {
    for mode in MODES {
        let fx = Fixture::with(mode, |c| c.directory_listing = true, cache_config());
        fx.write("late/other.txt", "x");
        assert!(fx.get("/late/", &[]).await.text().contains("other.txt"));
        fx.write("late/index.html", "now indexed");
        assert_eq!(fx.get("/late/", &[]).await.text(), "now indexed");
    }
}
