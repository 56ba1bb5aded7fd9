//! Knowledge base: chunks, their DynamoDB store and the version marker.
//!
//! `kb-ingest` splits documents with [`chunker`], embeds the chunks and writes them per
//! document through [`KbStore`]; kb-retrieve loads every chunk at cold start and reloads when
//! the [`KbVersion`] marker changes.

pub mod chunker;
mod dynamo;
#[cfg(feature = "kb-snapshots")]
pub mod snapshots;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use dynamo::DynamoKbStore;

use domain::Result;

/// One retrievable piece of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// `"<document_id>#<position>"`.
    pub id: String,
    /// The document it comes from (its file stem).
    pub document_id: String,
    /// 0-based order within the document.
    pub position: u32,
    /// The text.
    pub content: String,
    /// Hex SHA-256 of `content` ([`content_hash`]).
    pub content_hash: String,
    /// As returned by the embeddings endpoint (not normalised); `None` in BM25 mode.
    pub embedding: Option<Vec<f32>>,
}

impl Chunk {
    /// A chunk without embedding, its id and hash derived from the arguments.
    pub fn new(document_id: &str, position: u32, content: String) -> Self {
        Self {
            id: chunk_id(document_id, position),
            document_id: document_id.to_owned(),
            position,
            content_hash: content_hash(&content),
            content,
            embedding: None,
        }
    }
}

/// The marker warm kb-retrieve instances poll: any ingest that changed something bumps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KbVersion {
    /// Bumped by every ingest that changed something.
    pub version: u64,
    /// Model the stored embeddings come from; `None` for a text-only (BM25) knowledge base.
    pub embedding_model: Option<String>,
    /// Length of the stored embeddings.
    pub dimensions: Option<u32>,
    /// RFC 3339.
    pub updated_at: String,
    /// The version's index snapshot, once `kb-ingest` published it; `None` before (and for
    /// knowledge bases ingested without a snapshot bucket): kb-retrieve then scans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotRef>,
}

/// Where a version's index snapshot sits in the snapshot bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRef {
    /// Key of the index snapshot.
    pub index_key: String,
    /// Key of the rescoring rows; `None` without vectors.
    pub rescore_key: Option<String>,
}

/// What the store knows about one ingested document; `kb-ingest` compares it with the file to
/// decide whether anything needs writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentManifest {
    /// The document's id (its file stem).
    pub document_id: String,
    /// Hex SHA-256 of the whole source file.
    pub content_hash: String,
    /// How many chunks it was split into.
    pub chunk_count: u32,
    /// Where the document was read from (for humans; ids come from the file stem).
    pub source_path: String,
    /// [`chunker::ChunkerConfig::fingerprint`] of the split that produced the chunks.
    pub chunking: String,
    /// Model and length of the chunks' embeddings; `None` when stored without embeddings.
    pub embedding_model: Option<String>,
    /// The vectors' length, when stored with embeddings.
    pub dimensions: Option<u32>,
    /// RFC 3339.
    pub updated_at: String,
}

/// Storage of the knowledge base. Writes are per document; the manifest is written last, so
/// a document whose write was interrupted still shows its old content hash and is written
/// again by the next ingest.
#[async_trait]
pub trait KbStore: Send + Sync {
    /// The version marker (one consistent read); `None` before the first ingest.
    async fn version(&self) -> Result<Option<KbVersion>>;

    /// Every chunk of every document, ordered by document id and position.
    async fn load_all(&self) -> Result<Vec<Chunk>>;

    /// The manifest of every document, ordered by document id.
    async fn documents(&self) -> Result<Vec<DocumentManifest>>;

    /// The stored chunks of one document, by position (e.g. to reuse their embeddings).
    async fn document_chunks(&self, document_id: &str) -> Result<Vec<Chunk>> {
        let mut chunks = self.load_all().await?;
        chunks.retain(|c| c.document_id == document_id);
        Ok(chunks)
    }

    /// Writes `chunks` (positions `0..n`), deletes stored chunks at positions `>= n`, then
    /// writes the manifest.
    async fn replace_document(&self, manifest: &DocumentManifest, chunks: &[Chunk]) -> Result<()>;

    /// Deletes a document's chunks, then its manifest. Removing an unknown id is a no-op.
    async fn remove_document(&self, document_id: &str) -> Result<()>;

    /// Points the marker of `version` at its snapshot. `false`, and nothing written, when the
    /// marker has moved on to another version meanwhile (a newer ingest publishes its own).
    async fn set_snapshot(&self, version: u64, snapshot: &SnapshotRef) -> Result<bool>;

    /// Atomically adds 1 to the version and records the embedding model and dimensions; the
    /// new version has no snapshot yet.
    async fn bump_version(
        &self,
        embedding_model: Option<&str>,
        dimensions: Option<u32>,
    ) -> Result<KbVersion>;
}

/// `"<document_id>#<position>"`.
pub fn chunk_id(document_id: &str, position: u32) -> String {
    format!("{document_id}#{position}")
}

/// Hex SHA-256 of `text`'s UTF-8 bytes (chunk and file hashes, embedding-cache keys).
pub fn content_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}
