//! A knowledge-base answer as the stand-in writes it: two or three whole sentences from the
//! best passages the search found (its tool message lists them as `**1.** [doc-id] Title >
//! Section` and a snippet cut at 240 characters), without Markdown, and a line naming the
//! documents they come from.

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

/// One passage of the search's message.
#[derive(Debug)]
struct Passage {
    document: String,
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
        let mut out = Vec::new();
        let last = self.lines.iter().rposition(|l| !l.trim().is_empty());
        for (i, line) in self.lines.iter().enumerate() {
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
        out
    }
}

/// The answer to a question from the search's message `content`, or `None` when it lists
/// no passages (nothing found: the message says so itself).
pub(super) fn answer(content: &str, german: bool) -> Option<String> {
    let passages = passages(content);
    if passages.is_empty() {
        return None;
    }
    let mut chosen: Vec<String> = Vec::new();
    let mut sources: Vec<&str> = Vec::new();
    for (i, passage) in passages.iter().enumerate() {
        let want = if i == 0 { FROM_BEST } else { FROM_OTHERS };
        let mut took = 0;
        for sentence in passage.sentences() {
            if took == want || chosen.len() == MAX_SENTENCES {
                break;
            }
            let chars = sentence.chars().count();
            if (MIN_CHARS..=MAX_CHARS).contains(&chars) && !chosen.contains(&sentence) {
                chosen.push(sentence);
                took += 1;
            }
        }
        if took > 0 && !sources.contains(&passage.name()) {
            sources.push(passage.name());
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
    let label = if german { "Quellen" } else { "Sources" };
    Some(format!(
        "{}\n\n{label}: {}",
        chosen.join(" "),
        sources.join(", ")
    ))
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
        .map(|(document, mut lines)| {
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
        let answer = answer(FOUND, true).unwrap_or_default();
        assert_eq!(
            answer,
            "Viele Programme erlauben es, ein bezahltes Ticket mit Meilen in die nächsthöhere Klasse zu heben. \
             Voraussetzung ist meist eine bestimmte, oft teurere Buchungsklasse, und es muss ein Upgrade-Platz verfügbar sein. \
             Upgrade-Gebote: Einige Airlines laden z. B. Passagiere ein, ein Gebot abzugeben.\n\n\
             Quellen: Status und Upgrades, Miles & More: Grundlagen"
        );
        assert!(!answer.contains("**") && !answer.contains('…') && !answer.contains("]("));
        let english = answer_or_empty(FOUND, false);
        assert!(english.ends_with("Sources: Status und Upgrades, Miles & More: Grundlagen"));
    }

    fn answer_or_empty(content: &str, german: bool) -> String {
        answer(content, german).unwrap_or_default()
    }

    #[test]
    fn nothing_found_is_no_passage_list_and_cut_passages_still_name_their_documents() {
        assert_eq!(
            answer(
                "I found nothing relevant in our knowledge base. Shall I answer from general knowledge instead?",
                false
            ),
            None
        );
        let cut = "Here is what the knowledge base says:\n\n**1.** [award-holds] Award holds > How\n\nSome programmes hold an award for a few days without pay…";
        assert_eq!(
            answer_or_empty(cut, false),
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
