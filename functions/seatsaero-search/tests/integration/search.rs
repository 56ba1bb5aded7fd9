//! Award searches against a fake Seats.aero fed from the fixture payloads.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::{Fake, availability, ids, plain_trip, query, search_body, with};
use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex, query_param};
use wiremock::{Mock, ResponseTemplate};

/// The five cheapest business entries of the search fixture between 2023-08-11 and -17.
const FIXTURE_CHEAPEST: [&str; 5] = [
    "2QSaUXJ0ZuSVqgrRWqkSlXhnVbS", // 33000, american
    "2QUVw0M2e962qx9I8rfbnH8z6Z5", // 33000
    "2QgapL6B4qpZHgSAuqeveeYNbVP", // 33000
    "2QeWX0XhrAW1OZLCXauiczxSsaS", // 33500
    "2RGrYUdNJENKnXY42PQlJQ7e32H", // 35000
];

#[tokio::test]
async fn happy_path_from_the_fixtures() {
    let fake = Fake::start().await.with_fixtures().await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], json!(true));
    assert_eq!(body["results"]["count"], json!(5));
    assert_eq!(ids(&body), FIXTURE_CHEAPEST);
    assert_eq!(
        body["stats"],
        json!({"totalAvailable": 42, "hasMore": false, "startDate": "2023-08-11",
               "endDate": "2023-08-17", "cabin": "Business"})
    );

    // The trips fixture's cheapest business trip: TK184 CUN→IST non-stop, 70,000 miles,
    // TotalTaxes 4174 (minor units) → 41.74, empty currency read as USD.
    let first = &body["results"]["flights"][0];
    assert_eq!(first["provider"], json!("seatsaero"));
    assert_eq!(first["miles"], json!(70000));
    assert_eq!(first["taxes"], json!({"amount": 41.74, "currency": "USD"}));
    assert_eq!(first["airline"], json!("TK"));
    assert_eq!(first["cabin"], json!("Business"));
    assert_eq!(first["seatsLeft"], json!(4));
    assert_eq!(first["totalStops"], json!(0));
    assert_eq!(first["tags"], json!(["direct"]));
    assert_eq!(first["program"], json!("Avianca LifeMiles"));
    // The trip's UpdatedAt: when Seats.aero last saw the seat.
    assert!(
        first["seenAt"]
            .as_str()
            .is_some_and(|t| t.starts_with("20")),
        "{first}"
    );
    assert_eq!(first["price"], json!("70,000 miles + $41.74"));
    assert_eq!(first["pricePerPerson"], json!("70,000 miles + $41.74"));
    assert_eq!(
        first["outbound"],
        json!({
            "departure": {"airport": "CUN", "time": "2024-05-01T14:00"},
            "arrival": {"airport": "IST", "time": "2024-05-02T10:10"},
            "duration": "12h 10m",
            "stops": "Nonstop",
            "flightNumbers": "TK184"
        })
    );
    // Its own programme's page only, not the fixture's three partner links.
    assert_eq!(
        first["bookingLinks"],
        json!({"Book with Avianca LifeMiles": "https://www.lifemiles.com/fly/find"})
    );
    assert!(first.get("inbound").is_none());

    // German texts; the total covers adults + children.
    let (status, body) = fake
        .call(&with(
            search_body(),
            json!({"locale": "de", "adults": 2, "children": 1}),
        ))
        .await;
    assert_eq!(status, 200, "{body}");
    let first = &body["results"]["flights"][0];
    assert_eq!(first["pricePerPerson"], json!("70.000 Meilen + 41,74 $"));
    assert_eq!(first["price"], json!("210.000 Meilen + 125,22 $"));
    assert_eq!(first["miles"], json!(70000));
}

#[tokio::test]
async fn flexibility_window_and_query_sent_upstream() {
    let fake = Fake::start().await.with_fixtures().await;
    let cases = [
        (json!({"flexibility": 3}), "2023-08-11", "2023-08-17"),
        (json!({"flexibility": 0}), "2023-08-14", "2023-08-14"),
        (json!({"flexibility": null}), "2023-08-14", "2023-08-14"),
        // Clamped to 3 days, even beyond what fits a u8.
        (json!({"flexibility": 9}), "2023-08-11", "2023-08-17"),
        (json!({"flexibility": 1000}), "2023-08-11", "2023-08-17"),
        (json!({"flexibility": -2}), "2023-08-14", "2023-08-14"),
    ];
    for (extra, start, end) in cases {
        fake.server.reset().await;
        fake.mount_fixtures().await;
        let body = with(search_body(), extra.clone());
        let (status, reply) = fake.call(&body).await;
        assert_eq!(status, 200, "{extra}: {reply}");
        let searches = fake.requests_to("/search").await;
        assert_eq!(searches.len(), 1, "{extra}");
        assert_eq!(
            query(&searches[0], "start_date").as_deref(),
            Some(start),
            "{extra}"
        );
        assert_eq!(
            query(&searches[0], "end_date").as_deref(),
            Some(end),
            "{extra}"
        );
        assert_eq!(reply["stats"]["startDate"], json!(start));
        assert_eq!(reply["stats"]["endDate"], json!(end));
    }

    fake.server.reset().await;
    fake.mount_fixtures().await;
    let body = with(
        search_body(),
        json!({"origin": "sfo", "destination": "jfk", "travelClass": "premium economy", "nonStop": true}),
    );
    let (status, _) = fake.call(&body).await;
    assert_eq!(status, 200);
    let searches = fake.requests_to("/search").await;
    let q = |name| query(&searches[0], name);
    assert_eq!(q("origin_airport").as_deref(), Some("SFO"));
    assert_eq!(q("destination_airport").as_deref(), Some("JFK"));
    assert_eq!(q("cabin").as_deref(), Some("premium"));
    assert_eq!(q("take").as_deref(), Some("100"));
    assert_eq!(q("include_trips").as_deref(), Some("false"));
    assert_eq!(q("only_direct_flights").as_deref(), Some("true"));
}

#[tokio::test]
async fn trip_lookups_overlap_and_keep_the_miles_order() {
    const DELAY: Duration = Duration::from_millis(300);
    let fake = Fake::start().await;
    fake.search_replies(test_support::fixture_json(common::SEARCH_FIXTURE))
        .await;
    // The cheapest entry answers last: the order must still follow the miles.
    for (i, id) in FIXTURE_CHEAPEST.iter().enumerate() {
        let delay = if i == 0 {
            DELAY + Duration::from_millis(100)
        } else {
            DELAY
        };
        Mock::given(method("GET"))
            .and(path(format!("/trips/{id}")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(test_support::fixture_json(common::TRIPS_FIXTURE))
                    .set_delay(delay),
            )
            .mount(&fake.server)
            .await;
    }
    fake.warm_secret().await;

    let started = Instant::now();
    let (status, body) = fake.call(&search_body()).await;
    let elapsed = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), FIXTURE_CHEAPEST);
    assert!(elapsed >= DELAY, "{elapsed:?}");
    // One after another would take 5 × 300 ms.
    assert!(
        elapsed < Duration::from_millis(1100),
        "lookups did not overlap: {elapsed:?}"
    );
}

#[tokio::test]
async fn trip_lookups_are_bounded_by_the_configured_concurrency() {
    const DELAY: Duration = Duration::from_millis(300);
    let fake = Fake::with_config(|c| c.trip_concurrency = 2).await;
    fake.search_replies(test_support::fixture_json(common::SEARCH_FIXTURE))
        .await;
    fake.trips_reply(test_support::fixture_json(common::TRIPS_FIXTURE), DELAY)
        .await;
    fake.warm_secret().await;

    let started = Instant::now();
    let (status, body) = fake.call(&search_body()).await;
    let elapsed = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(5));
    // Five lookups two at a time need three rounds.
    assert!(
        elapsed >= DELAY * 3,
        "more than 2 lookups at once: {elapsed:?}"
    );
}

#[tokio::test]
async fn filters_and_sorts_mixed_availability() {
    let fake = Fake::start().await;
    let mut cheapest = availability("cheapest", json!("true"), json!("25000"), json!(null));
    cheapest["Aircraft"] = json!(["77W"]);
    cheapest["FareClasses"] = json!({"J": "I"});
    fake.search_replies(json!({
        "data": [
            availability("expensive", json!(true), json!("90000"), json!(9)),
            availability("unavailable", json!(false), json!("10000"), json!(0)),
            availability("null-cost", json!(true), json!(null), json!(9)),
            availability("zero-cost", json!(true), json!("0"), json!(9)),
            availability("empty-cost", json!(true), json!(""), json!(9)),
            availability("garbage-cost", json!(true), json!("n/a"), json!(9)),
            availability("seats-only", json!(false), json!(50000), json!(3)),
            availability("mid", json!(true), json!("40000"), json!("0")),
            cheapest,
            {"ID": null, "JAvailable": true, "JMileageCost": "1000"},
            42,
            {"ID": "economy-only", "YAvailable": true, "YMileageCost": "5000"},
            availability("second-mid", json!(true), json!(40000.0), json!(2)),
        ],
        "hasMore": true,
        "cursor": 1
    }))
    .await;
    fake.trips_reply(plain_trip(), Duration::ZERO).await;

    let (status, body) = fake
        .call(&with(search_body(), json!({"maxResults": 4})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), ["cheapest", "mid", "second-mid", "seats-only"]);
    let miles: Vec<&Value> = body["results"]["flights"]
        .as_array()
        .map(|f| f.iter().map(|f| &f["miles"]).collect())
        .unwrap_or_default();
    assert_eq!(
        miles,
        [&json!(25000), &json!(40000), &json!(40000), &json!(50000)]
    );
    // No `count` in the reply: the entries are counted; `hasMore` is passed on.
    assert_eq!(body["stats"]["totalAvailable"], json!(13));
    assert_eq!(body["stats"]["hasMore"], json!(true));

    let first = &body["results"]["flights"][0];
    assert_eq!(first["taxes"], json!({"amount": 5.6, "currency": "USD"}));
    assert_eq!(first["price"], json!("25,000 miles + $5.60"));
    assert_eq!(first["seatsLeft"], json!(null));
    assert_eq!(first["outbound"]["duration"], json!("5h 35m"));
    assert_eq!(body["results"]["flights"][3]["seatsLeft"], json!(3));

    // Only the kept entries were looked up.
    let mut looked_up: Vec<String> = fake
        .requests_to("/trips/")
        .await
        .iter()
        .map(|r| r.url.path().trim_start_matches("/trips/").to_owned())
        .collect();
    looked_up.sort();
    assert_eq!(looked_up, ["cheapest", "mid", "seats-only", "second-mid"]);

    // maxResults 0 is clamped to 1.
    let (_, body) = fake
        .call(&with(search_body(), json!({"maxResults": 0})))
        .await;
    assert_eq!(ids(&body), ["cheapest"]);
}

#[tokio::test]
async fn empty_results() {
    for payload in [
        json!({"data": [], "count": 0, "hasMore": false}),
        json!({"data": null}),
        json!({}),
    ] {
        let fake = Fake::start().await;
        fake.search_replies(payload.clone()).await;
        fake.trips_reply(plain_trip(), Duration::ZERO).await;
        let (status, body) = fake.call(&search_body()).await;
        assert_eq!(status, 200, "{payload}: {body}");
        assert_eq!(body["results"], json!({"count": 0, "flights": []}));
        assert_eq!(body["stats"]["totalAvailable"], json!(0));
        assert_eq!(body["stats"]["hasMore"], json!(false));
        assert!(fake.requests_to("/trips/").await.is_empty());
    }
}

#[tokio::test]
async fn an_empty_cabin_reports_what_the_other_cabins_have() {
    let fake = Fake::start().await;
    // Asked with `cabin=first`: nothing. Asked without a cabin: seats in two others.
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("cabin", "first"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [], "count": 0})))
        .with_priority(1)
        .mount(&fake.server)
        .await;
    fake.search_replies(json!({"data": [
        {"ID": "a", "YAvailable": true, "YMileageCost": "30000", "JAvailable": true,
         "JMileageCost": "80000", "FAvailable": false, "FMileageCost": "0"},
        {"ID": "b", "YAvailable": true, "YMileageCost": "25000", "JAvailable": true,
         "JMileageCost": "75000"}
    ]}))
    .await;
    let (status, body) = fake
        .call(&with(search_body(), json!({"travelClass": "FIRST"})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(0));
    assert_eq!(
        body["stats"]["otherCabins"],
        json!([{"cabin": "ECONOMY", "milesFrom": 25000}, {"cabin": "BUSINESS", "milesFrom": 75000}])
    );
    let searches = fake.requests_to("/search").await;
    assert_eq!(searches.len(), 2);
    assert!(
        query(&searches[1], "cabin").is_none(),
        "the second search asks every cabin"
    );
}

#[tokio::test]
async fn include_return_awards_searches_both_directions() {
    let fake = Fake::start().await;
    let search =
        |origin: &str, ids: &[&str]| {
            let data: Vec<Value> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| availability(id, json!(true), json!(30000 + i * 1000), json!(4)))
                .collect();
            Mock::given(method("GET"))
                .and(path("/search"))
                .and(query_param("origin_airport", origin))
                .respond_with(ResponseTemplate::new(200).set_body_json(
                    json!({"data": data, "count": 10 * ids.len(), "hasMore": false}),
                ))
        };
    search("SFO", &["out-1", "out-2", "out-3"])
        .mount(&fake.server)
        .await;
    search("JFK", &["back-1", "back-2", "back-3"])
        .mount(&fake.server)
        .await;
    fake.trips_reply(plain_trip(), Duration::ZERO).await;

    let body = with(
        search_body(),
        json!({"flexibility": 1, "returnDate": "2023-08-20", "includeReturnAwards": true,
               "maxResults": 2}),
    );
    let (status, reply) = fake.call(&body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(ids(&reply), ["out-1", "out-2", "back-1", "back-2"]);
    let flights = reply["results"]["flights"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for f in &flights[..2] {
        assert!(
            !f["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("return"))),
            "{f}"
        );
    }
    for f in &flights[2..] {
        assert_eq!(f["tags"][0], json!("return"), "{f}");
    }
    assert_eq!(
        reply["stats"],
        json!({"totalAvailable": 60, "hasMore": false, "startDate": "2023-08-13",
               "endDate": "2023-08-21", "cabin": "Business"})
    );

    let searches = fake.requests_to("/search").await;
    assert_eq!(searches.len(), 2);
    let back = searches
        .iter()
        .find(|r| query(r, "origin_airport").as_deref() == Some("JFK"))
        .unwrap_or_else(|| panic!("no reverse search"));
    assert_eq!(query(back, "destination_airport").as_deref(), Some("SFO"));
    assert_eq!(query(back, "start_date").as_deref(), Some("2023-08-19"));
    assert_eq!(query(back, "end_date").as_deref(), Some("2023-08-21"));

    // Without the flag a return date alone searches one direction.
    fake.server.reset().await;
    search("SFO", &["out-1"]).mount(&fake.server).await;
    fake.trips_reply(plain_trip(), Duration::ZERO).await;
    let (status, reply) = fake
        .call(&with(body, json!({"includeReturnAwards": false})))
        .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(ids(&reply), ["out-1"]);
    assert_eq!(fake.requests_to("/search").await.len(), 1);
}

#[tokio::test]
async fn failing_return_search_leaves_the_outbound_results() {
    let fake = Fake::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("origin_airport", "SFO"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [availability("out-1", json!(true), json!("30000"), json!(4))]
        })))
        .mount(&fake.server)
        .await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("origin_airport", "JFK"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&fake.server)
        .await;
    fake.trips_reply(plain_trip(), Duration::ZERO).await;
    let body = with(
        search_body(),
        json!({"returnDate": "2023-08-20", "includeReturnAwards": true}),
    );
    let (status, reply) = fake.call(&body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(ids(&reply), ["out-1"]);
    assert_eq!(reply["stats"]["endDate"], json!("2023-08-17"));
}

#[tokio::test]
async fn one_failing_trip_lookup_drops_only_that_entry() {
    let fake = Fake::start().await;
    fake.search_replies(test_support::fixture_json(common::SEARCH_FIXTURE))
        .await;
    let broken = FIXTURE_CHEAPEST[1];
    Mock::given(method("GET"))
        .and(path(format!("/trips/{broken}")))
        .respond_with(ResponseTemplate::new(500).set_body_string("trip store exploded"))
        .with_priority(1)
        .mount(&fake.server)
        .await;
    fake.trips_reply(
        test_support::fixture_json(common::TRIPS_FIXTURE),
        Duration::ZERO,
    )
    .await;

    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 200, "{body}");
    let expected: Vec<&str> = FIXTURE_CHEAPEST
        .iter()
        .copied()
        .filter(|id| *id != broken)
        .collect();
    assert_eq!(ids(&body), expected);
    // It was retried before being given up.
    let attempts = fake.requests_to(&format!("/trips/{broken}")).await.len();
    assert_eq!(attempts, 4);
}

#[tokio::test]
async fn trip_reply_without_a_usable_trip_drops_only_that_entry() {
    let fake = Fake::start().await;
    fake.search_replies(test_support::fixture_json(common::SEARCH_FIXTURE))
        .await;
    let odd = [
        FIXTURE_CHEAPEST[0],
        FIXTURE_CHEAPEST[2],
        FIXTURE_CHEAPEST[4],
    ];
    let replies = [
        json!({"data": []}),
        json!({"data": [{"Cabin": "economy", "DepartsAt": "2024-05-01T14:00:00Z"}]}),
        json!({"data": "not a list"}),
    ];
    for (id, reply) in odd.iter().zip(replies) {
        Mock::given(method("GET"))
            .and(path(format!("/trips/{id}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(reply))
            .with_priority(1)
            .mount(&fake.server)
            .await;
    }
    fake.trips_reply(
        test_support::fixture_json(common::TRIPS_FIXTURE),
        Duration::ZERO,
    )
    .await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), [FIXTURE_CHEAPEST[1], FIXTURE_CHEAPEST[3]]);
}

#[tokio::test]
async fn every_trip_lookup_failing_is_an_upstream_error() {
    let fake = Fake::start().await;
    fake.search_replies(test_support::fixture_json(common::SEARCH_FIXTURE))
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/trips/"))
        .respond_with(ResponseTemplate::new(502))
        .mount(&fake.server)
        .await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
}
