//! The in-memory knowledge base of one version: chunk texts, the BM25 index and, when the
//! stored embeddings fit the configured model, the vector matrix. Immutable once built; a
//! new version gets a new `Index` (see `live.rs`).

use knowledge::kb::{Chunk, KbVersion};
use serde::Serialize;

use crate::bm25::Bm25Index;
use crate::fusion::{self, Fused, RankScore};
use crate::rank::Scored;
use crate::tokenize;
use crate::vectors::VectorIndex;

/// Each ranker contributes its best `max(50, 5 · top_k)` to the fusion.
pub const MIN_FUSION_DEPTH: usize = 50;

pub fn fusion_depth(top_k: usize) -> usize {
    MIN_FUSION_DEPTH.max(top_k.saturating_mul(5))
}

/// In hybrid mode a BM25 hit votes only if it matches at least this share of the query's
/// BM25 weight (its score over [`Bm25Index::max_score`]). BM25 ranks *something* for
/// nearly every query; for a paraphrase that is chunks sharing a generic word or two, and
/// with k = 60 their votes (rank 1 ≈ rank 40) outweighed the vector ranking's clear hits.
/// On the sample KB (`QUALITY.md`) hybrid recall@6 was 0.60 without the floor (below the
/// vectors' 0.64) and 0.67 with it, the same for fusion depths 6 to 50; 0.15 to 0.25 gave
/// 0.66 to 0.67, 0.35 started to drop real keyword hits (0.64).
pub const MIN_BM25_COVERAGE: f32 = 0.2;

/// What the configured embeddings endpoint produces; stored embeddings must match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingSpec {
    pub model: String,
    /// `None`: whatever length the model gives (the stored one is taken).
    pub dimensions: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 and vectors, fused.
    Hybrid,
    /// BM25 alone (no usable embeddings).
    Bm25,
    /// Ranked by an Amazon Bedrock knowledge base (`KB_BACKEND=bedrock`).
    Bedrock,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hybrid => "hybrid",
            Self::Bm25 => "bm25",
            Self::Bedrock => "bedrock",
        }
    }
}

#[derive(Debug)]
pub struct IndexedChunk {
    pub id: String,
    pub document_id: String,
    pub content: String,
}

/// One result of [`Index::search`], in the reply's shape.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Hit {
    pub id: String,
    pub document_id: String,
    pub content: String,
    /// Reciprocal-rank-fusion score.
    pub score: f32,
    pub bm25: Option<RankVerdict>,
    pub vector: Option<RankVerdict>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RankVerdict {
    pub rank: u32,
    pub score: f32,
}

impl From<RankScore> for RankVerdict {
    fn from(r: RankScore) -> Self {
        Self {
            rank: r.rank,
            score: r.score,
        }
    }
}

#[derive(Debug)]
pub struct Index {
    chunks: Vec<IndexedChunk>,
    bm25: Bm25Index,
    vectors: Option<VectorIndex>,
    version: Option<u64>,
    /// Why there are no vectors (logged once at load).
    no_vectors_reason: Option<String>,
}

impl Index {
    /// An empty knowledge base (nothing ingested yet).
    pub fn empty() -> Self {
        Self::build(Vec::new(), None, None)
    }

    /// Indexes `chunks` of `version`. Vectors are kept only when an embeddings endpoint is
    /// configured (`spec`) and the marker says the chunks were embedded with the same model
    /// and length; chunks without a fitting embedding are left out of the vector ranking.
    pub fn build(
        chunks: Vec<Chunk>,
        version: Option<&KbVersion>,
        spec: Option<&EmbeddingSpec>,
    ) -> Self {
        let dims = usable_dimensions(&chunks, version, spec);
        let mut vectors = dims
            .as_ref()
            .ok()
            .map(|&d| VectorIndex::with_capacity(d, chunks.len()));
        let mut unfit = 0usize;
        let mut indexed = Vec::with_capacity(chunks.len());
        for (doc, chunk) in chunks.into_iter().enumerate() {
            if let Some(vectors) = vectors.as_mut() {
                let fits = chunk
                    .embedding
                    .as_deref()
                    .is_some_and(|e| vectors.push(doc as u32, e));
                unfit += usize::from(!fits);
            }
            indexed.push(IndexedChunk {
                id: chunk.id,
                document_id: chunk.document_id,
                content: chunk.content,
            });
        }
        if unfit > 0 {
            tracing::warn!(
                unfit,
                "chunks without an embedding of the expected length are ranked by BM25 only"
            );
        }
        let mut analyzer = tokenize::Analyzer::default();
        let bm25 = Bm25Index::build(indexed.iter().map(|c| analyzer.document_terms(&c.content)));
        let vectors = vectors.filter(|v| !v.is_empty());
        let no_vectors_reason = match (&vectors, dims) {
            (Some(_), _) => None,
            (None, Err(reason)) => Some(reason),
            (None, Ok(_)) => Some("no chunk has a usable embedding".to_owned()),
        };
        Self {
            chunks: indexed,
            bm25,
            vectors,
            version: version.map(|v| v.version),
            no_vectors_reason,
        }
    }

    /// An index read from a snapshot (`snapshot.rs`), whose parts were checked there.
    pub(crate) fn from_parts(
        chunks: Vec<IndexedChunk>,
        bm25: Bm25Index,
        vectors: Option<VectorIndex>,
        version: Option<u64>,
        no_vectors_reason: Option<String>,
    ) -> Self {
        Self {
            chunks,
            bm25,
            vectors,
            version,
            no_vectors_reason,
        }
    }

    pub(crate) fn chunks(&self) -> &[IndexedChunk] {
        &self.chunks
    }

    pub(crate) fn bm25(&self) -> &Bm25Index {
        &self.bm25
    }

    pub fn version(&self) -> Option<u64> {
        self.version
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn chunk(&self, doc: u32) -> Option<&IndexedChunk> {
        self.chunks.get(doc as usize)
    }

    /// The vector matrix, when the vector ranking is available.
    pub fn vectors(&self) -> Option<&VectorIndex> {
        self.vectors.as_ref()
    }

    /// Length of the stored vectors, when the vector ranking is available.
    pub fn vector_dims(&self) -> Option<usize> {
        self.vectors.as_ref().map(VectorIndex::dims)
    }

    pub fn no_vectors_reason(&self) -> Option<&str> {
        self.no_vectors_reason.as_deref()
    }

    /// Heap bytes of postings and matrix (texts and vocabulary excluded), for logs.
    pub fn approx_index_bytes(&self) -> usize {
        self.bm25.postings_bytes() + self.vectors.as_ref().map_or(0, VectorIndex::bytes)
    }

    /// BM25 ranking of `query`: the best `n` chunks.
    pub fn rank_bm25(&self, query: &str, n: usize) -> Vec<Scored> {
        self.bm25.search(&self.bm25_query(query), n)
    }

    fn bm25_query(&self, query: &str) -> Vec<tokenize::QueryTerm> {
        self.bm25.expand_compounds(tokenize::query_terms(query))
    }

    /// The BM25 score of a chunk matching all of `query` (see `Bm25Index::max_score`).
    pub fn bm25_max_score(&self, query: &str) -> f32 {
        self.bm25.max_score(&self.bm25_query(query))
    }

    /// Vector ranking: the `n` chunks nearest to `embedding`; empty without vectors or for
    /// an embedding of another length.
    pub fn rank_vector(&self, embedding: &[f32], n: usize) -> Vec<Scored> {
        self.vectors
            .as_ref()
            .map(|v| v.search(embedding, n))
            .unwrap_or_default()
    }

    /// The `top_k` best chunks for `query`: fused BM25 and vector rankings when there are
    /// vectors and a query embedding of their length, else BM25 alone.
    pub fn search(&self, query: &str, embedding: Option<&[f32]>, top_k: usize) -> (Vec<Hit>, Mode) {
        let depth = fusion_depth(top_k);
        let terms = self.bm25_query(query);
        let bm25 = self.bm25.search(&terms, depth);
        let embedding = embedding.filter(|e| {
            let fits = self.vector_dims() == Some(e.len());
            if !fits && self.vectors.is_some() {
                tracing::warn!(
                    got = e.len(),
                    expected = self.vector_dims(),
                    "query embedding has another length than the stored ones; using BM25"
                );
            }
            fits
        });
        let (vector, mode, floor) = match embedding {
            Some(e) => {
                let floor = MIN_BM25_COVERAGE * self.bm25.max_score(&terms);
                (self.rank_vector(e, depth), Mode::Hybrid, floor)
            }
            None => (Vec::new(), Mode::Bm25, 0.0),
        };
        let hits = fusion::reciprocal_rank_fusion(&bm25, &vector, fusion::RRF_K, floor)
            .into_iter()
            .take(top_k)
            .filter_map(|f| self.hit(&f))
            .collect();
        (hits, mode)
    }

    fn hit(&self, fused: &Fused) -> Option<Hit> {
        let chunk = self.chunk(fused.doc)?;
        Some(Hit {
            id: chunk.id.clone(),
            document_id: chunk.document_id.clone(),
            content: chunk.content.clone(),
            score: fused.score,
            bm25: fused.bm25.map(Into::into),
            vector: fused.vector.map(Into::into),
        })
    }
}

/// The configured embeddings, when stored embeddings of `stored_model` and `stored_dims`
/// can be compared with the queries' (same model, same length); else why not.
pub(crate) fn check_spec<'a>(
    stored_model: Option<&str>,
    stored_dims: Option<u32>,
    spec: Option<&'a EmbeddingSpec>,
) -> Result<&'a EmbeddingSpec, String> {
    let Some(spec) = spec else {
        return Err("no embeddings endpoint is configured".into());
    };
    let Some(stored_model) = stored_model else {
        return Err("the knowledge base was ingested without embeddings".into());
    };
    if stored_model != spec.model {
        return Err(format!(
            "the knowledge base was embedded with {stored_model}, but queries would be embedded with {}",
            spec.model
        ));
    }
    if let (Some(stored), Some(wanted)) = (stored_dims, spec.dimensions)
        && stored != wanted
    {
        return Err(format!(
            "the knowledge base has {stored}-dimensional embeddings, but {wanted} are configured"
        ));
    }
    Ok(spec)
}

/// The vector length to index, or why there will be no vectors.
fn usable_dimensions(
    chunks: &[Chunk],
    version: Option<&KbVersion>,
    spec: Option<&EmbeddingSpec>,
) -> Result<usize, String> {
    let stored_dims = version.and_then(|v| v.dimensions);
    let spec = check_spec(
        version.and_then(|v| v.embedding_model.as_deref()),
        stored_dims,
        spec,
    )?;
    let dims = stored_dims
        .or(spec.dimensions)
        .and_then(|d| usize::try_from(d).ok())
        .or_else(|| {
            chunks
                .iter()
                .find_map(|c| c.embedding.as_ref().map(Vec::len))
        });
    match dims {
        Some(d) if d > 0 => Ok(d),
        _ => Err("no chunk has an embedding".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(doc: &str, position: u32, text: &str, embedding: Option<Vec<f32>>) -> Chunk {
        let mut chunk = Chunk::new(doc, position, text.to_owned());
        chunk.embedding = embedding;
        chunk
    }

    fn version(model: Option<&str>, dims: Option<u32>) -> KbVersion {
        KbVersion {
            version: 7,
            embedding_model: model.map(str::to_owned),
            dimensions: dims,
            updated_at: "2026-01-01T00:00:00Z".into(),
            snapshot: None,
        }
    }

    fn spec(dims: Option<u32>) -> EmbeddingSpec {
        EmbeddingSpec {
            model: "m".into(),
            dimensions: dims,
        }
    }

    fn corpus() -> Vec<Chunk> {
        vec![
            chunk(
                "fuel",
                0,
                "Fuel surcharges on award tickets",
                Some(vec![1.0, 0.0]),
            ),
            chunk(
                "stop",
                0,
                "Stopovers on award tickets",
                Some(vec![0.0, 1.0]),
            ),
            chunk(
                "meilen",
                0,
                "Meilen verfallen nach drei Jahren",
                Some(vec![0.7, 0.7]),
            ),
        ]
    }

    #[test]
    fn hybrid_and_bm25_modes() {
        let v = version(Some("m"), Some(2));
        let index = Index::build(corpus(), Some(&v), Some(&spec(Some(2))));
        assert_eq!(
            (index.len(), index.vector_dims(), index.version()),
            (3, Some(2), Some(7))
        );

        let (hits, mode) = index.search("stopover award", Some(&[0.0, 1.0]), 6);
        assert_eq!(mode, Mode::Hybrid);
        assert_eq!(hits[0].document_id, "stop");
        assert_eq!(hits[0].bm25.map(|r| r.rank), Some(1));
        assert_eq!(hits[0].vector.map(|r| r.rank), Some(1));
        // "meilen" shares no word with the query but is found by its vector.
        let meilen = hits.iter().find(|h| h.document_id == "meilen");
        assert!(meilen.is_some_and(|h| h.bm25.is_none() && h.vector.is_some()));

        let (hits, mode) = index.search("stopover award", None, 6);
        assert_eq!(mode, Mode::Bm25);
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!(hits.iter().all(|h| h.vector.is_none()));

        let (_, mode) = index.search("stopover", Some(&[0.0, 1.0, 0.0]), 6);
        assert_eq!(mode, Mode::Bm25, "a query vector of another length");

        let (hits, _) = index.search("award", Some(&[0.0, 1.0]), 1);
        assert_eq!(hits.len(), 1, "top_k");
    }

    #[test]
    fn vectors_only_when_the_model_and_length_fit() {
        let cases = [
            (version(Some("m"), Some(2)), None, "no embeddings endpoint"),
            (version(None, None), Some(spec(None)), "without embeddings"),
            (
                version(Some("other"), Some(2)),
                Some(spec(None)),
                "embedded with other",
            ),
            (
                version(Some("m"), Some(2)),
                Some(spec(Some(3))),
                "2-dimensional",
            ),
        ];
        for (v, s, reason) in cases {
            let index = Index::build(corpus(), Some(&v), s.as_ref());
            assert_eq!(index.vector_dims(), None, "{reason}");
            let why = index.no_vectors_reason().unwrap_or_default();
            assert!(why.contains(reason), "{why:?} vs {reason:?}");
            let (hits, mode) = index.search("award", Some(&[1.0, 0.0]), 6);
            assert_eq!(mode, Mode::Bm25);
            assert_eq!(hits.len(), 2);
        }
        // Length unknown from marker and config: taken from the chunks; misfits skipped.
        let mut chunks = corpus();
        chunks[2].embedding = Some(vec![1.0, 2.0, 3.0]);
        let index = Index::build(chunks, Some(&version(Some("m"), None)), Some(&spec(None)));
        assert_eq!(index.vector_dims(), Some(2));
        let hits = index.rank_vector(&[1.0, 1.0], 10);
        assert_eq!(hits.len(), 2, "the 3-dimensional one is left out");
    }

    #[test]
    fn empty_knowledge_base() {
        let index = Index::empty();
        assert!(index.is_empty());
        let (hits, mode) = index.search("anything", Some(&[1.0]), 6);
        assert!(hits.is_empty());
        assert_eq!(mode, Mode::Bm25);
    }

    #[test]
    fn depth() {
        assert_eq!(fusion_depth(6), 50);
        assert_eq!(fusion_depth(20), 100);
    }
}
