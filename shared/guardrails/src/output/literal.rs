//! A fixed string (the canary, a stored secret) looked for in a stream byte by byte
//! (Knuth–Morris–Pratt): constant work per byte, and the matched length at any point is the
//! longest end of the stream that begins the string, which is what must be held back.

use std::sync::Arc;

/// One string to look for.
#[derive(Debug, Clone)]
pub struct Literal {
    bytes: Box<[u8]>,
    /// For each prefix length `k` (1-based at `k - 1`): the longest proper prefix of the
    /// string that ends the prefix of length `k`.
    fallback: Box<[usize]>,
}

impl Literal {
    pub fn new(text: &str) -> Self {
        let bytes: Box<[u8]> = text.as_bytes().into();
        let mut fallback = vec![0; bytes.len()];
        let mut k = 0;
        for i in 1..bytes.len() {
            while k > 0 && bytes[i] != bytes[k] {
                k = fallback[k - 1];
            }
            if bytes[i] == bytes[k] {
                k += 1;
            }
            fallback[i] = k;
        }
        Self {
            bytes,
            fallback: fallback.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The matched length after `b`, given `matched` before it. Equal to [`Self::len`]:
    /// the string was found (it ends at `b`).
    pub fn step(&self, mut matched: usize, b: u8) -> usize {
        if matched == self.bytes.len() {
            matched = self.fallback[matched - 1];
        }
        while matched > 0 && self.bytes[matched] != b {
            matched = self.fallback[matched - 1];
        }
        if self.bytes[matched] == b {
            matched += 1;
        }
        matched
    }
}

/// Several [`Literal`]s followed along one stream, each with a tag that says what it is.
#[derive(Debug, Clone)]
pub struct Literals<T> {
    /// Shared between restarts: a payload guard restarts once per string it checks.
    literals: Arc<[(T, Literal)]>,
    matched: Vec<usize>,
}

impl<T: Copy> Literals<T> {
    /// The non-empty ones of `texts`.
    pub fn new<'a>(texts: impl IntoIterator<Item = (T, &'a str)>) -> Self {
        let literals: Arc<[(T, Literal)]> = texts
            .into_iter()
            .filter(|(_, t)| !t.is_empty())
            .map(|(tag, t)| (tag, Literal::new(t)))
            .collect();
        let matched = vec![0; literals.len()];
        Self { literals, matched }
    }

    /// Feeds `text`; the tag of the literal found first, if one was.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<T> {
        let mut first: Option<(usize, T)> = None;
        for ((tag, literal), matched) in self.literals.iter().zip(&mut self.matched) {
            let mut i = 0;
            while i < bytes.len() {
                // Outside a match, jump to where the literal's first byte stands next.
                if *matched == 0 {
                    // A plain loop: pieces are a few bytes, too short for memchr to pay.
                    match bytes[i..].iter().position(|&b| b == literal.bytes[0]) {
                        Some(skip) => i += skip,
                        None => break,
                    }
                }
                *matched = literal.step(*matched, bytes[i]);
                if *matched == literal.len() {
                    if first.is_none_or(|(at, _)| i < at) {
                        first = Some((i, *tag));
                    }
                    break;
                }
                i += 1;
            }
        }
        first.map(|(_, tag)| tag)
    }

    /// Whether one of the literals occurs in `bytes`, a text of its own.
    pub fn occur_in(&self, bytes: &[u8]) -> bool {
        self.literals.iter().any(|(_, literal)| {
            bytes
                .windows(literal.len())
                .any(|window| *window == *literal.bytes)
        })
    }

    /// The same literals, at the start of a new stream.
    pub fn restarted(&self) -> Self {
        Self {
            literals: Arc::clone(&self.literals),
            matched: vec![0; self.matched.len()],
        }
    }

    /// The longest literal's length: the bytes of a stream that decide what comes next.
    pub fn longest(&self) -> usize {
        self.literals
            .iter()
            .map(|(_, l)| l.len())
            .max()
            .unwrap_or(0)
    }

    /// Bytes at the end of the stream that begin one of the literals (the longest).
    pub fn partial(&self) -> usize {
        self.matched.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_strings_and_reports_partial_matches() {
        let mut found = Literals::new([(1, "abcabd"), (2, ""), (3, "xyz")]);
        assert_eq!(found.feed(b"zzabcab"), None);
        assert_eq!(found.partial(), 5);
        assert_eq!(found.feed(b"cab"), None);
        assert_eq!(found.partial(), 5);
        assert_eq!(found.feed(b"d!"), Some(1));
        let mut other = Literals::new([(1, "abcabd"), (3, "xyz")]);
        assert_eq!(other.feed(b"aaxy"), None);
        assert_eq!(other.partial(), 2);
        assert_eq!(other.feed(b"z"), Some(3));
        assert!(other.occur_in(b"..xyz"));
        assert!(!other.occur_in(b"abcab xy"));
    }
}
