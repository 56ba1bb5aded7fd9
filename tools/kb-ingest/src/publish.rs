//! After a run that changed the knowledge base (or found its version without a snapshot),
//! the index snapshot of the version ([`kb_retrieve::publish`]), with a line of progress.

use std::time::{Duration, Instant};

use kb_retrieve::config::DEFAULT_RESCORE_MAX_MB;
use kb_retrieve::publish::{MEASURED_MAX_CHUNKS, Published};
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
    if let Some(p) = &published {
        for warning in size_warnings(p) {
            progress.note(&warning);
        }
    }
    Ok(published)
}

/// What a team should hear about the size of the knowledge base it just published.
fn size_warnings(p: &Published) -> Vec<String> {
    let mut warnings = Vec::new();
    if p.chunks > MEASURED_MAX_CHUNKS {
        warnings.push(format!(
            "warning: {} chunks is past the {MEASURED_MAX_CHUNKS} one kb-retrieve function is measured for; give it more memory, or let an Amazon Bedrock knowledge base answer (README, \"How big a knowledge base\")",
            p.chunks
        ));
    }
    let limit = DEFAULT_RESCORE_MAX_MB * 1024 * 1024;
    if u64::try_from(p.rescore_bytes).unwrap_or(u64::MAX) > limit {
        warnings.push(format!(
            "note: the rescoring rows ({:.0} MB) are above kb-retrieve's KB_RESCORE_MAX_MB default of {DEFAULT_RESCORE_MAX_MB}: unless you raise it (with the function's memory), its 8-bit codes rank alone",
            p.rescore_bytes as f64 / 1e6
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::kb::SnapshotRef;

    fn published(chunks: usize, rescore_bytes: usize) -> Published {
        Published {
            version: 3,
            at: SnapshotRef {
                index_key: "kb-index/v3/index.kbs".into(),
                rescore_key: None,
            },
            chunks,
            index_bytes: 1,
            rescore_bytes,
            removed: 0,
            superseded: false,
        }
    }

    #[test]
    fn large_knowledge_bases_are_told_what_to_expect() {
        assert!(size_warnings(&published(168, 200_000)).is_empty());
        let big = size_warnings(&published(120_000, 369_000_000));
        assert_eq!(big.len(), 2, "{big:?}");
        assert!(
            big[0].contains("120000 chunks") && big[0].contains("Bedrock"),
            "{big:?}"
        );
        assert!(
            big[1].contains("369 MB") && big[1].contains("KB_RESCORE_MAX_MB"),
            "{big:?}"
        );
        let codes_only = size_warnings(&published(60_000, 184_000_000));
        assert_eq!(codes_only.len(), 1, "{codes_only:?}");
    }
}
