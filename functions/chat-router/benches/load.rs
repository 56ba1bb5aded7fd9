//! Chat turns under load, through the router's handler, against DynamoDB Local, moto, the
//! fake LLM and the real flight functions over fake upstreams.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p chat-router --bench load
//!
//! `LOAD_CHATS` chats (default 200) run at once, each with three turns in a row: a flight
//! search, a text turn, and the same flight search again (a duplicate tool call the ledger
//! must answer without running it). Then it checks what a user would: every message stored
//! once and in order, each chat's session state patched by its search, and the award
//! function run once per chat. Reports turns per second and the turns' latency
//! percentiles. `cargo test --benches` (so `make test`) runs it with 4 chats.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/integration/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Rig, Turn, flight_args, post_chat};
use futures::future::join_all;
use serde_json::{Value, json};
use shared::domain::chat::Role;
use test_support::fake_llm::Reply;
use test_support::figures::{Percentiles, full_run, peak_rss_kib};

/// The turns of one chat, in order: (message, whether it searches flights).
fn script(chat: usize) -> [(String, bool); 3] {
    [
        (format!("[load {chat}.1] business FRA to JFK"), true),
        (
            format!("[load {chat}.2] thanks, and the baggage rules?"),
            false,
        ),
        (format!("[load {chat}.3] show that search again"), true),
    ]
}

/// The chat's flight search: a departure day of its own, so no two chats share a cached
/// result and every search runs exactly once.
fn chat_search(chat: usize) -> Value {
    let day = test_support::clock::date_in(30 + chat as i64);
    let mut args = flight_args();
    args["depart_date"] = json!(day.to_string());
    args
}

/// The text of the last message of an LLM request.
fn last_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Scripts the fake LLM for every turn: each reply waits for its own message, so
/// concurrent turns get the right ones.
fn script_llm(rig: &Rig, chats: usize) {
    for chat in 0..chats {
        for (message, flight) in script(chat) {
            let reply = if flight {
                Reply::tool_calls(vec![("search_flights", chat_search(chat))])
            } else {
                Reply::text("Checked bags: two pieces of 23 kg in business.")
            };
            rig.llm
                .when(move |body| last_message(body) == message, reply);
        }
    }
}

struct ChatRun {
    user: String,
    chat_id: String,
    latencies: Vec<Duration>,
    problems: Vec<String>,
}

/// One chat's turns, one after the other.
async fn run_chat(rig: &Rig, chat: usize) -> ChatRun {
    let user = test_support::unique("load");
    let token = rig.token(&user);
    let mut run = ChatRun {
        user,
        chat_id: String::new(),
        latencies: Vec::new(),
        problems: Vec::new(),
    };
    for (n, (message, flight)) in script(chat).into_iter().enumerate() {
        let mut body = json!({"message": message});
        if !run.chat_id.is_empty() {
            body["chat_id"] = json!(run.chat_id);
        }
        let started = Instant::now();
        let turn = Turn::read(
            chat_router::handler::handle(&rig.deps, post_chat(Some(&token), &body)).await,
            started,
        )
        .await;
        run.latencies.push(started.elapsed());
        if turn.status != 200 || turn.names().last() != Some(&"done") {
            run.problems.push(format!(
                "chat {chat} turn {n}: {} {:?}",
                turn.status,
                turn.names()
            ));
            continue;
        }
        if turn.names().contains(&"error") {
            run.problems
                .push(format!("chat {chat} turn {n}: {}", turn.first("error")));
        }
        if run.chat_id.is_empty() {
            run.chat_id = turn.chat_id();
        }
        if flight {
            let result = turn.first("tool_result");
            let deduped = turn.first("tool_started")["deduped"] == json!(true);
            if result["status"] != json!("succeeded") || deduped != (n > 0) {
                run.problems.push(format!(
                    "chat {chat} turn {n}: flight search {} (deduped {deduped})",
                    result["status"]
                ));
            }
        }
    }
    run
}

/// What the chat holds afterwards: its user messages once each and in order, every one
/// answered, and the search's patch in its session state.
async fn check_stored(rig: &Rig, chat: usize, run: &ChatRun) -> Vec<String> {
    let mut problems = Vec::new();
    let messages = match rig
        .deps
        .chats
        .recent_messages(&run.user, &run.chat_id, 50)
        .await
    {
        Ok(messages) => messages,
        Err(e) => return vec![format!("chat {chat}: reading messages: {e}")],
    };
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    let expected: Vec<String> = script(chat).into_iter().map(|(m, _)| m).collect();
    if users != expected {
        problems.push(format!(
            "chat {chat}: user messages {users:?}, expected {expected:?}"
        ));
    }
    let answers = messages
        .iter()
        .filter(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
        .count();
    if answers != expected.len() {
        problems.push(format!(
            "chat {chat}: {answers} answers to {} messages",
            expected.len()
        ));
    }
    match rig.deps.chats.get(&run.user, &run.chat_id).await {
        Ok(stored) if stored.session_state.offered_flights.is_empty() => {
            problems.push(format!("chat {chat}: the search's patch was lost"));
        }
        Ok(_) => {}
        Err(e) => problems.push(format!("chat {chat}: reading the chat: {e}")),
    }
    problems
}

#[tokio::main]
async fn main() {
    let chats = if full_run() {
        std::env::var("LOAD_CHATS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(200)
    } else {
        4
    };
    let rig = Rig::start().await;
    script_llm(&rig, chats);

    let started = Instant::now();
    let runs = join_all((0..chats).map(|chat| run_chat(&rig, chat))).await;
    let elapsed = started.elapsed();

    let mut problems: Vec<String> = runs.iter().flat_map(|r| r.problems.clone()).collect();
    for (chat, run) in runs.iter().enumerate() {
        problems.extend(check_stored(&rig, chat, run).await);
    }
    let searches = rig.functions.seats_searches().await;
    if searches != chats {
        problems.push(format!(
            "{searches} award searches upstream for {chats} distinct searches"
        ));
    }

    let turns = chats * 3;
    let latencies: Vec<Duration> = runs.iter().flat_map(|r| r.latencies.clone()).collect();
    println!(
        "\n{chats} chats at once, 3 turns each (flight, text, the same flight again): {turns} turns in {:.2} s, {:.1} turns/s",
        elapsed.as_secs_f64(),
        turns as f64 / elapsed.as_secs_f64()
    );
    println!("{}", Percentiles::of(latencies).row("turn latency"));
    println!("award searches upstream: {searches} (one per chat expected)");
    if let Some(kib) = peak_rss_kib() {
        println!(
            "peak RSS of the bench process: {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
    if problems.is_empty() {
        println!(
            "checks: every message stored once and in order, 0 duplicate tool executions, 0 lost patches"
        );
    } else {
        for problem in problems.iter().take(20) {
            eprintln!("{problem}");
        }
        panic!("{} problems under load", problems.len());
    }
}
