//! A pick from the last flight list, as a traveller types it: "#2", "2", "option 2",
//! "I'll take number 2", "Nr. 2", "Ich nehme Option 2", "the second one", "die zweite".
//! Only a message that is nothing but the pick counts, so "2 adults to JFK" stays a search.

/// The highest number a list shows (`select_flight`'s own bound).
const MAX_OPTION: u8 = 20;

/// Words that may stand around the number without making the message about anything else.
const FILLER: &[&str] = &[
    // English
    "i", "i'll", "ill", "i'd", "id", "we", "we'll", "take", "pick", "choose", "want", "book",
    "would", "like", "the", "one", "option", "number", "no", "flight", "please", "let's", "lets",
    "go", "with", "for", "me", "us", "ok", "okay", "yes", "that", "then", // German
    "ich", "wir", "nehme", "nehmen", "nimm", "möchte", "möchten", "will", "wähle", "wählen",
    "buche", "buchen", "bitte", "die", "den", "das", "der", "nr", "nummer", "flug", "variante",
    "gerne", "gern", "ja", "dann", "mit", "mir", "uns", "bitte",
];

const ORDINALS: &[(&str, u8)] = &[
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("fourth", 4),
    ("fifth", 5),
    ("sixth", 6),
    ("seventh", 7),
    ("eighth", 8),
    ("ninth", 9),
    ("tenth", 10),
    ("erst", 1),
    ("zweit", 2),
    ("dritt", 3),
    ("viert", 4),
    ("fünft", 5),
    ("sechst", 6),
    ("siebt", 7),
    ("acht", 8),
    ("neunt", 9),
    ("zehnt", 10),
];

/// The option the message picks, if picking one is all it does.
pub(super) fn option_in(message: &str) -> Option<u8> {
    let lower = message.trim().to_lowercase();
    let mut option = None;
    for word in lower.split(|c: char| c.is_whitespace() || c == ',' || c == '!' || c == '?') {
        let word = word.trim_matches(|c: char| c == '.' || c == ':' || c == '"' || c == '\'');
        if word.is_empty() || FILLER.contains(&word) {
            continue;
        }
        let number = number_of(word)?;
        if option.replace(number).is_some() {
            // Two numbers: not a plain pick.
            return None;
        }
    }
    option.filter(|n| (1..=MAX_OPTION).contains(n))
}

/// "2", "#2", "2nd", "2." or an ordinal word ("second", "zweite", "zweiten").
fn number_of(word: &str) -> Option<u8> {
    let digits = word.trim_start_matches('#');
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| digits.strip_suffix(suffix))
        .unwrap_or(digits);
    if let Ok(n) = digits.parse::<u8>() {
        return Some(n);
    }
    // German ordinals take an ending: zweite, zweiten, zweiter, zweites.
    let stem = ["en", "er", "es", "e"]
        .iter()
        .find_map(|ending| word.strip_suffix(ending))
        .unwrap_or(word);
    ORDINALS
        .iter()
        .find(|(name, _)| *name == word || *name == stem)
        .map(|&(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_of_picking_names_the_option_in_english_and_german() {
        for (message, option) in [
            ("#2", 2),
            ("2", 2),
            ("2.", 2),
            ("Option 2", 2),
            ("option 2 please", 2),
            ("I'll take number 2", 2),
            ("the second one", 2),
            ("2nd", 2),
            ("Nr. 2", 2),
            ("Nummer 3 bitte", 3),
            ("Ich nehme Option 2", 2),
            ("die zweite", 2),
            ("Ich nehme den dritten", 3),
            ("Flug 12", 12),
        ] {
            assert_eq!(option_in(message), Some(option), "{message}");
        }
    }

    #[test]
    fn a_message_that_says_more_than_a_pick_is_not_one() {
        for message in [
            "2 adults from FRA to JFK",
            "a day later",
            "and in first class?",
            "between 2 and 3",
            "option 0",
            "option 21",
            "hello",
            "",
            "Ich nehme zwei Erwachsene mit",
        ] {
            assert_eq!(option_in(message), None, "{message}");
        }
    }
}
