//! When to act: renewal at ⅔ of a certificate's lifetime (or in ARI's
//! suggested window), and the backoff after an error. Pure.

use std::time::{Duration, SystemTime};

/// The first retry after an error; each next waits [`FACTOR`] times longer.
/// Let's Encrypt allows 5 failed validations per name and hour: 10 s,
/// 30 s, 90 s, 270 s, 810 s stays within it.
pub(crate) const FIRST_RETRY: Duration = Duration::from_secs(10);
/// How much longer each retry waits than the one before.
const FACTOR: u32 = 3;
/// The longest wait between retries.
pub(crate) const MAX_RETRY: Duration = Duration::from_secs(6 * 3600);

/// When a certificate valid from `not_before` to `not_after` is renewed:
/// once ⅔ of its lifetime has passed (30 days before the end of a 90-day
/// certificate, as certbot does).
pub(crate) fn renew_at(not_before: SystemTime, not_after: SystemTime) -> SystemTime {
    let life = not_after
        .duration_since(not_before)
        .unwrap_or(Duration::ZERO);
    not_before + life * 2 / 3
}

/// The middle of ARI's suggested window `start..end` (RFC 9773 asks for a
/// point chosen in it; the middle leaves room for retries before its end).
pub(crate) fn in_window(start: SystemTime, end: SystemTime) -> SystemTime {
    start + end.duration_since(start).unwrap_or(Duration::ZERO) / 2
}

/// The waits between failed attempts: [`FIRST_RETRY`], growing by
/// [`FACTOR`] up to [`MAX_RETRY`], back to the first after a success.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The wait before the next attempt, after one more failure.
    pub(crate) fn next(&mut self) -> Duration {
        let wait = FACTOR
            .checked_pow(self.failures)
            .and_then(|f| FIRST_RETRY.checked_mul(f))
            .map_or(MAX_RETRY, |w| w.min(MAX_RETRY));
        self.failures = self.failures.saturating_add(1);
        wait
    }

    /// A success: the next failure waits [`FIRST_RETRY`] again.
    pub(crate) fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_comes_at_two_thirds_of_the_lifetime() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let end = start + Duration::from_secs(90 * 86400);
        assert_eq!(
            renew_at(start, end),
            start + Duration::from_secs(60 * 86400)
        );
        // A certificate that ends before it starts is renewed at once.
        assert_eq!(renew_at(end, start), end);
        assert_eq!(
            in_window(start, end),
            start + Duration::from_secs(45 * 86400)
        );
    }

    #[test]
    fn backoff_grows_to_its_cap_and_resets_after_a_success() {
        let mut b = Backoff::default();
        let waits: Vec<u64> = (0..4).map(|_| b.next().as_secs()).collect();
        assert_eq!(waits, [10, 30, 90, 270]);
        for _ in 0..100 {
            assert!(b.next() <= MAX_RETRY);
        }
        assert_eq!(b.next(), MAX_RETRY);
        b.reset();
        assert_eq!(b.next(), FIRST_RETRY);
    }
}
