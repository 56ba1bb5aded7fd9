//! Every sample event in `events/chat-router/` runs through the handler and gets the status
//! its file name ends with. `{{DEV_JWT}}` in an event stands for a freshly minted user token
//! (tokens expire, so none is committed); the local stack substitutes it the same way.

use crate::common::{Rig, Turn, flight_args};
use serde_json::json;
use test_support::fake_llm::Reply;

#[tokio::test]
async fn sample_events_get_their_status() {
    let rig = Rig::start().await;
    let token = rig.token(&test_support::unique("sample"));
    let events = test_support::sample_events("chat-router");
    assert!(events.len() >= 5, "sample events missing for chat-router");
    for event in events {
        let name = event.name;
        let text = event.text.replace("{{DEV_JWT}}", &token);
        let req = lambda_http::request::from_str(&text)
            .unwrap_or_else(|e| panic!("{name} is not a Function URL event: {e}"));
        if event.expected_status == 200 {
            rig.llm
                .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
        }
        let turn = Turn::read(
            chat_router::handler::handle(&rig.deps, req).await,
            std::time::Instant::now(),
        )
        .await;
        assert_eq!(
            turn.status, event.expected_status,
            "{name}: {:?}",
            turn.json
        );
        if event.expected_status == 200 {
            assert_eq!(turn.names().last(), Some(&"done"), "{name}");
            assert_eq!(
                turn.first("tool_result")["status"],
                json!("succeeded"),
                "{name}"
            );
        } else {
            assert!(
                turn.json["error"]["code"].is_string(),
                "{name}: {:?}",
                turn.json
            );
        }
    }
}
