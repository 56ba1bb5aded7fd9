//! Leg texts that both search functions write, in the request's locale, so award and cash
//! rows of one answer say their stops alike.

use super::flight::Locale;

/// `Nonstop`, `1 stop (MUC)`, `2 stops (MUC, VIE)`; German `1 Stopp (MUC)`,
/// `2 Stopps (MUC, VIE)`. Without known airports the count alone: `2 stops`. `via` are the
/// connection airports; blank ones are left out.
pub fn stops_text<S: AsRef<str>>(locale: Locale, stops: u64, via: &[S]) -> String {
    if stops == 0 {
        return "Nonstop".to_owned();
    }
    let word = match (locale, stops) {
        (Locale::En, 1) => "stop",
        (Locale::En, _) => "stops",
        (Locale::De, 1) => "Stopp",
        (Locale::De, _) => "Stopps",
    };
    let via: Vec<&str> = via
        .iter()
        .map(|airport| airport.as_ref().trim())
        .filter(|airport| !airport.is_empty())
        .collect();
    if via.is_empty() {
        format!("{stops} {word}")
    } else {
        format!("{stops} {word} ({})", via.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&str; 0] = [];

    #[test]
    fn stops_in_english() {
        assert_eq!(stops_text(Locale::En, 0, &NONE), "Nonstop");
        assert_eq!(stops_text(Locale::En, 1, &["MUC"]), "1 stop (MUC)");
        assert_eq!(
            stops_text(Locale::En, 2, &["MUC", "VIE"]),
            "2 stops (MUC, VIE)"
        );
        assert_eq!(stops_text(Locale::En, 2, &NONE), "2 stops");
    }

    #[test]
    fn stops_in_german() {
        assert_eq!(stops_text(Locale::De, 0, &NONE), "Nonstop");
        assert_eq!(stops_text(Locale::De, 1, &["MUC"]), "1 Stopp (MUC)");
        assert_eq!(
            stops_text(Locale::De, 2, &["MUC".to_owned(), "VIE".to_owned()]),
            "2 Stopps (MUC, VIE)"
        );
        assert_eq!(stops_text(Locale::De, 1, &[" ", ""]), "1 Stopp");
    }
}
