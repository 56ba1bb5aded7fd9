//! The scheduled fare-alert check (an EventBridge schedule invokes the worker): the due
//! alerts, each checked with the award and cash searches of its range, and the flights
//! within its limits recorded as matches (each once; see `shared::alerts`).
//!
//! Bounded: at most [`MAX_ALERTS_PER_RUN`] alerts per run, [`PARALLEL_ALERTS`] at a time,
//! each within [`ALERT_TIMEOUT`], and none started once the run's time is nearly up; what
//! is not checked stays due for the next run. A failing alert is logged and checked again
//! at its next time; it never stops the others. Logs name alerts by id only.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde::Serialize;
use shared::alerts::DueAlert;
use time::OffsetDateTime;

use crate::Deps;

/// Alerts checked per run at most.
pub const MAX_ALERTS_PER_RUN: usize = 25;
/// Alerts checked at the same time.
pub const PARALLEL_ALERTS: usize = 5;
/// Time one alert's searches may take.
pub const ALERT_TIMEOUT: Duration = Duration::from_secs(12);
/// Kept free at the end of a run for the last writes.
const RUN_RESERVE: Duration = Duration::from_secs(3);

/// What a run did, for the log and the invocation's result.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct AlertRun {
    pub due: usize,
    pub checked: usize,
    pub failed: usize,
    /// Left due: the run's time ran out before they started.
    pub skipped: usize,
    pub new_matches: usize,
}

/// One scheduled run.
pub async fn check_due(deps: &Deps) -> AlertRun {
    let started = Instant::now();
    let started_at = deps.clock.now();
    let run_deadline = started + deps.function_timeout.saturating_sub(RUN_RESERVE);
    let due = match deps.alerts.due(MAX_ALERTS_PER_RUN).await {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, "reading the due fare alerts failed; the next run tries again");
            return AlertRun {
                failed: 1,
                ..AlertRun::default()
            };
        }
    };
    // The next check lands a little before the next run, so that run finds it due.
    let slack = (deps.alert_check_interval / 10).min(Duration::from_secs(60));
    let next_check = started_at
        + time::Duration::try_from(deps.alert_check_interval - slack).unwrap_or_default();
    let mut run = AlertRun {
        due: due.len(),
        ..AlertRun::default()
    };
    let outcomes: Vec<Outcome> = futures::stream::iter(due)
        .map(|alert| check_one(deps, alert, next_check, run_deadline))
        .buffer_unordered(PARALLEL_ALERTS)
        .collect()
        .await;
    for outcome in outcomes {
        match outcome {
            Outcome::Checked(new) => {
                run.checked += 1;
                run.new_matches += new;
            }
            Outcome::Failed => run.failed += 1,
            Outcome::Skipped => run.skipped += 1,
        }
    }
    tracing::info!(
        due = run.due,
        checked = run.checked,
        failed = run.failed,
        skipped = run.skipped,
        new_matches = run.new_matches,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "fare alerts checked"
    );
    run
}

enum Outcome {
    Checked(usize),
    Failed,
    Skipped,
}

async fn check_one(
    deps: &Deps,
    due: DueAlert,
    next_check: OffsetDateTime,
    run_deadline: Instant,
) -> Outcome {
    let alert_id = due.alert.id.as_str();
    let now = Instant::now();
    if now + ALERT_TIMEOUT > run_deadline {
        tracing::info!(alert_id, "no time left in this run; the alert stays due");
        return Outcome::Skipped;
    }
    let deadline = now + ALERT_TIMEOUT;
    let today = deps.clock.now().date();
    // A range that is over needs no further checks.
    let next = (due.alert.date_to >= today).then_some(next_check);
    let searched = tokio::time::timeout(
        ALERT_TIMEOUT,
        deps.fares.check(&due.owner, &due.alert, today, deadline),
    )
    .await;
    let matches = match searched {
        Ok(Ok(matches)) => matches,
        Ok(Err(e)) => {
            tracing::warn!(alert_id, error = %e, "fare alert check failed; checked again at its next time");
            move_on(deps, &due, next).await;
            return Outcome::Failed;
        }
        Err(_) => {
            tracing::warn!(
                alert_id,
                timeout_secs = ALERT_TIMEOUT.as_secs(),
                "fare alert check timed out; checked again at its next time"
            );
            move_on(deps, &due, next).await;
            return Outcome::Failed;
        }
    };
    let found = matches.len();
    match deps.alerts.record_matches(&due, &matches, next).await {
        Ok(new) => {
            tracing::info!(alert_id, found, new, "fare alert checked");
            Outcome::Checked(new)
        }
        Err(e) => {
            tracing::error!(alert_id, error = %e, "recording a fare alert's matches failed; it stays due");
            Outcome::Failed
        }
    }
}

/// A failed check still moves the alert on, so one that always fails does not take a
/// place in every run.
async fn move_on(deps: &Deps, due: &DueAlert, next: Option<OffsetDateTime>) {
    if let Err(e) = deps.alerts.record_matches(due, &[], next).await {
        tracing::error!(alert_id = %due.alert.id, error = %e, "moving a fare alert's next check failed; it stays due");
    }
}
