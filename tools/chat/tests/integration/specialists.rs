//! The interactive client against a scripted local router for the specialists' events: a
//! handoff and quick replies (a number sends that reply), and a tool call waiting for
//! approval (asked about after the turn; the answer is `POST …/approve` or `…/deny`, whose
//! stream is rendered like a turn; a refusal is reported and the conversation goes on).

use crate::common::{PREFIX, Reply, Seen, TOKEN, frame, router, temp_dir};
use chat::client::{Client, TurnRequest};
use chat::render::{Options, Renderer};
use chat::state::Session;
use chat::token::Credentials;
use chat::{Args, converse};
use clap::Parser;
use serde_json::{Value, json};
use test_support::serve::LocalServer;

/// A whole turn: `init`, `middle` (events), `final` with `answer`, `done`.
fn turn(turn_id: &str, middle: &[(&str, Value)], answer: &str) -> String {
    let mut frames = vec![frame(
        0,
        "init",
        json!({"chat_id": "chat-5", "created": false, "turn_id": turn_id}),
    )];
    let mut id = 1;
    for (event, data) in middle {
        frames.push(frame(id, event, data.clone()));
        id += 1;
    }
    frames.push(frame(id, "assistant_token", json!({"content": answer})));
    frames.push(frame(
        id + 1,
        "final",
        json!({"message": {"role": "assistant", "content": answer}, "session_state": {}, "tool_result": null}),
    ));
    frames.push(frame(id + 2, "done", json!({})));
    frames.concat()
}

/// The conversation `chat` runs for `input` (the user's lines) in chat `chat-5`, with
/// questions (`asks`) or without: stdout (prompts included) and stderr.
async fn converse_with(server: &LocalServer, input: &str, asks: bool) -> (String, String) {
    let client = Client::new(
        &server.url(&format!("{PREFIX}/")),
        Credentials::Given(TOKEN.into()),
    )
    .unwrap();
    let dir = temp_dir("chat-cli-specialists");
    let mut session = Session::open(dir.join("chat-id"), Some("chat-5".into()), false).unwrap();
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), Options::default());
    let template = TurnRequest {
        message: String::new(),
        agent: None,
        debug: false,
        timezone: None,
    };
    converse(
        &client,
        &mut session,
        &template,
        input.as_bytes(),
        &mut renderer,
        asks,
    )
    .await
    .unwrap();
    let (out, err) = renderer.into_parts();
    let _ = std::fs::remove_dir_all(&dir);
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn chat_path() -> String {
    format!("{PREFIX}/chat")
}

fn decision_path(verb: &str) -> String {
    format!("{PREFIX}/chats/chat-5/tool-calls/job-7/{verb}")
}

/// A turn that hands over to `support` and offers two quick replies.
fn replies_turn() -> String {
    turn(
        "turn-1",
        &[
            (
                "handoff",
                json!({"from": "travel", "to": "support", "reason": "loyalty question"}),
            ),
            (
                "ui",
                json!({"kind": "quick_replies", "payload": {"replies": ["Yes, search", "No thanks"]}}),
            ),
        ],
        "Shall I search?",
    )
}

/// A turn whose fare alert waits for approval.
fn approval_turn() -> String {
    turn(
        "turn-1",
        &[
            (
                "tool_result",
                json!({"tool": "create_fare_alert", "job_id": "job-7", "status": "awaiting_approval", "metadata": {}}),
            ),
            (
                "approval_required",
                json!({"job_id": "job-7", "tool": "create_fare_alert", "arguments": {"origin": "FRA"},
                       "summary": "Fare alert FRA → JFK, 1–15 Mar 2027", "expires_at": "2027-03-01T10:00:00Z"}),
            ),
        ],
        "Please confirm.",
    )
}

/// The continuation after a decision: the tool's result and the answer.
fn continuation(status: &str, answer: &str) -> String {
    turn(
        "turn-2",
        &[(
            "tool_result",
            json!({"tool": "create_fare_alert", "job_id": "job-7", "status": status, "metadata": {}}),
        )],
        answer,
    )
}

#[tokio::test]
async fn a_handoff_and_quick_replies_are_shown_and_a_letter_sends_its_reply() {
    let (server, seen) = router(|_, n| match n {
        0 => Reply::Stream(replies_turn()),
        _ => Reply::Stream(turn("turn-2", &[], "Fine.")),
    })
    .await;
    // "b" picks the second reply; the next turn offers none, so "a" is sent as typed.
    let (out, err) = converse_with(&server, "hi\nb\na\n", true).await;
    let expected = "\
you> → support (loyalty question)
Shall I search?
[a] Yes, search  [b] No thanks
you> Fine.
you> Fine.
you> \n";
    assert_eq!(out, expected, "\n{out}");
    assert_eq!(err, "");
    let seen = seen.lock().unwrap().clone();
    let messages: Vec<&Value> = seen.iter().map(|s| &s.body["message"]).collect();
    assert_eq!(messages, [&json!("hi"), &json!("No thanks"), &json!("a")]);
    assert!(seen.iter().all(|s| s.path == chat_path()));
}

#[tokio::test]
async fn a_number_is_a_flight_pick_sent_as_typed_and_a_letter_outside_the_replies_too() {
    let (server, seen) = router(|_, _| Reply::Stream(replies_turn())).await;
    let (_, err) = converse_with(&server, "hi\n2\nc\n", true).await;
    assert_eq!(err, "");
    let seen = seen.lock().unwrap().clone();
    let messages: Vec<&Value> = seen.iter().map(|s| &s.body["message"]).collect();
    // "2" picks flight 2 of a table, never the second quick reply; "c" is no reply.
    assert_eq!(messages, [&json!("hi"), &json!("2"), &json!("c")]);
}

#[tokio::test]
async fn approving_posts_approve_and_renders_the_continuation() {
    let (server, seen) = router(|request, _| {
        if request.path == decision_path("approve") {
            Reply::Stream(continuation("succeeded", "Alert created."))
        } else {
            Reply::Stream(approval_turn())
        }
    })
    .await;
    let (out, err) = converse_with(&server, "watch FRA-JFK\ny\n", true).await;
    let expected = "\
you> ⏸ create_fare_alert awaiting approval
⏸ create_fare_alert waits for your approval: Fare alert FRA → JFK, 1–15 Mar 2027
Please confirm.
Approve create_fare_alert: Fare alert FRA → JFK, 1–15 Mar 2027? [y/N] ✓ create_fare_alert succeeded
Alert created.
you> \n";
    assert_eq!(out, expected, "\n{out}");
    assert_eq!(err, "");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let approve = &seen[1];
    assert_eq!(approve.method, "POST");
    assert_eq!(approve.path, decision_path("approve"));
    assert_eq!(approve.body, json!({}));
    assert_eq!(approve.authorization, format!("Bearer {TOKEN}"));
    assert_eq!(approve.accept, "text/event-stream");
}

#[tokio::test]
async fn denying_posts_deny_with_the_reason_if_one_was_given() {
    let script = |request: &Seen, _| {
        if request.path == decision_path("deny") {
            Reply::Stream(continuation("canceled", "No alert then."))
        } else {
            Reply::Stream(approval_turn())
        }
    };
    let (server, seen) = router(script).await;
    let (out, err) = converse_with(&server, "watch FRA-JFK\nn\ntoo expensive\n", true).await;
    assert!(
        out.ends_with(
            "[y/N] Reason (optional): · create_fare_alert canceled\nNo alert then.\nyou> \n"
        ),
        "\n{out}"
    );
    assert_eq!(err, "");
    let seen_now = seen.lock().unwrap().clone();
    assert_eq!(seen_now[1].path, decision_path("deny"));
    assert_eq!(seen_now[1].body, json!({"reason": "too expensive"}));

    // Anything but y/yes denies; an empty reason is left out.
    let (server, seen) = router(script).await;
    converse_with(&server, "watch FRA-JFK\nmaybe\n\n", true).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[1].path, decision_path("deny"));
    assert_eq!(seen[1].body, json!({}));
}

#[tokio::test]
async fn a_refused_decision_is_reported_and_the_conversation_goes_on() {
    let (server, seen) = router(|request, n| match n {
        0 => Reply::Stream(approval_turn()),
        _ if request.path == decision_path("approve") => Reply::Refuse(
            409,
            "conflict",
            "this tool call can no longer be decided".into(),
            json!({"status": "expired"}),
        ),
        _ => Reply::Stream(turn("turn-3", &[], "Anything else?")),
    })
    .await;
    let (out, err) = converse_with(&server, "watch FRA-JFK\nyes\nthanks\n", true).await;
    assert_eq!(
        err,
        "chat: the router answered 409: this tool call can no longer be decided (expired)\n"
    );
    assert!(
        out.ends_with("[y/N] you> Anything else?\nyou> \n"),
        "\n{out}"
    );
    let seen = seen.lock().unwrap().clone();
    let requests: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    let (chat, approve) = (chat_path(), decision_path("approve"));
    assert_eq!(
        requests,
        [
            ("POST", chat.as_str()),
            ("POST", approve.as_str()),
            ("POST", chat.as_str())
        ]
    );
    assert_eq!(seen[2].body["message"], "thanks");
}

#[tokio::test]
async fn without_a_terminal_nothing_is_asked_and_the_way_to_decide_is_printed() {
    let (server, seen) = router(|_, _| Reply::Stream(approval_turn())).await;
    // The "y" is the next message, not an answer.
    let (out, err) = converse_with(&server, "watch FRA-JFK\ny\n", false).await;
    assert!(!out.contains("[y/N]"), "{out}");
    let hint = "create_fare_alert waits for your approval before 2027-03-01T10:00:00Z: \
                `chat --chat-id chat-5 --approve job-7` or \
                `chat --chat-id chat-5 --deny job-7 [--reason TEXT]`\n";
    assert_eq!(err, hint.repeat(2));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.path == chat_path()));
    assert_eq!(seen[1].body["message"], "y");
}

#[tokio::test]
async fn the_approve_and_deny_flags_and_the_alert_list() {
    // The flags the hint names parse together; a reason needs --deny.
    let base = ["chat", "--token", TOKEN];
    let parse = |extra: &[&str]| Args::try_parse_from(base.iter().chain(extra));
    let args = parse(&["--chat-id", "chat-5", "--approve", "job-7"]).unwrap();
    assert_eq!(args.approve.as_deref(), Some("job-7"));
    let args = parse(&["--deny", "job-7", "--reason", "too expensive"]).unwrap();
    assert_eq!(args.reason.as_deref(), Some("too expensive"));
    assert!(parse(&["--reason", "x"]).is_err());
    assert!(parse(&["--approve", "a", "--deny", "b"]).is_err());
    assert!(parse(&["--approve", "a", "a message"]).is_err());

    // A decision without a chat is a usage error, not a request.
    let (server, seen) = router(|_, _| {
        Reply::Stream(
            json!([{"id": "al-1", "origin": "FRA", "destination": "JFK", "matches": []}])
                .to_string(),
        )
    })
    .await;
    let client = Client::new(
        &server.url(&format!("{PREFIX}/")),
        Credentials::Given(TOKEN.into()),
    )
    .unwrap();
    let dir = temp_dir("chat-cli-specialists");
    let mut session = Session::open(dir.join("chat-id"), None, true).unwrap();
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), Options::default());
    let decision = chat::client::Decision::Approve;
    let result = client
        .decide(&mut session, "job-7", &decision, &mut renderer)
        .await;
    assert!(
        matches!(result, Err(chat::Error::Setup(ref m)) if m.contains("--chat-id")),
        "{result:?}"
    );

    let alerts = client.alerts().await.unwrap();
    assert_eq!(alerts[0]["id"], "al-1");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", format!("{PREFIX}/alerts").as_str())
    );
    assert_eq!(seen[0].authorization, format!("Bearer {TOKEN}"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn approve_last_decides_the_newest_waiting_call_without_its_id() {
    let list = json!({"items": [
        {"id": "job-9", "tool": "search_flights", "status": "succeeded"},
        {"id": "job-7", "tool": "create_fare_alert", "status": "awaiting_approval"},
        {"id": "job-3", "tool": "create_fare_alert", "status": "awaiting_approval"}
    ]});
    let tool_calls = format!("{PREFIX}/chats/chat-5/tool-calls");
    let listed = tool_calls.clone();
    let (server, seen) = router(move |request, _| {
        if request.path == listed {
            Reply::Stream(list.to_string())
        } else {
            Reply::Stream(continuation("succeeded", "Alert created."))
        }
    })
    .await;
    let dir = temp_dir("chat-cli-approve-last");
    let state = dir.join("chat-id");
    let url = server.url(&format!("{PREFIX}/"));
    let run = |verb: &'static str| {
        let args = Args::try_parse_from([
            "chat",
            "--url",
            url.as_str(),
            "--token",
            TOKEN,
            "--chat-id",
            "chat-5",
            "--state-file",
            state.to_str().unwrap(),
            verb,
            "last",
        ])
        .unwrap();
        chat::run(args)
    };
    run("--approve").await.unwrap();
    let requests: Vec<(String, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| (s.method.clone(), s.path.clone()))
        .collect();
    assert_eq!(
        requests,
        [
            ("GET".to_owned(), tool_calls.clone()),
            ("POST".to_owned(), decision_path("approve")),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);

    // Nothing waiting: a usage error, and nothing is decided.
    let (server, seen) = router(|_, _| {
        Reply::Stream(json!({"items": [{"id": "job-9", "status": "succeeded"}]}).to_string())
    })
    .await;
    let client = Client::new(
        &server.url(&format!("{PREFIX}/")),
        Credentials::Given(TOKEN.into()),
    )
    .unwrap();
    let session = Session::open(dir.join("chat-id"), Some("chat-5".into()), false).unwrap();
    let result = chat::waiting_job(&client, &session, chat::LAST_WAITING).await;
    assert!(
        matches!(result, Err(chat::Error::Setup(ref m)) if m.contains("no tool call waits")),
        "{result:?}"
    );
    // An id is taken as it is, without a request.
    assert_eq!(
        chat::waiting_job(&client, &session, "job-7").await.unwrap(),
        "job-7"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}
