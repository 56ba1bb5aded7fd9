//! The index as two objects `kb-ingest` publishes after each change and kb-retrieve loads in
//! one read each: the **index snapshot** (chunk texts and ids, the BM25 postings, the 8-bit
//! vector codes with their scales) and the **rescoring rows** (the normalised vectors as
//! f16, which re-score the code scan's best candidates; read only when they fit the
//! function's memory, `vectors.rs`).
//!
//! Both are a 64-byte header and a payload. The header holds the magic, the format version,
//! the knowledge-base version the object was built from, the payload's length and its
//! CRC-32; a reader refuses an object whose magic, format, length or checksum is not what it
//! expects, before it reads a field. The payload is little-endian arrays laid out as the
//! index holds them, so reading is a copy per array, and every length and offset is checked
//! against the others before the index is built from them.
//!
//! Index snapshot payload:
//!
//! | field | type |
//! | --- | --- |
//! | embedding model | string (empty: none) |
//! | chunk ids, document ids, contents | 3 × string list |
//! | BM25 vocabulary (in term-id order) | string list |
//! | BM25 offsets, posting documents, posting term frequencies, idf, document norms | u32s, u32s, u16s, f32s, f32s |
//! | vector dimensions (0: no vectors), row map, scales, codes | u32, u32s, f32s, i8s |
//!
//! A string list is a count, `count + 1` u32 offsets and the UTF-8 bytes; an array is a u64
//! count and its items. The rescoring payload is the dimensions (u32), the row count (u32)
//! and the rows' f16 values.

use std::io::Read;

use domain::{Error, Result};
use half::f16;
use knowledge::kb::KbVersion;

use crate::bm25::Bm25Index;
use crate::index::{EmbeddingSpec, Index, IndexedChunk, check_spec};
use crate::vectors::{Rescore, VectorIndex};

/// The index snapshot's magic; `\r\n` shows a transfer that rewrote line ends.
pub const INDEX_MAGIC: [u8; 8] = *b"KBINDX\r\n";
/// The rescoring rows' magic.
pub const RESCORE_MAGIC: [u8; 8] = *b"KBRSCR\r\n";
/// The payload layout this build reads and writes.
pub const FORMAT: u32 = 1;
const HEADER_BYTES: usize = 64;

/// What `kb-ingest` uploads for one version.
#[derive(Debug)]
pub struct Snapshot {
    pub index: Vec<u8>,
    /// `None` without vectors.
    pub rescore: Option<Vec<u8>>,
}

/// The header fields a reader checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub format: u32,
    pub kb_version: u64,
    pub payload_bytes: u64,
    pub crc32: u32,
}

fn corrupt(what: &str, reason: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("knowledge-base {what}: {reason}"))
}

/// The snapshot of `index`, which was built from the chunks of `version`.
pub fn encode(index: &Index, version: &KbVersion) -> Result<Snapshot> {
    let mut w = Writer::default();
    w.string(version.embedding_model.as_deref().unwrap_or_default())?;
    let chunks = index.chunks();
    w.strings(chunks.iter().map(|c| c.id.as_str()))?;
    w.strings(chunks.iter().map(|c| c.document_id.as_str()))?;
    w.strings(chunks.iter().map(|c| c.content.as_str()))?;
    let bm25 = index.bm25().parts();
    w.strings(bm25.vocabulary.iter().copied())?;
    w.u32s(bm25.offsets);
    w.u32s(bm25.post_docs);
    w.u16s(bm25.post_tfs);
    w.f32s(bm25.idf);
    w.f32s(bm25.doc_norm);
    let vectors = index.vectors();
    let rescore = match vectors {
        Some(v) => {
            let (rows, codes, scales) = v.parts();
            w.u32(u32_of(v.dims(), "vector dimensions")?);
            w.u32s(rows);
            w.f32s(scales);
            w.i8s(codes);
            v.rows_f16()
                .map(|values| {
                    let mut r = Writer::default();
                    r.u32(u32_of(v.dims(), "vector dimensions")?);
                    r.u32(u32_of(rows.len(), "vector rows")?);
                    r.f16s(&values);
                    Ok::<_, Error>(r.finish(RESCORE_MAGIC, version.version))
                })
                .transpose()?
        }
        None => {
            w.u32(0);
            None
        }
    };
    Ok(Snapshot {
        index: w.finish(INDEX_MAGIC, version.version),
        rescore,
    })
}

/// Reads the header from `input`: magic and format checked, the rest for the payload.
fn read_header(input: &mut impl Read, magic: [u8; 8], what: &'static str) -> Result<Header> {
    let mut head = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        match input.read(&mut head[filled..]) {
            Ok(0) => {
                return Err(corrupt(
                    what,
                    format!("{filled} bytes, shorter than its header"),
                ));
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(what, format!("reading: {e}"))),
        }
    }
    if head[..8] != magic {
        return Err(corrupt(what, "not a snapshot (wrong magic)"));
    }
    let field = |at: usize| -> [u8; 8] {
        let mut out = [0; 8];
        out.copy_from_slice(&head[at..at + 8]);
        out
    };
    let format = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if format != FORMAT {
        return Err(corrupt(
            what,
            format!("format {format}, this build reads format {FORMAT}"),
        ));
    }
    Ok(Header {
        format,
        kb_version: u64::from_le_bytes(field(16)),
        payload_bytes: u64::from_le_bytes(field(24)),
        crc32: u32::from_le_bytes([head[32], head[33], head[34], head[35]]),
    })
}

/// [`read`] over bytes at hand (tests, tools).
pub fn decode(bytes: &[u8], rescore: Option<&[u8]>, spec: Option<&EmbeddingSpec>) -> Result<Index> {
    read(bytes, rescore, spec)
}

/// Reads an index snapshot from `input` as it arrives, each array straight into the vector
/// the index keeps (so a load needs the index's memory, not twice it), and, when given, its
/// rescoring rows. The checksum is checked when the last byte is in, before the index is
/// returned. The vectors are left out (BM25 only, with the reason) when the snapshot's
/// embeddings do not fit `spec`, as [`Index::build`] does; without rescoring rows the code
/// scan's scores stand.
pub fn read(
    mut input: impl Read,
    rescore: Option<impl Read>,
    spec: Option<&EmbeddingSpec>,
) -> Result<Index> {
    const WHAT: &str = "index snapshot";
    let header = read_header(&mut input, INDEX_MAGIC, WHAT)?;
    let mut r = Reader::new(input, header, WHAT);
    let model = r.string()?;
    let ids = r.strings()?;
    let document_ids = r.strings()?;
    let contents = r.strings()?;
    if ids.len() != document_ids.len() || ids.len() != contents.len() {
        return Err(corrupt(WHAT, "chunk fields of different counts"));
    }
    let chunks: Vec<IndexedChunk> = ids
        .into_iter()
        .zip(document_ids)
        .zip(contents)
        .map(|((id, document_id), content)| IndexedChunk {
            id,
            document_id,
            content,
        })
        .collect();
    let vocabulary = r.strings()?;
    let (offsets, post_docs, post_tfs) = (r.u32s()?, r.u32s()?, r.u16s()?);
    let (idf, doc_norm) = (r.f32s()?, r.f32s()?);
    let dims = r.u32()? as usize;
    let stored = if dims == 0 {
        None
    } else {
        Some((r.u32s()?, r.f32s()?, r.i8s()?))
    };
    r.finish()?;
    if doc_norm.len() != chunks.len() {
        return Err(corrupt(WHAT, "BM25 norms do not match the chunks"));
    }
    let bm25 = Bm25Index::from_parts(vocabulary, offsets, post_docs, post_tfs, idf, doc_norm)
        .ok_or_else(|| corrupt(WHAT, "BM25 postings do not fit together"))?;
    if let Some((rows, _, _)) = &stored
        && rows.iter().any(|&doc| doc as usize >= chunks.len())
    {
        return Err(corrupt(WHAT, "a vector row names no chunk"));
    }

    let model = (!model.is_empty()).then_some(model);
    let fits = match &stored {
        None => Err("the knowledge base was ingested without embeddings".to_owned()),
        Some(_) => check_spec(model.as_deref(), u32::try_from(dims).ok(), spec).map(|_| ()),
    };
    let (vectors, reason) = match (stored, fits) {
        (Some((rows, scales, codes)), Ok(())) => {
            let rescore = match rescore {
                Some(input) => rescore_rows(input, header.kb_version, dims, rows.len())?,
                None => Rescore::None,
            };
            let vectors = VectorIndex::from_parts(dims, rows, codes, scales, rescore)
                .ok_or_else(|| corrupt(WHAT, "vector codes do not fit their rows"))?;
            (Some(vectors).filter(|v| !v.is_empty()), None)
        }
        (_, Err(reason)) => (None, Some(reason)),
        (None, Ok(())) => (None, None),
    };
    let reason = reason.or_else(|| {
        vectors
            .is_none()
            .then(|| "no chunk has a usable embedding".to_owned())
    });
    Ok(Index::from_parts(
        chunks,
        bm25,
        vectors,
        Some(header.kb_version),
        reason,
    ))
}

/// The rescoring rows, checked against the snapshot they belong to.
fn rescore_rows(
    mut input: impl Read,
    kb_version: u64,
    dims: usize,
    rows: usize,
) -> Result<Rescore> {
    const WHAT: &str = "rescoring rows";
    let header = read_header(&mut input, RESCORE_MAGIC, WHAT)?;
    if header.kb_version != kb_version {
        return Err(corrupt(
            WHAT,
            format!(
                "built for version {}, the index snapshot is version {kb_version}",
                header.kb_version
            ),
        ));
    }
    let mut r = Reader::new(input, header, WHAT);
    let (stored_dims, stored_rows) = (r.u32()? as usize, r.u32()? as usize);
    if (stored_dims, stored_rows) != (dims, rows) {
        return Err(corrupt(WHAT, "their shape is not the index's"));
    }
    let values = r.f16s()?;
    r.finish()?;
    if values.len() != dims * rows {
        return Err(corrupt(WHAT, "their shape is not the index's"));
    }
    Ok(Rescore::F16(values))
}

fn u32_of(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| corrupt("index snapshot", format!("too many {what}: {n}")))
}

#[derive(Default)]
struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    fn len(&mut self, n: usize) {
        self.out.extend_from_slice(&(n as u64).to_le_bytes());
    }

    fn string(&mut self, s: &str) -> Result<()> {
        self.strings(std::iter::once(s))
    }

    fn strings<'a>(&mut self, items: impl Iterator<Item = &'a str> + Clone) -> Result<()> {
        let count = items.clone().count();
        self.u32(u32_of(count, "strings")?);
        let mut end = 0usize;
        self.u32(0);
        for s in items.clone() {
            end += s.len();
            self.u32(u32_of(end, "text bytes")?);
        }
        for s in items {
            self.out.extend_from_slice(s.as_bytes());
        }
        Ok(())
    }

    fn u32s(&mut self, v: &[u32]) {
        self.len(v.len());
        v.iter()
            .for_each(|x| self.out.extend_from_slice(&x.to_le_bytes()));
    }

    fn u16s(&mut self, v: &[u16]) {
        self.len(v.len());
        v.iter()
            .for_each(|x| self.out.extend_from_slice(&x.to_le_bytes()));
    }

    fn f32s(&mut self, v: &[f32]) {
        self.len(v.len());
        v.iter()
            .for_each(|x| self.out.extend_from_slice(&x.to_le_bytes()));
    }

    fn f16s(&mut self, v: &[f16]) {
        self.len(v.len());
        v.iter()
            .for_each(|x| self.out.extend_from_slice(&x.to_le_bytes()));
    }

    fn i8s(&mut self, v: &[i8]) {
        self.len(v.len());
        self.out.extend(v.iter().map(|&x| x as u8));
    }

    fn finish(self, magic: [u8; 8], kb_version: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.out.len());
        out.extend_from_slice(&magic);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&kb_version.to_le_bytes());
        out.extend_from_slice(&(self.out.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&self.out).to_le_bytes());
        out.resize(HEADER_BYTES, 0);
        out.extend_from_slice(&self.out);
        out
    }
}

/// Bytes read per call when filling an array: arrays are filled a block at a time.
const BLOCK: usize = 64 * 1024;

/// The payload of one object, read in order: every read is bounded by what the header
/// says is left, and feeds the checksum.
struct Reader<R> {
    input: R,
    left: u64,
    crc: crc32fast::Hasher,
    header: Header,
    what: &'static str,
}

impl<R: Read> Reader<R> {
    fn new(input: R, header: Header, what: &'static str) -> Self {
        Self {
            input,
            left: header.payload_bytes,
            crc: crc32fast::Hasher::new(),
            header,
            what,
        }
    }

    /// Fills `out` from the input; a payload shorter than the header said is an error.
    fn fill(&mut self, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 > self.left {
            return Err(corrupt(
                self.what,
                "a field runs past the end of the payload",
            ));
        }
        self.input.read_exact(out).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                corrupt(
                    self.what,
                    format!(
                        "the payload ends early; the header says {} bytes (truncated?)",
                        self.header.payload_bytes
                    ),
                )
            } else {
                corrupt(self.what, format!("reading: {e}"))
            }
        })?;
        self.left -= out.len() as u64;
        self.crc.update(out);
        Ok(())
    }

    fn u32(&mut self) -> Result<u32> {
        let mut b = [0; 4];
        self.fill(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// An array of `width`-byte items: its u64 count, then the items, converted block by
    /// block into the vector that keeps them.
    fn array<T>(&mut self, width: usize, item: impl Fn(&[u8]) -> T) -> Result<Vec<T>> {
        let mut count = [0; 8];
        self.fill(&mut count)?;
        let count = u64::from_le_bytes(count);
        if count.saturating_mul(width as u64) > self.left {
            return Err(corrupt(
                self.what,
                "an array runs past the end of the payload",
            ));
        }
        let count = usize::try_from(count)
            .map_err(|_| corrupt(self.what, "an array too long for this machine"))?;
        let mut out = Vec::with_capacity(count);
        let mut block = vec![0u8; BLOCK - BLOCK % width];
        let mut todo = count;
        while todo > 0 {
            let n = todo.min(block.len() / width);
            let bytes = &mut block[..n * width];
            self.fill(bytes)?;
            out.extend(bytes.chunks_exact(width).map(&item));
            todo -= n;
        }
        Ok(out)
    }

    fn u32s(&mut self) -> Result<Vec<u32>> {
        self.array(4, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }

    fn u16s(&mut self) -> Result<Vec<u16>> {
        self.array(2, |c| u16::from_le_bytes([c[0], c[1]]))
    }

    fn f32s(&mut self) -> Result<Vec<f32>> {
        self.array(4, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }

    fn f16s(&mut self) -> Result<Vec<f16>> {
        self.array(2, |c| f16::from_le_bytes([c[0], c[1]]))
    }

    fn i8s(&mut self) -> Result<Vec<i8>> {
        self.array(1, |c| c[0] as i8)
    }

    fn string(&mut self) -> Result<String> {
        let mut list = self.strings()?;
        match (list.pop(), list.is_empty()) {
            (Some(s), true) => Ok(s),
            _ => Err(corrupt(self.what, "expected one string")),
        }
    }

    /// A count, the strings' end offsets, then each string read into its own `String`.
    fn strings(&mut self) -> Result<Vec<String>> {
        let count = self.u32()? as usize;
        if (count as u64 + 1).saturating_mul(4) > self.left {
            return Err(corrupt(
                self.what,
                "a list runs past the end of the payload",
            ));
        }
        let mut ends = Vec::with_capacity(count + 1);
        for _ in 0..=count {
            ends.push(self.u32()? as usize);
        }
        if ends.first() != Some(&0) || ends.windows(2).any(|w| w[0] > w[1]) {
            return Err(corrupt(self.what, "string offsets out of order"));
        }
        let mut out = Vec::with_capacity(count);
        for w in ends.windows(2) {
            let mut bytes = vec![0u8; w[1] - w[0]];
            self.fill(&mut bytes)?;
            out.push(
                String::from_utf8(bytes).map_err(|_| corrupt(self.what, "text is not UTF-8"))?,
            );
        }
        Ok(out)
    }

    /// The payload is over: nothing follows, and the checksum holds.
    fn finish(mut self) -> Result<()> {
        let mut extra = [0u8; 1];
        if self.left > 0 || matches!(self.input.read(&mut extra), Ok(n) if n > 0) {
            return Err(corrupt(
                self.what,
                "bytes after the last field (not the length the header says)",
            ));
        }
        if self.crc.clone().finalize() != self.header.crc32 {
            return Err(corrupt(self.what, "checksum mismatch"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use knowledge::kb::Chunk;

    use super::*;

    fn version(model: Option<&str>, dims: Option<u32>) -> KbVersion {
        KbVersion {
            version: 42,
            embedding_model: model.map(str::to_owned),
            dimensions: dims,
            updated_at: "2026-01-01T00:00:00Z".into(),
            snapshot: None,
        }
    }

    fn spec(dims: u32) -> EmbeddingSpec {
        EmbeddingSpec {
            model: "m".into(),
            dimensions: Some(dims),
        }
    }

    /// `n` chunks with random 64-dimensional embeddings and a few words each.
    fn corpus(n: usize) -> Vec<Chunk> {
        let mut rng = fastrand::Rng::with_seed(3);
        let words = [
            "award", "Meilen", "lounge", "Gepäck", "upgrade", "fuel", "Zürich", "stopover",
        ];
        (0..n)
            .map(|i| {
                let text: Vec<&str> = (0..12).map(|_| words[rng.usize(..words.len())]).collect();
                let mut chunk =
                    Chunk::new(&format!("doc-{}", i / 3), (i % 3) as u32, text.join(" "));
                chunk.embedding = Some((0..64).map(|_| rng.f32() - 0.5).collect());
                chunk
            })
            .collect()
    }

    fn query(i: usize) -> Vec<f32> {
        let mut rng = fastrand::Rng::with_seed(i as u64);
        (0..64).map(|_| rng.f32() - 0.5).collect()
    }

    #[test]
    fn a_snapshot_answers_as_the_index_it_was_made_from() {
        let v = version(Some("m"), Some(64));
        // Above the exact-scan size, so the codes and their rescoring are what answer.
        let built = Index::build(corpus(3000), Some(&v), Some(&spec(64)));
        let snapshot = encode(&built, &v).unwrap_or_else(|e| panic!("{e}"));
        let rescore = snapshot.rescore.as_deref();
        assert!(rescore.is_some());
        let read =
            decode(&snapshot.index, rescore, Some(&spec(64))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (read.len(), read.version(), read.vector_dims()),
            (3000, Some(42), Some(64))
        );
        for (i, text) in ["Meilen upgrade", "lounge Zürich", "fuel stopover award"]
            .iter()
            .enumerate()
        {
            let q = query(i);
            let (a, mode_a) = built.search(text, Some(&q), 6);
            let (b, mode_b) = read.search(text, Some(&q), 6);
            assert_eq!(mode_a, mode_b);
            let ids =
                |hits: &[crate::index::Hit]| hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(&a), ids(&b), "{text}");
            assert_eq!(
                built.search(text, None, 6).0,
                read.search(text, None, 6).0,
                "BM25 alike"
            );
        }
        // Without the rescoring rows the codes rank alone, and still find the same best.
        let codes_only =
            decode(&snapshot.index, None, Some(&spec(64))).unwrap_or_else(|e| panic!("{e}"));
        assert!(codes_only.vectors().is_some_and(|v| !v.rescores()));
        let q = query(9);
        assert_eq!(
            built.rank_vector(&q, 1)[0].doc,
            codes_only.rank_vector(&q, 1)[0].doc
        );
    }

    #[test]
    fn vectors_that_do_not_fit_the_configured_model_are_left_out() {
        let v = version(Some("m"), Some(64));
        let built = Index::build(corpus(10), Some(&v), Some(&spec(64)));
        let snapshot = encode(&built, &v).unwrap_or_else(|e| panic!("{e}"));
        let read = decode(&snapshot.index, None, Some(&spec(32))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.vector_dims(), None);
        assert!(
            read.no_vectors_reason()
                .unwrap_or_default()
                .contains("64-dimensional")
        );
        let bm25_only = Index::build(corpus(10), Some(&version(None, None)), None);
        let snapshot = encode(&bm25_only, &version(None, None)).unwrap_or_else(|e| panic!("{e}"));
        assert!(snapshot.rescore.is_none());
        let read = decode(&snapshot.index, None, Some(&spec(64))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((read.len(), read.vector_dims()), (10, None));
    }

    #[test]
    fn a_damaged_snapshot_is_refused_with_what_is_wrong() {
        let v = version(Some("m"), Some(64));
        let built = Index::build(corpus(20), Some(&v), Some(&spec(64)));
        let snapshot = encode(&built, &v).unwrap_or_else(|e| panic!("{e}"));
        let refused =
            |bytes: &[u8], rescore: Option<&[u8]>| match decode(bytes, rescore, Some(&spec(64))) {
                Ok(_) => panic!("accepted"),
                Err(e) => e.to_string(),
            };
        let bytes = &snapshot.index;
        assert!(refused(&bytes[..bytes.len() - 1], None).contains("truncated"));
        assert!(refused(&bytes[..10], None).contains("shorter than its header"));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(refused(&flipped, None).contains("checksum"));
        let mut future = bytes.clone();
        future[8] = 2;
        assert!(refused(&future, None).contains("format 2"));
        assert!(
            refused(
                b"{\"not\": \"a snapshot\"} and some more bytes to pass the header length",
                None
            )
            .contains("wrong magic")
        );
        let rescore = snapshot.rescore.as_deref().unwrap_or_default();
        assert!(
            refused(bytes, Some(bytes)).contains("wrong magic"),
            "rescoring rows of the wrong kind"
        );
        // Rescoring rows of another version.
        let other = encode(&built, &version(Some("m"), Some(64)).with_version(43))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(refused(bytes, other.rescore.as_deref()).contains("built for version 43"));
        assert!(decode(bytes, Some(rescore), Some(&spec(64))).is_ok());
    }

    trait WithVersion {
        fn with_version(self, version: u64) -> Self;
    }

    impl WithVersion for KbVersion {
        fn with_version(mut self, version: u64) -> Self {
            self.version = version;
            self
        }
    }
}
