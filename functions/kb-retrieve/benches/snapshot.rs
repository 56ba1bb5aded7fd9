//! Cold load of a knowledge base from its index snapshot in S3 (moto locally): upload a
//! synthetic knowledge base's snapshot, then, in a fresh process, stream it in the way a
//! cold kb-retrieve does (`LiveIndex`: one GET of the snapshot, one of its rescoring rows
//! when they fit `KB_RESCORE_MAX_MB`) and report the load time, the peak RSS of that process
//! and the query latency on what it loaded.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p kb-retrieve --bench snapshot
//!
//! Sizes: 10k and 100k chunks × 1536 dimensions, ~120 words each (the query bench's
//! synthetic corpus of made-up words). The vectors are shaped like a model's: each near one
//! of `n / 50` topic directions, each query near one topic, so a query has neighbours to
//! find and the 1-bit pre-scan's recall means something. `cargo test --benches` (so `make test`) runs a
//! smoke pass of 500 chunks × 64 dimensions when a snapshot bucket is configured.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use kb_retrieve::config::DEFAULT_RESCORE_MAX_MB;
use kb_retrieve::index::{EmbeddingSpec, Index, fusion_depth};
use kb_retrieve::snapshot;
use knowledge::kb::snapshots::S3Snapshots;
use knowledge::kb::{Chunk, KbVersion};
use test_support::figures::{Percentiles, full_run, peak_rss_kib};

const MODEL: &str = "synthetic";
const TOP_K: usize = 6;
/// Chunks per topic direction.
const TOPIC_SIZE: usize = 50;
/// Noise added to a topic direction for a chunk, and to a chunk's topic for a query (a
/// cosine of ~0.6 between a chunk and its topic).
const SPREAD: f32 = 1.25;

/// The topic directions, the same in the publishing and the loading process.
fn topics(n: usize, dims: usize) -> Vec<Vec<f32>> {
    let mut rng = fastrand::Rng::with_seed(7);
    (0..n.div_ceil(TOPIC_SIZE))
        .map(|_| (0..dims).map(|_| rng.f32() * 2.0 - 1.0).collect())
        .collect()
}

/// `topic` plus `SPREAD` times noise of the same length, not normalised (the index does).
fn near(rng: &mut fastrand::Rng, topic: &[f32]) -> Vec<f32> {
    let noise: Vec<f32> = topic.iter().map(|_| rng.f32() * 2.0 - 1.0).collect();
    let ratio = SPREAD * (length(topic) / length(&noise).max(f32::EPSILON));
    topic
        .iter()
        .zip(&noise)
        .map(|(t, e)| t + ratio * e)
        .collect()
}

fn length(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime: {e}"),
    }
}

async fn bucket(prefix: &str) -> S3Snapshots {
    let sdk = lambda_kit::aws::sdk_config().await;
    let name = std::env::var("KB_SNAPSHOT_BUCKET").unwrap_or_default();
    S3Snapshots::new(S3Snapshots::client(&sdk), name, prefix)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--load-child") {
        let arg = |i: usize| args.get(at + i).cloned().unwrap_or_default();
        load_child(
            &arg(1),
            &arg(2),
            &arg(3),
            arg(4).parse().unwrap_or(256),
            arg(5).parse().unwrap_or(20),
        );
        return;
    }
    if std::env::var("KB_SNAPSHOT_BUCKET").map_or(true, |b| b.is_empty()) {
        println!(
            "kb-retrieve snapshot bench: KB_SNAPSHOT_BUCKET is not set (source .local/run/env); skipped"
        );
        return;
    }
    let full = full_run();
    let sizes: &[(usize, usize, usize)] = if full {
        &[(10_000, 1536, 500), (100_000, 1536, 200)]
    } else {
        &[(500, 64, 20)]
    };
    println!(
        "kb-retrieve snapshot bench (cold load from the snapshot bucket, KB_RESCORE_MAX_MB {DEFAULT_RESCORE_MAX_MB}, top_k {TOP_K})"
    );
    for &(n, dims, queries) in sizes {
        publish_then_load(n, dims, queries);
    }
}

/// Builds and uploads the snapshot of `n` × `dims`, then loads it in a child process.
fn publish_then_load(n: usize, dims: usize, queries: usize) {
    let prefix = format!("{}/", test_support::unique("kb-snapshot-bench"));
    let runtime = runtime();
    let (at, bytes) = runtime.block_on(async {
        let bucket = bucket(&prefix).await;
        let mut rng = fastrand::Rng::with_seed(42);
        let words: Vec<String> = (0..20_000).map(|i| format!("w{i:05}x")).collect();
        let topics = topics(n, dims);
        let chunks: Vec<Chunk> = (0..n)
            .map(|i| {
                let text: Vec<&str> = (0..120)
                    .map(|_| words[(rng.f64().powi(3) * words.len() as f64) as usize].as_str())
                    .collect();
                let mut chunk = Chunk::new(
                    &format!("doc-{:05}", i / 20),
                    (i % 20) as u32,
                    text.join(" "),
                );
                let topic = rng.usize(..topics.len());
                chunk.embedding = Some(near(&mut rng, &topics[topic]));
                chunk
            })
            .collect();
        let version = KbVersion {
            version: 1,
            embedding_model: Some(MODEL.into()),
            dimensions: Some(dims as u32),
            updated_at: String::new(),
            snapshot: None,
        };
        let spec = EmbeddingSpec {
            model: MODEL.into(),
            dimensions: Some(dims as u32),
        };
        let index = Index::build(chunks, Some(&version), Some(&spec));
        let built = snapshot::encode(&index, &version).unwrap_or_else(|e| panic!("encode: {e}"));
        drop(index);
        let at = bucket.keys(1, time::OffsetDateTime::now_utc(), built.rescore.is_some());
        let bytes = (
            built.index.len(),
            built.rescore.as_ref().map_or(0, Vec::len),
        );
        let started = Instant::now();
        bucket
            .put(&at.index_key, built.index)
            .await
            .unwrap_or_else(|e| panic!("put: {e}"));
        if let (Some(key), Some(rows)) = (&at.rescore_key, built.rescore) {
            bucket
                .put(key, rows)
                .await
                .unwrap_or_else(|e| panic!("put: {e}"));
        }
        println!(
            "{} × {dims}: snapshot {:.1} MiB + rescoring rows {:.1} MiB, uploaded in {:.1} s",
            count(n),
            bytes.0 as f64 / 1048576.0,
            bytes.1 as f64 / 1048576.0,
            started.elapsed().as_secs_f64()
        );
        (at, bytes)
    });
    let _ = bytes;
    let output = std::env::current_exe().and_then(|exe| {
        Command::new(exe)
            .args([
                "--load-child",
                &prefix,
                &at.index_key,
                at.rescore_key.as_deref().unwrap_or(""),
                &dims.to_string(),
                &queries.to_string(),
            ])
            .output()
    });
    match output {
        Ok(output) => {
            print!("{}", String::from_utf8_lossy(&output.stdout));
            assert!(
                output.status.success(),
                "load child: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Err(e) => panic!("load child: {e}"),
    }
    runtime.block_on(async {
        let bucket = bucket(&prefix).await;
        let far = time::OffsetDateTime::now_utc() + time::Duration::days(1);
        if let Err(e) = bucket.remove_stale(&[], Duration::ZERO, far).await {
            eprintln!("removing the bench's objects: {e}");
        }
    });
}

/// A cold start's load, as `LiveIndex` does it, then queries on the loaded index.
fn load_child(prefix: &str, index_key: &str, rescore_key: &str, dims: usize, queries: usize) {
    let runtime = runtime();
    let base_rss = current_rss_kib();
    let (index, load) = runtime.block_on(async {
        let bucket = bucket(prefix).await;
        let started = Instant::now();
        let (_, index) = bucket
            .open(index_key)
            .await
            .unwrap_or_else(|e| panic!("open: {e}"));
        let limit = DEFAULT_RESCORE_MAX_MB * 1024 * 1024;
        let rescore = match rescore_key {
            "" => None,
            key => match bucket
                .open(key)
                .await
                .unwrap_or_else(|e| panic!("open: {e}"))
            {
                (Some(size), _) if size > limit => None,
                (_, rows) => Some(rows),
            },
        };
        let spec = EmbeddingSpec {
            model: MODEL.into(),
            dimensions: Some(dims as u32),
        };
        let index =
            tokio::task::spawn_blocking(move || snapshot::read(index, rescore, Some(&spec)))
                .await
                .unwrap_or_else(|e| panic!("join: {e}"))
                .unwrap_or_else(|e| panic!("read: {e}"));
        (index, started.elapsed())
    });
    let loaded_rss = current_rss_kib();
    let mut rng = fastrand::Rng::with_seed(9);
    let topics = topics(index.len(), dims);
    let mut samples = Vec::with_capacity(queries);
    let (mut vector_samples, mut exhaustive_samples) = (Vec::new(), Vec::new());
    let mut agree = 0;
    for _ in 0..queries {
        let text = format!("w{:05}x w{:05}x", rng.usize(..100), rng.usize(100..5000));
        let topic = rng.usize(..topics.len());
        let q = near(&mut rng, &topics[topic]);
        let t = Instant::now();
        std::hint::black_box(index.search(&text, Some(&q), TOP_K));
        samples.push(t.elapsed());
        if let Some(vectors) = index.vectors() {
            let t = Instant::now();
            let fast = vectors.search(&q, fusion_depth(TOP_K));
            vector_samples.push(t.elapsed());
            let t = Instant::now();
            let all = vectors.search_exhaustive(&q, fusion_depth(TOP_K));
            exhaustive_samples.push(t.elapsed());
            agree += fast[..TOP_K.min(fast.len())]
                .iter()
                .filter(|hit| all[..TOP_K.min(all.len())].contains(hit))
                .count();
        }
    }
    let label = format!("{} × {dims}", count(index.len()));
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{label}: cold load from the snapshot {:.2} s ({} chunks, rescored: {}), RSS with the index +{:.1} MiB, peak RSS {:.1} MiB",
        load.as_secs_f64(),
        index.len(),
        index.vectors().is_some_and(|v| v.rescores()),
        mib(loaded_rss.saturating_sub(base_rss)),
        mib(peak_rss_kib().unwrap_or(0)),
    );
    println!(
        "{}",
        Percentiles::of(samples).row(&format!("{label}: hybrid search after a snapshot load"))
    );
    println!(
        "{}",
        Percentiles::of(vector_samples).row(&format!("{label}: vector ranking alone"))
    );
    println!(
        "{}",
        Percentiles::of(exhaustive_samples).row(&format!(
            "{label}: vector ranking, every row's codes scored (no pre-scan)"
        ))
    );
    println!(
        "{label}: vector top {TOP_K} equal to scoring every row's codes: {:.1}% of {} hits",
        100.0 * agree as f64 / (queries * TOP_K).max(1) as f64,
        queries * TOP_K
    );
}

/// "10k", "500".
fn count(n: usize) -> String {
    if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn current_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
