//! Requests refused before any search (400 naming the field, 413, 405) and `top_k` clamping.

use crate::common::{Fake, post_text, reply};
use lambda_http::http::Method;
use lambda_http::{Body, Request};
use serde_json::{Value, json};

#[tokio::test]
async fn invalid_bodies_name_the_problem() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_answer().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "query"),
        (json!({"query": ""}), "query"),
        (json!({"query": " \n\t "}), "query"),
        (json!({"query": null}), "query"),
        (json!({"query": 42}), "query"),
        (json!({"query": "x".repeat(2001)}), "query"),
        (json!({"query": "ok", "top_k": "6"}), "top_k"),
        (json!({"query": "ok", "top_k": 2.5}), "top_k"),
        (json!({"query": "ok", "top_k": 1e30}), "top_k"),
    ];
    for (body, field) in cases {
        let (status, reply) = fake.call(&body).await;
        assert_eq!(status, 400, "{body}: {reply}");
        assert_eq!(
            reply["error"]["code"],
            json!("validation_failed"),
            "{body}: {reply}"
        );
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(field),
            "{body}: {message:?} does not name {field}"
        );
    }
    // 2000 characters (umlauts count as one) are fine.
    let (status, body) = fake.call(&json!({"query": "ä".repeat(2000)})).await;
    assert_eq!(status, 200, "{body}");
    for (text, code) in [
        ("", "invalid_json"),
        ("{", "invalid_json"),
        ("[\"query\"]", "invalid_json"),
        ("\"stopover\"", "invalid_json"),
    ] {
        let (status, body) = reply(kb_retrieve::handle(&fake.deps, post_text(text.into())).await);
        assert_eq!(status, 400, "{text:?}: {body}");
        assert_eq!(body["error"]["code"], json!(code), "{text:?}");
    }
    // The KB is empty: without vectors to compare with, no query was embedded.
    assert_eq!(fake.embedding_requests().await.len(), 0);
    fake.finish().await;
}

#[tokio::test]
async fn oversized_body_is_413() {
    let fake = Fake::without_endpoint().await;
    let body = json!({"query": "stopover", "padding": "x".repeat(300 * 1024)});
    let (status, reply) = fake.call(&body).await;
    assert_eq!(status, 413, "{reply}");
    assert_eq!(reply["error"]["code"], json!("payload_too_large"));
    fake.finish().await;
}

#[tokio::test]
async fn only_post_is_allowed() {
    let fake = Fake::without_endpoint().await;
    for verb in [Method::GET, Method::PUT, Method::DELETE] {
        let mut req = Request::new(Body::Text(json!({"query": "stopover"}).to_string()));
        *req.method_mut() = verb.clone();
        let response = kb_retrieve::handle(&fake.deps, req).await;
        let allow = response
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok());
        assert_eq!(allow, Some("POST"));
        let (status, body) = reply(response);
        assert_eq!(status, 405, "{verb}");
        assert_eq!(body["error"]["code"], json!("method_not_allowed"));
    }
    fake.finish().await;
}

#[tokio::test]
async fn top_k_is_clamped_to_1_through_20() {
    let fake = Fake::without_endpoint().await;
    let texts: Vec<String> = (0..25)
        .map(|i| format!("Award chart number {i} of the program."))
        .collect();
    let parts: Vec<(&str, Option<Vec<f32>>)> = texts.iter().map(|t| (t.as_str(), None)).collect();
    fake.kb.put_document("charts", &parts).await;
    fake.kb.bump(None).await;
    for (top_k, expected) in [
        (json!(null), 6),
        (json!(0), 1),
        (json!(-5), 1),
        (json!(1), 1),
        (json!(7), 7),
        (json!(20), 20),
        (json!(21), 20),
        (json!(1000), 20),
    ] {
        let (status, body) = fake
            .call(&json!({"query": "award chart", "top_k": top_k}))
            .await;
        assert_eq!(status, 200, "{body}");
        let count = body["results"].as_array().map_or(0, Vec::len);
        assert_eq!(count, expected, "top_k {top_k}");
    }
    // Unknown fields are ignored.
    let (status, _) = fake.call(&json!({"query": "award", "lang": "de"})).await;
    assert_eq!(status, 200);
    fake.finish().await;
}
