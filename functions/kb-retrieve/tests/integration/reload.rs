//! Loading and reloading: the marker is read at most once per check interval, a bumped
//! version is picked up, an empty KB answers with no results.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use crate::common::{Fake, KbTable, documents};
use futures::future::join_all;
use knowledge::kb::KbStore;
use serde_json::json;

#[tokio::test]
async fn a_version_bump_is_picked_up() {
    let fake = Fake::start(|c| c.version_check = Duration::ZERO).await;
    fake.embeddings_answer().await;
    let first = fake.kb.put_corpus(true, Some(common::MODEL)).await;
    let body = fake.search("lounge access").await;
    assert_eq!(body["kb_version"], json!(first));
    // (The vector ranking always has nearest neighbours; the lounge document is what counts.)
    assert!(!documents(&body).contains(&"lounges".to_owned()), "{body}");

    fake.kb.put_lounges().await;
    // Written but not yet announced: the loaded version stays.
    let body = fake.search("lounge access").await;
    assert_eq!(body["kb_version"], json!(first));
    assert!(!documents(&body).contains(&"lounges".to_owned()), "{body}");

    let second = fake.kb.bump(Some(common::MODEL)).await;
    let body = fake.search("lounge access").await;
    assert_eq!(body["kb_version"], json!(second), "{body}");
    assert_eq!(documents(&body)[0], "lounges", "{body}");
    assert_eq!(body["results"][0]["bm25"]["rank"], json!(1), "{body}");
    assert_eq!(body["mode"], json!("hybrid"));

    // A removed document disappears after the next bump.
    fake.kb
        .store
        .remove_document("lounges")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let third = fake.kb.bump(Some(common::MODEL)).await;
    let body = fake.search("lounge access").await;
    assert_eq!(body["kb_version"], json!(third));
    assert!(!documents(&body).contains(&"lounges".to_owned()), "{body}");
    fake.finish().await;
}

#[tokio::test]
async fn the_marker_is_not_read_per_query() {
    let (client, counter) = test_support::counted_dynamodb().await;
    let kb = KbTable::with_client(client).await;
    let fake = Fake::build(kb, false, |c| c.version_check = Duration::from_secs(60)).await;
    fake.kb.put_corpus(false, None).await;
    counter.take();

    let body = fake.search("stopover").await;
    assert_eq!(documents(&body)[0], "stopovers");
    let load = counter.take();
    // One GetItem for the marker plus one Scan per segment.
    assert!(
        (2..=8).contains(&load),
        "{load} requests for the first load"
    );

    fake.kb.bump(None).await;
    counter.take();
    for _ in 0..20 {
        fake.search("stopover").await;
    }
    assert_eq!(
        counter.take(),
        0,
        "warm queries within the interval touch DynamoDB"
    );
    fake.finish().await;
}

#[tokio::test]
async fn concurrent_first_queries_load_once() {
    let (client, counter) = test_support::counted_dynamodb().await;
    let kb = KbTable::with_client(client).await;
    let fake = Arc::new(Fake::build(kb, false, |_| {}).await);
    fake.kb.put_corpus(false, None).await;
    counter.take();
    let searches = (0..8).map(|_| {
        let fake = Arc::clone(&fake);
        async move { fake.search("stopover").await }
    });
    for body in join_all(searches).await {
        assert_eq!(documents(&body)[0], "stopovers", "{body}");
    }
    let requests = counter.take();
    assert!(
        requests <= 8,
        "{requests} requests: the KB was loaded more than once"
    );
    fake.kb.delete().await;
}

#[tokio::test]
async fn an_empty_knowledge_base_answers_with_no_results() {
    let fake = Fake::start(|c| c.version_check = Duration::ZERO).await;
    fake.embeddings_answer().await;
    let body = fake.search("stopover").await;
    assert_eq!(
        body,
        json!({"results": [], "mode": "bm25", "kb_version": null})
    );
    assert!(fake.embedding_requests().await.is_empty());
    fake.finish().await;
}

#[tokio::test]
async fn a_missing_table_is_an_internal_error_until_it_exists() {
    let kb = KbTable::create().await;
    kb.delete().await;
    let fake = Fake::build(kb, false, |_| {}).await;
    let (status, body) = fake.call(&json!({"query": "stopover"})).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], json!("internal"), "{body}");
}
