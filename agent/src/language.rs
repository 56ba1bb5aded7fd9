//! Which language a turn's user texts are written in (docs/api.md, `language`): the
//! message's own (when it says enough), else the one remembered in the chat, else the
//! request's `language` field, else the first supported language of `Accept-Language`,
//! else English.
//!
//! A supported language is a [`Locale`]; a well-formed tag of another language is passed
//! over, so the next source decides. Only a malformed `language` field is an error.

use shared::domain::flight::Locale;
use shared::{Error, Result};

/// Longer than any tag a client sends in practice; a longer text is refused unread.
const MAX_TAG_LEN: usize = 35;

/// Most `Accept-Language` entries read; the rest are ignored.
const MAX_ENTRIES: usize = 16;

/// The `language` field: `Ok(Some(_))` for a supported language ("de", "de-DE", "en_GB"),
/// `Ok(None)` for a well-formed tag of another language ("fr-CA"), and a validation error
/// naming the field for anything that is no language tag.
pub fn from_field(tag: &str) -> Result<Option<Locale>> {
    parse_tag(tag).ok_or_else(|| {
        Error::Invalid(format!(
            "language must be a language tag such as \"de\" or \"en-GB\", got {:?}",
            tag.chars().take(MAX_TAG_LEN).collect::<String>()
        ))
    })
}

/// The first supported language of an `Accept-Language` header, by q-value (ties keep
/// the header's order). Malformed entries are skipped, as are `q=0` and `*`.
pub fn from_accept_language(header: &str) -> Option<Locale> {
    let mut ranked: Vec<(u16, Locale)> = header
        .split(',')
        .take(MAX_ENTRIES)
        .filter_map(|entry| {
            let mut parts = entry.split(';');
            let locale = parse_tag(parts.next()?.trim())??;
            let quality = parts
                .find_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
                .map_or(Some(1000), quality)?;
            (quality > 0).then_some((quality, locale))
        })
        .collect();
    // Stable: equal q-values keep the header's order.
    ranked.sort_by_key(|(quality, _)| std::cmp::Reverse(*quality));
    ranked.first().map(|(_, locale)| *locale)
}

/// The message's language when it says enough to tell; `None` for "ok", "42", "JFK?".
/// Umlauts or ß make it German; otherwise the language with at least two of its common
/// words, and more of them than the other, wins. Words both languages use ("in", "was",
/// "will", "also") count for neither.
pub fn from_message(text: &str) -> Option<Locale> {
    const ENGLISH: &[&str] = &[
        "i", "i'm", "the", "and", "to", "from", "for", "flight", "flights", "please", "what", "is",
        "are", "a", "on", "my", "me", "can", "could", "you", "find", "of", "with", "how", "do",
        "does", "work", "which", "when", "where", "why", "who", "there", "it", "this", "that",
        "be", "have", "has", "need", "want", "book", "about", "any", "tell", "show", "much",
        "cost", "cheapest", "next", "or", "at", "by", "fly", "get", "should",
    ];
    const GERMAN: &[&str] = &[
        "ich", "und", "nach", "von", "der", "die", "das", "mit", "bitte", "suche", "flug", "wie",
        "ist", "nicht", "ein", "eine", "mir", "gibt", "welche", "welcher", "kann", "es", "sind",
        "wann", "wo", "warum", "habe", "haben", "fliegen", "kostet", "auch", "oder", "nur", "noch",
        "zu", "im", "dem", "den", "des", "sie", "wir", "uns", "mein", "meine", "bei", "auf", "am",
        "zum", "zur", "meilen", "klasse", "hallo", "danke", "gerne", "hat", "wird", "werden",
        "gilt", "regeln", "meiner", "meinen",
    ];
    let lower = text.to_lowercase();
    if lower.contains(['ä', 'ö', 'ü', 'ß']) {
        return Some(Locale::De);
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let hits = |list: &[&str]| words.iter().filter(|w| list.contains(w)).count();
    let (en, de) = (hits(ENGLISH), hits(GERMAN));
    match en.cmp(&de) {
        std::cmp::Ordering::Greater if en >= 2 => Some(Locale::En),
        std::cmp::Ordering::Less if de >= 2 => Some(Locale::De),
        _ => None,
    }
}

/// `None` when `tag` is no language tag; `Some(None)` for an unsupported language.
fn parse_tag(tag: &str) -> Option<Option<Locale>> {
    if tag.is_empty() || tag.len() > MAX_TAG_LEN {
        return None;
    }
    // `_` as in POSIX locales ("de_DE") is common enough in clients to accept.
    let mut subtags = tag.split(['-', '_']);
    let primary = subtags.next()?;
    let well_formed = (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic())
        && subtags
            .all(|s| (1..=8).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric()));
    if !well_formed {
        return None;
    }
    Some(match primary.to_ascii_lowercase().as_str() {
        "de" => Some(Locale::De),
        "en" => Some(Locale::En),
        _ => None,
    })
}

/// A q-value in thousandths: "0.8" → 800, "1" → 1000; `None` when malformed.
fn quality(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_takes_supported_tags_passes_over_others_and_refuses_garbage() {
        for (tag, expected) in [
            ("de", Some(Locale::De)),
            ("DE-de", Some(Locale::De)),
            ("de_AT", Some(Locale::De)),
            ("en-GB", Some(Locale::En)),
            ("en", Some(Locale::En)),
            ("fr", None),
            ("zh-Hant-TW", None),
        ] {
            assert_eq!(from_field(tag).ok(), Some(expected), "{tag}");
        }
        for bad in [
            "",
            "d",
            "german",
            "de-",
            "de DE",
            "1de",
            "de-ÄÖ",
            &"x".repeat(36),
        ] {
            assert!(
                matches!(from_field(bad), Err(Error::Invalid(m)) if m.starts_with("language")),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn accept_language_picks_the_best_supported_language() {
        for (header, expected) in [
            ("de-DE,de;q=0.9,en;q=0.8", Some(Locale::De)),
            (
                "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5",
                Some(Locale::En),
            ),
            ("en;q=0.5, de;q=0.9", Some(Locale::De)),
            ("de;q=0, en", Some(Locale::En)),
            ("en-US, de", Some(Locale::En)),
            ("de, en", Some(Locale::De)),
            ("de;q=0.8, en;q=0.8", Some(Locale::De)),
            ("de;q=2, en;q=0.1", Some(Locale::En)),
            ("de;q=abc", None),
            ("fr, it", None),
            ("*", None),
            ("", None),
            (";;,,", None),
        ] {
            assert_eq!(from_accept_language(header), expected, "{header:?}");
        }
    }

    #[test]
    fn q_values_are_read_in_thousandths() {
        assert_eq!(quality("1"), Some(1000));
        assert_eq!(quality("1.000"), Some(1000));
        assert_eq!(quality("0.8"), Some(800));
        assert_eq!(quality("0.125"), Some(125));
        assert_eq!(quality("0"), Some(0));
        for bad in ["1.5", "0.1234", "-0.5", "", "2"] {
            assert_eq!(quality(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_message_tells_its_language_only_when_it_says_enough() {
        assert_eq!(
            from_message("Suche Flüge von FRA nach JFK"),
            Some(Locale::De)
        );
        assert_eq!(
            from_message("Business flights FRA to JFK on 2027-03-15"),
            Some(Locale::En)
        );
        for (text, expected) in [
            ("How do fuel surcharges work?", Locale::En),
            ("Is there a lounge in Frankfurt?", Locale::En),
            ("Gibt es Lounges in Frankfurt?", Locale::De),
            ("Wann ist der Flug?", Locale::De),
            ("Which day is cheapest to fly?", Locale::En),
            ("Welche Stopover-Regeln hat Miles & More?", Locale::De),
            ("What are the stopover rules for Miles & More?", Locale::En),
        ] {
            assert_eq!(from_message(text), Some(expected), "{text}");
        }
        for unclear in ["ok", "42", "JFK?", "danke", "thanks", "in Frankfurt"] {
            assert_eq!(from_message(unclear), None, "{unclear}");
        }
    }
}
