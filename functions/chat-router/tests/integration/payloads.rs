//! Everything a client receives besides the answer text passes the output guard: upstream
//! free text in tool results, the `final` event's result and session state, and the model's
//! own tool arguments. Through the router against DynamoDB Local, the real flight and
//! knowledge-base functions and their upstream fakes.

use crate::common::{Rig, Turn, flight_args};
use serde_json::{Value, json};
use test_support::fake_llm::Reply;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, ResponseTemplate};

/// A key-shaped string: what the output guard cuts from an answer.
const KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";

/// Every event's data, as the client reads it.
fn everything(turn: &Turn) -> String {
    turn.events
        .iter()
        .map(|e| format!("{} {}\n", e.name, e.data))
        .collect()
}

/// Seats.aero answers every search with one award whose trip's carriers are `carriers`.
async fn plant_carriers(rig: &Rig, carriers: &str) {
    let upstream = &rig.functions.seats_upstream;
    let date = test_support::future_date();
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{
                "ID": "planted-1",
                "Route": {"OriginAirport": "FRA", "DestinationAirport": "JFK"},
                "Date": date,
                "JAvailable": true,
                "JMileageCost": "70000",
                "JRemainingSeats": 2,
                "JAirlines": "LH",
                "JDirect": true,
                "Source": "lufthansa",
            }],
            "count": 1,
            "hasMore": false,
        })))
        .with_priority(1)
        .mount(upstream)
        .await;
    Mock::given(method("GET"))
        .and(path_regex("^/trips/"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{
                "AvailabilitySegments": [{
                    "FlightNumber": "LH400",
                    "OriginAirport": "FRA",
                    "DestinationAirport": "JFK",
                    "DepartsAt": format!("{date}T10:00:00Z"),
                    "ArrivesAt": format!("{date}T18:00:00Z"),
                    "Order": 0,
                }],
                "TotalDuration": 480,
                "Stops": 0,
                "Carriers": carriers,
                "RemainingSeats": 2,
                "MileageCost": 70000,
                "TotalTaxes": 25000,
                "TaxesCurrency": "EUR",
                "Cabin": "business",
                "Source": "lufthansa",
            }],
            "booking_links": [],
        })))
        .with_priority(1)
        .mount(upstream)
        .await;
}

async fn flight_turn(rig: &Rig) -> Turn {
    flight_turn_as(rig, &test_support::unique("traveller")).await
}

/// [`flight_turn`] for `user`.
async fn flight_turn_as(rig: &Rig, user: &str) -> Turn {
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    let token = rig.token(user);
    let turn = rig
        .chat(
            Some(&token),
            json!({"message": "Business FRA to JFK, please."}),
        )
        .await;
    assert_eq!(turn.status, 200, "{}", turn.json);
    assert_eq!(turn.names().last(), Some(&"done"), "{:?}", turn.names());
    turn
}

/// A carrier name carrying a key: the field is cut in every event, the client sees the
/// marker instead.
#[tokio::test]
async fn a_secret_in_an_upstream_field_reaches_no_event() {
    let rig = Rig::start().await;
    plant_carriers(&rig, &format!("Lufthansa {KEY}")).await;
    let turn = flight_turn(&rig).await;
    let all = everything(&turn);
    assert!(!all.contains("sk-proj-"), "{all}");
    assert!(
        all.contains(agent::guard::payload::CUT_MARKER),
        "the cut field is marked: {all}"
    );
}

/// A carrier name carrying a Markdown image to another host: the link is removed from the
/// tool result, the answer, the `final` event's result and its session state (the offered
/// flights).
#[tokio::test]
async fn an_off_list_link_in_an_upstream_field_reaches_no_event() {
    let rig = Rig::start().await;
    plant_carriers(
        &rig,
        "Lufthansa ![pixel](https://evil.example/p.png?chat=1) \u{0}\u{1b}[2J",
    )
    .await;
    let turn = flight_turn(&rig).await;
    let all = everything(&turn);
    assert!(!all.contains("evil.example"), "{all}");
    assert!(
        !all.contains("\\u0000") && !all.contains("\\u001b"),
        "{all}"
    );
    let fin = turn.first("final");
    assert!(fin.is_object(), "a final event: {:?}", turn.names());
    assert!(fin["session_state"].is_object(), "{fin}");
}

/// The model's own argument (a knowledge-base query carrying a key) is guarded where the
/// client sees it: the `tool_result` metadata.
#[tokio::test]
async fn a_secret_in_the_models_tool_arguments_reaches_no_event() {
    let rig = Rig::start().await;
    rig.llm.push(Reply::tool_calls(vec![(
        "search_knowledge_base",
        json!({ "query": format!("lounge access {KEY}") }),
    )]));
    rig.llm.push(Reply::text("Lounges depend on your status."));
    let token = rig.token(&test_support::unique("asker"));
    let turn = rig
        .chat(Some(&token), json!({"message": "Which lounges can I use?"}))
        .await;
    assert_eq!(turn.status, 200, "{}", turn.json);
    let results: Vec<&Value> = turn.all("tool_result");
    assert!(!results.is_empty(), "{:?}", turn.names());
    let all = everything(&turn);
    assert!(!all.contains("sk-proj-"), "{all}");
}

/// What the audit routes return of stored calls passes the same checks: the request the
/// model made (a knowledge-base query carrying a key) and a refused call's arguments.
#[tokio::test]
async fn the_audit_routes_return_no_secret_from_stored_calls() {
    let rig = Rig::start().await;
    rig.llm.push(Reply::tool_calls(vec![
        (
            "search_knowledge_base",
            json!({ "query": format!("lounge access {KEY}") }),
        ),
        (
            "search_flights",
            json!({ "origin": format!("x {KEY}"), "destination": "JFK" }),
        ),
    ]));
    rig.llm.push(Reply::text("Lounges depend on your status."));
    rig.llm.push(Reply::text("Lounges depend on your status."));
    let token = rig.token(&test_support::unique("auditor"));
    let turn = rig
        .chat(Some(&token), json!({"message": "Which lounges can I use?"}))
        .await;
    assert_eq!(turn.status, 200, "{}", turn.json);
    let chat_id = turn.chat_id();
    let (status, calls) = rig
        .get(&token, &format!("/chats/{chat_id}/tool-calls"))
        .await;
    assert_eq!(status, 200, "{calls}");
    let items = calls["items"].as_array().cloned().unwrap_or_default();
    assert!(!items.is_empty(), "{calls}");
    let (status, refused) = rig
        .get(&token, &format!("/chats/{chat_id}/refused-calls"))
        .await;
    assert_eq!(status, 200, "{refused}");
    let mut all = format!("{calls}{refused}");
    for item in &items {
        let id = item["id"]
            .as_str()
            .or(item["job_id"].as_str())
            .unwrap_or_default();
        let (status, record) = rig
            .get(&token, &format!("/chats/{chat_id}/tool-calls/{id}"))
            .await;
        assert_eq!(status, 200, "{record}");
        all.push_str(&record.to_string());
    }
    assert!(!all.contains("sk-proj-"), "{all}");
    assert!(all.contains(agent::guard::payload::CUT_MARKER), "{all}");
}

/// The chat's history, read back later, passes the same checks: a carrier name carrying a
/// key and an image to another host comes back from `GET …/messages` in no message, UI
/// element or session state.
#[tokio::test]
async fn the_history_returns_no_planted_text() {
    let rig = Rig::start().await;
    plant_carriers(
        &rig,
        &format!(
            "Lufthansa {KEY} ![pixel](https://evil.example/p.png?chat=1) <https://evil.example/a>"
        ),
    )
    .await;
    let user = test_support::unique("historian");
    let token = rig.token(&user);
    let turn = flight_turn_as(&rig, &user).await;
    let chat_id = turn.chat_id();
    let (status, page) = rig.get(&token, &format!("/chats/{chat_id}/messages")).await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().cloned().unwrap_or_default();
    assert!(items.len() >= 2, "the question and the answer: {page}");
    let all = page.to_string();
    assert!(!all.contains("sk-proj-"), "{all}");
    assert!(!all.contains("evil.example"), "{all}");
}

/// What the ledger keeps of a call passes the same checks: a carrier name carrying a key
/// is stored as the marker, and the call is flagged, so the audit keeps that something was
/// cut, not what.
#[tokio::test]
async fn the_ledger_keeps_the_flag_not_the_cut_text() {
    let rig = Rig::start().await;
    plant_carriers(&rig, &format!("Lufthansa {KEY}")).await;
    let user = test_support::unique("ledgered");
    let turn = flight_turn_as(&rig, &user).await;
    let page = rig
        .deps
        .ledger
        .list(&user, &turn.chat_id(), 20, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let stored = serde_json::to_string(&page.items).unwrap_or_default();
    assert!(!page.items.is_empty(), "{stored}");
    assert!(!stored.contains("sk-proj-"), "{stored}");
    assert!(
        stored.contains(agent::guard::payload::CUT_MARKER),
        "{stored}"
    );
    assert!(
        page.items
            .iter()
            .any(|r| r.flags.iter().any(|f| f == "output_guard_cut")),
        "{stored}"
    );
}
