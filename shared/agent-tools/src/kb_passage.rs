//! A knowledge-base passage as people see it: its document's title and section (never the
//! document id, a file name), its language, and its text without Markdown.
//!
//! kb-ingest's chunks start with their heading path (`Title > Section`, then a blank line);
//! a passage without one (plain text, a Bedrock knowledge base) has its document id,
//! written as words, for a title.

use pulldown_cmark::{Event, Parser, TagEnd};
use serde::Serialize;
use shared::domain::flight::Locale;

/// Characters of a heading path at most: a longer first line is text, not a path.
const MAX_PATH_CHARS: usize = 200;

/// One passage, ready for a source list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassageView {
    /// The document's title ("Stopovers and open jaws on award tickets").
    pub title: String,
    /// The section within it ("Stopover versus layover"; nested sections joined by " › ").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The language the passage is written in.
    pub lang: Locale,
    /// The passage's text as plain sentences, without its heading path.
    pub text: String,
}

impl PassageView {
    pub fn of(document_id: &str, content: &str) -> Self {
        let (path, body) = heading_path(content);
        let mut parts = path
            .map(|p| p.split(" > ").map(plain))
            .into_iter()
            .flatten();
        let title = parts
            .next()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| words_of_id(document_id));
        let section: Vec<String> = parts.filter(|s| !s.is_empty()).collect();
        let text = plain(body);
        Self {
            title,
            section: (!section.is_empty()).then(|| section.join(" › ")),
            lang: Locale::of_passage(&text),
            text,
        }
    }
}

/// The passage's heading path and its text after it; no path when the first line reads as
/// text (a sentence's end, a list, longer than a heading).
fn heading_path(content: &str) -> (Option<&str>, &str) {
    let content = content.trim_start();
    match content.split_once("\n\n") {
        Some((first, rest))
            if !first.contains('\n')
                && first.chars().count() <= MAX_PATH_CHARS
                && !first.trim_end().ends_with(['.', '!', '?', ':'])
                && !first.starts_with(['-', '*', '+', '>', '|']) =>
        {
            (Some(first.trim()), rest)
        }
        _ => (None, content),
    }
}

/// Markdown as plain text: emphasis, code marks, link targets and list markers gone;
/// paragraphs, items and lines joined by single spaces.
pub fn plain(markdown: &str) -> String {
    // A chunk that repeats a list's lead-in as its overlap joins it to the first item on
    // one line ("… in different ways: - Some allow …"): that item starts a list.
    let markdown = markdown.replace(": - ", ":\n\n- ");
    let mut out = String::with_capacity(markdown.len());
    let space = |out: &mut String| {
        if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
    };
    for event in Parser::new(&markdown) {
        match event {
            Event::Text(text) | Event::Code(text) => out.push_str(&text),
            Event::SoftBreak | Event::HardBreak => space(&mut out),
            Event::End(
                TagEnd::Paragraph | TagEnd::Item | TagEnd::Heading(_) | TagEnd::TableCell,
            ) => space(&mut out),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `stopovers-and-open-jaws` → "Stopovers and open jaws".
fn words_of_id(id: &str) -> String {
    let words = id.replace(['-', '_'], " ");
    let mut chars = words.trim().chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_has_its_documents_title_its_section_and_plain_text() {
        let view = PassageView::of(
            "stopovers-and-open-jaws",
            "Stopovers and open jaws on award tickets > Stopover versus layover\n\n\
             A **layover** is short.\n\n- Some allow one free stopover.\n- [Aeroplan](https://x.example) adds one.",
        );
        assert_eq!(view.title, "Stopovers and open jaws on award tickets");
        assert_eq!(view.section.as_deref(), Some("Stopover versus layover"));
        assert_eq!(
            view.text,
            "A layover is short. Some allow one free stopover. Aeroplan adds one."
        );
        assert_eq!(view.lang, Locale::En);
    }

    #[test]
    fn a_german_chunk_and_one_without_a_heading_path() {
        let view = PassageView::of(
            "miles-and-more-grundlagen",
            "Miles & More: Grundlagen > Verfall der Meilen\n\nMeilen verfallen nach 36 Monaten, es gibt aber einen Schutz für Statuskunden.",
        );
        assert_eq!(
            (view.title.as_str(), view.section.as_deref(), view.lang),
            (
                "Miles & More: Grundlagen",
                Some("Verfall der Meilen"),
                Locale::De
            )
        );
        let plain_text = PassageView::of(
            "award-holds",
            "Some programmes hold an award.\n\nOthers do not.",
        );
        assert_eq!(plain_text.title, "Award holds");
        assert_eq!(plain_text.section, None);
        assert_eq!(
            plain_text.text,
            "Some programmes hold an award. Others do not."
        );
    }

    #[test]
    fn a_lead_in_joined_to_its_lists_first_item_loses_the_dash() {
        // The chunker's overlap puts a list's lead-in on the line of its first item.
        let view = PassageView::of(
            "stopovers-and-open-jaws",
            "Stopovers > Stopover versus layover\n\nPrograms treat stopovers in different ways: - Some allow one free stopover.\n- Others price each segment.",
        );
        assert_eq!(
            view.text,
            "Programs treat stopovers in different ways: Some allow one free stopover. Others price each segment."
        );
    }
}
