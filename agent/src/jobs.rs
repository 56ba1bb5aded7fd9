//! Tool jobs on the SQS tool queue: retries of tool calls that failed for a passing reason,
//! and tool calls an agent profile runs in the background. The tool-worker consumes them.
//!
//! A job names a ledger record and the attempt it should run; the ledger already holds that
//! attempt as `queued` when the job is sent. Everything else (tool, canonical request, owner)
//! is read from the ledger, so a message carries no user data and cannot disagree with it.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::types::MessageAttributeValue;
use serde::{Deserialize, Serialize};

pub use agent_tools::{DEFAULT_RETRY_BASE_SECS, MAX_DELAY, RetrySchedule};
use shared::domain::flight::Locale;
use shared::{Error, Result};

/// Why a job exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A new attempt of a call whose previous attempt failed with a retryable error.
    Retry,
    /// A call of a tool its agent profile runs in the background.
    Background,
}

/// The body of a tool-queue message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolJob {
    /// Message format version; a worker refuses versions it does not know.
    pub v: u32,
    /// Why the job was sent: a retry or a background call.
    pub kind: JobKind,
    /// The user the call is for (the chat's owner): the worker reads the record as theirs
    /// and runs the tool for them.
    pub owner_id: String,
    /// The chat the call was made in.
    pub chat_id: String,
    /// The call's id in the ledger (`job_id` in the turn's events).
    pub call_id: String,
    /// The queued attempt this job runs.
    pub attempt: u32,
    /// Language of texts the tool writes itself.
    pub locale: Locale,
}

impl ToolJob {
    /// The message format version this code writes and accepts (`v`).
    pub const VERSION: u32 = 1;

    /// Parses a message body; the error says what is wrong (for logs and the DLQ).
    pub fn parse(body: &str) -> Result<Self> {
        let job: Self = serde_json::from_str(body)
            .map_err(|e| Error::Invalid(format!("not a tool job: {e}")))?;
        if job.v != Self::VERSION {
            return Err(Error::Invalid(format!(
                "tool job version {} is not supported (expected {})",
                job.v,
                Self::VERSION
            )));
        }
        if job.attempt == 0 || job.chat_id.is_empty() || job.call_id.is_empty() {
            return Err(Error::Invalid(
                "tool job needs a chat id, a call id and an attempt ≥ 1".into(),
            ));
        }
        Ok(job)
    }
}

/// Where jobs go.
#[async_trait]
pub trait JobQueue: Send + Sync {
    /// Sends `job`, visible to workers after `delay`.
    async fn send(&self, job: &ToolJob, delay: Duration) -> Result<()>;
}

/// [`JobQueue`] on SQS: sends jobs to the tool queue (failed ones are parked by [`DeadLetters`]).
#[derive(Clone)]
pub struct SqsJobQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsJobQueue {
    /// The queue at `queue_url` (the tool queue's URL).
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

fn sqs_error<E: std::error::Error>(op: &'static str, e: E) -> Error {
    Error::Upstream {
        service: "sqs",
        message: format!("{op}: {}", aws_sdk_sqs::error::DisplayErrorContext(e)),
    }
}

#[async_trait]
impl JobQueue for SqsJobQueue {
    async fn send(&self, job: &ToolJob, delay: Duration) -> Result<()> {
        let body = serde_json::to_string(job)?;
        let delay = i32::try_from(delay.min(MAX_DELAY).as_secs()).unwrap_or(900);
        let mut message = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay);
        // The trace context, so the worker's spans join the turn's trace.
        for (name, value) in shared::telemetry::headers_of(&tracing::Span::current()) {
            let value = MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value)
                .build()
                .map_err(|e| sqs_error("MessageAttributeValue", e))?;
            message = message.message_attributes(name, value);
        }
        message
            .send()
            .await
            .map_err(|e| sqs_error("SendMessage", e))?;
        Ok(())
    }
}

/// The dead-letter queue: messages the worker gives up on, with the reason as an attribute.
#[derive(Clone)]
pub struct DeadLetters {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl DeadLetters {
    /// The dead-letter queue at `queue_url`.
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// Parks `body` (the original message body, unchanged) with why it was given up.
    pub async fn park(&self, body: &str, reason: &str) -> Result<()> {
        let attribute = |value: &str| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value)
                .build()
                .map_err(|e| sqs_error("MessageAttributeValue", e))
        };
        let reason: String = reason.chars().take(512).collect();
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .message_attributes("reason", attribute(&reason)?)
            .send()
            .await
            .map_err(|e| sqs_error("SendMessage", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> ToolJob {
        ToolJob {
            v: 1,
            kind: JobKind::Retry,
            owner_id: "u".into(),
            chat_id: "c".into(),
            call_id: "k".into(),
            attempt: 2,
            locale: Locale::En,
        }
    }

    #[test]
    fn jobs_round_trip_and_bad_ones_are_refused() {
        let body = serde_json::to_string(&job()).unwrap_or_default();
        assert_eq!(ToolJob::parse(&body).ok(), Some(job()));
        for bad in [
            "",
            "not json",
            r#"{"v":1}"#,
            &body.replace("\"v\":1", "\"v\":9"),
            &body.replace("\"attempt\":2", "\"attempt\":0"),
            &body.replace('}', ",\"extra\":true}"),
        ] {
            assert!(ToolJob::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let schedule = RetrySchedule {
            max_attempts: 3,
            base_delay: Duration::from_secs(5),
        };
        assert_eq!(schedule.delay_after(1), Duration::from_secs(5));
        assert_eq!(schedule.delay_after(2), Duration::from_secs(10));
        assert_eq!(schedule.delay_after(3), Duration::from_secs(20));
        assert_eq!(schedule.delay_after(40), MAX_DELAY);
        assert!(schedule.allows_retry_after(2));
        assert!(!schedule.allows_retry_after(3));
    }
}
