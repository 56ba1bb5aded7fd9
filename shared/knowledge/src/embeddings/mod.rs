//! Embeddings from one of two providers (`EMBEDDINGS_PROVIDER`):
//! - `openai`: an OpenAI-compatible client (`POST {base}/v1/embeddings`): OpenAI, vLLM,
//!   Ollama, or the local server in `infra/local/embeddings_server.py` (all-MiniLM-L6-v2, or
//!   the multilingual Universal Sentence Encoder `make dev` runs).
//!   Calls go through [`lambda_kit::upstream::send`] (retries of 429/5xx/timeouts inside the
//!   deadline) and [`lambda_kit::upstream::read_json`] (502/504 mapping);
//! - `bedrock`: Amazon Bedrock's Titan Text Embeddings V2 ([`bedrock`], with the `bedrock`
//!   feature).
//!
//! [`Embedder`] is either. Batching is the caller's job: one call embeds the inputs it is
//! given.

#[cfg(feature = "bedrock")]
pub mod bedrock;

use std::time::Instant;

use serde::{Deserialize, Serialize};

use domain::{Error, Result};
use lambda_kit::config::Env;
use lambda_kit::secrets::SecretString;
use lambda_kit::upstream::{self, RetryPolicy};

/// Used when `EMBEDDINGS_MODEL` is unset.
pub const DEFAULT_EMBEDDINGS_MODEL: &str = "text-embedding-3-small";
/// Used when `EMBEDDINGS_MODEL` is unset and the provider is Bedrock.
pub const DEFAULT_BEDROCK_EMBEDDINGS_MODEL: &str = "amazon.titan-embed-text-v2:0";
/// The vector lengths Titan Text Embeddings V2 offers; the first is its default.
pub const BEDROCK_DIMENSIONS: [u32; 3] = [1024, 512, 256];
const SERVICE: &str = "embeddings";

/// Who computes embeddings (`EMBEDDINGS_PROVIDER`): an OpenAI-compatible `/v1/embeddings`
/// server, or Amazon Bedrock (Titan Text Embeddings V2).
pub type EmbeddingsProvider = domain::provider::Provider;

/// Where the vectors come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddingsEndpoint {
    /// An OpenAI-compatible `/v1/embeddings` server.
    Http {
        /// Server root, e.g. `https://api.openai.com` or `http://127.0.0.1:8088` (a trailing
        /// `/v1` is accepted too).
        base_url: String,
        /// Secrets Manager name of the API key; `None` for servers without authentication.
        api_key_secret: Option<String>,
    },
    /// Bedrock Runtime's `InvokeModel`, reached as the SDK configuration says (region,
    /// credentials, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`).
    Bedrock,
}

/// Where embeddings come from, read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsConfig {
    /// Where the vectors come from.
    pub endpoint: EmbeddingsEndpoint,
    /// The embeddings model.
    pub model: String,
    /// Requested vector length (`dimensions` request field); `None` = the model's own.
    /// Always set for Bedrock, so it is checked against the stored knowledge base.
    pub dimensions: Option<u32>,
}

impl EmbeddingsConfig {
    /// The server root of an OpenAI-compatible endpoint; `None` for Bedrock.
    pub fn base_url(&self) -> Option<&str> {
        match &self.endpoint {
            EmbeddingsEndpoint::Http { base_url, .. } => Some(base_url),
            EmbeddingsEndpoint::Bedrock => None,
        }
    }

    /// `EMBEDDINGS_PROVIDER` (`openai`, the default, or `bedrock`).
    ///
    /// `openai`: `EMBEDDINGS_BASE_URL` (else `OPENAI_BASE_URL`; neither set, or `none` →
    /// `Ok(None)`: BM25 mode), `EMBEDDINGS_MODEL` (default [`DEFAULT_EMBEDDINGS_MODEL`]),
    /// `EMBEDDINGS_DIMENSIONS` (optional, positive), `EMBEDDINGS_API_KEY_SECRET` (else
    /// `OPENAI_API_KEY_SECRET`; optional).
    ///
    /// `bedrock`: `EMBEDDINGS_MODEL` (default [`DEFAULT_BEDROCK_EMBEDDINGS_MODEL`]) and
    /// `EMBEDDINGS_DIMENSIONS` (one of [`BEDROCK_DIMENSIONS`], default 1024).
    pub fn from_env(env: &Env) -> Result<Option<Self>> {
        let mut r = env.reader();
        let provider = r.parse_or("EMBEDDINGS_PROVIDER", EmbeddingsProvider::OpenAi);
        // `none`: BM25 only even though OPENAI_BASE_URL is set (e.g. a chat-only server).
        let base_url = match r.optional("EMBEDDINGS_BASE_URL") {
            Some(url) if url.trim().eq_ignore_ascii_case("none") => None,
            Some(url) => Some(url),
            None => r.optional("OPENAI_BASE_URL"),
        };
        let model = r.or(
            "EMBEDDINGS_MODEL",
            match provider {
                EmbeddingsProvider::OpenAi => DEFAULT_EMBEDDINGS_MODEL,
                EmbeddingsProvider::Bedrock => DEFAULT_BEDROCK_EMBEDDINGS_MODEL,
            },
        );
        // 0 or unset: the model's own length.
        let dimensions = Some(r.parse_or("EMBEDDINGS_DIMENSIONS", 0u32)).filter(|&d| d > 0);
        let api_key_secret = r
            .optional("EMBEDDINGS_API_KEY_SECRET")
            .or_else(|| r.optional("OPENAI_API_KEY_SECRET"));
        let config = match provider {
            EmbeddingsProvider::OpenAi => base_url.map(|base_url| Self {
                endpoint: EmbeddingsEndpoint::Http {
                    base_url: base_url.trim().to_owned(),
                    api_key_secret,
                },
                model,
                dimensions,
            }),
            EmbeddingsProvider::Bedrock => {
                let dimensions = dimensions.unwrap_or(BEDROCK_DIMENSIONS[0]);
                if !BEDROCK_DIMENSIONS.contains(&dimensions) {
                    return Err(Error::Config(format!(
                        "EMBEDDINGS_DIMENSIONS={dimensions} is invalid with EMBEDDINGS_PROVIDER=bedrock: use 1024, 512 or 256"
                    )));
                }
                Some(Self {
                    endpoint: EmbeddingsEndpoint::Bedrock,
                    model,
                    dimensions: Some(dimensions),
                })
            }
        };
        r.finish(config)
    }
}

/// An embeddings client of either provider.
#[derive(Debug, Clone)]
pub enum Embedder {
    /// An OpenAI-compatible server.
    Http(EmbeddingsClient),
    /// Amazon Bedrock's Titan embeddings.
    #[cfg(feature = "bedrock")]
    Bedrock(bedrock::BedrockEmbeddings),
}

impl Embedder {
    /// One embedding per input, in input order, each of one common, finite length.
    pub async fn embed(&self, inputs: &[String], deadline: Instant) -> Result<Vec<Vec<f32>>> {
        match self {
            Self::Http(client) => client.embed(inputs, deadline).await,
            #[cfg(feature = "bedrock")]
            Self::Bedrock(client) => client.embed(inputs, deadline).await,
        }
    }

    /// The model the vectors come from.
    pub fn model(&self) -> &str {
        match self {
            Self::Http(client) => client.model(),
            #[cfg(feature = "bedrock")]
            Self::Bedrock(client) => client.model(),
        }
    }

    /// The requested vector length, if any.
    pub fn dimensions(&self) -> Option<u32> {
        match self {
            Self::Http(client) => client.dimensions(),
            #[cfg(feature = "bedrock")]
            Self::Bedrock(client) => Some(client.dimensions()),
        }
    }

    /// Where requests go, for progress output: the endpoint URL, or `Amazon Bedrock`.
    pub fn location(&self) -> &str {
        match self {
            Self::Http(client) => client.url(),
            #[cfg(feature = "bedrock")]
            Self::Bedrock(_) => "Amazon Bedrock",
        }
    }
}

/// A client of an OpenAI-compatible `/v1/embeddings`.
#[derive(Clone)]
pub struct EmbeddingsClient {
    http: reqwest::Client,
    url: String,
    model: String,
    dimensions: Option<u32>,
    api_key: Option<SecretString>,
    policy: RetryPolicy,
}

impl std::fmt::Debug for EmbeddingsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingsClient")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    #[serde(default)]
    data: Vec<EmbeddingEntry>,
}

#[derive(Deserialize)]
struct EmbeddingEntry {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    embedding: Vec<f32>,
}

impl EmbeddingsClient {
    /// A client of `config`'s server over `http`.
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        model: &str,
        dimensions: Option<u32>,
        api_key: Option<SecretString>,
    ) -> Self {
        Self {
            http,
            url: endpoint(base_url),
            model: model.to_owned(),
            dimensions,
            api_key,
            policy: RetryPolicy::default(),
        }
    }

    /// Replaces the default [`RetryPolicy`] (tests use short delays; batch jobs longer
    /// per-attempt timeouts).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The model the vectors come from.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The requested vector length, if any.
    pub fn dimensions(&self) -> Option<u32> {
        self.dimensions
    }

    /// The full endpoint URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One embedding per input, in input order. An empty `inputs` makes no request.
    pub async fn embed(&self, inputs: &[String], deadline: Instant) -> Result<Vec<Vec<f32>>> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let body = EmbeddingsRequest {
            model: &self.model,
            input: inputs,
            dimensions: self.dimensions,
        };
        let response = upstream::send(SERVICE, deadline, &self.policy, || {
            let request = self.http.post(&self.url).json(&body);
            match &self.api_key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            }
        })
        .await?;
        let parsed: EmbeddingsResponse = upstream::read_json(SERVICE, response).await?;
        self.in_input_order(parsed.data, inputs.len())
    }

    /// Places each returned vector at its `index` (servers may answer out of order) and
    /// checks that every input got exactly one vector of one common, non-zero length.
    fn in_input_order(&self, data: Vec<EmbeddingEntry>, expected: usize) -> Result<Vec<Vec<f32>>> {
        let bad = |message: String| Error::Upstream {
            service: SERVICE,
            message,
        };
        if data.len() != expected {
            return Err(bad(format!(
                "{} embeddings for {expected} inputs",
                data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, entry) in data.into_iter().enumerate() {
            let index = entry.index.unwrap_or(position);
            match slots.get_mut(index) {
                Some(slot @ None) => *slot = Some(entry.embedding),
                Some(Some(_)) => return Err(bad(format!("index {index} answered twice"))),
                None => return Err(bad(format!("index {index} out of range"))),
            }
        }
        let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        let len = vectors.first().map_or(0, Vec::len);
        if len == 0 || vectors.iter().any(|v| v.len() != len) {
            return Err(bad("embeddings of zero or differing lengths".into()));
        }
        if let Some(d) = self
            .dimensions
            .filter(|&d| usize::try_from(d).ok() != Some(len))
        {
            return Err(bad(format!("asked for {d} dimensions, got {len}")));
        }
        if vectors.iter().flatten().any(|x| !x.is_finite()) {
            return Err(bad("embedding with a non-finite value".into()));
        }
        Ok(vectors)
    }
}

/// `{base}/v1/embeddings`, without doubling a `/v1` the base already ends with.
fn endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_appends_v1_once() {
        assert_eq!(
            endpoint("https://api.openai.com"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:8088/"),
            "http://127.0.0.1:8088/v1/embeddings"
        );
    }

    #[test]
    fn config_from_env() {
        assert_eq!(EmbeddingsConfig::from_env(&Env::default()).ok(), Some(None));

        let env = Env::from_pairs([
            ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            ("OPENAI_API_KEY_SECRET", "openai-key"),
        ]);
        let config = EmbeddingsConfig::from_env(&env).ok().flatten();
        assert_eq!(
            config,
            Some(EmbeddingsConfig {
                endpoint: EmbeddingsEndpoint::Http {
                    base_url: "https://api.openai.com/v1".into(),
                    api_key_secret: Some("openai-key".into()),
                },
                model: DEFAULT_EMBEDDINGS_MODEL.into(),
                dimensions: None,
            })
        );

        let env = Env::from_pairs([
            ("OPENAI_BASE_URL", "https://api.openai.com"),
            ("EMBEDDINGS_BASE_URL", "http://127.0.0.1:8088"),
            ("EMBEDDINGS_MODEL", "all-minilm-l6-v2"),
            ("EMBEDDINGS_DIMENSIONS", "384"),
            ("EMBEDDINGS_API_KEY_SECRET", "emb-key"),
            ("OPENAI_API_KEY_SECRET", "openai-key"),
        ]);
        let config = EmbeddingsConfig::from_env(&env).ok().flatten();
        assert_eq!(
            config,
            Some(EmbeddingsConfig {
                endpoint: EmbeddingsEndpoint::Http {
                    base_url: "http://127.0.0.1:8088".into(),
                    api_key_secret: Some("emb-key".into()),
                },
                model: "all-minilm-l6-v2".into(),
                dimensions: Some(384),
            })
        );

        let env = Env::from_pairs([
            ("OPENAI_BASE_URL", "http://127.0.0.1:9101/v1"),
            ("EMBEDDINGS_BASE_URL", "none"),
        ]);
        assert_eq!(
            EmbeddingsConfig::from_env(&env).ok(),
            Some(None),
            "opted out"
        );

        let env = Env::from_pairs([
            ("EMBEDDINGS_BASE_URL", "http://x"),
            ("EMBEDDINGS_DIMENSIONS", "many"),
        ]);
        let err = EmbeddingsConfig::from_env(&env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("EMBEDDINGS_DIMENSIONS"), "{err}");
    }

    #[test]
    fn bedrock_embeddings_need_no_url_and_always_name_their_length() {
        let config =
            EmbeddingsConfig::from_env(&Env::from_pairs([("EMBEDDINGS_PROVIDER", "bedrock")]));
        assert_eq!(
            config.ok().flatten(),
            Some(EmbeddingsConfig {
                endpoint: EmbeddingsEndpoint::Bedrock,
                model: DEFAULT_BEDROCK_EMBEDDINGS_MODEL.into(),
                dimensions: Some(1024),
            })
        );
        let env = Env::from_pairs([
            ("EMBEDDINGS_PROVIDER", "bedrock"),
            ("EMBEDDINGS_DIMENSIONS", "256"),
        ]);
        let config = EmbeddingsConfig::from_env(&env).ok().flatten();
        assert_eq!(config.and_then(|c| c.dimensions), Some(256));
        for (name, value) in [
            ("EMBEDDINGS_DIMENSIONS", "384"),
            ("EMBEDDINGS_PROVIDER", "vertex"),
        ] {
            let env = Env::from_pairs([("EMBEDDINGS_PROVIDER", "bedrock"), (name, value)]);
            let err = EmbeddingsConfig::from_env(&env)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(name), "{err}");
        }
    }
}
