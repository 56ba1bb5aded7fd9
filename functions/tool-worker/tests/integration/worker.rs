//! The tool worker end to end: chat turns through the real chat-router handler put jobs on
//! a fresh queue in moto; the messages received from there are handed to the worker's
//! handler as the Lambda event source mapping would; state is read back through the
//! router's audit API and DynamoDB Local. The knowledge-base route is a wiremock fake, so a
//! test decides when it fails and counts how often it was called.

use crate::common;

use std::time::Duration;

use crate::common::Rig;
use agent::profiles::AgentCatalog;
use agent::runtime::ToolClients;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::types::Message;
use serde_json::{Value, json};
use test_support::dynamo_faults::{DynamoFaults, Fault};
use test_support::fake_llm::Reply;
use test_support::queues::ToolQueues;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KB_ANSWER: &str = "Miles expire after 36 months without account activity.";

/// Profiles for these tests: kb inline, and kb in the background.
const AGENTS: &str = r#"
default_agent = "support"

[tools.search_knowledge_base]
timeout_secs = 5

[agents.support]
tools = ["search_knowledge_base"]
system_prompt = "Answer from the knowledge base."

[agents.background]
tools = ["search_knowledge_base"]
async_tools = ["search_knowledge_base"]
system_prompt = "Answer from the knowledge base; searches run in the background."
"#;

fn kb_hit() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "results": [{"id": "c1", "document_id": "miles-faq", "content": KB_ANSWER, "score": 0.91}],
        "mode": "hybrid"
    }))
}

/// The router (with a queue), the worker, the kb fake and the queues of one test.
struct Setup {
    rig: Rig,
    worker: tool_worker::Deps,
    kb: MockServer,
    queues: ToolQueues,
    /// What the worker emitted (EMF documents).
    metrics: shared::metrics::Metrics,
}

impl Setup {
    async fn start(max_attempts: u32) -> Self {
        Self::with_agents(max_attempts, AGENTS).await
    }

    /// As [`Setup::start`], with the router and the worker reading `agents`.
    async fn with_agents(max_attempts: u32, agents: &str) -> Self {
        let kb = MockServer::start().await;
        let queues = ToolQueues::create("worker-test", 1).await;
        let (queue_url, kb_base) = (queues.queue_url.clone(), kb.uri());
        let rig = Rig::with(
            move |vars| {
                vars.extend(
                    [
                        ("TOOL_QUEUE_URL", queue_url),
                        ("TOOL_RETRY_BASE_SECS", "0".to_owned()),
                        ("TOOL_MAX_ATTEMPTS", max_attempts.to_string()),
                    ]
                    .map(|(k, v)| (k.to_owned(), v)),
                );
                common::route_function(vars, "kb-retrieve", &kb_base);
            },
            Some(agents),
        )
        .await;
        let agents = AgentCatalog::from_toml(agents, "test agents").unwrap();
        let config = tool_worker::Config {
            tools: rig.deps.config.tools.clone(),
            dead_letter_queue_url: queues.dlq_url.clone(),
            function_timeout: std::time::Duration::from_secs(30),
            max_receive_count: tool_worker::DEFAULT_MAX_RECEIVE_COUNT,
            alert_check_interval: std::time::Duration::from_secs(3600),
        };
        let metrics = shared::metrics::Metrics::capture("tool-worker");
        let clients = ToolClients {
            dynamodb: test_support::dynamodb().await,
            sqs: test_support::sqs().await,
            secrets: common::secrets().await,
            http: common::http(),
            llm: std::sync::Arc::new(llm::Clients::new()),
            // Signed as deployed: the functions admit only IAM-authorised calls.
            signer: agent::tools::SigV4Signer::from_sdk_config(&test_support::sdk_config().await),
            metrics: metrics.clone(),
        };
        let worker = tool_worker::Deps::new(config, &agents, clients).unwrap();
        Self {
            rig,
            worker,
            kb,
            queues,
            metrics,
        }
    }

    /// The kb route answers every search with `response`.
    async fn kb_answers(&self, response: ResponseTemplate) {
        Mock::given(method("POST"))
            .and(path("/kb/search"))
            .respond_with(response)
            .mount(&self.kb)
            .await;
    }

    /// A worker like `self.worker` whose DynamoDB requests go through `faults`.
    async fn worker_with_faults(&self, faults: &DynamoFaults) -> tool_worker::Deps {
        let dynamodb = shared::aws::dynamodb_config(&test_support::sdk_config().await)
            .interceptor(faults.clone())
            .build();
        let config = tool_worker::Config {
            tools: self.rig.deps.config.tools.clone(),
            dead_letter_queue_url: self.queues.dlq_url.clone(),
            function_timeout: std::time::Duration::from_secs(30),
            max_receive_count: tool_worker::DEFAULT_MAX_RECEIVE_COUNT,
            alert_check_interval: std::time::Duration::from_secs(3600),
        };
        let clients = ToolClients {
            dynamodb: aws_sdk_dynamodb::Client::from_conf(dynamodb),
            sqs: test_support::sqs().await,
            secrets: common::secrets().await,
            http: common::http(),
            llm: std::sync::Arc::new(llm::Clients::new()),
            signer: agent::tools::SigV4Signer::from_sdk_config(&test_support::sdk_config().await),
            metrics: shared::metrics::Metrics::discard(),
        };
        let agents = AgentCatalog::from_toml(AGENTS, "test agents").unwrap();
        tool_worker::Deps::new(config, &agents, clients).unwrap()
    }

    async fn kb_calls(&self) -> usize {
        self.kb.received_requests().await.unwrap_or_default().len()
    }

    /// One chat turn in which the model searches the knowledge base and then answers.
    async fn kb_turn(&self, token: &str, agent: &str) -> common::Turn {
        self.kb_turn_in(token, agent, None).await
    }

    /// As [`Setup::kb_turn`], in an existing chat when `chat_id` is given.
    async fn kb_turn_in(&self, token: &str, agent: &str, chat_id: Option<&str>) -> common::Turn {
        self.rig.llm.push(Reply::tool_calls(vec![(
            "search_knowledge_base",
            json!({"query": "when do miles expire"}),
        )]));
        self.rig
            .llm
            .push(Reply::text("Let me get back to you on that."));
        self.rig
            .chat(
                Some(token),
                json!({"message": "When do my miles expire?", "agent": agent, "chat_id": chat_id}),
            )
            .await
    }

    /// Hands `messages` to the worker as one SQS event, then deletes the acknowledged ones
    /// from the queue as the event source mapping does.
    async fn deliver(&self, messages: &[Message]) -> SqsBatchResponse {
        let response = tool_worker::handler::handle(&self.worker, sqs_event(messages)).await;
        let failed: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        for message in messages {
            if !failed.contains(&message.message_id().unwrap_or_default()) {
                let _ = self
                    .queues
                    .client
                    .delete_message()
                    .queue_url(&self.queues.queue_url)
                    .receipt_handle(message.receipt_handle().unwrap_or_default())
                    .send()
                    .await;
            }
        }
        response
    }

    async fn record(&self, token: &str, chat_id: &str, job_id: &str) -> Value {
        let (status, record) = self
            .rig
            .get(token, &format!("/chats/{chat_id}/tool-calls/{job_id}"))
            .await;
        assert_eq!(status, 200, "{record}");
        record
    }
}

/// The Lambda event for received messages (the shape the event source mapping sends).
fn sqs_event(messages: &[Message]) -> SqsEvent {
    let event = test_support::queues::lambda_event(
        messages,
        "arn:aws:sqs:us-east-1:000000000000:tool-queue",
    );
    serde_json::from_value(event).unwrap()
}

fn failed_ids(response: &SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

fn job_id(turn: &common::Turn) -> String {
    turn.first("tool_started")["job_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn statuses(record: &Value) -> Vec<String> {
    record["attempts"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["status"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Everything the model was sent in the last request, as one text.
fn last_prompt(rig: &Rig) -> String {
    rig.llm
        .requests()
        .last()
        .map(|r| r["messages"].to_string())
        .unwrap_or_default()
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_transient_failure_is_retried_by_the_worker_and_ends_succeeded_with_two_attempts() {
    let s = Setup::start(3).await;
    // The router's own quick retries (2 tries) both meet a 503; the worker's try succeeds.
    Mock::given(method("POST"))
        .and(path("/kb/search"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&s.kb)
        .await;
    s.kb_answers(kb_hit()).await;
    let user = test_support::unique("ada");
    let token = s.rig.token(&user);
    let turn = s.kb_turn(&token, "support").await;
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("failed"), "{result}");
    assert_eq!(result["metadata"]["retry_attempt"], json!(2), "{result}");
    let (chat_id, job) = (turn.chat_id(), job_id(&turn));
    let queued = s.record(&token, &chat_id, &job).await;
    assert_eq!(
        (&queued["status"], &queued["attempt"]),
        (&json!("queued"), &json!(2))
    );

    // Asked again while the retry waits: answered at once from the ledger, no new run.
    let again = s.kb_turn_in(&token, "support", Some(&chat_id)).await;
    let duplicate = again.first("tool_result");
    assert_eq!(duplicate["status"], json!("queued"), "{duplicate}");
    assert_eq!(again.first("tool_started")["deduped"], json!(true));
    assert_eq!(job_id(&again), job);
    assert!(
        again
            .events
            .last()
            .is_some_and(|e| e.at < Duration::from_secs(2)),
        "answered at once"
    );

    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1, "one retry job");
    let response = s.deliver(&messages).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(record["status"], json!("succeeded"), "{record}");
    assert_eq!(record["attempt"], json!(2));
    assert_eq!(statuses(&record), ["succeeded", "failed"], "newest first");
    assert_eq!(s.kb_calls().await, 3);
    assert!(s.queues.receive(1, Duration::from_secs(1)).await.is_empty());
    // Metrics: the router counted the failed call and its retry, the worker the attempt.
    let router = s.rig.metrics.captured();
    assert_eq!(
        metric_values(&router, "ToolRetries"),
        [("search_knowledge_base".to_owned(), 1.0)]
    );
    assert_eq!(
        metric_values(&router, "ToolCalls").len(),
        2,
        "the call and its duplicate"
    );
    assert_eq!(
        statuses_of(&s.metrics.captured(), "WorkerAttempts"),
        ["succeeded"]
    );
    // The router's tries and the worker's are all signed (IAM) and name the chat's user.
    for request in s.kb.received_requests().await.unwrap_or_default() {
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        assert_eq!(header("x-tool-user").as_deref(), Some(user.as_str()));
        assert!(
            header("authorization").is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256 ")),
            "{:?}",
            header("authorization")
        );
    }

    // The next turn offers the result the worker produced.
    s.rig
        .llm
        .push(Reply::text("Your miles expire after 36 months."));
    s.rig
        .chat(
            Some(&token),
            json!({"message": "So?", "chat_id": chat_id, "agent": "support"}),
        )
        .await;
    let prompt = last_prompt(&s.rig);
    assert!(prompt.contains("completed in the background"), "{prompt}");
    assert!(prompt.contains(KB_ANSWER), "{prompt}");
}

#[tokio::test]
async fn a_permanent_failure_ends_in_the_dead_letter_queue_with_status_failed_and_blocks_nothing() {
    let s = Setup::start(2).await;
    s.kb_answers(ResponseTemplate::new(503)).await;
    let token = s.rig.token(&test_support::unique("bo"));
    let turn = s.kb_turn(&token, "support").await;
    let (chat_id, job) = (turn.chat_id(), job_id(&turn));
    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    let response = s.deliver(&messages).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(record["status"], json!("failed"), "{record}");
    assert_eq!(record["attempt"], json!(2), "attempts used up");
    assert_eq!(statuses(&record), ["failed", "failed"]);
    let parked = s.queues.dead_letters(1, WAIT).await;
    assert_eq!(parked.len(), 1, "parked in the DLQ");
    assert_eq!(parked[0].body(), messages[0].body(), "the original body");
    let reason = parked[0]
        .message_attributes()
        .and_then(|a| a.get("reason"))
        .and_then(|v| v.string_value())
        .unwrap_or_default();
    assert!(reason.contains("attempt 2 ended failed"), "{reason}");
    let worker = s.metrics.captured();
    assert_eq!(statuses_of(&worker, "WorkerAttempts"), ["failed"]);
    assert_eq!(metric_values(&worker, "WorkerDeadLetters").len(), 1);
    assert_eq!(statuses_of(&worker, "ToolCalls"), ["failed"]);
    assert!(
        s.queues.receive(1, Duration::from_secs(1)).await.is_empty(),
        "no third attempt"
    );

    // The parked call blocks nothing: once the upstream is back, the same search runs.
    s.kb.reset().await;
    s.kb_answers(kb_hit()).await;
    let again = s.kb_turn_in(&token, "support", Some(&chat_id)).await;
    assert_eq!(job_id(&again), job, "the same call");
    assert_eq!(again.first("tool_result")["status"], json!("succeeded"));
    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(record["status"], json!("succeeded"), "{record}");
    assert_eq!(record["attempt"], json!(3));
}

#[tokio::test]
async fn a_rejected_request_is_not_retried() {
    let s = Setup::start(3).await;
    s.kb_answers(ResponseTemplate::new(400).set_body_json(json!({"message": "query too long"})))
        .await;
    let token = s.rig.token(&test_support::unique("cy"));
    let turn = s.kb_turn(&token, "support").await;
    let record = s.record(&token, &turn.chat_id(), &job_id(&turn)).await;
    assert_eq!(
        (&record["status"], &record["attempt"]),
        (&json!("failed"), &json!(1))
    );
    assert!(s.queues.receive(1, Duration::from_secs(2)).await.is_empty());
    assert_eq!(s.kb_calls().await, 1, "a 4xx is not retried at all");
}

#[tokio::test]
async fn an_async_tool_completes_through_the_worker_and_reaches_the_next_turn() {
    let s = Setup::start(3).await;
    s.kb_answers(kb_hit()).await;
    let token = s.rig.token(&test_support::unique("dee"));
    let turn = s.kb_turn(&token, "background").await;
    let started = turn.first("tool_started");
    assert_eq!(started["status"], json!("queued"), "{started}");
    assert!(turn.all("tool_result").is_empty(), "no result in this turn");
    assert_eq!(turn.names().last(), Some(&"done"));
    assert_eq!(s.kb_calls().await, 0, "nothing ran in the turn");
    let (chat_id, job) = (turn.chat_id(), job_id(&turn));
    assert_eq!(
        s.record(&token, &chat_id, &job).await["status"],
        json!("queued")
    );
    let prompt = last_prompt(&s.rig);
    assert!(prompt.contains("runs in the background"), "{prompt}");

    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    assert!(s.deliver(&messages).await.batch_item_failures.is_empty());
    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(record["status"], json!("succeeded"), "{record}");
    assert!(
        record["response"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(KB_ANSWER)),
        "{record}"
    );

    s.rig.llm.push(Reply::text("They expire after 36 months."));
    s.rig
        .chat(
            Some(&token),
            json!({"message": "Any news?", "chat_id": chat_id, "agent": "background"}),
        )
        .await;
    let prompt = last_prompt(&s.rig);
    assert!(prompt.contains(KB_ANSWER), "{prompt}");
    assert!(!prompt.contains("still queued"), "{prompt}");
}

#[tokio::test]
async fn duplicate_deliveries_execute_once() {
    let s = Setup::start(3).await;
    s.kb_answers(kb_hit().set_delay(Duration::from_millis(300)))
        .await;
    let token = s.rig.token(&test_support::unique("eve"));
    let turn = s.kb_turn(&token, "background").await;
    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    // The same message twice in one batch (runs concurrently), then once more later.
    let twice = [messages[0].clone(), messages[0].clone()];
    let response = tool_worker::handler::handle(&s.worker, sqs_event(&twice)).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let again = s.deliver(&messages).await;
    assert!(again.batch_item_failures.is_empty(), "{again:?}");
    assert_eq!(s.kb_calls().await, 1, "executed once");
    let record = s.record(&token, &turn.chat_id(), &job_id(&turn)).await;
    assert_eq!(
        (&record["status"], &record["attempt"]),
        (&json!("succeeded"), &json!(1))
    );
}

/// A worker that claimed a job and died leaves its call `running`: a redelivery while the
/// lease holds leaves it alone; after the lease, ten concurrent redeliveries take it over
/// exactly once, under a new attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_abandoned_job_is_taken_over_once_after_its_lease() {
    let s = Setup::start(3).await;
    s.kb_answers(kb_hit().set_delay(Duration::from_millis(100)))
        .await;
    let token = s.rig.token(&test_support::unique("ivy"));
    let turn = s.kb_turn(&token, "background").await;
    let (chat_id, job) = (turn.chat_id(), job_id(&turn));
    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    // The dead worker's claim: running, with a short lease, never finished.
    s.rig
        .deps
        .ledger
        .start_queued(&chat_id, &job, 1, time::Duration::milliseconds(600))
        .await
        .unwrap();
    let early = tool_worker::handler::handle(&s.worker, sqs_event(&messages)).await;
    assert!(early.batch_item_failures.is_empty(), "{early:?}");
    assert_eq!(s.kb_calls().await, 0, "a live lease is not taken over");

    tokio::time::sleep(Duration::from_millis(700)).await;
    let copies = vec![messages[0].clone(); 10];
    let redelivered = futures::future::join_all(
        copies
            .chunks(1)
            .map(|one| tool_worker::handler::handle(&s.worker, sqs_event(one))),
    )
    .await;
    assert!(
        redelivered.iter().all(|r| r.batch_item_failures.is_empty()),
        "{redelivered:?}"
    );
    assert_eq!(
        s.kb_calls().await,
        1,
        "taken over and executed exactly once"
    );
    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(
        (&record["status"], &record["attempt"]),
        (&json!("succeeded"), &json!(2)),
        "{record}"
    );
    assert_eq!(
        statuses(&record),
        ["succeeded", "timeout"],
        "newest first; the dead attempt reads as ended"
    );
}

#[tokio::test]
async fn a_poison_message_fails_alone_and_moves_to_the_dead_letter_queue() {
    let s = Setup::start(3).await;
    s.kb_answers(kb_hit()).await;
    let token = s.rig.token(&test_support::unique("fay"));
    let turn = s.kb_turn(&token, "background").await;
    s.queues.send_raw("{\"v\":1,\"kind\":\"retry\"").await;
    let messages = s.queues.receive(2, WAIT).await;
    assert_eq!(messages.len(), 2);
    let poison = messages
        .iter()
        .find(|m| m.body().is_some_and(|b| b.ends_with("\"retry\"")))
        .unwrap();
    let response = s.deliver(&messages).await;
    assert_eq!(
        failed_ids(&response),
        [poison.message_id().unwrap_or_default().to_owned()],
        "only the poison message failed"
    );
    let record = s.record(&token, &turn.chat_id(), &job_id(&turn)).await;
    assert_eq!(record["status"], json!("succeeded"), "the good job ran");

    // Redelivered past maxReceiveCount (1 here), the queue moves it to the DLQ.
    s.queues.release(poison).await;
    assert!(s.queues.receive(1, Duration::from_secs(2)).await.is_empty());
    let parked = s.queues.dead_letters(1, WAIT).await;
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].body(), poison.body());
}

#[tokio::test]
async fn a_canceled_call_is_not_executed() {
    let s = Setup::start(3).await;
    s.kb_answers(kb_hit()).await;
    let token = s.rig.token(&test_support::unique("gil"));
    let turn = s.kb_turn(&token, "background").await;
    let (chat_id, job) = (turn.chat_id(), job_id(&turn));
    let (status, canceled) = s
        .rig
        .post(&token, &format!("/chats/{chat_id}/tool-calls/{job}/cancel"))
        .await;
    assert_eq!((status, &canceled["status"]), (200, &json!("canceled")));

    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    let response = s.deliver(&messages).await;
    assert!(response.batch_item_failures.is_empty(), "acknowledged");
    assert_eq!(s.kb_calls().await, 0, "not executed");
    assert_eq!(
        s.record(&token, &chat_id, &job).await["status"],
        json!("canceled")
    );
    assert!(
        s.queues
            .dead_letters(1, Duration::from_secs(1))
            .await
            .is_empty()
    );
}

/// `events/tool-worker/*-<n>.json`: `n` messages of the batch are reported as failed.
#[tokio::test]
async fn sample_events_report_their_failures() {
    let s = Setup::start(3).await;
    let events = test_support::sample_events("tool-worker");
    assert!(events.len() >= 2, "sample events missing for tool-worker");
    for event in events {
        let batch: SqsEvent = serde_json::from_str(&event.text)
            .unwrap_or_else(|e| panic!("{} is not an SQS event: {e}", event.name));
        let response = tool_worker::handler::handle(&s.worker, batch).await;
        assert_eq!(
            response.batch_item_failures.len(),
            usize::from(event.expected_status),
            "{}: {response:?}",
            event.name
        );
    }
    assert_eq!(s.kb_calls().await, 0);
}

/// A background search with no hits leaves `pending_gpt_query` in the session state. While
/// DynamoDB answers that write with transaction conflicts (more than the SDK and the store
/// retry), the job is not acknowledged; once they clear, its redelivery finds the call
/// succeeded, applies the stored patch, and runs nothing again.
#[tokio::test]
async fn a_patch_lost_to_write_conflicts_is_not_acknowledged_and_is_applied_on_redelivery() {
    let mut s = Setup::start(3).await;
    s.kb_answers(
        ResponseTemplate::new(200).set_body_json(json!({"results": [], "mode": "hybrid"})),
    )
    .await;
    let faults = DynamoFaults::start().await;
    faults.fail_matching(
        "UpdateItem",
        "SET session_state",
        Fault::TransactionConflict,
        10_000,
    );
    let dynamodb = shared::aws::dynamodb_config(&test_support::sdk_config().await)
        .interceptor(faults.clone())
        .build();
    s.worker.chats = std::sync::Arc::new(shared::chats::DynamoChatStore::new(
        aws_sdk_dynamodb::Client::from_conf(dynamodb),
        s.rig.deps.config.tools.storage.chats_table.clone(),
    ));
    let user = test_support::unique("pat");
    let token = s.rig.token(&user);
    let turn = s.kb_turn(&token, "background").await;
    let chat_id = turn.chat_id();
    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    let first = s.deliver(&messages).await;
    assert_eq!(failed_ids(&first).len(), 1, "not acknowledged: {first:?}");
    let state = s
        .rig
        .deps
        .chats
        .get(&user, &chat_id)
        .await
        .unwrap()
        .session_state;
    assert!(state.pending_gpt_query.is_none(), "{state:?}");
    assert!(
        faults.injected().len() > 6,
        "the SDK's and the store's retries were spent: {}",
        faults.injected().len()
    );

    faults.clear();
    let again = s.deliver(&messages).await;
    assert!(again.batch_item_failures.is_empty(), "{again:?}");
    let state = s
        .rig
        .deps
        .chats
        .get(&user, &chat_id)
        .await
        .unwrap()
        .session_state;
    assert!(
        state.pending_gpt_query.is_some(),
        "the patch arrived: {state:?}"
    );
    assert_eq!(s.kb_calls().await, 1, "executed once");
}

/// Cancel means stop: a call canceled while its search is still running is stopped within
/// about a second (it looks for a cancel in the ledger while it runs) and ends `canceled`;
/// neither the client nor the model sees a result.
#[tokio::test]
async fn a_call_canceled_while_running_never_reports_its_late_result() {
    let s = Setup::start(3).await;
    // A search far slower than the test: only stopping it ends the call in time.
    s.kb_answers(kb_hit().set_delay(Duration::from_secs(20)))
        .await;
    let token = s.rig.token(&test_support::unique("hal"));
    s.rig.llm.push(Reply::text("Hi!"));
    let chat_id = s
        .rig
        .chat(
            Some(&token),
            json!({"message": "hello", "agent": "support"}),
        )
        .await
        .chat_id();
    let cancel = async {
        let deadline = std::time::Instant::now() + WAIT;
        while std::time::Instant::now() < deadline {
            let (_, calls) = s
                .rig
                .get(&token, &format!("/chats/{chat_id}/tool-calls"))
                .await;
            let running = calls["items"].as_array().and_then(|items| {
                items
                    .iter()
                    .find(|c| c["status"] == json!("running"))
                    .and_then(|c| c["id"].as_str().map(str::to_owned))
            });
            if let Some(job) = running {
                let path = format!("/chats/{chat_id}/tool-calls/{job}/cancel");
                let (status, _) = s.rig.post(&token, &path).await;
                return (status, job);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the call never showed as running");
    };
    let started = std::time::Instant::now();
    let (turn, (cancel_status, job)) =
        tokio::join!(s.kb_turn_in(&token, "support", Some(&chat_id)), cancel);
    assert_eq!(cancel_status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the running search was stopped, not waited for ({:?})",
        started.elapsed()
    );
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("canceled"), "{result}");
    assert_eq!(
        s.record(&token, &chat_id, &job).await["status"],
        json!("canceled")
    );
    let prompt = last_prompt(&s.rig);
    assert!(prompt.contains("was canceled while it ran"), "{prompt}");
    assert!(prompt.contains("it was stopped"), "{prompt}");
    assert!(
        !prompt.contains(KB_ANSWER),
        "the late result never reaches the model"
    );
}

/// A tool whose timeout does not fit in the worker's own would be killed mid-job and leave
/// its call `running`: the worker refuses to start with it and names it.
#[test]
fn a_tool_timeout_above_the_workers_is_refused_at_start_up() {
    let too_long = AgentCatalog::from_toml(
        "default_agent = \"a\"\n[tools.ask_gpt]\ntimeout_secs = 28\n[agents.a]\nsystem_prompt = \"x\"\ntools = [\"ask_gpt\"]\n",
        "test agents",
    )
    .unwrap();
    let error = tool_worker::check_tool_timeouts(&too_long, Duration::from_secs(30))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("ask_gpt (28 s)") && error.contains("WORKER_TIMEOUT_SECS"),
        "{error}"
    );
    let shipped = AgentCatalog::built_in().unwrap();
    assert!(tool_worker::check_tool_timeouts(&shipped, Duration::from_secs(30)).is_ok());
}

/// Our own route answering 401 is a configuration error: the call fails at once with one
/// request, and no retry is queued (none through the queue, none over another route).
#[tokio::test]
async fn a_401_from_our_own_route_is_not_retried() {
    let s = Setup::start(3).await;
    s.kb_answers(ResponseTemplate::new(401).set_body_json(json!({"message": "Unauthorized"})))
        .await;
    let token = s.rig.token(&test_support::unique("cfg"));
    let turn = s.kb_turn(&token, "support").await;
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("failed"), "{result}");
    assert!(result["metadata"]["retry_attempt"].is_null(), "{result}");
    assert_eq!(s.kb_calls().await, 1, "one request, no retry");
    let queued = s.queues.receive(1, Duration::from_secs(2)).await;
    assert!(queued.is_empty(), "no retry job: {queued:?}");
}

/// A job that cannot be handled on its last delivery before the redrive policy moves it to
/// the dead-letter queue (here every start of its call meets a write conflict) fails its
/// queued call with the reason first: the audit log says why, and the next identical call
/// runs at once instead of waiting for the queued deadline.
#[tokio::test]
async fn a_job_given_up_on_its_last_delivery_fails_its_queued_call_with_the_reason() {
    let mut s = Setup::start(3).await;
    s.kb_answers(kb_hit()).await;
    let faults = DynamoFaults::start().await;
    faults.fail_matching(
        "UpdateItem",
        "#status = :running",
        Fault::TransactionConflict,
        10_000,
    );
    s.worker = s.worker_with_faults(&faults).await;
    let token = s.rig.token(&test_support::unique("gus"));
    let turn = s.kb_turn(&token, "background").await;
    let (chat_id, job) = (turn.chat_id(), job_id(&turn));
    let messages = s.queues.receive(1, WAIT).await;
    assert_eq!(messages.len(), 1);

    // Not the last delivery: reported failed for SQS to deliver again; the call waits.
    let first = s.deliver(&messages).await;
    assert_eq!(failed_ids(&first).len(), 1, "{first:?}");
    assert_eq!(
        s.record(&token, &chat_id, &job).await["status"],
        json!("queued")
    );

    // The last delivery: still failed for SQS (which moves it to the DLQ), the call failed.
    s.worker.max_receive_count = 1;
    let last = s.deliver(&messages).await;
    assert_eq!(failed_ids(&last).len(), 1, "{last:?}");
    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(record["status"], json!("failed"), "{record}");
    let error = record["error"].as_str().unwrap_or_default();
    assert!(error.contains("gave up after 1 deliveries"), "{record}");
    assert_eq!(s.kb_calls().await, 0, "nothing ran");

    // The same search asked again is not a duplicate of the dead job: it runs.
    faults.clear();
    let again = s.kb_turn_in(&token, "background", Some(&chat_id)).await;
    let started = again.first("tool_started");
    assert_ne!(started["deduped"], json!(true), "{started}");
    assert_eq!(job_id(&again), job);
    let record = s.record(&token, &chat_id, &job).await;
    assert_eq!(
        (&record["status"], &record["attempt"]),
        (&json!("queued"), &json!(2)),
        "{record}"
    );
}

/// Seed 003's per-tool `retryConfig`: a tool's own `retry` in config/agents.toml wins over
/// the deployment's `TOOL_MAX_ATTEMPTS`. With `max_attempts = 1`, the same passing failure
/// that is retried by default (`a_transient_failure_is_retried_…`) is final: the fake sees
/// only the turn's own tries and no job is queued.
#[tokio::test]
async fn a_tools_own_retry_setting_changes_the_attempts() {
    a_503_is_final_with("retry = { max_attempts = 1 }").await;
}

/// `retry.on` picks which failures retry: a tool that retries only timeouts takes an
/// upstream 503 as final, with attempts to spare.
#[tokio::test]
async fn a_tool_that_retries_only_timeouts_takes_a_503_as_final() {
    a_503_is_final_with(r#"retry = { max_attempts = 3, on = ["timeout"] }"#).await;
}

/// The knowledge base answers 503 to a tool configured with `retry`: the call fails in its
/// turn and nothing is queued.
async fn a_503_is_final_with(retry: &str) {
    let agents = format!(
        r#"
default_agent = "support"

[tools.search_knowledge_base]
timeout_secs = 5
{retry}

[agents.support]
tools = ["search_knowledge_base"]
system_prompt = "Answer from the knowledge base."
"#
    );
    let s = Setup::with_agents(3, &agents).await;
    s.kb_answers(ResponseTemplate::new(503)).await;
    let token = s.rig.token(&test_support::unique("ivy"));
    let turn = s.kb_turn(&token, "support").await;
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("failed"), "{result}");
    assert!(result["metadata"]["retry_attempt"].is_null(), "{result}");
    assert_eq!(
        s.kb_calls().await,
        2,
        "the turn's two quick tries, no retry job"
    );
    assert!(s.queues.receive(1, Duration::from_secs(2)).await.is_empty());
    let record = s.record(&token, &turn.chat_id(), &job_id(&turn)).await;
    assert_eq!(
        (&record["status"], &record["attempt"]),
        (&json!("failed"), &json!(1))
    );
}

/// `(tool, value)` of each document of `docs` that carries `metric`.
fn metric_values(docs: &[serde_json::Value], metric: &str) -> Vec<(String, f64)> {
    docs.iter()
        .filter_map(|d| {
            let value = d.get(metric)?.as_f64()?;
            Some((d["tool"].as_str().unwrap_or_default().to_owned(), value))
        })
        .collect()
}

/// The `status` dimension of each document of `docs` that carries `metric`.
fn statuses_of(docs: &[serde_json::Value], metric: &str) -> Vec<String> {
    docs.iter()
        .filter(|d| d.get(metric).is_some())
        .map(|d| d["status"].as_str().unwrap_or_default().to_owned())
        .collect()
}
