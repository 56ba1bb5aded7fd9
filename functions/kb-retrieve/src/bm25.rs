//! Okapi BM25 (k1 = 1.2, b = 0.75) over an inverted index.
//!
//! Postings live in one contiguous array per field (compressed sparse rows: `offsets[t]..
//! offsets[t + 1]` are term `t`'s postings, sorted by document). A query walks the postings
//! of its terms document-at-a-time, merging the sorted lists, and keeps the best `n` in a
//! bounded heap: its work and memory follow the postings it touches, not the corpus size.
//!
//! idf is Lucene's `ln(1 + (N - df + 0.5) / (df + 0.5))`, which stays positive for terms in
//! more than half of the documents.

use std::collections::HashMap;

use crate::rank::{Scored, TopN};
use crate::tokenize::{self, QueryTerm};

pub const K1: f32 = 1.2;
pub const B: f32 = 0.75;

/// What [`Bm25Index::parts`] lends a snapshot.
pub struct Bm25Parts<'a> {
    pub vocabulary: Vec<&'a str>,
    pub offsets: &'a [u32],
    pub post_docs: &'a [u32],
    pub post_tfs: &'a [u16],
    pub idf: &'a [f32],
    pub doc_norm: &'a [f32],
}

#[derive(Debug, Default)]
pub struct Bm25Index {
    terms: HashMap<Box<str>, u32>,
    /// `terms.len() + 1` entries.
    offsets: Vec<u32>,
    post_docs: Vec<u32>,
    post_tfs: Vec<u16>,
    idf: Vec<f32>,
    /// Per document: `K1 * (1 - B + B * len / avg_len)`.
    doc_norm: Vec<f32>,
}

impl Bm25Index {
    /// Indexes documents given as their terms (see `tokenize::document_terms`); document `i`
    /// is the `i`-th item.
    pub fn build<I, D, S>(documents: I) -> Self
    where
        I: IntoIterator<Item = D>,
        D: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut terms: HashMap<Box<str>, u32> = HashMap::new();
        // Per document its distinct (term, tf), flattened: doc_pairs[doc_start[d]..doc_start[d+1]].
        let mut pairs: Vec<(u32, u16)> = Vec::new();
        let mut doc_start: Vec<usize> = vec![0];
        let mut doc_len: Vec<u32> = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        for document in documents {
            ids.clear();
            for term in document {
                let term = term.as_ref();
                let next = u32::try_from(terms.len()).unwrap_or(u32::MAX);
                let id = match terms.get(term) {
                    Some(&id) => id,
                    None => {
                        terms.insert(term.into(), next);
                        next
                    }
                };
                ids.push(id);
            }
            doc_len.push(u32::try_from(ids.len()).unwrap_or(u32::MAX));
            ids.sort_unstable();
            for run in ids.chunk_by(|a, b| a == b) {
                pairs.push((run[0], u16::try_from(run.len()).unwrap_or(u16::MAX)));
            }
            doc_start.push(pairs.len());
        }

        let n_terms = terms.len();
        let mut df = vec![0u32; n_terms];
        for &(term, _) in &pairs {
            df[term as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(n_terms + 1);
        let mut total = 0u32;
        offsets.push(0);
        for &count in &df {
            total += count;
            offsets.push(total);
        }
        // Filling document by document keeps every posting list sorted by document.
        let mut fill: Vec<u32> = offsets[..n_terms].to_vec();
        let mut post_docs = vec![0u32; pairs.len()];
        let mut post_tfs = vec![0u16; pairs.len()];
        for (doc, window) in doc_start.windows(2).enumerate() {
            for &(term, tf) in &pairs[window[0]..window[1]] {
                let at = fill[term as usize] as usize;
                post_docs[at] = doc as u32;
                post_tfs[at] = tf;
                fill[term as usize] += 1;
            }
        }

        let n_docs = doc_len.len() as f32;
        let idf = df
            .iter()
            .map(|&df| (1.0 + (n_docs - df as f32 + 0.5) / (df as f32 + 0.5)).ln())
            .collect();
        let avg_len = if doc_len.is_empty() {
            1.0
        } else {
            (doc_len.iter().map(|&l| f64::from(l)).sum::<f64>() / doc_len.len() as f64).max(1.0)
        };
        let doc_norm = doc_len
            .iter()
            .map(|&len| K1 * (1.0 - B + B * (f64::from(len) / avg_len) as f32))
            .collect();
        Self {
            terms,
            offsets,
            post_docs,
            post_tfs,
            idf,
            doc_norm,
        }
    }

    /// The index as a snapshot stores it: the vocabulary in term-id order, then the
    /// postings, idf and per-document norms as they are held.
    pub fn parts(&self) -> Bm25Parts<'_> {
        let mut vocabulary: Vec<&str> = vec![""; self.terms.len()];
        for (term, &id) in &self.terms {
            if let Some(slot) = vocabulary.get_mut(id as usize) {
                *slot = term;
            }
        }
        Bm25Parts {
            vocabulary,
            offsets: &self.offsets,
            post_docs: &self.post_docs,
            post_tfs: &self.post_tfs,
            idf: &self.idf,
            doc_norm: &self.doc_norm,
        }
    }

    /// An index read back from its parts; `None` when they do not fit together (so a
    /// query can never index out of bounds).
    pub fn from_parts(
        vocabulary: Vec<String>,
        offsets: Vec<u32>,
        post_docs: Vec<u32>,
        post_tfs: Vec<u16>,
        idf: Vec<f32>,
        doc_norm: Vec<f32>,
    ) -> Option<Self> {
        let n_terms = vocabulary.len();
        let sorted = offsets.windows(2).all(|w| w[0] <= w[1]);
        let fits = offsets.len() == n_terms + 1
            && offsets.first() == Some(&0)
            && offsets.last().map(|&l| l as usize) == Some(post_docs.len())
            && sorted
            && post_tfs.len() == post_docs.len()
            && idf.len() == n_terms
            && post_docs.iter().all(|&d| (d as usize) < doc_norm.len());
        if !fits {
            return None;
        }
        let terms: HashMap<Box<str>, u32> = vocabulary
            .into_iter()
            .enumerate()
            .map(|(id, term)| (term.into_boxed_str(), id as u32))
            .collect();
        (terms.len() == n_terms).then_some(Self {
            terms,
            offsets,
            post_docs,
            post_tfs,
            idf,
            doc_norm,
        })
    }

    pub fn documents(&self) -> usize {
        self.doc_norm.len()
    }

    pub fn vocabulary(&self) -> usize {
        self.terms.len()
    }

    /// Heap bytes of the postings and per-term arrays (the vocabulary's strings excluded).
    pub fn postings_bytes(&self) -> usize {
        self.post_docs.len() * 4 + self.post_tfs.len() * 2 + self.offsets.len() * 4
    }

    /// `query` with each word the index does not know, but whose parts it does, replaced by
    /// those parts: "Kreditkartenpunkte" finds "Kreditkarte" and "Punkte". (Only the query
    /// side is split; a compound in a document is found by the same compound.)
    pub fn expand_compounds(&self, query: Vec<QueryTerm>) -> Vec<QueryTerm> {
        let known = |stem: &str| self.terms.contains_key(stem);
        let mut expanded: Vec<QueryTerm> = Vec::with_capacity(query.len());
        for term in query {
            if term.variants.iter().any(|v| known(v)) {
                expanded.push(term);
                continue;
            }
            match tokenize::split_compound(&term.word, known) {
                Some(parts) => {
                    for part in parts {
                        let part = QueryTerm::exact(&part);
                        if !expanded.contains(&part) {
                            expanded.push(part);
                        }
                    }
                }
                None => expanded.push(term),
            }
        }
        expanded
    }

    /// The highest score any document could get for `query`: every word matched with the
    /// idf of its rarest known variant and its term frequency saturated; a word the corpus
    /// lacks altogether counts with the idf of df = 0. Dividing by it puts a score on a 0..1
    /// scale of how much of the query's weight a document matches.
    pub fn max_score(&self, query: &[QueryTerm]) -> f32 {
        let n = self.documents() as f32;
        let unseen = (1.0 + (n + 0.5) / 0.5).ln();
        query
            .iter()
            .map(|term| {
                term.variants
                    .iter()
                    .filter_map(|v| self.terms.get(v.as_str()))
                    .map(|&id| self.idf[id as usize])
                    .reduce(f32::max)
                    .unwrap_or(unseen)
            })
            .sum::<f32>()
            * (K1 + 1.0)
    }

    /// The best `n` documents for `query`, best first. A query term scores with the better
    /// of its variants; documents matching no term are not returned.
    pub fn search(&self, query: &[QueryTerm], n: usize) -> Vec<Scored> {
        // One cursor per variant found in the vocabulary; `group` ties variants of a word.
        struct Cursor {
            group: usize,
            pos: usize,
            end: usize,
            idf: f32,
        }
        let mut cursors: Vec<Cursor> = Vec::new();
        for (group, term) in query.iter().enumerate() {
            for variant in &term.variants {
                if let Some(&id) = self.terms.get(variant.as_str()) {
                    let id = id as usize;
                    cursors.push(Cursor {
                        group,
                        pos: self.offsets[id] as usize,
                        end: self.offsets[id + 1] as usize,
                        idf: self.idf[id],
                    });
                }
            }
        }
        let mut top = TopN::new(n);
        let mut best_per_group = vec![0f32; query.len()];
        while let Some(doc) = cursors
            .iter()
            .filter(|c| c.pos < c.end)
            .map(|c| self.post_docs[c.pos])
            .min()
        {
            let norm = self.doc_norm[doc as usize];
            best_per_group.fill(0.0);
            for c in cursors.iter_mut() {
                if c.pos < c.end && self.post_docs[c.pos] == doc {
                    let tf = f32::from(self.post_tfs[c.pos]);
                    let score = c.idf * tf * (K1 + 1.0) / (tf + norm);
                    let best = &mut best_per_group[c.group];
                    *best = best.max(score);
                    c.pos += 1;
                }
            }
            top.push(doc, best_per_group.iter().sum());
        }
        top.into_sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(words: &[&str]) -> Vec<QueryTerm> {
        words.iter().map(|w| QueryTerm::exact(w)).collect()
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    /// Three documents, lengths 2, 3 and 5 (average 10/3):
    ///   d0 = [fuel, surcharge]          d1 = [fuel, fuel, award]
    ///   d2 = [award, chart, award, chart, stopover]
    /// idf(fuel) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6) = 0.470004
    /// idf(surcharge) = ln(1 + 2.5 / 1.5) = ln(8/3) = 0.980829
    /// norm(d) = 1.2 * (0.25 + 0.75 * len / (10/3)): d0 0.84, d1 1.11, d2 1.65
    /// "fuel":  d1 = 0.470004 * 2 * 2.2 / (2 + 1.11) = 0.664957
    ///          d0 = 0.470004 * 1 * 2.2 / (1 + 0.84) = 0.561961
    /// "fuel surcharge": d0 = 0.561961 + 0.980829 * 2.2 / 1.84 = 1.734691
    #[test]
    fn scores_match_the_hand_computed_example() {
        let index = Bm25Index::build([
            vec!["fuel", "surcharge"],
            vec!["fuel", "fuel", "award"],
            vec!["award", "chart", "award", "chart", "stopover"],
        ]);
        assert_eq!((index.documents(), index.vocabulary()), (3, 5));

        let hits = index.search(&q(&["fuel"]), 10);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![1, 0]);
        assert!(close(hits[0].score, 0.664957), "{hits:?}");
        assert!(close(hits[1].score, 0.561961), "{hits:?}");

        let hits = index.search(&q(&["fuel", "surcharge"]), 10);
        assert_eq!(hits[0].doc, 0);
        assert!(close(hits[0].score, 1.734691), "{hits:?}");
        assert_eq!(hits.len(), 2);

        assert!(index.search(&q(&["nothing"]), 10).is_empty());
        assert_eq!(index.search(&q(&["fuel", "award"]), 1).len(), 1);
    }

    #[test]
    fn a_word_scores_with_its_better_variant_once() {
        let index = Bm25Index::build([vec!["meil", "mile"], vec!["mile"], vec!["other"]]);
        let both = QueryTerm {
            word: "miles".into(),
            variants: vec!["meil".into(), "mile".into()],
        };
        let hits = index.search(std::slice::from_ref(&both), 10);
        let only_mile = index.search(&q(&["mile"]), 10);
        let only_meil = index.search(&q(&["meil"]), 10);
        // d0 matches both variants but scores the better one, not the sum.
        let d0 = hits.iter().find(|h| h.doc == 0).map(|h| h.score);
        let best = only_meil[0].score.max(
            only_mile
                .iter()
                .find(|h| h.doc == 0)
                .map_or(0.0, |h| h.score),
        );
        assert_eq!(d0, Some(best));
        assert_eq!(hits.len(), 2);
    }

    #[test]
    fn unknown_compounds_are_searched_by_their_parts() {
        let index = Bm25Index::build([
            tokenize::document_terms("Punkte der Kreditkarte umwandeln"),
            tokenize::document_terms("Die Luftverkehrsteuer fällt an"),
        ]);
        let expanded = index.expand_compounds(tokenize::query_terms("Kreditkartenpunkte"));
        let stems: Vec<&str> = expanded.iter().map(|t| t.variants[0].as_str()).collect();
        assert_eq!(stems, vec!["kreditkart", "punkt"]);
        assert_eq!(index.search(&expanded, 5).len(), 1);
        // Known words stay whole; words without known parts stay as they are.
        let kept = index.expand_compounds(tokenize::query_terms("Luftverkehrsteuer Zauberwort"));
        assert_eq!(kept, tokenize::query_terms("Luftverkehrsteuer Zauberwort"));
    }

    #[test]
    fn empty_index_and_query() {
        let index = Bm25Index::build(Vec::<Vec<String>>::new());
        assert!(index.search(&q(&["x"]), 5).is_empty());
        let index = Bm25Index::build([vec!["a"]]);
        assert!(index.search(&[], 5).is_empty());
    }
}
