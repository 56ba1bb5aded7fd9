//! Searches through the handler against DynamoDB Local and a fake embeddings endpoint.

use crate::common;

use crate::common::{Fake, PARAPHRASE, documents, result};
use serde_json::json;

#[tokio::test]
async fn hybrid_search_fuses_both_rankings() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_answer().await;
    let version = fake.kb.put_corpus(true, Some(common::MODEL)).await;

    let body = fake.search("free stopover on award tickets").await;
    assert_eq!(body["mode"], json!("hybrid"), "{body}");
    assert_eq!(body["kb_version"], json!(version));
    assert_eq!(documents(&body)[0], "stopovers", "{body}");
    let first = &body["results"][0];
    assert_eq!(first["id"], json!("stopovers#0"));
    assert_eq!(first["bm25"]["rank"], json!(1), "{body}");
    assert_eq!(first["vector"]["rank"], json!(1), "{body}");
    assert!(
        first["content"]
            .as_str()
            .unwrap_or_default()
            .contains("stopover")
    );
    let fused = first["score"].as_f64().unwrap_or_default();
    assert!((fused - 2.0 / 61.0).abs() < 1e-6, "{fused}");
    assert!(first["vector"]["score"].as_f64().unwrap_or_default() > 0.9);
    // Fused scores descend.
    let scores: Vec<f64> = body["results"]
        .as_array()
        .map(|r| r.iter().filter_map(|h| h["score"].as_f64()).collect())
        .unwrap_or_default();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // Every chunk has an embedding, so the vector ranking returns all four.
    assert_eq!(scores.len(), 4);

    // A paraphrase sharing no word with its document is found by the vector ranking alone.
    let body = fake.search(PARAPHRASE).await;
    assert_eq!(body["mode"], json!("hybrid"));
    assert_eq!(documents(&body)[0], "fuel-surcharges", "{body}");
    assert_eq!(body["results"][0]["bm25"], json!(null), "{body}");
    assert_eq!(body["results"][0]["vector"]["rank"], json!(1));

    // The key from the secret was sent, with the configured model and dimensions.
    let requests = fake.embedding_requests().await;
    let sent: serde_json::Value =
        serde_json::from_slice(&requests[0].body).unwrap_or(serde_json::Value::Null);
    assert_eq!(sent["model"], json!(common::MODEL));
    assert_eq!(sent["dimensions"], json!(common::DIMS));
    assert_eq!(sent["input"], json!(["free stopover on award tickets"]));
    let auth = requests[0]
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    assert_eq!(auth, Some(format!("Bearer {}", fake.api_key).as_str()));
    fake.finish().await;
}

#[tokio::test]
async fn query_embeddings_are_cached_by_normalised_text() {
    let fake = Fake::start(|_| {}).await;
    fake.embeddings_answer().await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;

    for query in [
        PARAPHRASE,
        "  hidden costs\twhen redeeming   points ",
        PARAPHRASE,
    ] {
        let body = fake.search(query).await;
        assert_eq!(body["mode"], json!("hybrid"));
        assert_eq!(documents(&body)[0], "fuel-surcharges", "{query:?}: {body}");
    }
    assert_eq!(
        fake.embedding_requests().await.len(),
        1,
        "one embedding call"
    );
    fake.search("alliances").await;
    assert_eq!(
        fake.embedding_requests().await.len(),
        2,
        "a new query is embedded"
    );
    fake.finish().await;
}

#[tokio::test]
async fn without_a_cache_every_query_is_embedded() {
    let fake = Fake::start(|c| c.query_cache_size = 0).await;
    fake.embeddings_answer().await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    fake.search(PARAPHRASE).await;
    fake.search(PARAPHRASE).await;
    assert_eq!(fake.embedding_requests().await.len(), 2);
    fake.finish().await;
}

#[tokio::test]
async fn german_spellings_find_the_umlaut_document() {
    let fake = Fake::without_endpoint().await;
    fake.kb.put_corpus(false, None).await;
    for query in [
        "Prämienmeilen verfallen",
        "Praemienmeilen Verfall",
        "pramienmeilen",
        "Wann verfallen meine Meilen?",
    ] {
        let body = fake.search(query).await;
        assert_eq!(body["mode"], json!("bm25"));
        assert_eq!(
            documents(&body).first().map(String::as_str),
            Some("meilen-verfall"),
            "{query}: {body}"
        );
        let hit = result(&body, "meilen-verfall");
        assert!(hit.is_some_and(|h| h["bm25"]["rank"] == json!(1) && h["vector"].is_null()));
    }
    // English stemming: "surcharge" finds "surcharges"; stop words alone find nothing.
    let body = fake.search("surcharge").await;
    assert_eq!(documents(&body), vec!["fuel-surcharges"]);
    let body = fake.search("what is the").await;
    assert_eq!(body["results"], json!([]));
    fake.finish().await;
}
