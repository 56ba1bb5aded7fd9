//! The tests' "now", and dates derived from it. Every date a test depends on comes from
//! here, so no test expires on a calendar date.
//!
//! `TEST_CLOCK_OFFSET_DAYS` (default 0) moves this "now" by whole days. The same offset goes
//! into the clock the tests inject where "today" is decided (the router rig's agent:
//! `shared::clock::OffsetClock::new(test_support::clock::offset())`; the worker's alert
//! check), so a run with `TEST_CLOCK_OFFSET_DAYS=800` is the suite as it runs two years
//! from now: a test that still uses a fixed date meets the past-date checks and fails.
//! `make test` runs the date-sensitive suites that way (infra/local/test.sh). The stores
//! keep the system clock. Production code never reads the variable.

use time::{Date, Duration, OffsetDateTime};

/// The variable that moves the tests' clock, in whole days (negative: back).
pub const OFFSET_VAR: &str = "TEST_CLOCK_OFFSET_DAYS";

/// How far this run's clock is moved from the system's; panics on a value that is not a
/// whole number of days, so a typo cannot quietly run the suite unshifted.
pub fn offset() -> Duration {
    match std::env::var(OFFSET_VAR) {
        Ok(days) if !days.trim().is_empty() => Duration::days(
            days.trim()
                .parse()
                .unwrap_or_else(|e| panic!("{OFFSET_VAR}={days}: not a whole number of days: {e}")),
        ),
        _ => Duration::ZERO,
    }
}

/// The tests' "now": the system's, moved by [`offset`].
pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc() + offset()
}

/// The tests' UTC date.
pub fn today() -> Date {
    now().date()
}

/// The date `days` after [`today`] (before, if negative).
pub fn date_in(days: i64) -> Date {
    today() + Duration::days(days)
}
