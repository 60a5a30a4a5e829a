//! tern's JSON line: one object per line, every field of the record, with
//! stable key names.
//!
//! ```text
//! {"time":"2000-10-10T20:55:36.123Z","remote":"192.0.2.7","remote_port":50312,"user":null,"method":"GET","target":"/x?y=1","protocol":"HTTP/1.1","status":200,"bytes":2326,"referer":null,"user_agent":"curl/8.5.0","host":"example.com","duration_ms":1.25,"request_id":"00000000000004d2","tls_protocol":"TLSv1.3","tls_cipher":"TLS13_AES_128_GCM_SHA256"}
//! ```
//!
//! `tls_protocol` and `tls_cipher` are null for a request over plain HTTP.
//!
//! One struct describes both directions, so rendering and parsing cannot
//! disagree on a key. Parsing requires `time`, `method`, `target` and
//! `status`; a missing optional key reads as null, zero or empty.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::timestamp::{parse_rfc3339, Rfc3339Millis};
use crate::{AccessRecord, ParseError};

#[derive(Serialize, Deserialize)]
struct JsonLine<'a> {
    time: Time,
    remote: Option<IpAddr>,
    remote_port: Option<u16>,
    #[serde(borrow)]
    user: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    target: Cow<'a, str>,
    #[serde(borrow, default)]
    protocol: Cow<'a, str>,
    status: u16,
    #[serde(default)]
    bytes: u64,
    #[serde(borrow)]
    referer: Option<Cow<'a, str>>,
    #[serde(borrow)]
    user_agent: Option<Cow<'a, str>>,
    #[serde(borrow)]
    host: Option<Cow<'a, str>>,
    #[serde(default)]
    duration_ms: DurationMs,
    #[serde(default)]
    request_id: RequestId,
    #[serde(borrow, default)]
    tls_protocol: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tls_cipher: Option<Cow<'a, str>>,
}

pub(crate) fn render(rec: &AccessRecord, out: &mut Vec<u8>) {
    let line = JsonLine {
        time: Time(rec.time),
        remote: rec.remote,
        remote_port: rec.remote_port,
        user: rec.user.as_deref().map(Cow::Borrowed),
        method: Cow::Borrowed(&rec.method),
        target: Cow::Borrowed(&rec.target),
        protocol: Cow::Borrowed(&rec.protocol),
        status: rec.status,
        bytes: rec.bytes,
        referer: rec.referer.as_deref().map(Cow::Borrowed),
        user_agent: rec.user_agent.as_deref().map(Cow::Borrowed),
        host: rec.host.as_deref().map(Cow::Borrowed),
        duration_ms: DurationMs(rec.duration),
        request_id: RequestId(rec.request_id),
        tls_protocol: rec.tls_protocol.as_deref().map(Cow::Borrowed),
        tls_cipher: rec.tls_cipher.as_deref().map(Cow::Borrowed),
    };
    // Every field is a string, a number or null, and a Vec takes any
    // write: serde_json has no error to report here.
    serde_json::to_writer(&mut *out, &line).expect("an access record always serializes");
    out.push(b'\n');
}

pub(crate) fn parse(line: &str) -> Result<AccessRecord, ParseError> {
    let line: JsonLine<'_> = serde_json::from_str(line).map_err(ParseError::Json)?;
    let owned = |s: Option<Cow<'_, str>>| s.map(Cow::into_owned);
    Ok(AccessRecord {
        time: line.time.0,
        remote: line.remote,
        remote_port: line.remote_port,
        user: owned(line.user),
        method: line.method.into_owned(),
        target: line.target.into_owned(),
        protocol: line.protocol.into_owned(),
        status: line.status,
        bytes: line.bytes,
        referer: owned(line.referer),
        user_agent: owned(line.user_agent),
        host: owned(line.host),
        duration: line.duration_ms.0,
        request_id: line.request_id.0,
        tls_protocol: owned(line.tls_protocol).map(Cow::Owned),
        tls_cipher: owned(line.tls_cipher).map(Cow::Owned),
    })
}

/// `"2000-10-10T20:55:36.123Z"`.
struct Time(SystemTime);

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&Rfc3339Millis(self.0))
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        parse_rfc3339(&text)
            .map(Time)
            .ok_or_else(|| de::Error::custom(format_args!("invalid RFC 3339 time {text:?}")))
    }
}

/// Milliseconds as a float: `1.25`. Exact to the nanosecond for any
/// duration under about 13 days, since an f64 holds such a nanosecond count
/// with room to spare.
#[derive(Default)]
struct DurationMs(Duration);

impl Serialize for DurationMs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0.as_nanos() as f64 / 1e6)
    }
}

impl<'de> Deserialize<'de> for DurationMs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ms = f64::deserialize(deserializer)?;
        let nanos = (ms * 1e6).round();
        // `as` saturates; the range check keeps that from going unnoticed.
        if !(0.0..=u64::MAX as f64).contains(&nanos) {
            return Err(de::Error::custom(format_args!(
                "duration_ms {ms} is not a duration"
            )));
        }
        Ok(DurationMs(Duration::from_nanos(nanos as u64)))
    }
}

/// 16 lower-case hex digits: `"00000000000004d2"`.
#[derive(Default)]
struct RequestId(u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        let hex = (1..=16).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then(|| u64::from_str_radix(&text, 16).ok())
            .flatten()
            .map(RequestId)
            .ok_or_else(|| de::Error::custom(format_args!("invalid request_id {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_optional_keys_read_as_absent() {
        let rec =
            parse(r#"{"time":"2000-10-10T20:55:36Z","method":"GET","target":"/","status":404}"#)
                .unwrap();
        assert_eq!(rec.status, 404);
        assert_eq!((rec.remote, rec.user, rec.bytes), (None, None, 0));
        assert_eq!((rec.duration, rec.request_id), (Duration::ZERO, 0));
    }

    #[test]
    fn bad_values_are_rejected() {
        let base = r#""method":"GET","target":"/","status":200"#;
        for bad in [
            r#"{"time":"yesterday","#,
            r#"{"time":"2000-10-10T20:55:36Z","remote":"example.com","#,
            r#"{"time":"2000-10-10T20:55:36Z","duration_ms":-1,"#,
            r#"{"time":"2000-10-10T20:55:36Z","request_id":"xyz","#,
            r#"{"time":"2000-10-10T20:55:36Z","request_id":"00000000000000001","#,
            r#"{"time":"2000-10-10T20:55:36Z","bytes":"12","#,
        ] {
            let line = format!("{bad}{base}}}");
            assert!(matches!(parse(&line), Err(ParseError::Json(_))), "{line}");
        }
    }
}
