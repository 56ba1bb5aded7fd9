//! What a chat turn costs the router, end to end through the handler, against DynamoDB
//! Local, moto, the scripted fake LLM and the real flight functions over fake upstreams.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p chat-router --bench turn
//!
//! Reports time to `init`, total turn time, the tool's own time (the flight functions and
//! their fakes: `tool_started` → `tool_result`), the router's overhead (total minus the
//! tool's time; the fake LLM answers at once), DynamoDB requests and LLM calls per turn,
//! and the process's peak RSS. `cargo test --all-targets` runs a 3-turn smoke pass.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use benchmarks::{Percentiles, full_run, peak_rss_kib};
use common::{Rig, Turn, flight_args, post_chat};
use serde_json::json;
use test_support::fake_llm::Reply;

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

#[tokio::main]
async fn main() {
    let turns = if full_run() { 200 } else { 3 };
    let (dynamodb, counter) = test_support::counted_dynamodb().await;
    let rig = Rig::with_dynamodb(|_| {}, None, dynamodb).await;

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
        let (turn, sample) = turn(&rig, &counter, "Business FRA-JFK 2027-03-15").await;
        assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));
        samples.push(sample);
    }
    let llm_calls = (rig.llm.request_count() - before) / turns;
    report("flight-search turn, new chat", &samples, llm_calls);

    let before = rig.llm.request_count();
    let mut samples = Vec::with_capacity(turns);
    for _ in 0..turns {
        rig.llm
            .push(Reply::text("Hello! How can I help with your trip?"));
        samples.push(turn(&rig, &counter, "hello").await.1);
    }
    let llm_calls = (rig.llm.request_count() - before) / turns;
    report("text-only turn, new chat", &samples, llm_calls);

    if let Some(kib) = peak_rss_kib() {
        println!(
            "\npeak RSS of the bench process (router, three served functions, fakes): {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
}
