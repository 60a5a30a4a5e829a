//! Durations (`"10s"`, `"250ms"`, `"2m"`) and sizes (`"16k"`, `"1MiB"`,
//! `1048576`) as they are written in the configuration.

use std::time::Duration;

/// Parses a duration: an integer (seconds) or a number with a unit
/// (`ms`, `s`, `m`, `h`).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (try \"10s\", \"250ms\", \"2m\")"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        u => return Err(format!("unknown duration unit `{u}` (use ms, s, m or h)")),
    };
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("`{s}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a size in bytes: an integer, or a number with a unit (`k`/`KiB`,
/// `m`/`MiB`, `g`/`GiB`; powers of 1024, as nginx reads them).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (try \"16k\", \"1m\", 4096)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        u => return Err(format!("unknown size unit `{u}` (use k, m or g)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 fortnights").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("16k").unwrap(), 16384);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert!(parse_size("1.5m").is_err());
        assert!(parse_size("99999999999999999g").is_err());
    }
}
