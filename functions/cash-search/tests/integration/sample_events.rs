//! Every sample event in `events/cash-search/` goes through the handler against the fake
//! Amadeus and answers with the status its file name ends in (`search-200.json`).

use crate::common::*;

#[tokio::test]
async fn every_sample_event_answers_with_its_status() {
    let fake = fake().await;
    token_endpoint().mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;

    let events = test_support::sample_events("cash-search");
    assert!(events.len() >= 3, "sample events missing for cash-search");
    for event in events {
        let name = event.name;
        let expected = event.expected_status;
        let text = event.text;
        let req = lambda_http::request::from_str(&text)
            .unwrap_or_else(|e| panic!("{name} is not an API Gateway event: {e}"));
        let (status, body, _) = call(&deps, req).await;
        assert_eq!(status, expected, "{name}: {body}");
        if expected == 200 {
            assert!(
                body["results"]["count"].as_u64().unwrap_or_default() > 0,
                "{name}: {body}"
            );
        }
    }
}
