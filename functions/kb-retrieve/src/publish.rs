//! Publishing a version's index snapshot: built from the stored chunks exactly as a
//! retriever builds its index, uploaded under a key of its own, then named in the version
//! marker, so a retriever loads it in one read instead of scanning the table. Objects of
//! older snapshots are tagged superseded and go once they have been for the grace period
//! (`S3Snapshots::remove_stale`). `kb-ingest` runs it after each change.

use std::time::Duration;

use domain::{Error, Result};
use knowledge::kb::snapshots::S3Snapshots;
use knowledge::kb::{KbStore, SnapshotRef};
use time::OffsetDateTime;

use crate::index::{EmbeddingSpec, Index};
use crate::snapshot;

/// Older snapshots stay this long after they were superseded: a warm retriever may still be
/// reading.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3600);

/// The largest knowledge base one kb-retrieve function is measured for (100k chunks ×
/// 1536 dimensions in 512 MB; README, "How big a knowledge base").
pub const MEASURED_MAX_CHUNKS: usize = 100_000;

/// What [`publish`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub version: u64,
    pub at: SnapshotRef,
    /// Chunks in the snapshot.
    pub chunks: usize,
    pub index_bytes: usize,
    pub rescore_bytes: usize,
    /// Objects of older snapshots removed.
    pub removed: usize,
    /// The marker had moved on to a newer version before this snapshot was named in it.
    pub superseded: bool,
}

/// Publishes the snapshot of the current version; `None` before the first ingest.
pub async fn publish(
    store: &dyn KbStore,
    bucket: &S3Snapshots,
    grace: Duration,
    now: OffsetDateTime,
) -> Result<Option<Published>> {
    let Some(version) = store.version().await? else {
        return Ok(None);
    };
    let chunks = store.load_all().await?;
    let marker = version.clone();
    let built = tokio::task::spawn_blocking(move || {
        let spec = marker.embedding_model.clone().map(|model| EmbeddingSpec {
            model,
            dimensions: marker.dimensions,
        });
        let index = Index::build(chunks, Some(&marker), spec.as_ref());
        snapshot::encode(&index, &marker).map(|built| (built, index.len()))
    })
    .await
    .map_err(|e| Error::Corrupt(format!("building the index snapshot failed: {e}")))?;
    let (built, chunks) = built?;
    let at = bucket.keys(version.version, now, built.rescore.is_some());
    let (index_bytes, rescore_bytes) = (
        built.index.len(),
        built.rescore.as_ref().map_or(0, Vec::len),
    );
    bucket.put(&at.index_key, built.index).await?;
    if let (Some(key), Some(rows)) = (&at.rescore_key, built.rescore) {
        bucket.put(key, rows).await?;
    }
    let superseded = !store.set_snapshot(version.version, &at).await?;
    // Superseded: the marker moved on (a concurrent run); what it names is live, ours is not.
    let live = match superseded {
        false => Some(at.clone()),
        true => store.version().await?.and_then(|v| v.snapshot),
    };
    let keep: Vec<&SnapshotRef> = live.iter().collect();
    let removed = bucket.remove_stale(&keep, grace, now).await?;
    Ok(Some(Published {
        version: version.version,
        at,
        chunks,
        index_bytes,
        rescore_bytes,
        removed,
        superseded,
    }))
}
