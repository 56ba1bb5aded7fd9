//! Exactly-once turns through the router against DynamoDB Local and the fakes: resent
//! requests with one `Idempotency-Key`, resuming a dropped stream with `Last-Event-ID`,
//! cancelling a running turn, and a turn its host ended.

use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::common::{Event, Rig, Turn, flight_args};
use serde_json::{Value, json};
use shared::domain::chat::Role;
use shared::domain::tool_call::{ToolCallStatus, ToolName};
use shared::ledger::{Claim, ClaimMode, ClaimRequest};
use shared::turns::{StoredEvent, TurnRecord, TurnStatus, TurnStore};
use test_support::dynamo_faults::{DynamoFaults, Fault};
use test_support::fake_llm::Reply;

/// (id, name, data) of every event: what must be identical for every response of a turn.
fn sequence(turn: &Turn) -> Vec<(Option<u64>, String, Value)> {
    turn.events
        .iter()
        .map(|e| (e.id, e.name.clone(), e.data.clone()))
        .collect()
}

fn ids(events: &[Event]) -> Vec<u64> {
    events.iter().filter_map(|e| e.id).collect()
}

async fn ten_resends(with_chat: bool) {
    let rig = Rig::start().await;
    let user = test_support::unique("resend");
    let token = rig.token(&user);
    let mut body = json!({"message": "Tell me about lounges."});
    let mut earlier_llm_calls = 0;
    if with_chat {
        rig.llm.push(Reply::text("Hi."));
        let chat_id = rig
            .chat(Some(&token), json!({"message": "hi"}))
            .await
            .chat_id();
        body["chat_id"] = json!(chat_id);
        earlier_llm_calls = 1;
    }
    let answer = "Lounges are quiet rooms at airports where you can wait in comfort.";
    rig.llm
        .push(Reply::text(answer).with_chunk_delay(Duration::from_millis(20)));
    let turns = futures::future::join_all(
        (0..10).map(|_| rig.chat_keyed(&token, "msg-0001", body.clone())),
    )
    .await;

    assert!(
        turns.iter().all(|t| t.status == 200),
        "{:?}",
        turns.iter().map(|t| t.status).collect::<Vec<_>>()
    );
    assert_eq!(
        rig.llm.request_count(),
        earlier_llm_calls + 1,
        "one LLM call for ten requests"
    );
    let first = sequence(&turns[0]);
    assert_eq!(turns[0].text(), answer);
    assert_eq!(first.last().map(|e| e.1.as_str()), Some("done"));
    for turn in &turns {
        assert_eq!(
            sequence(turn),
            first,
            "every response carries the same event sequence"
        );
    }
    let ids: Vec<u64> = ids(&turns[0].events);
    assert_eq!(
        ids,
        (0..ids.len() as u64).collect::<Vec<_>>(),
        "ids count up from 0 without gaps"
    );
    let chats: HashSet<String> = turns.iter().map(Turn::chat_id).collect();
    assert_eq!(chats.len(), 1, "one chat");
    let chat_id = turns[0].chat_id();
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 50)
        .await
        .unwrap();
    let count = |role: Role, text: &str| {
        history
            .iter()
            .filter(|m| m.role == role && m.content == text)
            .count()
    };
    assert_eq!(
        count(Role::User, "Tell me about lounges."),
        1,
        "one user message"
    );
    assert_eq!(count(Role::Assistant, answer), 1, "one answer");

    // After the turn: a resend replays it from the log, still without a model call.
    let replay = rig.chat_keyed(&token, "msg-0001", body.clone()).await;
    assert_eq!(sequence(&replay), first);
    assert_eq!(rig.llm.request_count(), earlier_llm_calls + 1);

    // The same key with another body is refused.
    body["message"] = json!("Something else.");
    let reused = rig.chat_keyed(&token, "msg-0001", body).await;
    assert_eq!(reused.status, 422, "{}", reused.json);
    assert_eq!(
        reused.json["error"]["code"],
        json!("idempotency_key_reused")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_resends_with_one_key_make_one_turn_in_a_new_chat() {
    ten_resends(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_resends_with_one_key_make_one_turn_in_an_existing_chat() {
    ten_resends(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_drops_after_the_first_token_resumes_without_gap_or_duplicate() {
    let rig = Rig::start().await;
    let user = test_support::unique("train");
    let token = rig.token(&user);
    let answer =
        "The train went into a tunnel, but every word of this answer still arrives in order.";
    rig.llm
        .push(Reply::text(answer).with_chunk_delay(Duration::from_millis(40)));
    let started = Instant::now();
    let response = chat_router::handler::handle(
        &rig.deps,
        common::post_chat(Some(&token), &json!({"message": "Tell me a story."})),
    )
    .await;
    let dropped = Turn::read_until(response, started, |e| e.name == "assistant_token").await;
    let last = dropped.events.last().and_then(|e| e.id).unwrap_or(0);
    let turn_id = dropped.first("init")["turn_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let chat_id = dropped.chat_id();

    let resumed = rig.resume(&token, &chat_id, &turn_id, Some(last)).await;
    assert_eq!(resumed.status, 200, "{}", resumed.json);
    let mut all = dropped.events.clone();
    all.extend(resumed.events.clone());
    assert_eq!(
        ids(&all),
        (0..all.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    let text: String = all
        .iter()
        .filter(|e| e.name == "assistant_token")
        .filter_map(|e| e.data["content"].as_str())
        .collect();
    assert_eq!(text, answer);
    assert_eq!(resumed.names().last(), Some(&"done"));
    assert_eq!(rig.llm.request_count(), 1, "one LLM call");
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap();
    assert_eq!(
        history.last().map(|m| m.content.as_str()),
        Some(answer),
        "the stored answer is complete"
    );

    // `?after=` works like the header; another user sees nothing.
    let (status, _) = rig
        .get(
            &rig.token("intruder"),
            &format!("/chats/{chat_id}/turns/{turn_id}/events"),
        )
        .await;
    assert_eq!(status, 404);

    // Resuming the ended turn at or past its `done` ends at once with nothing to add, not
    // at the invocation's deadline (found by the contract check).
    let done = resumed.events.last().and_then(|e| e.id).unwrap_or(0);
    for after in [done, done + 1000] {
        let asked = Instant::now();
        let past = rig.resume(&token, &chat_id, &turn_id, Some(after)).await;
        assert_eq!(past.status, 200, "{}", past.json);
        assert!(past.events.is_empty(), "after {after}: {:?}", past.names());
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "after {after}: took {:?}",
            asked.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_stops_a_turn_whose_tool_is_slow_and_its_result_never_counts() {
    use wiremock::matchers::path;
    use wiremock::{Mock, ResponseTemplate};
    let rig = Rig::start().await;
    // The award search hangs for 4 s; the cancel comes long before.
    Mock::given(path("/search"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": []}))
                .set_delay(Duration::from_secs(4)),
        )
        .with_priority(1)
        .mount(&rig.functions.seats_upstream)
        .await;
    let user = test_support::unique("stop");
    let token = rig.token(&user);
    rig.llm
        .push(Reply::tool_call("search_flights", flight_args()));
    rig.llm.push(Reply::text("This must never be asked for."));
    let started = Instant::now();
    let response = chat_router::handler::handle(
        &rig.deps,
        common::post_chat(
            Some(&token),
            &json!({"message": "Flights to Tokyo, please."}),
        ),
    )
    .await;
    // Hang up once the call started, then stop the turn from "another device".
    let seen = Turn::read_until(response, started, |e| e.name == "tool_started").await;
    let turn_id = seen.first("init")["turn_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let chat_id = seen.chat_id();
    let (status, body) = rig
        .post(&token, &format!("/chats/{chat_id}/turns/{turn_id}/cancel"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancel_requested"], json!(true));
    let (status, _) = rig
        .post(
            &rig.token("intruder"),
            &format!("/chats/{chat_id}/turns/{turn_id}/cancel"),
        )
        .await;
    assert_eq!(status, 404, "only the owner may stop a turn");

    let rest = rig.resume(&token, &chat_id, &turn_id, Some(0)).await;
    let took = started.elapsed();
    assert_eq!(rest.names().last(), Some(&"done"), "{:?}", rest.names());
    // Nothing was said before the stop: the answer is the short note, marked as stopped.
    assert_eq!(rest.first("final")["message"]["stopped"], json!(true));
    assert_eq!(rest.text(), "Stopped at your request.");
    assert!(
        took < Duration::from_secs(4),
        "stopped before the slow tool answered ({took:?})"
    );
    assert!(
        rest.all("tool_result")
            .iter()
            .all(|r| r["status"] != json!("succeeded")),
        "no succeeded result: {:?}",
        rest.all("tool_result")
    );
    assert_eq!(rig.llm.request_count(), 1, "no model call after the cancel");

    // The aborted call is cancelled in the ledger, and stays so after the slow answer.
    tokio::time::sleep(Duration::from_millis(4500).saturating_sub(started.elapsed())).await;
    let calls = rig
        .deps
        .ledger
        .list(&user, &chat_id, 10, None)
        .await
        .unwrap();
    assert!(!calls.items.is_empty());
    for call in &calls.items {
        assert_eq!(
            call.status,
            ToolCallStatus::Canceled,
            "{}: {:?}",
            call.tool,
            call.status
        );
    }
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap();
    let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant],
        "user, then the stopped answer"
    );
    assert_eq!(history[1].content, "Stopped at your request.");
    assert!(history[1].stopped);
    let record = rig.deps.turns.get(&user, &chat_id, &turn_id).await.unwrap();
    assert_eq!(record.status, TurnStatus::Finished);
}

#[tokio::test]
async fn a_turn_its_host_ended_reads_as_interrupted() {
    let rig = Rig::start().await;
    let user = test_support::unique("gone");
    let token = rig.token(&user);
    // A chat whose host then died in the middle of a second turn (its turn log is readable
    // only while its chat exists).
    rig.llm.push(Reply::text("Hi."));
    let chat_id = rig
        .chat(Some(&token), json!({"message": "hi"}))
        .await
        .chat_id();
    let now = time::OffsetDateTime::now_utc();
    let turn = TurnRecord {
        turn_id: shared::ids::new_id(),
        owner_id: user.clone(),
        chat_id,
        created: false,
        fingerprint: "f".into(),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now - time::Duration::seconds(60),
        created_at: now - time::Duration::seconds(90),
        refusal: None,
        alive_until: None,
        host: 0,
        request: None,
    };
    rig.deps.turns.begin(&turn).await.unwrap();
    let token_event = StoredEvent {
        seq: 1,
        event: "assistant_token".into(),
        data: json!({"content": "Half an ans"}).to_string(),
    };
    rig.deps.turns.append(&turn, &[token_event]).await.unwrap();

    let resumed = rig.resume(&token, &turn.chat_id, &turn.turn_id, None).await;
    assert_eq!(
        resumed.names(),
        ["init", "assistant_token", "error", "done"]
    );
    assert_eq!(resumed.first("error")["code"], json!("interrupted"));
    assert_eq!(ids(&resumed.events), [0, 1, 2, 3]);
    // Read again: the same ending, written once.
    let again = rig
        .resume(&token, &turn.chat_id, &turn.turn_id, Some(1))
        .await;
    assert_eq!(ids(&again.events), [2, 3]);
    let record = rig
        .deps
        .turns
        .get(&user, &turn.chat_id, &turn.turn_id)
        .await
        .unwrap();
    assert_eq!(record.status, TurnStatus::Interrupted);
}

/// What the dead host of [`chat_held_by_a_silent_turn`] logged: half an answer.
fn half_answer() -> Vec<StoredEvent> {
    vec![StoredEvent {
        seq: 1,
        event: "assistant_token".into(),
        data: json!({"content": "Half an ans"}).to_string(),
    }]
}

/// A user's chat held by a turn whose host died in the middle: begun under `key` for
/// `message`, with `logged` in its log, its last sign of life `silent_for` ago (its deadline
/// still a minute ahead).
struct HeldChat {
    user: String,
    token: String,
    chat_id: String,
    turn: TurnRecord,
}

async fn chat_held_by_a_silent_turn(
    rig: &Rig,
    key: &str,
    message: &str,
    silent_for: time::Duration,
    logged: Vec<StoredEvent>,
) -> HeldChat {
    let user = test_support::unique("host");
    let token = rig.token(&user);
    rig.llm.push(Reply::text("Hi."));
    let chat_id = rig
        .chat(Some(&token), json!({"message": "hi"}))
        .await
        .chat_id();
    // The host's clock: its writes happened `silent_for` ago.
    let then = shared::clock::OffsetClock::new(-silent_for);
    let now = time::OffsetDateTime::now_utc() - silent_for;
    let request: chat_router::handler::ChatRequest =
        serde_json::from_value(json!({"chat_id": chat_id, "message": message})).unwrap();
    let turn = TurnRecord {
        turn_id: shared::turns::turn_id_for_key(&user, key),
        owner_id: user.clone(),
        chat_id: chat_id.clone(),
        created: false,
        // The resend's own: the router's fingerprint of the same request.
        fingerprint: chat_router::handler::fingerprint(&request, message),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now + time::Duration::seconds(90),
        // Begun after the chat's earlier messages were written, as a real turn is; only
        // its host's writes lie in the past.
        created_at: time::OffsetDateTime::now_utc(),
        refusal: None,
        alive_until: Some(now + shared::turns::LIVENESS),
        host: 0,
        request: Some(Box::new(shared::turns::TurnRequest {
            message: message.to_owned(),
            agent: None,
            timezone: None,
            language: None,
            debug: false,
        })),
    };
    let host = shared::turns::DynamoTurnStore::with_clock(
        test_support::dynamodb().await,
        test_support::require_env("CHATS_TABLE"),
        std::sync::Arc::new(then),
    );
    host.begin(&turn).await.unwrap();
    // Logged as the host did, its last sign of life.
    assert!(!host.append(&turn, &logged).await.unwrap());
    let lease = shared::chats::TurnLease {
        turn_id: turn.turn_id.clone(),
        until: turn.deadline,
    };
    rig.deps
        .chats
        .open_held(&user, &chat_id, &lease, 1)
        .await
        .unwrap();
    HeldChat {
        user,
        token,
        chat_id,
        turn,
    }
}

impl HeldChat {
    /// The client whose stream broke asks for its turn again (`key`: the `Idempotency-Key`
    /// of `message`'s first request), and gets an answer within 5 s.
    async fn ask_again(&self, rig: &Rig, ask: Ask, key: &str, message: &str) -> Turn {
        let started = Instant::now();
        let again = match ask {
            Ask::Resend => {
                let body = json!({"chat_id": self.chat_id, "message": message});
                rig.chat_keyed(&self.token, key, body).await
            }
            Ask::Resume => {
                rig.resume(&self.token, &self.chat_id, &self.turn.turn_id, None)
                    .await
            }
        };
        assert_eq!(again.status, 200, "{:?}", again.json);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        again
    }

    /// The chat's next message, answered `answer` by the model.
    async fn next_message(&self, rig: &Rig, answer: &str) -> Turn {
        rig.llm.push(Reply::text(answer));
        let body = json!({"chat_id": self.chat_id, "message": "hello?"});
        rig.chat(Some(&self.token), body).await
    }
}

#[tokio::test]
async fn a_resend_to_a_turn_whose_host_died_ends_it_interrupted_and_frees_the_chat() {
    let rig = Rig::start().await;
    let message = "Business FRA to JFK";
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-crash",
        message,
        time::Duration::seconds(30),
        half_answer(),
    )
    .await;

    // The client resends the same message with the same key, as after a broken stream.
    let started = std::time::Instant::now();
    let body = json!({"chat_id": held.chat_id, "message": message});
    let resent = rig.chat_keyed(&held.token, "k-crash", body).await;
    assert_eq!(resent.status, 200, "{:?}", resent.json);
    assert_eq!(resent.names(), ["init", "assistant_token", "error", "done"]);
    assert_eq!(resent.first("error")["code"], json!("interrupted"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let record = rig
        .deps
        .turns
        .get(&held.user, &held.chat_id, &held.turn.turn_id)
        .await
        .unwrap();
    assert_eq!(record.status, TurnStatus::Interrupted);

    // The chat is free: the next message runs at once.
    let next = held.next_message(&rig, "Here again.").await;
    assert_eq!(next.status, 200, "{:?}", next.json);
    assert_eq!(next.names().last(), Some(&"done"));
    assert_eq!(next.text(), "Here again.");
}

/// A resend to a turn whose host died before its log held more than `logged` (nothing, or
/// its `init`): the resend runs the turn and answers it; the stream has no gap and no
/// duplicate, and the log replays as the resend saw it.
/// How a client whose stream broke asks for its turn again.
#[derive(Clone, Copy)]
enum Ask {
    /// `POST /chat` with the same body and `Idempotency-Key`.
    Resend,
    /// `GET …/turns/{turn_id}/events`, no body.
    Resume,
}

async fn a_turn_whose_host_died_early_is_run_again(logged: Vec<StoredEvent>, ask: Ask) {
    let rig = Rig::start().await;
    let message = "Hello again";
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-early",
        message,
        time::Duration::seconds(30),
        logged,
    )
    .await;
    let calls_before = rig.llm.request_count();

    rig.llm.push(Reply::text("Answered by the new host."));
    let resent = held.ask_again(&rig, ask, "k-early", message).await;
    assert_eq!(resent.names().first(), Some(&"init"));
    assert_eq!(resent.names().last(), Some(&"done"));
    assert!(!resent.names().contains(&"error"), "{:?}", resent.names());
    assert_eq!(resent.text(), "Answered by the new host.");
    assert_eq!(
        ids(&resent.events),
        (0..resent.events.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    assert_eq!(rig.llm.request_count(), calls_before + 1, "one model call");

    let record = rig
        .deps
        .turns
        .get(&held.user, &held.chat_id, &held.turn.turn_id)
        .await
        .unwrap();
    assert_eq!(record.status, TurnStatus::Finished);
    assert_eq!(record.host, 1, "taken over once");
    // The log reads back as the resend got it (the replay's `init` may be the logged one).
    let replay = rig
        .resume(&held.token, &held.chat_id, &held.turn.turn_id, Some(0))
        .await;
    assert_eq!(sequence(&replay), sequence(&resent)[1..].to_vec());
    // The user's message and the answer are in the chat once each.
    let (status, page) = rig
        .get(&held.token, &format!("/chats/{}/messages", held.chat_id))
        .await;
    assert_eq!(status, 200, "{page}");
    let contents: Vec<&str> = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents.iter().filter(|c| **c == message).count(),
        1,
        "{contents:?}"
    );
    assert_eq!(
        contents
            .iter()
            .filter(|c| **c == "Answered by the new host.")
            .count(),
        1,
        "{contents:?}"
    );
    // The chat is free.
    let next = held.next_message(&rig, "Next.").await;
    assert_eq!(next.status, 200, "{:?}", next.json);
    assert_eq!(next.text(), "Next.");
}

#[tokio::test]
async fn a_resend_runs_a_turn_whose_host_died_before_logging_anything() {
    a_turn_whose_host_died_early_is_run_again(Vec::new(), Ask::Resend).await;
}

#[tokio::test]
async fn a_resume_runs_a_turn_whose_host_died_before_logging_anything() {
    a_turn_whose_host_died_early_is_run_again(Vec::new(), Ask::Resume).await;
}

#[tokio::test]
async fn a_resend_or_a_resume_runs_a_turn_whose_host_died_after_logging_init() {
    let init = StoredEvent {
        seq: 0,
        event: "init".into(),
        data: json!({"chat_id": "unused", "created": false, "turn_id": "unused", "language": "en"})
            .to_string(),
    };
    a_turn_whose_host_died_early_is_run_again(vec![init.clone()], Ask::Resend).await;
    a_turn_whose_host_died_early_is_run_again(vec![init], Ask::Resume).await;
}

#[tokio::test]
async fn a_turn_whose_dead_host_wrote_to_the_chat_is_not_run_again() {
    let rig = Rig::start().await;
    let message = "Business FRA to JFK";
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-wrote",
        message,
        time::Duration::seconds(30),
        Vec::new(),
    )
    .await;
    // Its first step reached the chat, its events never the log.
    rig.deps
        .chats
        .append_messages(
            &held.user,
            &held.chat_id,
            vec![shared::domain::chat::NewMessage::user(message)],
        )
        .await
        .unwrap();
    let calls_before = rig.llm.request_count();
    let body = json!({"chat_id": held.chat_id, "message": message});
    let resent = rig.chat_keyed(&held.token, "k-wrote", body).await;
    assert_eq!(resent.names(), ["init", "error", "done"]);
    assert_eq!(resent.first("error")["code"], json!("interrupted"));
    assert_eq!(rig.llm.request_count(), calls_before, "no model call");
    let next = held.next_message(&rig, "Free again.").await;
    assert_eq!(next.text(), "Free again.");
}

/// A call the dead host of `held` left running: `tool`'s, under a lease of a minute.
async fn left_running(rig: &Rig, held: &HeldChat, tool: ToolName) -> String {
    left_running_with(
        rig,
        held,
        tool,
        json!({"query": "left running", "top_k": 6}),
    )
    .await
}

async fn left_running_with(rig: &Rig, held: &HeldChat, tool: ToolName, request: Value) -> String {
    let claim = rig
        .deps
        .ledger
        .record_and_claim(ClaimRequest {
            owner_id: held.user.clone(),
            chat_id: held.chat_id.clone(),
            tool,
            request,
            mode: ClaimMode::Run {
                lease: time::Duration::minutes(1),
            },
        })
        .await
        .unwrap();
    let Claim::Claimed(call) = claim else {
        panic!("not claimed: {claim:?}")
    };
    call.id
}

#[tokio::test]
async fn a_resend_runs_a_turn_again_and_frees_the_search_its_dead_host_left_running() {
    let rig = Rig::start().await;
    let message = "What is the baggage allowance?";
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-search",
        message,
        time::Duration::seconds(30),
        Vec::new(),
    )
    .await;
    let call_id = left_running(&rig, &held, ToolName::SEARCH_KNOWLEDGE_BASE).await;

    rig.llm.push(Reply::text("Answered again."));
    let body = json!({"chat_id": held.chat_id, "message": message});
    let resent = rig.chat_keyed(&held.token, "k-search", body).await;
    assert_eq!(resent.text(), "Answered again.", "{:?}", resent.names());
    // The orphan's lease ended: the same search in the new run takes it over at once.
    let call = rig
        .deps
        .ledger
        .get(&held.user, &held.chat_id, &call_id)
        .await
        .unwrap();
    assert_eq!(call.status, ToolCallStatus::Running);
    assert!(
        call.lease_until
            .is_some_and(|until| until <= time::OffsetDateTime::now_utc()),
        "{:?}",
        call.lease_until
    );
}

/// Appends `events` to `held`'s log as its host did, `silent_for` ago: the host's last sign
/// of life stays in the past.
async fn logged_by_its_host(held: &HeldChat, silent_for: time::Duration, events: &[StoredEvent]) {
    let host = shared::turns::DynamoTurnStore::with_clock(
        test_support::dynamodb().await,
        test_support::require_env("CHATS_TABLE"),
        std::sync::Arc::new(shared::clock::OffsetClock::new(-silent_for)),
    );
    assert!(!host.append(&held.turn, events).await.unwrap());
}

fn logged(seq: u64, event: &str, data: Value) -> StoredEvent {
    StoredEvent {
        seq,
        event: event.into(),
        data: data.to_string(),
    }
}

/// A turn whose host died while its first step's search ran (`init` and `tool_started`
/// logged, the call left running): the resend or resume goes on from that step. The model
/// is not asked for the step again, the search is taken over under the same job id, the
/// client gets no event twice and none is missing, and the turn answers.
async fn a_turn_whose_host_died_while_its_search_ran_goes_on(ask: Ask) {
    let rig = Rig::start().await;
    let message = "What are the lounge access rules?";
    let silent = time::Duration::seconds(30);
    let held = chat_held_by_a_silent_turn(&rig, "k-step", message, silent, Vec::new()).await;
    let job_id = left_running(&rig, &held, ToolName::SEARCH_KNOWLEDGE_BASE).await;
    let init = json!({"chat_id": held.chat_id, "created": false, "turn_id": held.turn.turn_id, "language": "en"});
    let started = json!({"tool": "search_knowledge_base", "job_id": job_id, "deduped": false, "status": "running"});
    logged_by_its_host(
        &held,
        silent,
        &[logged(0, "init", init), logged(1, "tool_started", started)],
    )
    .await;
    let calls_before = rig.llm.request_count();

    rig.llm.push(Reply::text("Nothing on lounges, sorry."));
    let resent = held.ask_again(&rig, ask, "k-step", message).await;
    assert_eq!(
        resent.shape(),
        [
            "init",
            "tool_started",
            "tool_result",
            "assistant_token",
            "final",
            "done"
        ]
    );
    assert_eq!(
        ids(&resent.events),
        (0..resent.events.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    let result = resent.first("tool_result");
    assert_eq!(result["job_id"], json!(job_id), "the same call, taken over");
    assert_eq!(resent.text(), "Nothing on lounges, sorry.");
    // One model call, the next step's: it sees the replayed call and its result.
    assert_eq!(rig.llm.request_count(), calls_before + 1, "one model call");
    let tool_message = rig.tool_message_seen(calls_before);
    assert!(tool_message.contains("nothing relevant"), "{tool_message}");
    let call = rig
        .deps
        .ledger
        .get(&held.user, &held.chat_id, &job_id)
        .await
        .unwrap();
    assert_eq!(call.status, ToolCallStatus::Succeeded);
    assert_eq!(
        call.attempt, 2,
        "the dead host's attempt, then the new host's"
    );

    let record = rig
        .deps
        .turns
        .get(&held.user, &held.chat_id, &held.turn.turn_id)
        .await
        .unwrap();
    assert_eq!(record.status, TurnStatus::Finished);
    assert_eq!(record.host, 1);
    // The user's message, the step and the answer are in the chat once each.
    let (status, page) = rig
        .get(&held.token, &format!("/chats/{}/messages", held.chat_id))
        .await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().cloned().unwrap_or_default();
    let count = |role: &str, needle: &str| {
        items
            .iter()
            .filter(|m| m["role"] == json!(role))
            .filter(|m| m["content"].as_str().is_some_and(|c| c.contains(needle)))
            .count()
    };
    assert_eq!(count("user", message), 1, "{items:?}");
    assert_eq!(count("assistant", "Nothing on lounges"), 1, "{items:?}");
    assert_eq!(count("tool", ""), 1, "{items:?}");
    let next = held.next_message(&rig, "Next.").await;
    assert_eq!(next.text(), "Next.");
}

#[tokio::test]
async fn a_resend_goes_on_from_the_step_a_dead_host_logged() {
    a_turn_whose_host_died_while_its_search_ran_goes_on(Ask::Resend).await;
}

#[tokio::test]
async fn a_resume_goes_on_from_the_step_a_dead_host_logged() {
    a_turn_whose_host_died_while_its_search_ran_goes_on(Ask::Resume).await;
}

/// The step of `make dev`'s flight turn: a search and quick replies beside it. A UI skill
/// only checks its request, so the step goes on like a search alone.
#[tokio::test]
async fn a_logged_step_with_quick_replies_beside_its_search_goes_on() {
    let rig = Rig::start().await;
    let message = "What are the lounge rules?";
    let silent = time::Duration::seconds(30);
    let held = chat_held_by_a_silent_turn(&rig, "k-step-ui", message, silent, Vec::new()).await;
    let search = left_running(&rig, &held, ToolName::SEARCH_KNOWLEDGE_BASE).await;
    let replies = json!({"replies": ["Lounges in Frankfurt", "Lounges in Munich"]});
    let ui = left_running_with(&rig, &held, ToolName::new("suggest_replies"), replies).await;
    let init = json!({"chat_id": held.chat_id, "created": false, "turn_id": held.turn.turn_id, "language": "en"});
    let started = |tool: &str, job_id: &str| json!({"tool": tool, "job_id": job_id, "deduped": false, "status": "running"});
    logged_by_its_host(
        &held,
        silent,
        &[
            logged(0, "init", init),
            logged(1, "tool_started", started("search_knowledge_base", &search)),
            logged(2, "tool_started", started("suggest_replies", &ui)),
        ],
    )
    .await;
    let calls_before = rig.llm.request_count();
    rig.llm.push(Reply::text("Nothing on lounges, sorry."));
    let resent = rig
        .chat_keyed(
            &held.token,
            "k-step-ui",
            json!({"chat_id": held.chat_id, "message": message}),
        )
        .await;
    assert!(resent.all("error").is_empty(), "{:?}", resent.names());
    assert_eq!(resent.names().last(), Some(&"done"));
    assert_eq!(resent.text(), "Nothing on lounges, sorry.");
    assert_eq!(
        ids(&resent.events),
        (0..resent.events.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    assert_eq!(resent.all("tool_started").len(), 2, "{:?}", resent.names());
    assert_eq!(resent.all("ui").len(), 1, "{:?}", resent.names());
    assert_eq!(rig.llm.request_count(), calls_before + 1, "one model call");
    for job_id in [&search, &ui] {
        let call = rig
            .deps
            .ledger
            .get(&held.user, &held.chat_id, job_id)
            .await
            .unwrap();
        assert_eq!(call.status, ToolCallStatus::Succeeded, "{job_id}");
    }
}

#[tokio::test]
async fn a_logged_step_that_called_a_tool_that_must_not_run_twice_is_not_taken_over() {
    let rig = Rig::start().await;
    let silent = time::Duration::seconds(30);
    let held = chat_held_by_a_silent_turn(&rig, "k-step-gpt", "Tell me", silent, Vec::new()).await;
    let job_id = left_running(&rig, &held, ToolName::ASK_GPT).await;
    let started =
        json!({"tool": "ask_gpt", "job_id": job_id, "deduped": false, "status": "running"});
    let init = json!({"chat_id": held.chat_id, "created": false, "turn_id": held.turn.turn_id, "language": "en"});
    logged_by_its_host(
        &held,
        silent,
        &[logged(0, "init", init), logged(1, "tool_started", started)],
    )
    .await;
    let calls_before = rig.llm.request_count();
    let body = json!({"chat_id": held.chat_id, "message": "Tell me"});
    let resent = rig.chat_keyed(&held.token, "k-step-gpt", body).await;
    assert_eq!(resent.names(), ["init", "tool_started", "error", "done"]);
    assert_eq!(resent.first("error")["code"], json!("interrupted"));
    assert_eq!(rig.llm.request_count(), calls_before, "no model call");
}

#[tokio::test]
async fn a_turn_whose_dead_host_left_a_call_that_must_not_run_twice_is_not_run_again() {
    let rig = Rig::start().await;
    let message = "Tell me about Lisbon";
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-gpt",
        message,
        time::Duration::seconds(30),
        Vec::new(),
    )
    .await;
    left_running(&rig, &held, ToolName::ASK_GPT).await;
    let calls_before = rig.llm.request_count();
    let body = json!({"chat_id": held.chat_id, "message": message});
    let resent = rig.chat_keyed(&held.token, "k-gpt", body).await;
    assert_eq!(resent.names(), ["init", "error", "done"]);
    assert_eq!(resent.first("error")["code"], json!("interrupted"));
    assert_eq!(rig.llm.request_count(), calls_before, "no model call");
}

#[tokio::test]
async fn a_new_message_takes_over_a_chat_whose_turn_lost_its_host() {
    let rig = Rig::start().await;
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-dead",
        "first",
        time::Duration::seconds(30),
        half_answer(),
    )
    .await;
    let next = held.next_message(&rig, "Taken over.").await;
    assert_eq!(next.status, 200, "{:?}", next.json);
    assert_eq!(next.text(), "Taken over.");
    // The dead turn's log ends as interrupted, for a client that resumes it.
    let resumed = rig
        .resume(&held.token, &held.chat_id, &held.turn.turn_id, None)
        .await;
    assert_eq!(
        resumed.names(),
        ["init", "assistant_token", "error", "done"]
    );
}

#[tokio::test]
async fn a_turn_whose_host_is_alive_keeps_its_chat() {
    let rig = Rig::start().await;
    // Its last write a second ago: alive.
    let held = chat_held_by_a_silent_turn(
        &rig,
        "k-live",
        "first",
        time::Duration::seconds(1),
        half_answer(),
    )
    .await;
    let next = held.next_message(&rig, "unused").await;
    assert_eq!(next.status, 409, "{:?}", next.json);
    assert_eq!(
        next.json["error"]["details"]["turn_id"],
        json!(held.turn.turn_id)
    );
    let record = rig
        .deps
        .turns
        .get(&held.user, &held.chat_id, &held.turn.turn_id)
        .await
        .unwrap();
    assert_eq!(record.status, TurnStatus::Running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_clients_interleaving_fifty_times_keep_history_alternating() {
    // 200 requests of one user in seconds: no turn limit here.
    let rig = Rig::with(
        |vars| vars.push(("USER_TURNS_PER_MINUTE".into(), "0".into())),
        None,
    )
    .await;
    let user = test_support::unique("tabs");
    let token = rig.token(&user);
    rig.llm.push(Reply::text("Hello."));
    let chat_id = rig
        .chat(Some(&token), json!({"message": "hi"}))
        .await
        .chat_id();
    for _ in 0..100 {
        rig.llm.push(
            Reply::text("An answer.").with_chunk_delay(Duration::from_millis(fastrand::u64(0..4))),
        );
    }
    // Each client sends its message; on 409 it follows the running turn, then sends again
    // (same key), as a client of the contract would.
    let client = |name: &'static str, round: usize| {
        let (rig, token, chat_id) = (&rig, token.clone(), chat_id.clone());
        async move {
            tokio::time::sleep(Duration::from_millis(fastrand::u64(0..15))).await;
            let key = format!("{name}-{round}");
            let body = json!({"chat_id": chat_id, "message": format!("{name} {round}")});
            loop {
                let turn = rig.chat_keyed(&token, &key, body.clone()).await;
                match turn.status {
                    200 => return turn,
                    409 => {
                        let running = turn.json["error"]["details"]["turn_id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned();
                        let followed = rig.resume(&token, &chat_id, &running, None).await;
                        assert_eq!(followed.names().last(), Some(&"done"));
                    }
                    other => panic!("{other}: {}", turn.json),
                }
            }
        }
    };
    for round in 0..50 {
        let (a, b) = tokio::join!(client("a", round), client("b", round));
        assert_eq!(a.names().last(), Some(&"done"));
        assert_eq!(b.names().last(), Some(&"done"));
    }
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 500)
        .await
        .unwrap();
    assert_eq!(
        history.len(),
        2 + 200,
        "every message and every answer, once"
    );
    for pair in history.chunks(2) {
        assert_eq!(pair[0].role, Role::User, "{history:?}");
        assert_eq!(pair[1].role, Role::Assistant, "{history:?}");
    }
    assert_eq!(rig.llm.request_count(), 101);
}

/// DynamoDB answers each of the turn's writes (the chat's creation with the turn record and
/// count, the call's claim, its end with the cache entry, the answer, the event log) and its
/// first read with the errors a busy table sends (transaction conflicts, throttling): the
/// SDK's retries and the stores' own bring the flight turn through with nothing lost or
/// written twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flight_turn_completes_through_write_conflicts_and_throttling() {
    let faults = DynamoFaults::start().await;
    faults
        .fail_matching(
            "TransactWriteItems",
            "OR #status = :refused",
            Fault::CanceledByConflict,
            2,
        )
        .fail_matching(
            "TransactWriteItems",
            "OR #status = :refused",
            Fault::Throttling,
            1,
        )
        .fail_matching(
            "TransactWriteItems",
            "attribute_not_exists(pk) AND (",
            Fault::CanceledByConflict,
            2,
        )
        .fail_matching("TransactWriteItems", "CACHE#", Fault::CanceledByConflict, 1)
        .fail_matching("TransactWriteItems", "CACHE#", Fault::Throttling, 1)
        .fail_matching("TransactWriteItems", "MSG#S", Fault::CanceledByConflict, 2)
        .fail_matching("TransactWriteItems", "EV#", Fault::Throttling, 1)
        .fail("GetItem", Fault::ThroughputExceeded, 1)
        .fail("TransactWriteItems", Fault::CanceledByConflict, 1);
    let dynamodb = shared::aws::dynamodb_config(&test_support::sdk_config().await)
        .interceptor(faults.clone())
        .build();
    let rig = Rig::with_dynamodb(|_| {}, None, aws_sdk_dynamodb::Client::from_conf(dynamodb)).await;
    // A day no other test searches, so the search runs and its result is cached.
    let mut args = flight_args();
    let day = 400 + time::OffsetDateTime::now_utc().nanosecond() % 5000;
    let date = test_support::clock::date_in(i64::from(day));
    args["depart_date"] = json!(date.to_string());
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", args)]));
    let user = test_support::unique("busy");
    let token = rig.token(&user);
    let turn = rig
        .chat_keyed(
            &token,
            &test_support::unique("key"),
            json!({"message": format!("Business flights FRA to JFK on {date}")}),
        )
        .await;

    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(
        turn.names()[turn.names().len() - 2..],
        ["final", "done"],
        "{:?}",
        turn.names()
    );
    assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));
    assert_eq!(
        faults.remaining(),
        0,
        "every fault was met: {:?}",
        faults.injected()
    );
    assert_eq!(faults.injected().len(), 12);

    let chat_id = turn.chat_id();
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 20)
        .await
        .unwrap();
    let users = history.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(users, 1, "the user's message is stored once");
    assert_eq!(
        history.last().map(|m| (m.role, m.content.clone())),
        Some((
            Role::Assistant,
            turn.first("final")["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        )),
        "the answer shown is the answer stored"
    );
    assert!(history.iter().zip(0u64..).all(|(m, seq)| m.seq == seq));
    let calls = rig
        .deps
        .ledger
        .list(&user, &chat_id, 10, None)
        .await
        .unwrap();
    assert_eq!(calls.items.len(), 1, "one tool call recorded");
    assert_eq!(calls.items[0].status, ToolCallStatus::Succeeded);
    assert_eq!(calls.items[0].attempt, 1, "run once");
    assert_eq!(rig.llm.request_count(), 1);
    let record = rig
        .deps
        .turns
        .get(
            &user,
            &chat_id,
            turn.first("init")["turn_id"].as_str().unwrap_or_default(),
        )
        .await
        .unwrap();
    assert_eq!(record.status, TurnStatus::Finished);
}

/// A cancel while the model is still streaming abandons the stream: the turn ends within
/// moments, not when the model would have finished, with `final` marked as stopped; what was
/// streamed until then stays the answer, in the stream and in history.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_abandons_an_answer_that_is_still_streaming() {
    let rig = Rig::start().await;
    let user = test_support::unique("stopstream");
    let token = rig.token(&user);
    // About 60 words at 250 ms each: 15 s if it ran to its end.
    let long = "word ".repeat(60);
    rig.llm
        .push(Reply::text(long.trim()).with_chunk_delay(Duration::from_millis(250)));
    let started = Instant::now();
    let response = chat_router::handler::handle(
        &rig.deps,
        common::post_chat(Some(&token), &json!({"message": "Tell me a long story."})),
    )
    .await;
    let seen = Turn::read_until(response, started, |e| e.name == "assistant_token").await;
    let turn_id = seen.first("init")["turn_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let chat_id = seen.chat_id();
    let (status, _) = rig
        .post(&token, &format!("/chats/{chat_id}/turns/{turn_id}/cancel"))
        .await;
    assert_eq!(status, 200);

    let rest = rig.resume(&token, &chat_id, &turn_id, Some(0)).await;
    assert_eq!(rest.names().last(), Some(&"done"), "{:?}", rest.names());
    assert!(
        rest.all("error").is_empty(),
        "a stop is no error: {:?}",
        rest.names()
    );
    let last = &rest.first("final")["message"];
    assert_eq!(last["stopped"], json!(true), "{last}");
    // What the client saw: the tokens streamed before the stop, and nothing after them.
    let shown = rest.text();
    assert!(
        shown.starts_with("word") && shown.len() < long.trim().len(),
        "{shown:?}"
    );
    assert_eq!(last["content"], json!(shown));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the stream was abandoned, not read to its end ({:?})",
        started.elapsed()
    );
    assert_eq!(rig.llm.request_count(), 1);
    // The tokens streamed before the stop were billed: an estimate is recorded.
    let since = time::OffsetDateTime::now_utc() - time::Duration::minutes(5);
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert!(
        usage[0].estimated && usage[0].completion_tokens > 0,
        "{usage:?}"
    );
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap();
    let stored: Vec<(Role, &str, bool)> = history
        .iter()
        .map(|m| (m.role, m.content.as_str(), m.stopped))
        .collect();
    assert_eq!(
        stored,
        [
            (Role::User, "Tell me a long story.", false),
            (Role::Assistant, shown.as_str(), true)
        ]
    );
}
