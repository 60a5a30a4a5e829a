//! The CGIplus transport over real pipes: sh, Perl and Python scripts
//! written into temporary directories, started once as child processes
//! with the sentinels in their environment, and driven request after
//! request through `cgiplus::start`, the two halves and `reunite`.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};

use tern_cgi::env::{self, CgiEnv, EnvInput, ScriptVars};
use tern_config::EnvPolicy;
use tern_gateway::cgiplus::{
    self, Mode, NotReusable, Pipes, Refusal, Sentinels, StartBody, StartError,
};
use tern_gateway::persist::{Broken, Downstream as _, Event, Upstream as _};
use tern_handler::{ConnInfo, PeerAddr};

use super::*;

/// A CGIplus process the test started, killed and reaped when dropped.
pub(crate) struct Worker {
    pub(crate) child: Child,
    pub(crate) pipes: Option<Pipes>,
    pub(crate) dir: tempfile::TempDir,
}

impl Worker {
    /// Writes `script` (executable) into a fresh directory and starts it.
    pub(crate) fn script(name: &str, script: &str) -> Worker {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        install(&path, script.as_bytes(), 0o755);
        Worker::start(dir, &path, &[])
    }

    /// Starts `program` with `args` in `dir`: stdin and stdout pipes,
    /// stderr to `dir/stderr.log`, an environment of PATH, the CGI
    /// version and the sentinels.
    pub(crate) fn start(dir: tempfile::TempDir, program: &Path, args: &[OsString]) -> Worker {
        let sentinels = Sentinels::generate().unwrap();
        let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
        let mut child = Command::new(program)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GATEWAY_INTERFACE", "CGI/1.1")
            .envs(sentinels.env())
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdin = OwnedFd::from(child.stdin.take().unwrap());
        let stdout = OwnedFd::from(child.stdout.take().unwrap());
        Worker {
            child,
            pipes: Some(Pipes::new(stdin, stdout, sentinels)),
            dir,
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(self.path("stderr.log")).unwrap()
    }

    /// Runs one request that must end cleanly and leave the worker
    /// reusable; returns the response bytes.
    pub(crate) async fn ok(&mut self, call: Call) -> String {
        let pipes = self.pipes.take().expect("the worker is idle");
        let done = exchange(pipes, call).await;
        let out = match done.end {
            Ok(()) => done.out,
            Err(e) => panic!("the response broke: {e} after {:?}", text(&done.out)),
        };
        self.pipes = Some(done.reunited.expect("the worker is reusable"));
        text(&out)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One request: what the environment is built from, and the body.
pub(crate) struct Call {
    pub(crate) method: &'static str,
    pub(crate) uri: String,
    pub(crate) script: PathBuf,
    pub(crate) path_info: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Body,
}

/// How the body reaches the transport.
pub(crate) enum Body {
    None,
    Whole(Bytes),
    Streamed(Vec<Bytes>),
}

impl Call {
    pub(crate) fn get(uri: &str) -> Call {
        Call {
            method: "GET",
            uri: uri.to_owned(),
            script: PathBuf::from("/cgi-bin/script"),
            path_info: String::new(),
            headers: Vec::new(),
            body: Body::None,
        }
    }

    pub(crate) fn post(uri: &str, body: Body) -> Call {
        Call {
            method: "POST",
            body,
            ..Call::get(uri)
        }
    }

    pub(crate) fn script(mut self, path: &Path) -> Call {
        self.script = path.to_owned();
        self
    }

    pub(crate) fn header(mut self, name: &'static str, value: &str) -> Call {
        self.headers.push((name, value.to_owned()));
        self
    }

    pub(crate) fn path_info(mut self, p: &str) -> Call {
        self.path_info = p.to_owned();
        self
    }

    fn body_len(&self) -> Option<u64> {
        match &self.body {
            Body::None => None,
            Body::Whole(b) => Some(b.len() as u64),
            Body::Streamed(parts) => Some(parts.iter().map(|p| p.len() as u64).sum()),
        }
    }

    pub(crate) fn env(&self) -> CgiEnv {
        let mut b = http::Request::builder()
            .method(self.method)
            .uri(&self.uri)
            .header("host", "test.example");
        for (n, v) in &self.headers {
            b = b.header(*n, v.as_str());
        }
        let parts = b.body(()).unwrap().into_parts().0;
        let inherited = [("PATH".into(), std::env::var_os("PATH").unwrap_or_default())];
        env::build(&EnvInput {
            request: &parts,
            conn: &ConnInfo {
                peer: PeerAddr::Tcp("127.0.0.1:40000".parse().unwrap()),
                local: PeerAddr::Tcp("127.0.0.1:8080".parse().unwrap()),
                secure: false,
                tls: None,
            },
            script: ScriptVars {
                script_name: "/cgi-bin/script",
                script_filename: &self.script,
                path_info: &self.path_info,
                document_root: Path::new("/srv/www"),
            },
            content_length: self.body_len(),
            policy: &EnvPolicy::default(),
            inherited: &inherited,
        })
        .unwrap()
    }
}

/// What one request came to.
pub(crate) struct Done {
    /// The response bytes passed on.
    pub(crate) out: Vec<u8>,
    /// How the response ended.
    pub(crate) end: Result<(), Broken>,
    /// The worker, back after a clean end.
    pub(crate) reunited: Result<Pipes, NotReusable>,
}

/// Runs one request the way the driver does: the body and the response
/// pumped at once, `finish` always called, then `reunite` after a clean
/// end. Within 30 s.
pub(crate) async fn exchange(pipes: Pipes, call: Call) -> Done {
    let env = call.env();
    let (start, chunks) = match call.body {
        Body::None => (StartBody::Empty, Vec::new()),
        Body::Whole(b) => (StartBody::Whole(b), Vec::new()),
        Body::Streamed(parts) => (StartBody::Streamed, parts),
    };
    let run = async {
        let (mut up, mut down) = match cgiplus::start(pipes, &env, start).await {
            Ok(halves) => halves,
            Err(e) => panic!("start: {e}"),
        };
        let send = async {
            for c in chunks {
                up.send(c).await?;
            }
            up.finish().await
        };
        let receive = async {
            let mut out = Vec::new();
            loop {
                match down.next().await {
                    Ok(Event::Stdout(b)) => {
                        assert!(!b.is_empty(), "Stdout events are never empty");
                        out.extend_from_slice(&b);
                    }
                    Ok(Event::End { app_status }) => {
                        assert_eq!(app_status, 0);
                        return (out, Ok(()));
                    }
                    Ok(Event::Stderr(_)) => panic!("CGIplus sends no Stderr events"),
                    Err(e) => return (out, Err(e)),
                }
            }
        };
        let (sent, (out, end)) = tokio::join!(send, receive);
        let reunited = match (&end, sent) {
            (Ok(()), Ok(())) => cgiplus::reunite(up, down),
            (Ok(()), Err(e)) => panic!("sending the body failed: {e}"),
            (Err(_), _) => Err(NotReusable::NotEnded),
        };
        Done { out, end, reunited }
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the request took longer than 30 s")
}

/// A record-mode sh loop that answers with its pid, a request count and
/// the request's URI.
const COUNTER_SH: &str = r#"#!/bin/sh
count=0
while IFS= read -r start; do
    uri=
    while IFS= read -r line && [ -n "$line" ]; do
        case $line in REQUEST_URI=*) uri=${line#REQUEST_URI=} ;; esac
    done
    count=$((count + 1))
    printf 'Content-Type: text/plain\n\npid=%s count=%s uri=%s start=%s\n' $$ $count "$uri" "$start"
    printf '%s' "$CGIPLUSEOF"
done
"#;

#[tokio::test]
async fn a_record_mode_sh_loop_answers_a_hundred_requests_in_one_process() {
    let mut w = Worker::script("counter.sh", COUNTER_SH);
    let pid = w.child.id();
    for i in 1..=100 {
        let out = w.ok(Call::get(&format!("/cgi-bin/counter.sh?n={i}"))).await;
        assert_eq!(
            out,
            format!(
                "Content-Type: text/plain\n\npid={pid} count={i} uri=/cgi-bin/counter.sh?n={i} start=!\n"
            )
        );
        assert_eq!(w.pipes.as_ref().unwrap().mode(), Mode::Record);
    }
}

/// A Perl loop that asks for struct mode at start-up, reads either form
/// (the start line says which) and answers with the form it got and the
/// bytes of PATH_INFO in hex.
const MODES_PL: &str = r#"#!/usr/bin/perl
use strict;
use warnings;
binmode STDIN;
binmode STDOUT;
$| = 1;
print $ENV{CGIPLUSESC}, "!CGIPLUS: struct", $ENV{CGIPLUSEOT};
sub take {
    my ($n) = @_;
    my $buf = '';
    while (length $buf < $n) { read(STDIN, $buf, $n - length $buf, length $buf) or exit 0 }
    $buf;
}
while (defined(my $start = <STDIN>)) {
    chomp $start;
    my (%req, $form);
    if ($start eq '!') {
        $form = 'record';
        while (defined(my $l = <STDIN>)) { chomp $l; last if $l eq ''; my ($n, $v) = split /=/, $l, 2; $req{$n} = $v }
    } elsif ($start =~ /^!!(\d+)$/) {
        $form = 'struct';
        for (unpack '(V/a*)*', take($1)) { next unless length; my ($n, $v) = split /=/, $_, 2; $req{$n} = $v }
    } else { die "bad start line $start" }
    my $body = take($req{CONTENT_LENGTH} || 0);
    printf "Content-Type: text/plain\n\n%s %s %s %s", $form, unpack('H*', $req{PATH_INFO} // ''),
        $req{REQUEST_METHOD}, $body;
    print $ENV{CGIPLUSEOF}, "\n";
}
"#;

#[tokio::test]
async fn a_struct_callout_switches_the_worker_from_the_next_request_on() {
    let mut w = Worker::script("modes.pl", MODES_PL);
    // The callout written at start-up is read with the first response;
    // the first request went out before it, in record mode.
    assert_eq!(w.pipes.as_ref().unwrap().mode(), Mode::Record);
    let out = w.ok(Call::get("/x").path_info("/a")).await;
    assert_eq!(out, "Content-Type: text/plain\n\nrecord 2f61 GET ");
    assert_eq!(w.pipes.as_ref().unwrap().mode(), Mode::Struct);
    for _ in 0..3 {
        let out = w
            .ok(Call::post("/x", Body::Whole(Bytes::from_static(b"k=v"))).path_info("/a"))
            .await;
        assert_eq!(out, "Content-Type: text/plain\n\nstruct 2f61 POST k=v");
    }
    // Struct mode carries any byte, line breaks included.
    let out = w.ok(Call::get("/x").path_info("/a\nb\r\u{e9}")).await;
    assert_eq!(
        out,
        "Content-Type: text/plain\n\nstruct 2f610a620dc3a9 GET "
    );
}

#[tokio::test]
async fn record_mode_refuses_a_line_break_and_the_worker_stays_usable() {
    let mut w = Worker::script("counter.sh", COUNTER_SH);
    let pipes = w.pipes.take().unwrap();
    let call = Call::get("/cgi-bin/counter.sh/a%0Ab").path_info("/a\nb");
    let env = call.env();
    match cgiplus::start(pipes, &env, StartBody::Empty).await {
        Err(StartError::Refused { reason, pipes }) => {
            assert_eq!(reason, Refusal::LineBreak("PATH_INFO".into()));
            w.pipes = Some(pipes);
        }
        Err(e) => panic!("not refused: {e}"),
        Ok(_) => panic!("a line break went out in record mode"),
    }
    let out = w.ok(Call::get("/next")).await;
    assert!(out.contains("count=1 uri=/next"), "{out}");
}

#[tokio::test]
async fn a_body_that_does_not_match_content_length_is_refused_before_writing() {
    let mut w = Worker::script("counter.sh", COUNTER_SH);
    let call = Call::post("/x", Body::Whole(Bytes::from_static(b"12345")));
    let env = call.env();
    let pipes = w.pipes.take().unwrap();
    let body = StartBody::Whole(Bytes::from_static(b"1234"));
    match cgiplus::start(pipes, &env, body).await {
        Err(StartError::Refused { reason, pipes }) => {
            assert_eq!(
                reason,
                Refusal::BodyLength {
                    declared: 5,
                    given: 4
                }
            );
            w.pipes = Some(pipes);
        }
        _ => panic!("a short body was accepted"),
    }
    let out = w.ok(Call::get("/next")).await;
    assert!(out.contains("count=1 uri=/next"), "{out}");
}

/// Reads the body and writes it back after a head.
const ECHO_PY: &str = r#"#!/usr/bin/env python3
import os, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    start = inp.readline()
    if not start:
        break
    env = {}
    while True:
        line = inp.readline().rstrip(b"\n")
        if not line:
            break
        k, _, v = line.partition(b"=")
        env[k] = v
    n = int(env.get(b"CONTENT_LENGTH", b"0"))
    body = inp.read(n)
    out.write(b"Content-Type: application/octet-stream\n\n" + body)
    out.write(os.environb[b"CGIPLUSEOF"])
    out.flush()
"#;

fn megabyte() -> Bytes {
    (0..1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect::<Vec<u8>>()
        .into()
}

#[tokio::test]
async fn a_megabyte_body_goes_there_and_back_whole_and_streamed() {
    let mut w = Worker::script("echo.py", ECHO_PY);
    let body = megabyte();
    let mut want = b"Content-Type: application/octet-stream\n\n".to_vec();
    want.extend_from_slice(&body);
    for round in 0..2 {
        let call = if round == 0 {
            Call::post("/echo", Body::Whole(body.clone()))
        } else {
            let parts = body.chunks(100_000).map(Bytes::copy_from_slice).collect();
            Call::post("/echo", Body::Streamed(parts))
        };
        let done = exchange(w.pipes.take().unwrap(), call).await;
        done.end.unwrap();
        assert!(
            done.out == want,
            "round {round}: {} bytes back",
            done.out.len()
        );
        w.pipes = Some(done.reunited.unwrap());
    }
    // And the worker is still in step.
    let out = w
        .ok(Call::post("/echo", Body::Whole(Bytes::from_static(b"ok"))))
        .await;
    assert_eq!(out, "Content-Type: application/octet-stream\n\nok");
}

/// A Perl loop that ignores the variables (reads up to the empty line)
/// and then runs `$ACT` with `$eof` holding the sentinel.
fn perl_loop(act: &str) -> String {
    format!(
        r#"#!/usr/bin/perl
use strict;
use warnings;
use Time::HiRes ();
binmode STDOUT;
$| = 1;
my $eof = $ENV{{CGIPLUSEOF}};
my $n = 0;
while (defined(my $start = <STDIN>)) {{
    while (defined(my $l = <STDIN>)) {{ last if $l eq "\n" }}
    $n++;
    {act}
}}
"#
    )
}

#[tokio::test]
async fn a_sentinel_split_across_writes_is_found() {
    let mut w = Worker::script(
        "split.pl",
        &perl_loop(
            r#"print "Content-Type: text/plain\n\nsplit $n" . substr($eof, 0, 20);
    Time::HiRes::sleep(0.2);
    print substr($eof, 20, 10);
    Time::HiRes::sleep(0.2);
    print substr($eof, 30);"#,
        ),
    );
    for n in 1..=2 {
        let out = w.ok(Call::get("/split")).await;
        assert_eq!(out, format!("Content-Type: text/plain\n\nsplit {n}"));
    }
}

#[tokio::test]
async fn output_that_only_looks_like_the_sentinel_is_passed_on() {
    let mut w = Worker::script(
        "almost.pl",
        &perl_loop(
            r#"my ($esc) = $ENV{CGIPLUSESC};
    print "Content-Type: text/plain\n\n<" . substr($eof, 0, -1) . ">";
    print "<" . substr($esc, 0, -3) . ">";
    # An undecided tail, disproved only by the next write.
    print "<--tern-cgiplus-";
    Time::HiRes::sleep(0.2);
    print "eof>", $eof;"#,
        ),
    );
    let s = w.pipes.as_ref().unwrap().sentinels().clone();
    let out = w.ok(Call::get("/almost")).await;
    let eof = s.eof();
    let esc = s.esc();
    assert_eq!(
        out,
        format!(
            "Content-Type: text/plain\n\n<{}><{}><--tern-cgiplus-eof>",
            &eof[..eof.len() - 1],
            &esc[..esc.len() - 3]
        )
    );
}

#[tokio::test]
async fn callouts_are_taken_out_and_unknown_ones_ignored() {
    let mut w = Worker::script(
        "watch.pl",
        &perl_loop(
            r#"my ($esc, $eot) = @ENV{qw(CGIPLUSESC CGIPLUSEOT)};
    print "Content-Type: text/plain\n\n", "a", $esc, "!WATCH: hello", $eot, "b";
    print $esc, "!CGIPLUS: struct", $eot;
    print $esc, "!CGIPLUS: record", $eot, "c", $eof;"#,
        ),
    );
    let out = w.ok(Call::get("/watch")).await;
    assert_eq!(out, "Content-Type: text/plain\n\nabc");
    // The last switch wins.
    assert_eq!(w.pipes.as_ref().unwrap().mode(), Mode::Record);
}

#[tokio::test]
async fn a_newline_after_the_sentinel_is_swallowed_even_when_it_comes_late() {
    let mut w = Worker::script(
        "late.pl",
        &perl_loop(
            r#"print "Content-Type: text/plain\n\nlate $n", $eof;
    Time::HiRes::sleep(0.2) if $n == 1;
    print "\n";"#,
        ),
    );
    for n in 1..=3 {
        let out = w.ok(Call::get("/late")).await;
        assert_eq!(out, format!("Content-Type: text/plain\n\nlate {n}"));
    }
}

#[tokio::test]
async fn output_after_the_sentinel_makes_the_worker_unusable() {
    let mut w = Worker::script(
        "junk.pl",
        &perl_loop(r#"print "Content-Type: text/plain\n\nx", $eof, "junk";"#),
    );
    let done = exchange(w.pipes.take().unwrap(), Call::get("/junk")).await;
    done.end.unwrap();
    assert_eq!(text(&done.out), "Content-Type: text/plain\n\nx");
    assert!(
        matches!(done.reunited, Err(NotReusable::TrailingOutput(4))),
        "{:?}",
        done.reunited.err()
    );
}

#[tokio::test]
async fn a_script_that_leaves_its_body_unread_is_not_reused() {
    // Answers without reading the body, which it would read as the next
    // request. sh reads its input a byte at a time, so the body stays in
    // the pipe, where tern can see it; the sleep keeps the script from
    // taking it as its next start line before tern looks.
    let mut w = Worker::script(
        "lazy.sh",
        "#!/bin/sh\nIFS= read -r start\nwhile IFS= read -r line && [ -n \"$line\" ]; do :; done\nprintf 'Content-Type: text/plain\\n\\nlazy%s' \"$CGIPLUSEOF\"\nexec sleep 30\n",
    );
    let done = exchange(
        w.pipes.take().unwrap(),
        Call::post("/lazy", Body::Whole(Bytes::from_static(b"0123456789"))),
    )
    .await;
    done.end.unwrap();
    assert!(
        matches!(done.reunited, Err(NotReusable::UnreadInput(10))),
        "{:?}",
        done.reunited.err()
    );
}

#[tokio::test]
async fn a_script_that_exits_mid_response_breaks_with_closed() {
    let mut w = Worker::script(
        "quit.sh",
        "#!/bin/sh\nread -r start\nprintf 'Content-Type: text/plain\\n\\npartial'\nexit 3\n",
    );
    let done = exchange(w.pipes.take().unwrap(), Call::get("/quit")).await;
    assert!(matches!(done.end, Err(Broken::Closed)), "{:?}", done.end);
    assert_eq!(text(&done.out), "Content-Type: text/plain\n\npartial");
    assert!(matches!(done.reunited, Err(NotReusable::NotEnded)));
}

#[tokio::test]
async fn a_worker_that_exited_while_idle_fails_at_start() {
    let mut w = Worker::script("gone.sh", "#!/bin/sh\nexit 0\n");
    let _ = w.child.wait();
    let env = Call::get("/gone").env();
    match cgiplus::start(w.pipes.take().unwrap(), &env, StartBody::Empty).await {
        Err(StartError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a request was written to a dead worker"),
    }
}

#[tokio::test]
async fn a_body_longer_or_shorter_than_content_length_is_an_error() {
    let mut w = Worker::script("echo.py", ECHO_PY);
    let env = Call::post("/echo", Body::Whole(Bytes::from_static(b"abc"))).env();
    let (mut up, _down) = cgiplus::start(w.pipes.take().unwrap(), &env, StartBody::Streamed)
        .await
        .unwrap();
    up.send(Bytes::from_static(b"ab")).await.unwrap();
    let err = up.send(Bytes::from_static(b"cd")).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);

    let mut w = Worker::script("echo.py", ECHO_PY);
    let (mut up, _down) = cgiplus::start(w.pipes.take().unwrap(), &env, StartBody::Streamed)
        .await
        .unwrap();
    up.send(Bytes::from_static(b"ab")).await.unwrap();
    let err = up.finish().await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
}

/// The shipped hello scripts, as plain CGI through the CGI handler and as
/// CGIplus through the transport.
#[tokio::test]
async fn the_hello_examples_answer_as_plain_cgi_and_as_cgiplus() {
    for (name, source) in [
        ("hello.sh", tern_gateway::rte::HELLO_SH),
        ("hello.pl", tern_gateway::rte::HELLO_PL),
        ("hello.py", tern_gateway::rte::HELLO_PY),
    ] {
        let site = Site::new();
        site.script(name, source);
        let r = call(&site.handler(), Req::get(&format!("/cgi-bin/{name}"))).await;
        assert_eq!((r.status, r.text()), (200, "Hello!\n".to_owned()), "{name}");
        assert_eq!(r.header("content-type"), Some("text/plain"));

        let mut w = Worker::script(name, source);
        let pid = w.child.id();
        for i in 0..5 {
            let call = if i % 2 == 0 {
                Call::get("/hello")
            } else {
                Call::post("/hello", Body::Whole(Bytes::from_static(b"ignored body")))
            };
            let out = w.ok(call).await;
            assert_eq!(out, "Content-Type: text/plain\n\nHello!\n", "{name} #{i}");
        }
        assert_eq!(w.child.id(), pid);
        assert!(w.child.try_wait().unwrap().is_none(), "{name} still runs");
        let want = if name == "hello.sh" {
            Mode::Record
        } else {
            Mode::Struct
        };
        assert_eq!(w.pipes.as_ref().unwrap().mode(), want, "{name}");
    }
}
