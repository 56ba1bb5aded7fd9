//! Reciprocal rank fusion (Cormack et al. 2009): a document's fused score is
//! `Σ 1 / (k + rank)` over the rankings it appears in (rank 1-based, k = 60). Only ranks
//! count, so BM25 scores and cosine similarities, which live on different scales, mix
//! without calibration, and a hit found by one ranker only still ranks on its merit (the
//! original system sorted by similarity, so BM25-only hits always came last).

use std::collections::HashMap;

use crate::rank::Scored;

pub const RRF_K: f32 = 60.0;

/// A ranker's verdict on one document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankScore {
    /// 1-based.
    pub rank: u32,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub doc: u32,
    pub score: f32,
    pub bm25: Option<RankScore>,
    pub vector: Option<RankScore>,
}

/// Fuses two rankings (each best first). A BM25 hit scoring below `bm25_floor` keeps its
/// verdict but does not vote; a document without any vote is left out. Result best first;
/// ties go to the document with the better single rank, then the lower index.
pub fn reciprocal_rank_fusion(
    bm25: &[Scored],
    vector: &[Scored],
    k: f32,
    bm25_floor: f32,
) -> Vec<Fused> {
    let mut fused: Vec<Fused> = Vec::with_capacity(bm25.len() + vector.len());
    let mut at: HashMap<u32, usize> = HashMap::with_capacity(bm25.len() + vector.len());
    for (list, is_vector) in [(bm25, false), (vector, true)] {
        for (i, hit) in list.iter().enumerate() {
            let rank = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let verdict = RankScore {
                rank,
                score: hit.score,
            };
            let slot = *at.entry(hit.doc).or_insert_with(|| {
                fused.push(Fused {
                    doc: hit.doc,
                    score: 0.0,
                    bm25: None,
                    vector: None,
                });
                fused.len() - 1
            });
            let entry = &mut fused[slot];
            if is_vector || hit.score >= bm25_floor {
                entry.score += 1.0 / (k + rank as f32);
            }
            if is_vector {
                entry.vector = Some(verdict);
            } else {
                entry.bm25 = Some(verdict);
            }
        }
    }
    let best_rank = |f: &Fused| {
        let b = f.bm25.map_or(u32::MAX, |r| r.rank);
        let v = f.vector.map_or(u32::MAX, |r| r.rank);
        b.min(v)
    };
    fused.retain(|f| f.score > 0.0);
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| best_rank(a).cmp(&best_rank(b)))
            .then_with(|| a.doc.cmp(&b.doc))
    });
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(docs: &[u32]) -> Vec<Scored> {
        docs.iter()
            .enumerate()
            .map(|(i, &doc)| Scored {
                doc,
                score: 10.0 - i as f32,
            })
            .collect()
    }

    #[test]
    fn documents_in_both_lists_rise() {
        // bm25: 1, 2, 3; vector: 3, 4, 1.
        let fused = reciprocal_rank_fusion(&list(&[1, 2, 3]), &list(&[3, 4, 1]), RRF_K, 0.0);
        let docs: Vec<u32> = fused.iter().map(|f| f.doc).collect();
        // 1: 1/61 + 1/63, 3: 1/63 + 1/61 (tie, best single rank 1 both → lower index first),
        // 2: 1/62, 4: 1/62 (tie, rank 2 both → lower index).
        assert_eq!(docs, vec![1, 3, 2, 4]);
        assert!((fused[0].score - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-7);
        assert_eq!(
            fused[0].bm25,
            Some(RankScore {
                rank: 1,
                score: 10.0
            })
        );
        assert_eq!(fused[0].vector.map(|r| r.rank), Some(3));
        let four = fused.iter().find(|f| f.doc == 4);
        assert_eq!(four.and_then(|f| f.bm25), None);
        assert_eq!(four.and_then(|f| f.vector).map(|r| r.rank), Some(2));
    }

    #[test]
    fn one_ranker_alone_keeps_its_order() {
        let fused = reciprocal_rank_fusion(&list(&[5, 6, 7]), &[], RRF_K, 0.0);
        assert_eq!(
            fused.iter().map(|f| f.doc).collect::<Vec<_>>(),
            vec![5, 6, 7]
        );
        assert!(fused.iter().all(|f| f.vector.is_none()));
        let fused = reciprocal_rank_fusion(&[], &list(&[9, 8]), RRF_K, 0.0);
        assert_eq!(fused.iter().map(|f| f.doc).collect::<Vec<_>>(), vec![9, 8]);
        assert!(reciprocal_rank_fusion(&[], &[], RRF_K, 0.0).is_empty());
    }

    #[test]
    fn weak_bm25_hits_do_not_vote() {
        // list() scores 10, 9, 8: with a floor of 8.5 only docs 1 and 2 vote.
        let fused = reciprocal_rank_fusion(&list(&[1, 2, 3]), &list(&[4, 3]), RRF_K, 8.5);
        let docs: Vec<u32> = fused.iter().map(|f| f.doc).collect();
        assert_eq!(docs, vec![1, 4, 2, 3]);
        let three = fused.iter().find(|f| f.doc == 3);
        // Its BM25 verdict is still reported, but only the vector vote counts.
        assert_eq!(three.and_then(|f| f.bm25).map(|r| r.rank), Some(3));
        assert!(three.is_some_and(|f| (f.score - 1.0 / 62.0).abs() < 1e-7));
        // Below the floor and in no other list: left out.
        let fused = reciprocal_rank_fusion(&list(&[1, 2, 3]), &[], RRF_K, 8.5);
        assert_eq!(fused.iter().map(|f| f.doc).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn agreement_versus_one_strong_vote() {
        // Doc 1 is first for BM25 only; doc 2 is at `depth` in both rankings.
        let fused_at = |depth: u32| {
            let mut bm25 = list(&[1]);
            let mut vector = list(&[100]);
            for filler in 2..depth {
                bm25.push(Scored {
                    doc: 1000 + filler,
                    score: 1.0,
                });
                vector.push(Scored {
                    doc: 2000 + filler,
                    score: 1.0,
                });
            }
            bm25.push(Scored { doc: 2, score: 0.5 });
            vector.push(Scored { doc: 2, score: 0.5 });
            let fused = reciprocal_rank_fusion(&bm25, &vector, RRF_K, 0.0);
            let pos = |doc| fused.iter().position(|f| f.doc == doc);
            (pos(1), pos(2))
        };
        // 2 / (60 + 40) = 0.020 > 1 / 61 = 0.0164: agreement at rank 40 wins ...
        let (one, two) = fused_at(40);
        assert!(two < one);
        // ... 2 / (60 + 70) = 0.0154 < 0.0164: a double 70th does not.
        let (one, two) = fused_at(70);
        assert!(one < two);
    }
}
