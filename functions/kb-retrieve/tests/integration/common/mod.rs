//! Test helpers: a knowledge-base table of its own per test in DynamoDB Local, a fake
//! embeddings endpoint (wiremock) answering from a text → vector map, requests and replies.
//!
//! Why a table per test: the version marker (`pk=KB, sk=VERSION`) is one item per table, and
//! `load_all` reads every chunk; in the shared `KB_TABLE` other tests' ingests would change
//! both under our feet. The tables are deleted at the end of each test, or when a failing
//! test drops them.
#![allow(dead_code)] // each test binary uses a different part

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kb_retrieve::{Config, Deps};
use knowledge::embeddings::{EmbeddingsConfig, EmbeddingsEndpoint};
use knowledge::kb::{Chunk, DocumentManifest, DynamoKbStore, KbStore};
use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request as WireRequest, Respond, ResponseTemplate};

pub const MODEL: &str = "test-embedder";
pub const DIMS: u32 = 4;

/// The sample corpus: document id, text, embedding (one chunk each).
pub fn corpus() -> Vec<(&'static str, &'static str, [f32; 4])> {
    vec![
        (
            "fuel-surcharges",
            "Fuel surcharges are carrier-imposed fees that some airlines add to award tickets. \
             British Airways and Lufthansa charge high surcharges on long-haul redemptions.",
            [1.0, 0.0, 0.0, 0.0],
        ),
        (
            "stopovers",
            "A stopover is a stay of more than 24 hours in a connecting city. Several programs \
             allow a free stopover on award tickets.",
            [0.0, 1.0, 0.0, 0.0],
        ),
        (
            "meilen-verfall",
            "Prämienmeilen bei Miles & More verfallen nach 36 Monaten. Mit der Kreditkarte \
             lässt sich der Verfall verhindern.",
            [0.0, 0.0, 1.0, 0.0],
        ),
        (
            "alliances",
            "Star Alliance, oneworld and SkyTeam are the three big airline alliances. Partner \
             awards can be booked with the miles of any member.",
            [0.0, 0.0, 0.0, 1.0],
        ),
    ]
}

/// A paraphrase of "fuel surcharges" sharing no word (stem) with any document.
pub const PARAPHRASE: &str = "hidden costs when redeeming points";

/// Query embeddings the fake endpoint knows; anything else gets [`UNKNOWN_QUERY`].
pub fn query_vectors() -> HashMap<String, Vec<f32>> {
    HashMap::from([
        (PARAPHRASE.to_owned(), vec![0.95, 0.05, 0.0, 0.0]),
        (
            "free stopover on award tickets".to_owned(),
            vec![0.1, 0.9, 0.1, 0.0],
        ),
    ])
}
pub const UNKNOWN_QUERY: [f32; 4] = [0.5, 0.5, 0.5, 0.5];

/// A knowledge-base table of the test's own, with the template's key schema.
pub struct KbTable {
    pub client: aws_sdk_dynamodb::Client,
    pub name: String,
    pub store: Arc<DynamoKbStore>,
    deleted: AtomicBool,
}

impl KbTable {
    pub async fn create() -> Self {
        Self::with_client(test_support::dynamodb().await).await
    }

    /// With a given client (e.g. one that counts requests).
    pub async fn with_client(client: aws_sdk_dynamodb::Client) -> Self {
        let name = test_support::create_pk_sk_table(&client, "kb-retrieve-test").await;
        let store = Arc::new(DynamoKbStore::new(client.clone(), name.clone()));
        Self {
            client,
            name,
            store,
            deleted: AtomicBool::new(false),
        }
    }

    /// A second handle on `other`'s table through `client` (a second retriever of it, e.g.
    /// one whose requests are counted); `other` deletes it.
    pub fn existing(other: &KbTable, client: aws_sdk_dynamodb::Client) -> Self {
        Self {
            store: Arc::new(DynamoKbStore::new(client.clone(), other.name.clone())),
            client,
            name: other.name.clone(),
            deleted: AtomicBool::new(true),
        }
    }

    /// Writes one document; `parts` are its chunks' texts and embeddings.
    pub async fn put_document(&self, document_id: &str, parts: &[(&str, Option<Vec<f32>>)]) {
        let chunks: Vec<Chunk> = parts
            .iter()
            .enumerate()
            .map(|(position, (text, embedding))| {
                let mut chunk = Chunk::new(document_id, position as u32, (*text).to_owned());
                chunk.embedding = embedding.clone();
                chunk
            })
            .collect();
        let embedded = parts.iter().any(|(_, e)| e.is_some());
        let manifest = DocumentManifest {
            document_id: document_id.to_owned(),
            content_hash: knowledge::kb::content_hash(document_id),
            chunk_count: chunks.len() as u32,
            source_path: format!("tests/{document_id}.md"),
            chunking: "test".into(),
            embedding_model: embedded.then(|| MODEL.to_owned()),
            dimensions: embedded.then_some(DIMS),
            updated_at: "2026-01-01T00:00:00Z".into(),
        };
        self.store
            .replace_document(&manifest, &chunks)
            .await
            .unwrap_or_else(|e| panic!("writing {document_id}: {e}"));
    }

    /// The sample corpus, with or without embeddings, and a version bump naming `model`.
    /// A document the sample corpus lacks, for a new version: what `lounge access` finds
    /// first once it is loaded.
    pub async fn put_lounges(&self) {
        self.put_document(
            "lounges",
            &[(
                "Lounge access comes with business class award tickets.",
                Some(vec![0.0, 0.5, 0.5, 0.0]),
            )],
        )
        .await;
    }

    pub async fn put_corpus(&self, embedded: bool, model: Option<&str>) -> u64 {
        for (id, text, vector) in corpus() {
            let embedding = embedded.then(|| vector.to_vec());
            self.put_document(id, &[(text, embedding)]).await;
        }
        self.bump(model).await
    }

    pub async fn bump(&self, model: Option<&str>) -> u64 {
        self.store
            .bump_version(model, model.map(|_| DIMS))
            .await
            .unwrap_or_else(|e| panic!("bump: {e}"))
            .version
    }

    pub async fn delete(&self) {
        if self.deleted.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Err(e) = self
            .client
            .delete_table()
            .table_name(&self.name)
            .send()
            .await
        {
            eprintln!(
                "deleting table {}: {}",
                self.name,
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            );
        }
    }
}

impl Drop for KbTable {
    /// A test that panicked did not get to `delete`: delete the table from a thread of its
    /// own (Drop cannot await, and the test's runtime may be gone).
    fn drop(&mut self) {
        if self.deleted.load(Ordering::SeqCst) {
            return;
        }
        let name = self.name.clone();
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            // A client of this runtime: the test's client is bound to the test's runtime.
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    let client = test_support::dynamodb().await;
                    let _ = client.delete_table().table_name(name).send().await;
                });
            }
        });
        let _ = cleanup.join();
    }
}

/// Answers `POST /v1/embeddings` from a map, in the OpenAI shape.
pub struct FromMap {
    pub vectors: HashMap<String, Vec<f32>>,
    pub unknown: Vec<f32>,
}

impl Respond for FromMap {
    fn respond(&self, request: &WireRequest) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let inputs: Vec<String> = body["input"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let embedding = self.vectors.get(text).unwrap_or(&self.unknown);
                json!({"object": "embedding", "index": index, "embedding": embedding})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "data": data, "model": MODEL,
            "usage": {"prompt_tokens": 1, "total_tokens": 1}
        }))
    }
}

/// A KB table, a fake embeddings endpoint with its key in moto, and the handler's deps.
pub struct Fake {
    pub kb: KbTable,
    pub embeddings: MockServer,
    pub api_key: String,
    pub deps: Deps,
}

impl Fake {
    /// With an embeddings endpoint (not yet answering: see [`Fake::embeddings_answer`]).
    pub async fn start(tweak: impl FnOnce(&mut Config)) -> Self {
        Self::build(KbTable::create().await, true, tweak).await
    }

    /// Without an embeddings endpoint: BM25 only.
    pub async fn without_endpoint() -> Self {
        Self::build(KbTable::create().await, false, |_| {}).await
    }

    pub async fn build(kb: KbTable, endpoint: bool, tweak: impl FnOnce(&mut Config)) -> Self {
        Self::build_with_store(kb, endpoint, |store| store, tweak).await
    }

    /// As [`Fake::build`], the retriever reading the table through `wrap(store)`.
    pub async fn build_with_store(
        kb: KbTable,
        endpoint: bool,
        wrap: impl FnOnce(Arc<dyn KbStore>) -> Arc<dyn KbStore>,
        tweak: impl FnOnce(&mut Config),
    ) -> Self {
        let embeddings = MockServer::start().await;
        let api_key = test_support::unique("sk-embeddings");
        let secret = test_support::create_secret("test/embeddings-key", &api_key).await;
        let endpoint_config = endpoint.then(|| EmbeddingsConfig {
            endpoint: EmbeddingsEndpoint::Http {
                base_url: embeddings.uri(),
                api_key_secret: Some(secret),
            },
            model: MODEL.into(),
            dimensions: Some(DIMS),
        });
        let mut config = Config::new(kb.name.clone(), endpoint_config);
        config.deadline_fallback = Duration::from_secs(10);
        tweak(&mut config);
        let secrets = SecretsCache::new(
            Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
            Duration::from_secs(60),
        );
        let http = lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("client: {e}"));
        let store: Arc<dyn KbStore> = kb.store.clone();
        let deps = Deps::new(http, secrets, wrap(store), config);
        Self {
            kb,
            embeddings,
            api_key,
            deps,
        }
    }

    /// The fake endpoint answers from [`query_vectors`].
    pub async fn embeddings_answer(&self) {
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .respond_with(FromMap {
                vectors: query_vectors(),
                unknown: UNKNOWN_QUERY.to_vec(),
            })
            .mount(&self.embeddings)
            .await;
    }

    /// The fake endpoint answers every request with `response`.
    pub async fn embeddings_reply(&self, response: ResponseTemplate) {
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .respond_with(response)
            .mount(&self.embeddings)
            .await;
    }

    pub async fn embedding_requests(&self) -> Vec<wiremock::Request> {
        self.embeddings
            .received_requests()
            .await
            .unwrap_or_default()
    }

    pub async fn call(&self, body: &Value) -> (u16, Value) {
        reply(kb_retrieve::handle(&self.deps, post(body)).await)
    }

    pub async fn search(&self, query: &str) -> Value {
        let (status, body) = self.call(&json!({"query": query})).await;
        assert_eq!(status, 200, "{query}: {body}");
        body
    }

    pub async fn finish(self) {
        self.kb.delete().await;
    }
}

pub fn post(body: &Value) -> Request {
    post_text(body.to_string())
}

/// A `POST` as the `/internal` route's IAM authorizer hands it on.
pub fn post_text(text: String) -> Request {
    let mut req = Request::new(Body::Text(text));
    *req.method_mut() = Method::POST;
    test_support::gateway::iam_authorized(req)
}

/// Status and JSON body of a response.
pub fn reply(response: Response<Body>) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = match response.body() {
        Body::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        Body::Binary(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, body)
}

/// Document ids of the results, in order.
pub fn documents(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter_map(|r| r["document_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The result for `document_id`.
pub fn result<'a>(body: &'a Value, document_id: &str) -> Option<&'a Value> {
    body["results"]
        .as_array()?
        .iter()
        .find(|r| r["document_id"] == json!(document_id))
}
