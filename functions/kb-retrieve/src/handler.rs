//! `POST /kb/search`: `{query, top_k?}` → `{results, mode, kb_version}`. Every failure is
//! mapped once, by `lambda_kit::http::ApiError`, to the error envelope.

use std::sync::Arc;
use std::time::Instant;

use domain::Error;
use knowledge::kb::DynamoKbStore;
use knowledge::kb::KbStore;
use knowledge::kb::snapshots::S3Snapshots;
use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use lambda_kit::bootstrap::Basics;
use lambda_kit::config::Env;
use lambda_kit::http::ApiError;
use lambda_kit::http::lambda::{error_response, json_body, json_response};
use lambda_kit::http::route_access::RouteAccess;
use lambda_kit::layers::{Handler, call, deadline_of, tool_function};
use lambda_kit::metrics::{Dimension, Metric, Metrics, Point};
use lambda_kit::secrets::SecretsCache;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bedrock_kb::BedrockKb;
use crate::config::{Backend, Config};
use crate::embed::QueryEmbedder;
use crate::index::{Hit, Mode};
use crate::live::{LiveIndex, SnapshotSource};
use crate::tokenize::normalize_query;

pub const MAX_QUERY_CHARS: usize = 2000;
pub const DEFAULT_TOP_K: usize = 6;
pub const MAX_TOP_K: usize = 20;

/// Clients, configuration and the loaded index, built once per container; clones share them.
#[derive(Clone)]
pub struct Deps {
    pub config: Arc<Config>,
    pub kb: Arc<LiveIndex>,
    pub embedder: Arc<QueryEmbedder>,
    /// Who may call; IAM-authorised callers only unless [`Deps::with_access`] says more.
    pub access: RouteAccess,
    /// Queries by mode and their latency.
    pub metrics: Metrics,
    /// Set with `KB_BACKEND=bedrock`: answers instead of the index.
    pub bedrock_kb: Option<Arc<BedrockKb>>,
}

impl Deps {
    /// The clients of a Lambda container, from the environment and the tool functions'
    /// common basics; the knowledge base is loaded here, during the init phase (unless
    /// Bedrock answers), and a failed load is retried by the first request.
    pub async fn from_env(env: &Env) -> Result<Self, Error> {
        let config = Config::from_env(env)?;
        let basics = Basics::from_env(env, "kb-retrieve").await?;
        let sdk = &basics.sdk;
        let store = Arc::new(DynamoKbStore::new(
            lambda_kit::aws::dynamodb(sdk),
            config.kb_table.clone(),
        ));
        let snapshots = config.snapshot_bucket.clone().map(|bucket| SnapshotSource {
            bucket: S3Snapshots::new(
                S3Snapshots::client(sdk),
                bucket,
                config.snapshot_prefix.clone(),
            ),
            rescore_max_bytes: config.rescore_max_bytes,
        });
        let mut deps = Deps::new(basics.http, basics.secrets, store, config)
            // Each built only when the configuration uses it (EMBEDDINGS_PROVIDER=bedrock,
            // KB_BACKEND=bedrock): building an SDK client reads its endpoint rules, a
            // quarter of a millisecond of the cold start.
            .with_bedrock(|| knowledge::embeddings::bedrock::client(sdk))
            .with_bedrock_kb(|| crate::bedrock_kb::client(sdk))
            .with_access(basics.access)
            .with_metrics(basics.metrics);
        if let Some(source) = snapshots {
            deps = deps.with_snapshots(source);
        }
        // Load the knowledge base during the init phase (unless Bedrock answers); if that
        // fails, the first request retries.
        if deps.bedrock_kb.is_none()
            && let Err(e) = deps.kb.get().await
        {
            tracing::error!(error = %e, "knowledge base not loaded at cold start");
        }
        Ok(deps)
    }

    pub fn new(
        http: reqwest::Client,
        secrets: SecretsCache,
        store: Arc<dyn KbStore>,
        config: Config,
    ) -> Self {
        let kb = LiveIndex::new(store, config.embedding_spec(), config.version_check);
        let embedder = QueryEmbedder::new(
            http,
            secrets,
            config.embeddings.clone(),
            config.embedding_retry,
            config.embedding_timeout,
            config.query_cache_size,
        );
        Self {
            config: Arc::new(config),
            kb: Arc::new(kb),
            embedder: Arc::new(embedder),
            access: RouteAccess::internal_only(),
            metrics: Metrics::discard(),
            bedrock_kb: None,
        }
    }

    /// Searches answered by a Bedrock knowledge base through the client `client` builds,
    /// when the configuration says `KB_BACKEND=bedrock` (otherwise it is not built).
    pub fn with_bedrock_kb(
        mut self,
        client: impl FnOnce() -> aws_sdk_bedrockagentruntime::Client,
    ) -> Self {
        if let Backend::Bedrock(config) = &self.config.backend {
            self.bedrock_kb = Some(Arc::new(BedrockKb::new(client(), config.clone())));
        }
        self
    }

    /// Queries and refusals counted in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.access = self.access.with_metrics(metrics.clone());
        self.metrics = metrics;
        self
    }

    /// Query embeddings from Bedrock through the client `client` builds, when the
    /// configuration says Bedrock (otherwise it is not built).
    pub fn with_bedrock(
        self,
        client: impl FnOnce() -> knowledge::embeddings::bedrock::Client,
    ) -> Self {
        self.embedder.use_bedrock(client);
        self
    }

    /// Versions with a published index snapshot are loaded from `source` (from the next
    /// load on; clones share it).
    pub fn with_snapshots(self, source: crate::live::SnapshotSource) -> Self {
        if !self.kb.set_snapshots(source) {
            tracing::warn!("index snapshots were configured already; keeping the first bucket");
        }
        self
    }

    /// With the admission rules of the deployment (`lambda_kit::http::route_access`).
    pub fn with_access(mut self, access: RouteAccess) -> Self {
        self.access = access;
        self
    }
}

/// Body of `POST /kb/search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchRequest {
    /// Not empty after normalisation, at most 2,000 characters.
    #[schemars(length(min = 1, max = MAX_QUERY_CHARS))]
    pub query: String,
    /// Results wanted: clamped to 1–20, 6 when left out.
    #[serde(default)]
    pub top_k: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResponse {
    pub results: Vec<Hit>,
    pub mode: Mode,
    /// The knowledge-base version searched; `null` before the first ingest and with the
    /// Bedrock backend.
    pub kb_version: Option<u64>,
}

/// The route this function serves (behind `/internal` for IAM callers).
pub const ROUTE: &str = "/kb/search";

/// The function as the runtime serves it: the shared layers (trace span, `POST` only, the
/// deadline, the access gate) around [`admitted`].
pub fn service(deps: Deps) -> Handler {
    let (access, fallback) = (deps.access.clone(), deps.config.deadline_fallback);
    tool_function(
        ROUTE,
        Method::POST,
        access,
        fallback,
        deps,
        |deps: Deps, req| async move { admitted(&deps, req).await },
    )
}

/// Serves one request through [`service`] (what tests and benches call).
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    call(service(deps.clone()), req).await
}

/// An admitted `POST`, run until the invocation's deadline.
async fn admitted(deps: &Deps, req: Request) -> Response<Body> {
    let deadline = deadline_of(&req, deps.config.deadline_fallback);
    let (query, top_k) = match parse(&req) {
        Ok(parsed) => parsed,
        Err(error) => return error_response(&error),
    };
    let started = Instant::now();
    let result = search(deps, &query, top_k, deadline).await;
    let mode = match &result {
        Ok(response) => response.mode.as_str(),
        Err(_) => "failed",
    };
    deps.metrics.emit(
        Point::new()
            .dimension(Dimension::Mode, mode)
            .count(Metric::KbQueries, 1)
            .millis(Metric::KbQueryLatency, started.elapsed()),
    );
    match result {
        Ok(response) => json_response(200, &response),
        Err(err) => error_response(&ApiError::from(&err)),
    }
}

/// The normalised query and the clamped `top_k`.
fn parse(req: &Request) -> Result<(String, usize), ApiError> {
    let body: SearchRequest = json_body(req)?;
    // serde also reads a struct from an array (`["text", 6]`); the contract is an object.
    if !body_is_object(req) {
        return Err(invalid("request body must be a JSON object"));
    }
    let query = normalize_query(&body.query);
    if query.is_empty() {
        return Err(invalid("query: must not be empty"));
    }
    if body.query.chars().count() > MAX_QUERY_CHARS {
        return Err(invalid(&format!(
            "query: at most {MAX_QUERY_CHARS} characters are allowed"
        )));
    }
    let top_k = body.top_k.map_or(DEFAULT_TOP_K, |k| {
        usize::try_from(k.clamp(1, MAX_TOP_K as i64)).unwrap_or(DEFAULT_TOP_K)
    });
    Ok((query, top_k))
}

fn body_is_object(req: &Request) -> bool {
    let bytes: &[u8] = match req.body() {
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    };
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

fn invalid(message: &str) -> ApiError {
    ApiError::from(&Error::Invalid(message.to_owned()))
}

pub async fn search(
    deps: &Deps,
    query: &str,
    top_k: usize,
    deadline: Instant,
) -> domain::Result<SearchResponse> {
    let started = Instant::now();
    if let Some(bedrock) = &deps.bedrock_kb {
        let results = bedrock.retrieve(query, top_k, deadline).await?;
        tracing::info!(
            mode = "bedrock",
            top_k,
            results = results.len(),
            query_chars = query.chars().count(),
            total_ms = started.elapsed().as_millis() as u64,
            "kb search"
        );
        return Ok(SearchResponse {
            results,
            mode: Mode::Bedrock,
            kb_version: None,
        });
    }
    let index = deps.kb.get().await?;
    // No point embedding the query when there are no vectors to compare it with.
    let embedding = if index.vector_dims().is_some() {
        deps.embedder.embed(query, deadline).await
    } else {
        None
    };
    let ranked_at = Instant::now();
    let (results, mode) = index.search(query, embedding.as_deref(), top_k);
    tracing::info!(
        mode = ?mode,
        top_k,
        results = results.len(),
        query_chars = query.chars().count(),
        kb_version = index.version(),
        rank_us = ranked_at.elapsed().as_micros() as u64,
        total_ms = started.elapsed().as_millis() as u64,
        "kb search"
    );
    Ok(SearchResponse {
        results,
        mode,
        kb_version: index.version(),
    })
}
