//! Tool-call ledger latency against DynamoDB Local, plus the CPU cost of dedupe hashing.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p benchmarks --bench ledger
//!
//! DynamoDB Local runs on the JVM on this machine, so absolute figures are the emulator's,
//! not DynamoDB's; they show the ledger adds one round trip and little CPU on top.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use benchmarks::{Percentiles, full_run};
use serde_json::json;
use shared::config::{Env, LedgerConfig, StorageConfig};
use shared::domain::flight::FlightSearchInput;
use shared::domain::tool_call::ToolName;
use shared::ledger::{
    Claim, ClaimMode, ClaimRequest, DedupeKey, DynamoLedger, Outcome, ToolCallLedger,
};

const LEASE: time::Duration = time::Duration::seconds(30);

fn request(owner: &str, chat: &str, i: usize) -> ClaimRequest {
    ClaimRequest {
        owner_id: owner.to_owned(),
        chat_id: chat.to_owned(),
        tool: ToolName::SEARCH_KNOWLEDGE_BASE,
        request: json!({"query": format!("award availability question {i}"), "top_k": 6}),
        mode: ClaimMode::Run { lease: LEASE },
    }
}

#[tokio::main]
async fn main() {
    let full = full_run();
    let iterations = if full { 1000 } else { 20 };

    // CPU: canonicalise and hash a flight search, as every search_flights call does.
    let input: FlightSearchInput = match serde_json::from_value(json!({
        "cabin": "business", "depart_date": "2026-03-15", "destination": "jfk", "origin": "fra",
        "loyalty_programs": ["LH", "UA", "AC"], "constraints": {"nonstop_only": true, "alliances": ["star"]}
    })) {
        Ok(input) => input,
        Err(e) => panic!("bench input: {e}"),
    };
    let hashes = if full { 100_000 } else { 100 };
    let started = Instant::now();
    for i in 0..hashes {
        std::hint::black_box(DedupeKey::new(
            &format!("chat-{}", i % 7),
            ToolName::SEARCH_FLIGHTS,
            &input.canonical(),
        ));
    }
    let per_hash = started.elapsed() / hashes;
    println!(
        "{:<44} {:>9.2} µs per call",
        "canonicalise + SHA-256 dedupe key",
        per_hash.as_secs_f64() * 1e6
    );

    let storage = match StorageConfig::from_env(&Env::from_process()) {
        Ok(s) => s,
        Err(e) => panic!(
            "{e}; start the emulators: infra/local/emulators.sh start && source .local/run/env"
        ),
    };
    let config = shared::aws::sdk_config().await;
    let ledger = DynamoLedger::new(
        shared::aws::dynamodb(&config),
        storage.tool_calls_table,
        LedgerConfig::default(),
    );
    let owner = format!("bench-{}", ulid::Ulid::generate());
    let chat = format!("bench-chat-{}", ulid::Ulid::generate());

    // Warm up connections and the JIT of the emulator.
    for i in 0..iterations.min(50) {
        let _ = ledger
            .record_and_claim(request(&owner, &format!("{chat}-warm"), i))
            .await;
    }

    let (mut claims, mut finishes, mut duplicates) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..iterations {
        let req = request(&owner, &chat, i);
        let t = Instant::now();
        let claimed = match ledger.record_and_claim(req.clone()).await {
            Ok(Claim::Claimed(call)) => call,
            other => panic!("claim: {other:?}"),
        };
        claims.push(t.elapsed());
        let t = Instant::now();
        if let Err(e) = ledger
            .finish(&claimed, Outcome::Succeeded(json!({"hits": i})))
            .await
        {
            panic!("finish: {e}");
        }
        finishes.push(t.elapsed());
        let t = Instant::now();
        match ledger.record_and_claim(req).await {
            Ok(Claim::Duplicate(_)) => {}
            other => panic!("duplicate: {other:?}"),
        }
        duplicates.push(t.elapsed());
    }
    println!(
        "{}",
        Percentiles::of(claims).row("record+claim (1 conditional UpdateItem)")
    );
    println!(
        "{}",
        Percentiles::of(finishes).row("finish (1 fenced UpdateItem)")
    );
    println!(
        "{}",
        Percentiles::of(duplicates).row("duplicate (1 failed conditional write)")
    );

    // 50 identical concurrent calls, as in the dedupe test: wall time until all have answers.
    let rounds = if full { 50 } else { 2 };
    let mut bursts: Vec<Duration> = Vec::new();
    for r in 0..rounds {
        let chat = format!("{chat}-burst-{r}");
        let t = Instant::now();
        let results = futures::future::join_all(
            (0..50).map(|_| ledger.record_and_claim(request(&owner, &chat, 0))),
        )
        .await;
        bursts.push(t.elapsed());
        let claimed = results
            .iter()
            .filter(|r| matches!(r, Ok(Claim::Claimed(_))))
            .count();
        assert_eq!(claimed, 1, "exactly one of 50 claims");
    }
    println!(
        "{}",
        Percentiles::of(bursts).row("burst of 50 identical claims (wall time)")
    );
}
