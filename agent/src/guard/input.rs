//! The user's message before anything else reads it: NFKC-normalised (full-width and other
//! compatibility forms become plain letters) and stripped of invisible format characters
//! (zero-width, bidi overrides, tags), which can hide or reorder an attack.

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// A normalised text and how many invisible characters were removed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    pub text: String,
    pub removed_invisible: usize,
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
    if !text.chars().any(is_invisible) && is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        return Normalised {
            text: text.to_owned(),
            removed_invisible: 0,
        };
    }
    let mut removed_invisible = 0;
    let text = text
        .chars()
        .filter(|c| {
            let invisible = is_invisible(*c);
            removed_invisible += usize::from(invisible);
            !invisible
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
}
