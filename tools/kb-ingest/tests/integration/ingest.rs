//! kb-ingest against DynamoDB Local and a fake embeddings server. The table is shared with
//! other tests: every test ingests its own folder under a unique id prefix, asserts only on
//! its documents, and checks version bumps as "increased", never as exact numbers.

use crate::common::{
    Docs, FakeEmbeddings, Recording, chunks_with_prefix, dynamo_store, fake_vector,
    manifests_with_prefix, version_number,
};
use kb_ingest::{IngestOptions, IngestReport, Progress, SourceFile, files, ingest};
use shared::Error;
use shared::embeddings::{Embedder, EmbeddingsClient};
use shared::kb::KbStore;
use shared::kb::chunker::{ChunkerConfig, chunk_document};
use std::time::Instant;

const MILES: &str = "# Miles & More\n\nMiles & More is the programme of Lufthansa Group.\n\n## Earning\n\nFly Lufthansa, Swiss or Austrian, or use the credit card.\n\n## Redeeming\n\nAwards follow a chart by region.\n\n## Fees\n\nLong-haul awards carry carrier-imposed surcharges.\n";
const MILES_SHORTER: &str = "# Miles & More\n\nMiles & More is the programme of Lufthansa Group.\n\n## Earning\n\nFly Lufthansa, Swiss or Austrian, or use the credit card.\n";
const STOPOVERS: &str = "Stopovers let you visit a second city on one award.\n\nAeroplan allows one per one-way award for 5,000 points.";

fn options(prefix: &str) -> IngestOptions {
    IngestOptions {
        id_prefix: prefix.to_owned(),
        prune: true,
        ..IngestOptions::default()
    }
}

fn sources(docs: &Docs, prefix: &str) -> Vec<SourceFile> {
    files::collect(&[docs.path().to_path_buf()], prefix).unwrap_or_else(|e| panic!("{e}"))
}

async fn run(
    store: &dyn KbStore,
    embedder: Option<&EmbeddingsClient>,
    docs: &Docs,
    options: &IngestOptions,
) -> IngestReport {
    let sources = sources(docs, &options.id_prefix);
    let embedder = embedder.cloned().map(Embedder::Http);
    ingest(
        store,
        embedder.as_ref(),
        &sources,
        options,
        &Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("ingest: {e}"))
}

fn ids(prefix: &str, stems: &[&str]) -> Vec<String> {
    stems.iter().map(|s| format!("{prefix}{s}")).collect()
}

#[tokio::test]
async fn first_ingest_writes_chunks_with_embeddings_and_bumps_the_version() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(16).await;
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    docs.write("nested/stopovers.txt", STOPOVERS);
    let prefix = test_support::unique("first") + "-";
    let before = version_number(&store).await;

    let report = run(
        &store,
        Some(&fake.client("fake-model")),
        &docs,
        &options(&prefix),
    )
    .await;

    assert_eq!(report.added, ids(&prefix, &["miles", "stopovers"]));
    assert!(report.updated.is_empty() && report.removed.is_empty() && report.unchanged.is_empty());
    let config = ChunkerConfig::default();
    let mut expected = chunk_document(&format!("{prefix}miles"), MILES, &config);
    expected.extend(chunk_document(
        &format!("{prefix}stopovers"),
        STOPOVERS,
        &config,
    ));
    for chunk in &mut expected {
        chunk.embedding = Some(fake_vector(&chunk.content, 16));
    }
    assert_eq!(expected.len(), 5);
    assert_eq!(report.chunks_written, 5);
    assert_eq!(report.embeddings_computed, 5);
    assert_eq!(fake.embedded(), 5);
    // Five texts, one batch.
    assert_eq!(fake.requests().await, 1);

    // Stored exactly, embeddings bit for bit.
    assert_eq!(chunks_with_prefix(&store, &prefix).await, expected);

    let manifests = manifests_with_prefix(&store, &prefix).await;
    assert_eq!(manifests.len(), 2);
    assert_eq!(manifests[0].chunk_count, 4);
    assert_eq!(manifests[0].content_hash, shared::kb::content_hash(MILES));
    assert_eq!(manifests[0].embedding_model.as_deref(), Some("fake-model"));
    assert_eq!(manifests[0].dimensions, Some(16));
    assert_eq!(manifests[0].chunking, config.fingerprint());
    assert!(manifests[1].source_path.ends_with("stopovers.txt"));

    let version = report.version.unwrap_or_else(|| panic!("no version bump"));
    assert!(version.version > before);
    assert_eq!(version.embedding_model.as_deref(), Some("fake-model"));
    assert_eq!(version.dimensions, Some(16));
    let writes = store.take_writes();
    assert_eq!(
        writes,
        [
            format!("replace {prefix}miles"),
            format!("replace {prefix}stopovers"),
            "bump".into()
        ]
    );
}

#[tokio::test]
async fn re_ingesting_unchanged_files_writes_nothing() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    docs.write("stopovers.md", STOPOVERS);
    let prefix = test_support::unique("same") + "-";
    let client = fake.client("fake-model");
    run(&store, Some(&client), &docs, &options(&prefix)).await;
    store.take_writes();
    let requests = fake.requests().await;
    let stored = chunks_with_prefix(&store, &prefix).await;

    let report = run(&store, Some(&client), &docs, &options(&prefix)).await;

    assert_eq!(report.unchanged, ids(&prefix, &["miles", "stopovers"]));
    assert!(!report.changed());
    assert_eq!(report.chunks_written, 0);
    assert_eq!(report.embeddings_computed, 0);
    assert_eq!(report.version, None);
    assert!(store.take_writes().is_empty(), "no write, no bump");
    assert_eq!(fake.requests().await, requests, "no embeddings request");
    assert_eq!(chunks_with_prefix(&store, &prefix).await, stored);
}

#[tokio::test]
async fn a_changed_file_replaces_its_chunks_and_reuses_unchanged_embeddings() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    docs.write("stopovers.md", STOPOVERS);
    let prefix = test_support::unique("changed") + "-";
    let client = fake.client("fake-model");
    let first = run(&store, Some(&client), &docs, &options(&prefix)).await;
    let first_version = first.version.map_or(0, |v| v.version);
    store.take_writes();
    let embedded = fake.embedded();

    // Two of four sections remain (unchanged), one new sentence is added.
    let edited = format!("{MILES_SHORTER}\nStatus miles count towards tiers.\n");
    docs.write("miles.md", &edited);
    let report = run(&store, Some(&client), &docs, &options(&prefix)).await;

    let id = format!("{prefix}miles");
    assert_eq!(
        report.updated,
        vec![(id.clone(), "content changed".to_owned())]
    );
    assert_eq!(report.unchanged, ids(&prefix, &["stopovers"]));
    let mut expected = chunk_document(&id, &edited, &ChunkerConfig::default());
    assert_eq!(expected.len(), 2, "{expected:#?}");
    for chunk in &mut expected {
        chunk.embedding = Some(fake_vector(&chunk.content, 8));
    }
    // The intro chunk is unchanged and reused; the "Earning" chunk grew and is new.
    assert_eq!(report.embeddings_reused, 1);
    assert_eq!(report.embeddings_computed, 1);
    assert_eq!(fake.embedded() - embedded, 1);
    let stored: Vec<_> = chunks_with_prefix(&store, &prefix)
        .await
        .into_iter()
        .filter(|c| c.document_id == id)
        .collect();
    assert_eq!(stored, expected, "the chunks beyond the new end are gone");
    assert_eq!(manifests_with_prefix(&store, &id).await[0].chunk_count, 2);
    assert_eq!(
        store.take_writes(),
        [format!("replace {id}"), "bump".into()]
    );
    assert!(report.version.map_or(0, |v| v.version) > first_version);
}

#[tokio::test]
async fn a_removed_file_is_pruned_only_when_asked() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    docs.write("stopovers.md", STOPOVERS);
    let prefix = test_support::unique("prune") + "-";
    let client = fake.client("fake-model");
    run(&store, Some(&client), &docs, &options(&prefix)).await;
    store.take_writes();

    docs.remove("stopovers.md");
    let keep = IngestOptions {
        prune: false,
        ..options(&prefix)
    };
    let report = run(&store, Some(&client), &docs, &keep).await;
    assert!(!report.changed());
    assert!(store.take_writes().is_empty());
    assert_eq!(manifests_with_prefix(&store, &prefix).await.len(), 2);

    let report = run(&store, Some(&client), &docs, &options(&prefix)).await;
    let gone = format!("{prefix}stopovers");
    assert_eq!(report.removed, vec![gone.clone()]);
    assert!(report.version.is_some());
    assert_eq!(
        store.take_writes(),
        [format!("remove {gone}"), "bump".into()]
    );
    assert!(
        chunks_with_prefix(&store, &gone).await.is_empty(),
        "chunks removed"
    );
    let left: Vec<String> = manifests_with_prefix(&store, &prefix)
        .await
        .into_iter()
        .map(|m| m.document_id)
        .collect();
    assert_eq!(left, ids(&prefix, &["miles"]));
}

#[tokio::test]
async fn pruning_stays_within_the_id_prefix() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let client = fake.client("fake-model");
    let prefix = test_support::unique("scope");
    let (a, b) = (Docs::new(), Docs::new());
    a.write("miles.md", MILES);
    b.write("stopovers.md", STOPOVERS);
    run(&store, Some(&client), &a, &options(&format!("{prefix}-a-"))).await;
    run(&store, Some(&client), &b, &options(&format!("{prefix}-b-"))).await;
    // Each folder prunes only its own prefix: both documents stay.
    let report = run(&store, Some(&client), &a, &options(&format!("{prefix}-a-"))).await;
    assert!(report.removed.is_empty());
    assert_eq!(manifests_with_prefix(&store, &prefix).await.len(), 2);
}

#[tokio::test]
async fn without_embeddings_text_only_is_stored_and_a_later_endpoint_adds_them() {
    let store = Recording::new(dynamo_store().await);
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    let prefix = test_support::unique("bm25") + "-";

    let report = run(&store, None, &docs, &options(&prefix)).await;
    assert_eq!(report.embedding_model, None);
    assert_eq!(report.embeddings_computed, 0);
    let chunks = chunks_with_prefix(&store, &prefix).await;
    assert_eq!(chunks.len(), 4);
    assert!(chunks.iter().all(|c| c.embedding.is_none()));
    let manifest = &manifests_with_prefix(&store, &prefix).await[0];
    assert_eq!(
        (manifest.embedding_model.clone(), manifest.dimensions),
        (None, None)
    );
    let version = report.version.unwrap_or_else(|| panic!("no bump"));
    assert_eq!((version.embedding_model, version.dimensions), (None, None));

    // An endpoint appears: the same files are embedded now.
    let fake = FakeEmbeddings::start(8).await;
    let client = fake.client("fake-model");
    let report = run(&store, Some(&client), &docs, &options(&prefix)).await;
    assert_eq!(report.updated.len(), 1);
    assert!(
        report.updated[0].1.starts_with("embeddings changed"),
        "{:?}",
        report.updated
    );
    assert_eq!(report.embeddings_computed, 4);
    assert!(
        chunks_with_prefix(&store, &prefix)
            .await
            .iter()
            .all(|c| c.embedding.is_some())
    );

    // Losing the endpoint by accident does not strip them ...
    let err = ingest(
        &store,
        None,
        &sources(&docs, &prefix),
        &options(&prefix),
        &Progress::silent(),
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("--no-embeddings"), "{err}");
    // ... but --no-embeddings does, on purpose.
    let drop = IngestOptions {
        drop_embeddings: true,
        ..options(&prefix)
    };
    let report = run(&store, None, &docs, &drop).await;
    assert_eq!(report.updated.len(), 1);
    assert!(
        chunks_with_prefix(&store, &prefix)
            .await
            .iter()
            .all(|c| c.embedding.is_none())
    );
}

#[tokio::test]
async fn embeddings_failure_is_an_error_and_writes_nothing_for_that_document() {
    let store = Recording::new(dynamo_store().await);
    let docs = Docs::new();
    docs.write("a-fine.md", MILES);
    docs.write(
        "b-poisoned.md",
        "# Broken\n\nThis one says POISON and fails.",
    );
    docs.write("c-later.md", STOPOVERS);
    let prefix = test_support::unique("fail") + "-";
    let before = version_number(&store).await;

    // Every request fails: nothing at all is written.
    let down = FakeEmbeddings::start_with(8, Some("")).await;
    let result = ingest(
        &store,
        Some(&Embedder::Http(down.client("fake-model"))),
        &sources(&docs, &prefix),
        &options(&prefix),
        &Progress::silent(),
    )
    .await;
    match result {
        Err(Error::UpstreamUnavailable { service, message }) => {
            assert_eq!(service, "embeddings");
            assert!(message.contains("500"), "{message}");
        }
        other => panic!("expected an upstream error, got {other:?}"),
    }
    assert_eq!(down.requests().await, 2, "retried once");
    assert!(store.take_writes().is_empty());
    assert!(manifests_with_prefix(&store, &prefix).await.is_empty());
    assert!(chunks_with_prefix(&store, &prefix).await.is_empty());

    // Only the second document's batch fails: the first is written whole, the second and
    // third not at all, and the version is bumped for what was written.
    let poisoned = FakeEmbeddings::start_with(8, Some("POISON")).await;
    let client = poisoned.client("fake-model");
    let one_per_batch = IngestOptions {
        batch_size: 1,
        ..options(&prefix)
    };
    let result = ingest(
        &store,
        Some(&Embedder::Http(client.clone())),
        &sources(&docs, &prefix),
        &one_per_batch,
        &Progress::silent(),
    )
    .await;
    assert!(
        matches!(result, Err(Error::UpstreamUnavailable { .. })),
        "{result:?}"
    );
    let written: Vec<String> = manifests_with_prefix(&store, &prefix)
        .await
        .into_iter()
        .map(|m| m.document_id)
        .collect();
    assert_eq!(written, ids(&prefix, &["a-fine"]));
    let chunks = chunks_with_prefix(&store, &prefix).await;
    assert_eq!(chunks.len(), 4);
    assert!(
        chunks
            .iter()
            .all(|c| c.document_id == format!("{prefix}a-fine"))
    );
    assert_eq!(
        store.take_writes(),
        [format!("replace {prefix}a-fine"), "bump".into()]
    );
    assert!(version_number(&store).await > before);

    // Once the endpoint recovers, the next run finishes the job.
    let healthy = FakeEmbeddings::start(8).await;
    let report = run(
        &store,
        Some(&healthy.client("fake-model")),
        &docs,
        &options(&prefix),
    )
    .await;
    assert_eq!(report.unchanged, ids(&prefix, &["a-fine"]));
    assert_eq!(report.added, ids(&prefix, &["b-poisoned", "c-later"]));
}

#[tokio::test]
async fn dry_run_reports_but_writes_and_embeds_nothing() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    let prefix = test_support::unique("dry") + "-";
    let dry = IngestOptions {
        dry_run: true,
        ..options(&prefix)
    };
    let report = run(&store, Some(&fake.client("fake-model")), &docs, &dry).await;
    assert!(report.dry_run);
    assert_eq!(report.added, ids(&prefix, &["miles"]));
    assert_eq!(report.chunks_written, 4);
    assert_eq!(report.embeddings_computed, 4);
    assert_eq!(report.version, None);
    assert!(report.to_string().starts_with("dry run"), "{report}");
    assert!(store.take_writes().is_empty());
    assert_eq!(fake.requests().await, 0);
    assert!(manifests_with_prefix(&store, &prefix).await.is_empty());
}

#[tokio::test]
async fn a_new_model_or_chunking_re_embeds_and_re_chunks_everything() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", MILES);
    docs.write("stopovers.md", STOPOVERS);
    let prefix = test_support::unique("model") + "-";
    run(
        &store,
        Some(&fake.client("model-a")),
        &docs,
        &options(&prefix),
    )
    .await;

    let report = run(
        &store,
        Some(&fake.client("model-b")),
        &docs,
        &options(&prefix),
    )
    .await;
    assert_eq!(report.updated.len(), 2);
    assert!(
        report
            .updated
            .iter()
            .all(|(_, why)| why.contains("model-a (8 dimensions) → model-b")),
        "{:?}",
        report.updated
    );
    assert_eq!(
        report.embeddings_reused, 0,
        "another model's vectors are not reused"
    );
    assert_eq!(report.embeddings_computed, 5);
    assert_eq!(
        report.version.and_then(|v| v.embedding_model).as_deref(),
        Some("model-b")
    );
    assert!(
        manifests_with_prefix(&store, &prefix)
            .await
            .iter()
            .all(|m| m.embedding_model.as_deref() == Some("model-b"))
    );

    let small = IngestOptions {
        chunker: ChunkerConfig::new(120, 20),
        ..options(&prefix)
    };
    let report = run(&store, Some(&fake.client("model-b")), &docs, &small).await;
    assert_eq!(report.updated.len(), 2);
    assert!(
        report
            .updated
            .iter()
            .all(|(_, why)| why.starts_with("chunking changed"))
    );
    let id = format!("{prefix}stopovers");
    let expected = chunk_document(&id, STOPOVERS, &ChunkerConfig::new(120, 20));
    let stored: Vec<_> = chunks_with_prefix(&store, &id).await;
    assert_eq!(
        stored.iter().map(|c| c.content.clone()).collect::<Vec<_>>(),
        expected
            .iter()
            .map(|c| c.content.clone())
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_partial_run_with_a_new_model_refuses_to_mix_models() {
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    let miles = docs.write("miles.md", MILES);
    docs.write("stopovers.md", STOPOVERS);
    let prefix = test_support::unique("mix") + "-";
    run(
        &store,
        Some(&fake.client("model-a")),
        &docs,
        &options(&prefix),
    )
    .await;
    store.take_writes();

    // Only one file, no pruning, another model: the other document would keep model-a.
    let only_miles = files::collect(&[miles], &prefix).unwrap_or_else(|e| panic!("{e}"));
    let partial = IngestOptions {
        prune: false,
        ..options(&prefix)
    };
    let err = ingest(
        &store,
        Some(&Embedder::Http(fake.client("model-b"))),
        &only_miles,
        &partial,
        &Progress::silent(),
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains(&format!("{prefix}stopovers")), "{err}");
    assert!(store.take_writes().is_empty());
}

#[tokio::test]
async fn the_sample_knowledge_base_ingests_and_then_stays_unchanged() {
    let kb = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/kb/docs");
    let prefix = test_support::unique("sample") + "-";
    let sources = files::collect(&[kb], &prefix).unwrap_or_else(|e| panic!("{e}"));
    assert!(sources.len() >= 25, "{} documents", sources.len());
    let store = Recording::new(dynamo_store().await);
    let fake = FakeEmbeddings::start(384).await;
    let client = fake.client("fake-model");
    let options = options(&prefix);

    let started = Instant::now();
    let first = ingest(
        &store,
        Some(&Embedder::Http(client.clone())),
        &sources,
        &options,
        &Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("ingest: {e}"));
    let first_time = started.elapsed();
    assert_eq!(first.added.len(), sources.len());
    let stored = chunks_with_prefix(&store, &prefix).await;
    assert_eq!(stored.len(), first.chunks_written);
    assert!(stored.iter().all(|c| c.content.chars().count() <= 800));
    assert!(
        stored
            .iter()
            .all(|c| c.embedding.as_ref().map(Vec::len) == Some(384))
    );

    let started = Instant::now();
    let second = ingest(
        &store,
        Some(&Embedder::Http(client.clone())),
        &sources,
        &options,
        &Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("ingest: {e}"));
    let second_time = started.elapsed();
    assert_eq!(second.unchanged.len(), sources.len());
    eprintln!(
        "sample KB: {} documents, {} chunks, {} requests of <= 64 texts; first ingest {:.0} ms, unchanged re-ingest {:.0} ms",
        sources.len(),
        first.chunks_written,
        fake.requests().await,
        first_time.as_secs_f64() * 1e3,
        second_time.as_secs_f64() * 1e3
    );

    // Leave the shared table as it was.
    let none: Vec<SourceFile> = Vec::new();
    let report = ingest(
        &store,
        None,
        &none,
        &IngestOptions {
            drop_embeddings: true,
            ..options
        },
        &Progress::silent(),
    )
    .await
    .unwrap_or_else(|e| panic!("ingest: {e}"));
    assert_eq!(report.removed.len(), sources.len());
}
