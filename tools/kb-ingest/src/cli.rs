//! Command line: arguments (with environment fallbacks) and the wiring of one run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use shared::config::Env;
use shared::embeddings::bedrock::BedrockEmbeddings;
use shared::embeddings::{Embedder, EmbeddingsClient, EmbeddingsConfig, EmbeddingsEndpoint};
use shared::kb::chunker::{ChunkerConfig, DEFAULT_OVERLAP_CHARS, DEFAULT_TARGET_CHARS};
use shared::kb::snapshots::S3Snapshots;
use shared::kb::{DynamoKbStore, KbStore};
use shared::secrets::{AwsSecretSource, SecretString, SecretsCache};
use shared::upstream::RetryPolicy;
use shared::{Error, Result};

use crate::files;
use crate::ingest::{
    DEFAULT_BATCH_SIZE, DEFAULT_EMBED_TIMEOUT, IngestOptions, IngestReport, ingest,
};
use crate::progress::Progress;

/// Ingests Markdown and text files into the knowledge-base table: splits them into chunks,
/// embeds the chunks through an OpenAI-compatible /v1/embeddings endpoint or Amazon Bedrock
/// (if one is configured) and writes what changed. Re-running on unchanged files writes
/// nothing.
///
/// Embeddings endpoint: EMBEDDINGS_BASE_URL (else OPENAI_BASE_URL; neither → text only, BM25
/// mode), EMBEDDINGS_MODEL (default text-embedding-3-small), EMBEDDINGS_DIMENSIONS, and the
/// key from EMBEDDINGS_API_KEY / OPENAI_API_KEY or from the Secrets Manager secret named by
/// EMBEDDINGS_API_KEY_SECRET (else OPENAI_API_KEY_SECRET). With EMBEDDINGS_PROVIDER=bedrock:
/// Titan Text Embeddings V2 (default amazon.titan-embed-text-v2:0, 1024 dimensions, or 512
/// or 256) with the shell's AWS credentials.
///
/// Past about 100k chunks, let an Amazon Bedrock knowledge base answer instead: it reads
/// the same folder from S3 and names documents by file stem as this tool does
/// (docs/operations.md, "Moving the knowledge base to Amazon Bedrock Knowledge Bases").
#[derive(Debug, Clone, Parser)]
#[command(name = "kb-ingest", version)]
pub struct Args {
    /// Files or folders (walked recursively for *.md, *.markdown, *.txt). The document id is
    /// the file stem.
    #[arg(default_value = "infra/kb/docs")]
    pub paths: Vec<PathBuf>,

    /// Target chunk size in characters, heading path included.
    #[arg(long, env = "KB_CHUNK_SIZE", default_value_t = DEFAULT_TARGET_CHARS)]
    pub chunk_size: usize,

    /// Characters repeated from the end of the previous chunk of a section.
    #[arg(long, env = "KB_CHUNK_OVERLAP", default_value_t = DEFAULT_OVERLAP_CHARS)]
    pub chunk_overlap: usize,

    /// Chunk texts per embeddings request.
    #[arg(long, env = "KB_EMBED_BATCH_SIZE", default_value_t = DEFAULT_BATCH_SIZE)]
    pub batch_size: usize,

    /// DynamoDB table of the knowledge base.
    #[arg(long, env = "KB_TABLE")]
    pub table: String,

    /// Store text only (BM25 mode) even if an embeddings endpoint is configured; also allows
    /// rewriting documents that were stored with embeddings.
    #[arg(long)]
    pub no_embeddings: bool,

    /// Print what would change; write nothing and compute no embeddings.
    #[arg(long)]
    pub dry_run: bool,

    /// Remove stored documents (within --id-prefix) that are not among the files. Default:
    /// on when every path is a folder, off when a single file is named.
    #[arg(long, overrides_with = "no_prune")]
    pub prune: bool,

    /// Never remove documents (see --prune).
    #[arg(long, overrides_with = "prune")]
    pub no_prune: bool,

    /// Prefix for document ids (file stem appended); pruning stays within it, so several
    /// sources can share one table.
    #[arg(long, env = "KB_ID_PREFIX", default_value = "")]
    pub id_prefix: String,

    /// Overrides EMBEDDINGS_BASE_URL / OPENAI_BASE_URL (server root, e.g. http://127.0.0.1:8088).
    #[arg(long)]
    pub embeddings_base_url: Option<String>,

    /// Overrides EMBEDDINGS_MODEL.
    #[arg(long)]
    pub embeddings_model: Option<String>,

    /// Overrides EMBEDDINGS_DIMENSIONS.
    #[arg(long)]
    pub embeddings_dimensions: Option<u32>,

    /// Seconds for one embeddings batch, retries included.
    #[arg(long, default_value_t = DEFAULT_EMBED_TIMEOUT.as_secs())]
    pub embed_timeout_secs: u64,

    /// Every document is scanned for prompt-injection text before it is embedded; with
    /// --strict a run that finds any ingests nothing and fails (without: a warning).
    #[arg(
        long,
        env = "KB_STRICT",
        default_value_t = false,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub strict: bool,

    /// S3 bucket of index snapshots: after a run that changed the knowledge base (or whose
    /// version has none yet), its snapshot is published there for kb-retrieve.
    #[arg(long, env = "KB_SNAPSHOT_BUCKET")]
    pub snapshot_bucket: Option<String>,

    /// Key prefix of the snapshots in that bucket.
    #[arg(long, env = "KB_SNAPSHOT_PREFIX", default_value = kb_retrieve::config::DEFAULT_SNAPSHOT_PREFIX)]
    pub snapshot_prefix: String,

    /// Seconds an older snapshot is kept after a newer one is published.
    #[arg(long, env = "KB_SNAPSHOT_GRACE_SECS", default_value_t = crate::publish::DEFAULT_GRACE.as_secs())]
    pub snapshot_grace_secs: u64,
}

impl Args {
    /// `--prune`/`--no-prune`, else on exactly when every path is a folder.
    pub fn prune(&self) -> bool {
        if self.prune {
            true
        } else if self.no_prune {
            false
        } else {
            files::all_folders(&self.paths)
        }
    }

    pub fn options(&self) -> IngestOptions {
        IngestOptions {
            chunker: ChunkerConfig::new(self.chunk_size, self.chunk_overlap),
            batch_size: self.batch_size.max(1),
            prune: self.prune(),
            dry_run: self.dry_run,
            id_prefix: self.id_prefix.clone(),
            drop_embeddings: self.no_embeddings,
            embed_timeout: Duration::from_secs(self.embed_timeout_secs.max(1)),
            strict: self.strict,
        }
    }

    /// The embeddings endpoint from the flags and `env`; `None` for text only.
    pub fn embeddings_config(&self, env: &Env) -> Result<Option<EmbeddingsConfig>> {
        if self.no_embeddings {
            return Ok(None);
        }
        let mut config = EmbeddingsConfig::from_env(env)?;
        if let Some(url) = &self.embeddings_base_url {
            let mut c = config.unwrap_or(EmbeddingsConfig {
                endpoint: EmbeddingsEndpoint::Http {
                    base_url: String::new(),
                    api_key_secret: None,
                },
                model: shared::embeddings::DEFAULT_EMBEDDINGS_MODEL.into(),
                dimensions: None,
            });
            // The flag names an OpenAI-compatible server, whatever the environment said.
            let api_key_secret = match c.endpoint {
                EmbeddingsEndpoint::Http { api_key_secret, .. } => api_key_secret,
                EmbeddingsEndpoint::Bedrock => None,
            };
            c.endpoint = EmbeddingsEndpoint::Http {
                base_url: url.clone(),
                api_key_secret,
            };
            config = Some(c);
        }
        if let Some(c) = config.as_mut() {
            if let Some(model) = &self.embeddings_model {
                c.model = model.clone();
            }
            if let Some(d) = self.embeddings_dimensions {
                c.dimensions = Some(d).filter(|&d| d > 0);
            }
        }
        Ok(config)
    }
}

/// Retries for a batch job: patient, since nobody waits on a single request. One attempt may
/// take the whole `embed_timeout`: a CPU-bound local server can need a minute for a batch,
/// and resending it after a shorter timeout only queues the same work twice.
pub fn batch_retry_policy(embed_timeout: Duration) -> RetryPolicy {
    RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(10),
        attempt_timeout: embed_timeout,
    }
}

/// The API key: `EMBEDDINGS_API_KEY` / `OPENAI_API_KEY` directly, else the configured secret
/// (read with `read_secret`), else none.
pub async fn api_key<F, Fut>(
    config: &EmbeddingsConfig,
    env: &Env,
    read_secret: F,
) -> Result<Option<SecretString>>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<SecretString>>,
{
    if let Some(key) = direct_api_key(env) {
        return Ok(Some(key));
    }
    match &config.endpoint {
        EmbeddingsEndpoint::Http {
            api_key_secret: Some(name),
            ..
        } => read_secret(name.clone()).await.map(Some).map_err(|e| {
            Error::Config(format!(
                "{e}; the embeddings API key is read from the secret named by EMBEDDINGS_API_KEY_SECRET (else OPENAI_API_KEY_SECRET); set EMBEDDINGS_API_KEY instead, or unset both for a server without authentication"
            ))
        }),
        _ => Ok(None),
    }
}

/// A key given directly: `EMBEDDINGS_API_KEY`, else `OPENAI_API_KEY`.
pub fn direct_api_key(env: &Env) -> Option<SecretString> {
    env.get("EMBEDDINGS_API_KEY")
        .or_else(|| env.get("OPENAI_API_KEY"))
        .map(|key| SecretString::new(key.trim()))
}

/// One run of the command: builds the clients from the environment, ingests, and returns
/// the report (printed by `main`).
pub async fn run(args: &Args, env: &Env, progress: &Progress) -> Result<IngestReport> {
    let options = args.options();
    let sources = files::collect(&args.paths, &args.id_prefix)?;
    if sources.is_empty() && !args.prune {
        // An empty folder would otherwise prune every stored document by default.
        return Err(Error::Invalid(format!(
            "no documents (*.md, *.markdown, *.txt) under {}; pass --prune explicitly to remove every stored document{}",
            display_paths(&args.paths),
            if args.id_prefix.is_empty() {
                String::new()
            } else {
                format!(" with id prefix {:?}", args.id_prefix)
            }
        )));
    }
    let sdk = shared::aws::sdk_config().await;
    let store = DynamoKbStore::new(shared::aws::dynamodb(&sdk), &args.table);

    let embedder = match args.embeddings_config(env)? {
        None => None,
        Some(config) => match &config.endpoint {
            EmbeddingsEndpoint::Http { base_url, .. } => {
                let secrets = SecretsCache::new(
                    Arc::new(AwsSecretSource::new(shared::aws::secrets_manager(&sdk))),
                    Duration::from_secs(300),
                );
                let key =
                    api_key(&config, env, |name| async move { secrets.get(&name).await }).await?;
                let client = EmbeddingsClient::new(
                    shared::upstream::http_client()?,
                    base_url,
                    &config.model,
                    config.dimensions,
                    key,
                )
                .with_retry_policy(batch_retry_policy(options.embed_timeout));
                Some(Embedder::Http(client))
            }
            // With the caller's AWS credentials; the SDK retries throttling itself.
            EmbeddingsEndpoint::Bedrock => Some(Embedder::Bedrock(BedrockEmbeddings::new(
                shared::embeddings::bedrock::client(&sdk),
                &config.model,
                config
                    .dimensions
                    .unwrap_or(shared::embeddings::BEDROCK_DIMENSIONS[0]),
            ))),
        },
    };

    progress.note(&format!(
        "{} documents from {} → table {}; {}; prune {}{}",
        sources.len(),
        display_paths(&args.paths),
        args.table,
        match &embedder {
            Some(e) => format!("embeddings {} via {}", e.model(), e.location()),
            None => "no embeddings".into(),
        },
        if options.prune { "on" } else { "off" },
        if options.dry_run { "; dry run" } else { "" },
    ));
    let mut report = ingest(&store, embedder.as_ref(), &sources, &options, progress).await?;
    if let Some(bucket) = args.snapshot_bucket.as_deref().filter(|b| !b.is_empty())
        && !options.dry_run
    {
        let unpublished = match &report.version {
            Some(_) => true,
            None => store.version().await?.is_some_and(|v| v.snapshot.is_none()),
        };
        if unpublished {
            let bucket = S3Snapshots::new(S3Snapshots::client(&sdk), bucket, &args.snapshot_prefix);
            let grace = Duration::from_secs(args.snapshot_grace_secs);
            report.snapshot = crate::publish::publish(&store, &bucket, grace, progress).await?;
        }
    }
    Ok(report)
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
