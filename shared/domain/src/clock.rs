//! Time source of the stores. Lease expiry, dedupe windows and rate-limit windows are
//! decided by the caller's clock (conditions compare against a value we send), so tests can
//! move time instead of sleeping.

use std::sync::Mutex;

use time::{Duration, OffsetDateTime};

/// Where the stores and the runtime read the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> OffsetDateTime;
}

/// The real time: the system clock, in UTC.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// The system clock moved by a fixed offset: a run of the tests as if on another day
/// (`test_support::clock`, `TEST_CLOCK_OFFSET_DAYS`).
#[derive(Debug, Default, Clone, Copy)]
pub struct OffsetClock(Duration);

impl OffsetClock {
    /// A clock `offset` ahead of the system clock (behind, if negative).
    pub fn new(offset: Duration) -> Self {
        Self(offset)
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc() + self.0
    }
}

/// A clock that stands still until moved; for tests of expiry.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: OffsetDateTime) -> Self {
        Self(Mutex::new(start))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
