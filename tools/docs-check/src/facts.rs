//! One fact, one place: the checks that find a fact written down in a second page.
//!
//! Each kind of fact has one owning page; other pages link to it:
//!
//! - a setting's or template parameter's default: `docs/configuration.md` (its tables are the
//!   list of settings); [`restated_defaults`] finds a setting named with its default elsewhere;
//! - routes and error codes: `docs/api.md`; [`foreign_rows`] finds a table row about one in
//!   another page (a settings row outside `configuration.md` likewise);
//! - prose: [`repeated_sentences`] finds a long sentence written twice, in one page or two.

use std::collections::{BTreeMap, BTreeSet};

use shared::config::VarDefault;

/// The page that owns settings and their defaults.
pub const SETTINGS_PAGE: &str = "docs/configuration.md";
/// The page that owns routes, events and error codes.
pub const API_PAGE: &str = "docs/api.md";

/// Sentences shorter than this many words may repeat (headings, "See X.").
const MIN_SENTENCE_WORDS: usize = 10;
/// How far after a setting's name its default counts as stated with it, in characters.
const DEFAULT_WINDOW: usize = 90;

/// A page's prose: its lines outside fenced code blocks, with their 1-based numbers.
fn prose_lines(markdown: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = if trimmed.starts_with("````") {
            Some("````")
        } else if trimmed.starts_with("```") {
            Some("```")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if m == open => fence = None,
            (None, None) => lines.push((i + 1, line)),
            _ => {}
        }
    }
    lines
}

/// The cells of a table row, trimmed; `None` for a line that is not one, or a separator.
fn table_cells(line: &str) -> Option<Vec<&str>> {
    let trimmed = line.trim();
    if !trimmed.starts_with('|') || trimmed.starts_with("| ---") || trimmed.starts_with("|---") {
        return None;
    }
    Some(crate::cells(trimmed))
}

/// Sets thousands separators aside so `8,000` and `8000` read alike.
fn plain_number(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            let between_digits = *i > 0
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                && chars[i - 1].is_ascii_digit();
            !(**c == ',' && between_digits)
        })
        .map(|(_, c)| *c)
        .collect()
}

/// Whether `value` stands in `text` as a whole word (not inside a longer number or name).
fn contains_word(text: &str, value: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    text.match_indices(value).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + value.len()..].chars().next();
        let after_ends = match after {
            // A sentence's full stop ends the word; a decimal point does not.
            Some('.') => !text[at + value.len() + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit()),
            Some(c) => !is_word(c),
            None => true,
        };
        !before.is_some_and(is_word) && after_ends
    })
}

/// Settings named, outside `configuration.md`, together with their default value: the
/// default belongs to the settings page, where the code checks it; elsewhere it goes stale.
/// `defaults` are that page's rows (name → documented default).
pub fn restated_defaults(markdown: &str, defaults: &BTreeMap<String, VarDefault>) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = prose_lines(markdown);
    for (i, (number, line)) in lines.iter().enumerate() {
        // A statement may go on in the next line of its paragraph.
        let next = lines
            .get(i + 1)
            .filter(|(n, _)| *n == number + 1)
            .map_or("", |(_, l)| l.trim());
        let joined = format!("{line} {next}");
        for (name, default) in defaults {
            let VarDefault::Value(value) = default else {
                continue;
            };
            let value = plain_number(value);
            if value.is_empty() {
                continue;
            }
            let quoted = format!("`{name}`");
            for (at, _) in line.match_indices(&quoted) {
                let after = &joined[at + quoted.len()..];
                let window = stated_with(after);
                // `NAME` (4), `NAME` (default 4), `NAME` ... defaults to 4; not a condition
                // ("with `LlmProvider` `openai`") or a list of choices ("(`test` and `prod`").
                let window = plain_number(window);
                let states = window.contains("default") && contains_word(&window, &value);
                if states || opens_with(&window, &value) {
                    problems.push(format!(
                        "line {number}: `{name}` is given with its default ({value}); the \
                         default is kept in {SETTINGS_PAGE} only: link there instead"
                    ));
                }
            }
        }
    }
    problems
}

/// Whether `text` opens with `value` as an aside: `(4)`, `(3600 s, at most ...)`,
/// `, 1024,`; not a list of choices such as `` (`test` and `prod` ...) ``.
fn opens_with(text: &str, value: &str) -> bool {
    let text = text.trim_start();
    let Some(rest) = text.strip_prefix('(').or_else(|| text.strip_prefix(", ")) else {
        return false;
    };
    let rest = rest.trim_start().trim_start_matches('`');
    let Some(after) = rest.strip_prefix(value) else {
        return false;
    };
    let after = after.trim_start_matches('`');
    let choices = [" and ", " or ", ":"].iter().any(|w| after.starts_with(w));
    !choices && !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
}

/// The text that follows a name in the same clause: up to a sentence's or a table cell's
/// end, at most [`DEFAULT_WINDOW`] characters.
fn stated_with(after: &str) -> &str {
    let mut end = after.len().min(DEFAULT_WINDOW);
    while !after.is_char_boundary(end) {
        end -= 1;
    }
    let window = &after[..end];
    let cut = [". ", "; ", "|"]
        .iter()
        .filter_map(|stop| window.find(stop))
        .min()
        .unwrap_or(window.len());
    &window[..cut]
}

/// Whether a table's first cell names a route: `` `GET /chats` ``.
fn is_route(cell: &str) -> bool {
    let cell = cell.trim_matches('`');
    ["GET /", "POST /", "PUT /", "PATCH /", "DELETE /"]
        .iter()
        .any(|method| cell.starts_with(method))
}

/// Table rows outside the owning page about a route, an error code (`codes`) or a setting
/// (`settings`): each has its row in one page, and the others link to it.
pub fn foreign_rows(
    markdown: &str,
    page: &str,
    codes: &BTreeSet<String>,
    settings: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut header_next = false;
    for (number, line) in prose_lines(markdown) {
        let Some(cells) = table_cells(line) else {
            header_next = line.trim().is_empty() || !line.trim_start().starts_with('|');
            continue;
        };
        // A table's first line is its header, not a row.
        if std::mem::take(&mut header_next) {
            continue;
        }
        let first = cells.first().copied().unwrap_or_default();
        let name = first.trim_matches('`');
        let owner = if is_route(first) || codes.contains(name) {
            API_PAGE
        } else if settings.contains(name) {
            SETTINGS_PAGE
        } else {
            continue;
        };
        if owner != page {
            problems.push(format!(
                "line {number}: a table row about `{name}`, which {owner} owns: link there instead"
            ));
        }
    }
    problems
}

/// The first cells of the rows of tables whose header starts with `| <first> |`.
pub fn first_cells(markdown: &str, first: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_table = false;
    for (_, line) in prose_lines(markdown) {
        let Some(cells) = table_cells(line) else {
            in_table = in_table && line.trim_start().starts_with('|');
            continue;
        };
        if cells.first() == Some(&first) {
            in_table = true;
        } else if in_table && let Some(cell) = cells.first() {
            names.insert(cell.trim_matches('`').to_owned());
        }
    }
    names
}

/// A sentence as compared: lower case, words only, links and formatting set aside.
fn normalised(sentence: &str) -> String {
    let mut text = String::new();
    let mut rest = sentence;
    // `[text](target)` compares as `text`.
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        rest = &rest[at + 2..];
        rest = rest.find(')').map_or("", |end| &rest[end + 1..]);
    }
    text.push_str(rest);
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sentences of a page's prose (tables and code aside) with the line each starts on.
fn sentences(markdown: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let mut flush = |paragraph: &mut Vec<(usize, &str)>| {
        let mut start = paragraph.first().map_or(0, |(n, _)| *n);
        let mut sentence = String::new();
        for (number, line) in paragraph.drain(..) {
            for piece in line.split_inclusive(". ") {
                if sentence.is_empty() {
                    start = number;
                }
                sentence.push_str(piece);
                sentence.push(' ');
                if piece.ends_with(". ") {
                    found.push((start, std::mem::take(&mut sentence)));
                }
            }
        }
        if !sentence.trim().is_empty() {
            found.push((start, sentence));
        }
    };
    for (number, line) in prose_lines(markdown) {
        let trimmed = line.trim_start();
        let breaks = trimmed.is_empty()
            || trimmed.starts_with('#')
            || trimmed.starts_with('|')
            || trimmed.starts_with("- ")
            || trimmed.starts_with("<!--")
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if breaks {
            flush(&mut paragraph);
        }
        if !(trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('|')) {
            paragraph.push((number, line));
        }
    }
    flush(&mut paragraph);
    found
}

/// Long sentences written more than once across `pages` (name, text): a fact told twice
/// drifts apart. Each repeat is reported once, naming where it was first written.
pub fn repeated_sentences(pages: &[(String, String)]) -> Vec<String> {
    let mut first_seen: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (page, text) in pages {
        for (line, sentence) in sentences(text) {
            let key = normalised(&sentence);
            if key.split(' ').count() < MIN_SENTENCE_WORDS {
                continue;
            }
            match first_seen.get(&key) {
                Some((first_page, first_line)) => problems.push(format!(
                    "{page}: line {line}: this sentence is also at {first_page}:{first_line}; \
                     keep it in the page that owns the fact and link there: \"{}\"",
                    sentence.trim()
                )),
                None => {
                    first_seen.insert(key, (page.clone(), line));
                }
            }
        }
    }
    problems
}
