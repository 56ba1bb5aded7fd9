//! Human approval of tool calls through the router, with the scripted LLM: a call that needs
//! approval waits (`awaiting_approval`, `approval_required`) and runs once however many
//! approvals race; a denial is stored and the model is told; approve after deny is 409; a
//! stranger's approve is 404; a call left waiting expires.
//!
//! `remember` stands in for a tool with side effects: the profile below makes it need
//! approval, and whether it ran is visible in the user's memory.

use std::time::Duration;

use crate::common::{Rig, Turn};
use lambda_http::http::Method;
use serde_json::{Value, json};
use test_support::fake_llm::Reply;

const AGENTS: &str = r#"
default_agent = "travel"

[tools.remember]
timeout_secs = 3
rate_limit = { max = 1, window_secs = 3600 }

[agents.travel]
system_prompt = "You help travellers."
tools = ["remember"]
approval = { remember = "always" }
"#;

async fn rig(window_secs: Option<u64>) -> Rig {
    Rig::with(
        |vars| {
            if let Some(secs) = window_secs {
                vars.push(("APPROVAL_WINDOW_SECS".into(), secs.to_string()));
            }
        },
        Some(AGENTS),
    )
    .await
}

/// `POST /chats/{chat}/tool-calls/{job}/{verb}` with `body` (none when `None`).
async fn decide(
    rig: &Rig,
    token: &str,
    chat: &str,
    job: &str,
    verb: &str,
    body: Option<Value>,
) -> Turn {
    let req = lambda_http::http::Request::builder()
        .method(Method::POST)
        .uri(format!("/chats/{chat}/tool-calls/{job}/{verb}"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(match body {
            Some(body) => lambda_http::Body::Text(body.to_string()),
            None => lambda_http::Body::Empty,
        })
        .unwrap_or_else(|e| panic!("request: {e}"));
    rig.send(req).await
}

/// A turn whose `remember` call waits for approval; its chat and job ids.
async fn waiting_turn(rig: &Rig, token: &str) -> (Turn, String, String) {
    rig.llm.push(Reply::tool_call(
        "remember",
        json!({"note": "prefers aisle seats"}),
    ));
    let turn = rig
        .chat(Some(token), json!({"message": "Remember: aisle seats"}))
        .await;
    let request = turn.first("approval_required").clone();
    let job = request["job_id"].as_str().unwrap_or_default().to_owned();
    assert!(!job.is_empty(), "{:?}", turn.names());
    let chat = turn.chat_id();
    (turn, chat, job)
}

async fn notes(rig: &Rig, token: &str) -> usize {
    let (status, memory) = rig.get(token, "/memory").await;
    assert_eq!(status, 200, "{memory}");
    memory["notes"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn a_call_needing_approval_waits_then_runs_once_under_ten_concurrent_approvals() {
    let rig = rig(None).await;
    let token = rig.token(&test_support::unique("approve"));
    let (turn, chat, job) = waiting_turn(&rig, &token).await;
    assert_eq!(
        turn.first("tool_result")["status"],
        json!("awaiting_approval")
    );
    let request = turn.first("approval_required");
    assert_eq!(request["tool"], json!("remember"));
    assert_eq!(request["arguments"]["note"], json!("prefers aisle seats"));
    assert!(
        request["summary"]
            .as_str()
            .is_some_and(|s| s.contains("remember"))
    );
    assert!(request["expires_at"].as_str().is_some());
    assert!(turn.text().starts_with("Please confirm"), "{}", turn.text());
    assert_eq!(turn.names().last(), Some(&"done"));
    assert_eq!(
        rig.llm.request_count(),
        1,
        "the turn ends asking: no second model call"
    );
    assert_eq!(notes(&rig, &token).await, 0, "nothing ran yet");
    let (_, record) = rig
        .get(&token, &format!("/chats/{chat}/tool-calls/{job}"))
        .await;
    assert_eq!(record["status"], json!("awaiting_approval"), "{record}");
    // The approval box is stored with the answer.
    let (_, page) = rig.get(&token, &format!("/chats/{chat}/messages")).await;
    assert_eq!(
        page["items"][0]["ui"][0]["kind"],
        json!("approval"),
        "{page}"
    );

    // Ten approvals at once: the tool runs once, one model call answers, every stream
    // that was let in shows the same continuation.
    rig.llm
        .push(Reply::text("Done: I will remember aisle seats."));
    let approvals = (0..10).map(|_| decide(&rig, &token, &chat, &job, "approve", None));
    let streams = futures::future::join_all(approvals).await;
    for stream in &streams {
        assert_eq!(stream.status, 200, "{}", stream.json);
        assert_eq!(stream.text(), "Done: I will remember aisle seats.");
    }
    let results: Vec<&Value> = streams[0].all("tool_result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], json!("succeeded"));
    assert_eq!(notes(&rig, &token).await, 1, "the tool ran exactly once");
    assert_eq!(rig.llm.request_count(), 2, "one continuation");
    let told = rig.llm.requests()[1]["messages"].to_string();
    assert!(
        told.contains("The user approved the call of remember"),
        "{told}"
    );
    let (_, record) = rig
        .get(&token, &format!("/chats/{chat}/tool-calls/{job}"))
        .await;
    assert_eq!(record["status"], json!("succeeded"));
    assert_eq!(record["attempt"], json!(1));
    assert_eq!(record["approval"]["decision"], json!("approved"));

    // Approving again follows the same turn; denying now is 409.
    let again = decide(&rig, &token, &chat, &job, "approve", None).await;
    assert_eq!(again.text(), "Done: I will remember aisle seats.");
    let late = decide(&rig, &token, &chat, &job, "deny", None).await;
    assert_eq!(late.status, 409, "{}", late.json);
    assert_eq!(notes(&rig, &token).await, 1);
    assert_eq!(rig.llm.request_count(), 2);
}

#[tokio::test]
async fn a_denial_is_stored_and_told_to_the_model_and_approving_after_it_is_409() {
    let rig = rig(None).await;
    let token = rig.token(&test_support::unique("deny"));
    let (_, chat, job) = waiting_turn(&rig, &token).await;

    // A stranger cannot decide it, nor see it.
    let stranger = rig.token(&test_support::unique("stranger"));
    let foreign = decide(&rig, &stranger, &chat, &job, "approve", None).await;
    assert_eq!(foreign.status, 404, "{}", foreign.json);

    let bad = decide(
        &rig,
        &token,
        &chat,
        &job,
        "approve",
        Some(json!({"reason": "x"})),
    )
    .await;
    assert_eq!(bad.status, 400, "a reason goes with a denial only");

    rig.llm
        .push(Reply::text("All right, I will not remember it."));
    let denied = decide(
        &rig,
        &token,
        &chat,
        &job,
        "deny",
        Some(json!({"reason": "I changed my mind"})),
    )
    .await;
    assert_eq!(denied.status, 200, "{}", denied.json);
    let result = denied.first("tool_result");
    assert_eq!(result["status"], json!("canceled"));
    assert_eq!(result["metadata"]["denied"], json!(true));
    assert_eq!(denied.text(), "All right, I will not remember it.");
    let told = rig.llm.requests()[1]["messages"].to_string();
    assert!(
        told.contains("The user denied the call of remember"),
        "{told}"
    );
    assert!(
        told.contains("I changed my mind"),
        "the reason reaches the model as data"
    );
    assert_eq!(notes(&rig, &token).await, 0);
    let (_, record) = rig
        .get(&token, &format!("/chats/{chat}/tool-calls/{job}"))
        .await;
    assert_eq!(record["status"], json!("canceled"));
    assert_eq!(record["approval"]["decision"], json!("denied"));
    assert_eq!(record["approval"]["reason"], json!("I changed my mind"));

    let approve = decide(&rig, &token, &chat, &job, "approve", None).await;
    assert_eq!(approve.status, 409, "{}", approve.json);
    assert_eq!(approve.json["error"]["details"]["status"], json!("denied"));
    assert_eq!(notes(&rig, &token).await, 0);

    // A later turn's history says the call was denied.
    rig.llm.push(Reply::text("ok"));
    rig.chat(
        Some(&token),
        json!({"message": "and now?", "chat_id": chat}),
    )
    .await;
    let history = rig.llm.requests()[2]["messages"].to_string();
    assert!(history.contains("[denied]"), "{history}");
}

#[tokio::test]
async fn a_call_left_waiting_expires_and_cannot_be_approved() {
    let rig = rig(Some(1)).await;
    let token = rig.token(&test_support::unique("expire"));
    let (_, chat, job) = waiting_turn(&rig, &token).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, record) = rig
        .get(&token, &format!("/chats/{chat}/tool-calls/{job}"))
        .await;
    assert_eq!(record["status"], json!("expired"), "{record}");
    let approve = decide(&rig, &token, &chat, &job, "approve", None).await;
    assert_eq!(approve.status, 409, "{}", approve.json);
    assert_eq!(approve.json["error"]["details"]["status"], json!("expired"));
    assert_eq!(notes(&rig, &token).await, 0);
    // Asked for again, the call waits anew under a new attempt.
    rig.llm.push(Reply::tool_call(
        "remember",
        json!({"note": "prefers aisle seats"}),
    ));
    let again = rig
        .chat(
            Some(&token),
            json!({"message": "Remember it after all", "chat_id": chat}),
        )
        .await;
    assert_eq!(again.first("approval_required")["job_id"], json!(job));
    let (_, record) = rig
        .get(&token, &format!("/chats/{chat}/tool-calls/{job}"))
        .await;
    assert_eq!(record["status"], json!("awaiting_approval"));
    assert_eq!(record["attempt"], json!(2));
}

/// The shipped `create_fare_alert` needs approval: nothing is stored until the user approves,
/// then the alert is listed once.
#[tokio::test]
async fn a_fare_alert_is_created_only_once_its_user_approves_it() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("alert"));
    let from = test_support::future_date();
    rig.llm.push(Reply::tool_call(
        "create_fare_alert",
        json!({"origin": "FRA", "destination": "JFK", "date_from": from, "date_to": from,
               "cabin": "business", "max_miles": 80000}),
    ));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Alert me below 80k miles FRA-JFK"}),
        )
        .await;
    let request = turn.first("approval_required").clone();
    assert_eq!(
        request["tool"],
        json!("create_fare_alert"),
        "{:?}",
        turn.names()
    );
    let summary = request["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("FRA → JFK") && summary.contains("80,000"),
        "{summary}"
    );
    let (_, alerts) = rig.get(&token, "/alerts").await;
    assert_eq!(alerts["alerts"], json!([]), "{alerts}");

    rig.llm.push(Reply::text("Your alert is set."));
    let job = request["job_id"].as_str().unwrap_or_default();
    let approved = decide(&rig, &token, &turn.chat_id(), job, "approve", None).await;
    assert_eq!(approved.first("tool_result")["status"], json!("succeeded"));
    assert_eq!(approved.text(), "Your alert is set.");
    let (_, alerts) = rig.get(&token, "/alerts").await;
    assert_eq!(
        alerts["alerts"].as_array().map(Vec::len),
        Some(1),
        "{alerts}"
    );

    // The same alert asked for again, in a new chat (no dedupe window to lean on): it
    // exists, so the user is not asked to approve it, and no second one is kept.
    rig.llm.push(Reply::tool_call(
        "create_fare_alert",
        json!({"origin": "FRA", "destination": "JFK", "date_from": from, "date_to": from,
               "cabin": "BUSINESS", "max_miles": 80000}),
    ));
    rig.llm.push(Reply::text("You have that alert already."));
    let again = rig
        .chat(
            Some(&token),
            json!({"message": "Alert me below 80k miles FRA-JFK, please"}),
        )
        .await;
    assert!(
        !again.names().contains(&"approval_required"),
        "{:?}",
        again.names()
    );
    let result = again.first("tool_result");
    assert_eq!(result["status"], json!("succeeded"), "{result}");
    // Its result is the alert the user has.
    assert_eq!(
        result["result"]["id"], alerts["alerts"][0]["id"],
        "{result}"
    );
    let (_, alerts) = rig.get(&token, "/alerts").await;
    assert_eq!(
        alerts["alerts"].as_array().map(Vec::len),
        Some(1),
        "{alerts}"
    );
}

/// The user's limit for a tool counts approved calls when they run: one over it is not run.
#[tokio::test]
async fn an_approved_call_over_the_users_limit_does_not_run() {
    let rig = rig(None).await;
    let token = rig.token(&test_support::unique("limit"));
    let (_, chat, job) = waiting_turn(&rig, &token).await;
    rig.llm.push(Reply::text("Noted."));
    let first = decide(&rig, &token, &chat, &job, "approve", None).await;
    assert_eq!(first.first("tool_result")["status"], json!("succeeded"));

    rig.llm.push(Reply::tool_call(
        "remember",
        json!({"note": "window seats too"}),
    ));
    let second = rig
        .chat(
            Some(&token),
            json!({"message": "And window seats", "chat_id": chat}),
        )
        .await;
    let job = second.first("approval_required")["job_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    rig.llm
        .push(Reply::text("That is over your limit for now."));
    let over = decide(&rig, &token, &chat, &job, "approve", None).await;
    let result = over.first("tool_result");
    assert_eq!(result["status"], json!("rate_limited"), "{result}");
    assert_eq!(result["job_id"], json!(job));
    assert_eq!(notes(&rig, &token).await, 1, "the second note was not kept");
    let (_, record) = rig
        .get(&token, &format!("/chats/{chat}/tool-calls/{job}"))
        .await;
    assert_eq!(record["status"], json!("canceled"), "{record}");
}
