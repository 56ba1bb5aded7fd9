//! The Lambda runtime loop, entered again when a request to the Runtime API fails.
//!
//! lambda_runtime's sequential loop returns when a request to the Runtime API fails at the
//! transport level (its concurrent loop retries the poll instead). Lambda would then start
//! a new sandbox, but `cargo lambda watch` does not restart the process: a poll that meets
//! a connection the emulator just closed (seen after streamed responses) left the local
//! stack answering nothing at all. So every function polls again, a few times, before it
//! gives up and exits; handler errors never get here (they are reported per invocation).

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// Failures in a row after which the function exits (and Lambda starts a new sandbox).
pub const MAX_FAILURES_IN_A_ROW: u32 = 5;
/// A loop that ran at least this long before failing starts a new count.
const HEALTHY_RUN: Duration = Duration::from_secs(10);

/// Runs the loop `start` returns until it ends without error, or fails
/// [`MAX_FAILURES_IN_A_ROW`] times in a row, each shortly after the one before.
pub async fn keep_running<F, Fut, E>(mut start: F) -> Result<(), E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        let Err(error) = start().await else {
            return Ok(());
        };
        if started.elapsed() >= HEALTHY_RUN {
            failures = 0;
        }
        failures += 1;
        if failures >= MAX_FAILURES_IN_A_ROW {
            tracing::error!(%error, failures, "Lambda Runtime API keeps failing; exiting");
            return Err(error);
        }
        // The error is the runtime client's (the local Runtime API), not upstream text.
        tracing::warn!(%error, failures, "Lambda Runtime API request failed; polling again");
        tokio::time::sleep(Duration::from_millis(20 * u64::from(failures))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_until_the_loop_ends() {
        let runs = Cell::new(0);
        let result = keep_running(|| {
            runs.set(runs.get() + 1);
            let n = runs.get();
            async move {
                if n < 3 {
                    Err("connection closed")
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert_eq!(result, Ok(()));
        assert_eq!(runs.get(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_that_keeps_failing_is_given_up() {
        let runs = Cell::new(0);
        let result = keep_running(|| {
            runs.set(runs.get() + 1);
            async { Err::<(), _>("refused") }
        })
        .await;
        assert_eq!(result, Err("refused"));
        assert_eq!(runs.get(), MAX_FAILURES_IN_A_ROW);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_after_a_healthy_run_starts_a_new_count() {
        let runs = Cell::new(0);
        let result = keep_running(|| {
            runs.set(runs.get() + 1);
            let n = runs.get();
            async move {
                // Every third run serves a while before its connection fails.
                if u32::is_multiple_of(n, 3) {
                    tokio::time::sleep(HEALTHY_RUN).await;
                }
                if n < 3 * MAX_FAILURES_IN_A_ROW {
                    Err("closed")
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert_eq!(result, Ok(()));
    }
}
