//! Query embeddings from Titan Text Embeddings V2 on Amazon Bedrock, through the fake LLM's
//! Bedrock side: vectors are used when the knowledge base was embedded with the same model
//! and length, and the search falls back to BM25 when the length differs.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use crate::common::{KbTable, corpus};
use kb_retrieve::{Config, Deps};
use knowledge::embeddings::{EmbeddingsConfig, EmbeddingsEndpoint};
use knowledge::kb::KbStore;
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use serde_json::json;
use test_support::fake_llm::FakeLlm;
use test_support::fake_llm::bedrock::fake_embedding;

const TITAN: &str = "amazon.titan-embed-text-v2:0";

/// The sample corpus embedded by the (fake) Titan with `dims` dimensions.
async fn titan_kb(dims: u32) -> KbTable {
    let kb = KbTable::create().await;
    for (id, text, _) in corpus() {
        kb.put_document(id, &[(text, Some(fake_embedding(text, dims as usize)))])
            .await;
    }
    kb.store
        .bump_version(Some(TITAN), Some(dims))
        .await
        .unwrap_or_else(|e| panic!("bump: {e}"));
    kb
}

async fn deps(kb: &KbTable, fake: &FakeLlm, dims: u32) -> Deps {
    let mut config = Config::new(
        kb.name.clone(),
        Some(EmbeddingsConfig {
            endpoint: EmbeddingsEndpoint::Bedrock,
            model: TITAN.into(),
            dimensions: Some(dims),
        }),
    );
    config.deadline_fallback = Duration::from_secs(10);
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(60),
    );
    let http = lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("client: {e}"));
    let store: Arc<dyn KbStore> = kb.store.clone();
    let client = knowledge::embeddings::bedrock::client_at(
        &test_support::sdk_config().await,
        &fake.endpoint_url(),
    );
    Deps::new(http, secrets, store, config).with_bedrock(|| client)
}

async fn search(deps: &Deps, query: &str) -> serde_json::Value {
    let (status, body) =
        common::reply(kb_retrieve::handle(deps, common::post(&json!({"query": query}))).await);
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn titan_query_vectors_search_a_titan_knowledge_base() {
    let fake = FakeLlm::start().await;
    let kb = titan_kb(256).await;
    let deps = deps(&kb, &fake, 256).await;
    let body = search(&deps, "surcharges on long-haul award tickets").await;
    assert_eq!(body["mode"], json!("hybrid"), "{body}");
    assert_eq!(
        body["results"][0]["document_id"],
        json!("fuel-surcharges"),
        "{body}"
    );
    kb.delete().await;
}

#[tokio::test]
async fn a_knowledge_base_of_another_length_is_searched_with_bm25() {
    let fake = FakeLlm::start().await;
    let kb = titan_kb(256).await;
    // Queries would be embedded with 1024 dimensions: the stored 256 cannot be compared.
    let deps = deps(&kb, &fake, 1024).await;
    let body = search(&deps, "surcharges on long-haul award tickets").await;
    assert_eq!(body["mode"], json!("bm25"), "{body}");
    kb.delete().await;
}
