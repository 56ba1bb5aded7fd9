//! Nearest-neighbour search over L2-normalised embeddings, exact scores.
//!
//! All rows sit in one contiguous `Vec<f32>` (row-major). With unit vectors the dot product
//! is the cosine similarity. [`dot`] keeps 16 independent partial sums, which lets LLVM
//! vectorise it (float addition is not associative, so a single running sum would stay
//! scalar) on SSE2 and NEON alike.
//!
//! A linear scan is bound by memory bandwidth: 10k × 1536 f32 are 61 MiB, ~6 ms per query
//! at ~10 GB/s. So every row is also kept as 8-bit codes (one scale per row, a quarter of
//! the bytes), the scan ranks the codes, and the best `4 n` candidates are re-scored
//! exactly from the f32 rows. The quantisation error of a cosine is around 1e-4 (at most
//! ~0.03 in theory), far below the gap between the n-th and the 4n-th candidate, so the
//! result equals the exact scan's (tested); small matrices are scanned exactly anyway.
//!
//! What re-scores the candidates is [`Rescore`]: the f32 rows when the index was built from
//! the chunks, their f16 copy when it was read from a snapshot (half the bytes, a relative
//! error of ~5e-4 per component), or nothing when even that would not fit the function's
//! memory: then the codes' scores stand (`snapshot.rs`).
//!
//! Past [`PRESCAN_ROWS`] rows even the codes are too many bytes to read per query (100k ×
//! 1536 are 146 MiB, ~25 ms). So each row also keeps its codes' signs as bits (1/8 of the
//! bytes), the bits' Hamming distance to the query's picks the `32 × 4 n` most likely rows
//! (at least [`PRESCAN_MIN`]), and only those are scored by their codes. The sign pattern's
//! Hamming distance estimates the angle between two vectors; neighbours of a real embedding
//! model sit well inside that margin (a recall test on clustered vectors guards it).

use half::f16;

use crate::rank::{Scored, TopN};

const LANES: usize = 16;
const CODE_LANES: usize = 32;
/// Candidates re-scored exactly per result wanted.
const OVERSAMPLE: usize = 4;
/// Below this many rows the f32 matrix is scanned directly.
const EXACT_SCAN_ROWS: usize = 2048;
/// Above this many rows the code scan is preceded by the 1-bit pre-scan.
pub const PRESCAN_ROWS: usize = 20_000;
/// Rows the pre-scan passes on per candidate the code scan keeps ...
const PRESCAN_OVERSAMPLE: usize = 32;
/// ... and at least this many.
const PRESCAN_MIN: usize = 2048;

/// The rows the best candidates of the code scan are scored again with.
#[derive(Debug, Default)]
pub enum Rescore {
    /// The normalised f32 rows, row-major.
    F32(Vec<f32>),
    /// The same rows as f16.
    F16(Vec<f16>),
    /// None: the code scan's scores are the result.
    #[default]
    None,
}

impl Rescore {
    fn bytes(&self) -> usize {
        match self {
            Self::F32(v) => v.capacity() * 4,
            Self::F16(v) => v.capacity() * 2,
            Self::None => 0,
        }
    }
}

#[derive(Debug, Default)]
pub struct VectorIndex {
    dims: usize,
    /// What [`Self::push`] added: the normalised f32 rows (else empty).
    data: Vec<f32>,
    /// Set when the index was read from a snapshot: what re-scores instead of `data`.
    rescore: Option<Rescore>,
    /// Row → document index (documents without a usable embedding have no row).
    rows: Vec<u32>,
    /// `data` quantised: per row `round(x / scale)` in -127..=127 ...
    codes: Vec<i8>,
    /// ... with `scale = max |x| / 127` of the row.
    scales: Vec<f32>,
    /// Per row the signs of its codes (bit set: positive), [`words`] u64 each.
    bits: Vec<u64>,
}

impl VectorIndex {
    pub fn new(dims: usize) -> Self {
        Self {
            dims,
            ..Self::default()
        }
    }

    /// An index read from a snapshot: its row map, codes and scales as stored, `rescore`
    /// for the candidates. `None` when the parts do not fit together.
    pub fn from_parts(
        dims: usize,
        rows: Vec<u32>,
        codes: Vec<i8>,
        scales: Vec<f32>,
        rescore: Rescore,
    ) -> Option<Self> {
        let cells = dims.checked_mul(rows.len())?;
        let rescore_fits = match &rescore {
            Rescore::F32(v) => v.len() == cells,
            Rescore::F16(v) => v.len() == cells,
            Rescore::None => true,
        };
        if dims == 0 || codes.len() != cells || scales.len() != rows.len() || !rescore_fits {
            return None;
        }
        let mut bits = Vec::with_capacity(words(dims) * rows.len());
        codes
            .chunks_exact(dims)
            .for_each(|row| sign_bits(row, &mut bits));
        Some(Self {
            dims,
            data: Vec::new(),
            rescore: Some(rescore),
            rows,
            codes,
            scales,
            bits,
        })
    }

    /// The row map, codes and scales, as a snapshot stores them.
    pub fn parts(&self) -> (&[u32], &[i8], &[f32]) {
        (&self.rows, &self.codes, &self.scales)
    }

    /// The normalised rows as f16 (what a snapshot's rescoring object holds), when this
    /// index has them in f32 or f16.
    pub fn rows_f16(&self) -> Option<Vec<f16>> {
        match &self.rescore {
            None if self.data.len() == self.rows.len() * self.dims => {
                Some(self.data.iter().map(|&x| f16::from_f32(x)).collect())
            }
            Some(Rescore::F32(v)) => Some(v.iter().map(|&x| f16::from_f32(x)).collect()),
            Some(Rescore::F16(v)) => Some(v.clone()),
            _ => None,
        }
    }

    /// Whether the candidates are scored exactly (f32 or f16 rows) rather than by codes.
    pub fn rescores(&self) -> bool {
        !matches!(self.rescore, Some(Rescore::None))
    }

    pub fn with_capacity(dims: usize, rows: usize) -> Self {
        Self {
            dims,
            data: Vec::with_capacity(dims.saturating_mul(rows)),
            rescore: None,
            rows: Vec::with_capacity(rows),
            codes: Vec::with_capacity(dims.saturating_mul(rows)),
            scales: Vec::with_capacity(rows),
            bits: Vec::with_capacity(words(dims).saturating_mul(rows)),
        }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Heap bytes of the matrices and the row map.
    pub fn bytes(&self) -> usize {
        self.data.capacity() * 4
            + self.rescore.as_ref().map_or(0, Rescore::bytes)
            + self.codes.capacity()
            + self.scales.capacity() * 4
            + self.rows.capacity() * 4
            + self.bits.capacity() * 8
    }

    /// Adds `doc`'s embedding, normalised. Refuses (false) a vector of another length, or
    /// one that cannot be normalised (zero, NaN or infinite components).
    pub fn push(&mut self, doc: u32, embedding: &[f32]) -> bool {
        if embedding.len() != self.dims || self.dims == 0 || self.rescore.is_some() {
            return false;
        }
        let start = self.data.len();
        self.data.extend_from_slice(embedding);
        if normalize(&mut self.data[start..]) {
            let first_code = self.codes.len();
            let scale = quantize(&self.data[start..], &mut self.codes);
            sign_bits(&self.codes[first_code..], &mut self.bits);
            self.scales.push(scale);
            self.rows.push(doc);
            true
        } else {
            self.data.truncate(start);
            false
        }
    }

    /// The `n` rows most similar to `query` (any length-`dims` vector; normalised here),
    /// best first, scored by cosine similarity. Empty for a query of the wrong length.
    pub fn search(&self, query: &[f32], n: usize) -> Vec<Scored> {
        let prescan = (self.rows.len() > PRESCAN_ROWS).then(|| {
            candidates(n)
                .saturating_mul(PRESCAN_OVERSAMPLE)
                .max(PRESCAN_MIN)
        });
        self.ranked(query, n, prescan)
    }

    /// [`Self::search`] without the 1-bit pre-scan: every row's codes are scored (what the
    /// pre-scan's recall is measured against).
    pub fn search_exhaustive(&self, query: &[f32], n: usize) -> Vec<Scored> {
        self.ranked(query, n, None)
    }

    /// The ranking, with the pre-scan keeping `prescan` rows when set.
    fn ranked(&self, query: &[f32], n: usize, prescan: Option<usize>) -> Vec<Scored> {
        let mut q = query.to_vec();
        if q.len() != self.dims || !normalize(&mut q) {
            return Vec::new();
        }
        let candidates = candidates(n);
        if self.rescore.is_none() && self.rows.len() <= EXACT_SCAN_ROWS.max(candidates) {
            return self.scan_exact(&q, n);
        }
        let rescoring = self.rescores();
        let mut q_codes = Vec::with_capacity(self.dims);
        let q_scale = quantize(&q, &mut q_codes);
        // Without rows to re-score with, the codes' best `n` are the result.
        let mut coarse = TopN::new(if rescoring { candidates } else { n });
        let mut score = |row: usize, codes: &[i8], scale: f32| {
            coarse.push(
                row as u32,
                dot_codes(codes, &q_codes) as f32 * scale * q_scale,
            );
        };
        if let Some(keep) = prescan {
            for row in self.prescan(&q_codes, keep) {
                let cells = row * self.dims..(row + 1) * self.dims;
                if let (Some(codes), Some(&scale)) = (self.codes.get(cells), self.scales.get(row)) {
                    score(row, codes, scale);
                }
            }
        } else {
            let code_rows = self.codes.chunks_exact(self.dims);
            for (row, (codes, &scale)) in code_rows.zip(&self.scales).enumerate() {
                score(row, codes, scale);
            }
        }
        let mut top = TopN::new(n);
        for candidate in coarse.into_sorted() {
            let row = candidate.doc as usize;
            let Some(&doc) = self.rows.get(row) else {
                continue;
            };
            let cells = row * self.dims..(row + 1) * self.dims;
            let score = match &self.rescore {
                Some(Rescore::F16(rows)) => rows.get(cells).map(|values| dot_f16(values, &q)),
                Some(Rescore::F32(rows)) => rows.get(cells).map(|values| dot(values, &q)),
                Some(Rescore::None) => Some(candidate.score),
                None => self.data.get(cells).map(|values| dot(values, &q)),
            };
            if let Some(score) = score {
                top.push(doc, score);
            }
        }
        top.into_sorted()
    }

    /// The (at most) `keep` rows whose sign bits are nearest the query codes' signs by
    /// Hamming distance, in row order. A histogram of the distances finds the cut in two
    /// passes, without sorting; ties at the cut go to the lower rows.
    fn prescan(&self, q_codes: &[i8], keep: usize) -> Vec<usize> {
        let words = words(self.dims);
        let mut q_bits = Vec::with_capacity(words);
        sign_bits(q_codes, &mut q_bits);
        let distances: Vec<u32> = self
            .bits
            .chunks_exact(words)
            .map(|row| hamming(row, &q_bits))
            .collect();
        let mut counts = vec![0usize; words * 64 + 1];
        for &d in &distances {
            if let Some(count) = counts.get_mut(d as usize) {
                *count += 1;
            }
        }
        let (mut cut, mut below) = (0, 0);
        while let Some(&count) = counts.get(cut)
            && below + count <= keep
        {
            below += count;
            cut += 1;
        }
        let mut room_at_cut = keep - below;
        let mut rows = Vec::with_capacity(keep);
        for (row, &d) in distances.iter().enumerate() {
            let d = d as usize;
            if d < cut || (d == cut && room_at_cut > 0) {
                room_at_cut -= usize::from(d == cut);
                rows.push(row);
            }
        }
        rows
    }

    /// [`Self::search`] by a scan of the f32 rows only (the reference in tests).
    pub fn exact(&self, query: &[f32], n: usize) -> Vec<Scored> {
        let mut q = query.to_vec();
        if q.len() != self.dims || !normalize(&mut q) {
            return Vec::new();
        }
        self.scan_exact(&q, n)
    }

    fn scan_exact(&self, q: &[f32], n: usize) -> Vec<Scored> {
        let mut top = TopN::new(n);
        for (row, &doc) in self.data.chunks_exact(self.dims).zip(&self.rows) {
            top.push(doc, dot(row, q));
        }
        top.into_sorted()
    }
}

/// Appends `v` as 8-bit codes to `out`; returns the scale (`x ≈ code * scale`).
fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let inv = 1.0 / scale;
    // The clamp keeps the cast in range; `as` saturates anyway.
    out.extend(
        v.iter()
            .map(|x| (x * inv).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// Rows the code scan keeps for re-scoring when `n` are wanted.
fn candidates(n: usize) -> usize {
    n.saturating_mul(OVERSAMPLE).max(n + 32)
}

/// u64 words of sign bits per row of `dims`.
fn words(dims: usize) -> usize {
    dims.div_ceil(64)
}

/// Appends the signs of `codes` (bit set: positive) as u64 words, the last one zero-padded.
fn sign_bits(codes: &[i8], out: &mut Vec<u64>) {
    out.extend(codes.chunks(64).map(|block| {
        block
            .iter()
            .enumerate()
            .fold(0u64, |word, (i, &c)| word | (u64::from(c > 0) << i))
    }));
}

/// Bits that differ. `count_ones` is `cnt` on NEON; on x86 without POPCNT LLVM vectorises
/// it with SSE2 (3.4 ms for 100k × 1536 bits, 2.6 ms with the instruction).
#[inline]
fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Integer dot product of two code rows. The products fit i16 (|code| ≤ 127), so LLVM can
/// use 16-bit multiply-adds (pmaddwd on x86, smlal on NEON).
#[inline]
fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; CODE_LANES];
    let chunks_a = a.chunks_exact(CODE_LANES);
    let chunks_b = b.chunks_exact(CODE_LANES);
    let tail: i32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(&x, &y)| i32::from(i16::from(x) * i16::from(y)))
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for ((s, &x), &y) in acc.iter_mut().zip(ca).zip(cb) {
            *s += i32::from(i16::from(x) * i16::from(y));
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// Dot product of f16 rows with an f32 query, in f32.
#[inline]
fn dot_f16(a: &[f16], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks_a = a.chunks_exact(LANES);
    let chunks_b = b.chunks_exact(LANES);
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x.to_f32() * y)
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for ((s, x), y) in acc.iter_mut().zip(ca).zip(cb) {
            *s += x.to_f32() * y;
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Scales `v` to unit length; false if it has none (zero or not finite).
pub fn normalize(v: &mut [f32]) -> bool {
    let norm = dot(v, v).sqrt();
    if !norm.is_finite() || norm <= f32::EPSILON {
        return false;
    }
    let inv = 1.0 / norm;
    v.iter_mut().for_each(|x| *x *= inv);
    true
}

/// Dot product of two equally long slices (the shorter length counts otherwise).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut acc = [0f32; LANES];
    let chunks_a = a.chunks_exact(LANES);
    let chunks_b = b.chunks_exact(LANES);
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for ((s, x), y) in acc.iter_mut().zip(ca).zip(cb) {
            *s += x * y;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::MIN_FUSION_DEPTH;

    fn naive(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum::<f64>() as f32
    }

    #[test]
    fn dot_matches_the_naive_sum_for_any_length() {
        for len in [0, 1, 7, 16, 17, 33, 256, 384, 1536] {
            let a: Vec<f32> = (0..len)
                .map(|i| ((i * 7 % 13) as f32 - 6.0) / 10.0)
                .collect();
            let b: Vec<f32> = (0..len)
                .map(|i| ((i * 5 % 11) as f32 - 5.0) / 7.0)
                .collect();
            let (fast, slow) = (dot(&a, &b), naive(&a, &b));
            assert!((fast - slow).abs() < 1e-3, "{len}: {fast} vs {slow}");
        }
    }

    fn random_unit(rng: &mut fastrand::Rng, dims: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dims).map(|_| rng.f32() * 2.0 - 1.0).collect();
        assert!(normalize(&mut v));
        v
    }

    #[test]
    fn coarse_scan_then_rescoring_equals_the_exact_scan() {
        let mut rng = fastrand::Rng::with_seed(11);
        for dims in [100, 384] {
            let mut index = VectorIndex::new(dims);
            for doc in 0..6000 {
                assert!(index.push(doc, &random_unit(&mut rng, dims)));
            }
            for _ in 0..8 {
                let q = random_unit(&mut rng, dims);
                for n in [6, 50] {
                    assert_eq!(
                        index.search(&q, n),
                        index.exact(&q, n),
                        "{dims} dims, n {n}"
                    );
                }
            }
            // A stored vector finds itself first, with similarity 1.
            let own = index.data[dims * 17..dims * 18].to_vec();
            let hits = index.search(&own, 3);
            assert_eq!(hits[0].doc, 17);
            assert!((hits[0].score - 1.0).abs() < 1e-5);
        }
    }

    /// Vectors shaped like a real model's: rows near one of many topic directions, each
    /// query near one row (its source). The pre-scan keeps the share of rows it keeps at
    /// 100k for a top 6 (6,400 of 100k) and must find what scoring every row finds.
    #[test]
    fn prescan_keeps_the_neighbours_of_clustered_vectors() {
        let (dims, topics, rows, spread) = (384, 200, 10_000, 1.25);
        let mut rng = fastrand::Rng::with_seed(5);
        let centres: Vec<Vec<f32>> = (0..topics).map(|_| random_unit(&mut rng, dims)).collect();
        let near = |rng: &mut fastrand::Rng, v: &[f32]| {
            let noise = random_unit(rng, dims);
            let mut out: Vec<f32> = v.iter().zip(&noise).map(|(a, b)| a + spread * b).collect();
            assert!(normalize(&mut out));
            out
        };
        let mut index = VectorIndex::new(dims);
        let mut stored = Vec::with_capacity(rows);
        for doc in 0..rows {
            let topic = rng.usize(..topics);
            let row = near(&mut rng, &centres[topic]);
            assert!(index.push(doc as u32, &row));
            stored.push(row);
        }
        // From a snapshot (codes only, no rescoring rows) as well as built from the rows.
        let (map, codes, scales) = index.parts();
        let codes_only = VectorIndex::from_parts(
            dims,
            map.to_vec(),
            codes.to_vec(),
            scales.to_vec(),
            Rescore::None,
        )
        .expect("parts fit");
        let (queries, n) = (30, 20);
        let keep = candidates(n) * 8;
        assert_eq!(
            keep * 1000 / rows,
            candidates(MIN_FUSION_DEPTH) * PRESCAN_OVERSAMPLE * 1000 / 100_000
        );
        let (mut same_top6, mut found, mut codes_found) = (0, 0, 0);
        for _ in 0..queries {
            let source = rng.usize(..rows);
            let q = near(&mut rng, &stored[source]);
            let exact: Vec<u32> = index.exact(&q, n).iter().map(|h| h.doc).collect();
            let fast: Vec<u32> = index
                .ranked(&q, n, Some(keep))
                .iter()
                .map(|h| h.doc)
                .collect();
            assert_eq!(exact[0], source as u32);
            assert_eq!(fast[0], source as u32);
            same_top6 += usize::from(exact[..6] == fast[..6]);
            found += fast.iter().filter(|d| exact.contains(d)).count();
            let all_codes = codes_only.search_exhaustive(&q, n);
            let pre_codes = codes_only.ranked(&q, n, Some(keep));
            codes_found += pre_codes.iter().filter(|h| all_codes.contains(h)).count();
        }
        let recall = found as f64 / (queries * n) as f64;
        let codes_recall = codes_found as f64 / (queries * n) as f64;
        assert!(
            same_top6 >= queries - 2,
            "top 6 equal in {same_top6} of {queries}"
        );
        assert!(recall >= 0.95, "recall@{n} {recall}");
        assert!(
            codes_recall >= 0.95,
            "codes only: recall@{n} {codes_recall}"
        );
    }

    #[test]
    fn prescan_cut_keeps_exactly_the_nearest_rows() {
        let mut index = VectorIndex::new(64);
        // Row i differs from the query in the sign of its first i components.
        for doc in 0..40u32 {
            let row: Vec<f32> = (0..64).map(|j| if j < doc { -1.0 } else { 1.0 }).collect();
            assert!(index.push(doc, &row));
        }
        let mut q_codes = Vec::new();
        quantize(&[1.0; 64], &mut q_codes);
        assert_eq!(index.prescan(&q_codes, 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(index.prescan(&q_codes, 100).len(), 40);
        assert!(index.prescan(&q_codes, 0).is_empty());
        // Ties at the cut: the lower rows.
        let mut tied = VectorIndex::new(64);
        for doc in 0..10u32 {
            assert!(tied.push(doc, &[1.0; 64]));
        }
        assert_eq!(tied.prescan(&q_codes, 3), vec![0, 1, 2]);
    }

    #[test]
    fn codes() {
        let mut out = Vec::new();
        let scale = quantize(&[0.5, -0.25, 0.0, 0.125], &mut out);
        assert_eq!(out, vec![127, -64, 0, 32]);
        assert!((scale - 0.5 / 127.0).abs() < 1e-9);
        let a: Vec<i8> = (0..70).map(|i| (i % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..70).map(|i| (127 - i * 3 % 255) as i8).collect();
        let naive: i32 = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        assert_eq!(dot_codes(&a, &b), naive);
        let extremes = vec![-127i8; 1536];
        assert_eq!(dot_codes(&extremes, &extremes), 127 * 127 * 1536);
    }

    #[test]
    fn cosine_ranking() {
        let mut index = VectorIndex::new(3);
        assert!(index.push(10, &[1.0, 0.0, 0.0]));
        assert!(index.push(11, &[0.0, 2.0, 0.0]));
        assert!(index.push(12, &[1.0, 1.0, 0.0]));
        assert!(!index.push(13, &[0.0, 0.0, 0.0]), "zero vector");
        assert!(!index.push(14, &[1.0, f32::NAN, 0.0]), "NaN");
        assert!(!index.push(15, &[1.0, 0.0]), "wrong length");
        assert_eq!(index.len(), 3);

        let hits = index.search(&[0.0, 5.0, 0.0], 2);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![11, 12]);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert!((hits[1].score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!(
            index.search(&[1.0, 0.0], 2).is_empty(),
            "wrong query length"
        );
        assert!(index.search(&[0.0, 0.0, 0.0], 2).is_empty(), "zero query");
    }
}
