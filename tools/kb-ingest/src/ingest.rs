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

use shared::embeddings::Embedder;
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
    /// The index snapshot published after the run (`--snapshot-bucket`).
    pub snapshot: Option<kb_retrieve::publish::Published>,
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
            let ids = suspicious_ids(&self.suspicious);
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
    fn of(embedder: Option<&Embedder>) -> Self {
        Self {
            model: embedder.map(|e| e.model().to_owned()),
            dimensions: embedder.and_then(Embedder::dimensions),
        }
    }

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

/// Everything a run will write, decided before it writes anything.
struct Plan<'a> {
    pending: Vec<Pending<'a>>,
    /// Stored documents to remove (only when pruning).
    removals: Vec<&'a str>,
    /// Embeddings already at hand, by chunk hash: stored ones that are reused.
    embedded: HashMap<String, Vec<f32>>,
    /// Chunk texts still to embed (hash, text), each once, in document order.
    queue: VecDeque<(String, String)>,
}

/// Ingests `sources` into `store`, embedding with `embedder` (`None`: text only).
pub async fn ingest(
    store: &dyn KbStore,
    embedder: Option<&Embedder>,
    sources: &[SourceFile],
    options: &IngestOptions,
    progress: &Progress,
) -> Result<IngestReport> {
    let started = Instant::now();
    let (stored, version) = tokio::try_join!(store.documents(), store.version())?;
    let ctx = Context::new(store, embedder, options, progress);
    let mut report = IngestReport {
        dry_run: options.dry_run,
        embedding_model: ctx.target.model.clone(),
        ..IngestReport::default()
    };

    if embedder.is_none() {
        progress.note("no embeddings endpoint: storing text only (BM25 mode)");
    }
    let plan = ctx
        .plan(sources, &stored, version.as_ref(), &mut report)
        .await?;
    if options.dry_run {
        ctx.preview(&plan, &mut report);
        report.elapsed = started.elapsed();
        return Ok(report);
    }

    let (mut report, dimensions, outcome) = ctx.write(plan, report).await;
    if report.changed() || (version.is_none() && !sources.is_empty()) {
        let marker = ctx.marker_embeddings(&report, &stored, version.as_ref(), dimensions);
        ctx.bump_version(&mut report, marker, &outcome).await?;
    }
    progress.finish();
    report.elapsed = started.elapsed();
    conclude(progress, report, outcome)
}

/// The run's result. A run that failed after writing says so: the next run finishes it.
fn conclude(
    progress: &Progress,
    report: IngestReport,
    outcome: Result<()>,
) -> Result<IngestReport> {
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

/// What every step of a run reads: the store and endpoint, the options, the progress
/// display, and the embeddings and chunking the stored documents should have.
struct Context<'a> {
    store: &'a dyn KbStore,
    embedder: Option<&'a Embedder>,
    options: &'a IngestOptions,
    progress: &'a Progress,
    target: Target,
    /// The chunker's fingerprint.
    chunking: String,
}

impl<'a> Context<'a> {
    fn new(
        store: &'a dyn KbStore,
        embedder: Option<&'a Embedder>,
        options: &'a IngestOptions,
        progress: &'a Progress,
    ) -> Self {
        Self {
            store,
            embedder,
            options,
            progress,
            target: Target::of(embedder),
            chunking: options.chunker.fingerprint(),
        }
    }
}

/// Planning: reads the table, writes nothing, and refuses a run before it writes anything.
impl Context<'_> {
    /// Compares the files with the stored documents and decides what to write, remove and
    /// embed. Suspicious and unchanged documents are recorded in `report`.
    async fn plan<'s>(
        &self,
        sources: &'s [SourceFile],
        stored: &'s [DocumentManifest],
        version: Option<&KbVersion>,
        report: &mut IngestReport,
    ) -> Result<Plan<'s>> {
        let pending = self.classify(sources, stored, report)?;
        self.refuse_suspicious(&report.suspicious)?;
        self.note_re_embedding(&pending, version);
        let removals = self.removals(sources, stored, !pending.is_empty())?;
        let embedded = self.reusable_embeddings(&pending).await?;
        let queue = self.embedding_queue(&pending, &embedded, report);
        Ok(Plan {
            pending,
            removals,
            embedded,
            queue,
        })
    }

    /// Reads and scans every file; the ones that differ from their stored manifest (or are
    /// new) come back chunked, the others are counted as unchanged.
    fn classify<'s>(
        &self,
        sources: &'s [SourceFile],
        stored: &'s [DocumentManifest],
        report: &mut IngestReport,
    ) -> Result<Vec<Pending<'s>>> {
        let by_id: HashMap<&str, &DocumentManifest> =
            stored.iter().map(|m| (m.document_id.as_str(), m)).collect();
        let mut pending = Vec::new();
        for source in sources {
            let text = read_text(source)?;
            // Every document, changed or not: the knowledge base as a whole is what the model
            // reads, and a strict run must refuse before anything is embedded or written.
            if let Some(found) = scan::scan(&source.document_id, &text) {
                self.progress
                    .note(&format!("warning: suspicious document {found}"));
                report.suspicious.push(found);
            }
            let previous = by_id.get(source.document_id.as_str()).copied();
            pending.extend(self.pending(source, &text, previous, report)?);
        }
        Ok(pending)
    }

    /// The document to write for `source`, or `None` (counted as unchanged) when its stored
    /// manifest `previous` is up to date.
    fn pending<'s>(
        &self,
        source: &'s SourceFile,
        text: &str,
        previous: Option<&'s DocumentManifest>,
        report: &mut IngestReport,
    ) -> Result<Option<Pending<'s>>> {
        let file_hash = content_hash(text);
        let reason = match previous {
            None => None,
            Some(m) => match change_reason(m, &file_hash, &self.chunking, &self.target) {
                None => {
                    report.unchanged.push(source.document_id.clone());
                    return Ok(None);
                }
                Some(reason) => Some(reason),
            },
        };
        self.refuse_dropping_embeddings(previous)?;
        let chunks = chunk_document(&source.document_id, text, &self.options.chunker);
        Ok(Some(Pending {
            source,
            file_hash,
            previous,
            reason,
            chunks,
        }))
    }

    /// Rewriting a document stored with embeddings as text only is most likely a missing
    /// endpoint setting, so it needs `--no-embeddings`.
    fn refuse_dropping_embeddings(&self, previous: Option<&DocumentManifest>) -> Result<()> {
        let drops_embeddings = previous.filter(|m| m.embedding_model.is_some());
        if let Some(m) =
            drops_embeddings.filter(|_| self.embedder.is_none() && !self.options.drop_embeddings)
        {
            return Err(Error::Config(format!(
                "document {} is stored with embeddings of {}, but no embeddings endpoint is configured; set EMBEDDINGS_BASE_URL (or OPENAI_BASE_URL), or pass --no-embeddings to store text only",
                m.document_id,
                Target::describe(m.embedding_model.as_deref(), m.dimensions)
            )));
        }
        Ok(())
    }

    /// A strict run stops when the injection scan found anything.
    fn refuse_suspicious(&self, suspicious: &[Suspicion]) -> Result<()> {
        if self.options.strict && !suspicious.is_empty() {
            let ids = suspicious_ids(suspicious);
            return Err(Error::Invalid(format!(
                "--strict: the injection scan found instruction-like text in {} documents ({}); nothing was ingested. Review them (see the warnings above), or run without --strict to ingest them with a warning",
                ids.len(),
                abbreviate(&ids)
            )));
        }
        Ok(())
    }

    /// Says once why documents are embedded again when the model changed.
    fn note_re_embedding(&self, pending: &[Pending<'_>], version: Option<&KbVersion>) {
        let re_embedding = pending
            .iter()
            .filter(|d| {
                d.previous
                    .is_some_and(|m| m.content_hash == d.file_hash && !self.target.matches(m))
            })
            .count();
        if re_embedding > 0 {
            let held = match version {
                Some(v) => format!(
                    "KB version {} holds {}",
                    v.version,
                    Target::describe(v.embedding_model.as_deref(), v.dimensions)
                ),
                None => "the stored documents hold other embeddings".to_owned(),
            };
            self.progress.note(&format!(
                "{held}; this run uses {}: {re_embedding} unchanged documents are embedded again",
                self.target.describe_self()
            ));
        }
    }

    /// Stored documents within the id prefix that are not among the files: removed when
    /// pruning. When anything is written, they (and, as a note, documents outside the
    /// prefix) are checked for other embeddings, so the knowledge base stays on one model.
    fn removals<'s>(
        &self,
        sources: &[SourceFile],
        stored: &'s [DocumentManifest],
        any_pending: bool,
    ) -> Result<Vec<&'s str>> {
        let listed: HashSet<&str> = sources.iter().map(|s| s.document_id.as_str()).collect();
        let (in_scope, outside): (Vec<&DocumentManifest>, Vec<&DocumentManifest>) = stored
            .iter()
            .filter(|m| !listed.contains(m.document_id.as_str()))
            .partition(|m| m.document_id.starts_with(&self.options.id_prefix));
        let removals: Vec<&str> = if self.options.prune {
            in_scope.iter().map(|m| m.document_id.as_str()).collect()
        } else {
            Vec::new()
        };
        let any_written = any_pending || !removals.is_empty();
        if any_written && !self.options.prune {
            self.refuse_stale(&in_scope)?;
        }
        if any_written {
            self.note_foreign(&outside);
        }
        Ok(removals)
    }

    /// Unlisted documents within the prefix that are kept must hold this run's embeddings.
    fn refuse_stale(&self, in_scope: &[&DocumentManifest]) -> Result<()> {
        let stale: Vec<&str> = in_scope
            .iter()
            .filter(|m| !self.target.matches(m))
            .map(|m| m.document_id.as_str())
            .collect();
        if !stale.is_empty() {
            return Err(Error::Invalid(format!(
                "{} stored documents not among the given files ({}) hold other embeddings than {}; ingest them too, or prune them (--prune), so the knowledge base stays on one embedding model",
                stale.len(),
                abbreviate(&stale),
                self.target.describe_self()
            )));
        }
        Ok(())
    }

    /// Documents outside the prefix are not this run's business, but worth a note.
    fn note_foreign(&self, outside: &[&DocumentManifest]) {
        let foreign = outside.iter().filter(|m| !self.target.matches(m)).count();
        if foreign > 0 {
            self.progress.note(&format!(
                "note: {foreign} documents outside the id prefix {:?} hold other embeddings than {}",
                self.options.id_prefix,
                self.target.describe_self()
            ));
        }
    }

    /// Stored embeddings of the pending documents that are of this run's model, by chunk
    /// hash, so that unchanged chunk texts are not embedded again.
    async fn reusable_embeddings(
        &self,
        pending: &[Pending<'_>],
    ) -> Result<HashMap<String, Vec<f32>>> {
        let mut embedded: HashMap<String, Vec<f32>> = HashMap::new();
        if self.embedder.is_none() {
            return Ok(embedded);
        }
        for doc in pending {
            if doc.previous.is_some_and(|m| self.target.matches(m)) {
                for chunk in self.store.document_chunks(&doc.source.document_id).await? {
                    if let Some(vector) = chunk.embedding {
                        embedded.entry(chunk.content_hash).or_insert(vector);
                    }
                }
            }
        }
        Ok(embedded)
    }

    /// The chunk texts without an embedding at hand, each once, in document order; counts
    /// the reused ones in `report`.
    fn embedding_queue(
        &self,
        pending: &[Pending<'_>],
        embedded: &HashMap<String, Vec<f32>>,
        report: &mut IngestReport,
    ) -> VecDeque<(String, String)> {
        let mut queue: VecDeque<(String, String)> = VecDeque::new();
        if self.embedder.is_none() {
            return queue;
        }
        let mut queued: HashSet<&str> = HashSet::new();
        for chunk in pending.iter().flat_map(|d| &d.chunks) {
            if embedded.contains_key(&chunk.content_hash) {
                report.embeddings_reused += 1;
            } else if queued.insert(&chunk.content_hash) {
                queue.push_back((chunk.content_hash.clone(), chunk.content.clone()));
            }
        }
        queue
    }
}

/// Carrying out a plan: writing it (or, in a dry run, describing it) and the version marker.
impl Context<'_> {
    /// A dry run: reports what [`Context::write`] would do.
    fn preview(&self, plan: &Plan<'_>, report: &mut IngestReport) {
        for doc in &plan.pending {
            self.progress.step(describe_write(doc, true));
            record_write(report, doc);
        }
        for id in &plan.removals {
            self.progress.step(format!("would remove {id}"));
            report.removed.push((*id).to_owned());
        }
        report.embeddings_computed = plan.queue.len();
    }

    /// Writes the plan. Returns the report of what was written (also when writing failed),
    /// the length of the embeddings written, and how the writing ended.
    async fn write(
        &self,
        plan: Plan<'_>,
        report: IngestReport,
    ) -> (IngestReport, Option<u32>, Result<()>) {
        let Plan {
            mut pending,
            removals,
            embedded,
            queue,
        } = plan;
        self.progress
            .start(u64::try_from(pending.len() + removals.len()).unwrap_or(u64::MAX));
        let mut run = Run {
            ctx: self,
            embedded,
            queue,
            report,
            dimensions: None,
        };
        let outcome = run.apply(&mut pending, &removals).await;
        (run.report, run.dimensions, outcome)
    }

    /// The embedding model and length the version marker names after this run: the
    /// marker's own when only removals happened, else this run's (`written`: the length
    /// of the embeddings written, else that of stored ones of the same model).
    fn marker_embeddings(
        &self,
        report: &IngestReport,
        stored: &[DocumentManifest],
        version: Option<&KbVersion>,
        written: Option<u32>,
    ) -> (Option<String>, Option<u32>) {
        let target = &self.target;
        let wrote_documents = !(report.added.is_empty() && report.updated.is_empty());
        match version {
            // Only removals: the stored embeddings are still those the marker names.
            Some(v) if !wrote_documents => (v.embedding_model.clone(), v.dimensions),
            _ => {
                let dimensions = written
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
        }
    }

    /// Bumps the version marker to `(model, dimensions)`. Failing to is the run's error,
    /// unless the run had already failed (`outcome`): then it is only logged.
    async fn bump_version(
        &self,
        report: &mut IngestReport,
        (model, dimensions): (Option<String>, Option<u32>),
        outcome: &Result<()>,
    ) -> Result<()> {
        let bumped = self.store.bump_version(model.as_deref(), dimensions).await;
        match (bumped, outcome) {
            (Ok(v), _) => report.version = Some(v),
            (Err(e), Ok(())) => return Err(e),
            (Err(e), Err(_)) => tracing::warn!(error = %e, "bumping the KB version failed too"),
        }
        Ok(())
    }
}

/// The part of a run that writes; keeps what it did in `report` even when it fails.
struct Run<'a> {
    ctx: &'a Context<'a>,
    embedded: HashMap<String, Vec<f32>>,
    /// Chunk texts still to embed (hash, text), in document order.
    queue: VecDeque<(String, String)>,
    report: IngestReport,
    /// Length of the embeddings written.
    dimensions: Option<u32>,
}

impl Run<'_> {
    async fn apply(&mut self, pending: &mut [Pending<'_>], removals: &[&str]) -> Result<()> {
        let ctx = self.ctx;
        for doc in pending.iter_mut() {
            if let Some(embedder) = ctx.embedder {
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
                .or(ctx.target.dimensions);
            if ctx.target.model.is_some() {
                self.dimensions = self.dimensions.or(dimensions);
            }
            let manifest = DocumentManifest {
                document_id: doc.source.document_id.clone(),
                content_hash: doc.file_hash.clone(),
                chunk_count: u32::try_from(doc.chunks.len()).unwrap_or(u32::MAX),
                source_path: doc.source.path.display().to_string(),
                chunking: ctx.chunking.clone(),
                embedding_model: ctx.target.model.clone(),
                dimensions: dimensions.filter(|_| ctx.target.model.is_some()),
                updated_at: now_rfc3339(),
            };
            ctx.store.replace_document(&manifest, &doc.chunks).await?;
            ctx.progress.step(describe_write(doc, false));
            record_write(&mut self.report, doc);
        }
        for id in removals {
            ctx.store.remove_document(id).await?;
            ctx.progress.step(format!("removed {id}"));
            self.report.removed.push((*id).to_owned());
        }
        Ok(())
    }

    async fn embed_next_batch(&mut self, embedder: &Embedder) -> Result<()> {
        let take = self.ctx.options.batch_size.max(1).min(self.queue.len());
        if take == 0 {
            return Err(Error::Upstream {
                service: "embeddings",
                message: "a chunk was left without an embedding".into(),
            });
        }
        let batch: Vec<(String, String)> = self.queue.drain(..take).collect();
        let texts: Vec<String> = batch.iter().map(|(_, text)| text.clone()).collect();
        self.ctx.progress.status(format!(
            "embedding {} chunks ({} computed so far)",
            texts.len(),
            self.report.embeddings_computed
        ));
        let deadline = Instant::now() + self.ctx.options.embed_timeout;
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

/// The ids of the documents the injection scan flagged.
fn suspicious_ids(suspicious: &[Suspicion]) -> Vec<&str> {
    suspicious.iter().map(|s| s.document_id.as_str()).collect()
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
