//! A compiled CGI program (the Rust twin of the peers' C "Hello!"): the
//! response head, a blank line, the body. Build it and put it in a CGI
//! directory:
//!
//! ```sh
//! cargo build --release -p tern-gateway --example cgi_hello
//! cp target/release/examples/cgi_hello /srv/cgi-bin/hello
//! ```
//!
//! With a query string it also echoes it, to show where a request's data
//! arrives: in the environment (RFC 3875 §4.1).

use std::io::Write;

fn main() {
    let query = std::env::var("QUERY_STRING").unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let body = if query.is_empty() {
        "Hello!\n".to_owned()
    } else {
        format!("Hello! QUERY_STRING={query}\n")
    };
    // One write: the head and the body reach tern together.
    let reply = format!("Content-Type: text/plain\n\n{body}");
    let _ = out.write_all(reply.as_bytes());
}
