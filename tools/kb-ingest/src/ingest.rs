//! Brings the knowledge-base table in line with a set of files.
//!
//! Per document, the stored manifest is compared with the file: the whole file's SHA-256,
//! the chunker fingerprint and the embedding model/dimensions. Equal → nothing is written.
//! Different → the file is re-chunked, only chunk texts without a stored embedding of the
//! same model are embedded (batches span documents), and the document is replaced.
//! Documents no longer among the files are removed when pruning. If anything changed, the
//! version marker is bumped once at the end. Every file is scanned for injection text first
//! ([`crate::scan`]); a strict run that finds any stops before anything is embedded.
//!
//! Failure guarantee: a document is written only after all its embeddings exist, and its
//! manifest last, so an embeddings failure leaves that document (and every later one) as it
//! was; documents already written stay written, the version is bumped for them, and the
//! error is returned. The next run picks up where this one stopped.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use shared::embeddings::EmbeddingsClient;
use shared::kb::chunker::{ChunkerConfig, chunk_document};
use shared::kb::{Chunk, DocumentManifest, KbStore, KbVersion, content_hash};
use shared::{Error, Result};

use crate::files::SourceFile;
use crate::progress::Progress;
use crate::scan::{self, Suspicion};

/// Texts per embeddings request: well under OpenAI's 2048-input limit, and small enough that
/// one slow request does not stall the progress display for long.
pub const DEFAULT_BATCH_SIZE: usize = 64;
/// Time for one embeddings batch, retries included (generous for CPU-bound local servers).
pub const DEFAULT_EMBED_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub chunker: ChunkerConfig,
    /// Texts per embeddings request (at least 1).
    pub batch_size: usize,
    /// Remove stored documents whose id starts with `id_prefix` but are not among the files.
    pub prune: bool,
    /// Plan and report only; reads the table, writes nothing, calls no embeddings endpoint.
    pub dry_run: bool,
    /// Prepended to every file stem; pruning and consistency checks stay within it.
    pub id_prefix: String,
    /// Allows a run without embeddings to rewrite documents stored with embeddings as text
    /// only (`--no-embeddings`); otherwise that is refused as a probable misconfiguration.
    pub drop_embeddings: bool,
    pub embed_timeout: Duration,
    /// Refuse the whole run when the injection scan finds anything (`--strict`); otherwise
    /// suspicious documents are ingested with a warning.
    pub strict: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            chunker: ChunkerConfig::default(),
            batch_size: DEFAULT_BATCH_SIZE,
            prune: false,
            dry_run: false,
            id_prefix: String::new(),
            drop_embeddings: false,
            embed_timeout: DEFAULT_EMBED_TIMEOUT,
            strict: false,
        }
    }
}

/// What a run did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestReport {
    pub dry_run: bool,
    /// `None`: text only (BM25 mode).
    pub embedding_model: Option<String>,
    pub added: Vec<String>,
    /// Document id and why it was rewritten.
    pub updated: Vec<(String, String)>,
    pub unchanged: Vec<String>,
    pub removed: Vec<String>,
    pub chunks_written: usize,
    pub embeddings_computed: usize,
    /// Chunks whose stored embedding was reused instead of computed again.
    pub embeddings_reused: usize,
    /// The marker after this run's bump; `None` when nothing changed (or a dry run).
    pub version: Option<KbVersion>,
    /// Documents the injection scan found instruction-like text in (ingested all the same,
    /// since the run was not strict).
    pub suspicious: Vec<Suspicion>,
    pub elapsed: Duration,
}

impl IngestReport {
    pub fn changed(&self) -> bool {
        !(self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty())
    }
}

impl fmt::Display for IngestReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match &self.embedding_model {
            Some(model) => format!("hybrid ({model})"),
            None => "text only (BM25)".to_owned(),
        };
        let verb = if self.dry_run {
            "dry run, would have: "
        } else {
            ""
        };
        write!(
            f,
            "{verb}{} added, {} updated, {} removed, {} unchanged; {} chunks written, {} embeddings computed ({} reused); {mode}",
            self.added.len(),
            self.updated.len(),
            self.removed.len(),
            self.unchanged.len(),
            self.chunks_written,
            self.embeddings_computed,
            self.embeddings_reused,
        )?;
        match &self.version {
            Some(v) => write!(f, "; KB version {}", v.version)?,
            None if !self.dry_run => f.write_str("; KB version unchanged")?,
            None => {}
        }
        if !self.suspicious.is_empty() {
            let ids: Vec<&str> = self
                .suspicious
                .iter()
                .map(|s| s.document_id.as_str())
                .collect();
            write!(
                f,
                "; warning: {} suspicious documents ({})",
                ids.len(),
                abbreviate(&ids)
            )?;
        }
        write!(f, "; {:.2} s", self.elapsed.as_secs_f64())
    }
}

/// The embedding model and length this run stores.
struct Target {
    model: Option<String>,
    dimensions: Option<u32>,
}

impl Target {
    fn matches(&self, m: &DocumentManifest) -> bool {
        m.embedding_model == self.model
            && (self.dimensions.is_none() || m.dimensions == self.dimensions)
    }

    fn describe(model: Option<&str>, dimensions: Option<u32>) -> String {
        match (model, dimensions) {
            (None, _) => "no embeddings".to_owned(),
            (Some(m), None) => m.to_owned(),
            (Some(m), Some(d)) => format!("{m} ({d} dimensions)"),
        }
    }

    fn describe_self(&self) -> String {
        Self::describe(self.model.as_deref(), self.dimensions)
    }
}

/// A document that needs writing.
struct Pending<'a> {
    source: &'a SourceFile,
    file_hash: String,
    previous: Option<&'a DocumentManifest>,
    reason: Option<String>,
    chunks: Vec<Chunk>,
}

/// Ingests `sources` into `store`, embedding with `embedder` (`None`: text only).
pub async fn ingest(
    store: &dyn KbStore,
    embedder: Option<&EmbeddingsClient>,
    sources: &[SourceFile],
    options: &IngestOptions,
    progress: &Progress,
) -> Result<IngestReport> {
    let started = Instant::now();
    let (stored, version) = tokio::try_join!(store.documents(), store.version())?;
    let target = Target {
        model: embedder.map(|e| e.model().to_owned()),
        dimensions: embedder.and_then(EmbeddingsClient::dimensions),
    };
    let chunking = options.chunker.fingerprint();
    let by_id: HashMap<&str, &DocumentManifest> =
        stored.iter().map(|m| (m.document_id.as_str(), m)).collect();
    let mut report = IngestReport {
        dry_run: options.dry_run,
        embedding_model: target.model.clone(),
        ..IngestReport::default()
    };

    if embedder.is_none() {
        progress.note("no embeddings endpoint: storing text only (BM25 mode)");
    }
    // Classify the files.
    let mut pending: Vec<Pending<'_>> = Vec::new();
    for source in sources {
        let text = read_text(source)?;
        // Every document, changed or not: the knowledge base as a whole is what the model
        // reads, and a strict run must refuse before anything is embedded or written.
        if let Some(found) = scan::scan(&source.document_id, &text) {
            progress.note(&format!("warning: suspicious document {found}"));
            report.suspicious.push(found);
        }
        let file_hash = content_hash(&text);
        let previous = by_id.get(source.document_id.as_str()).copied();
        let reason = match previous {
            None => None,
            Some(m) => match change_reason(m, &file_hash, &chunking, &target) {
                None => {
                    report.unchanged.push(source.document_id.clone());
                    continue;
                }
                Some(reason) => Some(reason),
            },
        };
        let drops_embeddings = previous.filter(|m| m.embedding_model.is_some());
        if let Some(m) = drops_embeddings.filter(|_| embedder.is_none() && !options.drop_embeddings)
        {
            return Err(Error::Config(format!(
                "document {} is stored with embeddings of {}, but no embeddings endpoint is configured; set EMBEDDINGS_BASE_URL (or OPENAI_BASE_URL), or pass --no-embeddings to store text only",
                m.document_id,
                Target::describe(m.embedding_model.as_deref(), m.dimensions)
            )));
        }
        let chunks = chunk_document(&source.document_id, &text, &options.chunker);
        pending.push(Pending {
            source,
            file_hash,
            previous,
            reason,
            chunks,
        });
    }

    if options.strict && !report.suspicious.is_empty() {
        let ids: Vec<&str> = report
            .suspicious
            .iter()
            .map(|s| s.document_id.as_str())
            .collect();
        return Err(Error::Invalid(format!(
            "--strict: the injection scan found instruction-like text in {} documents ({}); nothing was ingested. Review them (see the warnings above), or run without --strict to ingest them with a warning",
            ids.len(),
            abbreviate(&ids)
        )));
    }

    // Say once why documents are embedded again when the model changed.
    let re_embedding = pending
        .iter()
        .filter(|d| {
            d.previous
                .is_some_and(|m| m.content_hash == d.file_hash && !target.matches(m))
        })
        .count();
    if re_embedding > 0 {
        let held = match &version {
            Some(v) => format!(
                "KB version {} holds {}",
                v.version,
                Target::describe(v.embedding_model.as_deref(), v.dimensions)
            ),
            None => "the stored documents hold other embeddings".to_owned(),
        };
        progress.note(&format!(
            "{held}; this run uses {}: {re_embedding} unchanged documents are embedded again",
            target.describe_self()
        ));
    }

    // Stored documents that are not among the files.
    let listed: HashSet<&str> = sources.iter().map(|s| s.document_id.as_str()).collect();
    let (in_scope, outside): (Vec<&DocumentManifest>, Vec<&DocumentManifest>) = stored
        .iter()
        .filter(|m| !listed.contains(m.document_id.as_str()))
        .partition(|m| m.document_id.starts_with(&options.id_prefix));
    let removals: Vec<&str> = if options.prune {
        in_scope.iter().map(|m| m.document_id.as_str()).collect()
    } else {
        Vec::new()
    };
    let any_written = !pending.is_empty() || !removals.is_empty();
    if any_written && !options.prune {
        let stale: Vec<&str> = in_scope
            .iter()
            .filter(|m| !target.matches(m))
            .map(|m| m.document_id.as_str())
            .collect();
        if !stale.is_empty() {
            return Err(Error::Invalid(format!(
                "{} stored documents not among the given files ({}) hold other embeddings than {}; ingest them too, or prune them (--prune), so the knowledge base stays on one embedding model",
                stale.len(),
                abbreviate(&stale),
                target.describe_self()
            )));
        }
    }
    let foreign = outside.iter().filter(|m| !target.matches(m)).count();
    if any_written && foreign > 0 {
        progress.note(&format!(
            "note: {foreign} documents outside the id prefix {:?} hold other embeddings than {}",
            options.id_prefix,
            target.describe_self()
        ));
    }

    // Stored embeddings of unchanged chunk texts are reused.
    let mut embedded: HashMap<String, Vec<f32>> = HashMap::new();
    if embedder.is_some() {
        for doc in &pending {
            if doc.previous.is_some_and(|m| target.matches(m)) {
                for chunk in store.document_chunks(&doc.source.document_id).await? {
                    if let Some(vector) = chunk.embedding {
                        embedded.entry(chunk.content_hash).or_insert(vector);
                    }
                }
            }
        }
    }
    let mut queue: VecDeque<(String, String)> = VecDeque::new();
    let mut queued: HashSet<&str> = HashSet::new();
    if embedder.is_some() {
        for chunk in pending.iter().flat_map(|d| &d.chunks) {
            if embedded.contains_key(&chunk.content_hash) {
                report.embeddings_reused += 1;
            } else if queued.insert(&chunk.content_hash) {
                queue.push_back((chunk.content_hash.clone(), chunk.content.clone()));
            }
        }
    }

    if options.dry_run {
        for doc in &pending {
            progress.step(describe_write(doc, true));
            record_write(&mut report, doc);
        }
        for id in &removals {
            progress.step(format!("would remove {id}"));
            report.removed.push((*id).to_owned());
        }
        report.embeddings_computed = queue.len();
        report.elapsed = started.elapsed();
        return Ok(report);
    }

    progress.start(u64::try_from(pending.len() + removals.len()).unwrap_or(u64::MAX));
    let mut run = Run {
        store,
        embedder,
        options,
        progress,
        target: &target,
        embedded,
        queue,
        report,
        dimensions: None,
    };
    let outcome = run.apply(&mut pending, &removals).await;
    let Run {
        mut report,
        dimensions,
        ..
    } = run;

    if report.changed() || (version.is_none() && !sources.is_empty()) {
        let wrote_documents = !(report.added.is_empty() && report.updated.is_empty());
        let (model, dimensions) = match &version {
            // Only removals: the stored embeddings are still those the marker names.
            Some(v) if !wrote_documents => (v.embedding_model.clone(), v.dimensions),
            _ => {
                let dimensions = dimensions
                    .or_else(|| {
                        stored
                            .iter()
                            .find(|m| target.model.is_some() && m.embedding_model == target.model)
                            .and_then(|m| m.dimensions)
                    })
                    .or(target.dimensions);
                (
                    target.model.clone(),
                    dimensions.filter(|_| target.model.is_some()),
                )
            }
        };
        let bumped = store.bump_version(model.as_deref(), dimensions).await;
        match (bumped, &outcome) {
            (Ok(v), _) => report.version = Some(v),
            (Err(e), Ok(())) => return Err(e),
            (Err(e), Err(_)) => tracing::warn!(error = %e, "bumping the KB version failed too"),
        }
    }
    progress.finish();
    report.elapsed = started.elapsed();
    if let Err(e) = outcome {
        if report.changed() {
            progress.note(&format!(
                "stopped after writing {} documents (KB version bumped); run again to finish",
                report.added.len() + report.updated.len() + report.removed.len()
            ));
        }
        return Err(e);
    }
    Ok(report)
}

/// The part of a run that writes; keeps what it did in `report` even when it fails.
struct Run<'a> {
    store: &'a dyn KbStore,
    embedder: Option<&'a EmbeddingsClient>,
    options: &'a IngestOptions,
    progress: &'a Progress,
    target: &'a Target,
    embedded: HashMap<String, Vec<f32>>,
    /// Chunk texts still to embed (hash, text), in document order.
    queue: VecDeque<(String, String)>,
    report: IngestReport,
    /// Length of the embeddings written.
    dimensions: Option<u32>,
}

impl Run<'_> {
    async fn apply(&mut self, pending: &mut [Pending<'_>], removals: &[&str]) -> Result<()> {
        for doc in pending.iter_mut() {
            if let Some(embedder) = self.embedder {
                while doc
                    .chunks
                    .iter()
                    .any(|c| !self.embedded.contains_key(&c.content_hash))
                {
                    self.embed_next_batch(embedder).await?;
                }
                for chunk in &mut doc.chunks {
                    chunk.embedding = self.embedded.get(&chunk.content_hash).cloned();
                }
            }
            let dimensions = doc
                .chunks
                .first()
                .and_then(|c| c.embedding.as_ref())
                .and_then(|v| u32::try_from(v.len()).ok())
                .or(self.target.dimensions);
            if self.target.model.is_some() {
                self.dimensions = self.dimensions.or(dimensions);
            }
            let manifest = DocumentManifest {
                document_id: doc.source.document_id.clone(),
                content_hash: doc.file_hash.clone(),
                chunk_count: u32::try_from(doc.chunks.len()).unwrap_or(u32::MAX),
                source_path: doc.source.path.display().to_string(),
                chunking: self.options.chunker.fingerprint(),
                embedding_model: self.target.model.clone(),
                dimensions: dimensions.filter(|_| self.target.model.is_some()),
                updated_at: now_rfc3339(),
            };
            self.store.replace_document(&manifest, &doc.chunks).await?;
            self.progress.step(describe_write(doc, false));
            record_write(&mut self.report, doc);
        }
        for id in removals {
            self.store.remove_document(id).await?;
            self.progress.step(format!("removed {id}"));
            self.report.removed.push((*id).to_owned());
        }
        Ok(())
    }

    async fn embed_next_batch(&mut self, embedder: &EmbeddingsClient) -> Result<()> {
        let take = self.options.batch_size.max(1).min(self.queue.len());
        if take == 0 {
            return Err(Error::Upstream {
                service: "embeddings",
                message: "a chunk was left without an embedding".into(),
            });
        }
        let batch: Vec<(String, String)> = self.queue.drain(..take).collect();
        let texts: Vec<String> = batch.iter().map(|(_, text)| text.clone()).collect();
        self.progress.status(format!(
            "embedding {} chunks ({} computed so far)",
            texts.len(),
            self.report.embeddings_computed
        ));
        let deadline = Instant::now() + self.options.embed_timeout;
        let vectors = embedder.embed(&texts, deadline).await?;
        self.report.embeddings_computed += vectors.len();
        for ((hash, _), vector) in batch.into_iter().zip(vectors) {
            self.embedded.insert(hash, vector);
        }
        Ok(())
    }
}

fn change_reason(
    m: &DocumentManifest,
    file_hash: &str,
    chunking: &str,
    target: &Target,
) -> Option<String> {
    if m.content_hash != file_hash {
        Some("content changed".into())
    } else if m.chunking != chunking {
        Some(format!("chunking changed ({} → {chunking})", m.chunking))
    } else if !target.matches(m) {
        Some(format!(
            "embeddings changed ({} → {})",
            Target::describe(m.embedding_model.as_deref(), m.dimensions),
            target.describe_self()
        ))
    } else {
        None
    }
}

fn describe_write(doc: &Pending<'_>, dry_run: bool) -> String {
    let id = &doc.source.document_id;
    let n = doc.chunks.len();
    match (&doc.reason, dry_run) {
        (None, false) => format!("added {id} ({n} chunks)"),
        (None, true) => format!("would add {id} ({n} chunks)"),
        (Some(r), false) => format!("updated {id} ({n} chunks; {r})"),
        (Some(r), true) => format!("would update {id} ({n} chunks; {r})"),
    }
}

fn record_write(report: &mut IngestReport, doc: &Pending<'_>) {
    let id = doc.source.document_id.clone();
    match &doc.reason {
        None => report.added.push(id),
        Some(reason) => report.updated.push((id, reason.clone())),
    }
    report.chunks_written += doc.chunks.len();
}

fn read_text(source: &SourceFile) -> Result<String> {
    let text = std::fs::read_to_string(&source.path)
        .map_err(|e| Error::Invalid(format!("{}: {e}", source.path.display())))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

fn abbreviate(ids: &[&str]) -> String {
    let shown: Vec<&str> = ids.iter().take(5).copied().collect();
    if ids.len() > shown.len() {
        format!("{}, …", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
