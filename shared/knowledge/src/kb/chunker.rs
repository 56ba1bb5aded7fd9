//! Splits Markdown or plain text into chunks that keep headings and paragraphs together.
//!
//! Rules, in order:
//! - A Markdown ATX heading (`#` … `######`) starts a new chunk. Each chunk's content starts
//!   with its heading path (`Title > Section > Subsection`, then a blank line), so a chunk
//!   read alone still says what it is about. Lines inside fenced code blocks are never
//!   taken for headings, and a code block is kept whole when it fits.
//! - Within a section, whole paragraphs (blank-line separated blocks) are packed into a chunk
//!   while it stays within [`ChunkerConfig::target_chars`].
//! - A paragraph that alone exceeds the target is split at sentence ends (and line breaks,
//!   e.g. list items); a sentence that alone exceeds it is split between words.
//! - When a section continues in a new chunk, the new chunk repeats the previous chunk's last
//!   sentence(s), at most [`ChunkerConfig::overlap_chars`] characters (or that many trailing
//!   words of an over-long last sentence), so a fact spanning the cut stays findable.
//!
//! Sizes are counted in characters (Unicode scalar values), not bytes. The output depends
//! only on the input and the configuration.

use super::Chunk;

/// Default target size of a chunk in characters, heading path included: about 150–200
/// words, short enough for a focused embedding, long enough to hold a complete answer.
pub const DEFAULT_TARGET_CHARS: usize = 800;
/// Default overlap in characters carried from the end of the previous chunk of a section.
pub const DEFAULT_OVERLAP_CHARS: usize = 100;
/// Bumped whenever the splitting rules change, so `kb-ingest` re-chunks stored documents.
pub const CHUNKER_VERSION: u32 = 1;

const MIN_TARGET_CHARS: usize = 100;

/// How documents are split into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkerConfig {
    /// Upper bound of a chunk's length in characters, except for a heading path that alone
    /// exceeds half of it (such chunks get half the target for their text).
    pub target_chars: usize,
    /// At most this many characters repeated from the previous chunk; capped at half the
    /// target so every chunk makes progress.
    pub overlap_chars: usize,
}

impl Default for ChunkerConfig {
    fn default() -> Self {
        Self {
            target_chars: DEFAULT_TARGET_CHARS,
            overlap_chars: DEFAULT_OVERLAP_CHARS,
        }
    }
}

impl ChunkerConfig {
    /// Chunks of about `target_chars`, each overlapping the last by `overlap_chars`.
    pub fn new(target_chars: usize, overlap_chars: usize) -> Self {
        Self {
            target_chars,
            overlap_chars,
        }
    }

    /// Identifies the rules and parameters; stored with each document so a change of either
    /// re-chunks it.
    pub fn fingerprint(&self) -> String {
        let c = self.effective();
        format!(
            "chunker-v{CHUNKER_VERSION}/target={}/overlap={}",
            c.target_chars, c.overlap_chars
        )
    }

    fn effective(&self) -> Self {
        let target_chars = self.target_chars.max(MIN_TARGET_CHARS);
        Self {
            target_chars,
            overlap_chars: self.overlap_chars.min(target_chars / 2),
        }
    }
}

/// The chunks of one document, positions `0..n`, without embeddings.
pub fn chunk_document(document_id: &str, text: &str, config: &ChunkerConfig) -> Vec<Chunk> {
    split(text, config)
        .into_iter()
        .enumerate()
        .map(|(i, content)| Chunk::new(document_id, u32::try_from(i).unwrap_or(u32::MAX), content))
        .collect()
}

/// The chunk texts of `text`.
pub fn split(text: &str, config: &ChunkerConfig) -> Vec<String> {
    let config = config.effective();
    let mut out = Vec::new();
    for section in sections(text) {
        let prefix = section.path.join(" > ");
        let budget = if prefix.is_empty() {
            config.target_chars
        } else {
            // Heading path, blank line, then the text.
            config
                .target_chars
                .saturating_sub(chars(&prefix) + 2)
                .max(config.target_chars / 2)
        };
        for body in pack(&section.paragraphs, budget, config.overlap_chars) {
            out.push(if prefix.is_empty() {
                body
            } else {
                format!("{prefix}\n\n{body}")
            });
        }
    }
    out
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

struct Section {
    path: Vec<String>,
    paragraphs: Vec<String>,
}

/// Splits into sections at headings; each carries the path of headings above it.
fn sections(text: &str) -> Vec<Section> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out: Vec<Section> = Vec::new();
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut fence: Option<&str> = None;

    let flush_paragraph = |current: &mut Vec<&str>, paragraphs: &mut Vec<String>| {
        let block = current.join("\n");
        let block = block.trim();
        if !block.is_empty() {
            paragraphs.push(block.to_owned());
        }
        current.clear();
    };

    for line in text.lines() {
        let line = line.trim_end();
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            current.push(line);
            if trimmed.starts_with(marker) {
                fence = None;
                flush_paragraph(&mut current, &mut paragraphs);
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            flush_paragraph(&mut current, &mut paragraphs);
            fence = Some(&trimmed[..3]);
            current.push(line);
            continue;
        }
        if let Some((level, title)) = heading(trimmed) {
            flush_paragraph(&mut current, &mut paragraphs);
            if !paragraphs.is_empty() {
                out.push(Section {
                    path: stack.iter().map(|(_, t)| t.clone()).collect(),
                    paragraphs: std::mem::take(&mut paragraphs),
                });
            }
            stack.retain(|(l, _)| *l < level);
            stack.push((level, title));
            continue;
        }
        if trimmed.is_empty() {
            flush_paragraph(&mut current, &mut paragraphs);
        } else {
            current.push(line);
        }
    }
    flush_paragraph(&mut current, &mut paragraphs);
    if !paragraphs.is_empty() {
        out.push(Section {
            path: stack.iter().map(|(_, t)| t.clone()).collect(),
            paragraphs,
        });
    }
    out
}

/// `## Title ##` → `(2, "Title")`; `#hashtag` and empty headings are not headings.
fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end();
    (!title.is_empty()).then(|| (level, title.to_owned()))
}

/// Packs a section's paragraphs into bodies of at most `budget` characters.
fn pack(paragraphs: &[String], budget: usize, overlap: usize) -> Vec<String> {
    let mut bodies: Vec<String> = Vec::new();
    // Pieces of the body being built: whole paragraphs, or sentences of a long one.
    let mut body = String::new();
    let mut last_sentences: Vec<String> = Vec::new();
    let mut body_has_new_text = false;

    let mut emit = |body: &mut String, last: &[String], has_new: &mut bool| -> String {
        if *has_new {
            bodies.push(std::mem::take(body));
        }
        body.clear();
        *has_new = false;
        overlap_text(last, overlap, budget)
    };

    for paragraph in paragraphs {
        let len = chars(paragraph);
        let sep = if body.is_empty() { 0 } else { 2 };
        if chars(&body) + sep + len <= budget {
            if sep > 0 {
                body.push_str("\n\n");
            }
            body.push_str(paragraph);
            body_has_new_text = true;
            last_sentences = sentences(paragraph);
            continue;
        }
        if len <= budget {
            // The paragraph fits a chunk of its own: start one, led by the overlap.
            let carried = emit(&mut body, &last_sentences, &mut body_has_new_text);
            body = join_overlap(&carried, paragraph, budget);
            body_has_new_text = true;
            last_sentences = sentences(paragraph);
            continue;
        }
        // Too long alone: add it sentence by sentence, cutting between sentences.
        let paragraph_break = !body.is_empty();
        let mut first = true;
        for sentence in sentences(paragraph)
            .iter()
            .flat_map(|s| split_long(s, budget))
        {
            let sep = if body.is_empty() {
                ""
            } else if first && paragraph_break {
                "\n\n"
            } else {
                " "
            };
            if chars(&body) + chars(sep) + chars(&sentence) > budget {
                let carried = emit(&mut body, &last_sentences, &mut body_has_new_text);
                body = join_overlap(&carried, &sentence, budget);
            } else {
                body.push_str(sep);
                body.push_str(&sentence);
            }
            first = false;
            body_has_new_text = true;
            last_sentences.push(sentence);
            if last_sentences.len() > 16 {
                last_sentences.drain(..8);
            }
        }
    }
    if body_has_new_text {
        bodies.push(body);
    }
    bodies
}

/// `carried` then `text`, dropping the overlap if both do not fit.
fn join_overlap(carried: &str, text: &str, budget: usize) -> String {
    if carried.is_empty() || chars(carried) + 1 + chars(text) > budget {
        text.to_owned()
    } else {
        format!("{carried} {text}")
    }
}

/// The trailing sentences of the previous chunk that fit in `overlap` characters; if even
/// the last one is longer, its trailing words up to `overlap` characters.
fn overlap_text(last: &[String], overlap: usize, budget: usize) -> String {
    let overlap = overlap.min(budget / 2);
    if overlap == 0 {
        return String::new();
    }
    let mut taken: Vec<&str> = Vec::new();
    let mut len = 0;
    for sentence in last.iter().rev() {
        let add = chars(sentence) + usize::from(!taken.is_empty());
        if len + add > overlap {
            break;
        }
        len += add;
        taken.push(sentence);
    }
    if !taken.is_empty() {
        taken.reverse();
        return taken.join(" ");
    }
    let Some(last) = last.last() else {
        return String::new();
    };
    let mut words: Vec<&str> = Vec::new();
    let mut len = 0;
    for word in last.split_whitespace().rev() {
        let add = chars(word) + usize::from(!words.is_empty());
        if len + add > overlap {
            break;
        }
        len += add;
        words.push(word);
    }
    words.reverse();
    if words.is_empty() {
        String::new()
    } else {
        format!("… {}", words.join(" "))
    }
}

/// Abbreviations after which a period does not end a sentence (lowercased, without dot).
const ABBREVIATIONS: &[&str] = &[
    "bzw", "ca", "dr", "e.g", "etc", "evtl", "ggf", "i.e", "inkl", "max", "min", "mio", "mr",
    "mrs", "ms", "nr", "prof", "st", "usw", "vgl", "vs", "z.b", "zzgl", "u.a", "d.h", "z.t",
    "approx", "no", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "okt",
    "nov", "dec", "dez",
];

/// Splits a paragraph into sentences (also at line breaks: list items, table rows).
pub fn sentences(paragraph: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in paragraph.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i].1;
            let pos = chars[i].0;
            if matches!(c, '.' | '!' | '?' | '…') {
                // Include closing quotes/brackets and repeated marks.
                let mut j = i + 1;
                while j < chars.len()
                    && matches!(
                        chars[j].1,
                        '.' | '!' | '?' | '"' | '\'' | ')' | '»' | '“' | '”' | '’' | '*' | '_'
                    )
                {
                    j += 1;
                }
                let next_is_space = j < chars.len() && chars[j].1.is_whitespace();
                let after = chars[j..]
                    .iter()
                    .map(|&(_, c)| c)
                    .find(|c| !c.is_whitespace());
                let starts_new = after.is_some_and(|a| {
                    a.is_uppercase()
                        || a.is_ascii_digit()
                        || matches!(a, '"' | '„' | '«' | '(' | '[' | '*' | '-')
                });
                if next_is_space && starts_new && !(c == '.' && is_abbreviation(&line[start..pos]))
                {
                    let end = chars.get(j).map_or(line.len(), |&(p, _)| p);
                    let sentence = line[start..end].trim();
                    if !sentence.is_empty() {
                        out.push(sentence.to_owned());
                    }
                    start = end;
                }
                i = j;
                continue;
            }
            i += 1;
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_owned());
        }
    }
    out
}

/// Whether the word before a period is an abbreviation or a single letter ("z. B.", "A.").
fn is_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let word = word.trim_end_matches('.');
    (word.chars().count() == 1 && word.chars().all(char::is_alphabetic))
        || ABBREVIATIONS.contains(&word)
}

/// A sentence longer than `budget`, cut between words (or, for a word longer than the
/// budget, inside it).
fn split_long(sentence: &str, budget: usize) -> Vec<String> {
    if chars(sentence) <= budget {
        return vec![sentence.to_owned()];
    }
    let mut out = Vec::new();
    let mut piece = String::new();
    for word in sentence.split_whitespace() {
        let mut word = word.to_owned();
        while chars(&word) > budget {
            if !piece.is_empty() {
                out.push(std::mem::take(&mut piece));
            }
            let head: String = word.chars().take(budget).collect();
            word = word.chars().skip(budget).collect();
            out.push(head);
        }
        if piece.is_empty() {
            piece = word;
        } else if chars(&piece) + 1 + chars(&word) <= budget {
            piece.push(' ');
            piece.push_str(&word);
        } else {
            out.push(std::mem::replace(&mut piece, word));
        }
    }
    if !piece.is_empty() {
        out.push(piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(target: usize, overlap: usize) -> ChunkerConfig {
        ChunkerConfig::new(target, overlap)
    }

    #[test]
    fn headings_start_chunks_and_prefix_their_path() {
        let text = "# Miles & More\n\nIntro paragraph.\n\n## Earning\n\nFly Lufthansa.\n\n### Partners\n\nAlso Swiss.\n\n## Redeeming\n\nUse the chart.\n";
        let chunks = split(text, &ChunkerConfig::default());
        assert_eq!(
            chunks,
            vec![
                "Miles & More\n\nIntro paragraph.",
                "Miles & More > Earning\n\nFly Lufthansa.",
                "Miles & More > Earning > Partners\n\nAlso Swiss.",
                "Miles & More > Redeeming\n\nUse the chart.",
            ]
        );
    }

    #[test]
    fn plain_text_packs_paragraphs_without_prefix() {
        let text = "First paragraph.\n\nSecond paragraph.\n\n\nThird.";
        assert_eq!(
            split(text, &ChunkerConfig::default()),
            vec!["First paragraph.\n\nSecond paragraph.\n\nThird."]
        );
    }

    #[test]
    fn paragraphs_are_not_cut_when_they_fit() {
        let p1 = "Alpha beta gamma delta. ".repeat(4).trim().to_owned(); // 95 chars
        let p2 = "Epsilon zeta eta theta. ".repeat(4).trim().to_owned();
        let text = format!("{p1}\n\n{p2}");
        let chunks = split(&text, &cfg(150, 30));
        assert_eq!(chunks.len(), 2, "{chunks:#?}");
        assert!(chunks[0].starts_with(&p1), "{chunks:#?}");
        assert!(chunks[1].ends_with(&p2), "{chunks:#?}");
        // The overlap repeats the last sentence of the previous chunk.
        assert_eq!(chunks[1], format!("Alpha beta gamma delta. {p2}"));
    }

    #[test]
    fn long_paragraph_is_split_at_sentences_within_target() {
        let sentences: Vec<String> = (0..30)
            .map(|i| format!("Sentence number {i} talks about award seats."))
            .collect();
        let text = format!("# Title\n\n{}", sentences.join(" "));
        let config = cfg(200, 60);
        let chunks = split(&text, &config);
        assert!(chunks.len() > 5, "{chunks:#?}");
        for chunk in &chunks {
            assert!(chars(chunk) <= 200, "{} > 200: {chunk}", chars(chunk));
            assert!(chunk.starts_with("Title\n\n"), "{chunk}");
            let body = &chunk["Title\n\n".len()..];
            // Every chunk holds whole sentences only.
            assert!(body.ends_with("seats."), "{chunk}");
            assert!(body.starts_with("Sentence"), "{chunk}");
        }
        // Every sentence is somewhere, in order.
        let joined = chunks.join(" ");
        let mut at = 0;
        for s in &sentences {
            let found = joined[at..].find(s.as_str());
            assert!(found.is_some(), "missing {s}");
            at += found.unwrap_or(0);
        }
        // Consecutive chunks overlap by the previous chunk's last sentence.
        for pair in chunks.windows(2) {
            let last = sentences_of(&pair[0]).pop().unwrap_or_default();
            assert!(
                pair[1].contains(&last),
                "no overlap:\n{}\n{}",
                pair[0],
                pair[1]
            );
        }
    }

    fn sentences_of(chunk: &str) -> Vec<String> {
        sentences(chunk.split("\n\n").last().unwrap_or_default())
    }

    #[test]
    fn overlong_sentence_is_split_between_words() {
        let sentence = "word ".repeat(100);
        let chunks = split(&sentence, &cfg(120, 0));
        assert!(chunks.len() >= 4, "{chunks:#?}");
        for chunk in &chunks {
            assert!(chars(chunk) <= 120);
            assert!(!chunk.contains("wo rd"));
        }
        assert_eq!(chunks.join(" ").split_whitespace().count(), 100);
    }

    #[test]
    fn overlap_of_a_long_last_sentence_takes_trailing_words() {
        let long = format!("{} end.", "filler ".repeat(30).trim());
        let text = format!("{long}\n\n{long}");
        let chunks = split(&text, &cfg(250, 20));
        assert_eq!(chunks.len(), 2);
        assert!(
            chunks[1].starts_with("… filler filler end. filler"),
            "{}",
            chunks[1]
        );
    }

    #[test]
    fn abbreviations_do_not_end_sentences() {
        assert_eq!(
            sentences("Zum Beispiel z. B. Lufthansa. Dann ca. 30 Euro. Done! Next?"),
            vec![
                "Zum Beispiel z. B. Lufthansa.",
                "Dann ca. 30 Euro.",
                "Done!",
                "Next?"
            ]
        );
        assert_eq!(
            sentences("- item one\n- item two. Still two"),
            vec!["- item one", "- item two.", "Still two"]
        );
    }

    #[test]
    fn code_fences_keep_hashes_and_stay_whole() {
        let text = "# Doc\n\n```\n# not a heading\nx = 1\n```\n\nAfter.";
        let chunks = split(text, &ChunkerConfig::default());
        assert_eq!(
            chunks,
            vec!["Doc\n\n```\n# not a heading\nx = 1\n```\n\nAfter."]
        );
    }

    #[test]
    fn heading_rules() {
        assert_eq!(heading("## Title ##"), Some((2, "Title".to_owned())));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("#"), None);
        // Empty sections vanish; their heading still shows in the path below.
        let chunks = split("# A\n## B\n\ntext", &ChunkerConfig::default());
        assert_eq!(chunks, vec!["A > B\n\ntext"]);
    }

    #[test]
    fn deterministic_and_documents_number_positions() {
        let text = "# T\n\nOne.\n\n## S\n\nTwo.";
        let a = chunk_document("doc", text, &ChunkerConfig::default());
        let b = chunk_document("doc", text, &ChunkerConfig::default());
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].id, "doc#1");
        assert_eq!(a[1].position, 1);
        assert_eq!(a[1].content_hash, super::super::content_hash(&a[1].content));
        assert!(a.iter().all(|c| c.embedding.is_none()));
    }

    #[test]
    fn crlf_and_umlauts_count_as_characters() {
        let text = "Über Prämienflüge.\r\n\r\nÄnderungen möglich.";
        assert_eq!(
            split(text, &ChunkerConfig::default()),
            vec!["Über Prämienflüge.\n\nÄnderungen möglich."]
        );
        let long = "ä".repeat(150);
        let chunks = split(&long, &cfg(100, 0));
        assert_eq!(
            chunks.iter().map(|c| chars(c)).collect::<Vec<_>>(),
            [100, 50]
        );
    }

    #[test]
    fn fingerprint_changes_with_parameters() {
        assert_eq!(
            ChunkerConfig::default().fingerprint(),
            "chunker-v1/target=800/overlap=100"
        );
        assert_ne!(cfg(800, 50).fingerprint(), cfg(800, 100).fingerprint());
        // Overlap is capped at half the target.
        assert_eq!(cfg(200, 500).fingerprint(), cfg(200, 100).fingerprint());
    }
}
