//! Text from the server (model output, tool results, error messages) made safe to print on
//! a terminal. A model or an upstream can put escape sequences in its text; printed raw,
//! they could recolour, move the cursor, rewrite earlier lines or set the window title.
//! Control characters other than newline and tab are dropped, as are the bidirectional
//! overrides that make text read differently from how it is stored.

/// `text` without terminal control characters and bidi overrides.
pub fn printable(text: &str) -> String {
    text.chars().filter(|&c| keep(c)).collect()
}

fn keep(c: char) -> bool {
    match c {
        '\n' | '\t' => true,
        // C0, DEL and C1 controls: ESC and CSI start every terminal sequence.
        c if c.is_control() => false,
        // Bidi embeddings, overrides and isolates.
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn escape_sequences_and_bidi_overrides_are_dropped() {
        let hostile = "ok\x1b[2J\x1b]0;pwned\x07 \u{9b}31mred\r\nnext\tcol \u{202E}txt.exe";
        assert_eq!(
            printable(hostile),
            "ok[2J]0;pwned 31mred\nnext\tcol txt.exe"
        );
        assert_eq!(printable("Flüge ✈ FRA → JFK"), "Flüge ✈ FRA → JFK");
    }
}
