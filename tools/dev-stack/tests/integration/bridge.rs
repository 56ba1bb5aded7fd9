//! The SQS bridge against moto and a stand-in for the watched worker's Invoke API: it hands
//! received messages over as one SQS event and deletes exactly the ones not reported failed.

use std::time::Duration;

use dev_stack::bridge::Bridge;
use serde_json::{Value, json};
use test_support::queues::ToolQueues;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

#[tokio::test]
async fn acknowledged_jobs_are_deleted_and_failed_ones_stay() {
    let queues = ToolQueues::create("bridge-test", 5).await;
    queues.send_raw(r#"{"job":"good"}"#).await;
    queues.send_raw(r#"{"job":"bad"}"#).await;
    let worker = MockServer::start().await;
    // Fails the message whose body says "bad", as a worker's batch response would.
    Mock::given(method("POST"))
        .and(path("/2015-03-31/functions/tool-worker/invocations"))
        .respond_with(|request: &Request| {
            let event: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let failures: Vec<Value> = event["Records"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r["body"].as_str().is_some_and(|b| b.contains("bad")))
                .map(|r| json!({"itemIdentifier": r["messageId"]}))
                .collect();
            ResponseTemplate::new(200).set_body_json(json!({ "batchItemFailures": failures }))
        })
        .mount(&worker)
        .await;
    let bridge = Bridge {
        sqs: queues.client.clone(),
        queue_url: queues.queue_url.clone(),
        invoke_url: format!(
            "{}/2015-03-31/functions/tool-worker/invocations",
            worker.uri()
        ),
        http: reqwest::Client::new(),
    };
    let mut handled = 0;
    for _ in 0..5 {
        handled += bridge.once().await.unwrap_or_else(|e| panic!("{e}"));
        if handled >= 2 {
            break;
        }
    }
    assert_eq!(handled, 2);
    let invocations = worker.received_requests().await.unwrap_or_default();
    let event: Value = serde_json::from_slice(&invocations[0].body).unwrap_or_default();
    assert_eq!(event["Records"][0]["eventSource"], json!("aws:sqs"));

    // The failed one comes back after its visibility timeout; the good one is gone.
    let left = queues.receive(2, Duration::from_secs(3)).await;
    assert!(left.is_empty(), "still invisible: {left:?}");
    let all = queues
        .client
        .get_queue_attributes()
        .queue_url(&queues.queue_url)
        .attribute_names(
            aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let in_flight = all
        .attributes()
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        in_flight, "1",
        "only the failed message is still in the queue"
    );
}
