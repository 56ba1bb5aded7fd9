//! The index a warm container serves, and its reloads.
//!
//! The first query loads the knowledge base. Afterwards a query reads the version marker only
//! when the last read is older than the check interval; a changed version loads every chunk
//! and builds a new [`Index`], which then replaces the old one in one pointer swap. One
//! check or reload runs at a time; queries that arrive meanwhile are served by the old index.
//! If the marker or the chunks cannot be read, the old index stays in service (logged).
//!
//! A version whose marker names an index snapshot (published by `kb-ingest`) is loaded from
//! it: one GET of the snapshot, one of its rescoring rows when they fit
//! `KB_RESCORE_MAX_MB`, and a decode. A snapshot that cannot be read or is damaged is logged
//! and the chunks are scanned instead, so a bad upload never takes search down.

use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use domain::{Error, Result};
use knowledge::kb::snapshots::S3Snapshots;
use knowledge::kb::{KbStore, KbVersion, SnapshotRef};

use crate::index::{EmbeddingSpec, Index};

/// Where the published snapshots are read from.
#[derive(Clone)]
pub struct SnapshotSource {
    pub bucket: S3Snapshots,
    /// Rescoring rows larger than this are not read: the codes' scores stand.
    pub rescore_max_bytes: u64,
}

struct Current {
    index: Arc<Index>,
    checked_at: Instant,
}

pub struct LiveIndex {
    store: Arc<dyn KbStore>,
    spec: Option<EmbeddingSpec>,
    check_every: Duration,
    /// Set once, before or after the first load (the next load uses it).
    snapshots: OnceLock<SnapshotSource>,
    current: RwLock<Option<Current>>,
    /// Held by the one task checking or reloading.
    refresh: tokio::sync::Mutex<()>,
}

impl LiveIndex {
    pub fn new(
        store: Arc<dyn KbStore>,
        spec: Option<EmbeddingSpec>,
        check_every: Duration,
    ) -> Self {
        Self {
            store,
            spec,
            check_every,
            snapshots: OnceLock::new(),
            current: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }

    /// Loads versions that have a snapshot from `source`; `false` if a source was set
    /// before (it stays).
    pub fn set_snapshots(&self, source: SnapshotSource) -> bool {
        self.snapshots.set(source).is_ok()
    }

    /// The index to answer a query with; loads or reloads it when due.
    pub async fn get(&self) -> Result<Arc<Index>> {
        if let Some(index) = self.fresh() {
            return Ok(index);
        }
        let _guard = match self.refresh.try_lock() {
            Ok(guard) => guard,
            // Someone else is checking: answer from the old index if there is one.
            Err(_) => match self.loaded() {
                Some(index) => return Ok(index),
                None => self.refresh.lock().await,
            },
        };
        if let Some(index) = self.fresh() {
            return Ok(index);
        }
        self.refresh().await
    }

    /// The loaded index, if it was checked within the interval.
    fn fresh(&self) -> Option<Arc<Index>> {
        let current = self.current.read().ok()?;
        let current = current.as_ref()?;
        (current.checked_at.elapsed() < self.check_every).then(|| Arc::clone(&current.index))
    }

    fn loaded(&self) -> Option<Arc<Index>> {
        let current = self.current.read().ok()?;
        current.as_ref().map(|c| Arc::clone(&c.index))
    }

    fn install(&self, index: Arc<Index>, checked_at: Instant) {
        if let Ok(mut current) = self.current.write() {
            *current = Some(Current { index, checked_at });
        }
    }

    /// Reads the marker and, when it moved (or nothing is loaded), loads a new index.
    async fn refresh(&self) -> Result<Arc<Index>> {
        let old = self.loaded();
        let checked_at = Instant::now();
        let version = match self.store.version().await {
            Ok(version) => version,
            Err(e) => return self.keep(old, checked_at, e, "reading the version marker"),
        };
        let number = version.as_ref().map(|v| v.version);
        if let Some(old) = old.as_ref().filter(|old| old.version() == number) {
            self.install(Arc::clone(old), checked_at);
            return Ok(Arc::clone(old));
        }
        let started = Instant::now();
        let from_snapshot = match (
            version.as_ref().and_then(|v| v.snapshot.as_ref()),
            self.snapshots.get(),
        ) {
            (Some(at), Some(source)) => match self.read_snapshot(source, at).await {
                Ok(index) => Some(index),
                Err(e) => {
                    tracing::warn!(error = %e, key = %at.index_key, "index snapshot not usable; scanning the chunks instead");
                    None
                }
            },
            _ => None,
        };
        let source = if from_snapshot.is_some() {
            "snapshot"
        } else {
            "scan"
        };
        let index = match from_snapshot {
            Some(index) => index,
            None => match self.scan(version).await {
                Ok(index) => index,
                Err((e, what)) => return self.keep(old, checked_at, e, what),
            },
        };
        let loaded_ms = started.elapsed().as_millis() as u64;
        let index = Arc::new(index);
        if let Some(reason) = index.no_vectors_reason() {
            tracing::info!(reason, "knowledge base searched with BM25 only");
        }
        tracing::info!(
            version = number,
            previous = old.as_ref().and_then(|o| o.version()),
            chunks = index.len(),
            dims = index.vector_dims(),
            index_bytes = index.approx_index_bytes(),
            rescored = index.vectors().is_some_and(|v| v.rescores()),
            source,
            load_ms = loaded_ms,
            "knowledge base loaded"
        );
        self.install(Arc::clone(&index), checked_at);
        Ok(index)
    }

    /// The index of `version` built from every chunk in the table; on failure, what failed.
    async fn scan(
        &self,
        version: Option<KbVersion>,
    ) -> std::result::Result<Index, (Error, &'static str)> {
        let chunks = self
            .store
            .load_all()
            .await
            .map_err(|e| (e, "loading the chunks"))?;
        let spec = self.spec.clone();
        tokio::task::spawn_blocking(move || Index::build(chunks, version.as_ref(), spec.as_ref()))
            .await
            .map_err(|e| {
                let e = Error::Corrupt(format!("building the knowledge-base index failed: {e}"));
                (e, "building the index")
            })
    }

    /// The index read from the snapshot `at` as it streams in, its rescoring rows too when
    /// they fit.
    async fn read_snapshot(&self, source: &SnapshotSource, at: &SnapshotRef) -> Result<Index> {
        let (_, index) = source.bucket.open(&at.index_key).await?;
        let rescore = match &at.rescore_key {
            Some(key) => match source.bucket.open(key).await? {
                (Some(size), _) if size > source.rescore_max_bytes => {
                    tracing::info!(
                        size,
                        limit = source.rescore_max_bytes,
                        "rescoring rows above KB_RESCORE_MAX_MB; vectors ranked by their 8-bit codes"
                    );
                    None
                }
                (_, rows) => Some(rows),
            },
            None => None,
        };
        let spec = self.spec.clone();
        tokio::task::spawn_blocking(move || crate::snapshot::read(index, rescore, spec.as_ref()))
            .await
            .map_err(|e| Error::Corrupt(format!("reading the index snapshot failed: {e}")))?
    }

    /// After a failed check: the old index stays (and is not checked again before the
    /// interval passes); without one, the query fails.
    fn keep(
        &self,
        old: Option<Arc<Index>>,
        checked_at: Instant,
        error: Error,
        what: &str,
    ) -> Result<Arc<Index>> {
        match old {
            Some(old) => {
                tracing::warn!(error = %error, "{what} failed; serving the loaded version");
                self.install(Arc::clone(&old), checked_at);
                Ok(old)
            }
            None => {
                tracing::error!(error = %error, "{what} failed; no knowledge base loaded");
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use knowledge::kb::{Chunk, DocumentManifest, KbVersion};

    use super::*;

    /// An in-memory store counting reads; `fail` makes every read fail.
    #[derive(Default)]
    struct MemoryStore {
        version: Mutex<Option<u64>>,
        chunks: Mutex<Vec<Chunk>>,
        fail: Mutex<bool>,
        version_reads: AtomicUsize,
        loads: AtomicUsize,
    }

    impl MemoryStore {
        fn publish(&self, version: u64, texts: &[&str]) {
            *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(version);
            *self.chunks.lock().unwrap_or_else(|e| e.into_inner()) = texts
                .iter()
                .enumerate()
                .map(|(i, t)| Chunk::new(&format!("doc{i}"), 0, (*t).to_owned()))
                .collect();
        }

        fn failing(&self, fail: bool) {
            *self.fail.lock().unwrap_or_else(|e| e.into_inner()) = fail;
        }

        fn check(&self) -> Result<()> {
            if *self.fail.lock().unwrap_or_else(|e| e.into_inner()) {
                Err(Error::Dynamo {
                    op: "Scan",
                    message: "unavailable".into(),
                })
            } else {
                Ok(())
            }
        }
    }

    #[async_trait]
    impl KbStore for MemoryStore {
        async fn version(&self) -> Result<Option<KbVersion>> {
            self.version_reads.fetch_add(1, Ordering::SeqCst);
            self.check()?;
            let version = *self.version.lock().unwrap_or_else(|e| e.into_inner());
            Ok(version.map(|version| KbVersion {
                version,
                embedding_model: None,
                dimensions: None,
                updated_at: String::new(),
                snapshot: None,
            }))
        }

        async fn load_all(&self) -> Result<Vec<Chunk>> {
            self.loads.fetch_add(1, Ordering::SeqCst);
            self.check()?;
            Ok(self
                .chunks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone())
        }

        async fn documents(&self) -> Result<Vec<DocumentManifest>> {
            Ok(Vec::new())
        }

        async fn replace_document(&self, _: &DocumentManifest, _: &[Chunk]) -> Result<()> {
            Ok(())
        }

        async fn remove_document(&self, _: &str) -> Result<()> {
            Ok(())
        }

        async fn set_snapshot(&self, _: u64, _: &knowledge::kb::SnapshotRef) -> Result<bool> {
            Err(Error::NotFound)
        }

        async fn bump_version(&self, _: Option<&str>, _: Option<u32>) -> Result<KbVersion> {
            Err(Error::NotFound)
        }
    }

    fn live(store: &Arc<MemoryStore>, every: Duration) -> LiveIndex {
        let store: Arc<dyn KbStore> = Arc::clone(store) as Arc<dyn KbStore>;
        LiveIndex::new(store, None, every)
    }

    #[tokio::test]
    async fn checks_at_most_once_per_interval() {
        let store = Arc::new(MemoryStore::default());
        store.publish(1, &["stopover rules"]);
        let kb = live(&store, Duration::from_millis(200));
        for _ in 0..10 {
            let index = kb.get().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(index.version(), Some(1));
        }
        assert_eq!(store.version_reads.load(Ordering::SeqCst), 1);
        assert_eq!(store.loads.load(Ordering::SeqCst), 1);

        store.publish(2, &["stopover rules", "fuel surcharges"]);
        assert_eq!(
            kb.get().await.ok().and_then(|i| i.version()),
            Some(1),
            "not yet due"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        let index = kb.get().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((index.version(), index.len()), (Some(2), 2));
        assert_eq!(store.loads.load(Ordering::SeqCst), 2);

        // Due again, same version: the marker is read, the chunks are not.
        tokio::time::sleep(Duration::from_millis(250)).await;
        kb.get().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(store.version_reads.load(Ordering::SeqCst), 3);
        assert_eq!(store.loads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failing_store_keeps_the_loaded_index() {
        let store = Arc::new(MemoryStore::default());
        store.failing(true);
        let kb = live(&store, Duration::ZERO);
        assert!(kb.get().await.is_err(), "nothing loaded yet");

        store.failing(false);
        store.publish(1, &["stopover rules"]);
        assert_eq!(kb.get().await.ok().and_then(|i| i.version()), Some(1));

        store.publish(2, &["other"]);
        store.failing(true);
        let index = kb.get().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(index.version(), Some(1), "old index served");

        store.failing(false);
        assert_eq!(kb.get().await.ok().and_then(|i| i.version()), Some(2));
    }

    #[tokio::test]
    async fn nothing_ingested_is_an_empty_index() {
        let store = Arc::new(MemoryStore::default());
        let kb = live(&store, Duration::from_secs(60));
        let index = kb.get().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(index.is_empty());
        assert_eq!(index.version(), None);
    }
}
