//! The user-space pieces of the requests the performance tables measure,
//! timed without sockets: what tern's own code costs per request, apart
//! from the kernel's share (which a socket benchmark on this shared,
//! noisy machine cannot separate from it).
//!
//! ```sh
//! cargo run --release -p tern --example hot_path            # every piece
//! cargo run --release -p tern --example hot_path -- static  # names containing "static"
//! ```
//!
//! Each piece runs in 15 batches after a warm-up; the table gives the
//! median and the fastest batch in nanoseconds per operation. Compare a
//! change against its parent in the same run of the machine (build both,
//! run them one after the other, twice). docs/PERFORMANCE.md keeps the
//! figures of record.
//!
//! The pieces:
//! - `h1 parse`: a head as wrk sends it, and as a browser sends one;
//! - `h1 encode`: the head of the answer to a cached 0 B file;
//! - `static hit`: the static handler's answer to a cached file, from the
//!   `Exchange` to the response dropped (the body not sent);
//! - `static exchange`: parse, the `Exchange`, the handler, the encoded
//!   head: a cache hit's path through the pieces above, without the
//!   server's phases (admit, route, rules, log);
//! - `fcgi request`: a FastCGI request's records for wrk's head: its CGI
//!   environment built as PARAMS, BEGIN_REQUEST and the empty STDIN;
//! - `fcgi response`: decoding an application's answer ("Hello!", and
//!   64 KiB in 8 KiB records) and parsing its CGI head; each time from a
//!   fresh buffer, so the row includes a copy of the answer's bytes (as
//!   the read that brings them in makes one);
//! - `server`: the whole of tern (`target/release/tern`, or `TERN_BIN`)
//!   serving a cached 0 B file to one connection that pipelines 64
//!   requests a write: its user and system CPU per request, from
//!   `/proc/PID/stat`. Pipelining spreads each wake-up and system call
//!   over many requests, so the user figure is close to what the server's
//!   own code costs per keep-alive request (the pieces above, plus its
//!   phases, the HTTP/1 loop and the runtime).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tern_cgi::env::{EnvInput, ScriptVars};
use tern_config::{CacheConfig, EnvPolicy, StaticConfig};
use tern_gateway::fastcgi::{
    encode, Connection, Decoder, DecoderConfig, Params, ProtocolStatus, Record, RequestId, Role,
    Stream,
};
use tern_h1::{BodyLength, DateCache, Limits, ResponseHead};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, PeerAddr, RequestBody, RequestId as Id, RouteMatch, RoutePattern,
    SharedFields,
};
use tern_static::{FileCache, StaticFiles};

/// Work to time: does its operation the given number of times.
type Piece<'a> = Box<dyn FnMut(u64) + 'a>;

/// Batches per piece; the median and the fastest are reported.
const BATCHES: usize = 15;

/// About how long one batch runs.
const BATCH_TIME: Duration = Duration::from_millis(20);

const WRK_HEAD: &[u8] = b"GET /0k.html HTTP/1.1\r\nHost: 127.0.0.1:18501\r\n\r\n";

const BROWSER_HEAD: &[u8] = b"GET /static/app.css?v=3 HTTP/1.1\r\n\
Host: www.example.org\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n\
Accept: text/css,*/*;q=0.1\r\n\
Accept-Language: en-GB,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://www.example.org/\r\n\
Connection: keep-alive\r\n\
Cookie: session=0123456789abcdef0123456789abcdef; theme=dark\r\n\
Sec-Fetch-Dest: style\r\n\
Sec-Fetch-Mode: no-cors\r\n\
Sec-Fetch-Site: same-origin\r\n\r\n";

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let site = Site::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let limits = Limits::default();
    println!("{:<34} {:>10} {:>10}", "piece", "median ns", "best ns");

    let pieces: Vec<(&str, Piece<'_>)> = vec![
        (
            "h1 parse: wrk's head",
            Box::new(|n| {
                for _ in 0..n {
                    let p = tern_h1::parse_head(black_box(WRK_HEAD), &limits);
                    black_box(p.ok());
                }
            }),
        ),
        (
            "h1 parse: a browser's head",
            Box::new(|n| {
                for _ in 0..n {
                    let p = tern_h1::parse_head(black_box(BROWSER_HEAD), &limits);
                    black_box(p.ok());
                }
            }),
        ),
        ("h1 encode: a cached 0 B answer", {
            let shared = rt.block_on(site.answer_fields());
            let (headers, mut out) = (http::HeaderMap::new(), BytesMut::with_capacity(512));
            let mut date = DateCache::new();
            Box::new(move |n| {
                for _ in 0..n {
                    let status = http::StatusCode::OK;
                    encode_head(&mut out, &mut date, status, &headers, Some(&shared));
                    black_box(out.len());
                }
            })
        }),
        ("static hit: a cached 0 B file", {
            let (site, rt) = (&site, &rt);
            Box::new(move |n| {
                rt.block_on(async {
                    // The parse is timed too: the `h1 parse` row is its share.
                    for _ in 0..n {
                        let ex = site.exchange(parse(black_box(WRK_HEAD), &limits));
                        black_box(site.handler.call(ex).await);
                    }
                })
            })
        }),
        ("static exchange: parse to head", {
            let (site, rt) = (&site, &rt);
            let mut out = BytesMut::with_capacity(512);
            let mut date = DateCache::new();
            Box::new(move |n| {
                rt.block_on(async {
                    for _ in 0..n {
                        let ex = site.exchange(parse(black_box(WRK_HEAD), &limits));
                        let mut resp = site.handler.call(ex).await;
                        let shared = resp.body_mut().take_fields();
                        let (status, headers) = (resp.status(), resp.headers());
                        encode_head(&mut out, &mut date, status, headers, shared.as_deref());
                        black_box(out.len());
                    }
                })
            })
        }),
        ("fcgi request: wrk's head as PARAMS", {
            // What the FastCGI handler builds: the CGI environment of a GET
            // with wrk's head, written as PARAMS records, copied behind
            // BEGIN_REQUEST with the empty STDIN.
            let (parts, ()) = http::Request::builder()
                .uri("/fcgi/hello")
                .header("host", "127.0.0.1:18601")
                .body(())
                .expect("a request")
                .into_parts();
            let conn = ConnInfo {
                peer: PeerAddr::Tcp("127.0.0.1:40000".parse().expect("an address")),
                local: PeerAddr::Tcp("127.0.0.1:18601".parse().expect("an address")),
                secure: false,
                tls: None,
            };
            let policy = EnvPolicy::default();
            let mut out = BytesMut::with_capacity(4096);
            Box::new(move |n| {
                let input = EnvInput {
                    request: &parts,
                    conn: &conn,
                    script: ScriptVars {
                        script_name: "/fcgi",
                        script_filename: Path::new("/tmp/fcgiunix/www/fcgi"),
                        path_info: "/hello",
                        document_root: Path::new("/tmp/fcgiunix/www"),
                    },
                    content_length: None,
                    policy: &policy,
                    inherited: &[],
                };
                for _ in 0..n {
                    out.clear();
                    let id = RequestId::ONE;
                    let params = Params::build(black_box(&input)).expect("an environment");
                    encode::begin_request(&mut out, id, Role::Responder, Connection::Keep);
                    out.extend_from_slice(params.records());
                    encode::end_stream(&mut out, id, Stream::Stdin);
                    black_box(out.len());
                }
            })
        }),
        ("fcgi response: \"Hello!\"", fcgi_answer(b"Hello!".to_vec())),
        ("fcgi response: 64 KiB", fcgi_answer(vec![b'x'; 64 << 10])),
    ];
    for (name, mut piece) in pieces {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let (median, best) = time(&mut *piece);
        println!("{name:<34} {median:>10.1} {best:>10.1}");
    }
    if "server".contains(filter.as_str()) {
        match server_cpu(&site) {
            Ok([user, system]) => {
                println!(
                    "{:<34} {:>10.1} {:>10.1}",
                    "server: user CPU", user.0, user.1
                );
                println!(
                    "{:<34} {:>10.1} {:>10.1}",
                    "server: system CPU", system.0, system.1
                );
            }
            Err(e) => println!("server: not measured: {e}"),
        }
    }
}

/// Rounds of the pipelined server measurement, and requests in each.
const SERVER_ROUNDS: usize = 5;
const SERVER_REQUESTS: usize = 500_000;

/// Requests sent in one write.
const PIPELINE: usize = 64;

/// tern's user and system CPU per request, in ns (median and best of
/// [`SERVER_ROUNDS`]), serving `site`'s 0 B file to a pipelining client.
fn server_cpu(site: &Site) -> Result<[(f64, f64); 2], String> {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};

    let bin = match std::env::var_os("TERN_BIN") {
        Some(b) => std::path::PathBuf::from(b),
        None => std::env::current_exe()
            .map_err(|e| e.to_string())?
            .parent()
            .and_then(|examples| examples.parent())
            .map(|dir| dir.join("tern"))
            .ok_or("no directory above the example")?,
    };
    if !bin.exists() {
        return Err(format!("no {} (build it, or set TERN_BIN)", bin.display()));
    }
    let config = site.dir.path().join("tern.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nworkers = 1\n[[listen]]\naddress = \"127.0.0.1:0\"\n[[site]]\nroot = \"{}\"\n",
            site.dir.path().display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(&bin)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    // The first line names the address: `tern: serving on http://ADDR/`.
    let mut first = String::new();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    BufReader::new(stdout)
        .read_line(&mut first)
        .map_err(|e| e.to_string())?;
    let measured = (|| {
        let addr = first
            .split("://")
            .nth(1)
            .map(|a| a.trim().trim_end_matches('/'))
            .ok_or_else(|| format!("no address in {first:?}"))?;
        let mut conn = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
        conn.set_nodelay(true).map_err(|e| e.to_string())?;
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        // One request first, to learn the answer's length (every answer
        // has the same: the Date field is of fixed length).
        conn.write_all(WRK_HEAD).map_err(|e| e.to_string())?;
        let mut one = vec![0; 4096];
        let len = tern_testkit::read_some(&mut conn, &mut one).map_err(|e| e.to_string())?;
        if !one[..len].ends_with(b"\r\n\r\n") {
            return Err(format!(
                "an odd first answer: {:?}",
                String::from_utf8_lossy(&one[..len])
            ));
        }
        let batch = WRK_HEAD.repeat(PIPELINE);
        let mut answers = vec![0; len * PIPELINE];
        let mut run = |requests: usize| -> Result<(), String> {
            for _ in 0..requests / PIPELINE {
                conn.write_all(&batch).map_err(|e| e.to_string())?;
                conn.read_exact(&mut answers).map_err(|e| e.to_string())?;
            }
            Ok(())
        };
        run(SERVER_REQUESTS / 4)?;
        let tick_ns = 1e9 / rustix::param::clock_ticks_per_second() as f64;
        let mut rounds = Vec::new();
        for _ in 0..SERVER_ROUNDS {
            let before = cpu_ticks(child.id())?;
            run(SERVER_REQUESTS)?;
            let after = cpu_ticks(child.id())?;
            let per = |i: usize| (after[i] - before[i]) as f64 * tick_ns / SERVER_REQUESTS as f64;
            rounds.push([per(0), per(1)]);
        }
        let pick = |i: usize| {
            let mut v: Vec<f64> = rounds.iter().map(|r| r[i]).collect();
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[0])
        };
        Ok([pick(0), pick(1)])
    })();
    let _ = child.kill();
    let _ = child.wait();
    measured
}

/// A process's user and system time so far, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<[u64; 2], String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    // After the command's ")": state(0) ... utime(11) stime(12).
    let rest = stat.rsplit_once(')').ok_or("no ')' in stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| -> Result<u64, String> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| format!("no field {i} in stat"))
    };
    Ok([field(11)?, field(12)?])
}

/// Runs `piece` (which does its work `n` times) in [`BATCHES`] batches of
/// about [`BATCH_TIME`] each, after a warm-up that also sizes the batch;
/// the median and the fastest batch, in ns per operation.
fn time(piece: &mut dyn FnMut(u64)) -> (f64, f64) {
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        piece(n);
        if t.elapsed() >= BATCH_TIME / 4 {
            break;
        }
        n *= 2;
    }
    let mut per_op: Vec<f64> = (0..BATCHES)
        .map(|_| {
            let t = Instant::now();
            piece(n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    per_op.sort_by(f64::total_cmp);
    (per_op[BATCHES / 2], per_op[0])
}

/// `head`, which must be a whole head.
fn parse(head: &[u8], limits: &Limits) -> tern_h1::Parsed {
    tern_h1::parse_head(head, limits)
        .ok()
        .flatten()
        .expect("a whole head")
}

/// Encodes into `out` (emptied first) the head of a keep-alive HTTP/1.1
/// answer with no body, as tern's loop does: `shared` fields as their
/// lines.
fn encode_head(
    out: &mut BytesMut,
    date: &mut DateCache,
    status: http::StatusCode,
    headers: &http::HeaderMap,
    shared: Option<&SharedFields>,
) {
    out.clear();
    let lines = shared.and_then(|f| f.lines_for(Some(0)));
    let head = ResponseHead {
        status,
        reason: None,
        version: http::Version::HTTP_11,
        lines: lines.unwrap_or_default(),
        lines_length: lines.is_some() && shared.is_some_and(SharedFields::has_length),
        headers,
        body: BodyLength::Known(0),
        head_request: false,
        keep_alive: true,
    };
    tern_h1::encode_response_head(out, &head, date.now());
}

/// A site of one 0 B file behind the static handler with its cache on,
/// the file already cached.
struct Site {
    dir: tempfile::TempDir,
    handler: StaticFiles,
    conn: Arc<ConnInfo>,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("0k.html"), b"").expect("write 0k.html");
        let cfg = StaticConfig::with_root(dir.path().to_owned());
        let cache = FileCache::new(&CacheConfig {
            enabled: true,
            max_bytes: 1 << 20,
            max_entry_bytes: 64 << 10,
            revalidate: Duration::from_secs(60),
        });
        let handler = StaticFiles::new(&cfg, Some(cache)).expect("static handler");
        let conn = Arc::new(ConnInfo {
            peer: PeerAddr::Tcp("127.0.0.1:40000".parse().expect("address")),
            local: PeerAddr::Tcp("127.0.0.1:18501".parse().expect("address")),
            secure: false,
            tls: None,
        });
        Site { dir, handler, conn }
    }

    /// The `Exchange` the server hands the handler for `parsed`.
    fn exchange(&self, parsed: tern_h1::Parsed) -> Exchange {
        let path = DecodedPath::parse(parsed.target.path()).expect("a plain path");
        let mut request = http::Request::new(RequestBody::empty());
        *request.method_mut() = parsed.method;
        *request.uri_mut() = parsed.target;
        *request.version_mut() = parsed.version;
        *request.headers_mut() = parsed.headers;
        Exchange {
            request,
            path,
            conn: self.conn.clone(),
            route: RouteMatch {
                site: Arc::from("default"),
                pattern: RoutePattern::root(),
            },
            id: Id(1),
        }
    }

    /// The shared fields of the answer to `GET /0k.html`, once the file is
    /// cached (the second answer).
    async fn answer_fields(&self) -> Arc<SharedFields> {
        let get = || self.exchange(parse(WRK_HEAD, &Limits::default()));
        // The first answer fills the cache; the second comes from it.
        drop(self.handler.call(get()).await);
        let mut resp = self.handler.call(get()).await;
        assert_eq!(resp.status(), http::StatusCode::OK);
        assert!(
            resp.headers().is_empty(),
            "a cached file's fields are shared"
        );
        resp.body_mut().take_fields().expect("shared fields")
    }
}

/// A piece that decodes an application's answer with `body` (in STDOUT
/// records of at most 8 KiB, as libfcgi writes them, then END_REQUEST)
/// and parses its CGI head.
fn fcgi_answer(body: Vec<u8>) -> Piece<'static> {
    let id = RequestId::ONE;
    let mut wire = BytesMut::new();
    let mut output = b"Content-type: text/html\r\n\r\n".to_vec();
    output.extend_from_slice(&body);
    for piece in output.chunks(8 << 10) {
        encode::stream(&mut wire, id, Stream::Stdout, piece);
    }
    encode::end_stream(&mut wire, id, Stream::Stdout);
    encode::end_request(&mut wire, id, 0, ProtocolStatus::RequestComplete);
    let wire = wire.freeze();
    // tern is the FastCGI client: the decoder's default side.
    let mut decoder = Decoder::new(DecoderConfig::default());
    Box::new(move |n| {
        for _ in 0..n {
            let mut buf = BytesMut::from(&wire[..]);
            let mut head = None;
            while let Some(record) = decoder.decode(&mut buf).expect("well formed") {
                if head.is_none() {
                    if let Record::Stream { content, .. } = &record {
                        let end = content.windows(4).position(|w| w == b"\r\n\r\n");
                        head = end.map(|e| {
                            tern_cgi::response::parse(
                                &content[..e + 4],
                                tern_cgi::response::Mode::Cgi,
                            )
                        });
                    }
                }
                black_box(&record);
            }
            black_box(head.map(|h| h.is_ok()));
        }
    })
}
