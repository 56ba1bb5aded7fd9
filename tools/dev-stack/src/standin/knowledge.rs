//! A knowledge-base answer as the stand-in writes it: two or three whole sentences from the
//! passages the search found (its tool message lists them as `**1.** [doc-id, English]
//! Title > Section` and a snippet cut at 240 characters), without Markdown, and a line naming
//! the documents they come from.
//!
//! The sentences are the ones that answer: those sharing the question's words, from a
//! passage about the programme the question names, in the user's language when the
//! knowledge base has one. When it quotes a source in the other language, or has nothing
//! on the programme named, the answer says so first.

use shared::domain::loyalty::PROGRAMMES;

/// Sentences taken from the best passage, and from each one after it.
const FROM_BEST: usize = 2;
const FROM_OTHERS: usize = 1;
/// Sentences in the answer at most.
const MAX_SENTENCES: usize = 3;
/// Sentences shorter (a heading's leftover) or longer (a run-on) than this are left out.
const MIN_CHARS: usize = 25;
const MAX_CHARS: usize = 320;

/// Words before a period that do not end a sentence ("z. B.", "e.g.", "ca.").
const ABBREVIATIONS: &[&str] = &[
    "z", "b", "d", "h", "u", "a", "e", "g", "i", "ca", "bzw", "usw", "etc", "vs", "nr", "inkl",
    "ggf", "evtl", "bspw", "vgl", "mr", "mrs", "dr", "st", "min", "max", "approx", "incl",
];

/// Words of a question that say nothing about its topic.
const QUESTION_WORDS: &[&str] = &[
    "what",
    "which",
    "when",
    "where",
    "does",
    "have",
    "with",
    "about",
    "there",
    "their",
    "this",
    "that",
    "rules",
    "rule",
    "tell",
    "explain",
    "know",
    "from",
    "your",
    "will",
    "would",
    "could",
    "should",
    "much",
    "many",
    "work",
    "works",
    "welche",
    "welcher",
    "welches",
    "regeln",
    "regel",
    "gibt",
    "haben",
    "sind",
    "wird",
    "kann",
    "wann",
    "wieso",
    "warum",
    "bitte",
    "über",
    "eine",
    "einen",
    "einem",
    "einer",
    "funktioniert",
    "erkläre",
    "dazu",
];

/// The language of a passage, as the search's message names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    De,
    En,
}

/// One passage of the search's message.
#[derive(Debug)]
struct Passage {
    document: String,
    /// Its language, when the message names it.
    lang: Option<Lang>,
    /// The document's title: the first part of the passage's heading path.
    title: Option<String>,
    /// The passage's text after its heading path.
    lines: Vec<String>,
    /// The snippet was cut (it ends in "…"): its last sentence is not whole.
    cut: bool,
}

impl Passage {
    fn name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.document)
    }

    /// Its whole sentences, in order, as plain text.
    fn sentences(&self) -> Vec<String> {
        // A list's lead-in that kb-ingest's overlap put on its first item's line
        // ("… in different ways: - Some allow …") is a line of its own.
        let lines: Vec<String> = self
            .lines
            .iter()
            .flat_map(|l| {
                l.replace(": - ", ":\n- ")
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut out = Vec::new();
        let last = lines.iter().rposition(|l| !l.trim().is_empty());
        for (i, line) in lines.iter().enumerate() {
            let cut = self.cut && Some(i) == last;
            let line = plain(line.trim_end().trim_end_matches('…'));
            let mut found = sentences_of(&line);
            // A fragment after the last sentence end is left out already; a cut right
            // after a period may have cut a sentence ("… 60." of "60.000") as well.
            if cut && line.ends_with(['.', '!', '?']) {
                found.pop();
            }
            out.extend(found);
        }
        out.retain(|s| (MIN_CHARS..=MAX_CHARS).contains(&s.chars().count()));
        out
    }
}

/// What the question asks about: its topic words, and the programme it names.
struct Question {
    /// Lowercased words, each cut to the prefix a sentence's word must start with.
    topic: Vec<String>,
    /// The programme's shown name and the squashed forms of all its names.
    programme: Option<(&'static str, Vec<String>)>,
}

impl Question {
    fn of(text: &str) -> Self {
        let squashed_text = squashed(text);
        let programme = PROGRAMMES.iter().find_map(|p| {
            let names: Vec<String> = p.names.iter().map(|n| squashed(n)).collect();
            let named = names
                .iter()
                .any(|n| n.len() >= 6 && squashed_text.contains(n.as_str()));
            named.then(|| (p.names[0], names))
        });
        let programme_words: Vec<String> =
            programme.iter().flat_map(|(name, _)| words(name)).collect();
        let topic = words(text)
            .into_iter()
            .filter(|w| w.chars().count() >= 4 && !QUESTION_WORDS.contains(&w.as_str()))
            .filter(|w| !programme_words.contains(w))
            .map(|w| {
                let n = w.chars().count();
                w.chars().take(n.min(5.max(n * 2 / 3))).collect()
            })
            .collect();
        Self { topic, programme }
    }

    /// How many of the topic's words the sentence has.
    fn hits(&self, sentence: &str) -> usize {
        let words = words(sentence);
        self.topic
            .iter()
            .filter(|t| words.iter().any(|w| w.starts_with(t.as_str())))
            .count()
    }

    /// Whether the text names the question's programme.
    fn names_programme(&self, text: &str) -> bool {
        let text = squashed(text);
        self.programme.as_ref().is_some_and(|(_, names)| {
            names
                .iter()
                .any(|n| n.len() >= 6 && text.contains(n.as_str()))
        })
    }
}

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Lowercase letters and digits only, "&" read as "and": "Miles&More" is "milesandmore".
fn squashed(text: &str) -> String {
    text.to_lowercase()
        .replace('&', "and")
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// A passage weighed against the question.
struct Weighed<'a> {
    passage: &'a Passage,
    /// Its sentences and how many topic words each has.
    sentences: Vec<(usize, String)>,
    /// It names the question's programme (in its title or its text).
    about: bool,
}

impl<'a> Weighed<'a> {
    fn of(passage: &'a Passage, question: &Question) -> Self {
        let sentences: Vec<(usize, String)> = passage
            .sentences()
            .into_iter()
            .map(|s| (question.hits(&s), s))
            .collect();
        let about = question.names_programme(passage.name())
            || sentences.iter().any(|(_, s)| question.names_programme(s));
        Self {
            passage,
            sentences,
            about,
        }
    }

    fn answers(&self) -> bool {
        self.sentences.iter().any(|(hits, _)| *hits > 0)
    }
}

/// The answer to `question` from the search's message `content`, or `None` when it lists
/// no passages (nothing found: the message says so itself).
pub(super) fn answer(content: &str, question: &str, german: bool) -> Option<String> {
    let passages = passages(content);
    if passages.is_empty() {
        return None;
    }
    let wanted = if german { Lang::De } else { Lang::En };
    let question = Question::of(question);
    let weighed: Vec<Weighed<'_>> = passages.iter().map(|p| Weighed::of(p, &question)).collect();
    let lead = lead(&weighed, wanted)?;
    let lang = lead.passage.lang;
    let relevant_only = lead.answers();
    let mut chosen: Vec<&str> = Vec::new();
    let mut used: Vec<&Weighed<'_>> = Vec::new();
    let others = weighed
        .iter()
        .filter(|w| !std::ptr::eq(*w, lead) && w.passage.lang == lang);
    for (k, w) in std::iter::once(lead).chain(others).enumerate() {
        let want = if k == 0 { FROM_BEST } else { FROM_OTHERS };
        let mut took = 0;
        for (hits, sentence) in &w.sentences {
            if took == want || chosen.len() == MAX_SENTENCES {
                break;
            }
            if (*hits > 0 || !relevant_only) && !chosen.contains(&sentence.as_str()) {
                chosen.push(sentence);
                took += 1;
            }
        }
        if took > 0 {
            used.push(w);
        }
        if chosen.len() == MAX_SENTENCES {
            break;
        }
    }
    if chosen.is_empty() {
        let mut names: Vec<&str> = passages.iter().map(Passage::name).collect();
        names.dedup();
        let names = names.join(", ");
        return Some(if german {
            format!("Die Wissensdatenbank behandelt das in: {names}.")
        } else {
            format!("The knowledge base covers this in: {names}.")
        });
    }
    let mut sources: Vec<&str> = used.iter().map(|w| w.passage.name()).collect();
    sources.dedup();
    let elsewhere = question
        .programme
        .as_ref()
        .filter(|_| !used.iter().any(|w| w.about))
        .map(|(name, _)| *name);
    let foreign = lang.is_some_and(|l| l != wanted);
    let lead_in = lead_in(elsewhere, foreign, german);
    let label = if german { "Quellen" } else { "Sources" };
    Some(format!(
        "{lead_in}{}\n\n{label}: {}",
        chosen.join(" "),
        sources.join(", ")
    ))
}

/// The passage the answer leads with: one on the programme that answers, else one that
/// answers in the user's language, else one that answers, else the search's best (with no
/// word in common, a German question and English passages, the search's order knows better).
fn lead<'w, 'p>(weighed: &'w [Weighed<'p>], wanted: Lang) -> Option<&'w Weighed<'p>> {
    weighed
        .iter()
        .enumerate()
        .max_by_key(|(i, w)| {
            let in_language = w.passage.lang.is_none_or(|l| l == wanted);
            (
                w.about && w.answers(),
                w.answers() && in_language,
                w.answers(),
                std::cmp::Reverse(*i),
            )
        })
        .map(|(_, w)| w)
}

/// What the answer says before its quote: that the knowledge base has nothing on the
/// programme asked about (only the general rule), and that the quote's source is in the
/// other language.
fn lead_in(elsewhere: Option<&str>, foreign: bool, german: bool) -> String {
    match (elsewhere, foreign, german) {
        (Some(name), true, true) => format!(
            "Zu {name} im Besonderen steht nichts in der Wissensdatenbank. Allgemein gilt (die Quelle ist auf Englisch): "
        ),
        (Some(name), true, false) => format!(
            "The knowledge base has nothing on {name} in particular. In general (the source is in German): "
        ),
        (Some(name), false, true) => format!(
            "Zu {name} im Besonderen steht nichts in der Wissensdatenbank. Allgemein gilt: "
        ),
        (Some(name), false, false) => {
            format!("The knowledge base has nothing on {name} in particular. In general: ")
        }
        (None, true, true) => "Die Wissensdatenbank hat dazu eine englische Quelle: ".to_owned(),
        (None, true, false) => "The knowledge base has this in German: ".to_owned(),
        (None, false, _) => String::new(),
    }
}

/// The passages of the message, best first: each starts on a line `**N.** [doc-id] …`.
fn passages(content: &str) -> Vec<Passage> {
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    for line in content.lines() {
        // The prompt's cut of a long result.
        if line.starts_with("…[truncated:") {
            break;
        }
        if let Some((document, first)) = passage_start(line) {
            found.push((document.to_owned(), vec![first.to_owned()]));
        } else if let Some((_, lines)) = found.last_mut() {
            lines.push(line.to_owned());
        }
    }
    found
        .into_iter()
        .map(|(label, mut lines)| {
            // `[doc-id, English]`; an older message has the id alone.
            let (document, lang) = match label.split_once(", ") {
                Some((document, "German")) => (document.to_owned(), Some(Lang::De)),
                Some((document, "English")) => (document.to_owned(), Some(Lang::En)),
                _ => (label, None),
            };
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            let cut = lines.last().is_some_and(|l| l.trim_end().ends_with('…'));
            // A chunk starts with its heading path and a blank line.
            let title = (lines.len() > 2 && lines[1].trim().is_empty()).then(|| {
                let path = lines.remove(0);
                let title = path.split(" > ").next().unwrap_or_default();
                plain(title.trim_start_matches('#'))
            });
            Passage {
                document,
                lang,
                title: title.filter(|t| !t.is_empty()),
                lines,
                cut,
            }
        })
        .collect()
}

/// `**3.** [doc-id] text`: the document id and the text.
fn passage_start(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("**")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let rest = rest[digits..].strip_prefix(".** [")?;
    let (document, text) = rest.split_once(']')?;
    (digits > 0).then_some((document, text.trim_start()))
}

/// A line without Markdown: no heading marks, list markers, emphasis, code marks or link
/// targets, and no quoting the data fence added.
fn plain(line: &str) -> String {
    let mut line = line.trim();
    line = line.strip_prefix("(quoted) ").unwrap_or(line);
    line = line.trim_start_matches('#').trim_start();
    for marker in ["- ", "* ", "+ ", "> "] {
        line = line.strip_prefix(marker).unwrap_or(line);
    }
    if let Some((number, rest)) = line.split_once(". ")
        && !number.is_empty()
        && number.len() <= 2
        && number.bytes().all(|b| b.is_ascii_digit())
    {
        line = rest;
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    // `[text](target)` is its text.
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|close| Some((close, after[close + 2..].find(')')?)))
        {
            Some((close, end)) => {
                out.push_str(&rest[..open]);
                out.push_str(&after[..close]);
                rest = &after[close + 2 + end + 1..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let out = out
        .replace("**", "")
        .replace("__", "")
        .replace(['`', '*'], "");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The whole sentences of a plain line: each ends with `.`, `!` or `?` before a space and a
/// capital (or the line's end), not after an abbreviation or a day's number ("3. März").
fn sentences_of(line: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    for (k, &(at, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let end = at + c.len_utf8();
        let next = chars.get(k + 1).map(|&(_, n)| n);
        let after = chars.get(k + 2).map(|&(_, n)| n);
        let ends = match next {
            None => true,
            Some(n) if n.is_whitespace() => {
                after.is_none_or(|a| a.is_uppercase() || a.is_ascii_digit() || "\"„“(".contains(a))
            }
            _ => false,
        };
        if !ends || (c == '.' && !ends_a_sentence(&line[start..at])) {
            continue;
        }
        let sentence = line[start..end].trim();
        if !sentence.is_empty() {
            out.push(sentence.to_owned());
        }
        start = end;
    }
    out
}

/// Whether a period after `before` ends a sentence: not after an abbreviation or a number
/// of one or two digits.
fn ends_a_sentence(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '.')
        .next()
        .unwrap_or_default()
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    if !word.is_empty() && word.len() <= 2 && word.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    !ABBREVIATIONS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as `search_knowledge_base` writes it (snippets cut at 240 characters).
    const FOUND: &str = "Here is what the knowledge base says:\n\n\
        **1.** [status-und-upgrades] Status und Upgrades > Upgrades mit Meilen\n\n\
        Viele Programme erlauben es, ein bezahltes Ticket mit Meilen in die nächsthöhere Klasse zu heben. Voraussetzung ist meist eine bestimmte, oft teurere Buchungsklasse, und es muss ein Upgrade-Platz verfügbar sein. Der Meilenpreis hängt von Str…\n\n\
        **2.** [miles-and-more-grundlagen] Miles & More: Grundlagen > Upgrades\n\n\
        - **Upgrade-Gebote:** Einige Airlines laden z. B. Passagiere ein, ein Gebot abzugeben. Ob es angenommen wird, entscheidet die [Airline](https://example.com) kurz vor dem Abf…\n\n\
        **3.** [saver-vs-standard-awards] Saver vs. standard awards\n\n\
        Saver awards are the cheap ones; standard awards cost more but are easier to find.";

    #[test]
    fn passages_become_whole_plain_sentences_and_their_sources() {
        let answer =
            answer(FOUND, "Wie funktionieren Upgrades mit Meilen?", true).unwrap_or_default();
        assert_eq!(
            answer,
            "Viele Programme erlauben es, ein bezahltes Ticket mit Meilen in die nächsthöhere Klasse zu heben. \
             Voraussetzung ist meist eine bestimmte, oft teurere Buchungsklasse, und es muss ein Upgrade-Platz verfügbar sein. \
             Upgrade-Gebote: Einige Airlines laden z. B. Passagiere ein, ein Gebot abzugeben.\n\n\
             Quellen: Status und Upgrades, Miles & More: Grundlagen"
        );
        assert!(!answer.contains("**") && !answer.contains('…') && !answer.contains("]("));
        let english = answer_or_empty(FOUND, "How do upgrades with miles work?", false);
        assert!(english.ends_with("Sources: Status und Upgrades, Miles & More: Grundlagen"));
    }

    fn answer_or_empty(content: &str, question: &str, german: bool) -> String {
        answer(content, question, german).unwrap_or_default()
    }

    /// The search's message for "stopover rules for Miles & More" as the knowledge base of
    /// the local stack answers it: the general rules in English, Miles & More in German.
    const STOPOVERS: &str = "Here is what the knowledge base says:\n\n\
        **1.** [stopovers-and-open-jaws, English] Stopovers and open jaws on award tickets > Stopover versus layover\n\n\
        Programs treat stopovers in different ways: - Some allow one free stopover on a round trip.\n\
        - Aeroplan lets you add a stopover to a one-way award for a modest number of extra points.\n\n\
        **2.** [miles-and-more-grundlagen, German] Miles & More: Grundlagen\n\n\
        Miles & More ist das Vielfliegerprogramm der Lufthansa Group. Neben Lufthansa gehören SWISS, Austrian Airlines und Eurowings dazu.\n\n\
        **3.** [aeroplan-basics, English] Aeroplan basics > Stopovers\n\n\
        On a one-way award, Aeroplan typically allows one stopover for a small fixed number of additional points.";

    #[test]
    fn a_question_gets_the_sentences_that_answer_it_and_what_the_knowledge_base_lacks() {
        let english = answer_or_empty(
            STOPOVERS,
            "What are the stopover rules for Miles & More?",
            false,
        );
        assert_eq!(
            english,
            "The knowledge base has nothing on Miles & More in particular. In general: \
             Some allow one free stopover on a round trip. \
             Aeroplan lets you add a stopover to a one-way award for a modest number of extra points. \
             On a one-way award, Aeroplan typically allows one stopover for a small fixed number of additional points.\n\n\
             Sources: Stopovers and open jaws on award tickets, Aeroplan basics"
        );
        assert!(
            !english.contains("- ") && !english.contains("Vielflieger"),
            "{english}"
        );
        // The same in German: the source is English, and the answer says so.
        let german = answer_or_empty(STOPOVERS, "Welche Stopover-Regeln hat Miles & More?", true);
        assert!(
            german.starts_with(
                "Zu Miles & More im Besonderen steht nichts in der Wissensdatenbank. \
                 Allgemein gilt (die Quelle ist auf Englisch): Some allow one free stopover"
            ),
            "{german}"
        );
        assert!(
            german.ends_with("Quellen: Stopovers and open jaws on award tickets, Aeroplan basics"),
            "{german}"
        );
    }

    #[test]
    fn the_users_language_first_and_a_source_in_the_other_one_said() {
        let both = "Here is what the knowledge base says:\n\n\
            **1.** [award-charts, English] Award charts > Expiry\n\n\
            Miles in most programmes expire after a period without activity on the account.\n\n\
            **2.** [meilenverfall-vermeiden, German] Meilenverfall vermeiden > Regeln\n\n\
            Bei Miles & More verfallen Meilen grundsätzlich nach 36 Monaten. Eine Kreditkarte schützt vor dem Verfall.";
        let german = answer_or_empty(both, "Wann verfallen meine Meilen?", true);
        assert_eq!(
            german,
            "Bei Miles & More verfallen Meilen grundsätzlich nach 36 Monaten. Eine Kreditkarte schützt vor dem Verfall.\n\n\
             Quellen: Meilenverfall vermeiden"
        );
        let english = answer_or_empty(both, "When do my miles expire?", false);
        assert!(
            english.starts_with("Miles in most programmes expire"),
            "{english}"
        );
        assert!(!english.contains("verfallen"), "{english}");
        let only_german = "Here is what the knowledge base says:\n\n\
            **1.** [miles-and-more-grundlagen, German] Miles & More: Grundlagen > Status\n\n\
            Die Statusstufen heißen Frequent Traveller, Senator und HON Circle. Der Status wird über Punkte qualifiziert.";
        assert_eq!(
            answer_or_empty(only_german, "How does Miles & More status work?", false),
            "The knowledge base has this in German: Die Statusstufen heißen Frequent Traveller, Senator und HON Circle. \
             Der Status wird über Punkte qualifiziert.\n\n\
             Sources: Miles & More: Grundlagen"
        );
    }

    #[test]
    fn nothing_found_is_no_passage_list_and_cut_passages_still_name_their_documents() {
        assert_eq!(
            answer(
                "I found nothing relevant in our knowledge base. Shall I answer from general knowledge instead?",
                "What are award holds?",
                false
            ),
            None
        );
        let cut = "Here is what the knowledge base says:\n\n**1.** [award-holds] Award holds > How\n\nSome programmes hold an award for a few days without pay…";
        assert_eq!(
            answer_or_empty(cut, "What are award holds?", false),
            "The knowledge base covers this in: Award holds."
        );
    }

    #[test]
    fn sentences_end_where_sentences_end() {
        assert_eq!(
            sentences_of("Am 3. März gilt das, z. B. für Prämien. Danach nicht! Und dann"),
            ["Am 3. März gilt das, z. B. für Prämien.", "Danach nicht!"]
        );
        assert_eq!(
            plain("- **Bold** and `code` with [a link](https://x.example/a) here"),
            "Bold and code with a link here"
        );
    }
}
