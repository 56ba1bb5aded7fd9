//! After a run that changed the knowledge base (or found its version without a snapshot),
//! the index snapshot of the version ([`kb_retrieve::publish`]), with a line of progress.

use std::time::{Duration, Instant};

use kb_retrieve::publish::Published;
use shared::Result;
use shared::kb::KbStore;
use shared::kb::snapshots::S3Snapshots;
use time::OffsetDateTime;

use crate::progress::Progress;

pub use kb_retrieve::publish::DEFAULT_GRACE;

/// Publishes the snapshot of the current version; `None` before the first ingest.
pub async fn publish(
    store: &dyn KbStore,
    bucket: &S3Snapshots,
    grace: Duration,
    progress: &Progress,
) -> Result<Option<Published>> {
    let started = Instant::now();
    let published =
        kb_retrieve::publish::publish(store, bucket, grace, OffsetDateTime::now_utc()).await?;
    if let Some(p) = &published {
        progress.note(&format!(
            "index snapshot of version {} → s3://{}/{} ({:.1} MB{}) in {:.1} s{}",
            p.version,
            bucket.bucket(),
            p.at.index_key,
            p.index_bytes as f64 / 1e6,
            if p.rescore_bytes > 0 {
                format!(" + {:.1} MB rescoring rows", p.rescore_bytes as f64 / 1e6)
            } else {
                String::new()
            },
            started.elapsed().as_secs_f64(),
            if p.superseded {
                "; a newer version was ingested meanwhile, which publishes its own"
            } else {
                ""
            },
        ));
    }
    Ok(published)
}
