//! Knowledge-base store against DynamoDB Local: chunks and manifests round-trip exactly
//! (embeddings bit for bit), replacing a document with fewer chunks drops the extra ones,
//! removal, and the version marker. The table is shared with other tests, so every test uses
//! its own document ids and asserts only on them.

use crate::common;

use shared::kb::chunker::{ChunkerConfig, chunk_document};
use shared::kb::{Chunk, DocumentManifest, DynamoKbStore, KbStore, content_hash};

async fn store() -> DynamoKbStore {
    DynamoKbStore::new(common::dynamodb().await, common::storage().kb_table)
}

/// Deterministic awkward floats: tiny, huge, negative zero, subnormal, many digits.
fn vector(seed: usize, dims: usize) -> Vec<f32> {
    (0..dims)
        .map(|i| match (seed + i) % 7 {
            0 => -0.0,
            1 => f32::MIN_POSITIVE / 3.0,
            2 => 1.0e30,
            3 => -(seed as f32 + 1.0) / (i as f32 + 3.0),
            _ => ((seed * 31 + i * 17) as f32).sin(),
        })
        .collect()
}

fn chunks(document_id: &str, count: u32, dims: Option<usize>) -> Vec<Chunk> {
    (0..count)
        .map(|p| {
            let mut chunk = Chunk::new(document_id, p, format!("{document_id} chunk {p} Ümlaut"));
            chunk.embedding = dims.map(|d| vector(p as usize, d));
            chunk
        })
        .collect()
}

fn manifest(document_id: &str, chunks: &[Chunk], model: Option<&str>) -> DocumentManifest {
    DocumentManifest {
        document_id: document_id.to_owned(),
        content_hash: content_hash(document_id),
        chunk_count: chunks.len() as u32,
        source_path: format!("docs/{document_id}.md"),
        chunking: ChunkerConfig::default().fingerprint(),
        embedding_model: model.map(str::to_owned),
        dimensions: chunks
            .first()
            .and_then(|c| c.embedding.as_ref())
            .map(|v| v.len() as u32),
        updated_at: "2026-01-01T00:00:00Z".into(),
    }
}

async fn stored_chunks(store: &DynamoKbStore, document_id: &str) -> Vec<Chunk> {
    store
        .load_all()
        .await
        .unwrap_or_else(|e| panic!("load_all: {e}"))
        .into_iter()
        .filter(|c| c.document_id == document_id)
        .collect()
}

async fn stored_manifest(store: &DynamoKbStore, document_id: &str) -> Option<DocumentManifest> {
    store
        .documents()
        .await
        .unwrap_or_else(|e| panic!("documents: {e}"))
        .into_iter()
        .find(|m| m.document_id == document_id)
}

fn bits(chunks: &[Chunk]) -> Vec<Option<Vec<u32>>> {
    chunks
        .iter()
        .map(|c| {
            c.embedding
                .as_ref()
                .map(|v| v.iter().map(|x| x.to_bits()).collect())
        })
        .collect()
}

#[tokio::test]
async fn load_all_returns_exactly_what_was_written() {
    let store = store().await;
    let doc = common::unique("kb-roundtrip");
    // 60 chunks: three BatchWriteItem calls; 1536 dimensions: 6 KiB per embedding.
    let written = chunks(&doc, 60, Some(1536));
    let m = manifest(&doc, &written, Some("text-embedding-3-small"));
    store
        .replace_document(&m, &written)
        .await
        .unwrap_or_else(|e| panic!("replace_document: {e}"));

    let loaded = stored_chunks(&store, &doc).await;
    assert_eq!(loaded.len(), 60);
    assert_eq!(bits(&loaded), bits(&written));
    assert_eq!(loaded, written);
    assert_eq!(loaded[7].id, format!("{doc}#7"));
    assert_eq!(loaded[7].content_hash, content_hash(&loaded[7].content));

    let by_document = store
        .document_chunks(&doc)
        .await
        .unwrap_or_else(|e| panic!("document_chunks: {e}"));
    assert_eq!(by_document, written);
    assert_eq!(stored_manifest(&store, &doc).await, Some(m));
}

#[tokio::test]
async fn chunks_without_embeddings_and_real_chunker_output_round_trip() {
    let store = store().await;
    let doc = common::unique("kb-text-only");
    let text = "# Stopovers\n\nMany programs allow a free stopover.\n\n## Rules\n\nAeroplan: one stopover per one-way award for 5,000 points.";
    let written = chunk_document(&doc, text, &ChunkerConfig::default());
    assert_eq!(written.len(), 2);
    let m = manifest(&doc, &written, None);
    store
        .replace_document(&m, &written)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored_chunks(&store, &doc).await, written);
    let stored = stored_manifest(&store, &doc).await;
    assert_eq!(
        stored.as_ref().and_then(|m| m.embedding_model.clone()),
        None
    );
    assert_eq!(stored.and_then(|m| m.dimensions), None);
}

#[tokio::test]
async fn replacing_with_fewer_chunks_removes_the_extra_ones() {
    let store = store().await;
    let doc = common::unique("kb-shrink");
    let long = chunks(&doc, 30, Some(8));
    store
        .replace_document(&manifest(&doc, &long, Some("m")), &long)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let mut short = chunks(&doc, 3, Some(8));
    short[1].content = "changed".into();
    short[1].content_hash = content_hash("changed");
    let m = manifest(&doc, &short, Some("m"));
    store
        .replace_document(&m, &short)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let loaded = stored_chunks(&store, &doc).await;
    assert_eq!(loaded, short);
    assert_eq!(
        stored_manifest(&store, &doc).await.map(|m| m.chunk_count),
        Some(3)
    );
}

#[tokio::test]
async fn a_chunk_of_another_document_is_refused() {
    let store = store().await;
    let doc = common::unique("kb-stray");
    let stray = chunks("someone-else", 1, None);
    let result = store
        .replace_document(&manifest(&doc, &stray, None), &stray)
        .await;
    assert!(
        matches!(result, Err(shared::Error::Invalid(_))),
        "{result:?}"
    );
    assert!(stored_manifest(&store, &doc).await.is_none());
}

#[tokio::test]
async fn remove_document_deletes_chunks_and_manifest_only_of_that_document() {
    let store = store().await;
    let gone = common::unique("kb-gone");
    let kept = common::unique("kb-kept");
    for doc in [&gone, &kept] {
        let c = chunks(doc, 4, Some(4));
        store
            .replace_document(&manifest(doc, &c, Some("m")), &c)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    store
        .remove_document(&gone)
        .await
        .unwrap_or_else(|e| panic!("remove_document: {e}"));
    assert!(stored_chunks(&store, &gone).await.is_empty());
    assert!(stored_manifest(&store, &gone).await.is_none());
    assert_eq!(stored_chunks(&store, &kept).await.len(), 4);
    assert!(stored_manifest(&store, &kept).await.is_some());

    // Removing an unknown document is a no-op.
    store
        .remove_document(&common::unique("kb-never-there"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn bump_version_increases_and_records_the_embedding_model() {
    let store = store().await;
    let before = store
        .version()
        .await
        .unwrap_or_else(|e| panic!("version: {e}"))
        .map_or(0, |v| v.version);

    let first = store
        .bump_version(Some("all-minilm-l6-v2"), Some(384))
        .await
        .unwrap_or_else(|e| panic!("bump_version: {e}"));
    assert!(first.version > before, "{} > {before}", first.version);
    assert_eq!(first.embedding_model.as_deref(), Some("all-minilm-l6-v2"));
    assert_eq!(first.dimensions, Some(384));
    assert!(first.updated_at.starts_with("20"), "{}", first.updated_at);

    let second = store
        .bump_version(None, None)
        .await
        .unwrap_or_else(|e| panic!("bump_version: {e}"));
    assert!(second.version > first.version);
    assert_eq!(second.embedding_model, None);
    assert_eq!(second.dimensions, None);

    let read = store
        .version()
        .await
        .unwrap_or_else(|e| panic!("version: {e}"))
        .map_or(0, |v| v.version);
    assert!(read >= second.version);
}

#[tokio::test]
async fn concurrent_bumps_each_count() {
    let store = store().await;
    let bumps = futures::future::join_all((0..8).map(|_| store.bump_version(Some("m"), Some(8))))
        .await
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")).version)
        .collect::<std::collections::BTreeSet<_>>();
    // Eight distinct versions: no increment was lost.
    assert_eq!(bumps.len(), 8);
}
