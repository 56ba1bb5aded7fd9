//! Every sample event in `events/seatsaero-search/` runs through the handler against the
//! fakes and gets the status its file name ends with (`search-200.json` → 200).

use crate::common::{Fake, reply};

#[tokio::test]
async fn sample_events_get_their_status() {
    let fake = Fake::start().await.with_fixtures().await;
    let events = test_support::sample_events("seatsaero-search");
    assert!(
        events.len() >= 3,
        "sample events missing for seatsaero-search"
    );
    for event in events {
        let name = event.name;
        let expected = event.expected_status;
        let text = event.text;
        let req = lambda_http::request::from_str(&text)
            .unwrap_or_else(|e| panic!("{name} is not an API Gateway event: {e}"));
        let (status, body) = reply(seatsaero_search::handle(&fake.deps, req).await);
        assert_eq!(status, expected, "{name}: {body}");
        if expected == 200 {
            assert_eq!(body["success"], serde_json::json!(true), "{name}");
            assert!(
                body["results"]["count"].as_u64().unwrap_or(0) > 0,
                "{name}: {body}"
            );
        }
    }
}
