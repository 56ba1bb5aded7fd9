//! Successful cash searches against the fake Amadeus, from the fixture payloads.

use crate::common::*;
use serde_json::{Value, json};
use wiremock::ResponseTemplate;
use wiremock::matchers::{query_param, query_param_is_missing};

#[tokio::test]
async fn happy_path_normalises_the_fixture() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .and(query_param("originLocationCode", "GIG"))
        .and(query_param("destinationLocationCode", "MAD"))
        .and(query_param("departureDate", "2027-08-01"))
        .and(query_param("returnDate", "2027-08-05"))
        .and(query_param("adults", "1"))
        .and(query_param("children", "1"))
        .and(query_param_is_missing("infants"))
        .and(query_param("travelClass", "BUSINESS"))
        .and(query_param("nonStop", "false"))
        .and(query_param("currencyCode", "EUR"))
        .and(query_param("max", "5"))
        .respond_with(offers_reply())
        .expect(1)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;

    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], json!(true));
    // One day asked, one day searched.
    assert_eq!(body["stats"]["startDate"], json!("2027-08-01"), "{body}");
    assert_eq!(body["stats"]["endDate"], json!("2027-08-01"), "{body}");
    assert_eq!(body["results"]["count"], json!(2));
    let flight = &body["results"]["flights"][0];
    assert_eq!(flight["id"], json!("amadeus-1"));
    assert_eq!(flight["provider"], json!("amadeus"));
    assert_eq!(flight["airline"], json!("BRITISH AIRWAYS"));
    assert_eq!(flight["price"], json!("$3,842.10"));
    assert_eq!(flight["pricePerPerson"], json!("$2,178.55"));
    assert_eq!(flight["seatsLeft"], json!(7));
    // The selling airline's own site books it.
    assert_eq!(
        flight["bookingLinks"],
        json!({"Book with British Airways": "https://www.britishairways.com/"})
    );
    assert_eq!(flight["cabin"], json!("Business"));
    assert_eq!(flight["totalStops"], json!(1));
    assert_eq!(flight["miles"], Value::Null);
    assert_eq!(flight["taxes"], json!({"amount": 181.1, "currency": "USD"}));
    assert_eq!(flight["tags"], json!(["ticket by 2020-01-16"]));
    assert_eq!(
        flight["outbound"],
        json!({
            "departure": {"airport": "GIG", "time": "2020-08-01T21:50"},
            "arrival": {"airport": "MAD", "time": "2020-08-02T18:45"},
            "duration": "15h 55m",
            "stops": "1 stop (LHR)",
            "flightNumbers": "BA248, BA462",
        })
    );
    assert_eq!(
        flight["inbound"],
        json!({
            "departure": {"airport": "MAD", "time": "2020-08-05T23:55"},
            "arrival": {"airport": "GIG", "time": "2020-08-06T08:30"},
            "duration": "13h 35m",
            "stops": "1 stop (GRU)",
            "flightNumbers": "IB6827, LA4508",
        })
    );
    let second = &body["results"]["flights"][1];
    assert_eq!(second["inbound"]["duration"], json!("19h 5m"));
    assert_eq!(second["inbound"]["flightNumbers"], json!("IB6827, LA4537"));
}

#[tokio::test]
async fn german_locale_clamped_max_results_and_a_flexible_window() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    // ±9 days is clamped to ±3, of which the asked day and the days either side are searched.
    for day in ["2027-07-31", "2027-08-01", "2027-08-02"] {
        offers_for(FIXTURE_TOKEN)
            .and(query_param("departureDate", day))
            .and(query_param("max", "20"))
            .and(query_param("nonStop", "true"))
            .and(query_param("infants", "1"))
            .and(query_param_is_missing("children"))
            .and(query_param_is_missing("returnDate"))
            .respond_with(offers_reply())
            .expect(1)
            .mount(&fake.server)
            .await;
    }
    let deps = deps(&fake).await;
    let body = r#"{"origin":"GIG","destination":"MAD","departureDate":"2027-08-01",
        "travelClass":"business","infants":1,"nonStop":true,"maxResults":50,"flexibility":9,"locale":"de"}"#;
    let (status, body, _) = call(&deps, post(body)).await;
    assert_eq!(status, 200, "{body}");
    let flight = &body["results"]["flights"][0];
    assert_eq!(flight["price"], json!("3.842,10 $"));
    assert_eq!(flight["pricePerPerson"], json!("2.178,55 $"));
    assert_eq!(flight["outbound"]["stops"], json!("1 Stopp (LHR)"));
    assert_eq!(flight["tags"], json!(["Ticketausstellung bis 2020-01-16"]));
    assert_eq!(body["stats"]["startDate"], json!("2027-07-31"), "{body}");
    assert_eq!(body["stats"]["endDate"], json!("2027-08-02"), "{body}");
    // Each day's best first, ids unique across the days.
    let ids: Vec<&str> = body["results"]["flights"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "amadeus-1@2027-07-31",
            "amadeus-1@2027-08-01",
            "amadeus-1@2027-08-02",
            "amadeus-2@2027-07-31",
            "amadeus-2@2027-08-01",
            "amadeus-2@2027-08-02"
        ]
    );
}

#[tokio::test]
async fn carrier_names_come_from_the_dictionary_and_odd_offers_are_dropped() {
    let mut reply: Value =
        serde_json::from_str(&offers_fixture()).unwrap_or_else(|e| panic!("{e}"));
    // Offer 1 is broken beyond use; offer 2 has odd but readable fields.
    reply["data"][0]["itineraries"] = json!("garbage");
    reply["data"][1]["validatingAirlineCodes"] = json!(["IB"]);
    reply["data"][1]["numberOfBookableSeats"] = json!("3");
    reply["data"][1]["lastTicketingDate"] = Value::Null;
    reply["data"][1]["unexpected"] = json!({"new": "field"});
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .expect(1)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;

    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(1));
    let flight = &body["results"]["flights"][0];
    assert_eq!(flight["id"], json!("amadeus-2"));
    assert_eq!(flight["airline"], json!("IBERIA"));
    assert_eq!(flight["seatsLeft"], json!(3));
    assert_eq!(flight["tags"], json!([]));
}

#[tokio::test]
async fn no_offers_is_an_empty_success() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"meta": {"count": 0}, "data": []})),
        )
        .expect(1)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"], json!({"count": 0, "flights": []}));
}
