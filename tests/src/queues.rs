//! Fresh SQS queues in the emulator (moto) for one test, and reading what landed in them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::{Message, MessageSystemAttributeName, QueueAttributeName};
use serde_json::{Value, json};

/// A tool queue and its dead-letter queue, wired with a redrive policy as in template.yaml.
pub struct ToolQueues {
    pub client: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub dlq_url: String,
}

fn sqs_panic(what: &str, e: impl std::error::Error) -> ! {
    panic!(
        "{what}: {}\n{}",
        aws_sdk_sqs::error::DisplayErrorContext(e),
        crate::HOW_TO_START
    )
}

impl ToolQueues {
    /// Creates both queues under unique names; after `max_receive_count` receives without
    /// deletion a message moves to the DLQ.
    pub async fn create(prefix: &str, max_receive_count: u32) -> Self {
        let client = crate::sqs().await;
        let create = |name: String, attributes: HashMap<QueueAttributeName, String>| {
            let client = client.clone();
            async move {
                client
                    .create_queue()
                    .queue_name(&name)
                    .set_attributes(Some(attributes))
                    .send()
                    .await
                    .unwrap_or_else(|e| sqs_panic(&format!("creating queue {name}"), e))
                    .queue_url
                    .unwrap_or_else(|| panic!("queue {name} has no URL"))
            }
        };
        let dlq_url = create(crate::unique(&format!("{prefix}-dlq")), HashMap::new()).await;
        let dlq_arn = client
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap_or_else(|e| sqs_panic("reading the DLQ's ARN", e))
            .attributes
            .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
            .unwrap_or_else(|| panic!("DLQ without an ARN"));
        let redrive = format!(
            r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{max_receive_count}"}}"#
        );
        let queue_url = create(
            crate::unique(prefix),
            HashMap::from([
                (QueueAttributeName::RedrivePolicy, redrive),
                (QueueAttributeName::VisibilityTimeout, "30".to_owned()),
            ]),
        )
        .await;
        Self {
            client,
            queue_url,
            dlq_url,
        }
    }

    /// Receives from the tool queue until `count` messages arrived or `within` passed.
    pub async fn receive(&self, count: usize, within: Duration) -> Vec<Message> {
        receive(&self.client, &self.queue_url, count, within).await
    }

    /// Receives from the DLQ until `count` messages arrived or `within` passed.
    pub async fn dead_letters(&self, count: usize, within: Duration) -> Vec<Message> {
        receive(&self.client, &self.dlq_url, count, within).await
    }

    /// Sends a raw body to the tool queue (e.g. a poison message).
    pub async fn send_raw(&self, body: &str) {
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .send()
            .await
            .unwrap_or_else(|e| sqs_panic("sending a message", e));
    }

    /// Makes a received message visible again at once, as after a reported batch failure
    /// once its visibility timeout ends.
    pub async fn release(&self, message: &Message) {
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .visibility_timeout(0)
            .send()
            .await
            .unwrap_or_else(|e| sqs_panic("changing visibility", e));
    }
}

async fn receive(
    client: &aws_sdk_sqs::Client,
    url: &str,
    count: usize,
    within: Duration,
) -> Vec<Message> {
    let end = Instant::now() + within;
    let mut out = Vec::new();
    while out.len() < count && Instant::now() < end {
        let wanted = i32::try_from((count - out.len()).min(10)).unwrap_or(10);
        let got = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(wanted)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .unwrap_or_else(|e| sqs_panic("receiving", e));
        out.extend(got.messages.unwrap_or_default());
    }
    out
}

/// The Lambda event the SQS event source mapping would send for `messages` (JSON, to be
/// deserialised into `aws_lambda_events`' `SqsEvent` or posted to a function).
pub fn lambda_event(messages: &[Message], queue_arn: &str) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "md5OfBody": m.md5_of_body(),
                "attributes": m.attributes().map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), json!(v)))
                        .collect::<serde_json::Map<_, _>>()
                }),
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    json!({ "Records": records })
}
