//! Session state, memory and the result cache through the router, with the fake LLM and
//! the real flight functions over their upstream fakes: a flight request gathered over two
//! turns, a preference remembered in one chat shaping a search in another (and never
//! another user's), picking a listed flight, `GET/DELETE /memory`, and one upstream search
//! serving two users.

use crate::common;

use crate::common::Rig;
use serde_json::{Value, json};
use test_support::fake_llm::Reply;

/// The query parameter `name` of every Seats.aero search the fake received.
async fn seats_params(rig: &Rig, name: &str) -> Vec<String> {
    rig.functions
        .seats_upstream
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/search")
        .filter_map(|r| {
            r.url
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
        .collect()
}

/// The system messages of the LLM's `nth` request, joined: what the model was told.
fn system_text(rig: &Rig, nth: usize) -> String {
    rig.llm.requests()[nth]["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == json!("system"))
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_request_missing_its_date_is_completed_on_the_next_turn() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("pat"));
    rig.llm.push(Reply::tool_call(
        "search_flights",
        json!({"origin": "FRA", "destination": "JFK", "cabin": "business"}),
    ));
    let first = rig
        .chat(
            Some(&token),
            json!({"message": "Business from Frankfurt to New York"}),
        )
        .await;
    assert_eq!(first.first("tool_result")["status"], json!("succeeded"));
    let asked = first.text();
    assert!(asked.contains("the travel date"), "{asked}");
    assert!(asked.contains("FRA") && asked.contains("JFK"), "{asked}");
    assert!(
        seats_params(&rig, "origin_airport").await.is_empty(),
        "no search yet"
    );
    let pending = &first.first("final")["session_state"]["pending_flight_request"];
    assert_eq!(pending["destination"], json!("JFK"), "{pending}");

    // The model gives only what the user added; the kept request completes it.
    let date = test_support::future_date();
    rig.llm.push(Reply::tool_call(
        "search_flights",
        json!({"depart_date": date}),
    ));
    let second = rig
        .chat(
            Some(&token),
            json!({"message": format!("On {date}"), "chat_id": first.chat_id()}),
        )
        .await;
    assert!(
        system_text(&rig, 1).contains("pending_flight_request"),
        "the model saw the kept request"
    );
    assert_eq!(second.first("tool_result")["status"], json!("succeeded"));
    assert_eq!(seats_params(&rig, "origin_airport").await, ["FRA"]);
    assert_eq!(seats_params(&rig, "destination_airport").await, ["JFK"]);
    let state = &second.first("final")["session_state"];
    assert!(state.get("pending_flight_request").is_none(), "{state}");
    assert_eq!(state["last_flight_request"]["cabin"], json!("BUSINESS"));
}

#[tokio::test]
async fn a_preference_stated_in_one_chat_shapes_a_search_in_another_never_another_users() {
    let rig = Rig::start().await;
    let alice = rig.token(&test_support::unique("alice"));
    let bob = rig.token(&test_support::unique("bob"));
    rig.llm.push(Reply::tool_call(
        "remember",
        json!({"home_airport": "MUC", "loyalty_programs": ["Miles & More"], "note": "prefers aisle seats"}),
    ));
    rig.llm.push(Reply::text("Noted."));
    let told = rig
        .chat(
            Some(&alice),
            json!({"message": "I always fly from Munich and collect Miles & More"}),
        )
        .await;
    assert_eq!(told.first("tool_result")["status"], json!("succeeded"));

    // Another chat of Alice's: the search leaves out the origin and the programmes.
    let date = test_support::future_date();
    let search = json!({"destination": "JFK", "depart_date": date, "cabin": "BUSINESS"});
    rig.llm
        .push(Reply::tool_call("search_flights", search.clone()));
    let searched = rig
        .chat(Some(&alice), json!({"message": "Business to New York"}))
        .await;
    assert_ne!(searched.chat_id(), told.chat_id());
    assert_eq!(searched.first("tool_result")["status"], json!("succeeded"));
    assert_eq!(seats_params(&rig, "origin_airport").await, ["MUC"]);
    assert_eq!(seats_params(&rig, "sources").await, ["lufthansa"]);
    let seen = system_text(&rig, 2);
    assert!(
        seen.contains("prefers aisle seats") && seen.contains("MUC"),
        "{seen}"
    );

    // Bob remembered nothing: the same call asks him where he flies from.
    rig.llm.push(Reply::tool_call("search_flights", search));
    let bobs = rig
        .chat(Some(&bob), json!({"message": "Business to New York"}))
        .await;
    assert!(bobs.text().contains("departure airport"), "{}", bobs.text());
    assert_eq!(
        seats_params(&rig, "origin_airport").await.len(),
        1,
        "no search for Bob"
    );
    assert!(
        !system_text(&rig, 3).contains("aisle"),
        "Bob's model never sees Alice's memory"
    );

    // Alice can see and delete what is remembered; Bob sees nothing of it.
    let (status, memory) = rig.get(&alice, "/memory").await;
    assert_eq!(status, 200, "{memory}");
    assert_eq!(memory["preferences"]["home_airport"], json!("MUC"));
    assert_eq!(memory["notes"][0]["content"], json!("prefers aisle seats"));
    let (_, nothing) = rig.get(&bob, "/memory").await;
    assert_eq!(nothing, json!({"preferences": {}, "notes": []}));
    let note_id = memory["notes"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(rig.delete(&bob, &format!("/memory/{note_id}")).await.0, 404);
    assert_eq!(
        rig.delete(&alice, &format!("/memory/{note_id}")).await.0,
        204
    );
    assert_eq!(rig.delete(&alice, "/memory/home_airport").await.0, 204);
    assert_eq!(rig.delete(&alice, "/memory/home_airport").await.0, 404);
    let (_, left) = rig.get(&alice, "/memory").await;
    assert_eq!(
        left["preferences"],
        json!({"loyalty_programs": ["Miles & More"]})
    );
    assert_eq!(rig.delete(&alice, "/memory").await.0, 204);
    let (_, empty) = rig.get(&alice, "/memory").await;
    assert_eq!(empty, json!({"preferences": {}, "notes": []}));
    let (status, _) = rig.post(&alice, "/memory").await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn a_flight_picked_by_its_number_is_recorded_in_the_chat() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("kim"));
    let mut for_two = common::flight_args();
    for_two["pax"] = json!(2);
    rig.llm.push(Reply::tool_call("search_flights", for_two));
    let listed = rig
        .chat(
            Some(&token),
            json!({"message": "FRA to JFK in business for two"}),
        )
        .await;
    let offered = listed.first("final")["session_state"]["offered_flights"].clone();
    let second = offered
        .as_array()
        .and_then(|o| o.iter().find(|f| f["option"] == json!(2)))
        .cloned()
        .unwrap_or_else(|| panic!("no option 2 offered: {offered}"));
    // The tables show it under that number.
    let result = &listed.first("tool_result")["result"];
    let numbered: Vec<(&Value, &Value)> = ["seatsResult", "cashResult"]
        .iter()
        .filter_map(|list| result[list]["results"]["flights"].as_array())
        .flatten()
        .map(|row| (&row["option"], &row["id"]))
        .collect();
    assert!(
        numbered.contains(&(&json!(2), &second["flight"]["id"])),
        "{numbered:?}"
    );

    // A number that was not listed goes back to the model, which corrects it.
    rig.llm
        .push(Reply::tool_call("select_flight", json!({"option": 19})));
    rig.llm
        .push(Reply::tool_call("select_flight", json!({"option": 2})));
    rig.llm.push(Reply::text("Good choice."));
    let picked = rig
        .chat(
            Some(&token),
            json!({"message": "I'll take number 2", "chat_id": listed.chat_id()}),
        )
        .await;
    let repair = rig.llm.requests()[2].to_string();
    assert!(repair.contains("not in the last list"), "{repair}");
    let selected = &picked.first("final")["session_state"]["selected_itineraries"];
    assert_eq!(selected.as_array().map(Vec::len), Some(1), "{selected}");
    assert_eq!(selected[0]["flight"]["id"], second["flight"]["id"]);
    assert_eq!(picked.text(), "Good choice.");
    // What the model is told: the row, its price for the two of them, where to book it.
    let told = rig
        .llm
        .requests()
        .last()
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(told.contains("You picked option 2: "), "{told}");
    assert!(told.contains(" for 2 ("), "the party's price: {told}");
    assert!(
        told.contains("Book it:") || told.contains("no booking link"),
        "{told}"
    );

    // In German, the same pick reads in German.
    rig.llm
        .push(Reply::tool_call("select_flight", json!({"option": 1})));
    rig.llm.push(Reply::text("Gut."));
    rig.chat(
        Some(&token),
        json!({"message": "Ich nehme die erste", "chat_id": listed.chat_id(), "language": "de"}),
    )
    .await;
    let told = rig
        .llm
        .requests()
        .last()
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(told.contains("Du hast Option 1 gewählt: "), "{told}");
    assert!(told.contains(" für 2 ("), "{told}");
}

/// Seed 001's result cache: the same award search from two users within `cache_secs` makes
/// one upstream call; the second is marked as cached in its event and its audit record.
#[tokio::test]
async fn the_same_search_from_two_users_makes_one_upstream_call() {
    let rig = Rig::start().await;
    let args = common::flight_args();
    let mut turns = Vec::new();
    for user in ["ann", "ben"] {
        let token = rig.token(&test_support::unique(user));
        rig.llm
            .push(Reply::tool_call("search_flights", args.clone()));
        let turn = rig
            .chat(Some(&token), json!({"message": "FRA to JFK in business"}))
            .await;
        assert_eq!(turn.first("tool_result")["status"], json!("succeeded"));
        turns.push((token, turn));
    }
    assert_eq!(
        rig.functions.seats_searches().await,
        1,
        "one upstream search"
    );
    let (first, second) = (&turns[0].1, &turns[1].1);
    assert_eq!(first.first("tool_result")["metadata"].get("cached"), None);
    assert_eq!(
        second.first("tool_result")["metadata"]["cached"],
        json!(true)
    );
    assert!(
        second.text().starts_with(&first.text())
            && second
                .text()
                .contains("(Saved result: the same search ran at most"),
        "the same answer, saying it was saved:\n{}",
        second.text()
    );
    assert_eq!(
        second.first("final")["session_state"]["last_flight_request"]["origin"],
        json!("FRA"),
        "the cached result still updates the second chat"
    );

    let (token, turn) = &turns[1];
    let record = rig.first_call_record(token, turn).await;
    assert_eq!(
        record["response"]["metadata"]["cached"],
        json!(true),
        "{record}"
    );
}

/// A 12 s search is not silent: when the award search is done and the cash search still
/// runs, a `tool_progress` event says so, well before the slow provider answers.
#[tokio::test]
async fn progress_arrives_before_the_slow_provider_finishes() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    let rig = Rig::start().await;
    let slow = std::time::Duration::from_millis(1500);
    Mock::given(method("GET"))
        .and(path("/v2/shopping/flight-offers"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(
                    test_support::fixture(
                        "amadeus/flight_offers_search_response.amadeus-java.json",
                    ),
                    "application/vnd.amadeus+json",
                )
                .set_delay(slow),
        )
        .with_priority(1)
        .mount(&rig.functions.amadeus_upstream)
        .await;
    rig.llm
        .push(Reply::tool_call("search_flights", common::flight_args()));
    let token = rig.token(&test_support::unique("slow"));
    let turn = rig
        .chat(Some(&token), json!({"message": "FRA to JFK in business"}))
        .await;
    assert_eq!(
        turn.names()[..4],
        ["init", "tool_started", "tool_progress", "tool_result"],
        "{:?}",
        turn.names()
    );
    let at = |name: &str| {
        turn.events
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.at)
            .unwrap_or_default()
    };
    assert!(
        at("tool_progress") + slow / 2 < at("tool_result"),
        "progress at {:?}, result at {:?}",
        at("tool_progress"),
        at("tool_result")
    );
    let progress = turn.first("tool_progress");
    assert_eq!(progress["tool"], json!("search_flights"));
    assert_eq!(progress["job_id"], turn.first("tool_result")["job_id"]);
    let message = progress["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Award search done:"), "{message}");
    assert!(message.contains("cash fares"), "{message}");
}
