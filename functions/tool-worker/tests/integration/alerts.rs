//! The scheduled fare-alert check end to end: alerts kept in DynamoDB Local, the schedule's
//! event handed to the worker as Lambda would, the real seatsaero-search and cash-search
//! handlers (called signed, as deployed) in front of wiremock fakes of their upstreams.
//! The upstream payloads are the recorded fixtures, moved to the alert's dates. Each test
//! has its own table, so the schedule holds only its alerts.

use crate::common;

use std::sync::Arc;

use crate::common::Rig;
use agent::profiles::AgentCatalog;
use agent::runtime::ToolClients;
use serde_json::{Value, json};
use shared::alerts::DynamoAlertStore;
use shared::clock::ManualClock;
use shared::domain::alert::CreateFareAlertArgs;
use time::{Date, Duration};
use wiremock::matchers::{method, path, path_regex, query_param};
use wiremock::{Mock, ResponseTemplate};

/// The first day of the tests' alerts, and the day the fake's award flight departs.
fn first_day() -> Date {
    test_support::clock::date_in(60)
}

fn departs() -> Date {
    first_day() + Duration::days(2)
}

fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(format!(
        "{}/../../tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Seats.aero answers with one availability and one trip (the fixtures' first), on the
/// alert's dates: one award flight.
async fn one_award_flight(rig: &Rig) {
    let mut search = fixture("seatsaero/cached_search_response.docs-example.json");
    let mut row = search["data"][0].clone();
    row["Date"] = json!(departs().to_string());
    row["Route"]["OriginAirport"] = json!("FRA");
    search["data"] = json!([row]);
    search["count"] = json!(1);
    search["hasMore"] = json!(false);
    let mut trips = fixture("seatsaero/get_trips_response.docs-example.json");
    trips["data"] = json!([trips["data"][0].clone()]);
    let trips = trips
        .to_string()
        .replace("2024-05-01", &departs().to_string())
        .replace("2024-05-02", &(departs() + Duration::days(1)).to_string());
    let server = &rig.functions.seats_upstream;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(search))
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/trips/[^/]+$"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(trips, "application/json"))
        .with_priority(1)
        .mount(server)
        .await;
}

fn args(max_miles: u64, max_usd: f64) -> CreateFareAlertArgs {
    serde_json::from_value(json!({
        "origin": "FRA", "destination": "JFK",
        "date_from": first_day().to_string(),
        "date_to": (first_day() + Duration::days(6)).to_string(),
        "cabin": "BUSINESS", "max_miles": max_miles,
        "max_price": {"amount": max_usd, "currency": "USD"}
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The worker over a table of its own, its alert store and check on a clock the test moves.
async fn worker(rig: &Rig) -> (tool_worker::Deps, Arc<ManualClock>) {
    let dynamodb = test_support::dynamodb().await;
    let table = test_support::create_pk_sk_table(&dynamodb, "worker-alerts").await;
    let mut tools = rig.deps.config.tools.clone();
    tools.storage.chats_table = table.clone();
    let config = tool_worker::Config {
        tools,
        dead_letter_queue_url: "http://127.0.0.1:9/unused-dlq".into(),
        function_timeout: std::time::Duration::from_secs(30),
        max_receive_count: tool_worker::DEFAULT_MAX_RECEIVE_COUNT,
        alert_check_interval: std::time::Duration::from_secs(3600),
    };
    let clients = ToolClients {
        dynamodb: dynamodb.clone(),
        sqs: test_support::sqs().await,
        secrets: common::secrets().await,
        http: common::http(),
        llm: std::sync::Arc::new(llm::Clients::new()),
        // Signed as deployed: the flight functions admit only IAM-authorised calls.
        signer: agent::tools::SigV4Signer::from_sdk_config(&test_support::sdk_config().await),
        metrics: shared::metrics::Metrics::discard(),
    };
    let agents = AgentCatalog::built_in().unwrap_or_else(|e| panic!("agents: {e}"));
    let mut deps =
        tool_worker::Deps::new(config, &agents, clients).unwrap_or_else(|e| panic!("deps: {e}"));
    // The tests' "now" (`TEST_CLOCK_OFFSET_DAYS` moves it), for the store and the check.
    let clock = Arc::new(ManualClock::new(test_support::clock::now()));
    deps.alerts = Arc::new(DynamoAlertStore::new(dynamodb, table).with_clock(clock.clone()));
    deps.clock = clock.clone();
    (deps, clock)
}

/// The event an EventBridge schedule sends.
fn scheduled_event() -> Value {
    json!({
        "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": "2027-01-01T00:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/AlertSchedule"],
        "detail": {}
    })
}

async fn scheduled_run(deps: &tool_worker::Deps) -> Value {
    tool_worker::event::handle_event(deps, scheduled_event())
        .await
        .unwrap_or_else(|e| panic!("scheduled run: {e}"))
}

#[tokio::test]
async fn a_flight_under_the_limit_is_recorded_once() {
    let rig = Rig::start().await;
    one_award_flight(&rig).await;
    let (worker, clock) = worker(&rig).await;
    let owner = test_support::unique("user");
    // The fixture's cash fare is 3,842.10 USD: over this limit.
    let alert = worker
        .alerts
        .create(&owner, &args(100_000, 500.0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let run = scheduled_run(&worker).await;
    assert_eq!(run["due"], json!(1), "{run}");
    assert_eq!(run["checked"], json!(1), "{run}");
    assert_eq!(run["new_matches"], json!(1), "{run}");
    let listed = worker
        .alerts
        .list(&owner)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 1);
    let found = &listed[0].matches;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].flight.date, departs());
    assert!(found[0].flight.miles.is_some_and(|m| m <= 100_000));
    assert!(listed[0].last_checked_at.is_some());
    assert!(
        rig.functions
            .amadeus_upstream
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .any(|r| r.url.path() == "/v2/shopping/flight-offers"),
        "the cash fares were searched too"
    );

    // Not due again until its next check.
    let run = scheduled_run(&worker).await;
    assert_eq!(run["due"], json!(0), "{run}");
    clock.advance(Duration::hours(2));
    let run = scheduled_run(&worker).await;
    assert_eq!(run["checked"], json!(1), "{run}");
    assert_eq!(
        run["new_matches"],
        json!(0),
        "the same flight again writes nothing: {run}"
    );
    let listed = worker
        .alerts
        .list(&owner)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed[0].matches.len(), 1);
    assert_eq!(listed[0].id, alert.id);
}

#[tokio::test]
async fn nothing_within_the_limits_is_no_match() {
    let rig = Rig::start().await;
    one_award_flight(&rig).await;
    let (worker, _) = worker(&rig).await;
    let owner = test_support::unique("user");
    worker
        .alerts
        .create(&owner, &args(1_000, 10.0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let run = scheduled_run(&worker).await;
    assert_eq!(run["checked"], json!(1), "{run}");
    assert_eq!(run["new_matches"], json!(0), "{run}");
    let listed = worker
        .alerts
        .list(&owner)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(listed[0].matches.is_empty());
    assert!(listed[0].last_checked_at.is_some(), "checked all the same");
}

#[tokio::test]
async fn one_failing_alert_does_not_stop_the_others() {
    let rig = Rig::start().await;
    // Both upstreams refuse every search from MUC (mounted first: of two mocks with the
    // same priority, the first wins).
    let refuse = || ResponseTemplate::new(400).set_body_json(json!({"errors": [{"title": "no"}]}));
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("origin_airport", "MUC"))
        .respond_with(refuse())
        .with_priority(1)
        .mount(&rig.functions.seats_upstream)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/shopping/flight-offers"))
        .and(query_param("originLocationCode", "MUC"))
        .respond_with(refuse())
        .with_priority(1)
        .mount(&rig.functions.amadeus_upstream)
        .await;
    one_award_flight(&rig).await;
    let (worker, clock) = worker(&rig).await;
    let owner = test_support::unique("user");
    let mut from_munich = args(100_000, 10.0);
    from_munich.origin =
        shared::domain::flight::IataCode::parse("MUC").unwrap_or_else(|e| panic!("{e}"));
    let failing = worker
        .alerts
        .create(&owner, &from_munich)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let good = worker
        .alerts
        .create(&owner, &args(100_000, 10.0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let run = scheduled_run(&worker).await;
    assert_eq!(run["due"], json!(2), "{run}");
    assert_eq!(run["failed"], json!(1), "{run}");
    assert_eq!(run["checked"], json!(1), "{run}");
    assert_eq!(run["new_matches"], json!(1), "{run}");
    let listed = worker
        .alerts
        .list(&owner)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let of = |id: &str| listed.iter().find(|a| a.id == id).cloned();
    assert_eq!(of(&good.id).map(|a| a.matches.len()), Some(1));
    assert_eq!(of(&failing.id).map(|a| a.matches.len()), Some(0));
    // The failed alert moved on too: it does not take a place in every run.
    assert_eq!(scheduled_run(&worker).await["due"], json!(0));
    clock.advance(Duration::hours(2));
    assert_eq!(scheduled_run(&worker).await["due"], json!(2));
}
