//! BM25 answers where vectors cannot be used: no endpoint, a failing or slow endpoint, a KB
//! without embeddings or embedded with another model. Never an error.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::{Fake, documents};
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

/// A BM25 answer with the stopover document first and no vector verdicts.
fn assert_bm25(body: &Value) {
    assert_eq!(body["mode"], json!("bm25"), "{body}");
    assert_eq!(
        documents(body).first().map(String::as_str),
        Some("stopovers"),
        "{body}"
    );
    let results = body["results"].as_array().cloned().unwrap_or_default();
    assert!(
        results
            .iter()
            .all(|r| r["vector"].is_null() && !r["bm25"].is_null()),
        "{body}"
    );
    let first = results[0]["score"].as_f64().unwrap_or_default();
    assert!(
        (first - 1.0 / 61.0).abs() < 1e-6,
        "fused score of rank 1 alone: {first}"
    );
}

const QUERY: &str = "free stopover on award tickets";

#[tokio::test]
async fn no_embeddings_endpoint_means_bm25() {
    let fake = Fake::without_endpoint().await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    assert_bm25(&fake.search(QUERY).await);
    assert!(fake.embedding_requests().await.is_empty());
    fake.finish().await;
}

#[tokio::test]
async fn failing_endpoint_degrades_to_bm25() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_reply(ResponseTemplate::new(500).set_body_string("boom"))
        .await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    assert_bm25(&fake.search(QUERY).await);
    let attempts = fake.embedding_requests().await.len();
    assert!((1..=2).contains(&attempts), "{attempts} attempts");
    // Failures are not cached: the next query tries again.
    fake.search(QUERY).await;
    assert!(fake.embedding_requests().await.len() > attempts);
    fake.finish().await;
}

#[tokio::test]
async fn rejected_and_malformed_embeddings_degrade_to_bm25() {
    for response in [
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}})),
        ResponseTemplate::new(400).set_body_json(json!({"error": "model not found"})),
        ResponseTemplate::new(200).set_body_string("not json"),
        ResponseTemplate::new(200).set_body_json(json!({"data": []})),
    ] {
        let fake = Fake::start(|_| {}).await;
        fake.embeddings_reply(response).await;
        fake.kb.put_corpus(true, Some(common::MODEL)).await;
        assert_bm25(&fake.search(QUERY).await);
        fake.finish().await;
    }
}

#[tokio::test]
async fn slow_endpoint_degrades_to_bm25_within_the_budget() {
    let fake = Fake::start(|c| c.set_embedding_timeout(Duration::from_millis(300))).await;
    fake.embeddings_reply(
        ResponseTemplate::new(200)
            .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}]}))
            .set_delay(Duration::from_secs(3)),
    )
    .await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    fake.search("warm up the index").await;
    let started = Instant::now();
    assert_bm25(&fake.search(QUERY).await);
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    fake.finish().await;
}

#[tokio::test]
async fn kb_embedded_with_another_model_is_searched_with_bm25() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_answer().await;
    fake.kb.put_corpus(true, Some("another-model")).await;
    assert_bm25(&fake.search(QUERY).await);
    assert!(
        fake.embedding_requests().await.is_empty(),
        "no query embedding without usable vectors"
    );
    fake.finish().await;
}

#[tokio::test]
async fn kb_ingested_without_embeddings_is_searched_with_bm25() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_answer().await;
    fake.kb.put_corpus(false, None).await;
    assert_bm25(&fake.search(QUERY).await);
    assert!(fake.embedding_requests().await.is_empty());
    fake.finish().await;
}

#[tokio::test]
async fn query_embedding_of_another_length_is_searched_with_bm25() {
    let fake = Fake::start(|c| {
        // The endpoint is asked for the model's own length, which is not the stored one.
        if let Some(e) = c.embeddings.as_mut() {
            e.dimensions = None;
        }
    })
    .await;
    fake.embeddings_reply(
        ResponseTemplate::new(200)
            .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]})),
    )
    .await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    assert_bm25(&fake.search(QUERY).await);
    fake.finish().await;
}
