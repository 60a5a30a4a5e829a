//! Consecutive creation failures and the growing wait they impose (the
//! crash-loop brake).

use std::time::{Duration, Instant};

/// The failure record: cleared by a request that completed cleanly.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    /// Failures since the last clean request.
    consecutive: u32,
    /// No creation starts before this.
    until: Option<Instant>,
    /// What the last failure said.
    last_error: String,
}

impl Backoff {
    /// Records a failure at `now` and returns the wait it imposes:
    /// `min`, doubling per consecutive failure, at most `max`.
    pub(crate) fn fail(
        &mut self,
        now: Instant,
        error: String,
        min: Duration,
        max: Duration,
    ) -> Duration {
        self.consecutive = self.consecutive.saturating_add(1);
        let doublings = (self.consecutive - 1).min(31);
        let delay = min.saturating_mul(1u32 << doublings).min(max);
        self.until = Some(now + delay);
        self.last_error = error;
        delay
    }

    /// A request completed cleanly: the item works.
    pub(crate) fn reset(&mut self) {
        self.consecutive = 0;
        self.until = None;
    }

    /// Whether anything failed since the last clean request.
    pub(crate) fn failing(&self) -> bool {
        self.consecutive > 0
    }

    /// The end of the current wait, if one is still running at `now`.
    pub(crate) fn blocked_until(&self, now: Instant) -> Option<Instant> {
        self.until
            .filter(|&until| self.consecutive > 0 && now < until)
    }

    pub(crate) fn consecutive(&self) -> u32 {
        self.consecutive
    }

    pub(crate) fn last_error(&self) -> &str {
        &self.last_error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(1);

    #[test]
    fn the_wait_doubles_up_to_the_ceiling() {
        let mut b = Backoff::default();
        let now = Instant::now();
        let waits: Vec<_> = (0..7)
            .map(|_| b.fail(now, "refused".into(), MIN, MAX).as_millis())
            .collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(b.consecutive(), 7);
        assert_eq!(b.last_error(), "refused");
    }

    #[test]
    fn many_failures_do_not_overflow() {
        let mut b = Backoff::default();
        let now = Instant::now();
        for _ in 0..100 {
            b.fail(now, String::new(), MIN, Duration::from_secs(3600));
        }
        assert_eq!(b.blocked_until(now), Some(now + Duration::from_secs(3600)));
    }

    #[test]
    fn a_clean_request_clears_the_wait() {
        let mut b = Backoff::default();
        let now = Instant::now();
        b.fail(now, "x".into(), MIN, MAX);
        assert!(b.failing());
        assert_eq!(b.blocked_until(now), Some(now + MIN));
        assert_eq!(b.blocked_until(now + MIN), None);
        b.reset();
        assert!(!b.failing());
        assert_eq!(b.blocked_until(now), None);
    }
}
