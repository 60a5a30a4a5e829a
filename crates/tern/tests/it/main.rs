//! End-to-end tests: the built `tern` binary on 127.0.0.1:0, driven over real
//! sockets with raw bytes.

mod acme;
mod bad_input;
mod bench_tls;
mod cgi;
mod check;
mod h1_loop;
mod hardening;
mod lifecycle;
mod listeners;
mod logs;
mod observe;
mod persistent;
mod rules;
mod static_matrix;
mod tls;
mod traversal;
mod wasm;
mod webstone;

use std::path::Path;

pub(crate) use tern_testkit::{request, Response, Tern};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_tern");

/// A config serving `{dir}/www` on 127.0.0.1:0, with `extra` appended
/// (top-level tables) and `site_extra` inside the site.
pub(crate) fn config(extra: &str, site_extra: &str) -> String {
    format!(
        "[[listen]]\naddress = \"127.0.0.1:0\"\n{extra}\n[[site]]\nroot = \"{{dir}}/www\"\n{site_extra}\n"
    )
}

/// A temp dir with `www/` holding `files` (path, contents).
pub(crate) fn docroot(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(&dir.path().join("www"), files);
    dir
}

pub(crate) fn write_files(root: &Path, files: &[(&str, &[u8])]) {
    std::fs::create_dir_all(root).unwrap();
    for (name, body) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
}

pub(crate) fn get(t: &Tern, path: &str) -> Response {
    request(
        t.addr(),
        format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap_or_else(|e| panic!("GET {path}: {e}\nlog:\n{}", t.log()))
}

#[test]
fn check_accepts_a_good_config_and_lists_every_error_of_a_bad_one() {
    let dir = docroot(&[("index.html", b"hi")]);
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        config("", "").replace("{dir}", &dir.path().to_string_lossy()),
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["check", "--config", &good.to_string_lossy()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[limits]\nmax_headers = 0\n[[site]]\nroot = \"/no/such/dir\"\nindex = 3\n",
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["check", "--config", &bad.to_string_lossy()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].contains("bad.toml:2: limits.max_headers: 0 is out of range"),
        "{err}"
    );
    assert!(lines[1].contains("bad.toml:4: site[0].root:"), "{err}");
    assert!(
        lines[2].contains("bad.toml:5: site[0].index: expected a list of strings"),
        "{err}"
    );
}

#[test]
fn demo_site_serves_without_arguments_but_a_listen_address() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tern::spawn(BIN, &["serve", "--listen", "127.0.0.1:0"], dir);
    let r = get(&t, "/");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<h1>tern</h1>"));
    assert_eq!(get(&t, "/hello.txt").text(), "Hello!\n");
    // The compiled CGI example: tern's own binary, run as a CGI program.
    let r = get(&t, "/cgi-bin/hello-compiled.cgi/a/b?x=1");
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(
        text.starts_with("Hello from a compiled CGI program"),
        "{text}"
    );
    assert!(
        text.contains("PATH_INFO=/a/b\nQUERY_STRING=x=1\n"),
        "{text}"
    );
}

#[test]
fn http2_prior_knowledge_is_served() {
    let dir = docroot(&[("a.txt", b"two")]);
    let t = Tern::start_in(BIN, &config("", ""), dir);
    // The client preface, an empty SETTINGS frame, then a HEADERS frame for
    // GET /a.txt with literal (non-Huffman) header fields.
    let mut block = Vec::new();
    block.extend_from_slice(&[0x82]); // :method GET (static index 2)
    block.extend_from_slice(&[0x86]); // :scheme http (index 6)
    block.extend_from_slice(&[0x44, 0x06]); // :path, literal, 6 bytes
    block.extend_from_slice(b"/a.txt");
    block.extend_from_slice(&[0x41, 0x04]); // :authority, 4 bytes
    block.extend_from_slice(b"test");
    let mut req = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    req.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
    let len = block.len();
    req.extend_from_slice(&[0, 0, len as u8, 0x1, 0x5, 0, 0, 0, 1]); // END_STREAM|END_HEADERS, stream 1
    req.extend_from_slice(&block);
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.write_all(&req).unwrap();
    // Read frames until a DATA frame on stream 1.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let data = 'outer: loop {
        let n = tern_testkit::read_some(&mut s, &mut chunk).unwrap();
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
        let mut i = 0;
        while i + 9 <= buf.len() {
            let flen = (buf[i] as usize) << 16 | (buf[i + 1] as usize) << 8 | buf[i + 2] as usize;
            if i + 9 + flen > buf.len() {
                break;
            }
            if buf[i + 3] == 0 && buf[i + 8] == 1 {
                break 'outer buf[i + 9..i + 9 + flen].to_vec();
            }
            i += 9 + flen;
        }
    };
    assert_eq!(data, b"two");
}

/// Whether the HTTP/1 loop under test is hyper's (`TERN_TEST_HTTP1=hyper`,
/// `scripts/test-all`'s second pass), where a behaviour of tern's own
/// loop is not looked for.
pub(crate) fn under_hyper() -> bool {
    std::env::var("TERN_TEST_HTTP1").is_ok_and(|h| h == "hyper")
}

/// Sends `head`, and once the answer has begun (the server is sending it)
/// `flood` bytes of `filler` repeated, from another thread; this one reads
/// on only once 64 KiB of them (or all, if fewer) are written, so that the
/// server still has bytes unread when it is done with a large answer.
/// Returns everything the server sent, and how the connection ended (`Ok`
/// at its end, `Err` at a reset). A server that closes with bytes unread
/// resets the connection, and the reset throws away what of the answer
/// its send queue still holds.
pub(crate) fn answer_under_a_flood(
    addr: std::net::SocketAddr,
    head: &[u8],
    filler: &[u8],
    flood: usize,
) -> (String, std::io::Result<()>) {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(head).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let first = tern_testkit::read_some(&mut s, &mut buf);
    if let Ok(n) = first {
        got.extend_from_slice(&buf[..n]);
    }
    let mut w = s.try_clone().unwrap();
    let chunk = filler.repeat((64 << 10) / filler.len().max(1) + 1);
    let (begun, written) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let mut sent = 0;
        let mut told = false;
        while sent < flood {
            match w.write(&chunk[..chunk.len().min(flood - sent)]) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
            if !told && sent >= flood.min(64 << 10) {
                told = begun.send(()).is_ok();
            }
        }
    });
    let _ = written.recv_timeout(std::time::Duration::from_secs(10));
    let end = match first {
        Ok(0) => Ok(()),
        Err(e) => Err(e),
        Ok(_) => loop {
            match tern_testkit::read_some(&mut s, &mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => break Err(e),
            }
        },
    };
    drop(s);
    writer.join().unwrap();
    (String::from_utf8_lossy(&got).into_owned(), end)
}

/// Headless Chromium on `url` with `extra` arguments (`--dump-dom`,
/// `--screenshot=FILE`), console messages on stderr, `home` as its HOME;
/// asserts it ran.
pub(crate) fn chromium(url: &str, extra: &[&str], home: &Path) -> std::process::Output {
    let mut args = vec![
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,1600",
    ];
    args.extend_from_slice(extra);
    args.push(url);
    let out = std::process::Command::new("chromium")
        .args(&args)
        .env("HOME", home)
        .output()
        .expect("chromium (scripts/test-all installs it)");
    assert!(out.status.success(), "{out:?}");
    out
}
