//! Query latency (p50/p99, without the embedding call) and memory of the in-memory index on
//! synthetic knowledge bases of 1k, 10k and 100k chunks × 256 and 1536 dimensions, and the
//! cold load of 10k chunks × 1536 dimensions from DynamoDB Local.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p kb-retrieve --bench query
//!
//! Each size runs in a child process of its own, so its peak RSS is its own. Texts are
//! ~120 words drawn from a Zipf-distributed vocabulary of 20k made-up words; vectors are
//! random unit vectors; a query has one common and three mid-frequency words. One core: the
//! search is single-threaded. `cargo test --benches` (so `make test`) runs a smoke pass (1k × 256, a few
//! queries, no DynamoDB).

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kb_retrieve::index::{EmbeddingSpec, Index};
use knowledge::kb::{Chunk, DocumentManifest, DynamoKbStore, KbStore, KbVersion};
use test_support::figures::{Percentiles, full_run, peak_rss_kib};

const VOCABULARY: usize = 20_000;
const WORDS_PER_CHUNK: usize = 120;
const TOP_K: usize = 6;
const MODEL: &str = "synthetic";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--cold-load-child") {
        let table = args.get(at + 1).cloned().unwrap_or_default();
        cold_load_child(&table);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--child") {
        let n: usize = args
            .get(at + 1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        let dims: usize = args.get(at + 2).and_then(|s| s.parse().ok()).unwrap_or(256);
        let queries: usize = args.get(at + 3).and_then(|s| s.parse().ok()).unwrap_or(20);
        measure(n, dims, queries);
        return;
    }
    let full = full_run();
    let sizes: &[(usize, usize, usize)] = if full {
        &[
            (1_000, 256, 2000),
            (1_000, 1536, 2000),
            (10_000, 256, 1000),
            (10_000, 1536, 1000),
            (100_000, 256, 300),
            (100_000, 1536, 200),
        ]
    } else {
        &[(1_000, 256, 20)]
    };
    println!("kb-retrieve query bench (top_k {TOP_K}, fusion depth 50, one thread)");
    for &(n, dims, queries) in sizes {
        run_child(n, dims, queries, full);
    }
    if full {
        cold_load();
    }
}

/// Runs one size in a fresh process and relays its report.
fn run_child(n: usize, dims: usize, queries: usize, full: bool) {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => panic!("current_exe: {e}"),
    };
    let mut command = Command::new(exe);
    if full {
        command.arg("--bench");
    }
    command.args([
        "--child",
        &n.to_string(),
        &dims.to_string(),
        &queries.to_string(),
    ]);
    let output = match command.output() {
        Ok(output) => output,
        Err(e) => panic!("running the {n} × {dims} child: {e}"),
    };
    print!("{}", String::from_utf8_lossy(&output.stdout));
    assert!(
        output.status.success(),
        "{n} × {dims} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn measure(n: usize, dims: usize, queries: usize) {
    let mut rng = fastrand::Rng::with_seed(42);
    let vocabulary = vocabulary(&mut rng);
    let zipf = ZipfTable::new(VOCABULARY);
    let base_rss = current_rss_kib().unwrap_or(0);

    let chunks = synthetic_chunks(n, dims, &vocabulary, &zipf, &mut rng);
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
    let started = Instant::now();
    let index = Index::build(chunks, Some(&version), Some(&spec));
    let build = started.elapsed();
    assert_eq!(index.vector_dims(), Some(dims));
    let steady_rss = current_rss_kib().unwrap_or(0);

    let workload: Vec<(String, Vec<f32>)> = (0..queries)
        .map(|_| {
            (
                query_text(&vocabulary, &mut rng),
                unit_vector(dims, &mut rng),
            )
        })
        .collect();
    for (text, vector) in workload.iter().take(20) {
        std::hint::black_box(index.search(text, Some(vector), TOP_K));
    }
    let (mut hybrid, mut bm25, mut vector) = (Vec::new(), Vec::new(), Vec::new());
    let mut exact = Vec::new();
    let Some(matrix) = index.vectors() else {
        panic!("no vectors");
    };
    let mut hits = 0usize;
    for (text, embedding) in &workload {
        let t = Instant::now();
        let (results, _) = index.search(text, Some(embedding), TOP_K);
        hybrid.push(t.elapsed());
        hits += results.len();
        let t = Instant::now();
        std::hint::black_box(index.rank_bm25(text, 50));
        bm25.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(index.rank_vector(embedding, 50));
        vector.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(matrix.exact(embedding, 50));
        exact.push(t.elapsed());
    }
    assert!(hits > 0, "the synthetic queries found nothing");
    let label = format!("{}k × {dims}", n / 1000);
    println!(
        "{}",
        Percentiles::of(hybrid).row(&format!("{label}: search (bm25 + vector + fusion)"))
    );
    println!(
        "{}",
        Percentiles::of(bm25).row(&format!("{label}:   bm25 ranking only"))
    );
    println!(
        "{}",
        Percentiles::of(vector).row(&format!("{label}:   vector ranking only"))
    );
    println!(
        "{}",
        Percentiles::of(exact).row(&format!("{label}:   (f32-only scan, for comparison)"))
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{label}: build {:.2} s, postings + matrix {:.1} MiB, RSS after build +{:.1} MiB over an empty process, peak RSS {:.1} MiB",
        build.as_secs_f64(),
        index.approx_index_bytes() as f64 / (1024.0 * 1024.0),
        mib(steady_rss.saturating_sub(base_rss)),
        mib(peak_rss_kib().unwrap_or(0)),
    );
}

/// Made-up words of 2..=4 syllables; index = Zipf rank (0 most frequent).
fn vocabulary(rng: &mut fastrand::Rng) -> Vec<String> {
    const ONSETS: &[&str] = &[
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st", "pr", "kl",
    ];
    const NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "ei", "au"];
    let mut seen = std::collections::HashSet::new();
    let mut words = Vec::with_capacity(VOCABULARY);
    while words.len() < VOCABULARY {
        let syllables = rng.usize(2..=4);
        let word: String = (0..syllables)
            .map(|_| {
                format!(
                    "{}{}",
                    ONSETS[rng.usize(..ONSETS.len())],
                    NUCLEI[rng.usize(..NUCLEI.len())]
                )
            })
            .collect::<String>()
            + ["", "n", "r", "s", "t"][rng.usize(..5)];
        if seen.insert(word.clone()) {
            words.push(word);
        }
    }
    words
}

/// Samples ranks with probability ∝ 1 / (rank + 1).
struct ZipfTable {
    cumulative: Vec<f64>,
}

impl ZipfTable {
    fn new(n: usize) -> Self {
        let mut total = 0.0;
        let cumulative = (0..n)
            .map(|r| {
                total += 1.0 / (r as f64 + 1.0);
                total
            })
            .collect();
        Self { cumulative }
    }

    fn sample(&self, rng: &mut fastrand::Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.f64() * total;
        self.cumulative
            .partition_point(|&c| c < x)
            .min(self.cumulative.len() - 1)
    }
}

fn synthetic_chunks(
    n: usize,
    dims: usize,
    vocabulary: &[String],
    zipf: &ZipfTable,
    rng: &mut fastrand::Rng,
) -> Vec<Chunk> {
    (0..n)
        .map(|i| {
            let text: Vec<&str> = (0..WORDS_PER_CHUNK)
                .map(|_| vocabulary[zipf.sample(rng)].as_str())
                .collect();
            let mut chunk = Chunk::new(
                &format!("doc-{:05}", i / 20),
                (i % 20) as u32,
                text.join(" "),
            );
            chunk.embedding = Some(unit_vector(dims, rng));
            chunk
        })
        .collect()
}

fn query_text(vocabulary: &[String], rng: &mut fastrand::Rng) -> String {
    let mut words = vec![vocabulary[rng.usize(..100)].as_str()];
    words.extend((0..3).map(|_| vocabulary[rng.usize(100..5000)].as_str()));
    words.join(" ")
}

fn unit_vector(dims: usize, rng: &mut fastrand::Rng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.f32() * 2.0 - 1.0).collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn current_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// 10k chunks × 1536 dims written to a table of the bench's own in DynamoDB Local, then read
/// back with `DynamoKbStore::load_all` (4 parallel Scan segments) and indexed, the way a
/// cold start does (`LiveIndex`: marker, chunks, build), in a child process.
fn cold_load() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime: {e}"),
    };
    runtime.block_on(async {
        const DOCS: usize = 100;
        const PER_DOC: usize = 100;
        const DIMS: usize = 1536;
        let client = test_support::dynamodb().await;
        let table = create_table(&client).await;
        let store = Arc::new(DynamoKbStore::new(client.clone(), table.clone()));
        let mut rng = fastrand::Rng::with_seed(7);
        let vocabulary = vocabulary(&mut rng);
        let zipf = ZipfTable::new(VOCABULARY);
        let chunks = synthetic_chunks(DOCS * PER_DOC, DIMS, &vocabulary, &zipf, &mut rng);
        let documents: Vec<(DocumentManifest, Vec<Chunk>)> = chunks
            .chunks(PER_DOC)
            .enumerate()
            .map(|(d, part)| {
                let document_id = format!("bench-{d:03}");
                let chunks: Vec<Chunk> = part
                    .iter()
                    .enumerate()
                    .map(|(p, c)| {
                        let mut chunk = Chunk::new(&document_id, p as u32, c.content.clone());
                        chunk.embedding = c.embedding.clone();
                        chunk
                    })
                    .collect();
                let manifest = DocumentManifest {
                    document_id: document_id.clone(),
                    content_hash: knowledge::kb::content_hash(&document_id),
                    chunk_count: PER_DOC as u32,
                    source_path: format!("bench/{document_id}.md"),
                    chunking: "bench".into(),
                    embedding_model: Some(MODEL.into()),
                    dimensions: Some(DIMS as u32),
                    updated_at: String::new(),
                };
                (manifest, chunks)
            })
            .collect();
        drop(chunks);
        let started = Instant::now();
        let writes = futures::stream::iter(documents.iter().map(|(manifest, chunks)| {
            let store = Arc::clone(&store);
            async move { store.replace_document(manifest, chunks).await }
        }))
        .buffer_unordered(4)
        .collect::<Vec<_>>()
        .await;
        if let Some(Err(e)) = writes.into_iter().find(Result::is_err) {
            panic!("writing the bench chunks: {e}");
        }
        println!(
            "cold load: wrote {} chunks × {DIMS} dims in {:.1} s",
            DOCS * PER_DOC,
            started.elapsed().as_secs_f64()
        );
        drop(documents);
        store
            .bump_version(Some(MODEL), Some(DIMS as u32))
            .await
            .unwrap_or_else(|e| panic!("bump: {e}"));
        // Loaded in a fresh process, so its peak RSS is that of loading, not of writing.
        let output = std::env::current_exe().and_then(|exe| {
            Command::new(exe)
                .args(["--cold-load-child", &table])
                .output()
        });
        match output {
            Ok(output) => {
                print!("{}", String::from_utf8_lossy(&output.stdout));
                if !output.status.success() {
                    eprintln!(
                        "cold load failed: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
            }
            Err(e) => eprintln!("cold load child: {e}"),
        }
        if let Err(e) = client.delete_table().table_name(&table).send().await {
            eprintln!(
                "deleting {table}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            );
        }
    });
}

fn cold_load_child(table: &str) {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime: {e}"),
    };
    runtime.block_on(async {
        let store = DynamoKbStore::new(test_support::dynamodb().await, table);
        let base_rss = current_rss_kib().unwrap_or(0);
        let mut totals = Vec::new();
        for round in 1..=3 {
            let started = Instant::now();
            let version = store.version().await.unwrap_or_else(|e| panic!("version: {e}"));
            let chunks = store.load_all().await.unwrap_or_else(|e| panic!("load_all: {e}"));
            let loaded = started.elapsed();
            let count = chunks.len();
            let dims = version.as_ref().and_then(|v| v.dimensions);
            let spec = EmbeddingSpec {
                model: MODEL.into(),
                dimensions: dims,
            };
            let t = Instant::now();
            let index = Index::build(chunks, version.as_ref(), Some(&spec));
            let built = t.elapsed();
            assert_eq!(index.len(), count);
            assert!(index.vector_dims().is_some());
            println!(
                "cold load round {round}: marker + load_all of {count} chunks {:.2} s, index build {:.2} s",
                loaded.as_secs_f64(),
                built.as_secs_f64(),
            );
            totals.push(loaded + built);
            if round == 1 {
                println!(
                    "cold load: RSS with the index loaded +{:.1} MiB over the process before",
                    current_rss_kib().unwrap_or(0).saturating_sub(base_rss) as f64 / 1024.0
                );
            }
        }
        let best = totals.iter().min().copied().unwrap_or(Duration::ZERO);
        println!(
            "cold load (10k × 1536, DynamoDB Local): best {:.2} s; peak RSS of the loading process {:.1} MiB",
            best.as_secs_f64(),
            peak_rss_kib().unwrap_or(0) as f64 / 1024.0
        );
    });
}

async fn create_table(client: &aws_sdk_dynamodb::Client) -> String {
    test_support::create_pk_sk_table(client, "kb-retrieve-bench").await
}
