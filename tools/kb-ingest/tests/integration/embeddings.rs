//! `shared::embeddings::EmbeddingsClient` against a wiremock server: the request it sends,
//! answers out of order, retries, and the errors it gives. (These live here because the
//! `shared` crate has no wiremock dev-dependency.)

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared::Error;
use shared::embeddings::EmbeddingsClient;
use shared::secrets::SecretString;
use shared::upstream::RetryPolicy;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        attempt_timeout: Duration::from_secs(5),
    }
}

fn client(base: &str, dimensions: Option<u32>, key: Option<&str>) -> EmbeddingsClient {
    let http = shared::upstream::http_client().unwrap_or_else(|e| panic!("{e}"));
    EmbeddingsClient::new(
        http,
        base,
        "text-embedding-3-small",
        dimensions,
        key.map(SecretString::new),
    )
    .with_retry_policy(fast_retries())
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

fn inputs(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|s| (*s).to_owned()).collect()
}

async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect()
}

#[tokio::test]
async fn sends_model_inputs_dimensions_and_key_and_reorders_by_index() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "model": "text-embedding-3-small",
            "data": [
                {"object": "embedding", "index": 2, "embedding": [2.0, 2.5, 2.25]},
                {"object": "embedding", "index": 0, "embedding": [0.0, 0.5, 0.25]},
                {"object": "embedding", "index": 1, "embedding": [1.0, 1.5, 1.25]}
            ],
            "usage": {"prompt_tokens": 6, "total_tokens": 6}
        })))
        .expect(1)
        .mount(&server)
        .await;

    let vectors = client(&server.uri(), Some(3), Some("sk-test"))
        .embed(&inputs(&["zero", "one", "two"]), deadline())
        .await
        .unwrap_or_else(|e| panic!("embed: {e}"));
    assert_eq!(
        vectors,
        vec![
            vec![0.0, 0.5, 0.25],
            vec![1.0, 1.5, 1.25],
            vec![2.0, 2.5, 2.25]
        ]
    );
    assert_eq!(
        request_bodies(&server).await,
        vec![json!({
            "model": "text-embedding-3-small",
            "input": ["zero", "one", "two"],
            "dimensions": 3
        })]
    );
}

#[tokio::test]
async fn without_dimensions_or_key_sends_neither_and_accepts_a_v1_base() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"index": 0, "embedding": [0.25, -1.0]}]
        })))
        .mount(&server)
        .await;

    let base = format!("{}/v1", server.uri());
    let vectors = client(&base, None, None)
        .embed(&inputs(&["hello"]), deadline())
        .await
        .unwrap_or_else(|e| panic!("embed: {e}"));
    assert_eq!(vectors, vec![vec![0.25, -1.0]]);

    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].headers.contains_key("authorization"));
    assert_eq!(
        request_bodies(&server).await,
        vec![json!({"model": "text-embedding-3-small", "input": ["hello"]})]
    );
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .expect(3)
        .mount(&server)
        .await;

    let result = client(&server.uri(), None, None)
        .embed(&inputs(&["a"]), deadline())
        .await;
    match result {
        Err(Error::UpstreamUnavailable { service, message }) => {
            assert_eq!(service, "embeddings");
            assert!(message.contains("500"), "{message}");
        }
        other => panic!("expected an upstream error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_500_then_success_recovers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0]}]})),
        )
        .mount(&server)
        .await;
    let vectors = client(&server.uri(), None, None)
        .embed(&inputs(&["a"]), deadline())
        .await
        .unwrap_or_else(|e| panic!("embed: {e}"));
    assert_eq!(vectors, vec![vec![1.0]]);
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(2));
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "unknown model"}, "message": "unknown model"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let result = client(&server.uri(), None, None)
        .embed(&inputs(&["a"]), deadline())
        .await;
    assert!(
        matches!(result, Err(Error::UpstreamRejected { status: 400, .. })),
        "{result:?}"
    );

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401))
        .expect(1)
        .mount(&server)
        .await;
    let result = client(&server.uri(), None, Some("wrong"))
        .embed(&inputs(&["a"]), deadline())
        .await;
    match result {
        Err(Error::Upstream { message, .. }) => assert!(message.contains("401"), "{message}"),
        other => panic!("expected an upstream error, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_answers_are_upstream_errors() {
    let cases = [
        // One vector for two inputs.
        json!({"data": [{"index": 0, "embedding": [1.0]}]}),
        // The same index twice.
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}),
        // Index out of range.
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [2.0]}]}),
        // Lengths differ.
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [2.0, 3.0]}]}),
        // Not the requested dimensions (asked for 3 below).
        json!({"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [2.0, 3.0]}]}),
    ];
    for (i, body) in cases.into_iter().enumerate() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
        let dims = (i == 4).then_some(3);
        let result = client(&server.uri(), dims, None)
            .embed(&inputs(&["a", "b"]), deadline())
            .await;
        assert!(
            matches!(result, Err(Error::Upstream { .. })),
            "case {i}: {result:?}"
        );
    }
}

#[tokio::test]
async fn no_inputs_no_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let vectors = client(&server.uri(), None, None)
        .embed(&[], deadline())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(vectors.is_empty());
}
