//! The exactly-once load check: 200 turns, 8 at a time, through the handler against
//! DynamoDB Local, moto, the fake LLM and the real flight functions over fake upstreams.
//! A quarter are flight searches; 20 % are sent twice with the same `Idempotency-Key` (the
//! second while the first runs); 10 % hang up after the first answer event and resume with
//! `Last-Event-ID`. It asserts, and prints: duplicate turns (LLM calls beyond one per
//! turn), lost answers (a turn whose client never got `done` and the whole answer, or whose
//! chat lacks it), and duplicate tool executions (Seats.aero searches beyond one per flight
//! turn).
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p chat-router --bench resend
//!
//! `cargo test --benches` (so `make test`) runs a 20-turn smoke pass.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/integration/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Event, Rig, Turn, flight_args, post_chat};
use futures::StreamExt;
use serde_json::{Value, json};
use shared::domain::chat::Role;
use test_support::fake_llm::{Reply, matchers};
use test_support::figures::{Percentiles, full_run};

const PARALLEL: usize = 8;

#[derive(Clone, Copy, PartialEq)]
enum Client {
    Plain,
    /// Sends the message again with the same key while the first request runs.
    Resends,
    /// Hangs up after the first answer event, then resumes.
    Drops,
}

struct Outcome {
    /// Every event the client got, in order, over all its requests.
    events: Vec<Event>,
    expected: String,
    chat_id: String,
    user: String,
    flight: bool,
    took: Duration,
}

fn answer_of(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| e.name == "assistant_token")
        .filter_map(|e| e.data["content"].as_str())
        .collect()
}

fn sequence(turn: &Turn) -> Vec<(Option<u64>, String, Value)> {
    turn.events
        .iter()
        .map(|e| (e.id, e.name.clone(), e.data.clone()))
        .collect()
}

async fn one_turn(rig: &Rig, i: usize, client: Client) -> Outcome {
    let user = test_support::unique("load");
    let token = rig.token(&user);
    let flight = i.is_multiple_of(4);
    let message = if flight {
        format!("flights please, turn {i}")
    } else {
        format!("tell me something, turn {i}")
    };
    let expected = format!("Answer to turn {i}: a few words that stream one by one.");
    let reply = if flight {
        Reply::tool_calls(vec![("search_flights", flight_args())])
    } else {
        Reply::text(expected.clone()).with_chunk_delay(Duration::from_millis(2))
    };
    rig.llm
        .when(matchers::last_user_contains(message.clone()), reply);
    let body = json!({"message": message});
    let key = format!("key-{i}");
    let started = Instant::now();
    let send = || {
        let mut req = post_chat(Some(&token), &body);
        req.headers_mut().insert(
            "idempotency-key",
            key.parse().unwrap_or_else(|e| panic!("{e}")),
        );
        req
    };
    let events = match client {
        Client::Plain => rig.send(send()).await.events,
        Client::Resends => {
            let again = async {
                tokio::time::sleep(Duration::from_millis(fastrand::u64(0..20))).await;
                rig.send(send()).await
            };
            let (first, second) = tokio::join!(rig.send(send()), again);
            assert_eq!(
                sequence(&first),
                sequence(&second),
                "turn {i}: a resend sees the same turn"
            );
            first.events
        }
        Client::Drops => {
            let response = chat_router::handler::handle(&rig.deps, send()).await;
            let cut = Turn::read_until(response, started, |e| {
                e.name == "assistant_token" || e.name == "tool_started"
            })
            .await;
            let last = cut.events.last().and_then(|e| e.id).unwrap_or(0);
            let turn_id = cut.first("init")["turn_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let rest = rig
                .resume(&token, &cut.chat_id(), &turn_id, Some(last))
                .await;
            let mut events = cut.events;
            events.extend(rest.events);
            events
        }
    };
    let chat_id = events
        .first()
        .and_then(|e| e.data["chat_id"].as_str())
        .unwrap_or_default()
        .to_owned();
    Outcome {
        events,
        expected,
        chat_id,
        user,
        flight,
        took: started.elapsed(),
    }
}

#[tokio::main]
async fn main() {
    let turns = if full_run() { 200 } else { 20 };
    let rig = Rig::start().await;
    let searches_before = rig.functions.seats_searches().await;
    let started = Instant::now();
    let outcomes: Vec<Outcome> = futures::stream::iter(0..turns)
        .map(|i| {
            let client = match i % 10 {
                3 | 7 => Client::Resends,
                5 => Client::Drops,
                _ => Client::Plain,
            };
            let rig = &rig;
            async move { one_turn(rig, i, client).await }
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    let wall = started.elapsed();

    let mut lost = 0;
    for outcome in &outcomes {
        let ids: Vec<u64> = outcome.events.iter().filter_map(|e| e.id).collect();
        let complete = ids == (0..ids.len() as u64).collect::<Vec<_>>()
            && outcome.events.last().map(|e| e.name.as_str()) == Some("done")
            && outcome.events.iter().any(|e| e.name == "final");
        let text = answer_of(&outcome.events);
        let answered = if outcome.flight {
            text.contains("FRA")
        } else {
            text == outcome.expected
        };
        let history = rig
            .deps
            .chats
            .recent_messages(&outcome.user, &outcome.chat_id, 20)
            .await
            .unwrap_or_default();
        let stored = history
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.content == text)
            && history.iter().filter(|m| m.role == Role::User).count() == 1;
        if !(complete && answered && stored) {
            lost += 1;
            eprintln!(
                "lost: complete {complete} answered {answered} stored {stored}: {:?}",
                outcome
                    .events
                    .iter()
                    .map(|e| (e.id, e.name.as_str()))
                    .collect::<Vec<_>>()
            );
        }
    }
    let flights = outcomes.iter().filter(|o| o.flight).count();
    let duplicate_turns = rig.llm.request_count().saturating_sub(turns);
    let duplicate_tools =
        (rig.functions.seats_searches().await - searches_before).saturating_sub(flights);
    let resent = outcomes.len() / 10 * 2;
    let dropped = outcomes.len() / 10;
    println!(
        "\n{turns} turns, {PARALLEL} at a time: {resent} resent with the same key, {dropped} dropped and resumed, {flights} flight searches"
    );
    println!(
        "{}",
        Percentiles::of(outcomes.iter().map(|o| o.took).collect()).row("client's time per turn")
    );
    println!("wall time {:.1} s", wall.as_secs_f64());
    println!(
        "duplicate turns: {duplicate_turns}, lost answers: {lost}, duplicate tool executions: {duplicate_tools}"
    );
    assert_eq!((duplicate_turns, lost, duplicate_tools), (0, 0, 0));
}
