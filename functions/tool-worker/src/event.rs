//! What invokes the worker: the tool queue's event source mapping (an SQS batch) or the
//! fare-alert schedule (an EventBridge scheduled event). Both arrive as JSON; the shape
//! says which.

use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::{Value, json};
use shared::{Error, Result};

use crate::Deps;

/// An invocation, by its shape.
#[derive(Debug)]
pub enum WorkerEvent {
    /// `{"Records": [...]}` from the tool queue.
    Queue(SqsEvent),
    /// `{"source": "aws.events", "detail-type": "Scheduled Event", ...}` from the schedule.
    Schedule,
}

impl WorkerEvent {
    pub fn parse(event: Value) -> Result<Self> {
        if event.get("Records").is_some() {
            return serde_json::from_value(event)
                .map(Self::Queue)
                .map_err(|e| Error::Invalid(format!("SQS event: {e}")));
        }
        let scheduled = event.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event")
            || event.get("source").and_then(Value::as_str) == Some("aws.events");
        if scheduled {
            return Ok(Self::Schedule);
        }
        Err(Error::Invalid(
            "neither an SQS batch nor a scheduled event".into(),
        ))
    }
}

/// Runs one invocation; the result is what Lambda returns (the batch response, or the
/// alert run's counts).
pub async fn handle_event(deps: &Deps, event: Value) -> Result<Value> {
    match WorkerEvent::parse(event)? {
        WorkerEvent::Queue(batch) => Ok(json!(crate::handler::handle(deps, batch).await)),
        WorkerEvent::Schedule => {
            let report = crate::alerts::check_due(deps).await;
            // The checks' spans (their flight searches) go out before the invocation ends.
            shared::telemetry::flush().await;
            Ok(json!(report))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_says_what_invoked_the_worker() {
        let scheduled = json!({
            "version": "0", "id": "e1", "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "123456789012", "time": "2027-01-01T00:00:00Z", "region": "eu-central-1",
            "resources": ["arn:aws:events:eu-central-1:123456789012:rule/alerts"], "detail": {}
        });
        assert!(matches!(
            WorkerEvent::parse(scheduled),
            Ok(WorkerEvent::Schedule)
        ));
        let batch = json!({"Records": []});
        assert!(matches!(
            WorkerEvent::parse(batch),
            Ok(WorkerEvent::Queue(_))
        ));
        assert!(WorkerEvent::parse(json!({"hello": 1})).is_err());
    }
}
