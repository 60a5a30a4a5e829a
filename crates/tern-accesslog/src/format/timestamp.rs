//! Calendar time for log lines: `10/Oct/2000:13:55:36 +0000` (Common and
//! Combined) and `2000-10-10T13:55:36.123Z` (JSON), written and read back.
//!
//! The calendar arithmetic is Howard Hinnant's `days_from_civil` /
//! `civil_from_days`: a few integer operations, no tables, no allocation, no
//! time-zone database (tern writes UTC; lines from other servers carry their
//! offset, which parsing folds back into UTC).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

const SECS_PER_DAY: i64 = 86_400;
const NANOS_PER_SEC: u32 = 1_000_000_000;

/// Appends `10/Oct/2000:13:55:36 +0000` (the text between Common's brackets).
pub(crate) fn write_clf(out: &mut Vec<u8>, time: SystemTime) {
    let c = Civil::from_time(time);
    push_2(out, c.day);
    out.push(b'/');
    out.extend_from_slice(MONTHS[c.month as usize - 1].as_bytes());
    out.push(b'/');
    push_year(out, c.year);
    out.push(b':');
    push_2(out, c.hour);
    out.push(b':');
    push_2(out, c.minute);
    out.push(b':');
    push_2(out, c.second);
    out.extend_from_slice(b" +0000");
}

/// Reads `10/Oct/2000:13:55:36 -0700`, any offset, into UTC.
pub(crate) fn parse_clf(s: &str) -> Option<SystemTime> {
    let (date, zone) = s.split_once(' ')?;
    let (day, rest) = date.split_once('/')?;
    let (month, rest) = rest.split_once('/')?;
    let (year, clock) = rest.split_once(':')?;
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as u32 + 1;
    let mut hms = clock.split(':');
    let civil = Civil {
        year: i64::from(number(year, 4)?),
        month,
        day: number(day, 2)?,
        hour: number(hms.next()?, 2)?,
        minute: number(hms.next()?, 2)?,
        second: number(hms.next()?, 2)?,
        nanos: 0,
    };
    if hms.next().is_some() {
        return None;
    }
    let (sign, hhmm) = zone.split_at_checked(1)?;
    if hhmm.len() != 4 {
        return None;
    }
    // Checked: four bytes need not be four characters.
    let (hh, mm) = hhmm.split_at_checked(2)?;
    let offset = offset_secs(sign, number(hh, 2)?, number(mm, 2)?)?;
    civil.to_time(offset)
}

/// Displays a time as RFC 3339 in UTC with milliseconds:
/// `2000-10-10T13:55:36.123Z`. Sub-millisecond digits are cut, not rounded,
/// so a line never claims a later time than the request's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rfc3339Millis(pub(crate) SystemTime);

impl fmt::Display for Rfc3339Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = Civil::from_time(self.0);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            c.year,
            c.month,
            c.day,
            c.hour,
            c.minute,
            c.second,
            c.nanos / 1_000_000
        )
    }
}

/// `time` as RFC 3339 in UTC to the second (`2026-11-24T10:00:00Z`): the
/// date and time a person reads, as `tern bench model` writes a log's span.
pub fn rfc3339_seconds(time: SystemTime) -> String {
    let c = Civil::from_time(time);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// Reads RFC 3339 (`2000-10-10T13:55:36.123Z`, `2000-10-10T06:55:36-07:00`,
/// any number of fraction digits) into UTC.
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let at = |from: usize, to: usize| s.get(from..to);
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if !separators
        .iter()
        .all(|&(i, c)| s.as_bytes().get(i) == Some(&c))
        || !matches!(s.as_bytes().get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let mut civil = Civil {
        year: i64::from(number(at(0, 4)?, 4)?),
        month: number(at(5, 7)?, 2)?,
        day: number(at(8, 10)?, 2)?,
        hour: number(at(11, 13)?, 2)?,
        minute: number(at(14, 16)?, 2)?,
        second: number(at(17, 19)?, 2)?,
        nanos: 0,
    };
    let mut rest = s.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        // Nanoseconds from the first nine digits; further digits are below
        // what SystemTime keeps.
        civil.nanos = fraction.as_bytes()[..digits]
            .iter()
            .chain(std::iter::repeat(&b'0'))
            .take(9)
            .fold(0, |n, d| n * 10 + u32::from(d - b'0'));
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let (sign, hh_mm) = rest.split_at_checked(1)?;
            let (hh, mm) = hh_mm.split_once(':')?;
            offset_secs(sign, number(hh, 2)?, number(mm, 2)?)?
        }
    };
    civil.to_time(offset)
}

/// A broken-down UTC time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
}

impl Civil {
    fn from_time(time: SystemTime) -> Civil {
        let (secs, nanos) = unix_parts(time);
        let days = secs.div_euclid(SECS_PER_DAY);
        let in_day = secs.rem_euclid(SECS_PER_DAY) as u32;
        // civil_from_days: eras of 400 years starting on 1 March 0000.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Civil {
            year,
            month,
            day,
            hour: in_day / 3600,
            minute: in_day / 60 % 60,
            second: in_day % 60,
            nanos,
        }
    }

    /// The instant this local time names, given the zone's offset east of
    /// UTC in seconds. `None` for impossible fields or an unrepresentable
    /// instant.
    fn to_time(self, offset_secs: i64) -> Option<SystemTime> {
        let valid = (1..=12).contains(&self.month)
            && (1..=days_in_month(self.year, self.month)).contains(&self.day)
            && self.hour < 24
            && self.minute < 60
            // 60 is a leap second; it lands on the next second, as in POSIX.
            && self.second <= 60;
        if !valid {
            return None;
        }
        // days_from_civil, the inverse of the above.
        let y = self.year - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        let secs = days * SECS_PER_DAY
            + i64::from(self.hour * 3600 + self.minute * 60 + self.second)
            - offset_secs;
        from_unix_parts(secs, self.nanos)
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Whole seconds since the epoch (rounded down, also before 1970) and the
/// nanoseconds past them.
fn unix_parts(time: SystemTime) -> (i64, u32) {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => (
            i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            after.subsec_nanos(),
        ),
        Err(before) => {
            let before = before.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            match before.subsec_nanos() {
                0 => (-secs, 0),
                n => (-secs - 1, NANOS_PER_SEC - n),
            }
        }
    }
}

fn from_unix_parts(secs: i64, nanos: u32) -> Option<SystemTime> {
    let whole = if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs.unsigned_abs()))?
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))?
    };
    whole.checked_add(Duration::from_nanos(u64::from(nanos)))
}

/// `+0200` / `-07:00` as seconds east of UTC.
fn offset_secs(sign: &str, hours: u32, minutes: u32) -> Option<i64> {
    if hours > 23 || minutes > 59 {
        return None;
    }
    let secs = i64::from(hours * 3600 + minutes * 60);
    match sign {
        "+" => Some(secs),
        "-" => Some(-secs),
        _ => None,
    }
}

/// A decimal field of 1 to `max_len` ASCII digits (no sign, no spaces).
fn number(s: &str, max_len: usize) -> Option<u32> {
    if s.is_empty() || s.len() > max_len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn push_2(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
}

fn push_year(out: &mut Vec<u8>, year: i64) {
    if (0..=9999).contains(&year) {
        let y = year as u32;
        push_2(out, y / 100);
        push_2(out, y % 100);
    } else {
        // Outside what the format can express; written anyway so that the
        // line stays one line. Parsing rejects it.
        out.extend_from_slice(year.to_string().as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64, nanos: u32) -> SystemTime {
        from_unix_parts(secs, nanos).unwrap()
    }

    fn clf(time: SystemTime) -> String {
        let mut out = Vec::new();
        write_clf(&mut out, time);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn apache_documentation_example() {
        // The example of Apache's log format documentation, 13:55:36 -0700.
        let t = parse_clf("10/Oct/2000:13:55:36 -0700").unwrap();
        assert_eq!(t, at(971_211_336, 0));
        assert_eq!(clf(t), "10/Oct/2000:20:55:36 +0000");
        assert_eq!(
            Rfc3339Millis(at(971_211_336, 123_999_999)).to_string(),
            "2000-10-10T20:55:36.123Z"
        );
    }

    #[test]
    fn epoch_leap_days_and_times_before_1970() {
        assert_eq!(clf(UNIX_EPOCH), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(clf(at(951_782_400, 0)), "29/Feb/2000:00:00:00 +0000");
        assert_eq!(clf(at(-1, 500)), "31/Dec/1969:23:59:59 +0000");
        assert_eq!(
            Rfc3339Millis(at(-1, 500_000_000)).to_string(),
            "1969-12-31T23:59:59.500Z"
        );
        assert_eq!(parse_clf("31/Dec/1969:23:59:59 +0000"), Some(at(-1, 0)));
    }

    #[test]
    fn rfc3339_offsets_and_fractions() {
        let t = at(971_211_336, 0);
        assert_eq!(parse_rfc3339("2000-10-10T20:55:36Z"), Some(t));
        assert_eq!(parse_rfc3339("2000-10-10T13:55:36-07:00"), Some(t));
        assert_eq!(parse_rfc3339("2000-10-10 20:55:36.000z"), Some(t));
        assert_eq!(
            parse_rfc3339("2000-10-10T20:55:36.1234567891Z"),
            Some(at(971_211_336, 123_456_789))
        );
    }

    #[test]
    fn impossible_times_are_rejected() {
        for bad in [
            "31/Feb/2001:00:00:00 +0000",
            "10/Okt/2000:13:55:36 +0000",
            "10/Oct/2000:24:00:00 +0000",
            "10/Oct/2000:13:55:36",
            "10/Oct/2000:13:55:36 0000",
            "10/Oct/2000:13:55:36:00 +0000",
            "10/Oct/+200:13:55:36 +0000",
            // Four bytes of offset that are two characters, cut inside one.
            "10/Oct/2000:13:55:36 +\u{1fdd}0",
            "10/Oct/2000:13:55:36 +0\u{1fdd}",
        ] {
            assert_eq!(parse_clf(bad), None, "{bad}");
        }
        for bad in [
            "2000-10-10T20:55:36",
            "2000-10-10T20:55:36.Z",
            "2000-13-10T20:55:36Z",
            "2000-10-10X20:55:36Z",
            "2000-10-10T20:55:36+25:00",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_day_of_four_centuries_survives_a_round_trip() {
        // 1900..2300 covers the 100- and 400-year leap rules both ways.
        let first = -2_208_988_800; // 1900-01-01
        for day in 0..146_097 {
            let t = at(first + day * SECS_PER_DAY + 45_296, 0);
            assert_eq!(parse_clf(&clf(t)), Some(t));
            assert_eq!(parse_rfc3339(&Rfc3339Millis(t).to_string()), Some(t));
        }
    }
}
