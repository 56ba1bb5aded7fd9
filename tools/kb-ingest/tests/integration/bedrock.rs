//! kb-ingest with Titan Text Embeddings V2 on Amazon Bedrock, through the fake LLM's Bedrock
//! side (`InvokeModel`): the chunks get Titan's vectors and the knowledge base records the
//! model and the length, which kb-retrieve checks before it searches with vectors.

use crate::common::{Docs, chunks_with_prefix, dynamo_store, manifests_with_prefix};
use kb_ingest::{IngestOptions, Progress, files, ingest};
use shared::embeddings::Embedder;
use shared::embeddings::bedrock::BedrockEmbeddings;
use test_support::fake_llm::FakeLlm;
use test_support::fake_llm::bedrock::fake_embedding;

const TITAN: &str = "amazon.titan-embed-text-v2:0";

#[tokio::test]
async fn chunks_are_embedded_by_titan_with_the_length_asked_for() {
    let fake = FakeLlm::start().await;
    let client = shared::embeddings::bedrock::client_at(
        &test_support::sdk_config().await,
        &fake.endpoint_url(),
    );
    let embedder = Embedder::Bedrock(BedrockEmbeddings::new(client, TITAN, 256));
    let store = dynamo_store().await;
    let docs = Docs::new();
    docs.write(
        "surcharges.md",
        "# Surcharges\n\nCarrier-imposed surcharges on award tickets.\n",
    );
    docs.write(
        "stopovers.md",
        "# Stopovers\n\nA free stopover on a one-way award.\n",
    );
    let prefix = test_support::unique("titan") + "-";
    let options = IngestOptions {
        id_prefix: prefix.clone(),
        ..IngestOptions::default()
    };
    let sources =
        files::collect(&[docs.path().to_path_buf()], &prefix).unwrap_or_else(|e| panic!("{e}"));
    let report = ingest(
        &store,
        Some(&embedder),
        &sources,
        &options,
        &Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("ingest: {e}"));
    assert_eq!(report.added.len(), 2);

    let chunks = chunks_with_prefix(&store, &prefix).await;
    assert!(!chunks.is_empty());
    for chunk in &chunks {
        // Exactly the vector Titan (the fake) computed for the chunk's text.
        assert_eq!(
            chunk.embedding.as_deref(),
            Some(fake_embedding(&chunk.content, 256).as_slice()),
            "{}",
            chunk.id
        );
    }
    for manifest in manifests_with_prefix(&store, &prefix).await {
        assert_eq!(manifest.embedding_model.as_deref(), Some(TITAN));
        assert_eq!(manifest.dimensions, Some(256));
    }
    // (The version marker is shared with the other tests of this table: kb-retrieve's own
    // test checks it against the configured length.)
}
