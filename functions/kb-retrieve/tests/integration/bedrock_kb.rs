//! `KB_BACKEND=bedrock`: `POST /kb/search` answered by an Amazon Bedrock knowledge base's
//! Retrieve API, here a fake (wiremock) reached through the SDK's endpoint override. The
//! real SDK signs and sends the request and parses the reply, so the test holds the wire
//! format as well as the mapping to the tool's reply.
//!
//! The KB table is never created: the Bedrock backend must not read it.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use kb_retrieve::config::{Backend, BedrockKbConfig, BedrockSearchType};
use kb_retrieve::{Config, Deps};
use knowledge::kb::{DynamoKbStore, KbStore};
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KB_ID: &str = "KBTEST0001";
const RETRIEVE: &str = "/knowledgebases/KBTEST0001/retrieve";

/// A Retrieve reply in the API's JSON: two chunks from S3 with Bedrock's metadata, one
/// from a web crawler, one without text.
fn retrieve_reply() -> Value {
    json!({
        "retrievalResults": [
            {
                "content": {"type": "TEXT", "text": "Fuel surcharges apply to award tickets on long-haul flights."},
                "location": {"type": "S3", "s3Location": {"uri": "s3://help-centre/kb/fuel-surcharges.md"}},
                "metadata": {
                    "x-amz-bedrock-kb-source-uri": "s3://help-centre/kb/fuel-surcharges.md",
                    "x-amz-bedrock-kb-chunk-id": "1%3A0%3AabcDEF",
                    "x-amz-bedrock-kb-data-source-id": "DS00000001"
                },
                "score": 0.72
            },
            {
                "content": {"type": "TEXT", "text": ""},
                "location": {"type": "S3", "s3Location": {"uri": "s3://help-centre/kb/empty.md"}},
                "score": 0.70
            },
            {
                "content": {"type": "TEXT", "text": "Miles expire after 24 months without activity."},
                "location": {"type": "WEB", "webLocation": {"url": "https://help.example.com/miles-expiry"}},
                "score": 0.55
            }
        ]
    })
}

async fn deps(bedrock: &MockServer, search_type: BedrockSearchType, max_results: usize) -> Deps {
    let sdk = test_support::sdk_config().await;
    let table = test_support::unique("kb-never-created");
    let mut config = Config::new(table.clone(), None);
    config.deadline_fallback = Duration::from_secs(2);
    config.backend = Backend::Bedrock(BedrockKbConfig {
        knowledge_base_id: KB_ID.into(),
        search_type,
        max_results,
    });
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(60),
    );
    let store: Arc<dyn KbStore> =
        Arc::new(DynamoKbStore::new(test_support::dynamodb().await, table));
    let http = lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("client: {e}"));
    Deps::new(http, secrets, store, config)
        .with_bedrock_kb(|| kb_retrieve::bedrock_kb::client_at(&sdk, &bedrock.uri()))
}

async fn search(deps: &Deps, body: Value) -> (u16, Value) {
    common::reply(kb_retrieve::handle(deps, common::post(&body)).await)
}

/// The one request the fake received, as JSON.
async fn sent(bedrock: &MockServer) -> Value {
    let requests = bedrock.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1, "one Retrieve call");
    serde_json::from_slice(&requests[0].body).unwrap_or(Value::Null)
}

#[tokio::test]
async fn bedrock_results_answer_in_the_tools_shape() {
    let bedrock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(RETRIEVE))
        .respond_with(ResponseTemplate::new(200).set_body_json(retrieve_reply()))
        .mount(&bedrock)
        .await;
    let deps = deps(&bedrock, BedrockSearchType::Hybrid, 20).await;
    let (status, body) = search(
        &deps,
        json!({"query": "  Surcharges on award tickets? ", "top_k": 4}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["mode"], json!("bedrock"));
    assert_eq!(body["kb_version"], Value::Null);
    let results = body["results"].as_array().cloned().unwrap_or_default();
    let summary: Vec<(Value, Value)> = results
        .iter()
        .map(|r| (r["id"].clone(), r["document_id"].clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (json!("1%3A0%3AabcDEF"), json!("fuel-surcharges")),
            (json!("miles-expiry#2"), json!("miles-expiry")),
        ],
        "the chunk without text is left out: {body}"
    );
    assert_eq!(
        results[0]["content"],
        json!("Fuel surcharges apply to award tickets on long-haul flights.")
    );
    let score = results[0]["score"].as_f64().unwrap_or_default();
    assert!((score - 0.72).abs() < 1e-6, "{score}");
    assert_eq!(results[0]["bm25"], Value::Null);

    let request = sent(&bedrock).await;
    assert_eq!(
        request["retrievalQuery"]["text"],
        json!("Surcharges on award tickets?"),
        "the normalised query: {request}"
    );
    let search = &request["retrievalConfiguration"]["vectorSearchConfiguration"];
    assert_eq!(search["numberOfResults"], json!(4), "{request}");
    assert_eq!(search["overrideSearchType"], json!("HYBRID"), "{request}");
}

#[tokio::test]
async fn auto_leaves_the_search_type_to_bedrock_and_max_results_caps_top_k() {
    let bedrock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(RETRIEVE))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"retrievalResults": []})))
        .mount(&bedrock)
        .await;
    let deps = deps(&bedrock, BedrockSearchType::Auto, 3).await;
    let (status, body) = search(&deps, json!({"query": "lounge access", "top_k": 10})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"], json!([]));
    let request = sent(&bedrock).await;
    let search = &request["retrievalConfiguration"]["vectorSearchConfiguration"];
    assert_eq!(search["numberOfResults"], json!(3), "{request}");
    assert!(search.get("overrideSearchType").is_none(), "{request}");
}

#[tokio::test]
async fn a_refusal_is_a_502_without_bedrocks_message() {
    let bedrock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(RETRIEVE))
        .respond_with(
            ResponseTemplate::new(400)
                .insert_header("x-amzn-errortype", "ValidationException")
                .set_body_json(json!({"message": "HYBRID search is not supported for this store: secret-ish detail"})),
        )
        .mount(&bedrock)
        .await;
    let deps = deps(&bedrock, BedrockSearchType::Hybrid, 20).await;
    let (status, body) = search(&deps, json!({"query": "lounge access"})).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"), "{body}");
    // The cause (the error code) is logged; the client learns only that the KB is down.
    let text = body.to_string();
    assert!(text.contains("bedrock-knowledge-base"), "{text}");
    assert!(
        !text.contains("secret-ish") && !text.contains("HYBRID"),
        "{text}"
    );
}

#[tokio::test]
async fn a_slow_knowledge_base_is_a_504_within_the_deadline() {
    let bedrock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(RETRIEVE))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(retrieve_reply())
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&bedrock)
        .await;
    let deps = deps(&bedrock, BedrockSearchType::Auto, 20).await;
    let started = std::time::Instant::now();
    let (status, body) = search(&deps, json!({"query": "lounge access"})).await;
    assert_eq!(status, 504, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
