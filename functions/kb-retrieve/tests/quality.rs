//! Retrieval quality on the sample knowledge base (`infra/kb/`): recall@6 and MRR of BM25,
//! vector and hybrid ranking over the evaluation set, with the recorded all-MiniLM-L6-v2
//! embeddings (no model, no network, no DynamoDB: the documents are chunked with the
//! default chunker, exactly as `kb-ingest` does, and indexed in memory).
//!
//!     cargo test -p kb-retrieve --test quality -- --nocapture
//!     KB_WRITE_REPORT=1 cargo test -p kb-retrieve --test quality   # rewrites QUALITY.md
//!
//! A hit is a chunk of a relevant document. recall@6: the share of a query's relevant
//! documents among the documents of the top 6 chunks, averaged over the queries. MRR@10: the
//! mean of 1 / rank of the first relevant chunk within the top 10 (else 0).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kb_retrieve::index::{EmbeddingSpec, Index, Mode, fusion_depth};
use kb_retrieve::rank::Scored;
use serde_json::Value;
use shared::kb::chunker::{ChunkerConfig, chunk_document};
use shared::kb::{Chunk, KbVersion, content_hash};

const TOP_K: usize = 6;
const MRR_DEPTH: usize = 10;
const CACHE: &str = "embeddings/all-minilm-l6-v2.json";

fn kb_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/kb")
}

struct Query {
    id: String,
    text: String,
    lang: String,
    kind: String,
    relevant: HashSet<String>,
}

fn load_queries() -> Vec<Query> {
    let path = kb_dir().join("eval.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let eval: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("eval.json: {e}"));
    let queries = eval["queries"].as_array().cloned().unwrap_or_default();
    let field = |q: &Value, name: &str| q[name].as_str().unwrap_or_default().to_owned();
    queries
        .iter()
        .map(|q| Query {
            id: field(q, "id"),
            text: field(q, "query"),
            lang: field(q, "lang"),
            kind: field(q, "kind"),
            relevant: q["relevant"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|d| d.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

struct Cache {
    model: String,
    dimensions: usize,
    vectors: HashMap<String, Vec<f32>>,
}

fn load_cache() -> Cache {
    let path = kb_dir().join(CACHE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut cache: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{CACHE}: {e}"));
    let vectors: HashMap<String, Vec<f32>> = serde_json::from_value(cache["vectors"].take())
        .unwrap_or_else(|e| panic!("{CACHE} vectors: {e}"));
    Cache {
        model: cache["model"].as_str().unwrap_or_default().to_owned(),
        dimensions: cache["dimensions"].as_u64().unwrap_or_default() as usize,
        vectors,
    }
}

/// Every document chunked as `kb-ingest` does (file stem = id, BOM dropped), embedded from
/// the cache.
fn load_chunks(cache: &Cache) -> Vec<Chunk> {
    let dir = kb_dir().join("docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md" || e == "txt"))
        .collect();
    files.sort();
    let mut chunks = Vec::new();
    let mut missing = Vec::new();
    for file in files {
        let id = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{id}: {e}"));
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        for mut chunk in chunk_document(&id, text, &ChunkerConfig::default()) {
            match cache.vectors.get(&content_hash(&chunk.content)) {
                Some(v) => chunk.embedding = Some(v.clone()),
                None => missing.push(chunk.id.clone()),
            }
            chunks.push(chunk);
        }
    }
    assert!(
        missing.is_empty(),
        "{CACHE} lacks the embeddings of {} chunks ({:?}…); record it again (infra/kb/README.md)",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    chunks
}

#[derive(Default, Clone, Copy)]
struct Score {
    recall: f64,
    rr: f64,
}

/// recall@6 and reciprocal rank of one ranking (the chunks' document ids, best first).
fn score(ranking: &[&str], relevant: &HashSet<String>) -> Score {
    let found: HashSet<&str> = ranking
        .iter()
        .take(TOP_K)
        .copied()
        .filter(|d| relevant.contains(*d))
        .collect();
    let first = ranking
        .iter()
        .take(MRR_DEPTH)
        .position(|d| relevant.contains(*d));
    Score {
        recall: found.len() as f64 / relevant.len().max(1) as f64,
        rr: first.map_or(0.0, |p| 1.0 / (p as f64 + 1.0)),
    }
}

const RANKERS: [&str; 3] = ["bm25", "vector", "hybrid"];

#[derive(Default)]
struct Totals {
    n: usize,
    sums: [Score; 3],
}

impl Totals {
    fn add(&mut self, scores: [Score; 3]) {
        self.n += 1;
        for (sum, s) in self.sums.iter_mut().zip(scores) {
            sum.recall += s.recall;
            sum.rr += s.rr;
        }
    }

    fn mean(&self, ranker: usize) -> Score {
        let n = self.n.max(1) as f64;
        Score {
            recall: self.sums[ranker].recall / n,
            rr: self.sums[ranker].rr / n,
        }
    }
}

#[test]
fn hybrid_beats_both_rankers_on_the_sample_kb() {
    let cache = load_cache();
    let queries = load_queries();
    assert!(
        queries.len() >= 40,
        "eval.json has {} queries",
        queries.len()
    );
    let chunks = load_chunks(&cache);
    let documents: HashSet<&str> = chunks.iter().map(|c| c.document_id.as_str()).collect();
    for q in &queries {
        for d in &q.relevant {
            assert!(
                documents.contains(d.as_str()),
                "{}: unknown document {d}",
                q.id
            );
        }
    }
    let n_chunks = chunks.len();
    let n_documents = documents.len();
    let version = KbVersion {
        version: 1,
        embedding_model: Some(cache.model.clone()),
        dimensions: Some(cache.dimensions as u32),
        updated_at: String::new(),
    };
    let spec = EmbeddingSpec {
        model: cache.model.clone(),
        dimensions: Some(cache.dimensions as u32),
    };
    let index = Index::build(chunks, Some(&version), Some(&spec));
    assert_eq!(index.vector_dims(), Some(cache.dimensions));

    let depth = fusion_depth(TOP_K);
    let mut groups: Vec<(String, Totals)> = ["all", "keyword", "paraphrase", "de", "en"]
        .iter()
        .map(|g| ((*g).to_owned(), Totals::default()))
        .collect();
    let mut per_query = String::new();
    for q in &queries {
        let embedding = cache
            .vectors
            .get(&content_hash(&q.text))
            .unwrap_or_else(|| panic!("{CACHE} lacks the embedding of {}: {:?}", q.id, q.text));
        let bm25 = index.rank_bm25(&q.text, depth);
        let vector = index.rank_vector(embedding, depth);
        // Hybrid exactly as the endpoint answers (top 10 for MRR@10; its top 6 are the same
        // as with top_k 6, since the fusion depth is 50 either way).
        let (hits, mode) = index.search(&q.text, Some(embedding), MRR_DEPTH);
        assert_eq!(mode, Mode::Hybrid);
        let documents = |r: &[Scored]| -> Vec<&str> {
            r.iter()
                .filter_map(|s| index.chunk(s.doc).map(|c| c.document_id.as_str()))
                .collect()
        };
        let rankings = [
            documents(&bm25),
            documents(&vector),
            hits.iter().map(|h| h.document_id.as_str()).collect(),
        ];
        if std::env::var("KB_QUALITY_DEBUG").is_ok_and(|v| v == "1") {
            println!(
                "{} [{}] {:?} relevant {:?}",
                q.id, q.kind, q.text, q.relevant
            );
            for (name, ranking) in RANKERS.iter().zip(&rankings) {
                println!(
                    "  {name:<6} {}",
                    ranking[..ranking.len().min(TOP_K)].join(" ")
                );
            }
        }
        let scores = [
            score(&rankings[0], &q.relevant),
            score(&rankings[1], &q.relevant),
            score(&rankings[2], &q.relevant),
        ];
        for (name, totals) in groups.iter_mut() {
            if name == "all" || *name == q.kind || *name == q.lang {
                totals.add(scores);
            }
        }
        let _ = writeln!(
            per_query,
            "| {} | {} | {} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} |",
            q.id,
            q.lang,
            q.kind,
            scores[0].recall,
            scores[1].recall,
            scores[2].recall,
            scores[0].rr,
            scores[1].rr,
            scores[2].rr,
        );
    }

    let mut table = String::from(
        "| queries | n | recall@6 bm25 | recall@6 vector | recall@6 hybrid | MRR@10 bm25 | MRR@10 vector | MRR@10 hybrid |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (name, totals) in &groups {
        let m: Vec<Score> = (0..3).map(|r| totals.mean(r)).collect();
        let _ = writeln!(
            table,
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            totals.n, m[0].recall, m[1].recall, m[2].recall, m[0].rr, m[1].rr, m[2].rr
        );
    }
    println!(
        "{n_documents} documents, {n_chunks} chunks, {} queries\n\n{table}",
        queries.len()
    );

    if std::env::var("KB_WRITE_REPORT").is_ok_and(|v| v == "1") {
        write_report(
            &table,
            &per_query,
            n_documents,
            n_chunks,
            queries.len(),
            &cache,
        );
    }

    let all = &groups[0].1;
    let (bm25, vector, hybrid) = (all.mean(0), all.mean(1), all.mean(2));
    for (ranker, single) in [(RANKERS[0], bm25), (RANKERS[1], vector)] {
        assert!(
            hybrid.recall > single.recall,
            "hybrid recall@6 {:.3} does not beat {ranker} {:.3}",
            hybrid.recall,
            single.recall
        );
    }
}

fn write_report(
    table: &str,
    per_query: &str,
    n_documents: usize,
    n_chunks: usize,
    n_queries: usize,
    cache: &Cache,
) {
    let report = format!(
        "# kb-retrieve: retrieval quality on the sample knowledge base\n\n\
         Written by `KB_WRITE_REPORT=1 cargo test -p kb-retrieve --test quality`; do not edit by hand.\n\n\
         - Corpus: `infra/kb/docs/` — {n_documents} documents (German and English), {n_chunks} chunks \
         from the default chunker (800 characters target, 100 overlap).\n\
         - Queries: `infra/kb/eval.json` — {n_queries}, `keyword` ones share a content word with \
         a relevant document, `paraphrase` ones share none.\n\
         - Embeddings: {} ({} dimensions), recorded in `infra/kb/{CACHE}`.\n\
         - Rankers: BM25 (k1 1.2, b 0.75, German/English tokenizer), exact cosine similarity, and \
         their reciprocal rank fusion (k 60, each ranker's top 50, BM25 hits below a fifth of the \
         query's BM25 weight not voting) — the production path (`Index::search`).\n\
         - recall@6: share of the relevant documents among the documents of the top 6 chunks, \
         averaged over the queries. MRR@10: mean of 1 / rank of the first chunk of a relevant \
         document within the top 10 (0 if none).\n\n\
         {table}\n\
         Reading it:\n\n\
         - Paraphrases share no content word with their documents by construction, so BM25 \
         finds next to nothing there and hybrid can only match the vector ranking; that it does \
         not fall below it is the point of the BM25 floor. Without the floor (plain RRF over both \
         top-50 lists) hybrid recall@6 was 0.603 when the floor was introduced, below the \
         vectors alone, because BM25's weak matches on generic words outvoted the vector hits.\n\
         - all-MiniLM-L6-v2 is an English model: German queries and cross-lingual matches are \
         its weak side, BM25 (with the German stemmer, umlaut folding and compound splitting) \
         carries them, which is why hybrid gains most on `de`.\n\n\
         ## Per query\n\n\
         recall@6 and reciprocal rank (top 10) as bm25 / vector / hybrid.\n\n\
         | query | lang | kind | recall@6 | reciprocal rank |\n\
         | --- | --- | --- | --- | --- |\n\
         {per_query}",
        cache.model, cache.dimensions
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("QUALITY.md");
    std::fs::write(&path, report).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    println!("wrote {}", path.display());
}
