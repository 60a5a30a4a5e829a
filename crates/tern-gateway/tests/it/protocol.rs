//! What a script sees and what it may answer: the environment, the body
//! both ways, redirects, NPH, HEAD and malformed heads.

use super::*;
use tern_handler::{InternalRedirect, Redirected};

/// Prints its environment, sorted; Perl adds no variables of its own (a
/// shell would add PWD and the like).
const ENV_SCRIPT: &str = "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\n\";\nprint \"$_=$ENV{$_}\\n\" for sort keys %ENV;\n";

fn env_lines(r: &Resp) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = r
        .text()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn the_environment_is_the_cgi_set_and_nothing_of_terns() {
    let mut site = Site::new();
    site.script("env.cgi", ENV_SCRIPT);
    // Cargo sets CARGO_PKG_NAME (and CARGO_MANIFEST_DIR) for test runs:
    // one is allowed through, the other is not.
    site.cfg.policy.env.env_allow = vec!["CARGO_PKG_NAME".into()];
    let h = site.handler();
    let r = call(
        &h,
        Req::post("/cgi-bin/env.cgi/extra/path?q=1", "hello")
            .header("content-type", "text/plain")
            .header("x-custom", "c")
            .header("proxy", "http://evil.example:3128")
            .header("authorization", "Basic dTpw"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let cgi = site.path("cgi-bin");
    let www = site.path("www");
    let mut want: Vec<(String, String)> = [
        ("CONTENT_LENGTH", "5".to_owned()),
        ("CONTENT_TYPE", "text/plain".into()),
        ("DOCUMENT_ROOT", www.display().to_string()),
        ("GATEWAY_INTERFACE", "CGI/1.1".into()),
        ("HTTP_HOST", "test.example".into()),
        ("HTTP_X_CUSTOM", "c".into()),
        ("PATH", std::env::var("PATH").unwrap()),
        ("PATH_INFO", "/extra/path".into()),
        ("PATH_TRANSLATED", format!("{}/extra/path", www.display())),
        ("QUERY_STRING", "q=1".into()),
        ("REDIRECT_STATUS", "200".into()),
        ("REMOTE_ADDR", "127.0.0.1".into()),
        ("REMOTE_HOST", "127.0.0.1".into()),
        ("REMOTE_PORT", "40000".into()),
        ("REQUEST_METHOD", "POST".into()),
        ("REQUEST_SCHEME", "http".into()),
        ("REQUEST_URI", "/cgi-bin/env.cgi/extra/path?q=1".into()),
        ("SCRIPT_FILENAME", cgi.join("env.cgi").display().to_string()),
        ("SCRIPT_NAME", "/cgi-bin/env.cgi".into()),
        ("SERVER_ADDR", "127.0.0.1".into()),
        ("SERVER_NAME", "test.example".into()),
        ("SERVER_PORT", "8080".into()),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        ("SERVER_SOFTWARE", tern_cgi::env::SERVER_SOFTWARE.into()),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v))
    .collect();
    if let Some(name) = std::env::var_os("CARGO_PKG_NAME") {
        want.push(("CARGO_PKG_NAME".into(), name.to_string_lossy().into_owned()));
    }
    want.sort();
    assert_eq!(env_lines(&r), want);
}

#[tokio::test]
async fn authorization_reaches_the_script_only_when_the_route_opts_in() {
    let mut site = Site::new();
    site.script("env.cgi", ENV_SCRIPT);
    site.cfg.policy.env.pass_authorization = true;
    let r = call(
        &site.handler(),
        Req::get("/cgi-bin/env.cgi").header("authorization", "Basic dTpw"),
    )
    .await;
    assert!(
        r.text().contains("HTTP_AUTHORIZATION=Basic dTpw\n"),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn refused_requests_never_start_the_script() {
    let site = Site::new();
    let marker = site.path("ran");
    site.script(
        "mark.cgi",
        &format!(
            "#!/bin/sh\ntouch {}\nprintf 'Content-Type: text/plain\\n\\nran'\n",
            marker.display()
        ),
    );
    let h = site.handler();
    for req in [
        Req::get("/cgi-bin/mark.cgi").header("user-agent", "() { :; }; echo pwned"),
        Req::get("/cgi-bin/mark.cgi")
            .header("x-forwarded-for", "a")
            .header("x_forwarded_for", "b"),
    ] {
        assert_eq!(call(&h, req).await.status, 400);
    }
    assert!(!marker.exists(), "the script ran");
    assert_eq!(call(&h, Req::get("/cgi-bin/mark.cgi")).await.text(), "ran");
}

#[tokio::test]
async fn missing_hidden_directory_and_non_executable_scripts() {
    let site = Site::new();
    site.script(
        "ok.cgi",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok'\n",
    );
    site.script(
        ".secret",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nno'\n",
    );
    install(&site.path("cgi-bin/data.cgi"), b"#!/bin/sh\n", 0o644);
    std::fs::create_dir(site.path("cgi-bin/sub")).unwrap();
    let h = site.handler();
    for (path, status) in [
        ("/cgi-bin/ok.cgi", 200),
        ("/cgi-bin/missing.cgi", 404),
        ("/cgi-bin/.secret", 404),
        ("/cgi-bin/data.cgi", 403),
        ("/cgi-bin/sub", 403),
        ("/cgi-bin/", 403),
    ] {
        assert_eq!(call(&h, Req::get(path)).await.status, status, "{path}");
    }
}

#[tokio::test]
async fn an_interpreter_runs_scripts_without_an_execute_bit() {
    let mut site = Site::new();
    install(
        &site.path("www/hello.pl"),
        b"print \"Content-Type: text/plain\\n\\nperl $ENV{SCRIPT_NAME}\\n\";\n",
        0o644,
    );
    install(&site.path("www/x.jpg"), b"jpeg", 0o644);
    site.cfg.dir = site.path("www");
    site.cfg.interpreter = Some("/usr/bin/perl".into());
    let h = site.handler();
    let mut req = Req::get("/hello.pl");
    req.pattern = "*.pl".into();
    let r = call(&h, req).await;
    assert_eq!((r.status, r.text().as_str()), (200, "perl /hello.pl\n"));
    // `/x.jpg/a.pl`: the first file on the path is no .pl script.
    let mut req = Req::get("/x.jpg/a.pl");
    req.pattern = "*.pl".into();
    assert_eq!(call(&h, req).await.status, 404);
}

#[tokio::test]
async fn a_compiled_program_runs() {
    let site = Site::new();
    let src = site.path("hello.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nint main(void) { fputs(\"Content-Type: text/plain\\n\\nHello!\\n\", stdout); return 0; }\n",
    )
    .unwrap();
    let built = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(site.path("cgi-bin/hello"))
        .arg(&src)
        .status();
    match built {
        Ok(s) if s.success() => {}
        // No C compiler here: the shell and Perl tests cover the same path.
        _ => return,
    }
    let r = call(&site.handler(), Req::get("/cgi-bin/hello")).await;
    assert_eq!((r.status, r.text().as_str()), (200, "Hello!\n"));
    assert_eq!(r.header("content-type"), Some("text/plain"));
}

#[tokio::test]
async fn large_bodies_stream_both_ways_even_when_the_script_writes_first() {
    let site = Site::new();
    // Writes 1 MiB (16 pipe buffers) before reading a byte of its input,
    // then echoes the input: a server that wrote the whole body before
    // reading would deadlock here.
    site.script(
        "echo.cgi",
        "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\nhead -c 1048576 /dev/zero\ncat\n",
    );
    let input: Vec<u8> = (0..6 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let r = call(
        &site.handler(),
        Req::post("/cgi-bin/echo.cgi", input.clone()),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.headers.get("content-length").is_none(), "streamed");
    assert_eq!(r.body.len(), 1048576 + input.len());
    assert!(r.body[..1048576].iter().all(|&b| b == 0));
    assert!(r.body[1048576..] == input[..], "the body came back intact");
}

#[tokio::test]
async fn a_small_reply_gets_a_content_length_and_framing_is_terns() {
    let site = Site::new();
    site.script(
        "small.cgi",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\nContent-Length: 999\\nTransfer-Encoding: chunked\\nX-Kept: 1\\n\\nsmall'\n",
    );
    let r = call(&site.handler(), Req::get("/cgi-bin/small.cgi")).await;
    assert_eq!((r.status, r.text().as_str()), (200, "small"));
    assert_eq!(r.header("x-kept"), Some("1"));
    assert!(r.headers.get("transfer-encoding").is_none());
    // The script's 999 is gone; whatever length the server writes comes
    // from the body itself.
    assert_ne!(r.header("content-length"), Some("999"));
}

#[tokio::test]
async fn local_redirects_are_handed_to_the_server_and_client_redirects_sent() {
    let site = Site::new();
    site.script(
        "from.cgi",
        "#!/bin/sh\nprintf 'Location: /cgi-bin/to.cgi/p?x=1\\n\\nthis body is discarded'\n",
    );
    site.script(
        "away.cgi",
        "#!/bin/sh\nprintf 'Location: https://example.com/x\\n\\n'\n",
    );
    let h = site.handler();
    assert!(h.redirects_locally());

    // A local redirect: the handler does not run the target itself (the
    // server routes and authorizes it); it answers with the next request,
    // a GET without a body that knows the one before it, and a 302 any
    // server that does not follow it would send.
    let resp = tokio::time::timeout(
        Duration::from_secs(30),
        h.call(Req::post("/cgi-bin/from.cgi?a=b", "body").exchange()),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), 302);
    assert_eq!(
        resp.headers().get("location").unwrap(),
        "/cgi-bin/to.cgi/p?x=1"
    );
    let next = resp
        .extensions()
        .get::<InternalRedirect>()
        .expect("handed over");
    assert_eq!(next.parts.method, http::Method::GET);
    assert_eq!(next.parts.uri, "/cgi-bin/to.cgi/p?x=1");
    assert_eq!(next.path.as_str(), "/cgi-bin/to.cgi/p");
    assert!(next.parts.headers.get("content-length").is_none());
    assert_eq!(
        next.parts.extensions.get::<Redirected>(),
        Some(&Redirected {
            url: "/cgi-bin/from.cgi".into(),
            query: Some("a=b".into()),
            hops: 1
        })
    );

    let r = call(&h, Req::get("/cgi-bin/away.cgi")).await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("https://example.com/x"));
}

#[tokio::test]
async fn nph_scripts_give_their_own_status_line() {
    let site = Site::new();
    site.script(
        "nph-raw.cgi",
        "#!/bin/sh\nprintf 'HTTP/1.1 299 Fine\\r\\nContent-Type: text/plain\\r\\nConnection: close\\r\\n\\r\\nraw body'\n",
    );
    let r = call(&site.handler(), Req::get("/cgi-bin/nph-raw.cgi")).await;
    assert_eq!((r.status, r.text().as_str()), (299, "raw body"));
    assert!(r.headers.get("connection").is_none());
}

#[tokio::test]
async fn head_discards_the_body() {
    let site = Site::new();
    site.script(
        "big.cgi",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-Seen: %s\\n\\n' \"$REQUEST_METHOD\"\nhead -c 300000 /dev/zero\n",
    );
    let mut req = Req::get("/cgi-bin/big.cgi");
    req.method = "HEAD";
    let r = call(&site.handler(), req).await;
    assert_eq!((r.status, r.header("x-seen")), (200, Some("HEAD")));
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn bad_output_is_502() {
    let site = Site::new();
    let cases = [
        ("nothing.cgi", "#!/bin/sh\nexit 0\n"),
        ("garbage.cgi", "#!/bin/sh\necho 'Hello world, no header'\necho\n"),
        ("crash.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n'\nkill -SEGV $$\n"),
        ("cr.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-A: a\\rSet-Cookie: evil=1\\n\\n'\n"),
        ("nul.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-A: a\\000b\\n\\n'\n"),
        ("folded.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n Set-Cookie: x\\n\\n'\n"),
        ("notype.cgi", "#!/bin/sh\nprintf 'X-Only: 1\\n\\nbody'\n"),
        ("huge.cgi", "#!/bin/sh\nwhile :; do printf 'X-Fill: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\n'; done\n"),
    ];
    for (name, body) in cases {
        site.script(name, body);
    }
    let h = site.handler();
    for (name, _) in cases {
        let r = call(&h, Req::get(&format!("/cgi-bin/{name}"))).await;
        assert_eq!(r.status, 502, "{name}: {}", r.text());
        assert!(!r.text().contains("evil"), "{name}");
    }
}

#[tokio::test]
async fn an_event_stream_is_delivered_as_it_is_written() {
    let site = Site::new();
    let gate = site.path("gate");
    site.script(
        "events.cgi",
        &format!(
            "#!/bin/sh\nprintf 'Content-Type: text/event-stream\\n\\ndata: one\\n\\n'\n\
             while [ ! -e {g} ]; do sleep 0.02; done\nprintf 'data: two\\n\\n'\n",
            g = gate.display()
        ),
    );
    let resp = site
        .handler()
        .call(Req::get("/cgi-bin/events.cgi").exchange())
        .await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    // The first event arrives while the script still waits for the gate.
    let first = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("the first event was held back")
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap();
    assert_eq!(&first[..], b"data: one\n\n");
    std::fs::write(&gate, "").unwrap();
    let rest = body.collect().await.unwrap().to_bytes();
    assert_eq!(&rest[..], b"data: two\n\n");
}
