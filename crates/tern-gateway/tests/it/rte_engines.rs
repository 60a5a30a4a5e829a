//! The Perl and Python run-time engines, started as tern ships them and
//! driven through the CGIplus transport: several unmodified CGI scripts
//! on one engine process, each request's environment its own, edited
//! scripts re-loaded, `exit`, `die` and exceptions survived, the body on
//! STDIN.

use tern_gateway::cgiplus::Mode;
use tern_gateway::rte::{self, Engine};

use super::cgiplus::{exchange, Body, Call, Worker};
use super::*;

/// The engine, written out by `rte::write_to` and started by its
/// interpreter.
fn engine(e: Engine) -> Worker {
    let dir = tempfile::tempdir().unwrap();
    let (perl, python) = rte::write_to(&dir.path().join("rte")).unwrap();
    let script = match e {
        Engine::Perl => perl,
        Engine::Python => python,
    };
    Worker::start(dir, Path::new(e.interpreter()), &[script.into()])
}

/// The test scripts, in each engine's language.
struct Scripts {
    ext: &'static str,
    /// Prints its pid.
    hello: &'static str,
    /// Prints HTTP_X_SECRET, FOO and whether CGIPLUSEOF is visible, then
    /// sets FOO.
    env: &'static str,
    /// Prints, exits, would print more.
    exit: &'static str,
    /// Fails before any output.
    fail: &'static str,
    /// Prints, then fails.
    late_fail: &'static str,
    /// Echoes its body from STDIN.
    post: &'static str,
    /// Does not compile.
    broken: &'static str,
    /// Prints its working directory's name.
    cwd: &'static str,
    /// Forks a child that prints and exits; the parent waits for it.
    fork: &'static str,
}

fn scripts(e: Engine) -> Scripts {
    match e {
        Engine::Perl => Scripts {
            ext: "pl",
            hello: "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\nhello $$\\n\";\n",
            env: r#"#!/usr/bin/perl
use strict;
print "Content-Type: text/plain\n\n";
print "secret=", ($ENV{HTTP_X_SECRET} // 'unset'), " foo=", ($ENV{FOO} // 'unset'),
    " plus=", (exists $ENV{CGIPLUSEOF} ? 'set' : 'unset'), " child=", `sh -c 'echo -n \$REQUEST_URI'`, "\n";
$ENV{FOO} = 'leaked';
"#,
            exit: "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\nbefore exit\\n\";\nexit 0;\nprint \"after exit\\n\";\n",
            fail: "#!/usr/bin/perl\ndie \"boom before output\\n\";\n",
            late_fail: "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\npartial\\n\";\ndie \"boom after output\\n\";\n",
            post: r#"#!/usr/bin/perl
read(STDIN, my $body, $ENV{CONTENT_LENGTH});
my $more = <STDIN>;
print "Content-Type: text/plain\n\n", length($body), ":", $body, defined $more ? " more" : "";
"#,
            broken: "#!/usr/bin/perl\nsub {\n",
            cwd: "#!/usr/bin/perl\nuse Cwd;\nmy @p = split m{/}, getcwd();\nprint \"Content-Type: text/plain\\n\\ncwd=$p[-1]\";\n",
            fork: r#"print "Content-Type: text/plain\n\n";
my $pid = fork;
if ($pid == 0) { print "child\n"; exit 0 }
waitpid $pid, 0;
print "parent\n";
"#,
        },
        Engine::Python => Scripts {
            ext: "py",
            hello: "import os\nprint('Content-Type: text/plain')\nprint()\nprint('hello', os.getpid())\n",
            env: r#"import os, subprocess, sys
print("Content-Type: text/plain")
print()
sys.stdout.flush()
child = subprocess.run(["sh", "-c", "echo -n $REQUEST_URI"], capture_output=True).stdout.decode()
print("secret=%s foo=%s plus=%s child=%s" % (os.environ.get("HTTP_X_SECRET", "unset"),
      os.environ.get("FOO", "unset"), "set" if "CGIPLUSEOF" in os.environ else "unset", child))
os.environ["FOO"] = "leaked"
"#,
            exit: "import sys\nprint('Content-Type: text/plain\\n')\nprint('before exit')\nsys.exit(0)\nprint('after exit')\n",
            fail: "raise RuntimeError('boom before output')\n",
            late_fail: "print('Content-Type: text/plain\\n')\nprint('partial')\nraise RuntimeError('boom after output')\n",
            post: r#"import os, sys
body = sys.stdin.read(int(os.environ["CONTENT_LENGTH"]))
more = sys.stdin.buffer.read()
sys.stdout.write("Content-Type: text/plain\n\n%d:%s%s" % (len(body), body, " more" if more else ""))
"#,
            broken: "def (:\n",
            cwd: "import os\nprint('Content-Type: text/plain\\n')\nprint('cwd=' + os.path.basename(os.getcwd()), end='')\n",
            fork: r#"import os, sys
print("Content-Type: text/plain\n")
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    print("child")
    sys.exit(0)
os.waitpid(pid, 0)
print("parent")
"#,
        },
    }
}

/// Writes a script into `dir/name`.
fn put(w: &Worker, rel: &str, source: &str) -> PathBuf {
    let path = w.path(rel);
    install(&path, source.as_bytes(), 0o644);
    path
}

const PLAIN: &str = "Content-Type: text/plain\n\n";

async fn two_scripts_share_one_engine(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    let pid = w.child.id();
    let hello = put(&w, &format!("hello.{}", s.ext), s.hello);
    let exit = put(&w, &format!("exit.{}", s.ext), s.exit);
    for round in 0..3 {
        let out = w.ok(Call::get("/hello").script(&hello)).await;
        assert_eq!(out, format!("{PLAIN}hello {pid}\n"), "round {round}");
        let out = w.ok(Call::get("/exit").script(&exit)).await;
        assert_eq!(out, format!("{PLAIN}before exit\n"), "round {round}");
        // The engine asked for struct mode at start-up.
        assert_eq!(w.pipes.as_ref().unwrap().mode(), Mode::Struct);
    }
    assert!(w.child.try_wait().unwrap().is_none());
}

async fn each_request_gets_its_own_environment(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    let env = put(&w, &format!("env.{}", s.ext), s.env);
    let out = w
        .ok(Call::get("/first")
            .script(&env)
            .header("x-secret", "s3cret"))
        .await;
    assert_eq!(
        out,
        format!("{PLAIN}secret=s3cret foo=unset plus=unset child=/first\n")
    );
    // Neither the last request's header nor what the script set stays.
    let out = w.ok(Call::get("/second").script(&env)).await;
    assert_eq!(
        out,
        format!("{PLAIN}secret=unset foo=unset plus=unset child=/second\n")
    );
}

async fn an_edited_script_is_loaded_again(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    let v1 = match e {
        Engine::Perl => "print \"Content-Type: text/plain\\n\\nv1\";\n",
        Engine::Python => "print('Content-Type: text/plain\\n\\nv1', end='')\n",
    };
    let v2 = match e {
        Engine::Perl => "print \"Content-Type: text/plain\\n\\nversion two\";\n",
        Engine::Python => "print('Content-Type: text/plain\\n\\nversion two', end='')\n",
    };
    let path = put(&w, &format!("edit.{}", s.ext), v1);
    for _ in 0..2 {
        assert_eq!(
            w.ok(Call::get("/e").script(&path)).await,
            format!("{PLAIN}v1")
        );
    }
    put(&w, &format!("edit.{}", s.ext), v2);
    for _ in 0..2 {
        assert_eq!(
            w.ok(Call::get("/e").script(&path)).await,
            format!("{PLAIN}version two")
        );
    }
}

async fn errors_answer_500_and_the_engine_keeps_serving(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    let pid = w.child.id();
    let fail = put(&w, &format!("fail.{}", s.ext), s.fail);
    let late = put(&w, &format!("late.{}", s.ext), s.late_fail);
    let broken = put(&w, &format!("broken.{}", s.ext), s.broken);
    let hello = put(&w, &format!("hello.{}", s.ext), s.hello);
    let missing = w.path("missing");
    for round in 0..2 {
        let out = w.ok(Call::get("/fail").script(&fail)).await;
        assert!(out.starts_with("Status: 500"), "round {round}: {out}");
        // Output had started: it stands, nothing is added.
        let out = w.ok(Call::get("/late").script(&late)).await;
        assert_eq!(out, format!("{PLAIN}partial\n"));
        let out = w.ok(Call::get("/broken").script(&broken)).await;
        assert!(out.starts_with("Status: 500"), "{out}");
        let out = w.ok(Call::get("/missing").script(&missing)).await;
        assert!(out.starts_with("Status: 404"), "{out}");
        let out = w.ok(Call::get("/hello").script(&hello)).await;
        assert_eq!(out, format!("{PLAIN}hello {pid}\n"));
    }
    let log = w.stderr();
    assert!(log.contains("boom before output"), "{log}");
    assert!(log.contains("boom after output"), "{log}");
    assert!(log.contains("broken."), "{log}");
}

async fn the_body_is_on_stdin(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    let post = put(&w, &format!("post.{}", s.ext), s.post);
    for body in ["a=1&b=2", "", "x"] {
        let b = Bytes::copy_from_slice(body.as_bytes());
        let out = w
            .ok(Call::post("/post", Body::Whole(b)).script(&post))
            .await;
        assert_eq!(out, format!("{PLAIN}{}:{body}", body.len()));
    }
    // A bigger one, streamed, several pipe buffers long.
    let big = "0123456789".repeat(20_000);
    let parts = big
        .as_bytes()
        .chunks(30_000)
        .map(Bytes::copy_from_slice)
        .collect();
    let out = w
        .ok(Call::post("/post", Body::Streamed(parts)).script(&post))
        .await;
    assert_eq!(out, format!("{PLAIN}{}:{big}", big.len()));
}

async fn scripts_run_in_their_own_directory(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    std::fs::create_dir_all(w.path("one")).unwrap();
    std::fs::create_dir_all(w.path("two")).unwrap();
    let one = put(&w, &format!("one/cwd.{}", s.ext), s.cwd);
    let two = put(&w, &format!("two/cwd.{}", s.ext), s.cwd);
    for _ in 0..2 {
        assert_eq!(
            w.ok(Call::get("/1").script(&one)).await,
            format!("{PLAIN}cwd=one")
        );
        assert_eq!(
            w.ok(Call::get("/2").script(&two)).await,
            format!("{PLAIN}cwd=two")
        );
    }
}

async fn a_forked_child_does_not_go_on_serving(e: Engine) {
    let s = scripts(e);
    let mut w = engine(e);
    let fork = put(&w, &format!("fork.{}", s.ext), s.fork);
    let hello = put(&w, &format!("hello.{}", s.ext), s.hello);
    let pid = w.child.id();
    // A child left reading the engine's stdin would take some of these.
    for _ in 0..3 {
        let out = w.ok(Call::get("/fork").script(&fork)).await;
        assert_eq!(out, format!("{PLAIN}child\nparent\n"));
        let out = w.ok(Call::get("/hello").script(&hello)).await;
        assert_eq!(out, format!("{PLAIN}hello {pid}\n"));
    }
}

/// Each scenario, once per engine.
macro_rules! both_engines {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::*;

            #[tokio::test]
            async fn perl() {
                super::$scenario(Engine::Perl).await;
            }

            #[tokio::test]
            async fn python() {
                super::$scenario(Engine::Python).await;
            }
        }
    )*};
}

both_engines!(
    two_scripts_share_one_engine,
    each_request_gets_its_own_environment,
    an_edited_script_is_loaded_again,
    errors_answer_500_and_the_engine_keeps_serving,
    the_body_is_on_stdin,
    scripts_run_in_their_own_directory,
    a_forked_child_does_not_go_on_serving,
);

#[tokio::test]
async fn perl_scripts_keep_data_sections_and_their_output_layers_do_not_stay() {
    let mut w = engine(Engine::Perl);
    let data = put(
        &w,
        "data.pl",
        "#!/usr/bin/perl -w\nbinmode STDOUT, ':utf8';\nprint \"Content-Type: text/plain\\n\\n\";\nprint \"\\x{e9}\";\nsyswrite STDOUT, \"|\";\nprint while <DATA>;\n__DATA__\nline one\nline two\n",
    );
    let bytes = put(
        &w,
        "bytes.pl",
        "print \"Content-Type: application/octet-stream\\n\\n\", \"\\xe9\";\n",
    );
    for _ in 0..2 {
        // DATA is whole again on every request.
        let out = w.ok(Call::get("/data").script(&data)).await;
        assert_eq!(out, format!("{PLAIN}\u{e9}|line one\nline two\n"));
        // The last script's `:utf8` layer is gone: a byte is a byte.
        let pipes = w.pipes.take().unwrap();
        let done = exchange(pipes, Call::get("/bytes").script(&bytes)).await;
        done.end.unwrap();
        assert_eq!(
            done.out,
            b"Content-Type: application/octet-stream\n\n\xe9".to_vec()
        );
        w.pipes = Some(done.reunited.unwrap());
    }
}
