//! What a request may carry, checked where it counts: the message's limits on the text that
//! is stored and sent to the model (after normalisation), a token subject every tool
//! function accepts, bodies that are JSON objects, `Idempotency-Key`s of visible ASCII, a
//! deleted chat's turns gone for good, and a cancel of an ended turn that says so. Each
//! through the router against DynamoDB Local and the fake model.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::{Rig, Turn};
use serde_json::json;
use shared::domain::chat::Role;
use test_support::fake_llm::Reply;

/// A message that is short as sent and long once NFKC-normalised (U+FDFA is 18 characters)
/// is measured by its normalised length: 413, no model call, nothing stored.
#[tokio::test]
async fn the_length_limit_reads_the_normalised_message() {
    let rig = Rig::start().await;
    let user = test_support::unique("nfkc");
    let token = rig.token(&user);
    // 500 code points, 9,000 characters once normalised (the default limit is 8,000).
    let turn = rig
        .chat(Some(&token), json!({"message": "\u{FDFA}".repeat(500)}))
        .await;
    assert_eq!(turn.status, 413, "{}", turn.json);
    assert_eq!(turn.json["error"]["code"], "payload_too_large");
    assert_eq!(rig.llm.request_count(), 0);
    let (_, chats) = rig.get(&token, "/chats").await;
    assert_eq!(chats["items"], json!([]), "{chats}");
}

/// Zero-width and bidi characters only: empty once normalised, so 400 without a turn.
#[tokio::test]
async fn an_invisible_only_message_is_empty() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("invisible"));
    for message in ["\u{200b}\u{202e}\u{2066}", " \u{feff} \u{0} \u{7} "] {
        let turn = rig.chat(Some(&token), json!({ "message": message })).await;
        assert_eq!(turn.status, 400, "{message:?}: {}", turn.json);
        assert_eq!(turn.json["error"]["code"], "validation_failed");
    }
    assert_eq!(rig.llm.request_count(), 0, "no model call");
}

/// NUL, BEL and ESC never reach the store, the title or the model.
#[tokio::test]
async fn control_characters_are_neither_stored_nor_sent() {
    let rig = Rig::start().await;
    let user = test_support::unique("controls");
    let token = rig.token(&user);
    rig.llm.push(Reply::text("Hello."));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Hi\u{0} th\u{7}ere\u{1b}[2J\r\nsecond line"}),
        )
        .await;
    assert_eq!(turn.status, 200, "{}", turn.json);
    let clean = "Hi there[2J\nsecond line";
    let chat_id = turn.chat_id();
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap();
    let user_messages: Vec<&str> = history
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(user_messages, [clean]);
    let (_, chats) = rig.get(&token, "/chats").await;
    let title = chats["items"][0]["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("Hi there"), "{chats}");
    assert!(!title.chars().any(char::is_control), "{title:?}");
    let sent = rig.llm.last_request().unwrap_or_default().to_string();
    assert!(
        !sent.contains("\\u0000") && !sent.contains("\\u001b"),
        "{sent}"
    );
}

/// A subject the tool functions would refuse as `x-tool-user` is refused at the router,
/// before a turn (whose every tool call would fail) starts.
#[tokio::test]
async fn a_subject_no_tool_function_accepts_is_401() {
    let rig = Rig::start().await;
    for sub in ["two words", "ünïcode", &"x".repeat(257), "tab\tid"] {
        let token = rig.token(sub);
        let turn = rig.chat(Some(&token), json!({"message": "hi"})).await;
        assert_eq!(turn.status, 401, "{sub:?}: {}", turn.json);
        assert_eq!(turn.json["error"]["code"], "unauthorized");
        let message = turn.json["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("subject"), "{message}");
    }
    assert_eq!(rig.llm.request_count(), 0);
    // 256 visible ASCII characters is a user id.
    rig.llm.push(Reply::text("Hi."));
    let longest: String = test_support::unique("u")
        .chars()
        .chain(std::iter::repeat('y'))
        .take(256)
        .collect();
    let turn = rig
        .chat(Some(&rig.token(&longest)), json!({"message": "hi"}))
        .await;
    assert_eq!(turn.status, 200, "{}", turn.json);
}

/// serde would read the struct from a JSON array: bodies must be objects.
#[tokio::test]
async fn a_body_that_is_not_an_object_is_400() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("array"));
    for body in [json!(["hi"]), json!([null, "hi"]), json!("hi"), json!(42)] {
        let turn = rig.chat(Some(&token), body.clone()).await;
        assert_eq!(turn.status, 400, "{body}: {}", turn.json);
        assert_eq!(turn.json["error"]["code"], "invalid_json", "{body}");
    }
    assert_eq!(rig.llm.request_count(), 0);
}

/// The docs say visible ASCII: a space is not.
#[tokio::test]
async fn an_idempotency_key_with_a_space_is_400() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("keyspace"));
    let turn = rig
        .chat_keyed(&token, "two words", json!({"message": "hi"}))
        .await;
    assert_eq!(turn.status, 400, "{}", turn.json);
    assert_eq!(turn.json["error"]["code"], "validation_failed");
    assert_eq!(rig.llm.request_count(), 0);
}

/// After `DELETE /chats/{id}`, neither the resume route nor a replay of the turn's
/// `Idempotency-Key` returns anything of the chat: both are 404, and the replay starts no
/// new turn.
#[tokio::test]
async fn a_deleted_chat_cannot_be_resumed_or_replayed() {
    let rig = Rig::start().await;
    let user = test_support::unique("forgotten");
    let token = rig.token(&user);
    let answer = "Your secret trip to Lisbon is noted.";
    rig.llm.push(Reply::text(answer));
    let body = json!({"message": "Remember my trip to Lisbon."});
    let turn = rig.chat_keyed(&token, "forget-me-1", body.clone()).await;
    assert_eq!(turn.status, 200, "{}", turn.json);
    assert_eq!(turn.text(), answer);
    let chat_id = turn.chat_id();
    let turn_id = turn.first("init")["turn_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Before the delete both give the answer back.
    assert_eq!(
        rig.resume(&token, &chat_id, &turn_id, None).await.text(),
        answer
    );

    let (status, _) = rig.delete(&token, &format!("/chats/{chat_id}")).await;
    assert_eq!(status, 204);

    let resumed = rig.resume(&token, &chat_id, &turn_id, None).await;
    assert_eq!(resumed.status, 404, "{:?}", resumed.names());
    assert_eq!(resumed.json["error"]["code"], "not_found");
    let replayed = rig.chat_keyed(&token, "forget-me-1", body).await;
    assert_eq!(replayed.status, 404, "{:?}", replayed.names());
    let everything = format!("{}{}", resumed.json, replayed.json);
    assert!(!everything.contains("Lisbon"), "{everything}");
    assert_eq!(rig.llm.request_count(), 1, "the replay ran no new turn");
    let (_, chats) = rig.get(&token, "/chats").await;
    assert_eq!(chats["items"], json!([]), "no chat came back: {chats}");
}

/// Cancelling a turn that has ended, even one that was canceled, asks nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_an_ended_turn_answers_cancel_requested_false() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("recancel"));
    rig.llm
        .push(Reply::text("word ".repeat(40).trim()).with_chunk_delay(Duration::from_millis(200)));
    let started = Instant::now();
    let response = chat_router::handler::handle(
        &rig.deps,
        common::post_chat(Some(&token), &json!({"message": "A long story, please."})),
    )
    .await;
    let seen = Turn::read_until(response, started, |e| e.name == "assistant_token").await;
    let turn_id = seen.first("init")["turn_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let chat_id = seen.chat_id();
    let cancel = format!("/chats/{chat_id}/turns/{turn_id}/cancel");
    let (status, first) = rig.post(&token, &cancel).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["cancel_requested"], json!(true), "{first}");
    // Wait for the turn to end.
    let rest = rig.resume(&token, &chat_id, &turn_id, Some(0)).await;
    assert_eq!(rest.names().last(), Some(&"done"));
    let (status, again) = rig.post(&token, &cancel).await;
    assert_eq!(status, 200, "{again}");
    assert_ne!(again["status"], json!("running"), "{again}");
    assert_eq!(again["cancel_requested"], json!(false), "{again}");
}
