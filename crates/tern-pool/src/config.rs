//! A pool's settings, their defaults, and the checks `Pool::start` runs on them.

use std::time::Duration;

use crate::Error;

/// How a pool sizes, queues, recycles and backs off. Each field documents
/// its default ([`PoolConfig::default`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Names the pool in logs and in its manager thread (`tern-pool:<name>`).
    /// Default `"pool"`. Must not contain NUL.
    pub name: String,
    /// Items kept alive even when nobody uses them; created in the
    /// background at start. Default 1 (one warm worker, as a first request
    /// should not pay for a spawn).
    pub min: usize,
    /// Items alive at once (idle, leased and starting). Default 4 (lighttpd's
    /// max-procs). At least 1, and at least `min`.
    pub max: usize,
    /// Checkouts that may wait for an item at once; one more fails with
    /// [`PoolError::Full`](crate::PoolError::Full) at once. Default 64. At
    /// least 1: a checkout that makes the pool grow waits here for its item.
    pub queue: usize,
    /// How long a checkout waits in the queue before
    /// [`PoolError::Timeout`](crate::PoolError::Timeout). Default 10 s.
    pub queue_timeout: Duration,
    /// Idle items above `min` that have been idle this long are destroyed
    /// (a few per tick, oldest first). Default 60 s (lighttpd's idle-timeout).
    pub idle_timeout: Duration,
    /// Requests an item serves before it is recycled; 0 = no limit.
    /// Default 0 (php-fpm's `pm.max_requests`).
    pub max_requests: u64,
    /// Age at which an item is recycled (when released, or on a tick while
    /// idle). Default `None`: no limit.
    pub max_age: Option<Duration>,
    /// The wait before the next creation after one failure; it doubles with
    /// each consecutive failure. Default 100 ms. Not zero.
    pub backoff_min: Duration,
    /// The longest wait between creation attempts. Default 10 s. At least
    /// `backoff_min`.
    pub backoff_max: Duration,
    /// How often the manager checks idle items (alive, idle too long, too
    /// old) and the pool's minimum. Default 1 s. Not zero.
    pub check_interval: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            name: "pool".to_owned(),
            min: 1,
            max: 4,
            queue: 64,
            queue_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_requests: 0,
            max_age: None,
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            check_interval: Duration::from_secs(1),
        }
    }
}

impl PoolConfig {
    /// Rejects settings the pool cannot honour.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        let problem = if self.name.contains('\0') {
            "name contains NUL"
        } else if self.max == 0 {
            "max is 0"
        } else if self.min > self.max {
            "min is above max"
        } else if self.queue == 0 {
            "queue is 0 (a checkout that makes the pool grow must wait for its item)"
        } else if self.backoff_min.is_zero() {
            "backoff_min is 0"
        } else if self.backoff_max < self.backoff_min {
            "backoff_max is below backoff_min"
        } else if self.check_interval.is_zero() {
            "check_interval is 0"
        } else {
            return Ok(());
        };
        Err(Error::Config {
            pool: self.name.clone(),
            problem,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        assert!(PoolConfig::default().validate().is_ok());
    }

    #[test]
    fn min_above_max_is_rejected() {
        let cfg = PoolConfig {
            min: 5,
            max: 2,
            ..PoolConfig::default()
        };
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("min is above max"), "{err}");
    }

    #[test]
    fn max_zero_queue_zero_and_inverted_backoff_are_rejected() {
        for cfg in [
            PoolConfig {
                min: 0,
                max: 0,
                ..PoolConfig::default()
            },
            PoolConfig {
                queue: 0,
                ..PoolConfig::default()
            },
            PoolConfig {
                backoff_min: Duration::from_secs(2),
                backoff_max: Duration::from_secs(1),
                ..PoolConfig::default()
            },
            PoolConfig {
                name: "a\0b".into(),
                ..PoolConfig::default()
            },
        ] {
            assert!(cfg.validate().is_err(), "{cfg:?}");
        }
    }
}
