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

use half::f16;

use crate::rank::{Scored, TopN};

const LANES: usize = 16;
const CODE_LANES: usize = 32;
/// Candidates re-scored exactly per result wanted.
const OVERSAMPLE: usize = 4;
/// Below this many rows the f32 matrix is scanned directly.
const EXACT_SCAN_ROWS: usize = 2048;

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
        (dims > 0 && codes.len() == cells && scales.len() == rows.len() && rescore_fits).then_some(
            Self {
                dims,
                data: Vec::new(),
                rescore: Some(rescore),
                rows,
                codes,
                scales,
            },
        )
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
            let scale = quantize(&self.data[start..], &mut self.codes);
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
        let mut q = query.to_vec();
        if q.len() != self.dims || !normalize(&mut q) {
            return Vec::new();
        }
        let candidates = n.saturating_mul(OVERSAMPLE).max(n + 32);
        if self.rescore.is_none() && self.rows.len() <= EXACT_SCAN_ROWS.max(candidates) {
            return self.scan_exact(&q, n);
        }
        if matches!(self.rescore, Some(Rescore::None)) {
            return self.scan_codes(&q, n);
        }
        let mut q_codes = Vec::with_capacity(self.dims);
        let q_scale = quantize(&q, &mut q_codes);
        let mut coarse = TopN::new(candidates);
        let code_rows = self.codes.chunks_exact(self.dims);
        for (row, (codes, &scale)) in code_rows.zip(&self.scales).enumerate() {
            coarse.push(
                row as u32,
                dot_codes(codes, &q_codes) as f32 * scale * q_scale,
            );
        }
        let mut top = TopN::new(n);
        for candidate in coarse.into_sorted() {
            let row = candidate.doc as usize;
            let cells = row * self.dims..(row + 1) * self.dims;
            let Some(&doc) = self.rows.get(row) else {
                continue;
            };
            let score = match &self.rescore {
                Some(Rescore::F16(rows)) => rows.get(cells).map(|values| dot_f16(values, &q)),
                Some(Rescore::F32(rows)) => rows.get(cells).map(|values| dot(values, &q)),
                _ => self.data.get(cells).map(|values| dot(values, &q)),
            };
            if let Some(score) = score {
                top.push(doc, score);
            }
        }
        top.into_sorted()
    }

    /// Without rows to re-score with: the code scan's best `n`, by the codes' scores.
    fn scan_codes(&self, q: &[f32], n: usize) -> Vec<Scored> {
        let mut q_codes = Vec::with_capacity(self.dims);
        let q_scale = quantize(q, &mut q_codes);
        let mut top = TopN::new(n);
        let code_rows = self.codes.chunks_exact(self.dims);
        for ((codes, &scale), &doc) in code_rows.zip(&self.scales).zip(&self.rows) {
            top.push(doc, dot_codes(codes, &q_codes) as f32 * scale * q_scale);
        }
        top.into_sorted()
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
