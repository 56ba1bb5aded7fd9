//! Configuration of the function, read once at cold start.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `KB_TABLE` | required | DynamoDB table of the knowledge base |
//! | `KB_VERSION_CHECK_SECS` | `5` | least time between two reads of the version marker (0: every query) |
//! | `KB_EMBEDDING_TIMEOUT_MS` | `1500` | time budget of a query embedding; then BM25 alone |
//! | `KB_QUERY_CACHE_SIZE` | `1024` | query embeddings kept in memory (LRU; 0: none) |
//! | `EMBEDDINGS_PROVIDER` | `openai` | `openai` (a server) or `bedrock` (Titan V2 on Bedrock) |
//! | `EMBEDDINGS_BASE_URL` | `OPENAI_BASE_URL` | embeddings server root; neither set: BM25 only |
//! | `EMBEDDINGS_MODEL` | `text-embedding-3-small` | must be the model the KB was ingested with |
//! | `EMBEDDINGS_DIMENSIONS` | the model's | requested vector length |
//! | `EMBEDDINGS_API_KEY_SECRET` | `OPENAI_API_KEY_SECRET` | secret holding the API key (optional) |
//! | `KB_BACKEND` | `index` | `index` (this function's index) or `bedrock` (a Bedrock knowledge base) |
//! | `KB_BEDROCK_KNOWLEDGE_BASE_ID` | required with `bedrock` | the knowledge base's id |
//! | `KB_BEDROCK_SEARCH_TYPE` | `auto` | `auto`, `hybrid` or `semantic` |
//! | `KB_BEDROCK_MAX_RESULTS` | `20` | results asked of Bedrock per query: `top_k`, at most this |
//!
//! `docs/configuration.md` is the reference; this table is the short form.

use std::time::Duration;

use domain::{Error, Result};
use knowledge::embeddings::EmbeddingsConfig;
use lambda_kit::config::Env;
use lambda_kit::upstream::RetryPolicy;

use crate::index::EmbeddingSpec;

pub const DEFAULT_VERSION_CHECK: Duration = Duration::from_secs(5);
pub const DEFAULT_EMBEDDING_TIMEOUT: Duration = Duration::from_millis(1500);
pub const DEFAULT_QUERY_CACHE_SIZE: usize = 1024;
/// Time budget of a request without a Lambda context (local runs, tests).
pub const DEFAULT_DEADLINE_FALLBACK: Duration = Duration::from_secs(25);

#[derive(Debug, Clone)]
pub struct Config {
    pub kb_table: String,
    pub version_check: Duration,
    pub embedding_timeout: Duration,
    pub query_cache_size: usize,
    /// `None`: no embeddings endpoint, BM25 only.
    pub embeddings: Option<EmbeddingsConfig>,
    /// Retries of the query embedding, inside `embedding_timeout`.
    pub embedding_retry: RetryPolicy,
    pub deadline_fallback: Duration,
    /// `KB_SNAPSHOT_BUCKET`: where `kb-ingest` publishes index snapshots; `None`: the
    /// chunks are scanned at every load.
    pub snapshot_bucket: Option<String>,
    /// `KB_SNAPSHOT_PREFIX`: the snapshots' key prefix in that bucket.
    pub snapshot_prefix: String,
    /// `KB_RESCORE_MAX_MB`: the largest rescoring rows read into memory.
    pub rescore_max_bytes: u64,
    /// `KB_BACKEND`: who answers the queries.
    pub backend: Backend,
}

/// Who answers a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// This function's own index of the knowledge-base table (and its snapshots).
    Index,
    /// An Amazon Bedrock knowledge base, through its Retrieve API.
    Bedrock(BedrockKbConfig),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedrockKbConfig {
    /// `KB_BEDROCK_KNOWLEDGE_BASE_ID`: ten letters and digits.
    pub knowledge_base_id: String,
    /// `KB_BEDROCK_SEARCH_TYPE`.
    pub search_type: BedrockSearchType,
    /// `KB_BEDROCK_MAX_RESULTS`: a query asks for its `top_k`, at most this many.
    pub max_results: usize,
}

/// How Bedrock searches its vector store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BedrockSearchType {
    /// Bedrock's choice for the store (hybrid where the store has a text index).
    Auto,
    /// Keywords and meaning; only stores with a filterable text field support it.
    Hybrid,
    /// Meaning alone.
    Semantic,
}

pub const DEFAULT_BEDROCK_MAX_RESULTS: usize = 20;

/// The snapshots' key prefix unless `KB_SNAPSHOT_PREFIX` says otherwise.
pub const DEFAULT_SNAPSHOT_PREFIX: &str = "kb-index/";
/// f16 rows of up to ~54k chunks × 1536 dimensions; above, the 8-bit codes rank alone
/// (`docs/configuration.md`, `KB_RESCORE_MAX_MB`).
pub const DEFAULT_RESCORE_MAX_MB: u64 = 160;

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        let kb_table = r.required(
            "KB_TABLE",
            "knowledge-base table; set by template.yaml, locally `source .local/run/env`",
        );
        let check_secs: u64 = r.parse_or("KB_VERSION_CHECK_SECS", DEFAULT_VERSION_CHECK.as_secs());
        let timeout_ms: u64 = r.parse_or(
            "KB_EMBEDDING_TIMEOUT_MS",
            DEFAULT_EMBEDDING_TIMEOUT.as_millis() as u64,
        );
        let query_cache_size = r.parse_or("KB_QUERY_CACHE_SIZE", DEFAULT_QUERY_CACHE_SIZE);
        let snapshot_bucket = r.optional("KB_SNAPSHOT_BUCKET").filter(|b| !b.is_empty());
        let snapshot_prefix = r.or("KB_SNAPSHOT_PREFIX", DEFAULT_SNAPSHOT_PREFIX);
        let rescore_max_mb: u64 = r.parse_or("KB_RESCORE_MAX_MB", DEFAULT_RESCORE_MAX_MB);
        let backend = r.or("KB_BACKEND", "index");
        let knowledge_base_id = r
            .optional("KB_BEDROCK_KNOWLEDGE_BASE_ID")
            .filter(|id| !id.trim().is_empty());
        let search_type = r.or("KB_BEDROCK_SEARCH_TYPE", "auto");
        let max_results: usize = r.parse_or("KB_BEDROCK_MAX_RESULTS", DEFAULT_BEDROCK_MAX_RESULTS);
        r.finish(())?;
        let backend = Backend::parse(&backend, knowledge_base_id, &search_type, max_results)?;
        let embeddings = EmbeddingsConfig::from_env(env)?;
        if timeout_ms == 0 {
            return Err(Error::Config(
                "KB_EMBEDDING_TIMEOUT_MS=0 is invalid: use a positive number of milliseconds"
                    .into(),
            ));
        }
        let mut config = Self::new(kb_table, embeddings);
        config.version_check = Duration::from_secs(check_secs);
        config.set_embedding_timeout(Duration::from_millis(timeout_ms));
        config.query_cache_size = query_cache_size;
        config.snapshot_bucket = snapshot_bucket;
        config.snapshot_prefix = snapshot_prefix;
        config.rescore_max_bytes = rescore_max_mb.saturating_mul(1024 * 1024);
        config.backend = backend;
        Ok(config)
    }

    /// Defaults for everything but the table and the embeddings endpoint (tests, benches).
    pub fn new(kb_table: impl Into<String>, embeddings: Option<EmbeddingsConfig>) -> Self {
        let mut config = Self {
            kb_table: kb_table.into(),
            version_check: DEFAULT_VERSION_CHECK,
            embedding_timeout: DEFAULT_EMBEDDING_TIMEOUT,
            query_cache_size: DEFAULT_QUERY_CACHE_SIZE,
            embeddings,
            embedding_retry: RetryPolicy::default(),
            deadline_fallback: DEFAULT_DEADLINE_FALLBACK,
            snapshot_bucket: None,
            snapshot_prefix: DEFAULT_SNAPSHOT_PREFIX.to_owned(),
            rescore_max_bytes: DEFAULT_RESCORE_MAX_MB * 1024 * 1024,
            backend: Backend::Index,
        };
        config.set_embedding_timeout(DEFAULT_EMBEDDING_TIMEOUT);
        config
    }

    /// Sets the query-embedding budget and a retry policy that fits inside it: a second
    /// attempt only after a quick failure (a 5xx or a refused connection).
    pub fn set_embedding_timeout(&mut self, timeout: Duration) {
        self.embedding_timeout = timeout;
        self.embedding_retry = RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(200),
            attempt_timeout: timeout,
        };
    }

    /// What stored embeddings must match to be used.
    pub fn embedding_spec(&self) -> Option<EmbeddingSpec> {
        self.embeddings.as_ref().map(|e| EmbeddingSpec {
            model: e.model.clone(),
            dimensions: e.dimensions,
        })
    }
}

impl Backend {
    fn parse(
        backend: &str,
        knowledge_base_id: Option<String>,
        search_type: &str,
        max_results: usize,
    ) -> Result<Self> {
        let bad = |message: String| Err(Error::Config(message));
        match backend.trim().to_ascii_lowercase().as_str() {
            "index" => return Ok(Self::Index),
            "bedrock" => {}
            other => {
                return bad(format!(
                    "KB_BACKEND={other} is unknown: use index or bedrock"
                ));
            }
        }
        let Some(id) = knowledge_base_id.map(|id| id.trim().to_owned()) else {
            return bad("KB_BACKEND=bedrock needs KB_BEDROCK_KNOWLEDGE_BASE_ID: the id of the knowledge base (template parameter KbBedrockKnowledgeBaseId)".into());
        };
        // The API's pattern: ten letters or digits.
        if id.len() != 10 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return bad(format!(
                "KB_BEDROCK_KNOWLEDGE_BASE_ID={id:?} is not a knowledge-base id (ten letters and digits, e.g. ABCDEFGH12)"
            ));
        }
        let search_type = match search_type.trim().to_ascii_lowercase().as_str() {
            "auto" => BedrockSearchType::Auto,
            "hybrid" => BedrockSearchType::Hybrid,
            "semantic" => BedrockSearchType::Semantic,
            other => {
                return bad(format!(
                    "KB_BEDROCK_SEARCH_TYPE={other} is unknown: use auto, hybrid or semantic"
                ));
            }
        };
        if !(1..=100).contains(&max_results) {
            return bad(format!(
                "KB_BEDROCK_MAX_RESULTS={max_results} is out of range: use 1 to 100"
            ));
        }
        Ok(Self::Bedrock(BedrockKbConfig {
            knowledge_base_id: id,
            search_type,
            max_results,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(pairs: &[(&str, &str)]) -> String {
        Config::from_env(&Env::from_pairs(pairs.iter().copied()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn defaults() {
        let config = Config::from_env(&Env::from_pairs([("KB_TABLE", "kb")]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.kb_table, "kb");
        assert_eq!(config.version_check, Duration::from_secs(5));
        assert_eq!(config.embedding_timeout, Duration::from_millis(1500));
        assert_eq!(config.query_cache_size, 1024);
        assert!(config.embeddings.is_none());
        assert!(config.embedding_spec().is_none());
    }

    #[test]
    fn embeddings_and_overrides() {
        let config = Config::from_env(&Env::from_pairs([
            ("KB_TABLE", "kb"),
            ("KB_VERSION_CHECK_SECS", "0"),
            ("KB_EMBEDDING_TIMEOUT_MS", "300"),
            ("KB_QUERY_CACHE_SIZE", "0"),
            ("OPENAI_BASE_URL", "https://api.openai.com"),
            ("EMBEDDINGS_DIMENSIONS", "256"),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.version_check, Duration::ZERO);
        assert_eq!(
            config.embedding_retry.attempt_timeout,
            Duration::from_millis(300)
        );
        assert_eq!(config.query_cache_size, 0);
        assert_eq!(
            config.embedding_spec(),
            Some(EmbeddingSpec {
                model: "text-embedding-3-small".into(),
                dimensions: Some(256)
            })
        );
    }

    #[test]
    fn bedrock_backend() {
        let table = ("KB_TABLE", "kb");
        let config = Config::from_env(&Env::from_pairs([
            table,
            ("KB_BACKEND", "bedrock"),
            ("KB_BEDROCK_KNOWLEDGE_BASE_ID", "ABCDEFGH12"),
            ("KB_BEDROCK_SEARCH_TYPE", "Hybrid"),
            ("KB_BEDROCK_MAX_RESULTS", "8"),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            config.backend,
            Backend::Bedrock(BedrockKbConfig {
                knowledge_base_id: "ABCDEFGH12".into(),
                search_type: BedrockSearchType::Hybrid,
                max_results: 8,
            })
        );
        let defaults =
            Config::from_env(&Env::from_pairs([table])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(defaults.backend, Backend::Index);
        let bedrock = ("KB_BACKEND", "bedrock");
        let id = ("KB_BEDROCK_KNOWLEDGE_BASE_ID", "ABCDEFGH12");
        assert!(err(&[table, bedrock]).contains("KB_BEDROCK_KNOWLEDGE_BASE_ID"));
        assert!(
            err(&[table, bedrock, ("KB_BEDROCK_KNOWLEDGE_BASE_ID", "kb/../x")])
                .contains("not a knowledge-base id")
        );
        assert!(err(&[table, ("KB_BACKEND", "opensearch")]).contains("KB_BACKEND"));
        assert!(
            err(&[table, bedrock, id, ("KB_BEDROCK_SEARCH_TYPE", "fuzzy")])
                .contains("KB_BEDROCK_SEARCH_TYPE")
        );
        assert!(
            err(&[table, bedrock, id, ("KB_BEDROCK_MAX_RESULTS", "0")])
                .contains("KB_BEDROCK_MAX_RESULTS")
        );
    }

    #[test]
    fn problems_name_the_variable() {
        assert!(err(&[]).contains("KB_TABLE"));
        let table = ("KB_TABLE", "kb");
        assert!(err(&[table, ("KB_VERSION_CHECK_SECS", "soon")]).contains("KB_VERSION_CHECK_SECS"));
        assert!(
            err(&[table, ("KB_EMBEDDING_TIMEOUT_MS", "0")]).contains("KB_EMBEDDING_TIMEOUT_MS")
        );
        assert!(err(&[table, ("KB_QUERY_CACHE_SIZE", "-1")]).contains("KB_QUERY_CACHE_SIZE"));
        assert!(
            err(&[
                table,
                ("EMBEDDINGS_BASE_URL", "http://x"),
                ("EMBEDDINGS_DIMENSIONS", "x")
            ])
            .contains("EMBEDDINGS_DIMENSIONS")
        );
    }
}
