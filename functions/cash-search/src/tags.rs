//! The tags of a cash fare that carry words, in the request's locale: the fare brand, its
//! terms before departure, and Amadeus' last ticketing date.
//!
//! A term keeps its `label: value` form: the chat message, the terminal client and the web
//! client show a tag with a ':' as a note of the row (`domain::flight_notes`,
//! `web/src/flightNotes.ts`). Bare flags such as `nonstop` are for machines and are not
//! translated.

use domain::flight::Locale;
use domain::money::{Amount, price_text};

/// A fare condition before departure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    Changes,
    Refund,
}

/// What the fare allows for a [`Term`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance<'a> {
    NotAllowed,
    Free,
    /// An amount above zero in a currency (an ISO code).
    Fee(Amount, &'a str),
}

/// `fare: Light` / `Tarif: Light`.
pub fn fare(brand: &str, locale: Locale) -> String {
    match locale {
        Locale::En => format!("fare: {brand}"),
        Locale::De => format!("Tarif: {brand}"),
    }
}

/// `changes: free`, `changes: fee £100.00`, `refund: not allowed`; German
/// `Umbuchung: kostenlos`, `Umbuchung: Gebühr 100,00 £`, `Erstattung: nicht erlaubt`.
pub fn term(term: Term, allowance: Allowance<'_>, locale: Locale) -> String {
    let label = match (locale, term) {
        (Locale::En, Term::Changes) => "changes",
        (Locale::En, Term::Refund) => "refund",
        (Locale::De, Term::Changes) => "Umbuchung",
        (Locale::De, Term::Refund) => "Erstattung",
    };
    let value = match (locale, allowance) {
        (Locale::En, Allowance::NotAllowed) => "not allowed".to_owned(),
        (Locale::De, Allowance::NotAllowed) => "nicht erlaubt".to_owned(),
        (Locale::En, Allowance::Free) => "free".to_owned(),
        (Locale::De, Allowance::Free) => "kostenlos".to_owned(),
        (Locale::En, Allowance::Fee(fee, currency)) => {
            format!("fee {}", price_text(fee, currency, locale))
        }
        (Locale::De, Allowance::Fee(fee, currency)) => {
            format!("Gebühr {}", price_text(fee, currency, locale))
        }
    };
    format!("{label}: {value}")
}

/// `ticket by 2020-01-16` / `Ticketausstellung bis 2020-01-16`: Amadeus' last ticketing
/// date. Without a ':' on purpose, as before: it is no note of the row.
pub fn ticket_by(date: &str, locale: Locale) -> String {
    match locale {
        Locale::En => format!("ticket by {date}"),
        Locale::De => format!("Ticketausstellung bis {date}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fee() -> Allowance<'static> {
        let amount = Amount::parse("100.00").unwrap_or_else(|| panic!("amount"));
        Allowance::Fee(amount, "GBP")
    }

    #[test]
    fn english_tags() {
        assert_eq!(fare("Light", Locale::En), "fare: Light");
        assert_eq!(
            term(Term::Changes, Allowance::Free, Locale::En),
            "changes: free"
        );
        assert_eq!(
            term(Term::Changes, fee(), Locale::En),
            "changes: fee £100.00"
        );
        assert_eq!(
            term(Term::Changes, Allowance::NotAllowed, Locale::En),
            "changes: not allowed"
        );
        assert_eq!(
            term(Term::Refund, Allowance::Free, Locale::En),
            "refund: free"
        );
        assert_eq!(term(Term::Refund, fee(), Locale::En), "refund: fee £100.00");
        assert_eq!(
            term(Term::Refund, Allowance::NotAllowed, Locale::En),
            "refund: not allowed"
        );
        assert_eq!(ticket_by("2020-01-16", Locale::En), "ticket by 2020-01-16");
    }

    #[test]
    fn german_tags() {
        assert_eq!(fare("Light", Locale::De), "Tarif: Light");
        assert_eq!(
            term(Term::Changes, Allowance::Free, Locale::De),
            "Umbuchung: kostenlos"
        );
        assert_eq!(
            term(Term::Changes, fee(), Locale::De),
            "Umbuchung: Gebühr 100,00 £"
        );
        assert_eq!(
            term(Term::Changes, Allowance::NotAllowed, Locale::De),
            "Umbuchung: nicht erlaubt"
        );
        assert_eq!(
            term(Term::Refund, Allowance::Free, Locale::De),
            "Erstattung: kostenlos"
        );
        assert_eq!(
            term(Term::Refund, fee(), Locale::De),
            "Erstattung: Gebühr 100,00 £"
        );
        assert_eq!(
            term(Term::Refund, Allowance::NotAllowed, Locale::De),
            "Erstattung: nicht erlaubt"
        );
        assert_eq!(
            ticket_by("2020-01-16", Locale::De),
            "Ticketausstellung bis 2020-01-16"
        );
    }

    #[test]
    fn terms_keep_the_colon_that_makes_them_notes() {
        for locale in [Locale::En, Locale::De] {
            assert!(fare("Flex", locale).contains(':'));
            assert!(term(Term::Refund, Allowance::Free, locale).contains(':'));
            assert!(!ticket_by("2020-01-16", locale).contains(':'));
        }
    }
}
