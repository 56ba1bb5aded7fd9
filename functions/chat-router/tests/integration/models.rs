//! A model per step (seed 001: a light model decides on tools, a stronger one writes the
//! answer): a profile's `decision_model` and `answer_model`, end to end through the router
//! with the fake LLM, the real tools and the usage table.

use crate::common::{Rig, flight_args};
use serde_json::{Value, json};
use test_support::fake_llm::{Reply, matchers};

const AGENTS: &str = r#"
default_agent = "split"
[agents.split]
system_prompt = "test"
tools = ["award_value", "search_flights"]
decision_model = "light"
answer_model = "strong"
[agents.same]
system_prompt = "test"
tools = ["award_value"]
model = "strong"
decision_model = "light"
answer_model = "light"
"#;

/// USD per million tokens, far apart so a record priced with the wrong model shows.
const PRICES: &str = r#"{
    "light": {"input_per_million": 1.0, "output_per_million": 2.0},
    "strong": {"input_per_million": 100.0, "output_per_million": 200.0}
}"#;

/// What the decision model says beside its calls and in its own answer: never shown.
const LIGHT_ASIDE: &str = "LIGHT-ASIDE let me compute that";
const LIGHT_DRAFT: &str = "LIGHT-DRAFT it is fine";
const STRONG_ANSWER: &str = "Yes: 3.08 cents per mile is a good use of your miles.";

async fn rig() -> Rig {
    Rig::with(
        |vars| vars.push(("LLM_PRICES_JSON".into(), PRICES.into())),
        Some(AGENTS),
    )
    .await
}

fn award_args() -> Value {
    json!({"cash_price": 2000, "currency": "EUR", "miles": 60000, "taxes": 150})
}

fn models_asked(rig: &Rig) -> Vec<String> {
    rig.llm
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn decision_and_answer_steps_go_to_their_models() {
    let rig = rig().await;
    rig.llm
        .push(
            Reply::tool_calls(vec![("award_value", award_args())])
                .with_text(LIGHT_ASIDE)
                .with_usage(1_000, 100),
        )
        .push(Reply::text(LIGHT_DRAFT).with_usage(1_000, 100));
    rig.llm.when(
        matchers::model("strong"),
        Reply::text(STRONG_ANSWER).with_usage(1_000, 100),
    );
    let user = test_support::unique("split");
    let token = rig.token(&user);
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Is 60000 miles plus 150 EUR worth it for a 2000 EUR ticket?", "debug": true}),
        )
        .await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));

    // Two decision steps on the light model, then the answer on the strong one, which is
    // offered no tools and reads the tool's result but not the light model's draft.
    assert_eq!(models_asked(&rig), ["light", "light", "strong"]);
    let requests = rig.llm.requests();
    assert!(requests[0].get("tools").is_some() && requests[1].get("tools").is_some());
    assert!(requests[2].get("tools").is_none(), "{}", requests[2]);
    let answer_prompt = requests[2]["messages"].to_string();
    assert!(
        answer_prompt.contains("3.08 cents per mile"),
        "{answer_prompt}"
    );
    assert!(!answer_prompt.contains("LIGHT-"), "{answer_prompt}");

    // The client saw the strong model's text only, and that is the answer.
    assert_eq!(turn.text(), STRONG_ANSWER);
    assert_eq!(
        turn.first("final")["message"]["content"],
        json!(STRONG_ANSWER)
    );
    let seen: String = turn.events.iter().map(|e| e.data.to_string()).collect();
    assert!(!seen.contains("LIGHT-"), "{seen}");

    // Each step's debug event names its model.
    let choices: Vec<(&str, &str)> = turn
        .all("debug")
        .into_iter()
        .filter(|d| d["type"] == json!("llm_choice"))
        .map(|d| {
            let p = &d["payload"];
            (
                p["model"].as_str().unwrap_or_default(),
                p["role"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        choices,
        [
            ("light", "decide"),
            ("light", "decide"),
            ("strong", "answer")
        ]
    );

    // Stored: the strong answer; nothing the light model said.
    let (status, page) = rig
        .get(&token, &format!("/chats/{}/messages", turn.chat_id()))
        .await;
    assert_eq!(status, 200, "{page}");
    let stored = page["items"].to_string();
    assert!(!stored.contains("LIGHT-"), "{stored}");
    assert_eq!(page["items"][0]["content"], json!(STRONG_ANSWER), "{page}");

    // One usage record per call, each under its model and priced with its model's price:
    // 1000 in + 100 out is 0.0012 USD on light, 0.12 USD on strong.
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    let mut per_model: Vec<(String, f64)> = usage
        .iter()
        .map(|u| (u.model.clone(), u.cost_usd.unwrap_or(-1.0)))
        .collect();
    per_model.sort_by(|a, b| a.0.cmp(&b.0));
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert_eq!(per_model.len(), 3, "{usage:?}");
    assert_eq!(
        per_model
            .iter()
            .map(|(m, _)| m.as_str())
            .collect::<Vec<_>>(),
        ["light", "light", "strong"]
    );
    assert!(close(per_model[0].1, 0.0012), "{usage:?}");
    assert!(close(per_model[1].1, 0.0012), "{usage:?}");
    assert!(close(per_model[2].1, 0.12), "{usage:?}");
}

/// A tool whose message is the answer (flight search) ends the turn on the decision model:
/// no answer-model call.
#[tokio::test]
async fn a_tool_that_answers_directly_needs_no_answer_model() {
    let rig = rig().await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]).with_text(LIGHT_ASIDE));
    let token = rig.token(&test_support::unique("direct"));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Business flights FRA to JFK"}),
        )
        .await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(models_asked(&rig), ["light"]);
    assert!(turn.text().contains(" award flight"), "{}", turn.text());
    assert!(!turn.text().contains("LIGHT-"), "{}", turn.text());
}

/// When both settings name one model, steps run as without them: one call per step, its
/// text streamed.
#[tokio::test]
async fn one_model_for_both_steps_makes_one_call_per_step() {
    let rig = rig().await;
    rig.llm
        .push(Reply::tool_calls(vec![("award_value", award_args())]))
        .push(Reply::text(STRONG_ANSWER));
    let token = rig.token(&test_support::unique("same"));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Is this award worth it?", "agent": "same"}),
        )
        .await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(models_asked(&rig), ["light", "light"]);
    assert_eq!(turn.text(), STRONG_ANSWER);
}

/// Once no tools are offered (here the step limit after one tool round), the step goes to
/// the answer model straight away: no decision call whose text would be dropped.
#[tokio::test]
async fn after_the_last_tool_round_the_answer_model_answers_directly() {
    let rig = Rig::with(
        |vars| {
            vars.push(("LLM_PRICES_JSON".into(), PRICES.into()));
            vars.push(("MAX_TOOL_STEPS".into(), "1".into()));
        },
        Some(AGENTS),
    )
    .await;
    rig.llm
        .push(Reply::tool_calls(vec![("award_value", award_args())]).with_text(LIGHT_ASIDE));
    rig.llm
        .when(matchers::model("strong"), Reply::text(STRONG_ANSWER));
    let token = rig.token(&test_support::unique("limit"));
    let turn = rig
        .chat(Some(&token), json!({"message": "Is this award worth it?"}))
        .await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(models_asked(&rig), ["light", "strong"]);
    assert!(rig.llm.requests()[1].get("tools").is_none());
    assert_eq!(turn.text(), STRONG_ANSWER);
}

const TWO_PROVIDERS: &str = r#"
default_agent = "travel"
[agents.travel]
system_prompt = "travel"
tools = ["award_value"]
[agents.support]
system_prompt = "support"
tools = ["award_value"]
provider = "bedrock"
model = "anthropic.claude-3-5-haiku-20241022-v1:0"
"#;

/// One router, two providers: the support profile runs on Bedrock (its own model), the
/// travel profile on the deployment's OpenAI; each turn's usage is priced under its model.
#[tokio::test]
async fn each_profile_runs_on_its_own_provider() {
    use crate::common::Protocol;
    let rig = Rig::with(|_| {}, Some(TWO_PROVIDERS)).await;
    rig.llm
        .push(Reply::tool_call("award_value", award_args()))
        .push(Reply::text("Bedrock says: a good deal."))
        .push(Reply::text("OpenAI says: hello."));
    let user = test_support::unique("mixed");
    let token = rig.token(&user);
    let support = rig
        .chat(
            Some(&token),
            json!({"message": "is this a good deal?", "agent": "support"}),
        )
        .await;
    assert_eq!(
        support.text(),
        "Bedrock says: a good deal.",
        "{:?}",
        support.names()
    );
    let travel = rig
        .chat(Some(&token), json!({"message": "hi", "agent": "travel"}))
        .await;
    assert_eq!(travel.text(), "OpenAI says: hello.", "{:?}", travel.names());
    assert_eq!(
        rig.llm.protocols(),
        [Protocol::Bedrock, Protocol::Bedrock, Protocol::OpenAi]
    );
    assert_eq!(
        models_asked(&rig),
        [
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            "gpt-4o-mini"
        ]
    );
    // The tool round went back to Bedrock as a tool-result block.
    let raw = &rig.llm.raw_requests()[1];
    let blocks = raw["messages"].to_string();
    assert!(blocks.contains("toolResult"), "{raw}");
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    let mut priced: Vec<(&str, bool)> = usage
        .iter()
        .map(|u| (u.model.as_str(), u.cost_usd > Some(0.0)))
        .collect();
    priced.sort();
    assert_eq!(
        priced,
        [
            ("anthropic.claude-3-5-haiku-20241022-v1:0", true),
            ("anthropic.claude-3-5-haiku-20241022-v1:0", true),
            ("gpt-4o-mini", true)
        ]
    );
}
