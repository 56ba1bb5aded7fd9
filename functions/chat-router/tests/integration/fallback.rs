//! Provider fallback, end to end through the router: a profile on an OpenAI-compatible model
//! falls back to a Bedrock one (both the fake LLM, each in its own protocol) when its model
//! stays unavailable before the first token, and only then.

use crate::common::Rig;
use serde_json::{Value, json};
use test_support::fake_llm::{Protocol, Reply, matchers};

const AGENTS: &str = r#"
default_agent = "travel"
[agents.travel]
system_prompt = "test"
tools = ["award_value"]
provider = "openai"
model = "primary"
fallback = [{ provider = "bedrock", model = "backup" }]
"#;

/// USD per million tokens, apart so a record priced with the wrong model shows.
const PRICES: &str = r#"{
    "primary": {"input_per_million": 1.0, "output_per_million": 2.0},
    "backup": {"input_per_million": 100.0, "output_per_million": 200.0}
}"#;

/// The router's attempts per call before it gives a model up (`llm_retry`).
const ATTEMPTS: usize = 3;

const BACKUP_ANSWER: &str = "The backup model answers.";

async fn rig() -> Rig {
    Rig::with(
        |vars| vars.push(("LLM_PRICES_JSON".into(), PRICES.into())),
        Some(AGENTS),
    )
    .await
}

/// The primary model answers every attempt with `status`.
fn primary_fails(rig: &Rig, status: u16) {
    for _ in 0..ATTEMPTS {
        rig.llm
            .when(matchers::model("primary"), Reply::status(status));
    }
}

fn backup_answers(rig: &Rig) {
    rig.llm.when(
        matchers::model("backup"),
        Reply::text(BACKUP_ANSWER).with_usage(1_000, 100),
    );
}

async fn say(rig: &Rig, user: &str, message: &str) -> crate::common::Turn {
    let token = rig.token(user);
    rig.chat(Some(&token), json!({"message": message})).await
}

/// The metric documents of the turn's LLM calls: (model, calls, errors).
fn llm_calls(rig: &Rig) -> Vec<(String, f64, f64)> {
    let docs = rig.metrics.captured();
    docs.iter()
        .filter(|d| d.get("LlmCalls").is_some())
        .map(|d| {
            let model = d["model"].as_str().unwrap_or_default().to_owned();
            let errors = docs
                .iter()
                .filter(|e| e.get("LlmErrors").is_some() && e["model"] == d["model"])
                .count();
            (model, d["LlmCalls"].as_f64().unwrap_or(0.0), errors as f64)
        })
        .collect()
}

#[tokio::test]
async fn a_model_that_stays_unavailable_falls_back_to_the_next_one() {
    let rig = rig().await;
    primary_fails(&rig, 503);
    backup_answers(&rig);
    let user = test_support::unique("fallback");
    let turn = say(&rig, &user, "Hello").await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(turn.names().last(), Some(&"done"));
    assert!(turn.all("error").is_empty(), "{:?}", turn.events);

    // One answer, from the backup, and `final` names it.
    assert_eq!(turn.text(), BACKUP_ANSWER);
    let last = turn.first("final");
    assert_eq!(last["message"]["content"], json!(BACKUP_ANSWER));
    assert_eq!(last["metadata"]["model"], json!("backup"), "{last}");

    // The primary's attempts on its own protocol, then one Bedrock call.
    let mut expected = vec![Protocol::OpenAi; ATTEMPTS];
    expected.push(Protocol::Bedrock);
    assert_eq!(rig.llm.protocols(), expected);

    // Two metered calls: the primary's failed one (an error, nothing billed), the backup's.
    let mut calls = llm_calls(&rig);
    calls.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        calls,
        [("backup".into(), 1.0, 0.0), ("primary".into(), 1.0, 1.0)]
    );
    // The backup's usage is recorded and priced at its own price (0.12 USD).
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    let priced: Vec<(String, Option<f64>)> = usage
        .iter()
        .map(|u| (u.model.clone(), u.cost_usd))
        .collect();
    assert_eq!(priced.len(), 1, "{usage:?}");
    assert_eq!(priced[0].0, "backup");
    assert!(
        priced[0].1.is_some_and(|c| (c - 0.12).abs() < 1e-9),
        "{priced:?}"
    );
}

#[tokio::test]
async fn a_failure_after_the_first_token_does_not_fall_back() {
    let rig = rig().await;
    // The answer streams, then the provider fails it (as OpenAI does mid-answer).
    rig.llm.when(
        matchers::model("primary"),
        Reply::text("The first words of an answer that never ends")
            .then_stream_error("fake LLM: overloaded"),
    );
    backup_answers(&rig);
    let turn = say(&rig, &test_support::unique("fallback-mid"), "Hello").await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert!(
        !turn.all("assistant_token").is_empty(),
        "{:?}",
        turn.names()
    );
    let error = turn.first("error");
    assert_eq!(error["code"], json!("llm_error"), "{error}");
    assert!(turn.all("final").is_empty());
    // Only the primary was asked; the backup's reply is still waiting.
    assert_eq!(rig.llm.protocols(), [Protocol::OpenAi]);
    assert_eq!(rig.llm.pending(), 1);
}

#[tokio::test]
async fn a_request_the_provider_rejects_does_not_fall_back() {
    let rig = rig().await;
    rig.llm.when(
        matchers::model("primary"),
        Reply::error(400, "fake LLM: the request is invalid"),
    );
    backup_answers(&rig);
    let turn = say(&rig, &test_support::unique("fallback-400"), "Hello").await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(turn.first("error")["code"], json!("llm_error"));
    assert_eq!(rig.llm.protocols(), [Protocol::OpenAi]);
    assert_eq!(rig.llm.pending(), 1);
}

#[tokio::test]
async fn a_model_that_keeps_failing_rests_and_its_calls_go_straight_to_the_next() {
    let rig = rig().await;
    let user = test_support::unique("fallback-rest");
    // Two turns in which the primary fails every attempt: it rests after the second.
    for round in 0..2 {
        primary_fails(&rig, 503);
        backup_answers(&rig);
        let turn = say(&rig, &user, &format!("Hello {round}")).await;
        assert_eq!(turn.first("final")["metadata"]["model"], json!("backup"));
    }
    let asked = rig.llm.request_count();
    assert_eq!(asked, 2 * (ATTEMPTS + 1));

    // The third turn goes to the backup without asking the primary.
    backup_answers(&rig);
    let turn = say(&rig, &user, "Hello again").await;
    assert_eq!(turn.text(), BACKUP_ANSWER);
    let models: Vec<Value> = rig.llm.requests()[asked..]
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert_eq!(models, [json!("backup")]);
}

#[tokio::test]
async fn ask_gpt_falls_back_to_the_models_its_tool_settings_list() {
    const ASK_AGENTS: &str = r#"
default_agent = "travel"
[tools.ask_gpt]
fallback = [{ provider = "bedrock", model = "ask-backup" }]
[agents.travel]
system_prompt = "test"
tools = ["ask_gpt"]
provider = "openai"
model = "primary"
"#;
    let rig = Rig::with(
        |vars| vars.push(("LLM_PRICES_JSON".into(), PRICES.into())),
        Some(ASK_AGENTS),
    )
    .await;
    // The turn's model asks ask_gpt; ask_gpt's own model (the deployment's default) is
    // unavailable, its fallback answers; then the turn's model writes the answer.
    rig.llm.when(
        matchers::model("primary"),
        Reply::tool_call("ask_gpt", json!({"query": "Why is the sky blue?"})),
    );
    for _ in 0..ATTEMPTS {
        rig.llm
            .when(matchers::model("gpt-4o-mini"), Reply::status(503));
    }
    rig.llm.when(
        matchers::model("ask-backup"),
        Reply::text("Rayleigh scattering.").with_usage(10, 5),
    );
    rig.llm.when(
        matchers::model("primary"),
        Reply::text("Because of Rayleigh scattering."),
    );
    let turn = say(&rig, &test_support::unique("fallback-ask"), "Why blue?").await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("succeeded"), "{result}");
    assert_eq!(turn.text(), "Because of Rayleigh scattering.");

    // The turn's model, ask_gpt's model on every attempt, its Bedrock fallback, the turn's.
    let mut expected = vec![Protocol::OpenAi; ATTEMPTS + 1];
    expected.push(Protocol::Bedrock);
    expected.push(Protocol::OpenAi);
    assert_eq!(rig.llm.protocols(), expected);
    let mut calls = llm_calls(&rig);
    calls.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        calls.contains(&("ask-backup".into(), 1.0, 0.0))
            && calls.contains(&("gpt-4o-mini".into(), 1.0, 1.0)),
        "{calls:?}"
    );
}
