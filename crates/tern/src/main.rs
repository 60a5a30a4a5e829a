//! The `tern` binary: the command line, and the one place that knows every
//! crate. `serve` assembles a site from the configuration and runs the
//! server; `check` validates a configuration and builds it as `serve`
//! would, starting nothing. Started under the demo's program names
//! (`argv[0]`), the binary is instead the demo's FastCGI application or
//! compiled CGI program.

mod alloc;
mod assemble;
mod certwatch;
mod demo;
mod observe;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's malloc (see `alloc.rs`).
#[global_allocator]
static ALLOCATOR: alloc::Mimalloc = alloc::Mimalloc;

/// tern: a web server for static files and every kind of script, and the
/// tool that measures it.
#[derive(Parser, Debug)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a configuration, a directory, or (with no arguments) the
    /// built-in demo site on 127.0.0.1:8080.
    Serve(serve::ServeArgs),
    /// Validate a configuration file: exit 0, or print every error and exit 1.
    Check {
        /// The configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Explain a request: which site, which rules matched (with their
    /// captures), the final path, the route and handler, the realm and
    /// limits, and the answer, without sending anything.
    Explain(ExplainArgs),
    /// Load a server: closed or open loop, latency without coordinated
    /// omission, ab-compatible reports, server CPU time.
    /// Asks a running tern's admin listener whether it is ready (exit 0)
    /// or not (exit 1): for a container's HEALTHCHECK.
    Healthcheck(observe::HealthArgs),
    /// Shows the live trace of a running tern: one line per phase of each
    /// request (WASD's WATCH), from its admin listener.
    Watch(observe::WatchArgs),
    Bench(Box<tern_bench::cli::BenchArgs>),
    /// Rebuild the founding reports' tables for tern and installed peers.
    Suite(Box<tern_suite::cli::SuiteArgs>),
}

/// `tern explain`'s arguments (curl's letters where curl has them).
#[derive(clap::Args, Debug)]
struct ExplainArgs {
    /// The configuration file.
    #[arg(long, short)]
    config: PathBuf,
    /// The method.
    #[arg(long = "request", short = 'X', default_value = "GET")]
    method: String,
    /// A request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// The client's address.
    #[arg(long, default_value = "127.0.0.1")]
    client: std::net::IpAddr,
    /// The URL: `http://host/path?query` (its host chooses the site;
    /// `https` means over TLS), or a path for the default site.
    url: String,
}

fn main() -> ExitCode {
    if demo::run_fastcgi() {
        return ExitCode::SUCCESS;
    }
    if demo::run_compiled_cgi() {
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Healthcheck(args) => observe::healthcheck(&args),
        Command::Watch(args) => observe::watch(&args),
        Command::Bench(args) => tern_bench::cli::run_bench(*args),
        Command::Suite(args) => tern_suite::cli::run_suite(*args),
        Command::Explain(args) => match explain(&args) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tern explain: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Check { config } => match tern_config::load(&config) {
            Ok(cfg) => match assemble::check(&cfg) {
                Ok(()) => {
                    println!("{}: ok", config.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{}: {e:#}", config.display());
                    ExitCode::FAILURE
                }
            },
            Err(errors) => {
                eprintln!("{errors}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Explains the request `args` describe against its configuration.
fn explain(args: &ExplainArgs) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let cfg = tern_config::load(&args.config).map_err(|e| anyhow::anyhow!("{e}"))?;
    let uri: http::Uri = args
        .url
        .parse()
        .with_context(|| format!("{:?} is not a URL or a path", args.url))?;
    let secure = match uri.scheme_str() {
        None | Some("http") => false,
        Some("https") => true,
        Some(other) => anyhow::bail!("{other}: only http and https URLs are served"),
    };
    let mut req = http::Request::builder()
        .method(args.method.as_str())
        .uri(uri.path_and_query().map_or("/", |p| p.as_str()));
    let mut has_host = false;
    for h in &args.headers {
        let (name, value) = h
            .split_once(':')
            .with_context(|| format!("{h:?} is not a header (Name: value)"))?;
        has_host |= name.trim().eq_ignore_ascii_case("host");
        req = req.header(name.trim(), value.trim());
    }
    if let Some(authority) = uri.authority() {
        if !has_host {
            req = req.header(http::header::HOST, authority.as_str());
            has_host = true;
        }
    }
    // Without a host, the request is one HTTP/1.0 allows: the default
    // site answers it.
    if !has_host {
        req = req.version(http::Version::HTTP_10);
    }
    let req = req.body(()).context("the request")?;
    let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
    let conn = tern_handler::ConnInfo {
        peer: tern_handler::PeerAddr::Tcp(std::net::SocketAddr::new(args.client, 50000)),
        local: tern_handler::PeerAddr::Tcp(std::net::SocketAddr::new(
            std::net::Ipv4Addr::LOCALHOST.into(),
            port,
        )),
        secure,
        tls: None,
    };
    Ok(assemble::explain(&cfg, req, &conn)?.to_string())
}
