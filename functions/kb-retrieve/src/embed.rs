//! Query embeddings: one call to the embeddings endpoint (an OpenAI-compatible server or
//! Amazon Bedrock) per new query, within a short budget, with an LRU cache of recent
//! queries. A failure is logged and answered with `None`, so the search falls back to BM25
//! instead of failing.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use knowledge::embeddings::bedrock::{BedrockEmbeddings, Client as BedrockRuntime};
use knowledge::embeddings::{Embedder, EmbeddingsClient, EmbeddingsConfig, EmbeddingsEndpoint};
use lambda_kit::secrets::SecretsCache;
use lambda_kit::upstream::RetryPolicy;
use lru::LruCache;

pub struct QueryEmbedder {
    http: reqwest::Client,
    secrets: SecretsCache,
    config: Option<EmbeddingsConfig>,
    retry: RetryPolicy,
    timeout: Duration,
    /// Normalised query text → embedding.
    cache: Option<Mutex<LruCache<String, Arc<[f32]>>>>,
    /// The Bedrock client, given once at cold start when embeddings come from Bedrock.
    bedrock: OnceLock<BedrockEmbeddings>,
}

impl QueryEmbedder {
    pub fn new(
        http: reqwest::Client,
        secrets: SecretsCache,
        config: Option<EmbeddingsConfig>,
        retry: RetryPolicy,
        timeout: Duration,
        cache_size: usize,
    ) -> Self {
        Self {
            http,
            secrets,
            config,
            retry,
            timeout,
            cache: NonZeroUsize::new(cache_size).map(|n| Mutex::new(LruCache::new(n))),
            bedrock: OnceLock::new(),
        }
    }

    /// Embeds through the client `client` builds when the configuration says Bedrock (else
    /// it is not built). Set once; a second call changes nothing.
    pub fn use_bedrock(&self, client: impl FnOnce() -> BedrockRuntime) {
        if let Some(config) = &self.config
            && config.endpoint == EmbeddingsEndpoint::Bedrock
        {
            let dimensions = config
                .dimensions
                .unwrap_or(knowledge::embeddings::BEDROCK_DIMENSIONS[0]);
            let _ = self
                .bedrock
                .set(BedrockEmbeddings::new(client(), &config.model, dimensions));
        }
    }

    pub fn is_configured(&self) -> bool {
        self.config.is_some()
    }

    /// The embedding of `query` (already normalised: it is the cache key and the text sent),
    /// or `None` when there is no endpoint or it failed within the budget.
    pub async fn embed(&self, query: &str, deadline: Instant) -> Option<Arc<[f32]>> {
        let config = self.config.as_ref()?;
        if let Some(hit) = self.cached(query) {
            return Some(hit);
        }
        let deadline = deadline.min(Instant::now() + self.timeout);
        let client = match &config.endpoint {
            EmbeddingsEndpoint::Http {
                base_url,
                api_key_secret,
            } => {
                let api_key = match api_key_secret {
                    None => None,
                    Some(name) => match self.secrets.get(name).await {
                        Ok(key) => Some(key),
                        Err(e) => {
                            tracing::warn!(error = %e, "embeddings API key unavailable; searching with BM25 only");
                            return None;
                        }
                    },
                };
                // Cheap: clones of the pooled HTTP client and a few strings; the key may rotate.
                Embedder::Http(
                    EmbeddingsClient::new(
                        self.http.clone(),
                        base_url,
                        &config.model,
                        config.dimensions,
                        api_key,
                    )
                    .with_retry_policy(self.retry),
                )
            }
            EmbeddingsEndpoint::Bedrock => match self.bedrock.get() {
                Some(client) => Embedder::Bedrock(client.clone()),
                None => {
                    tracing::warn!(
                        "embeddings come from Bedrock, but no Bedrock client was given; searching with BM25 only"
                    );
                    return None;
                }
            },
        };
        let input = [query.to_owned()];
        let started = Instant::now();
        let result = tokio::time::timeout_at(deadline.into(), client.embed(&input, deadline)).await;
        let embedding: Arc<[f32]> = match result {
            Ok(Ok(mut vectors)) if vectors.len() == 1 => vectors.remove(0).into(),
            Ok(Ok(vectors)) => {
                tracing::warn!(
                    count = vectors.len(),
                    "embeddings endpoint answered oddly; searching with BM25 only"
                );
                return None;
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, elapsed_ms = started.elapsed().as_millis() as u64, "query embedding failed; searching with BM25 only");
                return None;
            }
            Err(_) => {
                tracing::warn!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "query embedding timed out; searching with BM25 only"
                );
                return None;
            }
        };
        if let Some(cache) = &self.cache
            && let Ok(mut cache) = cache.lock()
        {
            cache.put(query.to_owned(), Arc::clone(&embedding));
        }
        Some(embedding)
    }

    fn cached(&self, query: &str) -> Option<Arc<[f32]>> {
        let mut cache = self.cache.as_ref()?.lock().ok()?;
        cache.get(query).cloned()
    }
}
