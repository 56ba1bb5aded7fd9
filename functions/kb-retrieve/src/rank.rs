//! Partial top-n selection shared by both rankers: a bounded min-heap, so a scan over the
//! whole corpus keeps only `n` candidates and never sorts (or allocates for) the rest.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A document (chunk index) and its score from one ranker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub doc: u32,
    pub score: f32,
}

impl Eq for Scored {}

impl Ord for Scored {
    /// Better first: higher score, then the lower document index (deterministic ties).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Keeps the `n` best of everything pushed.
pub struct TopN {
    n: usize,
    heap: BinaryHeap<Reverse<Scored>>,
}

impl TopN {
    pub fn new(n: usize) -> Self {
        Self {
            n,
            heap: BinaryHeap::with_capacity(n.saturating_add(1).min(4096)),
        }
    }

    /// The score a candidate must beat to get in, once `n` are held.
    #[inline]
    pub fn threshold(&self) -> Option<f32> {
        if self.heap.len() < self.n {
            None
        } else {
            self.heap.peek().map(|r| r.0.score)
        }
    }

    #[inline]
    pub fn push(&mut self, doc: u32, score: f32) {
        if self.n == 0 || score.is_nan() {
            return;
        }
        let item = Scored { doc, score };
        if self.heap.len() < self.n {
            self.heap.push(Reverse(item));
        } else if let Some(mut worst) = self.heap.peek_mut()
            && item > worst.0
        {
            *worst = Reverse(item);
        }
    }

    /// Best first.
    pub fn into_sorted(self) -> Vec<Scored> {
        // Ascending by Reverse = descending by score.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_in_order() {
        let mut top = TopN::new(3);
        for (doc, score) in [
            (0, 0.5),
            (1, 0.9),
            (2, 0.1),
            (3, 0.9),
            (4, 0.7),
            (5, f32::NAN),
        ] {
            top.push(doc, score);
        }
        assert_eq!(top.threshold(), Some(0.7));
        let docs: Vec<u32> = top.into_sorted().iter().map(|s| s.doc).collect();
        assert_eq!(docs, vec![1, 3, 4]);
        let mut none = TopN::new(0);
        none.push(1, 1.0);
        assert!(none.into_sorted().is_empty());
    }
}
