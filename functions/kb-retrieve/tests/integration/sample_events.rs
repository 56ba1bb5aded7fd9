//! Every sample event in `events/kb-retrieve/` runs through the handler against the fakes
//! and gets the status its file name ends with (`search-200.json` → 200).

use crate::common;

use crate::common::{Fake, reply};

#[tokio::test]
async fn sample_events_get_their_status() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_answer().await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    let events = test_support::sample_events("kb-retrieve");
    assert!(events.len() >= 3, "sample events missing for kb-retrieve");
    for event in events {
        let name = event.name;
        let expected = event.expected_status;
        let req = lambda_http::request::from_str(&event.text)
            .unwrap_or_else(|e| panic!("{name} is not an API Gateway event: {e}"));
        let (status, body) = reply(kb_retrieve::handle(&fake.deps, req).await);
        assert_eq!(status, expected, "{name}: {body}");
        if expected == 200 {
            assert_eq!(body["mode"], serde_json::json!("hybrid"), "{name}: {body}");
            let count = body["results"].as_array().map_or(0, Vec::len);
            assert!(count > 0, "{name}: {body}");
        }
    }
    fake.finish().await;
}
