//! What a tool job costs the worker, through its handler, against DynamoDB Local, moto and a
//! wiremock knowledge-base route that answers at once.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p tool-worker --bench jobs
//!
//! Each round records 5 background calls in the ledger (as a chat turn would), hands their
//! jobs to the handler as one SQS batch, and measures the batch and the DynamoDB requests it
//! made; then the same batch again (redelivery: every job is skipped). `cargo test
//! --benches` (so `make test`) runs a 2-round smoke pass.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::jobs::{JobKind, ToolJob};
use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolsConfig};
use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::{Value, json};
use shared::config::Env;
use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use shared::ledger::{Claim, ClaimMode, ClaimRequest};
use shared::secrets::{AwsSecretSource, SecretsCache};
use test_support::figures::{Percentiles, full_run, peak_rss_kib};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const BATCH: usize = 5;

fn event(jobs: &[ToolJob]) -> SqsEvent {
    let records: Vec<Value> = jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            json!({
                "messageId": format!("m{i}"),
                "receiptHandle": format!("r{i}"),
                "body": serde_json::to_string(job).unwrap_or_default(),
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let rounds = if full_run() { 100 } else { 2 };
    let kb = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/kb/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "results": [{"id": "c1", "document_id": "d", "content": "Miles expire after 36 months.", "score": 0.9}]
        })))
        .mount(&kb)
        .await;
    let mut vars: Vec<(String, String)> = std::env::vars().collect();
    vars.extend([
        // Every function at the fake: only kb-retrieve's route is asked for.
        ("TOOL_FUNCTION_URLS".to_owned(), kb.uri()),
    ]);
    let env = Env::from_pairs(vars);
    let tools = ToolsConfig::from_env(&env).unwrap_or_else(|e| panic!("config: {e}"));
    let (dynamodb, counter) = test_support::counted_dynamodb().await;
    let clients = ToolClients {
        dynamodb,
        sqs: test_support::sqs().await,
        secrets: Arc::new(SecretsCache::new(
            Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
            Duration::from_secs(300),
        )),
        http: shared::upstream::http_client().unwrap_or_else(|e| panic!("http: {e}")),
        llm: std::sync::Arc::new(llm::Clients::new()),
        signer: None,
        metrics: shared::metrics::Metrics::discard(),
    };
    let config = tool_worker::Config {
        tools,
        dead_letter_queue_url: test_support::require_env("TOOL_DLQ_URL"),
        function_timeout: std::time::Duration::from_secs(30),
        max_receive_count: tool_worker::DEFAULT_MAX_RECEIVE_COUNT,
        alert_check_interval: std::time::Duration::from_secs(3600),
    };
    let agents = AgentCatalog::built_in().unwrap_or_else(|e| panic!("agents: {e}"));
    let deps =
        tool_worker::Deps::new(config, &agents, clients).unwrap_or_else(|e| panic!("deps: {e}"));
    let ledger = deps.pipeline.ledger.clone();

    let (mut run, mut skip) = (Vec::new(), Vec::new());
    let (mut run_requests, mut skip_requests) = (0, 0);
    for round in 0..rounds {
        let owner = test_support::unique("bench-owner");
        let chat = test_support::unique("bench-chat");
        let mut jobs = Vec::new();
        for i in 0..BATCH {
            let claim = ledger
                .record_and_claim(ClaimRequest {
                    owner_id: owner.clone(),
                    chat_id: chat.clone(),
                    tool: ToolName::SEARCH_KNOWLEDGE_BASE,
                    request: json!({"query": format!("question {round}-{i}"), "top_k": 6}),
                    mode: ClaimMode::Enqueue,
                })
                .await;
            let Ok(Claim::Claimed(claimed)) = claim else {
                panic!("not claimed: {claim:?}")
            };
            jobs.push(ToolJob {
                v: ToolJob::VERSION,
                kind: JobKind::Background,
                owner_id: owner.clone(),
                chat_id: chat.clone(),
                call_id: claimed.id,
                attempt: claimed.attempt,
                locale: Locale::En,
            });
        }
        counter.take();
        let started = Instant::now();
        let response = tool_worker::handler::handle(&deps, event(&jobs)).await;
        run.push(started.elapsed());
        run_requests += counter.take();
        assert!(response.batch_item_failures.is_empty(), "{response:?}");

        let started = Instant::now();
        let response = tool_worker::handler::handle(&deps, event(&jobs)).await;
        skip.push(started.elapsed());
        skip_requests += counter.take();
        assert!(response.batch_item_failures.is_empty(), "{response:?}");
    }
    let jobs = (rounds * BATCH) as f64;
    println!("\ntool-worker, batches of {BATCH} background kb jobs (rounds={rounds})");
    println!(
        "{}",
        Percentiles::of(run).row("batch run (5 jobs, concurrent)")
    );
    println!(
        "{}",
        Percentiles::of(skip).row("same batch redelivered (all skipped)")
    );
    println!(
        "DynamoDB requests per job: {:.1} run, {:.1} redelivered",
        run_requests as f64 / jobs,
        skip_requests as f64 / jobs
    );
    println!(
        "kb-route calls: {} for {} jobs",
        kb.received_requests().await.unwrap_or_default().len(),
        jobs
    );
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS: {:.1} MiB", kib as f64 / 1024.0);
    }
}
