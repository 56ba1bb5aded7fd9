//! `kb-retrieve`: the `POST /kb/search` Lambda, hybrid retrieval over the knowledge base
//! (seed 000 §7, issue 4).
//!
//! Flow: validate `{query, top_k?}` (query non-empty, at most 2000 characters; `top_k`
//! clamped to 1..=20, default 6) → the in-memory index of the current KB version (`live`:
//! loaded at cold start, reloaded when the version marker moves, the marker read at most
//! every `KB_VERSION_CHECK_SECS`) → the query embedding (`embed`: LRU-cached, within
//! `KB_EMBEDDING_TIMEOUT_MS`) → BM25 and vector rankings, `max(50, 5 · top_k)` deep each,
//! fused by reciprocal rank (k = 60) → the best `top_k`.
//!
//! Decisions:
//! - `mode` is `hybrid` when the KB holds embeddings of the configured model and length and
//!   the query embedding arrived; otherwise `bm25`. A failing or slow embeddings endpoint is
//!   a warning and a BM25 answer, never an error.
//! - `score` is the fused score in both modes (in `bm25` mode it is `1 / (60 + rank)`), so
//!   it means the same thing whichever rankers took part; each ranker's own rank and score
//!   are in `bm25` / `vector` (null when that ranker did not return the chunk).
//! - In hybrid mode a BM25 hit matching less than a fifth of the query's BM25 weight does
//!   not vote (`index::MIN_BM25_COVERAGE`): on paraphrases BM25 ranks chunks that share a
//!   generic word, and their votes used to push the vector ranking's hits down.
//! - Retrieval is a linear scan of the embeddings (8-bit codes to pick candidates, exact f32
//!   cosine to score them; past 20k rows a 1-bit pre-scan picks the rows whose codes are
//!   scored; `vectors`) and a document-at-a-time walk of the BM25 postings, both keeping a
//!   bounded top-n heap.
//! - `KB_BACKEND=bedrock` answers from an Amazon Bedrock knowledge base instead, in the same
//!   reply shape with `mode: bedrock` (`bedrock_kb`); no index is loaded then.
//! - Tokenizer (`tokenize`): German and English, umlauts / ß folded, Snowball stemming with
//!   the document's language, both stems for query words, unknown German compounds split
//!   into known parts.
//! - Memory and latency figures: `benches/query.rs`; quality: `QUALITY.md`.

pub mod bedrock_kb;
pub mod bm25;
pub mod config;
pub mod embed;
pub mod fusion;
pub mod handler;
pub mod index;
pub mod live;
pub mod publish;
pub mod rank;
pub mod snapshot;
pub mod tokenize;
pub mod vectors;

pub use config::Config;
pub use handler::{Deps, handle, service};
