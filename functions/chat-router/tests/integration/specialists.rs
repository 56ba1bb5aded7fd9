//! Specialists through the router with the scripted LLM (issue: seed 002's handoffs and UI
//! skills): a turn handed from travel to support and back, the next turn starting at the
//! stored agent, a third handoff refused, a handoff outside the list refused as an unknown
//! tool, and quick replies reaching the client and the chat's history.

use crate::common;

use crate::common::Rig;
use serde_json::{Value, json};
use test_support::fake_llm::Reply;

/// The first system message of the LLM's `nth` request: the agent's own prompt.
fn agent_prompt(rig: &Rig, nth: usize) -> String {
    rig.llm.requests()[nth]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

const SUPPORT: &str = "You answer questions about loyalty programmes and this service";
const TRAVEL: &str = "You are a travel assistant for people who pay for flights";

#[tokio::test]
async fn a_turn_hands_over_and_back_and_the_next_turn_starts_at_the_stored_agent() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("hand"));
    rig.llm
        .push(Reply::tool_call(
            "transfer_to_support",
            json!({"reason": "a question about status miles"}),
        ))
        .push(Reply::tool_call(
            "transfer_to_travel",
            json!({"reason": "the user wants flights after all"}),
        ))
        .push(Reply::tool_call(
            "transfer_to_support",
            json!({"reason": "once more"}),
        ))
        .push(Reply::text("Let us look at flights."));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Status miles, then flights"}),
        )
        .await;
    let handoffs: Vec<&Value> = turn.all("handoff");
    assert_eq!(handoffs.len(), 2, "{:?}", turn.names());
    assert_eq!(
        handoffs[0],
        &json!({"from": "travel", "to": "support", "reason": "a question about status miles"})
    );
    assert_eq!(handoffs[1]["from"], json!("support"));
    assert_eq!(handoffs[1]["to"], json!("travel"));
    assert!(agent_prompt(&rig, 0).starts_with(TRAVEL));
    assert!(
        agent_prompt(&rig, 1).starts_with(SUPPORT),
        "support's prompt after the handoff"
    );
    assert_eq!(
        rig.offered(1),
        [
            "search_knowledge_base",
            "suggest_replies",
            "contact_support",
            "transfer_to_travel"
        ],
        "support's own tools and handoffs"
    );
    assert!(agent_prompt(&rig, 2).starts_with(TRAVEL));
    assert!(
        !rig.offered(2).iter().any(|t| t.starts_with("transfer_to_")),
        "no handoff is offered once the turn used its two: {:?}",
        rig.offered(2)
    );
    // The third one, called anyway, is refused and travel answers.
    let refused = turn
        .all("tool_result")
        .into_iter()
        .find(|r| r["tool"] == json!("transfer_to_support"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(refused["status"], json!("skipped"), "{refused}");
    assert_eq!(refused["metadata"]["reason"], json!("over_cap"));
    assert_eq!(turn.text(), "Let us look at flights.");
    let state = &turn.first("final")["session_state"];
    assert_eq!(state["active_agent"], json!("travel"));

    // The ledger has both handoffs as tool calls.
    let chat = turn.chat_id();
    let (status, calls) = rig.get(&token, &format!("/chats/{chat}/tool-calls")).await;
    assert_eq!(status, 200);
    let recorded: Vec<&Value> = calls["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|c| c["tool"] == json!("handoff"))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(recorded.len(), 2, "{calls}");
    assert!(recorded.iter().all(|c| c["status"] == json!("succeeded")));

    // A turn that ends at support: the next one (no agent named) starts there, and one
    // that names an agent starts at that one.
    rig.llm
        .push(Reply::tool_call(
            "transfer_to_support",
            json!({"reason": "fees"}),
        ))
        .push(Reply::text("Fees are in the knowledge base."));
    let second = rig
        .chat(
            Some(&token),
            json!({"message": "What about fees?", "chat_id": chat}),
        )
        .await;
    assert_eq!(second.all("handoff").len(), 1);
    assert_eq!(
        second.first("final")["session_state"]["active_agent"],
        json!("support")
    );
    rig.llm.push(Reply::text("Still support."));
    let third = rig
        .chat(
            Some(&token),
            json!({"message": "And more?", "chat_id": chat}),
        )
        .await;
    assert_eq!(third.text(), "Still support.");
    let count = rig.llm.request_count();
    assert!(agent_prompt(&rig, count - 1).starts_with(SUPPORT));
    rig.llm.push(Reply::text("Travel here."));
    let named = rig
        .chat(
            Some(&token),
            json!({"message": "Flights please", "chat_id": chat, "agent": "travel"}),
        )
        .await;
    assert_eq!(named.text(), "Travel here.");
    assert!(agent_prompt(&rig, count).starts_with(TRAVEL));
    assert_eq!(
        named.first("final")["session_state"]["active_agent"],
        json!("travel")
    );
}

#[tokio::test]
async fn a_handoff_outside_the_profiles_list_is_refused_as_an_unknown_tool() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("stray"));
    rig.llm
        .push(Reply::tool_call(
            "transfer_to_chat",
            json!({"reason": "small talk"}),
        ))
        .push(Reply::text("I stay with you."));
    let turn = rig
        .chat(Some(&token), json!({"message": "Just chatting"}))
        .await;
    assert!(turn.all("handoff").is_empty());
    let result = turn.first("tool_result");
    assert_eq!(result["tool"], json!("transfer_to_chat"));
    assert_eq!(result["status"], json!("rejected"));
    assert_eq!(result["metadata"]["reason"], json!("unknown_tool"));
    assert_eq!(turn.text(), "I stay with you.");
    assert_eq!(
        turn.first("final")["session_state"]["active_agent"],
        json!("travel")
    );
}

#[tokio::test]
async fn quick_replies_reach_the_client_and_the_chats_history() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("ui"));
    rig.llm.push(
        Reply::text("Shall I search business class instead?").with_tool_call(
            "suggest_replies",
            json!({"replies": ["Yes, business", " No,  thanks ", "Yes, business"]}),
        ),
    );
    let turn = rig
        .chat(Some(&token), json!({"message": "Economy is full"}))
        .await;
    let ui = turn.first("ui");
    assert_eq!(
        ui,
        &json!({"kind": "quick_replies", "payload": {"replies": ["Yes, business", "No, thanks"]}})
    );
    assert_eq!(turn.text(), "Shall I search business class instead?");
    assert_eq!(
        rig.llm.request_count(),
        1,
        "the text was the answer: no second call"
    );
    let (status, page) = rig
        .get(&token, &format!("/chats/{}/messages", turn.chat_id()))
        .await;
    assert_eq!(status, 200);
    let answer = page["items"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == json!("assistant")))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        answer["content"],
        json!("Shall I search business class instead?")
    );
    assert_eq!(answer["ui"], json!([ui]), "{page}");

    // One reply is not a choice: the model is told and may correct it.
    rig.llm
        .push(Reply::tool_call(
            "suggest_replies",
            json!({"replies": ["Only one"]}),
        ))
        .push(Reply::text("Fine."));
    let bad = rig
        .chat(
            Some(&token),
            json!({"message": "Hm", "chat_id": turn.chat_id()}),
        )
        .await;
    assert!(bad.all("ui").is_empty());
    assert_eq!(bad.first("tool_result")["status"], json!("rejected"));
}

#[tokio::test]
async fn listed_flights_are_shown_as_cards_by_their_numbers() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("cards"));
    rig.llm
        .push(Reply::tool_call("search_flights", common::flight_args()));
    let listed = rig
        .chat(Some(&token), json!({"message": "FRA to JFK in business"}))
        .await;
    let offered = listed.first("final")["session_state"]["offered_flights"].clone();
    rig.llm.push(
        Reply::text("Here are the two side by side.")
            .with_tool_call("show_flight_options", json!({"options": [2, 1, 2]})),
    );
    let shown = rig
        .chat(
            Some(&token),
            json!({"message": "Compare 1 and 2", "chat_id": listed.chat_id()}),
        )
        .await;
    let ui = shown.first("ui");
    assert_eq!(ui["kind"], json!("flight_options"));
    let flights = ui["payload"]["flights"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(flights.len(), 2, "{ui}");
    assert_eq!(flights[0], offered[1], "option 2 first, as asked, once");
    assert_eq!(flights[1], offered[0]);
    assert_eq!(shown.text(), "Here are the two side by side.");
}

/// Quick replies are the model's words shown outside the answer: a reply that would leak a
/// secret is dropped by the answer's guard, and the rest of the turn goes on.
#[tokio::test]
async fn quick_replies_that_leak_a_secret_are_not_shown() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("leak"));
    let secret = rig.jwt_secret().to_owned();
    assert!(secret.chars().count() <= 60, "fits in a reply: {secret}");
    rig.llm.push(
        Reply::text("Anything else?")
            .with_tool_call("suggest_replies", json!({"replies": [secret, "No"]})),
    );
    let turn = rig.chat(Some(&token), json!({"message": "Hi"})).await;
    assert!(turn.all("ui").is_empty(), "{:?}", turn.names());
    assert_eq!(turn.text(), "Anything else?");
    let (_, page) = rig
        .get(&token, &format!("/chats/{}/messages", turn.chat_id()))
        .await;
    assert!(page["items"][0]["ui"].is_null(), "{page}");
}

/// After a handoff, the payload guard knows the new profile's system prompt too: the
/// support agent's model echoing its own instructions in a tool argument is cut from the
/// `tool_result` the client sees.
#[tokio::test]
async fn a_handed_over_agents_prompt_is_cut_from_payloads() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("echo"));
    rig.llm
        .push(Reply::tool_call(
            "transfer_to_support",
            json!({"reason": "a question about status miles"}),
        ))
        .push(Reply::tool_call(
            "search_knowledge_base",
            json!({ "query": SUPPORT }),
        ))
        .push(Reply::text("Status miles are explained in the guide."));
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "How do status miles work?"}),
        )
        .await;
    assert_eq!(turn.all("handoff").len(), 1, "{:?}", turn.names());
    let results = turn.all("tool_result");
    assert!(!results.is_empty(), "{:?}", turn.names());
    let all: String = turn.events.iter().map(|e| e.data.to_string()).collect();
    assert!(!all.contains(SUPPORT), "{all}");
    assert!(all.contains(agent::guard::payload::CUT_MARKER), "{all}");
}

/// "I want to talk to a human": support records a request the operator sees (the chats
/// table; the template's pipe sends each new one to the support topic) and tells the user
/// the reference, that a person answers outside the chat, and how to reach support.
#[tokio::test]
async fn a_wish_for_a_person_is_recorded_for_the_operator_and_said_honestly() {
    use shared::support::{DynamoSupportRequests, SupportRequests};
    let rig = Rig::with(
        |vars| vars.push(("SUPPORT_CONTACT".into(), "help@example.com".into())),
        None,
    )
    .await;
    let user = test_support::unique("human");
    let token = rig.token(&user);
    let words = "I want to talk to a human about my cancelled flight";
    rig.llm
        .push(Reply::tool_call(
            "transfer_to_support",
            json!({"reason": "wants a person"}),
        ))
        .push(Reply::tool_call(
            "contact_support",
            json!({"summary": words}),
        ))
        .push(Reply::text("Done: your request is with the support team."));
    let turn = rig.chat(Some(&token), json!({"message": words})).await;
    assert_eq!(turn.status, 200);
    let result = turn
        .all("tool_result")
        .into_iter()
        .find(|r| r["tool"] == json!("contact_support"))
        .unwrap_or_else(|| panic!("no contact_support result: {:?}", turn.names()));
    assert_eq!(result["status"], json!("succeeded"), "{result}");
    let reference = result["result"]["reference"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(reference.starts_with("SR-"), "{result}");
    // What the model read and relays: the reference, a person outside this chat, the contact.
    let told = rig.tool_message(&user, &turn).await;
    for part in [reference.as_str(), "outside this chat", "help@example.com"] {
        assert!(told.contains(part), "{part} not in {told}");
    }
    // The operator's record.
    let table = shared::config::StorageConfig::from_env(&shared::config::Env::from_process())
        .unwrap_or_else(|e| panic!("{e}"))
        .chats_table;
    let requests = DynamoSupportRequests::new(test_support::dynamodb().await, table);
    let kept = requests.newest(100).await.unwrap_or_else(|e| panic!("{e}"));
    let mine = kept
        .iter()
        .find(|r| r.id == reference)
        .unwrap_or_else(|| panic!("{reference} not recorded"));
    assert_eq!(
        (mine.owner.as_str(), mine.summary.as_str()),
        (user.as_str(), words)
    );
    assert_eq!(mine.chat_id, turn.chat_id());
}
