//! Text analysis for BM25, fit for German and English.
//!
//! Each word is lowercased, decomposed (NFKD) with its combining marks dropped, so
//! `ä/ö/ü → a/o/u`, and `ß → ss`. The digraphs `ae/oe/ue` (not `que`) are folded to
//! `a/o/u` as well, so "Prämie", "Praemie" and "Pramie" meet, as do "Straße" and
//! "Strasse". Stop words of both languages are dropped.
//!
//! Documents are stemmed with the Snowball stemmer of their language, guessed from stop-word
//! counts. A query is usually too short for that guess, so each query word is stemmed both
//! ways and a document scores the better of the two forms ([`QueryTerm`]).
//!
//! German words get the digraph fold before stemming (Snowball's "german2" variant, so the
//! stemmer sees one vowel for `ae`); English words after it, because folding first would
//! change their endings ("values" → "valus" keeps its `s`). Either way the same word gives
//! the same term in documents and queries.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Language of a text, as far as stemming is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    De = 0,
    En = 1,
}

/// The forms one query word may take in the index (one or two stems).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTerm {
    /// The folded word (lowercase, no accents), for compound splitting.
    pub word: String,
    pub variants: Vec<String>,
}

impl QueryTerm {
    /// A term with one given form (tests, compound parts).
    pub fn exact(stem: &str) -> Self {
        Self {
            word: stem.to_owned(),
            variants: vec![stem.to_owned()],
        }
    }
}

/// Terms of a document (chunk) for the index, in text order, repeats kept.
pub fn document_terms(text: &str) -> Vec<String> {
    Analyzer::default()
        .document_terms(text)
        .iter()
        .map(|t| t.to_string())
        .collect()
}

/// Analyses many documents, remembering each word's stem: a corpus has far fewer distinct
/// words than words, and stemming is the expensive step of indexing.
#[derive(Default)]
pub struct Analyzer {
    /// Folded word → its term (`None`: a stop word), per language.
    memo: [HashMap<Box<str>, Option<Arc<str>>>; 2],
    words: String,
    ends: Vec<usize>,
}

impl Analyzer {
    /// Terms of a document (chunk) for the index, in text order, repeats kept.
    pub fn document_terms(&mut self, text: &str) -> Vec<Arc<str>> {
        self.words.clear();
        self.ends.clear();
        for_each_word(text, |w| {
            self.words.push_str(w);
            self.ends.push(self.words.len());
        });
        let (de, en) = stop_sets();
        let (mut de_count, mut en_count) = (0usize, 0usize);
        let mut start = 0;
        for &end in &self.ends {
            let word = &self.words[start..end];
            de_count += usize::from(de.contains(word));
            en_count += usize::from(en.contains(word));
            start = end;
        }
        let lang = pick_language(de_count, en_count, has_german_letters(text));
        let memo = &mut self.memo[lang as usize];
        let mut terms = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for &end in &self.ends {
            let word = &self.words[start..end];
            start = end;
            let term = match memo.get(word) {
                Some(term) => term.clone(),
                None => {
                    let term = (!is_stop_word(word)).then(|| Arc::from(stem(lang, word)));
                    memo.insert(word.into(), term.clone());
                    term
                }
            };
            terms.extend(term);
        }
        terms
    }
}

/// Distinct query words, each with its German and English stem (deduplicated).
pub fn query_terms(text: &str) -> Vec<QueryTerm> {
    let mut terms: Vec<QueryTerm> = Vec::new();
    for word in words(text).into_iter().filter(|w| !is_stop_word(w)) {
        let mut variants = vec![stem(Lang::De, &word)];
        let english = stem(Lang::En, &word);
        if english != variants[0] {
            variants.push(english);
        }
        variants.sort();
        if !terms.iter().any(|t| t.variants == variants) {
            terms.push(QueryTerm { word, variants });
        }
    }
    terms
}

/// A German compound as two known parts: the split with the longest known head (the last
/// part, which carries the meaning), each part at least 4 letters, the left one also tried
/// without a linking `s`/`n`/`en`/`es` ("Kreditkarten|punkte", "Verkehr|s|steuer"). `known`
/// tells whether a stem is in the index.
pub fn split_compound(word: &str, known: impl Fn(&str) -> bool) -> Option<[String; 2]> {
    const MIN: usize = 4;
    let starts: Vec<usize> = word.char_indices().map(|(at, _)| at).collect();
    if starts.len() < 2 * MIN || !word.chars().all(char::is_alphabetic) {
        return None;
    }
    for &at in &starts[MIN..=starts.len() - MIN] {
        let (left, right) = word.split_at(at);
        let head = stem(Lang::De, right);
        if !known(&head) {
            continue;
        }
        for link in ["", "s", "n", "en", "es"] {
            let Some(left) = left.strip_suffix(link) else {
                continue;
            };
            if left.chars().count() < MIN {
                continue;
            }
            let modifier = stem(Lang::De, left);
            if known(&modifier) {
                return Some([modifier, head]);
            }
        }
    }
    None
}

/// The query text used as cache key and sent to the embeddings endpoint: NFC, trimmed,
/// inner whitespace collapsed to single spaces.
pub fn normalize_query(text: &str) -> String {
    let nfc: String = text.nfc().collect();
    nfc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lowercased, accent-free words (letters and digits); single letters are dropped.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for_each_word(text, |w| words.push(w.to_owned()));
    words
}

/// Calls `f` with each lowercased, accent-free word (letters and digits) of `text`; single
/// letters are skipped, single digits kept. ASCII takes a fast path without normalisation.
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut current = String::new();
    let mut flush = |current: &mut String| {
        let mut chars = current.chars();
        let keep = match (chars.next(), chars.next()) {
            (Some(c), None) => c.is_ascii_digit(),
            (Some(_), Some(_)) => true,
            _ => false,
        };
        if keep {
            f(current);
        }
        current.clear();
    };
    for c in text.chars() {
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                current.push(c.to_ascii_lowercase());
            } else {
                flush(&mut current);
            }
            continue;
        }
        for c in c.to_lowercase().nfkd() {
            if is_combining_mark(c) {
                continue;
            }
            match c {
                'ß' => current.push_str("ss"),
                'æ' => current.push_str("ae"),
                'œ' => current.push_str("oe"),
                'ø' => current.push('o'),
                'ł' => current.push('l'),
                'đ' => current.push('d'),
                c if c.is_alphanumeric() => current.push(c),
                _ => flush(&mut current),
            }
        }
    }
    flush(&mut current);
}

fn has_german_letters(text: &str) -> bool {
    text.chars()
        .any(|c| matches!(c, 'ä' | 'ö' | 'ü' | 'Ä' | 'Ö' | 'Ü' | 'ß' | 'ẞ'))
}

/// German when German stop words outnumber English ones; on a tie, German if the text has
/// umlauts or ß.
pub fn guess_language(words: &[String], german_letters: bool) -> Lang {
    let (de, en) = stop_sets();
    let de_count = words.iter().filter(|w| de.contains(w.as_str())).count();
    let en_count = words.iter().filter(|w| en.contains(w.as_str())).count();
    pick_language(de_count, en_count, german_letters)
}

fn pick_language(de_count: usize, en_count: usize, german_letters: bool) -> Lang {
    match de_count.cmp(&en_count) {
        std::cmp::Ordering::Greater => Lang::De,
        std::cmp::Ordering::Less => Lang::En,
        std::cmp::Ordering::Equal if german_letters => Lang::De,
        std::cmp::Ordering::Equal => Lang::En,
    }
}

/// `ae/oe/ue → a/o/u`, except `ue` after `q` (as Snowball's german2 does).
fn fold_digraphs(word: &str) -> Cow<'_, str> {
    if !(word.contains("ae") || word.contains("oe") || word.contains("ue")) {
        return Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len());
    let mut prev: Option<char> = None;
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        let folds = matches!(c, 'a' | 'o') || (c == 'u' && prev != Some('q'));
        if folds && chars.peek() == Some(&'e') {
            chars.next();
        }
        prev = Some(c);
    }
    Cow::Owned(out)
}

fn stem(lang: Lang, word: &str) -> String {
    // Numbers and codes like "a380" are kept as they are.
    if word.chars().any(|c| c.is_numeric()) {
        return word.to_owned();
    }
    let (de, en) = stemmers();
    match lang {
        Lang::De => de.stem(&fold_digraphs(word)).into_owned(),
        Lang::En => fold_digraphs(&en.stem(word)).into_owned(),
    }
}

fn stemmers() -> &'static (Stemmer, Stemmer) {
    static STEMMERS: OnceLock<(Stemmer, Stemmer)> = OnceLock::new();
    STEMMERS.get_or_init(|| {
        (
            Stemmer::create(Algorithm::German),
            Stemmer::create(Algorithm::English),
        )
    })
}

fn is_stop_word(word: &str) -> bool {
    static ALL: OnceLock<HashSet<String>> = OnceLock::new();
    ALL.get_or_init(|| {
        GERMAN_STOP_WORDS
            .iter()
            .chain(ENGLISH_STOP_WORDS)
            .map(|w| fold_digraphs(&fold(w)).into_owned())
            .collect()
    })
    .contains(fold_digraphs(word).as_ref())
}

/// The stop words of each language, in the folded form `words` produces.
fn stop_sets() -> &'static (HashSet<String>, HashSet<String>) {
    static SETS: OnceLock<(HashSet<String>, HashSet<String>)> = OnceLock::new();
    SETS.get_or_init(|| {
        (
            GERMAN_STOP_WORDS.iter().map(|w| fold(w)).collect(),
            ENGLISH_STOP_WORDS.iter().map(|w| fold(w)).collect(),
        )
    })
}

fn fold(word: &str) -> String {
    words(word).concat()
}

/// Snowball's German list plus the reformed spellings ("dass", "muss").
const GERMAN_STOP_WORDS: &[&str] = &[
    "aber",
    "alle",
    "allem",
    "allen",
    "aller",
    "alles",
    "als",
    "also",
    "am",
    "an",
    "ander",
    "andere",
    "anderem",
    "anderen",
    "anderer",
    "anderes",
    "anderm",
    "andern",
    "anders",
    "auch",
    "auf",
    "aus",
    "bei",
    "beim",
    "bin",
    "bis",
    "bist",
    "da",
    "damit",
    "dann",
    "der",
    "den",
    "des",
    "dem",
    "die",
    "das",
    "dass",
    "daß",
    "derselbe",
    "derselben",
    "denselben",
    "desselben",
    "demselben",
    "dieselbe",
    "dieselben",
    "dasselbe",
    "dazu",
    "dein",
    "deine",
    "deinem",
    "deinen",
    "deiner",
    "deines",
    "denn",
    "derer",
    "dessen",
    "dich",
    "dir",
    "du",
    "dies",
    "diese",
    "diesem",
    "diesen",
    "dieser",
    "dieses",
    "doch",
    "dort",
    "durch",
    "ein",
    "eine",
    "einem",
    "einen",
    "einer",
    "eines",
    "einig",
    "einige",
    "einigem",
    "einigen",
    "einiger",
    "einiges",
    "einmal",
    "er",
    "ihn",
    "ihm",
    "es",
    "etwas",
    "euer",
    "eure",
    "eurem",
    "euren",
    "eurer",
    "eures",
    "für",
    "gegen",
    "gewesen",
    "hab",
    "habe",
    "haben",
    "hat",
    "hatte",
    "hatten",
    "hier",
    "hin",
    "hinter",
    "ich",
    "mich",
    "mir",
    "ihr",
    "ihre",
    "ihrem",
    "ihren",
    "ihrer",
    "ihres",
    "euch",
    "im",
    "in",
    "indem",
    "ins",
    "ist",
    "jede",
    "jedem",
    "jeden",
    "jeder",
    "jedes",
    "jene",
    "jenem",
    "jenen",
    "jener",
    "jenes",
    "jetzt",
    "kann",
    "kein",
    "keine",
    "keinem",
    "keinen",
    "keiner",
    "keines",
    "können",
    "könnte",
    "machen",
    "man",
    "manche",
    "manchem",
    "manchen",
    "mancher",
    "manches",
    "mein",
    "meine",
    "meinem",
    "meinen",
    "meiner",
    "meines",
    "mit",
    "muss",
    "muß",
    "musste",
    "nach",
    "nicht",
    "nichts",
    "noch",
    "nun",
    "nur",
    "ob",
    "oder",
    "ohne",
    "sehr",
    "sein",
    "seine",
    "seinem",
    "seinen",
    "seiner",
    "seines",
    "selbst",
    "sich",
    "sie",
    "ihnen",
    "sind",
    "so",
    "solche",
    "solchem",
    "solchen",
    "solcher",
    "solches",
    "soll",
    "sollte",
    "sondern",
    "sonst",
    "sowie",
    "über",
    "um",
    "und",
    "uns",
    "unsere",
    "unserem",
    "unseren",
    "unser",
    "unseres",
    "unter",
    "viel",
    "vom",
    "von",
    "vor",
    "während",
    "war",
    "waren",
    "warst",
    "was",
    "weg",
    "weil",
    "weiter",
    "welche",
    "welchem",
    "welchen",
    "welcher",
    "welches",
    "wenn",
    "werde",
    "werden",
    "wie",
    "wieder",
    "will",
    "wir",
    "wird",
    "wirst",
    "wo",
    "wollen",
    "wollte",
    "würde",
    "würden",
    "wurde",
    "wurden",
    "zu",
    "zum",
    "zur",
    "zwar",
    "zwischen",
];

/// Snowball's English list, with the parts contractions split into ("don", "isn").
const ENGLISH_STOP_WORDS: &[&str] = &[
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "would",
    "should",
    "could",
    "ought",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "can",
    "will",
    "just",
    "don",
    "doesn",
    "didn",
    "isn",
    "aren",
    "wasn",
    "weren",
    "hasn",
    "haven",
    "hadn",
    "won",
    "wouldn",
    "shouldn",
    "couldn",
    "mustn",
    "cannot",
    "ll",
    "ve",
    "re",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn one_query_term(word: &str) -> Vec<String> {
        let terms = query_terms(word);
        assert_eq!(terms.len(), 1, "{word}: {terms:?}");
        terms[0].variants.clone()
    }

    #[test]
    fn umlauts_and_their_spellings_meet() {
        let a = document_terms("Die Prämie wird gutgeschrieben.");
        let b = document_terms("Die Praemie wird gutgeschrieben.");
        let c = document_terms("Die Pramie wird gutgeschrieben.");
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(
            document_terms("Straße"),
            document_terms("Strasse"),
            "ß and ss"
        );
        assert_eq!(document_terms("STRASSE"), document_terms("straße"));
        // The query forms find the document form.
        let doc = document_terms("Die Prämien sind hoch und die Gebühren auch.");
        for query in ["Prämien", "Praemien", "Pramien", "prämie"] {
            let variants = one_query_term(query);
            assert!(
                variants.iter().any(|v| doc.contains(v)),
                "{query}: {variants:?} vs {doc:?}"
            );
        }
        let fees = one_query_term("Gebuehren");
        assert!(fees.iter().any(|v| doc.contains(v)), "{fees:?} vs {doc:?}");
    }

    #[test]
    fn german_stemming() {
        let doc = document_terms("Die Meilen verfallen nach drei Jahren, der Meilenverfall.");
        assert!(doc.contains(&"meil".to_owned()), "{doc:?}");
        assert!(doc.contains(&"verfall".to_owned()), "{doc:?}");
        assert!(doc.contains(&"jahr".to_owned()), "{doc:?}");
        let plural = document_terms("Zuschläge sind bei der Lufthansa hoch");
        let singular = document_terms("der Zuschlag ist bei der Lufthansa hoch");
        assert_eq!(plural[0], "zuschlag", "{plural:?}");
        assert_eq!(singular[0], "zuschlag", "{singular:?}");
    }

    #[test]
    fn english_stemming() {
        let doc = document_terms("The airlines are charging fuel surcharges on redeemed awards.");
        // "fuel" → "ful": the digraph fold applies to English stems too (consistently).
        for term in ["airlin", "charg", "ful", "surcharg", "redeem", "award"] {
            assert!(doc.contains(&term.to_owned()), "{term}: {doc:?}");
        }
        // English words keep their endings consistent despite the digraph fold.
        assert_eq!(document_terms("the value"), document_terms("the values"));
        let variants = one_query_term("surcharges");
        assert!(variants.contains(&"surcharg".to_owned()), "{variants:?}");
    }

    #[test]
    fn stop_words_and_language_guess() {
        assert!(document_terms("the and of to in für und über dass").is_empty());
        assert!(query_terms("what is the").is_empty());
        assert!(query_terms("Fuer die").is_empty(), "fuer is für");
        let de = words("Das ist eine Frage, die wir mit dem Zuschlag klären");
        assert_eq!(guess_language(&de, false), Lang::De);
        let en = words("This is a question that we answer with the surcharge");
        assert_eq!(guess_language(&en, false), Lang::En);
        assert_eq!(guess_language(&words("Kerosinzuschläge"), true), Lang::De);
        assert_eq!(guess_language(&words("stopover"), false), Lang::En);
    }

    #[test]
    fn words_split_on_punctuation_and_keep_numbers() {
        assert_eq!(
            words("A380, 60.000 Meilen (one-way) — Café!"),
            vec!["a380", "60", "000", "meilen", "one", "way", "cafe"]
        );
        assert_eq!(document_terms("A380 2026"), vec!["a380", "2026"]);
    }

    #[test]
    fn digraphs() {
        assert_eq!(fold_digraphs("praemie"), "pramie");
        assert_eq!(fold_digraphs("gebuehr"), "gebuhr");
        assert_eq!(fold_digraphs("quelle"), "quelle");
        assert_eq!(fold_digraphs("koeln"), "koln");
        assert_eq!(fold_digraphs("plain"), "plain");
    }

    #[test]
    fn query_normalisation() {
        assert_eq!(normalize_query("  fuel \t surcharges\n"), "fuel surcharges");
        // NFC: a decomposed "ä" equals the composed one.
        assert_eq!(normalize_query("Pra\u{308}mie"), normalize_query("Prämie"));
    }
}
