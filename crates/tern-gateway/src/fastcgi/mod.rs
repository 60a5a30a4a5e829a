//! FastCGI 1.0's record layer, pure: no sockets, no clocks. The client
//! (connection pools, php-fpm, fcgiwrap) drives it from outside: [`socket`]
//! holds a connection at rest and opens one, [`conn`] runs one request
//! over it. [`responder`] is the other side, an application (tern's demo
//! and its test application).
//!
//! [`record`](Record) names what is on the wire, [`encode`] appends
//! records to a `BytesMut`, and [`Decoder`] takes them back out of the
//! bytes read so far, zero-copy. [`parse_pairs`] splits name-value
//! content (GET_VALUES_RESULT, or a PARAMS stream joined).
//!
//! # How a client drives it
//!
//! - **One request per connection at a time, id 1** ([`RequestId::ONE`]).
//!   nginx, lighttpd, Apache and h2o all do this; concurrency comes from
//!   a pool of connections. Multiplexing is worth doing only if
//!   GET_VALUES answers `FCGI_MPXS_CONNS=1`, and php-fpm answers 0.
//! - **The whole request head in one buffer, one write.** Append
//!   BEGIN_REQUEST, the PARAMS records, the empty PARAMS, and, when the
//!   body is in memory, its STDIN records and the empty STDIN, to one
//!   `BytesMut`, then write it once. Writing the head and then a small
//!   empty STDIN in a second write is the write-write-read pattern that
//!   Nagle's algorithm and the application's delayed ACK turn into a
//!   ≈40 ms stall per request. TCP_NODELAY is set on TCP anyway; one
//!   write also means one syscall. A streamed body goes the same way:
//!   the head with the first chunk, and the empty STDIN in the same
//!   buffer as the last chunk, never on its own.
//! - **Always end both streams.** The empty PARAMS and the empty STDIN
//!   are sent even with no body: an application waits for them.
//!   [`encode::stream`] never writes an empty record by accident;
//!   [`encode::end_stream`] does it on purpose.
//! - **KEEP_CONN** ([`Connection::Keep`]), so the connection can go back
//!   to the pool after END_REQUEST. Without the flag the application
//!   closes the connection after every request, and its side collects the
//!   TIME_WAIT sockets. With it, tern decides when to close.
//! - **CONTENT_LENGTH is always set.** FastCGI has no transfer coding and
//!   php-fpm hangs on a body without a length, so a chunked request body
//!   is buffered (up to a limit) before the request starts.
//! - **Reading:** one [`Decoder`] with [`DecoderConfig::default`] per
//!   connection, fed a `BytesMut` the socket reads into; call
//!   [`Decoder::decode`] until it returns `Ok(None)`, then read more.
//!   STDOUT goes to the response-head parser and then the body (the
//!   `Bytes` share the read buffer's memory), each STDERR record to the
//!   error log tagged with the request, and END_REQUEST ends the request.
//!   A record for another request id, or any decoding error, means the
//!   connection is out of step: close it and answer 502.
//! - **Aborting:** when the client goes away mid-request, the simplest
//!   correct move is to close the connection rather than send
//!   ABORT_REQUEST and wait for END_REQUEST before reusing it.
//!
//! ```
//! use bytes::BytesMut;
//! use tern_gateway::fastcgi::{encode, Connection, RequestId, Role, Stream};
//!
//! let id = RequestId::ONE;
//! let mut out = BytesMut::new();
//! encode::begin_request(&mut out, id, Role::Responder, Connection::Keep);
//! let params: [(&[u8], &[u8]); 2] =
//!     [(b"SCRIPT_FILENAME", b"/srv/index.php"), (b"CONTENT_LENGTH", b"5")];
//! encode::params(&mut out, id, params)?;
//! encode::end_stream(&mut out, id, Stream::Params);
//! encode::stream(&mut out, id, Stream::Stdin, b"a=b&c");
//! encode::end_stream(&mut out, id, Stream::Stdin);
//! // `out` is the whole request: one write.
//! assert_eq!(out.len() % 8, 0);
//! # Ok::<(), tern_gateway::fastcgi::RecordError>(())
//! ```

pub mod conn;
mod decode;
pub mod encode;
mod params;
mod record;
pub mod responder;
pub mod socket;

pub use decode::{parse_pairs, Decoder, DecoderConfig};
pub use params::Params;
pub use record::{
    Connection, Header, Pair, ProtocolStatus, Record, RecordError, RecordType, RequestId, Role,
    Side, Stream, FLAG_KEEP_CONN, HEADER_LEN, MAX_CONTENT_LEN, MAX_PAIR_PART_LEN, VERSION_1,
};
