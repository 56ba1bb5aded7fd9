//! A turn survives its host: chat-router's real binary under a fake Lambda Runtime API,
//! killed (SIGKILL) at a chosen point of each turn; the client then sends the same request
//! again (same `Idempotency-Key`, or the same approval), and it goes to a new process, as
//! Lambda starts a new environment for it. Then the chat gets one more message.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p benchmarks --bench chaos        # CHAOS_TURNS=120, CHAOS_SEED=<n>
//!
//! Kill points: before the model call (the model is slow to answer), while a tool runs (the
//! flight search's upstream is slow; half of these after the log holds the call, so the
//! resend goes on from the logged step), while the answer streams, at the turn's `final` (its
//! last writes under way), and in the turn that writes a fare alert after its approval.
//! Every other turn whose client saw `init` resumes instead (`GET …/events` with
//! `Last-Event-ID`), as a client whose stream broke would.
//! Reported per point: turns resumed, turns ended with `done` (answered: the resend ran a
//! turn whose host died early, went on from its logged first step, or replayed a turn that
//! had ended), with a clean
//! error (`interrupted`: send again), time from the resend to the end of its stream (p50,
//! max), duplicate executions of a write (fare alerts stored more than once), lost answers
//! (a client saw `final`, but neither the resend nor the chat's history has the answer),
//! chats usable afterwards. It fails when a turn ended otherwise, a resend took over 15 s, a
//! write ran twice, an answer was lost or a chat stayed unusable.
//!
//! `cargo test --benches` (so `make test`) runs 5 turns (one per point) with seed 1 on the
//! debug binary beside it, when it exists; `CHAOS_BIN_DIR=<dir>` runs the binary in `<dir>`.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchmarks::runtime_api::{Outcome, OutcomeKind, RuntimeApi};
use benchmarks::{Percentiles, full_run};
use futures::StreamExt;
use serde_json::{Value, json};
use shared::alerts::{AlertStore, DynamoAlertStore};
use shared::chats::{ChatStore, DynamoChatStore};
use shared::domain::chat::Role;
use shared::http::auth::{DevClaims, mint_hs256};
use test_support::fake_llm::{FakeLlm, Reply};
use test_support::serve::LocalServer;
use tokio::sync::oneshot;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use support::{event, pairs, serve_award, serve_cash};

const ISSUER: &str = "https://auth.chaos.local/";
const AUDIENCE: &str = "chaos-bench";
/// Turns run at once (each with its processes).
const AT_ONCE: usize = 6;
/// The longest a resend may take to end (the issue's bound).
const RESEND_BOUND: Duration = Duration::from_secs(15);
/// The longest any one wait of the harness lasts before the turn counts as failed.
const PATIENCE: Duration = Duration::from_secs(45);
/// How long the slow upstreams take: the kill lands while they work.
const SLOW: Duration = Duration::from_secs(2);
/// How long after `tool_started` half the tool-runs are killed: past the log's first write
/// (`FLUSH_EVERY`, 1 s), before the slow search ends.
const LOGGED: Duration = Duration::from_millis(1300);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum KillPoint {
    BeforeModel,
    ToolRunning,
    AnswerStreaming,
    LastWrite,
    ApprovedAlert,
}

impl KillPoint {
    const ALL: [Self; 5] = [
        Self::BeforeModel,
        Self::ToolRunning,
        Self::AnswerStreaming,
        Self::LastWrite,
        Self::ApprovedAlert,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::BeforeModel => "before the model call",
            Self::ToolRunning => "while a tool runs",
            Self::AnswerStreaming => "while the answer streams",
            Self::LastWrite => "at the last write",
            Self::ApprovedAlert => "approved fare alert",
        }
    }
}

/// What one turn came to.
#[derive(Debug)]
struct TurnReport {
    point: KillPoint,
    /// The client resumed the turn (`GET …/events`) instead of sending it again.
    resumed: bool,
    /// The resend ended with `done` and no `error`.
    done: bool,
    /// The resend ended with `error{code:"interrupted"}` and `done`.
    clean_error: bool,
    /// Anything else, said.
    failure: Option<String>,
    resend_to_end: Duration,
    duplicate_writes: usize,
    lost_answer: bool,
    chat_usable: bool,
}

/// The fakes every turn shares, and the turns' hooks into the fake model.
struct Rig {
    bin: PathBuf,
    jwt_secret: String,
    env: Vec<(String, String)>,
    /// Tags of turns whose model call is the kill point: told when it arrives.
    model_waits: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>,
    chats: DynamoChatStore,
    alerts: DynamoAlertStore,
    /// The fakes, kept running while the rig lives.
    _upstreams: (FakeLlm, MockServer, MockServer, LocalServer, LocalServer),
}

/// The tag of the turn a model request belongs to: `[chaos-N]` in its last user message.
fn tag_of(request: &Value) -> Option<String> {
    let asked = request["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")?["content"]
        .as_str()?
        .to_owned();
    let start = asked.find("[chaos-")?;
    let end = asked[start..].find(']')? + start + 1;
    Some(asked[start..end].to_owned())
}

/// The fake model: a flight question gets a `search_flights` call, an alert request a
/// `create_fare_alert` call, a tool's result its answer, anything else a long answer that
/// streams for about a second. A turn waiting for its model call to be the kill point is
/// told, and its answer comes late.
fn model(waits: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>) -> impl Fn(&Value) -> Reply {
    move |request: &Value| {
        let tag = tag_of(request).unwrap_or_default();
        let waited = waits.lock().unwrap().remove(&tag);
        let last_user = request["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned();
        let after_tool = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        let reply = if after_tool {
            Reply::text(format!("{tag} The answer after the tool."))
        } else if last_user.contains("flight") {
            let n: i64 = tag
                .trim_start_matches("[chaos-")
                .trim_end_matches(']')
                .parse()
                .unwrap_or_default();
            let date = time::OffsetDateTime::now_utc().date() + time::Duration::days(40 + n % 300);
            Reply::tool_call(
                "search_flights",
                json!({"origin": "FRA", "destination": "JFK", "depart_date": date.to_string(), "cabin": "BUSINESS"}),
            )
        } else if last_user.contains("alert") {
            Reply::tool_call(
                "create_fare_alert",
                json!({"origin": "FRA", "destination": "JFK", "date_from": test_support::future_date(),
                       "date_to": test_support::future_date(), "cabin": "business", "max_miles": 80000}),
            )
        } else if last_user.contains("again") {
            Reply::text(format!("{tag} Still here."))
        } else {
            let words: Vec<String> = (0..24).map(|i| format!("word{i} ")).collect();
            Reply::text(format!("{tag} {}", words.concat()))
                .with_chunk_delay(Duration::from_millis(40))
        };
        match waited {
            Some(tell) => {
                let _ = tell.send(());
                reply.with_first_byte_delay(SLOW * 3)
            }
            None => reply,
        }
    }
}

/// Seats.aero and Amadeus that answer after [`SLOW`]: a tool call is still running when the
/// turn that made it is killed.
async fn slow_upstreams() -> (MockServer, MockServer) {
    let seatsaero = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(test_support::fixture_json(
                    "seatsaero/cached_search_response.docs-example.json",
                ))
                .set_delay(SLOW),
        )
        .mount(&seatsaero)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/trips/[^/]+$"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(test_support::fixture_json(
                "seatsaero/get_trips_response.docs-example.json",
            )),
        )
        .mount(&seatsaero)
        .await;
    let amadeus = MockServer::start().await;
    test_support::upstreams::mount_amadeus(&amadeus).await;
    (seatsaero, amadeus)
}

impl Rig {
    async fn start(bin: PathBuf) -> Self {
        let waits = Arc::new(Mutex::new(HashMap::new()));
        let llm = FakeLlm::start_with(0, Box::new(model(Arc::clone(&waits)))).await;
        let (seatsaero, amadeus) = slow_upstreams().await;
        let seats_key = test_support::create_secret("chaos/seatsaero", "sk-chaos").await;
        let credentials = json!({"client_id": "id", "client_secret": "secret"}).to_string();
        let amadeus_credentials = test_support::create_secret("chaos/amadeus", &credentials).await;
        let amadeus_token = test_support::create_secret("chaos/amadeus-token", "{}").await;
        let award = serve_award(&seatsaero, &seats_key).await;
        let cash = serve_cash(&amadeus, &amadeus_credentials, &amadeus_token).await;
        let jwt_secret = test_support::unique("chaos-jwt-secret-0123456789abcdef");
        let jwt_secret_name = test_support::create_secret("chaos/jwt", &jwt_secret).await;
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| {
                k.starts_with("AWS_")
                    || k.ends_with("_TABLE")
                    || k.ends_with("_RETENTION_DAYS")
                    || k == "DEDUPE_WINDOW_SECS"
            })
            .collect();
        env.extend(pairs([
            ("OPENAI_BASE_URL", llm.base_url()),
            ("OPENAI_MODEL", "gpt-4o-mini".to_owned()),
            ("JWT_SECRET_NAME", jwt_secret_name),
            ("JWT_ISSUER", ISSUER.to_owned()),
            ("JWT_AUDIENCE", AUDIENCE.to_owned()),
            (
                "TOOL_FUNCTION_URLS",
                format!(
                    "http://127.0.0.1:9,seatsaero-search={},cash-search={}",
                    award.url(""),
                    cash.url("")
                ),
            ),
            ("AWS_LAMBDA_FUNCTION_NAME", "chat-router".to_owned()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512".to_owned()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME",
                "/aws/lambda/chat-router".to_owned(),
            ),
            ("AWS_LAMBDA_LOG_STREAM_NAME", "chaos".to_owned()),
            ("TZ", ":UTC".to_owned()),
        ]));
        let dynamodb = test_support::dynamodb().await;
        let table = test_support::require_env("CHATS_TABLE");
        Self {
            bin,
            jwt_secret,
            env,
            model_waits: waits,
            chats: DynamoChatStore::new(dynamodb.clone(), table.clone()),
            alerts: DynamoAlertStore::new(dynamodb, table),
            _upstreams: (llm, seatsaero, amadeus, award, cash),
        }
    }

    fn token(&self, user: &str) -> String {
        let claims = DevClaims::new(user.to_owned(), ISSUER, AUDIENCE, PATIENCE * 4);
        mint_hs256(&self.jwt_secret, &claims).unwrap()
    }
}

/// One environment: a fake Runtime API and the router's process polling it.
struct Host {
    api: RuntimeApi,
    child: Child,
}

impl Host {
    async fn start(rig: &Rig) -> Self {
        let api = RuntimeApi::start_tapped().await.unwrap();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path())
            .unwrap();
        let child = Command::new(&rig.bin)
            .env_clear()
            .envs(rig.env.iter().cloned())
            .env("AWS_LAMBDA_RUNTIME_API", api.address())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", rig.bin.display()));
        Self { api, child }
    }

    /// Sends `event` and waits for its answer.
    async fn invoke(&mut self, event: Value) -> Result<Vec<(String, Value)>, String> {
        let id = self.api.push(event);
        let outcome = tokio::time::timeout(PATIENCE, async {
            loop {
                match self.api.next_outcome().await {
                    Some(o) if o.request_id == id => return Some(o),
                    Some(_) => {}
                    None => return None,
                }
            }
        })
        .await
        .map_err(|_| format!("no answer within {} s", PATIENCE.as_secs()))?
        .ok_or("the runtime API stopped")?;
        events_of(&outcome)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

fn log_path() -> PathBuf {
    std::env::temp_dir().join("chaos-chat-router.log")
}

/// The SSE events of a streamed answer (after its prelude), as (name, data).
fn events_of(outcome: &Outcome) -> Result<Vec<(String, Value)>, String> {
    let OutcomeKind::Response { body, .. } = &outcome.kind else {
        return Err(format!("not an answer: {:?}", outcome.kind));
    };
    let status = outcome.status()?;
    let start = body
        .windows(8)
        .position(|w| w == [0u8; 8])
        .map_or(0, |at| at + 8);
    let text = String::from_utf8_lossy(&body[start..]);
    if status != 200 {
        return Err(format!("HTTP {status}: {text}"));
    }
    Ok(parse_sse(&text))
}

fn parse_sse(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = Value::Null;
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap_or(Value::String(d.to_owned()));
                }
            }
            Some((name?, data))
        })
        .collect()
}

fn chat_event(token: &str, key: &str, body: &Value) -> Value {
    let mut event = event("chat-router/chat-200.json", body);
    event["headers"]["authorization"] = json!(format!("Bearer {token}"));
    event["headers"]["idempotency-key"] = json!(key);
    event
}

fn approve_event(token: &str, chat_id: &str, job_id: &str) -> Value {
    let mut event = event("chat-router/chat-200.json", &json!({}));
    let route = format!("/chats/{chat_id}/tool-calls/{job_id}/approve");
    event["rawPath"] = json!(route);
    event["requestContext"]["http"]["path"] = json!(route);
    event["headers"]["authorization"] = json!(format!("Bearer {token}"));
    event["body"] = Value::Null;
    event
}

/// `GET …/turns/{turn_id}/events` with `Last-Event-ID`: a client whose stream broke asks for
/// the rest of its turn.
fn resume_event(token: &str, chat_id: &str, turn_id: &str, last_id: u64) -> Value {
    let mut event = event("chat-router/chat-200.json", &json!({}));
    let route = format!("/chats/{chat_id}/turns/{turn_id}/events");
    event["rawPath"] = json!(route);
    event["requestContext"]["http"]["path"] = json!(route);
    event["requestContext"]["http"]["method"] = json!("GET");
    event["headers"]["authorization"] = json!(format!("Bearer {token}"));
    event["headers"]["last-event-id"] = json!(last_id.to_string());
    event["body"] = Value::Null;
    event
}

/// The last `id:` of an SSE stream's text.
fn last_id(text: &str) -> Option<u64> {
    text.lines()
        .rev()
        .find_map(|line| line.strip_prefix("id: ")?.trim().parse().ok())
}

fn first<'a>(events: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    events.iter().find(|(n, _)| n == name).map(|(_, d)| d)
}

/// One turn: begun on a host that is killed at `point`, sent again to a new host, then the
/// chat's next message.
async fn run_turn(rig: Arc<Rig>, n: usize, point: KillPoint, at_final: bool) -> TurnReport {
    let mut report = TurnReport {
        point,
        done: false,
        clean_error: false,
        failure: None,
        resend_to_end: Duration::ZERO,
        resumed: false,
        duplicate_writes: 0,
        lost_answer: false,
        chat_usable: false,
    };
    if let Err(e) = turn(&rig, n, point, at_final, &mut report).await {
        report.failure = Some(e);
    }
    report
}

async fn turn(
    rig: &Rig,
    n: usize,
    point: KillPoint,
    at_final: bool,
    report: &mut TurnReport,
) -> Result<(), String> {
    let user = test_support::unique(&format!("chaos-{n}"));
    let token = rig.token(&user);
    let tag = format!("[chaos-{n}]");
    let question = match point {
        KillPoint::ToolRunning => "business flight FRA to JFK",
        KillPoint::LastWrite if n.is_multiple_of(2) => "business flight FRA to JFK",
        KillPoint::ApprovedAlert => "alert me below 80k miles FRA to JFK",
        _ => "tell me about award seats",
    };
    let body = json!({ "message": format!("{tag} {question}") });
    let (request, trigger) = match point {
        KillPoint::ApprovedAlert => {
            // The turn that asks for approval runs to its end; its approval is the request.
            let mut host = Host::start(rig).await;
            let asked = host
                .invoke(chat_event(&token, &format!("ask-{n}"), &body))
                .await?;
            let chat_id = first(&asked, "init").ok_or("no init")?["chat_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let job = first(&asked, "approval_required")
                .ok_or_else(|| format!("no approval asked for: {asked:?}"))?["job_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let trigger = if at_final { "final" } else { "tool_started" };
            (approve_event(&token, &chat_id, &job), Some(trigger))
        }
        KillPoint::BeforeModel => (chat_event(&token, &format!("k-{n}"), &body), None),
        KillPoint::ToolRunning => (
            chat_event(&token, &format!("k-{n}"), &body),
            Some("tool_started"),
        ),
        KillPoint::AnswerStreaming => (
            chat_event(&token, &format!("k-{n}"), &body),
            Some("assistant_token"),
        ),
        KillPoint::LastWrite => (chat_event(&token, &format!("k-{n}"), &body), Some("final")),
    };

    // The first host, killed at the point.
    let mut host = Host::start(rig).await;
    let told = if trigger.is_none() {
        let (tell, told) = oneshot::channel();
        rig.model_waits.lock().unwrap().insert(tag.clone(), tell);
        Some(told)
    } else {
        None
    };
    let id = host.api.push(request.clone());
    let mut seen = String::new();
    let reached = tokio::time::timeout(PATIENCE, async {
        match (told, trigger) {
            (Some(told), _) => {
                let _ = told.await;
            }
            (None, Some(trigger)) => {
                let wanted = format!("event: {trigger}");
                while let Some((rid, bytes)) = host.api.next_frame().await {
                    if rid == id {
                        seen.push_str(&String::from_utf8_lossy(&bytes));
                        if seen.contains(&wanted) {
                            break;
                        }
                    }
                }
            }
            (None, None) => {}
        }
    })
    .await;
    // Half the tool-runs die a little later: their log holds the step's call by then (the
    // turn writes its log about once a second), while the slow search still runs.
    if point == KillPoint::ToolRunning && at_final {
        tokio::time::sleep(LOGGED).await;
    }
    host.kill();
    reached.map_err(|_| "the kill point was never reached".to_owned())?;
    let saw_final = parse_sse(&seen)
        .into_iter()
        .find(|(name, _)| name == "final");

    // The client sends the same request again, or (every other turn that saw its `init`)
    // resumes the turn after the last event it got; a new environment takes it.
    let seen_init = parse_sse(&seen)
        .into_iter()
        .find(|(name, _)| name == "init")
        .map(|(_, init)| init);
    let again = match (&seen_init, last_id(&seen)) {
        (Some(init), Some(last)) if n % 2 == 1 && point != KillPoint::ApprovedAlert => {
            report.resumed = true;
            resume_event(
                &token,
                init["chat_id"].as_str().unwrap_or_default(),
                init["turn_id"].as_str().unwrap_or_default(),
                last,
            )
        }
        _ => request.clone(),
    };
    let mut host = Host::start(rig).await;
    let started = Instant::now();
    let resent = host.invoke(again).await;
    report.resend_to_end = started.elapsed();
    let resent = resent?;
    let error = first(&resent, "error").map(|e| e["code"].clone());
    let ended = resent.last().is_some_and(|(name, _)| name == "done");
    match (ended, error) {
        (true, None) => report.done = true,
        (true, Some(code)) if code == json!("interrupted") => report.clean_error = true,
        (_, code) => {
            return Err(format!(
                "the resend ended {}with error {code:?}: {resent:?}",
                if ended { "" } else { "without done, " }
            ));
        }
    }
    let chat_id = first(&resent, "init")
        .or(seen_init.as_ref())
        .and_then(|init| init["chat_id"].as_str())
        .or_else(|| request["rawPath"].as_str()?.split('/').nth(2))
        .ok_or("no chat id")?
        .to_owned();

    // An answer a client saw in `final` is in the resend or in the chat's history.
    if let Some((_, seen_final)) = &saw_final {
        let answer = seen_final["message"]["content"]
            .as_str()
            .unwrap_or_default();
        let in_resend = first(&resent, "final").is_some();
        let history = rig
            .chats
            .recent_messages(&user, &chat_id, 20)
            .await
            .map_err(|e| format!("history: {e}"))?;
        let in_history = history
            .iter()
            .any(|m| m.role == Role::Assistant && m.content == answer);
        report.lost_answer = !in_resend && !in_history;
    }
    if point == KillPoint::ApprovedAlert {
        let alerts = rig
            .alerts
            .list(&user)
            .await
            .map_err(|e| format!("alerts: {e}"))?;
        report.duplicate_writes = alerts.len().saturating_sub(1);
    }

    // The chat takes the next message.
    let next = json!({"chat_id": chat_id, "message": format!("{tag} again")});
    let after = host
        .invoke(chat_event(&token, &format!("next-{n}"), &next))
        .await;
    report.chat_usable = after.as_ref().is_ok_and(|events| {
        first(events, "error").is_none() && events.last().is_some_and(|(name, _)| name == "done")
    });
    if !report.chat_usable {
        return Err(format!("the chat's next message: {after:?}"));
    }
    Ok(())
}

/// The chat-router binary: `CHAOS_BIN_DIR`'s, else the one of this build's profile.
fn binary() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CHAOS_BIN_DIR") {
        return Some(PathBuf::from(dir).join("chat-router"));
    }
    // <target>/<profile>/deps/chaos-<hash>; `cargo bench` builds in release, the debug
    // binary is the one `cargo test --workspace` builds.
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent().and_then(Path::parent)?.parent()?;
    ["debug", "release"]
        .iter()
        .map(|profile| target.join(profile).join("chat-router"))
        .find(|bin| bin.is_file())
}

#[tokio::main]
async fn main() {
    let full = full_run();
    let turns: usize = std::env::var("CHAOS_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if full { 120 } else { 5 });
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if full { fastrand::u64(..) } else { 1 });
    let Some(bin) = binary().filter(|b| b.is_file()) else {
        println!("chaos: skipped, no chat-router binary here (cargo build -p chat-router)");
        return;
    };
    let _ = std::fs::remove_file(log_path());
    println!(
        "chaos: {turns} turns, seed {seed}, {} at once, binary {} (its log: {})",
        AT_ONCE,
        bin.display(),
        log_path().display()
    );
    let rig = Arc::new(Rig::start(bin).await);
    let mut rng = fastrand::Rng::with_seed(seed);
    let plan: Vec<(usize, KillPoint, bool)> = (0..turns)
        .map(|n| (n, KillPoint::ALL[n % KillPoint::ALL.len()], rng.bool()))
        .collect();
    let started = Instant::now();
    let reports: Vec<TurnReport> = futures::stream::iter(plan)
        .map(|(n, point, at_final)| run_turn(Arc::clone(&rig), n, point, at_final))
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    println!(
        "{} turns in {:.1} s",
        reports.len(),
        started.elapsed().as_secs_f64()
    );
    let problems = report(&reports);
    drop(rig);
    if !problems.is_empty() {
        panic!("chaos: {}", problems.join("; "));
    }
}

/// Prints the table per kill point; returns what breaks a must.
fn report(reports: &[TurnReport]) -> Vec<String> {
    let mut by_point: BTreeMap<KillPoint, Vec<&TurnReport>> = BTreeMap::new();
    for r in reports {
        by_point.entry(r.point).or_default().push(r);
    }
    println!(
        "\n{:<26} {:>5} {:>7} {:>5} {:>6} {:>6} {:>9} {:>9} {:>6} {:>5} {:>7}",
        "kill point",
        "turns",
        "resumed",
        "done",
        "clean",
        "failed",
        "p50 s",
        "max s",
        "dup",
        "lost",
        "usable"
    );
    let mut problems = Vec::new();
    for (point, rows) in &by_point {
        let times = Percentiles::of(rows.iter().map(|r| r.resend_to_end).collect());
        let count = |f: fn(&TurnReport) -> bool| rows.iter().filter(|r| f(r)).count();
        let failed = count(|r| r.failure.is_some());
        let duplicates: usize = rows.iter().map(|r| r.duplicate_writes).sum();
        let lost = count(|r| r.lost_answer);
        let usable = count(|r| r.chat_usable);
        println!(
            "{:<26} {:>5} {:>7} {:>5} {:>6} {:>6} {:>9.2} {:>9.2} {:>6} {:>5} {:>7}",
            point.name(),
            rows.len(),
            count(|r| r.resumed),
            count(|r| r.done),
            count(|r| r.clean_error),
            failed,
            times.p50.as_secs_f64(),
            times.max.as_secs_f64(),
            duplicates,
            lost,
            usable
        );
        for r in rows.iter().filter_map(|r| r.failure.as_ref()) {
            problems.push(format!(
                "{}: {}",
                point.name(),
                r.chars().take(600).collect::<String>()
            ));
        }
        if times.max > RESEND_BOUND {
            problems.push(format!(
                "{}: a resend took {:.1} s (at most {} s)",
                point.name(),
                times.max.as_secs_f64(),
                RESEND_BOUND.as_secs()
            ));
        }
        if duplicates > 0 {
            problems.push(format!("{}: {duplicates} duplicate writes", point.name()));
        }
        if lost > 0 {
            problems.push(format!("{}: {lost} lost answers", point.name()));
        }
    }
    println!(
        "(must: failed 0, max ≤ {} s, dup 0, lost 0, usable = turns)",
        RESEND_BOUND.as_secs()
    );
    problems
}
