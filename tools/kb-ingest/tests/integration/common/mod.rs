//! Helpers of kb-ingest's tests: a folder of documents, a fake embeddings server whose
//! vectors are derived from each text's hash, and a store wrapper that records writes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shared::embeddings::EmbeddingsClient;
use shared::kb::{Chunk, DocumentManifest, DynamoKbStore, KbStore, KbVersion};
use shared::upstream::RetryPolicy;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub async fn dynamo_store() -> DynamoKbStore {
    DynamoKbStore::new(
        test_support::dynamodb().await,
        test_support::require_env("KB_TABLE"),
    )
}

/// A temporary folder of documents, deleted on drop.
pub struct Docs {
    pub dir: PathBuf,
}

impl Docs {
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(test_support::unique("kb-ingest-docs"));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Self { dir }
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Docs {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// The fake server's vector for `text`: `dims` values from its SHA-256, in [-0.5, 0.5].
pub fn fake_vector(text: &str, dims: usize) -> Vec<f32> {
    let digest = Sha256::digest(text.as_bytes());
    (0..dims)
        .map(|i| f32::from(digest[i % digest.len()]) / 255.0 - 0.5 + i as f32 * 1e-3)
        .collect()
}

/// Answers `/v1/embeddings` with [`fake_vector`]s, in reverse order (with indexes), and
/// fails with 500 for any batch containing `poison`.
pub struct HashEmbedder {
    pub dims: usize,
    pub poison: Option<String>,
    pub inputs: Arc<AtomicUsize>,
}

impl Respond for HashEmbedder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let texts: Vec<String> = body["input"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(poison) = &self.poison
            && texts.iter().any(|t| t.contains(poison.as_str()))
        {
            return ResponseTemplate::new(500).set_body_string("poisoned");
        }
        self.inputs.fetch_add(texts.len(), Ordering::SeqCst);
        let data: Vec<Value> = texts
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_vector(t, self.dims)}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": data}))
    }
}

pub struct FakeEmbeddings {
    pub server: MockServer,
    pub inputs: Arc<AtomicUsize>,
    pub dims: usize,
}

impl FakeEmbeddings {
    pub async fn start(dims: usize) -> Self {
        Self::start_with(dims, None).await
    }

    pub async fn start_with(dims: usize, poison: Option<&str>) -> Self {
        let server = MockServer::start().await;
        let inputs = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .respond_with(HashEmbedder {
                dims,
                poison: poison.map(str::to_owned),
                inputs: inputs.clone(),
            })
            .mount(&server)
            .await;
        Self {
            server,
            inputs,
            dims,
        }
    }

    pub fn client(&self, model: &str) -> EmbeddingsClient {
        client_for(&self.server.uri(), model)
    }

    /// Texts embedded so far.
    pub fn embedded(&self) -> usize {
        self.inputs.load(Ordering::SeqCst)
    }

    pub async fn requests(&self) -> usize {
        self.server.received_requests().await.map_or(0, |r| r.len())
    }
}

pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        attempt_timeout: Duration::from_secs(10),
    }
}

pub fn client_for(base: &str, model: &str) -> EmbeddingsClient {
    let http = shared::upstream::http_client().unwrap_or_else(|e| panic!("{e}"));
    EmbeddingsClient::new(http, base, model, None, None).with_retry_policy(fast_retries())
}

/// Delegates to DynamoDB and records every write call.
pub struct Recording {
    pub inner: DynamoKbStore,
    pub writes: Mutex<Vec<String>>,
}

impl Recording {
    pub fn new(inner: DynamoKbStore) -> Self {
        Self {
            inner,
            writes: Mutex::new(Vec::new()),
        }
    }

    pub fn take_writes(&self) -> Vec<String> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn record(&self, what: String) {
        self.writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(what);
    }
}

#[async_trait]
impl KbStore for Recording {
    async fn version(&self) -> shared::Result<Option<KbVersion>> {
        self.inner.version().await
    }
    async fn load_all(&self) -> shared::Result<Vec<Chunk>> {
        self.inner.load_all().await
    }
    async fn documents(&self) -> shared::Result<Vec<DocumentManifest>> {
        self.inner.documents().await
    }
    async fn document_chunks(&self, document_id: &str) -> shared::Result<Vec<Chunk>> {
        self.inner.document_chunks(document_id).await
    }
    async fn replace_document(
        &self,
        manifest: &DocumentManifest,
        chunks: &[Chunk],
    ) -> shared::Result<()> {
        self.record(format!("replace {}", manifest.document_id));
        self.inner.replace_document(manifest, chunks).await
    }
    async fn remove_document(&self, document_id: &str) -> shared::Result<()> {
        self.record(format!("remove {document_id}"));
        self.inner.remove_document(document_id).await
    }
    async fn set_snapshot(
        &self,
        version: u64,
        snapshot: &shared::kb::SnapshotRef,
    ) -> shared::Result<bool> {
        self.record(format!("snapshot {version}"));
        self.inner.set_snapshot(version, snapshot).await
    }
    async fn bump_version(
        &self,
        embedding_model: Option<&str>,
        dimensions: Option<u32>,
    ) -> shared::Result<KbVersion> {
        self.record("bump".into());
        self.inner.bump_version(embedding_model, dimensions).await
    }
}

/// The stored chunks of the documents whose id starts with `prefix`.
pub async fn chunks_with_prefix(store: &dyn KbStore, prefix: &str) -> Vec<Chunk> {
    store
        .load_all()
        .await
        .unwrap_or_else(|e| panic!("load_all: {e}"))
        .into_iter()
        .filter(|c| c.document_id.starts_with(prefix))
        .collect()
}

pub async fn manifests_with_prefix(store: &dyn KbStore, prefix: &str) -> Vec<DocumentManifest> {
    store
        .documents()
        .await
        .unwrap_or_else(|e| panic!("documents: {e}"))
        .into_iter()
        .filter(|m| m.document_id.starts_with(prefix))
        .collect()
}

pub async fn version_number(store: &dyn KbStore) -> u64 {
    store
        .version()
        .await
        .unwrap_or_else(|e| panic!("version: {e}"))
        .map_or(0, |v| v.version)
}
