//! Feeds the tool queue to the tool-worker under `cargo lambda watch`, as the SQS event source
//! mapping does in AWS: receive up to 5 messages, invoke the function with them as one SQS
//! event, delete the ones the batch response does not name as failed. Failed ones become
//! visible again after the queue's visibility timeout, so the redrive policy applies as in AWS.

use std::time::Duration;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use serde_json::Value;
use test_support::queues::lambda_event;

pub struct Bridge {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    /// The Lambda Invoke API of the watched worker, e.g.
    /// `http://127.0.0.1:9000/2015-03-31/functions/tool-worker/invocations`.
    pub invoke_url: String,
    pub http: reqwest::Client,
}

impl Bridge {
    /// Runs until the process ends; problems are logged and retried after a pause.
    pub async fn run(&self) {
        loop {
            if let Err(e) = self.once().await {
                eprintln!("[sqs-bridge] {e}; retrying in 2 s");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }

    /// One receive → invoke → delete round; returns how many messages it handled.
    pub async fn once(&self) -> Result<usize, String> {
        let received = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(5)
            .wait_time_seconds(2)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .map_err(|e| format!("receiving: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
        let messages = received.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(0);
        }
        let event = lambda_event(&messages, "arn:aws:sqs:us-east-1:000000000000:ToolQueue");
        let response = self
            .http
            .post(&self.invoke_url)
            .json(&event)
            .send()
            .await
            .map_err(|e| format!("invoking the worker: {e}"))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("reading the worker's answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("the worker answered {status}: {body}"));
        }
        let failed: Vec<&str> = body["batchItemFailures"]
            .as_array()
            .map(|f| {
                f.iter()
                    .filter_map(|x| x["itemIdentifier"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        for message in &messages {
            let id = message.message_id().unwrap_or_default();
            if failed.contains(&id) {
                eprintln!("[sqs-bridge] job {id} failed; SQS will deliver it again");
                continue;
            }
            self.sqs
                .delete_message()
                .queue_url(&self.queue_url)
                .receipt_handle(message.receipt_handle().unwrap_or_default())
                .send()
                .await
                .map_err(|e| format!("deleting: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
        }
        eprintln!(
            "[sqs-bridge] handed {} job(s) to the tool-worker, {} failed",
            messages.len(),
            failed.len()
        );
        Ok(messages.len())
    }
}
