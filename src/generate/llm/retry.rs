//! When to try a model call again: exponential backoff with full jitter, `Retry-After`, and a
//! circuit breaker that stops calling a service that keeps failing.
//!
//! Pure logic with the clock passed in, so it is tested without sleeping.

use std::time::{Duration, Instant};

/// Exponential backoff with full jitter: attempt `n` (0-based) waits a uniformly random time in
/// `[0, min(cap, base × 2ⁿ)]`, which spreads the retries of many clients apart.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    state: u64,
}

impl Backoff {
    /// A backoff starting at `base`, never waiting more than `cap`; `seed` makes it repeatable.
    pub fn new(base: Duration, cap: Duration, seed: u64) -> Self {
        Backoff {
            base,
            cap,
            // xorshift must not start at zero.
            state: seed | 1,
        }
    }

    /// A backoff seeded from the clock and the process id.
    pub fn from_clock(base: Duration, cap: Duration) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Backoff::new(base, cap, nanos ^ (u64::from(std::process::id()) << 32))
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: plenty for jitter.
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The wait before retry number `attempt` (0 for the first retry).
    pub fn delay(&mut self, attempt: u32) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .min(self.cap);
        let nanos = ceiling.as_nanos().min(u128::from(u64::MAX)) as u64;
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.next_random() % (nanos + 1))
    }
}

/// Reads an HTTP `Retry-After` value: delay seconds, or an HTTP date (relative to `now`, a Unix
/// timestamp in seconds). Dates in the past mean "now"; nonsense means `None`.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::generate::llm::retry::retry_after;
/// assert_eq!(retry_after("7", 0), Some(Duration::from_secs(7)));
/// let now = 1_445_412_470; // 2015-10-21T07:27:50Z
/// assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(retry_after("soon", now), None);
/// ```
pub fn retry_after(value: &str, now_unix: i64) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>()
        && seconds.is_finite()
        && seconds >= 0.0
    {
        return Some(Duration::from_secs_f64(seconds.min(86_400.0)));
    }
    let at = jiff::fmt::rfc2822::parse(value)
        .ok()?
        .timestamp()
        .as_second();
    Some(Duration::from_secs(
        at.saturating_sub(now_unix).max(0) as u64
    ))
}

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls are refused until the instant given.
    Open {
        /// When one trial call will be allowed.
        until: Instant,
    },
    /// One trial call is allowed; its outcome closes or reopens the breaker.
    HalfOpen,
}

/// A circuit breaker: after `threshold` consecutive failed calls (each already retried), the
/// service is left alone for `cooldown`, then one trial call decides.
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    threshold: u32,
    cooldown: Duration,
    failures: u32,
    state: BreakerState,
}

impl CircuitBreaker {
    /// A closed breaker.
    pub fn new(threshold: u32, cooldown: Duration) -> Self {
        CircuitBreaker {
            threshold: threshold.max(1),
            cooldown,
            failures: 0,
            state: BreakerState::Closed,
        }
    }

    /// Whether a call may be made at `now`; `Err(until)` when the breaker is open.
    pub fn allow(&mut self, now: Instant) -> Result<(), Instant> {
        match self.state {
            BreakerState::Closed | BreakerState::HalfOpen => Ok(()),
            BreakerState::Open { until } if now >= until => {
                self.state = BreakerState::HalfOpen;
                Ok(())
            }
            BreakerState::Open { until } => Err(until),
        }
    }

    /// Records a successful call.
    pub fn success(&mut self) {
        self.failures = 0;
        self.state = BreakerState::Closed;
    }

    /// Records a failed call at `now`.
    pub fn failure(&mut self, now: Instant) {
        self.failures = self.failures.saturating_add(1);
        if self.state == BreakerState::HalfOpen || self.failures >= self.threshold {
            self.state = BreakerState::Open {
                until: now + self.cooldown,
            };
        }
    }

    /// The current state.
    pub fn state(&self) -> BreakerState {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_stays_under_its_ceiling_and_jitters() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(5), 42);
        for attempt in 0..40 {
            let ceiling = Duration::from_millis(100)
                .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
                .min(Duration::from_secs(5));
            for _ in 0..20 {
                assert!(b.delay(attempt) <= ceiling, "attempt {attempt}");
            }
        }
        // Jitter: ten draws at the same attempt are not all equal.
        let draws: std::collections::BTreeSet<_> = (0..10).map(|_| b.delay(6)).collect();
        assert!(draws.len() > 5, "{draws:?}");
        // The same seed repeats itself.
        let mut x = Backoff::new(Duration::from_millis(100), Duration::from_secs(5), 7);
        let mut y = Backoff::new(Duration::from_millis(100), Duration::from_secs(5), 7);
        assert_eq!(x.delay(3), y.delay(3));
        assert_eq!(
            Backoff::new(Duration::ZERO, Duration::ZERO, 1).delay(9),
            Duration::ZERO
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after(" 12 ", 0), Some(Duration::from_secs(12)));
        assert_eq!(retry_after("1.5", 0), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after("-3", 0), None);
        let now = 1_445_412_470;
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(retry_after("", now), None);
        assert_eq!(retry_after("NaN", now), None);
    }

    #[test]
    fn breaker_opens_after_the_threshold_and_half_opens_after_the_cooldown() {
        let t0 = Instant::now();
        let mut b = CircuitBreaker::new(3, Duration::from_secs(30));
        assert!(b.allow(t0).is_ok());
        b.failure(t0);
        b.failure(t0);
        assert_eq!(b.state(), BreakerState::Closed);
        b.failure(t0);
        let until = t0 + Duration::from_secs(30);
        assert_eq!(b.allow(t0 + Duration::from_secs(1)), Err(until));
        // After the cooldown one trial goes through; a failure reopens at once.
        assert!(b.allow(until).is_ok());
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.failure(until);
        assert!(b.allow(until + Duration::from_secs(1)).is_err());
        // A successful trial closes it and resets the count.
        let later = until + Duration::from_secs(31);
        assert!(b.allow(later).is_ok());
        b.success();
        assert_eq!(b.state(), BreakerState::Closed);
        b.failure(later);
        assert_eq!(b.state(), BreakerState::Closed);
    }
}
