//! Index snapshots in S3 (moto): a retriever loads a published snapshot instead of scanning
//! the table and answers as a scan would; a damaged snapshot is refused and the scan
//! answers; a new version's snapshot is picked up on reload, and queries are answered from
//! the loaded version while that reload runs; superseded objects are tagged and kept for the
//! grace period from then.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{Fake, KbTable, documents};
use async_trait::async_trait;
use kb_retrieve::live::SnapshotSource;
use kb_retrieve::publish::{DEFAULT_GRACE, publish};
use knowledge::kb::snapshots::S3Snapshots;
use knowledge::kb::{Chunk, DocumentManifest, KbStore, KbVersion, SnapshotRef};
use serde_json::json;
use time::OffsetDateTime;

/// The local snapshot bucket under a prefix of the test's own.
async fn bucket() -> S3Snapshots {
    let sdk = lambda_kit::aws::sdk_config().await;
    S3Snapshots::new(
        S3Snapshots::client(&sdk),
        test_support::require_env("KB_SNAPSHOT_BUCKET"),
        format!("{}/", test_support::unique("kb-snapshots-test")),
    )
}

/// A retriever of `fake`'s table that loads snapshots from `bucket`.
fn with_snapshots(fake: Fake, bucket: &S3Snapshots) -> Fake {
    let source = SnapshotSource {
        bucket: bucket.clone(),
        rescore_max_bytes: 1 << 20,
    };
    Fake {
        deps: fake.deps.clone().with_snapshots(source),
        ..fake
    }
}

/// The sample corpus stored and its snapshot published; `fake`'s retriever loads it from
/// `bucket` and answers with its version.
async fn serving_the_corpus(fake: Fake, bucket: &S3Snapshots) -> (Fake, u64, SnapshotRef) {
    fake.embeddings_answer().await;
    let version = fake.kb.put_corpus(true, Some(common::MODEL)).await;
    let at = published(fake.kb.store.as_ref(), bucket).await;
    let fake = with_snapshots(fake, bucket);
    assert_eq!(
        fake.search("lounge access").await["kb_version"],
        json!(version)
    );
    (fake, version, at)
}

async fn published(store: &dyn KbStore, bucket: &S3Snapshots) -> knowledge::kb::SnapshotRef {
    let done = publish(store, bucket, DEFAULT_GRACE, OffsetDateTime::now_utc())
        .await
        .unwrap_or_else(|e| panic!("publish: {e}"))
        .unwrap_or_else(|| panic!("no version to publish"));
    assert!(!done.superseded);
    done.at
}

#[tokio::test]
async fn a_published_snapshot_is_loaded_instead_of_the_table_and_answers_alike() {
    let bucket = bucket().await;
    // The reference: a retriever that scans.
    let scanning = Fake::start(|c| c.version_check = Duration::ZERO).await;
    scanning.embeddings_answer().await;
    let version = scanning.kb.put_corpus(true, Some(common::MODEL)).await;
    let at = published(scanning.kb.store.as_ref(), &bucket).await;
    assert!(at.rescore_key.is_some());
    let marker = scanning
        .kb
        .store
        .version()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(marker.and_then(|m| m.snapshot), Some(at.clone()));
    let queries = [
        "fuel surcharges",
        common::PARAPHRASE,
        "Meilen verfallen",
        "alliances",
    ];
    let mut expected = Vec::new();
    for q in queries {
        expected.push(scanning.search(q).await);
    }

    // A second retriever of the same table, cold, with the snapshot bucket; its DynamoDB
    // requests are counted.
    let (client, counter) = test_support::counted_dynamodb().await;
    let fresh = Fake::build(common::KbTable::existing(&scanning.kb, client), true, |c| {
        c.version_check = Duration::from_secs(60)
    })
    .await;
    fresh.embeddings_answer().await;
    let from_snapshot = with_snapshots(fresh, &bucket);
    // Proof that it did not scan: a chunk deleted behind the marker's back (no new version)
    // is still found, as the snapshot holds it.
    from_snapshot
        .kb
        .store
        .remove_document("alliances")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    counter.take();
    for (q, want) in queries.iter().zip(&expected) {
        let got = from_snapshot.search(q).await;
        assert_eq!(got["kb_version"], json!(version));
        assert_eq!(documents(&got), documents(want), "{q}: {got}");
        assert_eq!(got["mode"], want["mode"], "{q}");
    }
    assert_eq!(counter.take(), 1, "the marker read only: no Scan");
    scanning.finish().await;
}

#[tokio::test]
async fn a_damaged_snapshot_is_refused_and_the_scan_answers() {
    let bucket = bucket().await;
    let (client, counter) = test_support::counted_dynamodb().await;
    let kb = common::KbTable::with_client(client).await;
    let fake = Fake::build(kb, true, |c| c.version_check = Duration::from_secs(60)).await;
    fake.embeddings_answer().await;
    fake.kb.put_corpus(true, Some(common::MODEL)).await;
    let at = published(fake.kb.store.as_ref(), &bucket).await;
    // Cut short, as an interrupted copy would leave it.
    let whole = match bucket.get(&at.index_key, None).await {
        Ok(knowledge::kb::snapshots::Fetched::Bytes(bytes)) => bytes,
        _ => panic!("snapshot not readable"),
    };
    bucket
        .put(&at.index_key, whole[..whole.len() / 2].to_vec())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let fake = with_snapshots(fake, &bucket);
    counter.take();
    let body = fake.search("fuel surcharges").await;
    assert_eq!(documents(&body)[0], "fuel-surcharges", "{body}");
    assert_eq!(body["mode"], json!("hybrid"));
    // The marker, then the Scan segments of the fallback.
    assert!(counter.take() >= 2, "the table was not scanned");
    fake.finish().await;
}

#[tokio::test]
async fn a_new_versions_snapshot_is_picked_up_on_reload() {
    let bucket = bucket().await;
    let fake = Fake::start(|c| c.version_check = Duration::ZERO).await;
    let (fake, _, first_at) = serving_the_corpus(fake, &bucket).await;

    fake.kb.put_lounges().await;
    let second = fake.kb.bump(Some(common::MODEL)).await;
    let second_at = published(fake.kb.store.as_ref(), &bucket).await;
    assert_ne!(
        first_at, second_at,
        "a version's objects have keys of their own"
    );
    let body = fake.search("lounge access").await;
    assert_eq!(body["kb_version"], json!(second), "{body}");
    assert_eq!(documents(&body)[0], "lounges", "{body}");
    // Within the grace period the older snapshot stays (a warm retriever may read it).
    assert!(matches!(
        bucket.get(&first_at.index_key, None).await,
        Ok(knowledge::kb::snapshots::Fetched::Bytes(_))
    ));
    // After it, the next publish removes it.
    let later = OffsetDateTime::now_utc() + time::Duration::hours(2);
    let third = publish(fake.kb.store.as_ref(), &bucket, DEFAULT_GRACE, later)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no version"));
    assert!(third.removed >= 2, "{third:?}");
    assert!(bucket.get(&first_at.index_key, None).await.is_err());
    fake.finish().await;
}

/// The table, with the next marker read held back [`SLOW_READ`] once `slow` is set: a
/// reload that takes its time.
struct SlowMarker {
    inner: Arc<dyn KbStore>,
    slow: Arc<AtomicBool>,
}

const SLOW_READ: Duration = Duration::from_millis(400);

#[async_trait]
impl KbStore for SlowMarker {
    async fn version(&self) -> domain::Result<Option<KbVersion>> {
        if self.slow.swap(false, Ordering::SeqCst) {
            tokio::time::sleep(SLOW_READ).await;
        }
        self.inner.version().await
    }
    async fn load_all(&self) -> domain::Result<Vec<Chunk>> {
        self.inner.load_all().await
    }
    async fn documents(&self) -> domain::Result<Vec<DocumentManifest>> {
        self.inner.documents().await
    }
    async fn replace_document(
        &self,
        manifest: &DocumentManifest,
        chunks: &[Chunk],
    ) -> domain::Result<()> {
        self.inner.replace_document(manifest, chunks).await
    }
    async fn remove_document(&self, document_id: &str) -> domain::Result<()> {
        self.inner.remove_document(document_id).await
    }
    async fn set_snapshot(&self, version: u64, snapshot: &SnapshotRef) -> domain::Result<bool> {
        self.inner.set_snapshot(version, snapshot).await
    }
    async fn bump_version(
        &self,
        model: Option<&str>,
        dimensions: Option<u32>,
    ) -> domain::Result<KbVersion> {
        self.inner.bump_version(model, dimensions).await
    }
}

#[tokio::test]
async fn queries_are_answered_from_the_loaded_version_while_a_reload_runs() {
    let bucket = bucket().await;
    let slow = Arc::new(AtomicBool::new(false));
    let marker = Arc::clone(&slow);
    let fake = Fake::build_with_store(
        KbTable::create().await,
        true,
        |inner| {
            Arc::new(SlowMarker {
                inner,
                slow: marker,
            })
        },
        |c| c.version_check = Duration::ZERO,
    )
    .await;
    let (fake, first, _) = serving_the_corpus(fake, &bucket).await;

    fake.kb.put_lounges().await;
    let second = fake.kb.bump(Some(common::MODEL)).await;
    published(fake.kb.store.as_ref(), &bucket).await;

    // The next query reloads, its marker read held back; queries meanwhile do not wait.
    slow.store(true, Ordering::SeqCst);
    let reload = fake.search("lounge access");
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut answers = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let body = fake.search("lounge access").await;
            answers.push((body["kb_version"].clone(), started.elapsed()));
        }
        answers
    };
    let (reloaded, meanwhile) = tokio::join!(reload, meanwhile);
    assert_eq!(reloaded["kb_version"], json!(second), "{reloaded}");
    assert_eq!(documents(&reloaded)[0], "lounges", "{reloaded}");
    for (version, took) in &meanwhile {
        assert_eq!(version, &json!(first), "answered from the loaded version");
        assert!(
            *took < SLOW_READ / 2,
            "a query waited for the reload: {took:?}"
        );
    }
    assert_eq!(
        fake.search("lounge access").await["kb_version"],
        json!(second)
    );
    fake.finish().await;
}

#[tokio::test]
async fn superseded_objects_are_tagged_and_kept_for_the_grace_from_then() {
    let bucket = bucket().await;
    let kb = KbTable::create().await;
    kb.put_corpus(true, Some(common::MODEL)).await;
    let store = kb.store.as_ref();
    let now = OffsetDateTime::now_utc();
    let first = published(store, &bucket).await;
    let keys = |at: &SnapshotRef| -> Vec<String> {
        std::iter::once(at.index_key.clone())
            .chain(at.rescore_key.clone())
            .collect()
    };
    let tagged = |key: String| {
        let bucket = bucket.clone();
        async move {
            bucket
                .superseded_at(&key)
                .await
                .unwrap_or_else(|e| panic!("{key}: {e}"))
        }
    };
    let exists = |key: String| {
        let bucket = bucket.clone();
        async move { bucket.get(&key, Some(0)).await.is_ok() }
    };

    // Two hours on, a new version: the first snapshot's objects were written "long ago",
    // but the grace counts from now, when they were found superseded.
    kb.bump(Some(common::MODEL)).await;
    let superseded_at = now + time::Duration::hours(2);
    let second = publish(store, &bucket, DEFAULT_GRACE, superseded_at)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no version"));
    assert_eq!(second.removed, 0, "{second:?}");
    for key in keys(&first) {
        assert!(exists(key.clone()).await, "{key} kept within the grace");
        assert_eq!(tagged(key).await, Some(superseded_at.unix_timestamp()));
    }
    for key in keys(&second.at) {
        assert_eq!(tagged(key).await, None, "the live snapshot is not tagged");
    }

    // Within the grace of the tag: still there. After it: gone, the live one stays.
    let within = superseded_at + time::Duration::minutes(59);
    let again = publish(store, &bucket, DEFAULT_GRACE, within)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no version"));
    assert!(exists(first.index_key.clone()).await);
    let after = superseded_at + time::Duration::minutes(61);
    let last = publish(store, &bucket, DEFAULT_GRACE, after)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no version"));
    assert_eq!(
        last.removed, 2,
        "the first snapshot's two objects: {last:?}"
    );
    assert!(!exists(first.index_key.clone()).await);
    assert!(exists(last.at.index_key.clone()).await);
    // The second and the third publish's objects are superseded now, tagged, not yet due.
    for key in keys(&second.at).into_iter().chain(keys(&again.at)) {
        assert!(exists(key.clone()).await, "{key}");
        assert!(tagged(key).await.is_some());
    }
    let far = after + time::Duration::days(1);
    bucket
        .remove_stale(&[], Duration::ZERO, far)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    kb.delete().await;
}
