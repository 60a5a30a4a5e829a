//! Line formats: a record rendered into a line and a line parsed back into a
//! record, so that `tern bench` can replay what `tern serve` logged. Pure: no
//! clock, no files.

mod escape;
mod json;
mod ncsa;
mod timestamp;

pub use timestamp::rfc3339_seconds;

#[cfg(test)]
mod tests;

use tern_config::LogFormat;

use crate::{AccessRecord, ParseError};

/// Appends one line for `rec` in `format`, `\n` included, to `out`.
///
/// What each format carries (the rest parses back as `None`, zero or
/// empty):
/// - [`LogFormat::Common`]: remote address, user, time to the second,
///   method, target, protocol, status, bytes.
/// - [`LogFormat::Combined`]: Common plus referer and user agent.
/// - [`LogFormat::CombinedTls`]: Combined plus TLS protocol and cipher.
/// - [`LogFormat::Json`]: every field; time to the millisecond.
///
/// Values are escaped so that no value can end its field early or start a
/// new line (see the format's docs); [`parse`] undoes the escaping.
pub fn render(format: LogFormat, rec: &AccessRecord, out: &mut Vec<u8>) {
    match format {
        LogFormat::Common => ncsa::render(ncsa::Variant::Common, rec, out),
        LogFormat::Combined => ncsa::render(ncsa::Variant::Combined, rec, out),
        LogFormat::CombinedTls => ncsa::render(ncsa::Variant::CombinedTls, rec, out),
        LogFormat::Json => json::render(rec, out),
    }
}

/// Reads one line (with or without its line break) written by [`render`],
/// or by nginx or Apache in the Common or Combined format.
///
/// Common and Combined accept any time-zone offset (the record holds the
/// instant), Apache's backslash escapes as well as nginx's `\xHH`, and
/// extra fields after the last one, which are ignored; so a Combined line
/// also parses as Common. A remote host that is not an IP address (Apache
/// with `HostnameLookups On`) reads as `None`.
pub fn parse(format: LogFormat, line: &str) -> Result<AccessRecord, ParseError> {
    match format {
        LogFormat::Common => ncsa::parse(ncsa::Variant::Common, line),
        LogFormat::Combined => ncsa::parse(ncsa::Variant::Combined, line),
        LogFormat::CombinedTls => ncsa::parse(ncsa::Variant::CombinedTls, line),
        LogFormat::Json => json::parse(line),
    }
}

/// The format `line` parses in, trying the richest first: JSON, then
/// Combined, then Common. `None` if it parses in none of them. (A
/// CombinedTls line reads as Combined: its two extra words are taken for
/// the extra fields other servers' lines often carry.)
pub fn detect_format(line: &str) -> Option<LogFormat> {
    [LogFormat::Json, LogFormat::Combined, LogFormat::Common]
        .into_iter()
        .find(|&format| parse(format, line).is_ok())
}
