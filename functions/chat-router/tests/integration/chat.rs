//! End-to-end chat turns: the router's handler against DynamoDB Local and moto, a scripted
//! fake LLM, and the real flight and kb functions served locally over fake upstreams.

use crate::common;

use std::time::Duration;

use crate::common::{Protocol, Rig, eventually, flight_args};
use serde_json::{Value, json};
use test_support::fake_llm::Reply;

fn has_no_tools(request: &Value) -> bool {
    request.get("tools").is_none()
}

fn asks(query: &'static str) -> impl Fn(&Value) -> bool + Send + Sync + 'static {
    move |request: &Value| {
        has_no_tools(request)
            && request["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["content"] == json!(query)))
    }
}

// The turns that involve the model run on both providers: one test body, two fakes.
on_both_providers!(
    flight_search_streams_the_contract_events_with_one_llm_call,
    two_tools_in_one_step_run_concurrently,
    invalid_arguments_are_repaired_on_the_second_try,
    an_unknown_tool_is_reported_to_the_llm_then_a_second_is_an_error,
    after_the_step_limit_the_model_must_answer_without_tools,
    an_llm_failure_ends_the_stream_with_error_then_done,
    a_client_disconnect_leaves_ledger_and_chat_consistent,
    tokens_arrive_as_the_llm_streams_them,
    a_stream_cut_off_after_tokens_still_records_its_usage,
);

async fn flight_search_streams_the_contract_events_with_one_llm_call(llm: Protocol) {
    let rig = Rig::on(llm).await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    let alice = test_support::unique("alice");
    let token = rig.token(&alice);
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": format!("Business flights FRA to JFK on {}", test_support::future_date())}),
        )
        .await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(
        turn.shape(),
        [
            "init",
            "tool_started",
            "tool_result",
            "assistant_token",
            "final",
            "done"
        ]
    );
    assert_eq!(turn.first("init")["created"], json!(true));
    let started = turn.first("tool_started");
    assert_eq!(started["tool"], json!("search_flights"));
    assert_eq!(started["deduped"], json!(false));
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("succeeded"));
    assert_eq!(result["job_id"], started["job_id"]);
    // The result itself, for flight cards, not only its status.
    assert!(
        result["result"]["seatsResult"]["results"]["flights"]
            .as_array()
            .is_some_and(|f| !f.is_empty()),
        "{result}"
    );
    assert!(
        result["metadata"]["award_count"].as_u64().unwrap_or(0) > 0,
        "{result}"
    );
    assert!(
        result["metadata"]["cash_count"].as_u64().unwrap_or(0) > 0,
        "{result}"
    );
    // The tool formatted the answer itself: one LLM call in the whole turn.
    assert_eq!(rig.llm.request_count(), 1);
    let final_event = turn.first("final");
    assert_eq!(final_event["message"]["role"], json!("assistant"));
    let content = final_event["message"]["content"]
        .as_str()
        .unwrap_or_default();
    // The answer says what was found; the rows are the tables' (and the model's list).
    assert!(content.starts_with("I found "), "{content}");
    assert!(content.contains(" award flight"), "{content}");
    assert!(!content.contains("\n1. "), "{content}");
    assert_eq!(content, turn.text());
    assert_eq!(
        final_event["session_state"]["last_flight_request"]["origin"],
        json!("FRA")
    );
    assert!(final_event["tool_result"]["seatsResult"]["results"]["count"].as_u64() > Some(0));
    // The LLM was offered exactly the default profile's tools, in the order they are
    // registered (`agent_tools::tools!`), then its handoff to support.
    let agents = agent::profiles::AgentCatalog::built_in().unwrap();
    let travel = agents.profile(None).unwrap();
    let mut expected: Vec<String> = agent::tools::CATALOG
        .iter()
        .filter(|tool| travel.tools.contains(&tool.name))
        .map(|tool| tool.name.to_string())
        .collect();
    expected.push("transfer_to_support".into());
    assert_eq!(expected.first().map(String::as_str), Some("search_flights"));
    assert!(expected.len() > 5, "{expected:?}");
    assert_eq!(rig.offered(0), expected);

    // The one LLM call's usage is recorded with its cost.
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig.deps.usage.list_for_user(&alice, since).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0].operation, "chat");
    assert!(
        usage[0].total_tokens > 0 && usage[0].cost_usd > Some(0.0),
        "{usage:?}"
    );

    // The audit log has the call, succeeded, with the stored request.
    let chat_id = turn.chat_id();
    let (status, page) = rig
        .get(&token, &format!("/chats/{chat_id}/tool-calls"))
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["items"][0]["status"], json!("succeeded"));
    assert_eq!(page["items"][0]["request"]["origin"], json!("FRA"));
    let job = started["job_id"].as_str().unwrap_or_default();
    let (status, one) = rig
        .get(&token, &format!("/chats/{chat_id}/tool-calls/{job}"))
        .await;
    assert_eq!((status, one["id"].as_str()), (200, Some(job)));
}

#[tokio::test]
async fn knowledge_base_miss_leaves_a_pending_gpt_query() {
    let rig = Rig::start().await;
    rig.llm.push(Reply::tool_calls(vec![(
        "search_knowledge_base",
        json!({"query": "lounge access rules"}),
    )]));
    rig.llm.push(Reply::text(
        "Nothing in the knowledge base; shall I ask the model?",
    ));
    let token = rig.token(&test_support::unique("bob"));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "What are the lounge access rules?"}),
        )
        .await;
    assert_eq!(
        turn.shape(),
        [
            "init",
            "tool_started",
            "tool_result",
            "assistant_token",
            "final",
            "done"
        ]
    );
    let result = turn.first("tool_result");
    assert_eq!(result["metadata"]["mode"], json!("rag_no_results"));
    assert_eq!(result["metadata"]["suggested_tool"], json!("ask_gpt"));
    let state = &turn.first("final")["session_state"];
    assert_eq!(
        state["pending_gpt_query"]["query"],
        json!("lounge access rules")
    );
    // The second LLM call saw the tool's result.
    let tool_message = rig.tool_message_seen(1);
    assert!(tool_message.contains("nothing relevant"), "{tool_message}");

    // The user says yes: ask_gpt answers, and the pending question is gone.
    rig.llm.push(Reply::tool_calls(vec![(
        "ask_gpt",
        json!({"query": "lounge access rules"}),
    )]));
    rig.llm.when(
        asks("lounge access rules"),
        Reply::text("It depends on the airline."),
    );
    rig.llm
        .push(Reply::text("It depends on the airline and your status."));
    let answered = rig
        .chat(
            Some(&token),
            json!({"message": "Yes, ask the model.", "chat_id": turn.chat_id()}),
        )
        .await;
    assert_eq!(answered.first("tool_result")["status"], json!("succeeded"));
    let state = &answered.first("final")["session_state"];
    assert!(
        state.get("pending_gpt_query").is_none_or(Value::is_null),
        "{state}"
    );
}

/// An in-process tool: no function, no upstream; the pipeline validates, runs and records it.
#[tokio::test]
async fn award_value_runs_in_process() {
    let rig = Rig::start().await;
    rig.llm.push(Reply::tool_calls(vec![(
        "award_value",
        json!({"cash_price": 2000, "currency": "eur", "miles": 60000, "taxes": 150}),
    )]));
    rig.llm
        .push(Reply::text("Yes: 3.08 cents per mile is a good use."));
    let token = rig.token(&test_support::unique("dora"));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Is 60000 miles plus 150 EUR worth it for a 2000 EUR ticket?"}),
        )
        .await;
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("succeeded"), "{result}");
    // The model read the tool's sentence.
    let tool_message = rig.tool_message_seen(1);
    assert!(
        tool_message.contains("3.08 cents per mile: a good redemption"),
        "{tool_message}"
    );
    // The ledger holds the canonical request and the numbers.
    let chat_id = turn.chat_id();
    let (status, page) = rig
        .get(&token, &format!("/chats/{chat_id}/tool-calls"))
        .await;
    assert_eq!(status, 200, "{page}");
    let call = &page["items"][0];
    assert_eq!(call["request"]["currency"], json!("EUR"), "{call}");
    assert_eq!(
        call["request"]["target_cents_per_mile"],
        json!(1.2),
        "{call}"
    );
    assert_eq!(
        call["response"]["raw"]["cents_per_mile"],
        json!(3.08),
        "{call}"
    );
}

#[tokio::test]
async fn ask_gpt_makes_a_completion_without_tools() {
    let rig = Rig::start().await;
    rig.llm.push(Reply::tool_calls(vec![(
        "ask_gpt",
        json!({"query": "Why is the sky blue?", "temperature": 5}),
    )]));
    rig.llm.when(
        asks("Why is the sky blue?"),
        Reply::text("Rayleigh scattering."),
    );
    rig.llm.push(Reply::text("Because of Rayleigh scattering."));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("carol"))),
            json!({"message": "Why is the sky blue?"}),
        )
        .await;
    assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));
    assert_eq!(turn.text(), "Because of Rayleigh scattering.");
    let requests = rig.llm.requests();
    let inner = requests
        .iter()
        .find(|r| has_no_tools(r))
        .cloned()
        .unwrap_or_default();
    assert!(inner.get("tool_choice").is_none(), "{inner}");
    // Clamped to 1 (the model accepts a temperature).
    assert_eq!(inner["temperature"], json!(1.0));
    assert_eq!(requests.len(), 3);
}

async fn two_tools_in_one_step_run_concurrently(llm: Protocol) {
    let rig = Rig::on(llm).await;
    rig.llm.push(Reply::tool_calls(vec![
        ("ask_gpt", json!({"query": "first question"})),
        ("ask_gpt", json!({"query": "second question"})),
    ]));
    let slow = Duration::from_millis(700);
    rig.llm.when(
        asks("first question"),
        Reply::text("one").with_first_byte_delay(slow),
    );
    rig.llm.when(
        asks("second question"),
        Reply::text("two").with_first_byte_delay(slow),
    );
    rig.llm.push(Reply::text("Both answered."));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("dave"))),
            json!({"message": "two questions"}),
        )
        .await;
    let started: Vec<Duration> = turn
        .events
        .iter()
        .filter(|e| e.name == "tool_started")
        .map(|e| e.at)
        .collect();
    let finished: Vec<Duration> = turn
        .events
        .iter()
        .filter(|e| e.name == "tool_result")
        .map(|e| e.at)
        .collect();
    assert_eq!(
        (started.len(), finished.len()),
        (2, 2),
        "{:?}",
        turn.names()
    );
    // Both started before either finished, and both took ~700 ms in ~700 ms, not 1400.
    assert!(started.iter().max() < finished.iter().min());
    let span = *finished.iter().max().unwrap() - *started.iter().min().unwrap();
    assert!(
        span < Duration::from_millis(1250),
        "tools took {span:?}: not concurrent"
    );
    assert!(
        turn.all("tool_result")
            .iter()
            .all(|r| r["status"] == json!("succeeded"))
    );
}

const TIGHT_AGENTS: &str = r#"
default_agent = "all"
[tools.ask_gpt]
timeout_secs = 0.4
[tools.search_knowledge_base]
timeout_secs = 5
rate_limit = { max = 1, window_secs = 3600 }
[agents.all]
system_prompt = "test"
tools = ["search_flights", "search_knowledge_base", "ask_gpt"]
[agents.kb]
system_prompt = "kb only"
tools = ["search_knowledge_base"]
"#;

#[tokio::test]
async fn a_slow_tool_times_out_while_the_other_succeeds() {
    let rig = Rig::with(|_| {}, Some(TIGHT_AGENTS)).await;
    rig.llm.push(Reply::tool_calls(vec![
        ("ask_gpt", json!({"query": "slow one"})),
        ("search_knowledge_base", json!({"query": "fast one"})),
    ]));
    rig.llm.when(
        asks("slow one"),
        Reply::text("too late").with_first_byte_delay(Duration::from_secs(3)),
    );
    rig.llm.push(Reply::text("One of them timed out."));
    let token = rig.token(&test_support::unique("erin"));
    let turn = rig.chat(Some(&token), json!({"message": "go"})).await;
    let results = turn.all("tool_result");
    let status_of = |tool: &str| {
        results
            .iter()
            .find(|r| r["tool"] == json!(tool))
            .map(|r| r["status"].clone())
    };
    assert_eq!(status_of("ask_gpt"), Some(json!("timeout")));
    assert_eq!(status_of("search_knowledge_base"), Some(json!("succeeded")));
    assert_eq!(turn.names().last(), Some(&"done"));
    assert!(turn.all("error").is_empty());
    let (_, page) = rig
        .get(&token, &format!("/chats/{}/tool-calls", turn.chat_id()))
        .await;
    let statuses: Vec<&Value> = page["items"]
        .as_array()
        .map(|i| i.iter().map(|c| &c["status"]).collect())
        .unwrap_or_default();
    assert!(statuses.contains(&&json!("timeout")), "{page}");
    assert!(statuses.contains(&&json!("succeeded")), "{page}");
}

async fn invalid_arguments_are_repaired_on_the_second_try(llm: Protocol) {
    let rig = Rig::on(llm).await;
    rig.llm.push(Reply::raw_tool_call(
        "search_flights",
        "{\"origin\": \"FRA\", ",
    ));
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("frank"))),
            json!({"message": format!("FRA-JFK business {}", test_support::future_date())}),
        )
        .await;
    // The refused first call is shown too, with its reason.
    assert_eq!(
        turn.shape(),
        [
            "init",
            "tool_result",
            "tool_started",
            "tool_result",
            "assistant_token",
            "final",
            "done"
        ]
    );
    let results = turn.all("tool_result");
    assert_eq!(results[0]["status"], json!("rejected"));
    assert_eq!(results[0]["metadata"]["reason"], json!("invalid_arguments"));
    assert_eq!(results[1]["status"], json!("succeeded"));
    // The second LLM call was told what was wrong.
    let told = rig.tool_message_seen(1);
    assert!(told.contains("not valid JSON"), "{told}");
}

/// The past-date check reads the router's clock, the one the tests' dates come from: a
/// search for yesterday is refused, the model is told which day it is, and tomorrow is
/// searched. With `TEST_CLOCK_OFFSET_DAYS` both move together (`make test` runs this
/// suite 800 days ahead).
#[tokio::test]
async fn the_past_date_check_runs_on_the_tests_clock() {
    let rig = Rig::start().await;
    let today = test_support::clock::today();
    let on = |days: i64| {
        let mut args = flight_args();
        args["depart_date"] = json!(test_support::clock::date_in(days).to_string());
        args
    };
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", on(-1))]));
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", on(1))]));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("yesterday"))),
            json!({"message": "FRA-JFK business yesterday"}),
        )
        .await;
    let results = turn.all("tool_result");
    assert_eq!(results.len(), 2, "{:?}", turn.names());
    assert_eq!(results[0]["status"], json!("rejected"));
    assert_eq!(results[1]["status"], json!("succeeded"));
    let told = rig.tool_message_seen(1);
    assert!(told.contains("is in the past"), "{told}");
    // The router's today is the tests' (or the next day, should midnight pass meanwhile).
    assert!(
        [today, today.next_day().unwrap_or(today)]
            .iter()
            .any(|day| told.contains(&format!("today is {day}"))),
        "{told}"
    );
}

async fn an_unknown_tool_is_reported_to_the_llm_then_a_second_is_an_error(llm: Protocol) {
    let rig = Rig::on(llm).await;
    rig.llm.push(Reply::tool_calls(vec![(
        "book_hotel",
        json!({"city": "Paris"}),
    )]));
    rig.llm.push(Reply::tool_calls(vec![(
        "book_hotel",
        json!({"city": "Paris"}),
    )]));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("gina"))),
            json!({"message": "book me a hotel"}),
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
    for refused in turn.all("tool_result") {
        assert_eq!(refused["tool"], json!("book_hotel"));
        assert_eq!(refused["status"], json!("rejected"));
        assert_eq!(refused["metadata"]["reason"], json!("unknown_tool"));
    }
    assert_eq!(turn.first("error")["code"], json!("invalid_tool_call"));
    let told = rig.llm.requests()[1]["messages"].to_string();
    assert!(told.contains("Unknown tool"), "{told}");
}

#[tokio::test]
async fn a_tool_outside_the_agent_profile_is_neither_offered_nor_run() {
    let rig = Rig::with(|_| {}, Some(TIGHT_AGENTS)).await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    rig.llm
        .push(Reply::text("I can only search the knowledge base."));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("hank"))),
            json!({"message": "flights FRA JFK", "agent": "kb"}),
        )
        .await;
    assert_eq!(
        turn.shape(),
        ["init", "tool_result", "assistant_token", "final", "done"]
    );
    assert_eq!(
        turn.first("tool_result")["metadata"]["reason"],
        json!("outside_profile")
    );
    assert_eq!(rig.functions.seats_searches().await, 0);
    let offered = rig.llm.requests()[0]["tools"].to_string();
    assert!(!offered.contains("search_flights"), "{offered}");
    assert!(
        rig.llm.requests()[1]["messages"]
            .to_string()
            .contains("not available")
    );
}

#[tokio::test]
async fn the_same_message_twice_reuses_the_first_result() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("ivan"));
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    let first = rig.chat(Some(&token), json!({"message": "FRA JFK"})).await;
    let chat_id = first.chat_id();
    // Same search, keys in another order and lower-case airports: same dedupe key.
    rig.llm.push(Reply::tool_calls(vec![(
        "search_flights",
        json!({"cabin": "BUSINESS", "depart_date": test_support::future_date(), "destination": "jfk", "origin": "fra"}),
    )]));
    let second = rig
        .chat(
            Some(&token),
            json!({"chat_id": chat_id, "message": "FRA JFK"}),
        )
        .await;
    assert_eq!(second.first("init")["created"], json!(false));
    let started = second.first("tool_started");
    assert_eq!(started["deduped"], json!(true));
    assert_eq!(started["job_id"], first.first("tool_started")["job_id"]);
    assert_eq!(second.first("tool_result")["status"], json!("succeeded"));
    assert_eq!(
        rig.functions.seats_searches().await,
        1,
        "no second upstream search"
    );
    assert_eq!(second.text(), first.text());
}

#[tokio::test]
async fn a_rate_limited_tool_tells_the_llm_and_the_client_when_to_retry() {
    let rig = Rig::with(|_| {}, Some(TIGHT_AGENTS)).await;
    let token = rig.token(&test_support::unique("limited"));
    for query in ["first", "second"] {
        rig.llm.push(Reply::tool_calls(vec![(
            "search_knowledge_base",
            json!({"query": query}),
        )]));
        rig.llm.push(Reply::text("ok"));
    }
    let first = rig.chat(Some(&token), json!({"message": "first"})).await;
    assert_eq!(first.first("tool_result")["status"], json!("succeeded"));
    let second = rig.chat(Some(&token), json!({"message": "second"})).await;
    let limited = second.first("tool_result");
    assert_eq!(limited["status"], json!("rate_limited"));
    assert!(limited["job_id"].is_null());
    assert!(limited["metadata"]["reset_at"].is_string(), "{limited}");
    let told = rig.llm.requests()[3]["messages"].to_string();
    assert!(told.contains("Rate limit reached"), "{told}");
}

/// A call the ledger serves (dedupe) runs nothing and so uses no quota: with a limit of 2,
/// one search, five repeats of it, then a second search all get through; a third is limited.
#[tokio::test]
async fn calls_served_by_dedupe_use_no_rate_limit_quota() {
    let agents = TIGHT_AGENTS.replace("max = 1,", "max = 2,");
    let rig = Rig::with(|_| {}, Some(&agents)).await;
    let token = rig.token(&test_support::unique("quota"));
    let kb_call =
        |query: &str| Reply::tool_calls(vec![("search_knowledge_base", json!({"query": query}))]);
    rig.llm.push(kb_call("lounges"));
    rig.llm.push(Reply::text("ok"));
    let first = rig.chat(Some(&token), json!({"message": "lounges"})).await;
    assert_eq!(first.first("tool_result")["status"], json!("succeeded"));
    let chat_id = first.chat_id();
    let ask = |message: &str| json!({"chat_id": chat_id, "message": message});
    for _ in 0..5 {
        rig.llm.push(kb_call("lounges"));
        rig.llm.push(Reply::text("ok"));
        let again = rig.chat(Some(&token), ask("lounges again")).await;
        assert_eq!(again.first("tool_started")["deduped"], json!(true));
        assert_eq!(again.first("tool_result")["status"], json!("succeeded"));
    }
    for (query, expected) in [("baggage", "succeeded"), ("upgrades", "rate_limited")] {
        rig.llm.push(kb_call(query));
        rig.llm.push(Reply::text("ok"));
        let turn = rig.chat(Some(&token), ask(query)).await;
        assert_eq!(
            turn.first("tool_result")["status"],
            json!(expected),
            "{query}"
        );
    }
    // The limited call never held a claim (its count and its claim are one write): it is
    // in the audit of refused calls, not among the calls, so a later identical one starts
    // afresh.
    let (status, calls) = rig
        .get(&token, &format!("/chats/{chat_id}/tool-calls"))
        .await;
    assert_eq!(status, 200);
    let queries: Vec<&Value> = calls["items"]
        .as_array()
        .map(|items| items.iter().map(|c| &c["request"]["query"]).collect())
        .unwrap_or_default();
    assert_eq!(queries, [&json!("baggage"), &json!("lounges")], "{calls}");
    let (status, refused) = rig
        .get(&token, &format!("/chats/{chat_id}/refused-calls"))
        .await;
    assert_eq!(status, 200);
    let items = refused["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{refused}");
    assert_eq!(items[0]["reason"], json!("rate_limited"));
    assert!(
        items[0]["arguments"]
            .as_str()
            .is_some_and(|a| a.contains("upgrades")),
        "{refused}"
    );
}

/// A stream that breaks after billed tokens still leaves a usage record (an estimate, as
/// the provider's figures never came), so a daily budget does not under-count.
async fn a_stream_cut_off_after_tokens_still_records_its_usage(llm: Protocol) {
    let rig = Rig::on(llm).await;
    let user = test_support::unique("cut");
    let answer = (1..=80)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    rig.llm.push(Reply::text(answer).cut_off_after(50));
    let since = time::OffsetDateTime::now_utc() - time::Duration::minutes(5);
    let turn = rig
        .chat(
            Some(&rig.token(&user)),
            json!({"message": "tell me a story"}),
        )
        .await;
    assert_eq!(turn.shape().last(), Some(&"done"), "{:?}", turn.shape());
    assert!(
        !turn.all("assistant_token").is_empty(),
        "tokens were streamed"
    );
    assert!(!turn.all("error").is_empty(), "{:?}", turn.shape());
    assert_eq!(
        rig.llm.request_count(),
        1,
        "not retried after text was sent"
    );
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert!(usage[0].estimated, "{usage:?}");
    assert!(usage[0].completion_tokens >= 40, "{usage:?}");
    assert!(usage[0].prompt_tokens > 0, "{usage:?}");
}

/// What a provider can cache: every turn of a profile starts with the same bytes (the
/// profile's prompt, the data-block rule, the tools); what changes per turn (date, data
/// boundary, canary) comes after. Cached input tokens are recorded and priced lower.
#[tokio::test]
async fn turns_of_a_profile_share_a_static_prefix_and_cached_tokens_are_recorded() {
    let rig = Rig::start().await;
    let users = [test_support::unique("pfx"), test_support::unique("pfx")];
    for user in &users {
        rig.llm
            .push(Reply::text("Hello!").with_cached_usage(2_000, 1_536, 10));
        let turn = rig
            .chat(
                Some(&rig.token(user)),
                json!({"message": "hi", "agent": "travel"}),
            )
            .await;
        assert_eq!(turn.status, 200);
    }
    let requests = rig.llm.requests();
    let (first, second) = (&requests[0], &requests[1]);
    assert_eq!(
        first["messages"][0], second["messages"][0],
        "same static system message"
    );
    assert_eq!(first["tools"], second["tools"], "same tools");
    assert_ne!(
        first["messages"][1], second["messages"][1],
        "per-turn parts differ"
    );
    let turn_part = first["messages"][1]["content"].to_string();
    assert!(
        turn_part.contains("Today is") && turn_part.contains("CANARY-"),
        "{turn_part}"
    );
    let static_part = first["messages"][0]["content"].to_string();
    assert!(!static_part.contains("CANARY-") && !static_part.contains("Today is"));

    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig
        .deps
        .usage
        .list_for_user(&users[0], since)
        .await
        .unwrap();
    assert_eq!(usage[0].cached_tokens, 1_536, "{usage:?}");
    // gpt-4o-mini: 464 fresh at 0.15, 1,536 cached at 0.075, 10 out at 0.60 per million.
    let expected = (464.0 * 0.15 + 1_536.0 * 0.075 + 10.0 * 0.60) / 1e6;
    let cost = usage[0].cost_usd.unwrap_or_default();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
}

/// One turn at a time per chat: a message sent while a turn runs is refused with 409 and
/// that turn's id (from its `init`), nothing of it stored; once the turn is done, the chat
/// takes messages again.
#[tokio::test]
async fn a_second_message_during_a_running_turn_gets_409_with_the_turn_id() {
    let rig = Rig::start().await;
    let user = test_support::unique("busy");
    let token = rig.token(&user);
    rig.llm.push(Reply::text("First."));
    let chat_id = rig
        .chat(Some(&token), json!({"message": "hello"}))
        .await
        .chat_id();
    rig.llm
        .push(Reply::text("A slow answer.").with_first_byte_delay(Duration::from_millis(800)));
    let ask = |message: &str| json!({"chat_id": chat_id, "message": message});
    let second = async {
        // Sent while the slow turn waits for the model.
        eventually(Duration::from_secs(5), || async {
            rig.llm.request_count() == 2
        })
        .await;
        rig.chat(Some(&token), ask("are you there?")).await
    };
    let (slow, busy) = tokio::join!(rig.chat(Some(&token), ask("tell me more")), second);
    assert_eq!(slow.status, 200);
    assert_eq!(busy.status, 409, "{}", busy.json);
    assert_eq!(busy.json["error"]["code"], json!("turn_in_progress"));
    let turn_id = &slow.first("init")["turn_id"];
    assert!(turn_id.is_string(), "init carries the turn id");
    assert_eq!(&busy.json["error"]["details"]["turn_id"], turn_id);

    rig.llm.push(Reply::text("Yes."));
    let after = rig.chat(Some(&token), ask("and now?")).await;
    assert_eq!(after.status, 200, "released at the end of the turn");
    assert_ne!(&after.first("init")["turn_id"], turn_id);
    let history = rig
        .deps
        .chats
        .recent_messages(&user, &chat_id, 20)
        .await
        .unwrap();
    let users: Vec<&str> = history
        .iter()
        .filter(|m| m.role == shared::domain::chat::Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(users, ["hello", "tell me more", "and now?"]);
}

async fn an_llm_failure_ends_the_stream_with_error_then_done(llm: Protocol) {
    let rig = Rig::on(llm).await;
    for _ in 0..5 {
        rig.llm.push(Reply::status(500));
    }
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("judy"))),
            json!({"message": "hello"}),
        )
        .await;
    assert_eq!(turn.status, 200);
    assert_eq!(turn.shape(), ["init", "error", "done"]);
    assert_eq!(turn.first("error")["code"], json!("llm_error"));
    let message = turn.first("error")["message"].as_str().unwrap_or_default();
    assert!(!message.contains("500"), "no upstream detail: {message}");
}

/// An error event in a Bedrock stream after text went out (`modelStreamErrorException`,
/// a `throttlingException` mid-stream): the turn ends with `error` and `done`, no `final`,
/// nothing of the upstream's message reaches the client, and the stream is not retried.
#[tokio::test]
async fn a_bedrock_stream_error_ends_the_turn_with_error_then_done_leaking_nothing() {
    for kind in ["modelStreamErrorException", "throttlingException"] {
        let rig = Rig::on(Protocol::Bedrock).await;
        rig.llm.push(
            Reply::text("The partial answer")
                .then_stream_exception(kind, "upstream detail 7f3a: model crashed"),
        );
        let user = test_support::unique("brock");
        let turn = rig
            .chat(Some(&rig.token(&user)), json!({"message": "hello"}))
            .await;
        assert_eq!(turn.status, 200);
        let shape = turn.shape();
        assert_eq!(
            &shape[shape.len() - 2..],
            ["error", "done"],
            "{kind}: {shape:?}"
        );
        assert!(turn.all("final").is_empty(), "{kind}: {shape:?}");
        assert_eq!(turn.first("error")["code"], json!("llm_error"));
        let everything: String = turn.events.iter().map(|e| e.data.to_string()).collect();
        assert!(!everything.contains("7f3a"), "{kind}: {everything}");
        assert!(!everything.contains(kind), "{kind}: {everything}");
        assert_eq!(
            rig.llm.request_count(),
            1,
            "{kind}: not retried once streaming"
        );
        assert_eq!(rig.llm.protocols(), [Protocol::Bedrock]);
    }
}

/// A router configured for Bedrock alone (`LLM_PROVIDER=bedrock`, `BEDROCK_MODEL_ID`, no
/// `OPENAI_*` variable and no OpenAI secret) starts and answers through Bedrock.
#[tokio::test]
async fn a_bedrock_only_router_starts_and_answers_without_any_openai_setting() {
    let rig = Rig::with_on(
        Protocol::Bedrock,
        |vars| {
            let openai: Vec<&str> = vars
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| k.starts_with("OPENAI_"))
                .collect();
            assert!(openai.is_empty(), "{openai:?}");
        },
        None,
    )
    .await;
    rig.llm.push(Reply::text("Hallo aus Bedrock"));
    let user = test_support::unique("only");
    let turn = rig
        .chat(Some(&rig.token(&user)), json!({"message": "hallo"}))
        .await;
    assert_eq!(turn.text(), "Hallo aus Bedrock", "{:?}", turn.names());
    assert_eq!(rig.llm.protocols(), [Protocol::Bedrock]);
    assert_eq!(rig.llm.requests()[0]["model"], json!(common::BEDROCK_MODEL));
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0].model, common::BEDROCK_MODEL);
    assert!(usage[0].cost_usd > Some(0.0), "{usage:?}");
}

/// The time zone travels with the message and is remembered in the chat; an unknown one is
/// a validation error before anything is stored.
#[tokio::test]
async fn the_time_zone_is_validated_and_remembered() {
    let rig = Rig::start().await;
    let user = test_support::unique("tz");
    let token = rig.token(&user);
    let bad = rig
        .chat(
            Some(&token),
            json!({"message": "hi", "timezone": "Mars/Olympus_Mons"}),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json["error"]["code"], json!("validation_failed"));
    assert!(
        bad.json["error"]["message"]
            .to_string()
            .contains("timezone"),
        "{}",
        bad.json
    );
    assert_eq!(rig.llm.request_count(), 0);

    rig.llm.push(Reply::text("Hello!"));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "hi", "timezone": "America/Los_Angeles"}),
        )
        .await;
    assert_eq!(turn.status, 200);
    let chat = rig.deps.chats.get(&user, &turn.chat_id()).await.unwrap();
    assert_eq!(
        chat.session_state.timezone.as_deref(),
        Some("America/Los_Angeles")
    );
}

#[tokio::test]
async fn bad_tokens_get_401_before_any_stream() {
    let rig = Rig::start().await;
    let expired = rig.token_with(
        &test_support::unique("kim"),
        common::ISSUER,
        common::AUDIENCE,
        -3600,
    );
    let wrong_audience = rig.token_with(
        &test_support::unique("kim"),
        common::ISSUER,
        "someone-else",
        3600,
    );
    for token in [
        None,
        Some(expired.as_str()),
        Some(wrong_audience.as_str()),
        Some("garbage"),
    ] {
        let turn = rig.chat(token, json!({"message": "hi"})).await;
        assert_eq!(turn.status, 401, "{token:?}");
        assert_eq!(turn.json["error"]["code"], json!("unauthorized"));
        assert!(turn.events.is_empty());
    }
    assert_eq!(rig.llm.request_count(), 0);
}

#[tokio::test]
async fn another_users_chat_is_not_found() {
    let rig = Rig::start().await;
    rig.llm.push(Reply::text("hello"));
    let owner = rig.token(&test_support::unique("leo"));
    let turn = rig.chat(Some(&owner), json!({"message": "hi"})).await;
    let chat_id = turn.chat_id();
    let intruder = rig.token(&test_support::unique("mallory"));
    let stolen = rig
        .chat(
            Some(&intruder),
            json!({"chat_id": chat_id, "message": "hi"}),
        )
        .await;
    let missing = rig
        .chat(
            Some(&intruder),
            json!({"chat_id": "no-such-chat", "message": "hi"}),
        )
        .await;
    assert_eq!((stolen.status, missing.status), (404, 404));
    assert_eq!(
        stolen.json, missing.json,
        "indistinguishable from a missing chat"
    );
    let (status, _) = rig
        .get(&intruder, &format!("/chats/{chat_id}/tool-calls"))
        .await;
    assert_eq!(status, 404);
}

async fn a_client_disconnect_leaves_ledger_and_chat_consistent(llm: Protocol) {
    use http_body_util::BodyExt;
    let rig = Rig::on(llm).await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    let user = test_support::unique("nina");
    let token = rig.token(&user);
    let response = chat_router::handler::handle(
        &rig.deps,
        common::post_chat(Some(&token), &json!({"message": "flights"})),
    )
    .await;
    let mut body = response.into_body();
    let mut seen = String::new();
    while !seen.contains("event: tool_started") {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    seen.push_str(&String::from_utf8_lossy(&data));
                }
            }
            _ => panic!("stream ended early: {seen}"),
        }
    }
    let chat_id = seen
        .split("\"chat_id\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_default()
        .to_owned();
    drop(body); // the client goes away mid-turn

    let ledger = rig.deps.ledger.clone();
    let chats = rig.deps.chats.clone();
    let done = eventually(Duration::from_secs(10), || {
        let (ledger, chats, chat_id, user) =
            (ledger.clone(), chats.clone(), chat_id.clone(), user.clone());
        async move {
            let calls = ledger.list(&user, &chat_id, 10, None).await;
            let messages = chats.recent_messages(&user, &chat_id, 10).await;
            matches!((calls, messages), (Ok(page), Ok(messages))
                if page.items.len() == 1
                    && page.items[0].status == shared::domain::tool_call::ToolCallStatus::Succeeded
                    && messages.len() == 4)
        }
    })
    .await;
    assert!(done, "the turn did not finish after the disconnect");
    let messages = chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap_or_default();
    let roles: Vec<_> = messages.iter().map(|m| m.role).collect();
    use shared::domain::chat::Role;
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert!(messages[2].content.contains("Award flights"));
    assert!(messages[3].content.starts_with("I found "));
}

async fn tokens_arrive_as_the_llm_streams_them(llm: Protocol) {
    let rig = Rig::on(llm).await;
    rig.llm.push(
        Reply::text("one two three four five six seven eight")
            .with_chunk_delay(Duration::from_millis(100)),
    );
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("otto"))),
            json!({"message": "count"}),
        )
        .await;
    let tokens: Vec<Duration> = turn
        .events
        .iter()
        .filter(|e| e.name == "assistant_token")
        .map(|e| e.at)
        .collect();
    assert!(tokens.len() >= 4, "{:?}", turn.names());
    let spread = *tokens.last().unwrap() - tokens[0];
    assert!(
        spread >= Duration::from_millis(400),
        "all tokens came at once ({spread:?})"
    );
    assert_eq!(turn.text(), "one two three four five six seven eight");
    assert_eq!(
        turn.first("final")["message"]["content"],
        json!("one two three four five six seven eight")
    );
}

#[tokio::test]
async fn a_queued_call_can_be_canceled_by_its_owner_only_once() {
    use shared::domain::tool_call::ToolName;
    use shared::ledger::{Claim, ClaimMode, ClaimRequest};
    let rig = Rig::start().await;
    rig.llm.push(Reply::text("hi"));
    let user = test_support::unique("quinn");
    let token = rig.token(&user);
    let chat_id = rig
        .chat(Some(&token), json!({"message": "hi"}))
        .await
        .chat_id();
    let claim = rig
        .deps
        .ledger
        .record_and_claim(ClaimRequest {
            owner_id: user.clone(),
            chat_id: chat_id.clone(),
            tool: ToolName::SEARCH_KNOWLEDGE_BASE,
            request: json!({"query": "queued", "top_k": 6}),
            mode: ClaimMode::Enqueue,
        })
        .await
        .unwrap();
    let Claim::Claimed(queued) = claim else {
        panic!("not claimed: {claim:?}")
    };
    let cancel = |who: String| {
        let path = format!("/chats/{chat_id}/tool-calls/{}/cancel", queued.id);
        let req = lambda_http::http::Request::builder()
            .method("POST")
            .uri(path)
            .header("authorization", format!("Bearer {who}"))
            .body(lambda_http::Body::Empty)
            .unwrap();
        let deps = rig.deps.clone();
        async move {
            let response = chat_router::handler::handle(&deps, req).await;
            let status = response.status().as_u16();
            let turn = common::Turn::read(response, std::time::Instant::now()).await;
            (status, turn.json)
        }
    };
    let (status, _) = cancel(rig.token(&test_support::unique("mallory"))).await;
    assert_eq!(status, 404, "a stranger cannot cancel");
    let (status, record) = cancel(token.clone()).await;
    assert_eq!(
        (status, &record["status"]),
        (200, &json!("canceled")),
        "{record}"
    );
    let (status, body) = cancel(token).await;
    assert_eq!(status, 409, "already canceled: {body}");
}

async fn after_the_step_limit_the_model_must_answer_without_tools(llm: Protocol) {
    let rig = Rig::with_on(
        llm,
        |vars| vars.push(("MAX_TOOL_STEPS".into(), "1".into())),
        None,
    )
    .await;
    rig.llm.push(Reply::tool_calls(vec![(
        "search_knowledge_base",
        json!({"query": "baggage"}),
    )]));
    rig.llm.push(Reply::text(""));
    let turn = rig
        .chat(
            Some(&rig.token(&test_support::unique("rita"))),
            json!({"message": "baggage rules?"}),
        )
        .await;
    let requests = rig.llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].get("tools").is_none(), "{}", requests[1]);
    let content = turn.first("final")["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(content.contains("could not finish"), "{content}");
    assert_eq!(turn.text(), content);
}

/// Ids and paging parameters out of bounds are 400 `validation_failed` naming the field,
/// before anything is read: never a 500, never a key condition with a hostile id.
#[tokio::test]
async fn ids_and_paging_out_of_bounds_answer_400() {
    let rig = Rig::start().await;
    let user = test_support::unique("bounds");
    let token = rig.token(&user);
    rig.llm.push(Reply::text("hi"));
    let chat_id = rig
        .chat(Some(&token), json!({"message": "hello"}))
        .await
        .chat_id();
    let huge = "a".repeat(10 * 1024);
    let cases = [
        (format!("/chats/{huge}/tool-calls"), "chat_id"),
        (format!("/chats/{chat_id}/tool-calls/{huge}"), "call_id"),
        (
            format!("/chats/{chat_id}/tool-calls/x%27y/cancel"),
            "call_id",
        ),
        (format!("/chats/{chat_id}/turns/{huge}/events"), "turn_id"),
        (format!("/chats/{chat_id}/tool-calls?limit=-1"), "limit"),
        (format!("/chats/{chat_id}/tool-calls?limit=0"), "limit"),
        (format!("/chats/{chat_id}/tool-calls?limit=1000"), "limit"),
        (format!("/chats/{chat_id}/refused-calls?limit=ten"), "limit"),
        (
            format!("/chats/{chat_id}/tool-calls?cursor=not-hex"),
            "cursor",
        ),
        (
            format!("/chats/{chat_id}/tool-calls?cursor={}", "ab".repeat(2000)),
            "cursor",
        ),
    ];
    for (path, field) in cases {
        let (status, body) = if path.ends_with("/cancel") {
            rig.post(&token, &path).await
        } else {
            rig.get(&token, &path).await
        };
        let shown = &path[..path.len().min(80)];
        assert_eq!(status, 400, "{shown}: {body}");
        assert_eq!(body["error"]["code"], json!("validation_failed"), "{shown}");
        assert_eq!(body["error"]["details"]["field"], json!(field), "{shown}");
    }
    // A cursor that decodes but names another listing is refused by the store: 400 too.
    let foreign = hex_cursor(r#"{"pk":"CHAT#other","sk":"x","recent":"y"}"#);
    let (status, body) = rig
        .get(
            &token,
            &format!("/chats/{chat_id}/tool-calls?cursor={foreign}"),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    // A body naming a chat id out of bounds: 400 before any model call.
    let turn = rig
        .chat(Some(&token), json!({"chat_id": huge, "message": "hello"}))
        .await;
    assert_eq!(turn.status, 400, "{:?}", turn.json);
    assert_eq!(turn.json["error"]["details"]["field"], json!("chat_id"));
    assert_eq!(rig.llm.request_count(), 1);
    // Within bounds, the listing works.
    let (status, _) = rig
        .get(&token, &format!("/chats/{chat_id}/tool-calls?limit=100"))
        .await;
    assert_eq!(status, 200);
}

fn hex_cursor(json: &str) -> String {
    json.bytes().map(|b| format!("{b:02x}")).collect()
}

/// How many items a table holds under `pk` (read straight from DynamoDB Local).
async fn items_under(table: &str, pk: &str) -> usize {
    let out = test_support::dynamodb()
        .await
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(pk.to_owned()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    out.items().len()
}

/// `DELETE /chats/{id}` removes the chat, its messages, its state and its tool-call
/// records, and nothing of the owner's other chat; another user gets 404 and deletes
/// nothing.
#[tokio::test]
async fn deleting_a_chat_removes_everything_of_it_and_nothing_else() {
    let rig = Rig::start().await;
    let user = test_support::unique("forget");
    let token = rig.token(&user);
    let mut chat_ids = Vec::new();
    for _ in 0..2 {
        rig.llm
            .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
        let turn = rig
            .chat(Some(&token), json!({"message": "Flights FRA to JFK"}))
            .await;
        assert_eq!(turn.status, 200);
        chat_ids.push(turn.chat_id());
    }
    let (gone, kept) = (&chat_ids[0], &chat_ids[1]);
    let storage = &rig.deps.config.tools.storage;
    let before = items_under(&storage.chats_table, &format!("CHAT#{kept}")).await;
    assert!(items_under(&storage.tool_calls_table, &format!("CHAT#{gone}")).await > 0);

    let intruder = rig.token(&test_support::unique("mallory"));
    let (status, _) = rig.delete(&intruder, &format!("/chats/{gone}")).await;
    assert_eq!(status, 404, "another user's chat is not found");
    assert!(items_under(&storage.chats_table, &format!("CHAT#{gone}")).await > 0);

    let (status, body) = rig.delete(&token, &format!("/chats/{gone}")).await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        items_under(&storage.chats_table, &format!("CHAT#{gone}")).await,
        0
    );
    assert_eq!(
        items_under(&storage.tool_calls_table, &format!("CHAT#{gone}")).await,
        0
    );
    let (status, _) = rig.get(&token, &format!("/chats/{gone}/tool-calls")).await;
    assert_eq!(status, 404);
    let (status, _) = rig.delete(&token, &format!("/chats/{gone}")).await;
    assert_eq!(status, 404, "deleting again finds nothing");

    assert_eq!(
        items_under(&storage.chats_table, &format!("CHAT#{kept}")).await,
        before
    );
    let (status, calls) = rig.get(&token, &format!("/chats/{kept}/tool-calls")).await;
    assert_eq!(status, 200);
    assert_eq!(calls["items"].as_array().map(Vec::len), Some(1));
}

/// Tool functions are called over IAM: the request is SigV4-signed, names the user in the
/// signed `x-tool-user` header, and carries nothing of the user's token.
#[tokio::test]
async fn tool_functions_get_a_signed_request_for_the_user_never_the_users_token() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let kb = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/internal/kb/search"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"results": [], "mode": "bm25", "kb_version": null})),
        )
        .mount(&kb)
        .await;
    let base = format!("{}/internal", kb.uri());
    let rig = Rig::with(
        move |vars| common::route_function(vars, "kb-retrieve", &base),
        None,
    )
    .await;
    rig.llm.push(Reply::tool_calls(vec![(
        "search_knowledge_base",
        json!({"query": "lounge access"}),
    )]));
    rig.llm.push(Reply::text("Nothing found."));
    let user = test_support::unique("frank");
    let token = rig.token(&user);
    let turn = rig
        .chat(Some(&token), json!({"message": "Lounge access?"}))
        .await;
    assert_eq!(turn.names().last(), Some(&"done"));

    let received = kb.received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let authorization = header("authorization");
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential="),
        "{authorization}"
    );
    assert!(authorization.contains("x-tool-user"), "{authorization}");
    assert_eq!(header("x-tool-user"), user);
    let token_bytes = token.as_bytes();
    for (name, value) in &request.headers {
        assert!(
            !value
                .as_bytes()
                .windows(token_bytes.len())
                .any(|w| w == token_bytes),
            "{name} carries the user's token"
        );
    }
    assert!(!String::from_utf8_lossy(&request.body).contains(&token));
}

/// Every flight of a stored flight search, award and cash.
fn stored_flights(record: &Value) -> Vec<Value> {
    ["seatsResult", "cashResult"]
        .iter()
        .filter_map(|k| record["response"]["raw"][k]["results"]["flights"].as_array())
        .flatten()
        .cloned()
        .collect()
}

/// Seed 000 §5.1: the whole request reaches both providers. "2 adults, 1 child, 1 infant,
/// Miles & More, ±2 days": Seats.aero is asked for the Lufthansa programme over a five-day
/// window and offers only flights with 3 seats; Amadeus gets the three passenger counts.
/// A programme name that means nothing is told to the user instead of silently dropped.
#[tokio::test]
async fn the_whole_flight_request_reaches_both_providers() {
    let rig = Rig::start().await;
    let date = test_support::future_date();
    rig.llm.push(Reply::tool_calls(vec![(
        "search_flights",
        json!({"origin": "FRA", "destination": "JFK", "depart_date": date, "cabin": "BUSINESS",
               "pax": 2, "children": 1, "infants": 1, "flexibility": 2,
               "loyalty_programs": ["Miles & More", "Imaginary Miles"]}),
    )]));
    let token = rig.token(&test_support::unique("hal"));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "2 adults, a child and a baby, ±2 days"}),
        )
        .await;
    let result = turn.first("tool_result");
    assert_eq!(result["status"], json!("succeeded"), "{result}");
    assert!(
        turn.text().to_lowercase().contains("imaginary miles"),
        "the unknown programme is named: {}",
        turn.text()
    );

    let requests = rig
        .functions
        .seats_upstream
        .received_requests()
        .await
        .unwrap_or_default();
    let search = requests
        .iter()
        .find(|r| r.url.path() == "/search")
        .unwrap_or_else(|| panic!("no Seats.aero search"));
    let param = |name: &str| {
        search
            .url
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let day = time::Date::parse(
        &date,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .unwrap_or_else(|e| panic!("{date}: {e}"));
    assert_eq!(param("sources").as_deref(), Some("lufthansa"));
    assert_eq!(
        param("start_date"),
        Some((day - time::Duration::days(2)).to_string())
    );
    assert_eq!(
        param("end_date"),
        Some((day + time::Duration::days(2)).to_string())
    );

    let amadeus = rig
        .functions
        .amadeus_upstream
        .received_requests()
        .await
        .unwrap_or_default();
    let offers = amadeus
        .iter()
        .find(|r| r.url.path().ends_with("/flight-offers"))
        .unwrap_or_else(|| panic!("no Amadeus search"));
    let counts: Vec<(String, String)> = offers
        .url
        .query_pairs()
        .filter(|(k, _)| ["adults", "children", "infants"].contains(&k.as_ref()))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    assert_eq!(
        counts,
        [
            ("adults".to_owned(), "2".to_owned()),
            ("children".to_owned(), "1".to_owned()),
            ("infants".to_owned(), "1".to_owned())
        ]
    );

    let record = rig.first_call_record(&token, &turn).await;
    for flight in stored_flights(&record)
        .iter()
        .filter(|f| f["provider"] == json!("seatsaero"))
    {
        assert!(
            flight["seatsLeft"].as_u64().is_none_or(|n| n >= 3),
            "an award offer without 3 seats: {flight}"
        );
    }
}

/// An alliance filter keeps only itineraries whose every carrier is a member: the same
/// search without it shows a non-member; with "Star Alliance" none is left.
#[tokio::test]
async fn an_alliance_filter_drops_flights_of_non_member_carriers() {
    let rig = Rig::start().await;
    let user = test_support::unique("ida");
    let token = rig.token(&user);
    let star = [
        "A3", "AC", "AI", "AV", "BR", "CA", "CM", "ET", "LH", "LO", "LX", "MS", "NH", "NZ", "OS",
        "OU", "OZ", "SA", "SK", "SN", "SQ", "TG", "TK", "TP", "UA", "ZH",
    ];
    let carriers = |flight: &Value| -> Vec<String> {
        ["outbound", "inbound"]
            .iter()
            .filter_map(|leg| flight[leg]["flightNumbers"].as_str())
            .flat_map(|numbers| numbers.split(','))
            .filter_map(|n| n.trim().get(..2).map(str::to_owned))
            .collect()
    };
    let mut counts = Vec::new();
    for alliances in [None, Some(json!(["Star Alliance"]))] {
        let mut args = flight_args();
        if let Some(list) = &alliances {
            args["constraints"] = json!({"alliances": list});
        }
        rig.llm
            .push(Reply::tool_calls(vec![("search_flights", args)]));
        let turn = rig.chat(Some(&token), json!({"message": "flights"})).await;
        assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));
        let flights = stored_flights(&rig.first_call_record(&token, &turn).await);
        let non_member = flights.iter().any(|f| {
            let codes = carriers(f);
            codes.is_empty() || codes.iter().any(|c| !star.contains(&c.as_str()))
        });
        assert_eq!(non_member, alliances.is_none(), "{flights:?}");
        counts.push(flights.len());
    }
    assert!(counts[1] < counts[0], "{counts:?}");
}

/// `GET /chats` lists the user's chats, the most recently active first, with a title from
/// the first message, page by page; `GET /chats/{id}/messages` pages a chat's messages
/// newest first. Another user sees neither, and a cursor of one listing is refused in another.
#[tokio::test]
async fn chat_history_lists_chats_and_pages_messages_for_their_owner_only() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("jo"));
    let mut chats = Vec::new();
    for i in 0..3 {
        rig.llm.push(Reply::text(format!("Answer {i}")));
        let turn = rig
            .chat(
                Some(&token),
                json!({"message": format!("Question   number {i}")}),
            )
            .await;
        assert_eq!(turn.status, 200);
        chats.push(turn.chat_id());
    }
    rig.llm.push(Reply::text("Again"));
    rig.chat(
        Some(&token),
        json!({"message": "Follow-up", "chat_id": chats[0]}),
    )
    .await;

    let ids = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["chat_id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (status, first) = rig.get(&token, "/chats?limit=2").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(ids(&first), [chats[0].clone(), chats[2].clone()]);
    assert_eq!(first["items"][0]["title"], json!("Question number 0"));
    assert_eq!(first["items"][0]["message_count"], json!(4));
    let cursor = first["next_cursor"].as_str().unwrap_or_default().to_owned();
    let (_, second) = rig
        .get(&token, &format!("/chats?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(ids(&second), [chats[1].clone()]);
    assert!(second.get("next_cursor").is_none(), "{second}");

    let path = format!("/chats/{}/messages", chats[0]);
    let (status, newest) = rig.get(&token, &format!("{path}?limit=3")).await;
    assert_eq!(status, 200, "{newest}");
    let texts = |page: &Value| -> Vec<(String, String)> {
        page["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|m| {
                        (
                            m["role"].as_str().unwrap_or_default().to_owned(),
                            m["content"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let pair = |role: &str, text: &str| (role.to_owned(), text.to_owned());
    assert_eq!(
        texts(&newest),
        [
            pair("assistant", "Again"),
            pair("user", "Follow-up"),
            pair("assistant", "Answer 0")
        ]
    );
    let cursor = newest["next_cursor"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (_, oldest) = rig
        .get(&token, &format!("{path}?limit=3&cursor={cursor}"))
        .await;
    assert_eq!(texts(&oldest), [pair("user", "Question   number 0")]);

    // The messages cursor is not a chat-list cursor, nor one for another chat.
    let (status, _) = rig.get(&token, &format!("/chats?cursor={cursor}")).await;
    assert_eq!(status, 400);
    let other_chat = format!("/chats/{}/messages?cursor={cursor}", chats[1]);
    assert_eq!(rig.get(&token, &other_chat).await.0, 400);

    let stranger = rig.token(&test_support::unique("mallory"));
    let (status, theirs) = rig.get(&stranger, "/chats").await;
    assert_eq!((status, ids(&theirs).len()), (200, 0), "{theirs}");
    assert_eq!(rig.get(&stranger, &path).await.0, 404);
}

/// A chat that began with a greeting takes its title from the next message; its owner can
/// rename it (the list keeps its order), nobody else can, and a blank or overlong title is
/// refused naming the field.
#[tokio::test]
async fn titles_skip_greetings_and_owners_rename_their_chats() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("titles"));
    for _ in 0..3 {
        rig.llm.push(Reply::text("Hello!"));
    }
    let greeted = rig.chat(Some(&token), json!({"message": "Hallo!"})).await;
    let chat_id = greeted.chat_id();
    let title_of = |list: &Value, id: &str| -> Option<String> {
        list["items"]
            .as_array()
            .and_then(|items| items.iter().find(|c| c["chat_id"] == json!(id)))
            .and_then(|c| c["title"].as_str().map(str::to_owned))
    };
    let (_, list) = rig.get(&token, "/chats").await;
    assert_eq!(title_of(&list, &chat_id), None, "{list}");
    rig.chat(
        Some(&token),
        json!({"chat_id": chat_id, "message": "Lounges in   Tokyo?"}),
    )
    .await;
    let other = rig
        .chat(Some(&token), json!({"message": "Miles for Lisbon"}))
        .await
        .chat_id();
    let (_, list) = rig.get(&token, "/chats").await;
    assert_eq!(
        title_of(&list, &chat_id).as_deref(),
        Some("Lounges in Tokyo?")
    );

    let path = format!("/chats/{chat_id}");
    let (status, body) = rig
        .patch(
            &token,
            &path,
            &json!({"title": "  Tokyo\u{200b} in   May "}),
        )
        .await;
    assert_eq!(status, 204, "{body}");
    let (_, renamed) = rig.get(&token, "/chats").await;
    assert_eq!(
        title_of(&renamed, &chat_id).as_deref(),
        Some("Tokyo in May")
    );
    let order = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|c| c["chat_id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(order(&renamed), order(&list), "renaming does not reorder");
    assert_eq!(order(&renamed).first(), Some(&other));

    for bad in [json!({"title": "   "}), json!({"title": "x".repeat(81)})] {
        let (status, body) = rig.patch(&token, &path, &bad).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["details"]["field"], json!("title"), "{body}");
    }
    let (status, _) = rig.patch(&token, &path, &json!({"name": "x"})).await;
    assert_eq!(status, 400);
    let stranger = rig.token(&test_support::unique("mallory"));
    let (status, _) = rig
        .patch(&stranger, &path, &json!({"title": "Mine now"}))
        .await;
    assert_eq!(status, 404);
    let (_, after) = rig.get(&token, "/chats").await;
    assert_eq!(title_of(&after, &chat_id).as_deref(), Some("Tokyo in May"));
}
