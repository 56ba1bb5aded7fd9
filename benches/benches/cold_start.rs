//! Cold start of the HTTP functions' release binaries under a fake Lambda Runtime API.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p benchmarks --bench cold_start
//!
//! Builds the release binaries of seatsaero-search, cash-search, kb-retrieve, chat-router and
//! mcp-server (`cargo build --release`; the first build takes minutes), then starts each one
//! several times as Lambda would, with the upstream fakes of the tests (Seats.aero, Amadeus,
//! Duffel, the LLM) and the emulators behind it, and reports per function: spawn → first
//! `next` poll (init), spawn → first response, CPU of init, of the first response and of the
//! whole cold start, CPU per warm invocation, and peak RSS, each as median and p90 of the
//! cold starts, with PASS/MISS against the targets.
//!
//! Each invocation is one production does: kb-retrieve loads the index snapshot from the
//! emulated S3 as deployed (the scan of the table, its fallback, is measured apart);
//! chat-router runs a text turn and, apart, a flight turn whose `search_flights` calls the
//! real award and cash handlers, served by this process over the upstream fakes; mcp-server
//! answers a `tools/call` of `search_flights` with a valid token. Every warm invocation is a
//! new user and a new date: no ledger or result cache answers it. `cargo test --benches` (so `make test`) runs a smoke
//! pass (one cold start, two warm invocations) on the debug binaries beside it, when they
//! exist. `COLD_START_BIN_DIR=<dir>` measures the binaries in `<dir>` instead (no build);
//! `COLD_START_ONLY=kb-retrieve,chat-router` measures only those functions;
//! `COLD_START_WRAPPER=<command>` starts each binary under a profiler (see `wrapped`);
//! `COLD_START_TRACES=1` turns traces on, exported to a local OTLP receiver (`compare`: pairs of
//! runs, traces off and on);
//! `COLD_START_WARM=<n>` sets the warm invocations per cold start, `COLD_START_RUNS=<n>` the
//! cold starts per function.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchmarks::process::{Resident, cpu_time, peak_rss_kib_of, resident_of};
use benchmarks::runtime_api::RuntimeApi;
use benchmarks::{Percentiles, full_run};
use serde_json::{Value, json};
use shared::http::auth::{DevClaims, mint_hs256};
use shared::kb::snapshots::S3Snapshots;
use test_support::fake_llm::{FakeLlm, Reply};
use test_support::serve::LocalServer;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use support::{event, pairs, serve_award, serve_cash};

const FUNCTIONS: [&str; 5] = [
    "seatsaero-search",
    "cash-search",
    "kb-retrieve",
    "chat-router",
    "mcp-server",
];
const ISSUER: &str = "https://auth.bench.local/";
const AUDIENCE: &str = "cold-start-bench";
/// Longest wait for a poll or an answer before a run counts as failed.
const PATIENCE: Duration = Duration::from_secs(30);

/// The targets for this machine's class of hardware (the figures: docs/measurements.md, "Cold start").
const INIT_TARGET: Duration = Duration::from_millis(5);
const RSS_TARGET_KIB: u64 = 16 * 1024;

/// A function's CPU targets, medians.
#[derive(Clone, Copy)]
struct Targets {
    /// Spawn through the first response.
    cold_cpu: Duration,
    /// Per warm invocation, where there is one.
    warm_cpu: Option<Duration>,
}

const fn targets(cold_ms: u64, warm_us: Option<u64>) -> Targets {
    Targets {
        cold_cpu: Duration::from_millis(cold_ms),
        warm_cpu: match warm_us {
            Some(us) => Some(Duration::from_micros(us)),
            None => None,
        },
    }
}

/// How one function is started and invoked.
struct Function {
    /// What the report calls it (`COLD_START_ONLY` picks by it).
    name: &'static str,
    /// The binary it runs.
    bin: &'static str,
    env: Vec<(String, String)>,
    /// The event of the `n`th invocation of a process.
    event: Box<dyn Fn(usize) -> Value + Send + Sync>,
    targets: Targets,
    /// What every answer must contain: the work measured was done, not refused.
    answers_with: &'static str,
}

/// The figures of one process: a cold start and the warm invocations after it.
struct Sample {
    init: Duration,
    first_response: Duration,
    init_cpu: Duration,
    cold_cpu: Duration,
    warm_cpu: Duration,
    warm_latency: Vec<Duration>,
    peak_rss_kib: u64,
    /// What is resident after the last invocation.
    resident: Resident,
}

/// The fakes and emulator resources every run shares; dropping them stops the fakes.
struct Upstreams {
    seatsaero: MockServer,
    amadeus: MockServer,
    duffel: MockServer,
    llm: FakeLlm,
    seats_key: String,
    amadeus_credentials: String,
    amadeus_token: String,
    duffel_token: String,
    jwt_secret: String,
    jwt_secret_name: String,
    kb_table: String,
    /// Where the sample knowledge base's index snapshot is published: bucket, key prefix.
    kb_snapshots: (String, String),
    /// The award and cash functions' handlers, served here over the fakes: the tools a
    /// flight turn and an MCP `tools/call` reach.
    award_function: LocalServer,
    cash_function: LocalServer,
    /// The OTLP receiver when traces are on (`COLD_START_TRACES`).
    traces: Option<(MockServer, Traces)>,
}

#[tokio::main]
async fn main() {
    let full = full_run();
    // Under a profiler one cold start and two warm invocations say enough.
    let (runs, warm) = if full && !profiling() {
        (15, 30)
    } else {
        (1, 2)
    };
    // `COLD_START_WARM=<n>`: more warm invocations, e.g. for a profile of warm turns;
    // `COLD_START_RUNS=<n>`: more cold starts, e.g. pairs enough to see a small cost.
    let number = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    };
    let (runs, warm) = (
        number("COLD_START_RUNS", runs),
        number("COLD_START_WARM", warm),
    );
    let bin_dir = match binaries(full) {
        Ok(Some(dir)) => dir,
        Ok(None) => {
            println!("cold_start: smoke pass skipped, no debug binaries of {FUNCTIONS:?} here");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let upstreams = Arc::new(upstreams().await);
    println!(
        "cold start of the binaries in {} ({runs} cold starts per function, {warm} warm invocations each)",
        bin_dir.display()
    );
    if !full {
        println!("smoke pass on debug binaries: the figures and verdicts mean nothing");
    }
    let mut verdicts = Vec::new();
    // `COLD_START_ONLY=chat-router` (a comma-separated list) measures only those.
    let only = std::env::var("COLD_START_ONLY").unwrap_or_default();
    let chosen = |name: &str| only.is_empty() || only.split(',').any(|o| o.trim() == name);
    let traces = upstreams.traces.as_ref().map(|(receiver, mode)| {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), receiver.uri());
        (vec![endpoint], *mode)
    });
    for function in functions(&upstreams).into_iter().filter(|f| chosen(f.name)) {
        let bin = bin_dir.join(function.bin);
        let (on, compare) = match &traces {
            Some((on, mode)) => (on.as_slice(), *mode == Traces::Compare),
            None => (&[][..], false),
        };
        // One start not counted: the emulators' JIT and the page cache warm up.
        if full && let Err(e) = run_once(&bin, &function, warm, on).await {
            panic!("{}: {e}", function.name);
        }
        let (off_samples, samples) = cold_starts(&bin, &function, runs, warm, on, compare).await;
        if compare {
            report(&function, "traces off", &off_samples);
            verdicts.extend(report(&function, "traces on", &samples));
            verdicts.push(traces_cost(function.name, &off_samples, &samples));
        } else {
            verdicts.extend(report(&function, "", &samples));
        }
    }
    println!();
    for line in &verdicts {
        println!("{line}");
    }
    println!(
        "(targets: the *_TARGET constants and each row's own, in benches/benches/cold_start.rs; medians)"
    );
}

/// `runs` cold starts of `function` with the environment `on` (traces on, when asked for),
/// and with `compare` as many without it: (without, with).
async fn cold_starts(
    bin: &Path,
    function: &Function,
    runs: usize,
    warm: usize,
    on: &[(String, String)],
    compare: bool,
) -> (Vec<Sample>, Vec<Sample>) {
    let (mut off, mut with) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for run in 0..runs {
        // Compared in pairs, off and on, so that drift of the machine hits both alike;
        // every other pair runs on first, so that going second favours neither.
        let on_first = run % 2 == 1;
        for traced in [on_first, !on_first] {
            if !traced && !compare {
                continue;
            }
            let env = if traced { on } else { &[] };
            match run_once(bin, function, warm, env).await {
                Ok(sample) if traced => with.push(sample),
                Ok(sample) => off.push(sample),
                Err(e) => panic!("{}: {e}", function.name),
            }
        }
    }
    (off, with)
}

/// The directory holding the functions' binaries: `COLD_START_BIN_DIR` if set (to compare
/// builds), else release ones, built now, for a full run; for the smoke pass the debug ones
/// `cargo test` built beside this binary, if it did.
fn binaries(full: bool) -> Result<Option<PathBuf>, String> {
    if let Some(dir) = std::env::var_os("COLD_START_BIN_DIR") {
        return Ok(Some(PathBuf::from(dir)));
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // <target>/<profile>/deps/cold_start-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("unexpected bench location")?;
    if !full {
        let present = FUNCTIONS.iter().all(|f| profile_dir.join(f).is_file());
        return Ok(present.then(|| profile_dir.to_path_buf()));
    }
    let target = profile_dir.parent().ok_or("unexpected bench location")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "--target-dir"])
        .arg(target);
    for f in FUNCTIONS {
        command.args(["-p", f]);
    }
    println!("building the release binaries (lto: minutes when they changed)");
    let status = command
        .status()
        .map_err(|e| format!("running cargo build: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build --release failed: {status}"));
    }
    Ok(Some(target.join("release")))
}

async fn upstreams() -> Upstreams {
    let seatsaero = MockServer::start().await;
    test_support::upstreams::mount_seatsaero(&seatsaero).await;
    let amadeus = MockServer::start().await;
    test_support::upstreams::mount_amadeus(&amadeus).await;
    let duffel = MockServer::start().await;
    test_support::duffel::mount(&duffel).await;
    let llm = FakeLlm::start_with(0, Box::new(model_reply)).await;
    let jwt_secret = test_support::unique("bench-jwt-secret-0123456789abcdef");
    let credentials = json!({"client_id": "id", "client_secret": "secret"}).to_string();
    let seats_key = test_support::create_secret("bench/seatsaero", "sk-bench").await;
    let amadeus_credentials = test_support::create_secret("bench/amadeus", &credentials).await;
    let amadeus_token = test_support::create_secret("bench/amadeus-token", "{}").await;
    let award_function = serve_award(&seatsaero, &seats_key).await;
    let cash_function = serve_cash(&amadeus, &amadeus_credentials, &amadeus_token).await;
    let kb_table = sample_knowledge_base().await;
    let kb_snapshots = publish_snapshot(&kb_table).await;
    Upstreams {
        seatsaero,
        amadeus,
        duffel,
        llm,
        seats_key,
        amadeus_credentials,
        amadeus_token,
        duffel_token: test_support::create_secret("bench/duffel-token", "duffel_test_bench").await,
        jwt_secret_name: test_support::create_secret("bench/jwt", &jwt_secret).await,
        jwt_secret,
        kb_table,
        kb_snapshots,
        award_function,
        cash_function,
        traces: traces_receiver().await,
    }
}

/// Whether the functions export traces (`COLD_START_TRACES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Traces {
    /// `1`: every run exports.
    On,
    /// `compare`: each cold start runs twice, traces off then on, and the report gives
    /// the medians of the pairs' differences: what traces cost.
    Compare,
}

/// With `COLD_START_TRACES` set, an OTLP/HTTP receiver the functions export their spans to
/// (as to the collector extension on Lambda). It answers at once and keeps connections
/// open, as a collector does.
async fn traces_receiver() -> Option<(MockServer, Traces)> {
    let mode = match std::env::var("COLD_START_TRACES")
        .unwrap_or_default()
        .as_str()
    {
        "" | "0" => return None,
        "compare" => Traces::Compare,
        _ => Traces::On,
    };
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver)
        .await;
    println!(
        "traces ({mode:?}): spans are exported to {}",
        receiver.uri()
    );
    Some((receiver, mode))
}

/// The fake model: a flight question gets a `search_flights` call for the date it names,
/// a request carrying the search's result gets the answer, anything else a short text.
fn model_reply(request: &Value) -> Reply {
    let messages = request["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if messages.iter().any(|m| m["role"] == "tool") {
        return Reply::text("The cheapest business seat on that day is listed above.");
    }
    let asked = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let search = asked
        .strip_prefix(FLIGHT_QUESTION)
        .and_then(|rest| rest.trim().split_once(' '));
    match search {
        Some((origin, date)) => Reply::tool_call("search_flights", search_arguments(origin, date)),
        None => Reply::text("Award space on that route is best searched a few weeks out."),
    }
}

/// How the flight turn asks, followed by the origin and the date.
const FLIGHT_QUESTION: &str = "Business class to New York, from and on:";

fn search_arguments(origin: &str, date: &str) -> Value {
    json!({"origin": origin, "destination": "JFK", "depart_date": date, "cabin": "BUSINESS"})
}

/// A flight search no earlier invocation of this run made (origin, date), so that neither
/// the ledger nor the result cache answers it: twelve origins, 300 days.
fn new_search() -> (&'static str, String) {
    const ORIGINS: [&str; 12] = [
        "FRA", "MUC", "BER", "HAM", "DUS", "STR", "VIE", "ZRH", "AMS", "CDG", "LHR", "MAD",
    ];
    static SEARCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEARCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let days = 30 + i64::try_from(n / ORIGINS.len() % 300).unwrap_or_default();
    let date = time::OffsetDateTime::now_utc().date() + time::Duration::days(days);
    (ORIGINS[n % ORIGINS.len()], date.to_string())
}

/// Publishes `table`'s index snapshot to the emulated S3 (`KB_SNAPSHOT_BUCKET`) under a
/// prefix of this run's own, as `kb-ingest` does after an ingest.
async fn publish_snapshot(table: &str) -> (String, String) {
    let bucket = test_support::require_env("KB_SNAPSHOT_BUCKET");
    let prefix = format!("{}/", test_support::unique("bench-kb-index"));
    let sdk = test_support::sdk_config().await;
    let snapshots = S3Snapshots::new(S3Snapshots::client(&sdk), bucket.clone(), prefix.clone());
    let store = shared::kb::DynamoKbStore::new(test_support::dynamodb().await, table.to_owned());
    let published = kb_ingest::publish::publish(
        &store,
        &snapshots,
        kb_ingest::publish::DEFAULT_GRACE,
        &kb_ingest::Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("publishing the index snapshot: {e}"));
    assert!(published.is_some(), "no snapshot published");
    (bucket, prefix)
}

/// A fresh table holding the sample knowledge base (infra/kb/docs), text only (BM25), as
/// `make dev` ingests it.
async fn sample_knowledge_base() -> String {
    let client = test_support::dynamodb().await;
    let table = test_support::create_pk_sk_table(&client, "bench-kb").await;
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra/kb/docs");
    let sources = kb_ingest::files::collect(&[docs], "")
        .unwrap_or_else(|e| panic!("sample knowledge base: {e}"));
    let store = shared::kb::DynamoKbStore::new(client, table.clone());
    kb_ingest::ingest(
        &store,
        None,
        &sources,
        &kb_ingest::IngestOptions::default(),
        &kb_ingest::Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("ingesting the sample knowledge base: {e}"));
    table
}

fn functions(up: &Arc<Upstreams>) -> Vec<Function> {
    let award = event(
        "seatsaero-search/search-200.json",
        &json!({
            "origin": "SFO", "destination": "JFK", "departureDate": "2023-08-14",
            "travelClass": "BUSINESS", "flexibility": 3, "maxResults": 5
        }),
    );
    let cash = event(
        "cash-search/search-200.json",
        &json!({
            "origin": "FRA", "destination": "JFK", "departureDate": test_support::future_date(),
            "travelClass": "BUSINESS", "adults": 1, "maxResults": 5
        }),
    );
    let kb = event(
        "kb-retrieve/search-200.json",
        &json!({"query": "free stopover on award tickets", "top_k": 6}),
    );
    let kb_scan = kb.clone();
    let [amadeus_search, duffel_search] = cash_functions(up, cash);
    let (snapshot_bucket, snapshot_prefix) = up.kb_snapshots.clone();
    let mut all = vec![
        Function {
            name: "seatsaero-search",
            bin: "seatsaero-search",
            env: pairs([
                ("SEATSAERO_BASE_URL", up.seatsaero.uri()),
                ("SEATSAERO_API_KEY_SECRET", up.seats_key.clone()),
            ]),
            event: Box::new(move |_| award.clone()),
            targets: targets(8, Some(500)),
            answers_with: r#""success":true"#,
        },
        amadeus_search,
        duffel_search,
        Function {
            name: "kb-retrieve",
            bin: "kb-retrieve",
            env: pairs([
                ("KB_TABLE", up.kb_table.clone()),
                ("KB_SNAPSHOT_BUCKET", snapshot_bucket),
                ("KB_SNAPSHOT_PREFIX", snapshot_prefix),
                ("EMBEDDINGS_BASE_URL", "none".to_owned()),
            ]),
            event: Box::new(move |_| kb.clone()),
            targets: targets(8, None),
            answers_with: r#""results":[{"#,
        },
        // No snapshot: the function scans the table, as when none is published.
        Function {
            name: "kb-retrieve-scan",
            bin: "kb-retrieve",
            env: pairs([
                ("KB_TABLE", up.kb_table.clone()),
                ("EMBEDDINGS_BASE_URL", "none".to_owned()),
            ]),
            event: Box::new(move |_| kb_scan.clone()),
            targets: targets(8, None),
            answers_with: r#""results":[{"#,
        },
    ];
    all.extend(tool_running_functions(up));
    all
}

/// chat-router's two kinds of turn and mcp-server's `tools/call`: each invocation a user of
/// its own (a new chat each time; the per-user turn limit, checked as in production, never
/// trips) and a date of its own.
fn tool_running_functions(up: &Arc<Upstreams>) -> [Function; 3] {
    let chat = event(
        "chat-router/chat-200.json",
        &json!({"message": "When should I search for award seats to New York?"}),
    );
    let router_env = [
        pairs([
            ("OPENAI_BASE_URL", up.llm.base_url()),
            ("OPENAI_MODEL", "gpt-4o-mini".to_owned()),
        ]),
        tool_runtime_env(up),
    ]
    .concat();
    let (text_up, flight_up, mcp_up) = (Arc::clone(up), Arc::clone(up), Arc::clone(up));
    let flight = chat.clone();
    let mcp_call = mcp_tools_call();
    [
        Function {
            name: "chat-router",
            bin: "chat-router",
            env: router_env.clone(),
            event: Box::new(move |n| with_token(&text_up, chat.clone(), n)),
            targets: targets(15, Some(1_000)),
            answers_with: r#"event: done"#,
        },
        Function {
            name: "chat-router-flight",
            bin: "chat-router",
            env: router_env,
            event: Box::new(move |n| {
                let mut event = flight.clone();
                let (origin, date) = new_search();
                let message = format!("{FLIGHT_QUESTION} {origin} {date}");
                event["body"] = Value::String(json!({ "message": message }).to_string());
                with_token(&flight_up, event, n)
            }),
            targets: targets(15, Some(1_500)),
            answers_with: r#"event: tool_result"#,
        },
        Function {
            name: "mcp-server",
            bin: "mcp-server",
            env: tool_runtime_env(up),
            event: Box::new(move |n| {
                let mut event = mcp_call.clone();
                let (origin, date) = new_search();
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "search_flights",
                    "arguments": search_arguments(origin, &date),
                    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {}}}});
                event["body"] = Value::String(body.to_string());
                with_token(&mcp_up, event, n)
            }),
            targets: targets(10, Some(1_000)),
            answers_with: r#""isError":false"#,
        },
    ]
}

/// The MCP event of the repository, as a `tools/call` of `search_flights` (the body is set
/// per invocation).
fn mcp_tools_call() -> Value {
    let mut event = test_support::sample_events("mcp-server")
        .into_iter()
        .find(|e| e.name == "tools-list-no-token-401")
        .map(|e| serde_json::from_str::<Value>(&e.text).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|| panic!("events/mcp-server/tools-list-no-token-401.json is missing"));
    event["headers"]["mcp-method"] = json!("tools/call");
    event["headers"]["mcp-name"] = json!("search_flights");
    event
}

/// What a function that verifies tokens and runs tools needs: the award and cash functions
/// served here, any other function nowhere.
fn tool_runtime_env(up: &Upstreams) -> Vec<(String, String)> {
    pairs([
        ("JWT_SECRET_NAME", up.jwt_secret_name.clone()),
        ("JWT_ISSUER", ISSUER.to_owned()),
        ("JWT_AUDIENCE", AUDIENCE.to_owned()),
        (
            "TOOL_FUNCTION_URLS",
            format!(
                "http://127.0.0.1:9,seatsaero-search={},cash-search={}",
                up.award_function.url(""),
                up.cash_function.url("")
            ),
        ),
    ])
}

/// `event` with a bearer token of a user of its own (`n`th invocation).
fn with_token(up: &Upstreams, mut event: Value, n: usize) -> Value {
    let user = test_support::unique(&format!("bench-user-{n}"));
    let claims = DevClaims::new(user, ISSUER, AUDIENCE, Duration::from_secs(3600));
    let token = mint_hs256(&up.jwt_secret, &claims).unwrap_or_else(|e| panic!("token: {e}"));
    event["headers"]["authorization"] = Value::String(format!("Bearer {token}"));
    event
}

/// cash-search on each of its providers, over the fakes.
fn cash_functions(up: &Arc<Upstreams>, cash: Value) -> [Function; 2] {
    let cash_amadeus = cash.clone();
    [
        Function {
            name: "cash-search",
            bin: "cash-search",
            env: pairs([
                ("AMADEUS_BASE_URL", up.amadeus.uri()),
                ("AMADEUS_CREDENTIALS_SECRET", up.amadeus_credentials.clone()),
                ("AMADEUS_TOKEN_SECRET", up.amadeus_token.clone()),
            ]),
            event: Box::new(move |_| cash_amadeus.clone()),
            targets: targets(8, None),
            answers_with: r#""success":true"#,
        },
        Function {
            name: "cash-search-duffel",
            bin: "cash-search",
            env: pairs([
                ("CASH_PROVIDER", "duffel".to_owned()),
                ("DUFFEL_BASE_URL", up.duffel.uri()),
                ("DUFFEL_TOKEN_SECRET", up.duffel_token.clone()),
            ]),
            event: Box::new(move |_| cash.clone()),
            targets: targets(8, None),
            answers_with: r#""success":true"#,
        },
    ]
}

/// What Lambda sets, the emulators' settings and table names from this process's
/// environment (`source .local/run/env`), and the function's own settings.
fn environment(api: &RuntimeApi, function: &Function) -> Vec<(String, String)> {
    const PASSED_ON: [&str; 12] = [
        "TOOL_CALLS_TABLE",
        "CHATS_TABLE",
        "USAGE_TABLE",
        "RATE_LIMITS_TABLE",
        "KB_TABLE",
        "TOOL_QUEUE_URL",
        "DEDUPE_WINDOW_SECS",
        "PUBLIC_TOOL_ROUTES",
        "PUBLIC_ROUTE_CALLS_PER_MINUTE",
        "CHAT_RETENTION_DAYS",
        "TOOL_CALL_RETENTION_DAYS",
        "USAGE_RETENTION_DAYS",
    ];
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_") || PASSED_ON.contains(&k.as_str()))
        .collect();
    env.extend(pairs([
        ("AWS_LAMBDA_RUNTIME_API", api.address()),
        ("AWS_LAMBDA_FUNCTION_NAME", function.bin.to_owned()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256".to_owned()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/{}", function.bin),
        ),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "bench".to_owned()),
        ("TZ", ":UTC".to_owned()),
    ]));
    env.extend(function.env.iter().cloned());
    env
}

/// The command that starts `bin`: itself, or under `COLD_START_WRAPPER` (a profiler's
/// command line, e.g. `valgrind --tool=dhat --dhat-out-file=/tmp/dhat.out`). Under a
/// wrapper the figures are the wrapper's; its report is what counts. `PATH` is passed on.
fn wrapped(bin: &Path, env: Vec<(String, String)>) -> Command {
    let wrapper = std::env::var("COLD_START_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace();
    let mut command = match words.next() {
        Some(program) => Command::new(program),
        None => Command::new(bin),
    };
    command.env_clear().envs(env);
    if !wrapper.trim().is_empty() {
        command.args(words).arg(bin);
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
    }
    command
}

/// Kills the function when a run ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        // A profiler writes its report when its process ends: it gets SIGTERM and a moment.
        if profiling() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.0.id().to_string()])
                .status();
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                if let Ok(Some(_)) = self.0.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether the binaries run under `COLD_START_WRAPPER`.
fn profiling() -> bool {
    std::env::var("COLD_START_WRAPPER").is_ok_and(|w| !w.trim().is_empty())
}

fn log_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cold-start-{name}.log"))
}

/// The end of a function's log, for error messages.
fn log_tail(name: &str) -> String {
    let text = std::fs::read_to_string(log_path(name)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

async fn within<T>(
    what: &str,
    name: &str,
    f: impl Future<Output = Option<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(PATIENCE, f).await {
        Ok(Some(value)) => Ok(value),
        Ok(None) => Err(format!("runtime API stopped while waiting for {what}")),
        Err(_) => Err(format!(
            "no {what} within {PATIENCE:?}; the end of its log:\n{}",
            log_tail(name)
        )),
    }
}

/// One cold start, then `warm` invocations of the same process.
/// One cold start and `warm` invocations; `extra` adds to the function's environment.
async fn run_once(
    bin: &Path,
    function: &Function,
    warm: usize,
    extra: &[(String, String)],
) -> Result<Sample, String> {
    let mut api = RuntimeApi::start()
        .await
        .map_err(|e| format!("runtime API: {e}"))?;
    let log = File::create(log_path(function.name)).map_err(|e| format!("log file: {e}"))?;
    let log_err = log.try_clone().map_err(|e| format!("log file: {e}"))?;
    let mut env = environment(&api, function);
    env.extend(extra.iter().cloned());
    // The event waits at the first poll, as for a cold start Lambda makes for a request.
    let first_id = api.push((function.event)(0));

    let spawned = Instant::now();
    let child = wrapped(bin, env)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", bin.display()))?;
    let running = Running(child);
    let pid = running.0.id();

    let first_poll = within("first poll", function.name, api.next_poll()).await?;
    let init_cpu = cpu_time(pid).map_err(|e| format!("CPU time: {e}"))?;
    let outcome = within("first response", function.name, api.next_outcome()).await?;
    check(&outcome, &first_id, function)?;
    // The runtime polls again once the answer is posted: the cold start's work is done.
    within("second poll", function.name, api.next_poll()).await?;
    let cold_cpu = cpu_time(pid).map_err(|e| format!("CPU time: {e}"))?;

    let mut warm_latency = Vec::with_capacity(warm);
    for n in 1..=warm {
        let id = api.push((function.event)(n));
        let pushed = Instant::now();
        let outcome = within("warm response", function.name, api.next_outcome()).await?;
        check(&outcome, &id, function)?;
        warm_latency.push(outcome.at.duration_since(pushed));
        within("poll", function.name, api.next_poll()).await?;
    }
    let warm_cpu = cpu_time(pid).map_err(|e| format!("CPU time: {e}"))?;
    let peak_rss_kib = peak_rss_kib_of(pid).ok_or("VmHWM not readable")?;
    let resident = resident_of(pid).ok_or("/proc/PID/status not readable")?;
    drop(running);

    Ok(Sample {
        init: first_poll.duration_since(spawned),
        first_response: outcome.at.duration_since(spawned),
        init_cpu,
        cold_cpu,
        warm_cpu: warm_cpu
            .saturating_sub(cold_cpu)
            .checked_div(warm.max(1) as u32)
            .unwrap_or_default(),
        warm_latency,
        peak_rss_kib,
        resident,
    })
}

fn check(
    outcome: &benchmarks::runtime_api::Outcome,
    id: &str,
    function: &Function,
) -> Result<(), String> {
    let name = function.name;
    if outcome.request_id != id {
        return Err(format!(
            "answer to {} while waiting for {id}",
            outcome.request_id
        ));
    }
    // A text in a JSON answer's body string has its quotes escaped.
    let escaped = function.answers_with.replace('"', "\\\"");
    let answered = outcome.body_contains(function.answers_with) || outcome.body_contains(&escaped);
    match outcome.status() {
        Ok(200) if outcome.body_contains("event: error") => Err(format!(
            "the turn ended with an error event; the end of its log:\n{}",
            log_tail(name)
        )),
        Ok(200) if !answered => Err(format!(
            "the answer lacks {:?}; the end of its log:\n{}",
            function.answers_with,
            log_tail(name)
        )),
        Ok(200) => Ok(()),
        Ok(status) => Err(format!(
            "HTTP {status}; the end of its log:\n{}",
            log_tail(name)
        )),
        Err(e) => Err(format!("{e}; the end of its log:\n{}", log_tail(name))),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What was resident at the end of the run with the median heap, by kind.
fn print_resident(samples: &[Sample]) {
    let mut by_anon: Vec<Resident> = samples.iter().map(|s| s.resident).collect();
    by_anon.sort_unstable_by_key(|r| r.anon_kib);
    let median = by_anon.get(by_anon.len() / 2).copied().unwrap_or_default();
    println!(
        "  {:<40} heap and stacks {:.1} MiB, binary {:.1} MiB, libraries {:.1} MiB, {} threads",
        "resident at the end (median by heap)",
        median.anon_kib as f64 / 1024.0,
        median.binary_kib as f64 / 1024.0,
        median.file_kib.saturating_sub(median.binary_kib) as f64 / 1024.0,
        median.threads
    );
}

/// Prints a function's table and returns its PASS/MISS lines.
fn report(function: &Function, variant: &str, samples: &[Sample]) -> Vec<String> {
    let of = |f: fn(&Sample) -> Duration| Percentiles::of(samples.iter().map(f).collect());
    let init = of(|s| s.init);
    let first = of(|s| s.first_response);
    let init_cpu = of(|s| s.init_cpu);
    let cold_cpu = of(|s| s.cold_cpu);
    // What moving work between init and the first invocation changes.
    let first_cpu = of(|s| s.cold_cpu.saturating_sub(s.init_cpu));
    let warm_cpu = of(|s| s.warm_cpu);
    let warm_latency = Percentiles::of(
        samples
            .iter()
            .flat_map(|s| s.warm_latency.iter().copied())
            .collect(),
    );
    let mut rss: Vec<u64> = samples.iter().map(|s| s.peak_rss_kib).collect();
    rss.sort_unstable();
    let rss_p50 = rss.get(rss.len() / 2).copied().unwrap_or_default();
    let rss_max = rss.last().copied().unwrap_or_default();

    let name = if variant.is_empty() {
        function.name.to_owned()
    } else {
        format!("{} ({variant})", function.name)
    };
    println!("\n{name}");
    let row = |label: &str, p: &Percentiles| {
        println!(
            "  {label:<40} p50 {:>8.3} ms   p90 {:>8.3} ms",
            ms(p.p50),
            ms(p.p90)
        );
    };
    row("spawn → first poll (init)", &init);
    row("spawn → first response", &first);
    row("CPU of init", &init_cpu);
    row("CPU of the first response (after init)", &first_cpu);
    row("CPU of the cold start (to 1st response)", &cold_cpu);
    row("CPU per warm invocation", &warm_cpu);
    row("warm invocation, event → response", &warm_latency);
    println!(
        "  {:<40} p50 {:>8.1} MiB  max {:>8.1} MiB",
        "peak RSS",
        rss_p50 as f64 / 1024.0,
        rss_max as f64 / 1024.0
    );
    print_resident(samples);

    let verdict = |what: &str, value: f64, target: f64, unit: &str| {
        let pass = if value <= target { "PASS" } else { "MISS" };
        format!("{pass} {name:<18} {what:<28} {value:>8.3} {unit} (target ≤ {target} {unit})")
    };
    let mut lines = vec![
        verdict("init", ms(init.p50), ms(INIT_TARGET), "ms"),
        verdict(
            "CPU per cold start",
            ms(cold_cpu.p50),
            ms(function.targets.cold_cpu),
            "ms",
        ),
        verdict(
            "peak RSS",
            rss_p50 as f64 / 1024.0,
            RSS_TARGET_KIB as f64 / 1024.0,
            "MiB",
        ),
    ];
    if let Some(target) = function.targets.warm_cpu {
        lines.push(verdict(
            "warm CPU per invocation",
            ms(warm_cpu.p50),
            ms(target),
            "ms",
        ));
    }
    lines
}

/// What traces cost `name`: the medians of the paired differences (on − off) of the CPU of
/// init, of the cold start and per warm invocation.
fn traces_cost(name: &str, off: &[Sample], on: &[Sample]) -> String {
    let median_difference = |f: fn(&Sample) -> Duration| {
        let mut differences: Vec<f64> = off
            .iter()
            .zip(on)
            .map(|(a, b)| ms(f(b)) - ms(f(a)))
            .collect();
        differences.sort_by(f64::total_cmp);
        differences
            .get(differences.len() / 2)
            .copied()
            .unwrap_or_default()
    };
    format!(
        "COST {name:<18} traces, on − off (median of {} pairs): init CPU {:+.3} ms, cold start CPU {:+.3} ms, warm CPU {:+.3} ms per invocation",
        on.len().min(off.len()),
        median_difference(|s| s.init_cpu),
        median_difference(|s| s.cold_cpu),
        median_difference(|s| s.warm_cpu),
    )
}
