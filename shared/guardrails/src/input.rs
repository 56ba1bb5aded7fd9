//! The user's message before anything else reads it: NFKC-normalised (full-width and other
//! compatibility forms become plain letters) and stripped of invisible format characters
//! (zero-width, bidi overrides, tags), which can hide or reorder an attack, and of control
//! characters (NUL, BEL, ESC, …), which would be stored and shown back in messages and titles.
//! The router normalises before it checks emptiness and length, so both hold for what is
//! stored and sent to the model.

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// A normalised text and how many invisible or control characters were removed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    /// The text, normalised.
    pub text: String,
    /// How many characters were removed.
    pub removed_invisible: usize,
}

/// A user's message as everything after its arrival reads it: [`normalise`]d and trimmed,
/// once, by [`UserMessage::new`] where the request is checked (its length limit holds for
/// this form), never again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserMessage(String);

impl UserMessage {
    /// `raw` normalised and trimmed; a warning says how many invisible or control characters
    /// were removed (an attack hides text with them).
    pub fn new(raw: &str) -> Self {
        let normalised = normalise(raw);
        if normalised.removed_invisible > 0 {
            tracing::warn!(
                removed = normalised.removed_invisible,
                "input guard: invisible format or control characters removed from the message"
            );
        }
        let text = normalised.text;
        let trimmed = text.trim();
        Self(if trimmed.len() == text.len() {
            text
        } else {
            trimmed.to_owned()
        })
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Nothing is left after normalising and trimming.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Control characters but the line breaks and tabs a message may hold. A lone carriage
/// return is kept here and becomes a line break in [`normalise`].
fn is_unwanted_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\n' | '\t' | '\r')
}

/// Zero-width and joiner characters, bidi embeddings, overrides and isolates, the BOM, the
/// soft hyphen, and Unicode tag characters.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}'
        | '\u{E0000}'..='\u{E007F}')
}

/// `text` without invisible characters, then NFKC: removing them first lets a letter and a
/// combining mark they separated compose, so the result is NFKC and normalising it again
/// changes nothing.
pub fn normalise(text: &str) -> Normalised {
    // Most text is NFKC already: checking is far cheaper than normalising.
    if !text
        .chars()
        .any(|c| is_invisible(c) || is_unwanted_control(c) || c == '\r')
        && is_nfkc_quick(text.chars()) == IsNormalized::Yes
    {
        return Normalised {
            text: text.to_owned(),
            removed_invisible: 0,
        };
    }
    let mut removed_invisible = 0;
    // CRLF and a lone CR both become one line break.
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let text = text
        .chars()
        .filter(|c| {
            let dropped = is_invisible(*c) || is_unwanted_control(*c);
            removed_invisible += usize::from(dropped);
            !dropped
        })
        .nfkc()
        .collect();
    Normalised {
        text,
        removed_invisible,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_forms_and_invisible_characters() {
        let n = normalise("ｉｇｎｏｒｅ\u{200b} pre\u{202e}vious\u{feff}");
        assert_eq!(n.text, "ignore previous");
        assert_eq!(n.removed_invisible, 3);
        let plain = normalise("Flüge nach Zürich");
        assert_eq!(plain.text, "Flüge nach Zürich");
        assert_eq!(plain.removed_invisible, 0);
    }

    #[test]
    fn control_characters_go_and_line_breaks_stay() {
        let n = normalise("a\u{0}b\u{7}c\u{1b}[31md\u{7f}e\u{85}f\r\ng\rh\ti");
        assert_eq!(n.text, "abc[31mdef\ng\nh\ti");
        assert_eq!(n.removed_invisible, 5);
        assert_eq!(normalise(&n.text).text, n.text);
    }

    #[test]
    fn compatibility_expansion_is_visible_in_the_length() {
        // One code point, eighteen characters: the router's limit reads this length.
        let n = normalise("\u{FDFA}");
        assert_eq!(n.text.chars().count(), 18);
        assert!(normalise("\u{200b}\u{202e}\u{2066}").text.is_empty());
    }
}
