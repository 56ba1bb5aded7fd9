//! What a chat turn costs the router, end to end through the handler, against DynamoDB
//! Local, moto, the scripted fake LLM and the real flight functions over fake upstreams.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p chat-router --bench turn
//!
//! Three kinds of turn: a flight search served from the result cache, one that runs the
//! search (and caches it), and a text answer. Reports time to `init`, total turn time, the
//! tool's own time (the flight functions and their fakes: `tool_started` → `tool_result`),
//! the router's overhead (total minus the tool's time; the fake LLM answers at once),
//! DynamoDB requests and LLM calls per turn, and the process's peak RSS.
//! `cargo test --benches` (so `make test`) runs a 3-turn smoke pass, which asserts the request counts.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/integration/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Rig, Turn, flight_args, post_chat};
use serde_json::json;
use shared::turns::DynamoTurnStore;
use test_support::fake_llm::Reply;
use test_support::figures::{Percentiles, full_run, peak_rss_kib};

struct Sample {
    init: Duration,
    total: Duration,
    tool: Duration,
    dynamodb: Vec<String>,
}

async fn turn(rig: &Rig, counter: &test_support::RequestCounter, message: &str) -> (Turn, Sample) {
    let token = rig.token(&test_support::unique("bench"));
    counter.take_operations();
    let started = Instant::now();
    let response = chat_router::handler::handle(
        &rig.deps,
        post_chat(Some(&token), &json!({"message": message})),
    )
    .await;
    let turn = Turn::read(response, started).await;
    let total = started.elapsed();
    assert_eq!(turn.names().last(), Some(&"done"), "{:?}", turn.names());
    let at = |name: &str| turn.events.iter().find(|e| e.name == name).map(|e| e.at);
    let tool = match (at("tool_started"), at("tool_result")) {
        (Some(a), Some(b)) => b - a,
        _ => Duration::ZERO,
    };
    let sample = Sample {
        init: at("init").unwrap_or_default(),
        total,
        tool,
        dynamodb: counter.take_operations(),
    };
    (turn, sample)
}

fn report(title: &str, samples: &[Sample], llm_calls: usize) {
    println!(
        "\n{title} (n={}, LLM calls per turn: {llm_calls})",
        samples.len()
    );
    let collect = |f: fn(&Sample) -> Duration| samples.iter().map(f).collect::<Vec<_>>();
    println!(
        "{}",
        Percentiles::of(collect(|s| s.init)).row("time to init")
    );
    println!(
        "{}",
        Percentiles::of(collect(|s| s.total)).row("whole turn")
    );
    println!(
        "{}",
        Percentiles::of(collect(|s| s.tool)).row("tool (functions + fakes)")
    );
    println!(
        "{}",
        Percentiles::of(collect(|s| s.total.saturating_sub(s.tool))).row("router overhead")
    );
    let mut dynamodb: Vec<usize> = samples.iter().map(|s| s.dynamodb.len()).collect();
    dynamodb.sort_unstable();
    println!(
        "DynamoDB requests per turn: min {} max {}",
        dynamodb.first().unwrap_or(&0),
        dynamodb.last().unwrap_or(&0)
    );
    if let Some(last) = samples.last() {
        println!("  the last turn's, in order: {}", last.dynamodb.join(", "));
    }
}

/// A flight search in a new chat: the chat's creation with the turn's record and count,
/// the user's memory, the call's claim with its rate-limit count, the cache lookup, the
/// call's end (with the result's cache entry on a miss), the answer with the step's
/// messages, the usage record and the chat's release.
const FLIGHT_TURN_REQUESTS: usize = 6;
/// A text answer in a new chat: the creation, the memory, the answer with the usage.
const TEXT_TURN_REQUESTS: usize = 3;

/// Every turn made exactly `expected` DynamoDB requests.
fn assert_requests(samples: &[Sample], expected: usize) {
    for sample in samples {
        assert_eq!(
            sample.dynamodb.len(),
            expected,
            "DynamoDB requests of a turn: {}",
            sample.dynamodb.join(", ")
        );
    }
}

#[tokio::main]
async fn main() {
    let turns = if full_run() { 200 } else { 3 };
    let (dynamodb, counter) = test_support::counted_dynamodb().await;
    let mut rig = Rig::with_dynamodb(|_| {}, None, dynamodb).await;
    // The event log's flushes (one for a turn under a second, then about one a second) go
    // through a client of their own, so the count is the turn's own requests.
    let table = rig.deps.config.tools.storage.chats_table.clone();
    rig.deps.turns = Arc::new(DynamoTurnStore::new(test_support::dynamodb().await, table));

    // Warm up: secrets, JWT key, connection pools, the amadeus token.
    for _ in 0..3 {
        rig.llm
            .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
        turn(&rig, &counter, "warm up").await;
    }

    let before = rig.llm.request_count();
    let mut samples = Vec::with_capacity(turns);
    for _ in 0..turns {
        rig.llm
            .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
        let (turn, sample) = turn(&rig, &counter, "Business FRA-JFK, the usual day").await;
        assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));
        samples.push(sample);
    }
    let llm_calls = (rig.llm.request_count() - before) / turns;
    report(
        "flight-search turn, new chat, result from the cache",
        &samples,
        llm_calls,
    );
    assert_requests(&samples, FLIGHT_TURN_REQUESTS);

    // A date no turn searched before: the search runs and its result is cached. Each
    // minute has its own 250 days, so runs within the cache's 10 minutes never meet.
    let before = rig.llm.request_count();
    let mut samples = Vec::with_capacity(turns);
    let offset = 120 + (time::OffsetDateTime::now_utc().unix_timestamp() / 60 % 20) * 250;
    for i in 0..turns {
        let date = test_support::clock::date_in(offset + i as i64);
        let mut args = flight_args();
        args["depart_date"] = json!(date.to_string());
        rig.llm
            .push(Reply::tool_calls(vec![("search_flights", args)]));
        let (turn, sample) = turn(&rig, &counter, "Business FRA-JFK, another day").await;
        let result = turn.first("tool_result");
        assert_eq!(result["status"], json!("succeeded"));
        assert!(result["metadata"]["cached"].is_null(), "{result}");
        samples.push(sample);
    }
    let llm_calls = (rig.llm.request_count() - before) / turns;
    report(
        "flight-search turn, new chat, search run and cached",
        &samples,
        llm_calls,
    );
    assert_requests(&samples, FLIGHT_TURN_REQUESTS);

    let before = rig.llm.request_count();
    let mut samples = Vec::with_capacity(turns);
    for _ in 0..turns {
        rig.llm
            .push(Reply::text("Hello! How can I help with your trip?"));
        samples.push(turn(&rig, &counter, "hello").await.1);
    }
    let llm_calls = (rig.llm.request_count() - before) / turns;
    report("text-only turn, new chat", &samples, llm_calls);
    assert_requests(&samples, TEXT_TURN_REQUESTS);

    if let Some(kib) = peak_rss_kib() {
        println!(
            "\npeak RSS of the bench process (router, three served functions, fakes): {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
}
