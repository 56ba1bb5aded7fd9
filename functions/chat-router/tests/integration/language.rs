//! The user's language, end to end through the router: the message, then the chat's
//! remembered language, then the `language` field, then `Accept-Language` decide which
//! language the texts the runtime writes for the user are in; texts written for the model
//! never reach the user.

use crate::common::{Rig, Turn, flight_args, post_chat};
use serde_json::{Value, json};
use shared::domain::chat::Role;
use test_support::fake_llm::Reply;

/// Phrases of the texts the model is told; none may reach a user.
const MODEL_FACING: [&str; 6] = [
    "Tell the user",
    "Rate limit reached",
    "Not run",
    "calls per",
    "Invalid arguments",
    "search_flights",
];

const NO_ANSWER_DE: &str = "Entschuldigung, ich konnte diese Anfrage nicht abschließen. Bitte versuche es noch einmal oder formuliere sie anders.";
const NO_ANSWER_EN: &str =
    "Sorry, I could not finish this request. Please try again or rephrase it.";

const LIMITED_FLIGHTS: &str = r#"
default_agent = "travel"
[tools.search_flights]
rate_limit = { max = 1, window_secs = 3600 }
[agents.travel]
system_prompt = "test"
tools = ["search_flights"]
"#;

fn assert_for_the_user(text: &str) {
    for phrase in MODEL_FACING {
        assert!(
            !text.contains(phrase),
            "model-facing {phrase:?} in {text:?}"
        );
    }
}

/// `POST /chat` with an `Accept-Language` header.
async fn chat_in(rig: &Rig, token: &str, accept_language: &str, body: Value) -> Turn {
    let mut req = post_chat(Some(token), &body);
    req.headers_mut().insert(
        "accept-language",
        accept_language
            .parse()
            .unwrap_or_else(|e| panic!("header: {e}")),
    );
    rig.send(req).await
}

fn final_content(turn: &Turn) -> String {
    turn.first("final")["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_rate_limited_flight_search_in_a_german_chat_shows_a_german_user_message() {
    let rig = Rig::with(|_| {}, Some(LIMITED_FLIGHTS)).await;
    let user = test_support::unique("lena");
    let token = rig.token(&user);
    let message = "Suche bitte Business-Flüge von FRA nach JFK";
    rig.llm
        .push(Reply::tool_call("search_flights", flight_args()));
    let first = rig.chat(Some(&token), json!({"message": message})).await;
    assert_eq!(first.first("tool_result")["status"], json!("succeeded"));
    assert!(
        final_content(&first).starts_with("Für FRA → JFK"),
        "{}",
        final_content(&first)
    );

    let mut args = flight_args();
    args["cabin"] = json!("FIRST");
    rig.llm.push(Reply::tool_call("search_flights", args));
    let body = json!({"chat_id": first.chat_id(), "message": "Und in der First Class?"});
    let second = rig.chat(Some(&token), body).await;
    assert_eq!(second.status, 200, "{:?}", second.json);
    assert_eq!(
        second.shape(),
        ["init", "tool_result", "assistant_token", "final", "done"]
    );
    assert_eq!(second.first("tool_result")["status"], json!("rate_limited"));
    let shown = second.text();
    assert!(
        shown.starts_with("Du hast das Limit für die Flugsuche erreicht; ab ")
            && shown.ends_with(" UTC wieder möglich."),
        "{shown}"
    );
    assert_for_the_user(&shown);
    assert_eq!(final_content(&second), shown);
    // The model was told its own text, and asked nothing more: the answer is direct.
    assert_eq!(rig.llm.request_count(), 2);
    let stored = rig
        .deps
        .chats
        .recent_messages(&user, &second.chat_id(), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let told = stored
        .iter()
        .rev()
        .find(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    assert!(told.contains("Rate limit reached"), "{told}");
    let answer = stored.last().map(|m| m.content.clone()).unwrap_or_default();
    assert_eq!(answer, shown, "the chat keeps what the user saw");
}

/// The message beats the chat's remembered language, which beats the `language` field,
/// which beats `Accept-Language`; a message too short to tell keeps the chat's. The model
/// answering with nothing makes the runtime write its own text, in the turn's language,
/// which `init` names and the stored answer keeps.
#[tokio::test]
async fn the_message_beats_the_chat_beats_the_language_field_beats_accept_language() {
    let rig = Rig::start().await;
    let user = test_support::unique("lang");
    let token = rig.token(&user);
    for _ in 0..8 {
        rig.llm.push(Reply::text(""));
    }
    let english = "What can you do for me?";
    let written = chat_in(
        &rig,
        &token,
        "de",
        json!({"message": english, "language": "de-AT"}),
    )
    .await;
    assert_eq!(written.text(), NO_ANSWER_EN, "the message's language wins");
    assert_eq!(written.first("init")["language"], json!("en"));

    let field = chat_in(
        &rig,
        &token,
        "en",
        json!({"message": "ok", "language": "de-AT"}),
    )
    .await;
    assert_eq!(
        field.text(),
        NO_ANSWER_DE,
        "a short message: the field decides"
    );
    let header = chat_in(
        &rig,
        &token,
        "fr-CH, de;q=0.9, en;q=0.8",
        json!({"message": "ok"}),
    )
    .await;
    assert_eq!(header.text(), NO_ANSWER_DE, "no field: the browser decides");
    let unsupported = chat_in(
        &rig,
        &token,
        "de",
        json!({"message": "ok", "language": "fr"}),
    )
    .await;
    assert_eq!(
        unsupported.text(),
        NO_ANSWER_DE,
        "an unsupported field is passed over"
    );

    let german = chat_in(
        &rig,
        &token,
        "en-GB",
        json!({"message": "Was kann ich mit meinen Meilen machen?"}),
    )
    .await;
    assert_eq!(
        german.text(),
        NO_ANSWER_DE,
        "a German message in an English browser"
    );
    assert_eq!(german.first("init")["language"], json!("de"));
    assert_eq!(
        german.first("final")["session_state"]["language"],
        json!("de")
    );
    let chat_id = german.chat_id();
    let short = chat_in(
        &rig,
        &token,
        "en",
        json!({"chat_id": chat_id, "message": "ok"}),
    )
    .await;
    assert_eq!(
        short.text(),
        NO_ANSWER_DE,
        "the chat's German beats the browser's English"
    );
    let switched = chat_in(
        &rig,
        &token,
        "de",
        json!({"chat_id": chat_id, "message": english}),
    )
    .await;
    assert_eq!(switched.text(), NO_ANSWER_EN);
    assert_eq!(
        switched.first("final")["session_state"]["language"],
        json!("en")
    );
    let asked = chat_in(
        &rig,
        &token,
        "de-DE",
        json!({"chat_id": chat_id, "message": "ok", "language": "de"}),
    )
    .await;
    assert_eq!(
        asked.text(),
        NO_ANSWER_EN,
        "the chat's English beats the field"
    );
    assert_eq!(final_content(&asked), NO_ANSWER_EN);

    // Each stored answer keeps its turn's language, for a client that reloads the chat.
    let stored = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let answers: Vec<_> = stored
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.language)
        .collect();
    use shared::domain::flight::Locale;
    assert_eq!(
        answers,
        [
            Some(Locale::De),
            Some(Locale::De),
            Some(Locale::En),
            Some(Locale::En)
        ]
    );
}

#[tokio::test]
async fn a_language_that_is_no_language_tag_is_refused_before_anything_is_stored() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("tag"));
    for bad in [json!("German please"), json!(""), json!(7)] {
        let turn = rig
            .chat(Some(&token), json!({"message": "hello", "language": bad}))
            .await;
        assert_eq!(turn.status, 400, "{bad}: {:?}", turn.json);
        assert_eq!(turn.json["error"]["code"], json!("validation_failed"));
        let message = turn.json["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("language"), "{message}");
    }
    // A malformed header is no reason to refuse: it is ignored.
    rig.llm.push(Reply::text("Hello!"));
    let turn = chat_in(&rig, &token, ";;q=x,", json!({"message": "hello"})).await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(rig.llm.request_count(), 1);
}

/// The apology after a second round of invalid calls is streamed (not only stored), in the
/// user's language, and the `error` event says the same instead of the model's problems.
#[tokio::test]
async fn the_apology_after_unrepairable_tool_calls_is_streamed_in_the_users_language() {
    let rig = Rig::start().await;
    let user = test_support::unique("kai");
    let token = rig.token(&user);
    let bad = json!({"origin": "Frankfurt?", "destination": 7});
    rig.llm
        .push(Reply::tool_call("search_flights", bad.clone()));
    rig.llm.push(Reply::tool_call("search_flights", bad));
    let turn = chat_in(
        &rig,
        &token,
        "de-DE,de;q=0.9",
        json!({"message": "Flüge bitte"}),
    )
    .await;
    assert_eq!(
        turn.shape(),
        [
            "init",
            "tool_result",
            "tool_result",
            "assistant_token",
            "error",
            "done"
        ]
    );
    let apology =
        "Entschuldigung, das konnte ich nicht erledigen. Bitte formuliere die Anfrage anders.";
    assert_eq!(turn.text(), apology);
    let error = turn.first("error");
    assert_eq!(error["code"], json!("invalid_tool_call"));
    assert_eq!(error["message"], json!(apology));
    assert_for_the_user(&turn.text());
    let stored = rig
        .deps
        .chats
        .recent_messages(&user, &turn.chat_id(), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.last().map(|m| m.content.as_str()), Some(apology));
}
