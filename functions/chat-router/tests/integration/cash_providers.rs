//! The cash search's provider is the deployment's choice: through the router, a cash-search
//! with `CASH_PROVIDER=duffel` prices fares with (the fake) Duffel and the default rig's with
//! (the fake) Amadeus; passenger counts reach Duffel and the prices; a one-way request gets
//! no round trips, a return date only round trips.

use crate::common;

use crate::common::{DuffelCash, Rig};
use serde_json::{Value, json};
use shared::domain::tool_output::FlightSearchOutput;
use test_support::fake_llm::Reply;

async fn duffel_rig(duffel: &DuffelCash) -> Rig {
    let base = duffel.function.url("");
    Rig::with(
        move |vars| common::route_function(vars, "cash-search", &base),
        None,
    )
    .await
}

/// A new user's chat turn in which the model searches flights with `args`, and the
/// search's whole list as the model read it (the user's answer leaves the rows to the
/// tables).
async fn search(rig: &Rig, user: &str, args: Value, message: &str) -> (common::Turn, String) {
    let user = test_support::unique(user);
    let token = rig.token(&user);
    rig.llm.push(Reply::tool_call("search_flights", args));
    let turn = rig.chat(Some(&token), json!({"message": message})).await;
    let list = rig.tool_message(&user, &turn).await;
    (turn, list)
}

fn cash_flights(turn: &common::Turn) -> Vec<Value> {
    let data = &turn.first("tool_result")["result"];
    test_support::assert_fits_schema::<FlightSearchOutput>(data);
    data["cashResult"]["results"]["flights"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn amadeus_searches(rig: &Rig) -> usize {
    rig.functions
        .amadeus_upstream
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/v2/shopping/flight-offers")
        .count()
}

#[tokio::test]
async fn the_provider_is_chosen_by_the_cash_functions_setting() {
    let duffel = DuffelCash::start().await;
    let rig = duffel_rig(&duffel).await;
    let (turn, list) = search(
        &rig,
        "duffel",
        common::flight_args(),
        "FRA to JFK in business",
    )
    .await;
    let flights = cash_flights(&turn);
    assert!(!flights.is_empty(), "{}", turn.first("tool_result"));
    assert!(flights.iter().all(|f| f["provider"] == json!("duffel")));
    assert_eq!(duffel.offer_requests().await.len(), 1);
    assert_eq!(amadeus_searches(&rig).await, 0, "Amadeus is not asked");
    // Each offer once, its fare's terms said.
    assert!(turn.text().contains("Cheapest fare: #"), "{}", turn.text());
    let text = list;
    assert!(text.contains("one-way"), "{text}");
    assert!(text.contains("fare: "), "{text}");

    // The default rig's cash-search has no provider set: Amadeus.
    let rig = Rig::start().await;
    let (turn, _) = search(
        &rig,
        "amadeus",
        common::flight_args(),
        "FRA to JFK in business",
    )
    .await;
    assert!(
        cash_flights(&turn)
            .iter()
            .all(|f| f["provider"] == json!("amadeus"))
    );
    assert_eq!(amadeus_searches(&rig).await, 1);
}

#[tokio::test]
async fn travellers_reach_duffel_and_the_prices_and_trips_match_the_request() {
    let duffel = DuffelCash::start().await;
    let rig = duffel_rig(&duffel).await;
    let mut args = common::flight_args();
    args["pax"] = json!(2);
    args["children"] = json!(1);
    let (turn, list) = search(&rig, "family", args.clone(), "two adults and a child").await;
    let asked = duffel.offer_requests().await;
    let passengers: Vec<&str> = asked[0]["data"]["passengers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["type"].as_str())
        .collect();
    assert_eq!(passengers, ["adult", "adult", "child"]);
    assert_eq!(asked[0]["data"]["slices"].as_array().map(Vec::len), Some(1));
    let flights = cash_flights(&turn);
    assert!(!flights.is_empty());
    assert!(
        flights.iter().all(|f| f.get("inbound").is_none()),
        "one-way only"
    );
    assert!(flights.iter().all(|f| f["price"] != f["pricePerPerson"]));
    let text = list;
    assert!(text.contains(" for 3 ("), "{text}");
    assert!(text.contains("per person), one-way"), "{text}");

    // With a return date: two slices asked, only round trips shown.
    args["return_date"] = json!(test_support::clock::date_in(97).to_string());
    let (turn, list) = search(&rig, "return", args, "and back a week later").await;
    let asked = duffel.offer_requests().await;
    assert_eq!(asked[1]["data"]["slices"].as_array().map(Vec::len), Some(2));
    let flights = cash_flights(&turn);
    assert!(!flights.is_empty());
    assert!(
        flights.iter().all(|f| f.get("inbound").is_some()),
        "round trips only"
    );
    assert!(list.contains("round trip"), "{list}");
}

/// Duffel's failures through the router: a refused token, a rejected search and a garbage
/// body leave the award results and say the list may be incomplete, without Duffel's text;
/// a 429 with `ratelimit-reset` and a 503 are retried and the fares arrive.
#[tokio::test]
async fn duffel_failures_leave_the_award_results_and_retries_recover() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};

    let refused = ResponseTemplate::new(401).set_body_json(json!({"errors": [{
        "type": "authentication_error", "code": "unauthorized",
        "message": "secret-duffel-detail: the token is not valid"}]}));
    let rejected = ResponseTemplate::new(422).set_body_json(json!({"errors": [{
        "type": "validation_error", "code": "invalid",
        "message": "secret-duffel-detail: departure_date is too far ahead"}]}));
    let garbage = ResponseTemplate::new(200).set_body_string("secret-duffel-detail <html>");
    for (name, reply) in [("401", refused), ("422", rejected), ("garbage", garbage)] {
        let duffel = DuffelCash::start().await;
        Mock::given(method("POST"))
            .and(path("/air/offer_requests"))
            .respond_with(reply)
            .with_priority(1)
            .mount(&duffel.upstream)
            .await;
        let rig = duffel_rig(&duffel).await;
        let (turn, list) = search(
            &rig,
            "failing",
            common::flight_args(),
            "FRA to JFK in business",
        )
        .await;
        let result = turn.first("tool_result");
        assert_eq!(result["status"], json!("succeeded"), "{name}: {result}");
        assert_eq!(
            result["metadata"]["failed_providers"],
            json!(["cash"]),
            "{name}"
        );
        let text = turn.text();
        assert!(text.contains(" award flight"), "{name}: {text}");
        assert!(text.contains("may be incomplete"), "{name}: {text}");
        assert!(!text.contains("secret-duffel-detail"), "{name}: {text}");
        assert!(list.contains("Award flights"), "{name}: {list}");
        assert!(!list.contains("secret-duffel-detail"), "{name}");
    }

    // Busy, then down, then fine: the function retries within its deadline.
    let duffel = DuffelCash::start().await;
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .respond_with(ResponseTemplate::new(429).insert_header("ratelimit-reset", "1"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&duffel.upstream)
        .await;
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&duffel.upstream)
        .await;
    let rig = duffel_rig(&duffel).await;
    let (turn, _) = search(
        &rig,
        "retried",
        common::flight_args(),
        "FRA to JFK in business",
    )
    .await;
    assert!(
        !cash_flights(&turn).is_empty(),
        "{}",
        turn.first("tool_result")
    );
    assert_eq!(
        duffel.offer_requests().await.len(),
        3,
        "429, 503, then the fares"
    );
}
