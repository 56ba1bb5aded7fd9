//! The fare-alert store against DynamoDB Local: create, list and delete per owner, the
//! per-user cap, the schedule, and matches recorded once however often or concurrently a
//! check runs. Each test has its own table, so the schedule holds only its alerts.

use crate::common;

use std::sync::Arc;

use serde_json::json;
use shared::Error;
use shared::alerts::{AlertStore, DynamoAlertStore, MAX_ALERTS_PER_USER};
use shared::clock::ManualClock;
use shared::domain::alert::{AlertMatch, CreateFareAlertArgs};
use shared::domain::flight::{FlightEndpoint, FlightLeg, FlightResult, Provider, Taxes};
use time::{Duration, OffsetDateTime};

async fn store() -> (DynamoAlertStore, Arc<ManualClock>) {
    let client = common::dynamodb().await;
    let table = test_support::create_pk_sk_table(&client, "alerts").await;
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = DynamoAlertStore::new(client, table).with_clock(clock.clone());
    (store, clock)
}

fn args() -> CreateFareAlertArgs {
    let from = test_support::clock::date_in(60);
    serde_json::from_value(json!({
        "origin": "FRA", "destination": "JFK",
        "date_from": from.to_string(), "date_to": (from + Duration::days(14)).to_string(),
        "cabin": "BUSINESS", "max_miles": 80000
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// An award flight on the alert's first day for `miles`, as a match.
fn found(args: &CreateFareAlertArgs, miles: u64) -> AlertMatch {
    let time = format!("{}T10:00", args.date_from);
    let endpoint = |airport: &str| FlightEndpoint {
        airport: airport.into(),
        time: time.clone(),
    };
    let flight = FlightResult {
        id: "f".into(),
        provider: Provider::Seatsaero,
        price: format!("{miles} miles"),
        price_per_person: String::new(),
        airline: "LH".into(),
        cabin: "Business".into(),
        tags: Vec::new(),
        total_stops: 0,
        miles: Some(miles),
        taxes: Taxes::default(),
        seats_left: Some(2),
        booking_links: None,
        outbound: FlightLeg {
            departure: endpoint("FRA"),
            arrival: endpoint("JFK"),
            duration: "8h".into(),
            stops: "Nonstop".into(),
            flight_numbers: "LH400".into(),
        },
        inbound: None,
        program: None,
        seen_at: None,
        other_programs: Vec::new(),
        option: None,
    };
    AlertMatch::of(&flight, args.date_from, "2027-01-01T00:00:00Z")
}

#[tokio::test]
async fn create_list_delete_stay_the_owners_own() {
    let (store, _) = store().await;
    let (owner, stranger) = (common::unique("user"), common::unique("user"));
    let alert = store
        .create(&owner, &args())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(alert.next_check_at.is_some(), "due at once");

    let listed = store.list(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, alert.id);
    assert_eq!(listed[0].max_miles, Some(80000));
    assert!(
        store
            .list(&stranger)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );

    assert!(matches!(
        store.delete(&stranger, &alert.id).await,
        Err(Error::NotFound)
    ));
    assert_eq!(
        store.list(&owner).await.unwrap_or_default().len(),
        1,
        "still there"
    );
    store
        .delete(&owner, &alert.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        store
            .list(&owner)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );
    assert!(matches!(
        store.delete(&owner, &alert.id).await,
        Err(Error::NotFound)
    ));
    assert!(
        store
            .due(10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "a deleted alert is no longer scheduled"
    );
}

#[tokio::test]
async fn a_user_keeps_at_most_the_cap_and_a_delete_makes_room() {
    let (store, _) = store().await;
    let owner = common::unique("user");
    let mut ids = Vec::new();
    for _ in 0..MAX_ALERTS_PER_USER {
        ids.push(
            store
                .create(&owner, &args())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .id,
        );
    }
    let refused = store.create(&owner, &args()).await;
    assert!(
        matches!(&refused, Err(Error::Invalid(m)) if m.contains("at most 20")),
        "{refused:?}"
    );
    assert_eq!(
        store.list(&owner).await.unwrap_or_default().len(),
        MAX_ALERTS_PER_USER as usize
    );
    // Another user is not affected by this one's count.
    store
        .create(&common::unique("user"), &args())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .delete(&owner, &ids[0])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .create(&owner, &args())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn matches_are_recorded_once_and_the_check_moves_on() {
    let (store, clock) = store().await;
    let owner = common::unique("user");
    let args = args();
    let alert = store
        .create(&owner, &args)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let due = store.due(10).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].alert.id, alert.id);
    assert_eq!(due[0].owner, owner);

    let found = [
        found(&args, 70_000),
        found(&args, 70_000),
        found(&args, 60_000),
    ];
    let next = clock.now_plus(Duration::hours(1));
    let written = store
        .record_matches(&due[0], &found, Some(next))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(written, 2, "two distinct keys");
    assert!(
        store.due(10).await.unwrap_or_default().is_empty(),
        "moved on by an hour"
    );

    // The same results again, from a check that read the alert before the move: nothing new.
    let again = store
        .record_matches(&due[0], &found, Some(next))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, 0);

    clock.advance(Duration::hours(2));
    let due = store.due(10).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.len(), 1, "due again an hour later");
    let written = store
        .record_matches(&due[0], &found, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        written, 0,
        "a second run with the same results writes nothing new"
    );
    clock.advance(Duration::days(400));
    assert!(
        store.due(10).await.unwrap_or_default().is_empty(),
        "no more checks"
    );

    let listed = store.list(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed[0].matches.len(), 2);
    assert!(listed[0].last_checked_at.is_some());
    assert_eq!(listed[0].next_check_at, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_checks_never_duplicate_a_match() {
    let (store, clock) = store().await;
    let owner = common::unique("user");
    let args = args();
    store
        .create(&owner, &args)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let due = store.due(10).await.unwrap_or_else(|e| panic!("{e}"));
    let found: Vec<AlertMatch> = (0..5).map(|i| found(&args, 50_000 + i * 1000)).collect();
    let next = clock.now_plus(Duration::hours(1));
    let runs = futures::future::join_all((0..6).map(|_| {
        let (store, due, found) = (store.clone(), due[0].clone(), found.clone());
        tokio::spawn(async move { store.record_matches(&due, &found, Some(next)).await })
    }))
    .await;
    let total: usize = runs
        .into_iter()
        .map(|r| match r {
            Ok(Ok(n)) => n,
            other => panic!("{other:?}"),
        })
        .sum();
    assert_eq!(total, 5, "each match written by exactly one run");
    let listed = store.list(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed[0].matches.len(), 5);
    clock.advance(Duration::hours(2));
    assert_eq!(
        store.due(10).await.unwrap_or_default().len(),
        1,
        "one schedule entry, not one per run"
    );
}

trait Later {
    fn now_plus(&self, by: Duration) -> OffsetDateTime;
}

impl Later for ManualClock {
    fn now_plus(&self, by: Duration) -> OffsetDateTime {
        shared::clock::Clock::now(self) + by
    }
}
