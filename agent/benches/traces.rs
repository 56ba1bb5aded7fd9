//! What traces cost a turn, in CPU: the spans the router makes for a flight turn, recorded
//! and exported to a local OTLP receiver as every invocation does, against the same turn's
//! work with traces off. The tree is a real flight turn's (the router's trace test, at
//! 9c4c832): `invoke_agent`, its `chat` with the model's HTTP call, `execute_tool` with three
//! DynamoDB calls and the two flight functions' calls, with the same attributes, and 155
//! enters and exits (every poll of a future in a span enters it; 155 is what the whole
//! process counted, the flight functions' own spans included).
//!
//!     cargo bench -p agent --bench traces
//!
//! The figure is the thread's CPU time (the turn runs on a one-thread runtime, as the
//! router's does; the receiver has threads of its own), medians of blocks of turns, traces
//! on and off alternating. `cargo test --benches` (so `make test`) runs a short smoke pass
//! that checks one export per turn reaches the receiver.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::genai;
use agent_core::llm::{Completion, FinishReason, ToolCallRequest};
use async_trait::async_trait;
use shared::config::Env;
use shared::provider::Provider;
use shared::secrets::{SecretSource, SecretString, SecretsCache};
use shared::telemetry::{self, TARGET};
use shared::usage::TokenUsage;
use test_support::figures::full_run;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The budget of the issue that asked for traces: 0.2 ms of CPU per turn.
const BUDGET: Duration = Duration::from_micros(200);

/// Enters (polls) per span, in the order the spans open; 155 in all.
const ENTERS: Enters = Enters {
    turn: 30,
    chat: 40,
    model_http: 30,
    tool: 20,
    dynamodb: 3,
    function_http: 12,
};

struct Enters {
    turn: usize,
    chat: usize,
    model_http: usize,
    tool: usize,
    dynamodb: usize,
    function_http: usize,
}

/// No secrets: the bench's exporter has no headers to read.
struct NoSecrets;

#[async_trait]
impl SecretSource for NoSecrets {
    async fn fetch(&self, name: &str) -> shared::Result<SecretString> {
        Err(shared::Error::Config(format!(
            "no secret {name} in the bench"
        )))
    }
    async fn store(&self, _: &str, _: &str) -> shared::Result<()> {
        Ok(())
    }
}

/// The subscriber as `init_tracing` builds it, with the trace layer or without.
fn dispatch(traced: bool) -> Dispatch {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::sink)
        .json()
        .with_filter(EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(log);
    if traced {
        Dispatch::new(registry.with(telemetry::layer("chat-router")))
    } else {
        Dispatch::new(registry)
    }
}

fn polls(span: &tracing::Span, n: usize) {
    for _ in 0..n {
        let _entered = span.enter();
    }
}

/// A DynamoDB call's span, with the fields the SDK interceptor gives it.
fn dynamodb(operation: &str, table: Option<&str>) -> tracing::Span {
    let span = tracing::trace_span!(
        target: TARGET,
        "aws",
        otel.name = %format!("DynamoDB.{operation}"),
        otel.kind = "client",
        rpc.system = "aws-api",
        rpc.service = "DynamoDB",
        rpc.method = %operation,
        aws.dynamodb.table_names = tracing::field::Empty,
        app.http.attempts = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    if let Some(table) = table {
        span.record("aws.dynamodb.table_names", table);
    }
    telemetry::record_attempt(&span, 1);
    telemetry::record_status(&span, 200);
    polls(&span, ENTERS.dynamodb);
    span
}

/// An HTTP call's client span, as the upstream client makes it.
fn http_call(service: &'static str, method: &str, host: &str, enters: usize) -> Vec<String> {
    let span = telemetry::client_span(service, || Some((method.to_owned(), host.to_owned())));
    let headers = telemetry::headers_of(&span);
    telemetry::record_attempt(&span, 1);
    telemetry::record_status(&span, 200);
    polls(&span, enters);
    headers.into_iter().map(|(_, v)| v).collect()
}

/// The router's spans of one flight turn, then the export every invocation ends with.
async fn flight_turn(completion: &Completion, usage: &TokenUsage) -> usize {
    let turn = genai::invoke_agent("travel", "01JCHATBENCH", "01JTURNBENCH", "en");
    let trace = genai::trace_of(&turn);
    polls(&turn, ENTERS.turn);
    let mut passed_on = 0;
    {
        let _in_turn = turn.enter();
        let chat = genai::chat(Some(Provider::OpenAi), "gpt-4o-mini", "turn", 0);
        {
            let _in_chat = chat.enter();
            http_call("openai", "POST", "api.openai.com", ENTERS.model_http);
        }
        genai::record_chat(&chat, completion, usage, Some(0.00021), Some(180.0));
        polls(&chat, ENTERS.chat);
        drop(chat);

        let tool = genai::execute_tool("search_flights", "call_bench_1");
        {
            let _in_tool = tool.enter();
            drop(dynamodb("TransactWriteItems", None));
            drop(dynamodb("GetItem", Some("tool-cache")));
            for host in ["award.lambda-url.local", "cash.lambda-url.local"] {
                passed_on += http_call("tool", "POST", host, ENTERS.function_http).len();
            }
            drop(dynamodb("TransactWriteItems", None));
        }
        genai::record_tool(&tool, "executed", "succeeded", None);
        polls(&tool, ENTERS.tool);
    }
    drop(turn);
    telemetry::flush().await;
    passed_on + usize::from(trace.is_some())
}

/// The thread's CPU time so far.
#[allow(unsafe_code)] // one libc call, with its SAFETY note
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// CPU per turn over `turns` turns under `dispatch`.
fn block(
    runtime: &tokio::runtime::Runtime,
    dispatch: &Dispatch,
    turns: usize,
    completion: &Completion,
    usage: &TokenUsage,
) -> Duration {
    tracing::dispatcher::with_default(dispatch, || {
        let started = thread_cpu();
        for _ in 0..turns {
            std::hint::black_box(runtime.block_on(flight_turn(completion, usage)));
        }
        (thread_cpu() - started) / turns as u32
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// A local OTLP receiver, and traces turned on towards it. A full run sends thousands of
/// exports: the receiver keeps none of them.
async fn traces_to_a_receiver(full: bool) -> MockServer {
    let builder = MockServer::builder();
    let receiver = if full {
        builder.disable_request_recording().start().await
    } else {
        builder.start().await
    };
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver)
        .await;
    let env = Env::from_pairs([("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.uri())]);
    let http = shared::upstream::http_client().unwrap();
    let secrets = SecretsCache::new(Arc::new(NoSecrets), Duration::from_secs(60));
    assert!(telemetry::configure(&env, &http, &secrets).await);
    receiver
}

fn main() {
    let full = full_run();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let receiver = runtime.block_on(traces_to_a_receiver(full));
    let completion = Completion {
        model: "gpt-4o-mini-2024-07-18".into(),
        content: String::new(),
        tool_calls: vec![ToolCallRequest {
            id: "call_bench_1".into(),
            name: "search_flights".into(),
            arguments: r#"{"origin":"FRA","destination":"JFK"}"#.into(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        usage: None,
    };
    let usage = TokenUsage {
        prompt_tokens: 1200,
        completion_tokens: 80,
        total_tokens: 1280,
        ..TokenUsage::default()
    };
    let (on, off) = (dispatch(true), dispatch(false));

    if !full {
        let turns = 5;
        block(&runtime, &on, turns, &completion, &usage);
        block(&runtime, &off, turns, &completion, &usage);
        let exports = runtime.block_on(receiver.received_requests()).unwrap();
        assert_eq!(exports.len(), turns, "one export per traced turn");
        assert!(exports.iter().all(|e| !e.body.is_empty()));
        println!("traces smoke: {turns} traced turns, {turns} exports");
        return;
    }

    let (rounds, turns) = (40, 250);
    for dispatch in [&on, &off] {
        block(&runtime, dispatch, turns, &completion, &usage);
    }
    let (mut with, mut without, mut cost) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which runs first, so a drift of the machine favours neither.
        let (a, b) = if round % 2 == 0 {
            let a = block(&runtime, &on, turns, &completion, &usage);
            (a, block(&runtime, &off, turns, &completion, &usage))
        } else {
            let b = block(&runtime, &off, turns, &completion, &usage);
            (block(&runtime, &on, turns, &completion, &usage), b)
        };
        with.push(a);
        without.push(b);
        cost.push(a.saturating_sub(b));
    }
    let cost = median(cost);
    println!(
        "traces, a flight turn's router spans (9 spans, 155 enters, one export), CPU per turn, \
         median of {rounds} blocks of {turns}: on {}, off {}, cost {} (budget {}: {})",
        micros(median(with)),
        micros(median(without)),
        micros(cost),
        micros(BUDGET),
        if cost <= BUDGET { "PASS" } else { "MISS" }
    );
}
