//! Display texts of a flight in the caller's locale (the stops are
//! [`domain::flight_text`]'s).
//!
//! - `en`: "85,000 miles + $450.00" ("$41.74", "CAD 1,234.05").
//! - `de`: "85.000 Meilen + 450,00 $" ("41,74 $", "1.234,05 CAD").
//!
//! The taxes are written by the shared price formatter ([`domain::money`]), as the
//! cash results are, so one answer shows one price format; Seats.aero's minor units are
//! always cents, hence two decimals. Without known taxes the text is the miles alone.

use domain::flight::Locale;
use domain::money::{Amount, count_text, price_text};

/// Cents: Seats.aero's taxes are integers in minor units.
const TAXES_SCALE: u32 = 2;

/// The price text: miles, plus taxes when they are known.
pub(crate) fn price(locale: Locale, miles: u64, taxes: Option<(u64, &str)>) -> String {
    let unit = match locale {
        Locale::De => "Meilen",
        Locale::En => "miles",
    };
    let miles = format!("{} {unit}", count_text(miles, locale));
    let taxes = taxes.and_then(|(minor, currency)| {
        Amount::from_minor(minor, TAXES_SCALE).map(|a| price_text(a, currency, locale))
    });
    match taxes {
        Some(taxes) => format!("{miles} + {taxes}"),
        None => miles,
    }
}

/// Minutes as "7h 35m" (both locales; "45m" under an hour).
pub(crate) fn duration(minutes: u64) -> String {
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h {m}m"),
    }
}

/// Seats.aero sends the airports' local times with a misleading `Z` (the fixture's
/// CUN 14:00 → IST 10:10 next day only matches its 730 minutes as local times), so the
/// suffix and seconds are dropped: "2024-05-01T14:00".
pub(crate) fn local_time(raw: &str) -> String {
    let raw = raw.trim().trim_end_matches('Z');
    let looks_iso = raw.len() >= 16 && raw.as_bytes().get(10) == Some(&b'T');
    match raw.get(..16) {
        Some(minutes) if looks_iso => minutes.to_owned(),
        _ => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices() {
        assert_eq!(
            price(Locale::En, 85_000, Some((45_000, "USD"))),
            "85,000 miles + $450.00"
        );
        assert_eq!(
            price(Locale::De, 85_000, Some((45_000, "USD"))),
            "85.000 Meilen + 450,00 $"
        );
        assert_eq!(
            price(Locale::En, 70_000, Some((4_174, "USD"))),
            "70,000 miles + $41.74"
        );
        assert_eq!(
            price(Locale::De, 70_000, Some((4_174, "USD"))),
            "70.000 Meilen + 41,74 $"
        );
        assert_eq!(
            price(Locale::En, 1_250_000, Some((123_405, "CAD"))),
            "1,250,000 miles + CAD 1,234.05"
        );
        assert_eq!(
            price(Locale::De, 1_250_000, Some((123_405, "CAD"))),
            "1.250.000 Meilen + 1.234,05 CAD"
        );
        assert_eq!(
            price(Locale::De, 1_250_000, Some((123_405, "EUR"))),
            "1.250.000 Meilen + 1.234,05 €"
        );
        assert_eq!(price(Locale::En, 999, None), "999 miles");
        assert_eq!(price(Locale::De, 999, None), "999 Meilen");
        assert_eq!(price(Locale::En, 0, Some((5, "GBP"))), "0 miles + £0.05");
    }

    #[test]
    fn durations_and_times() {
        assert_eq!(duration(455), "7h 35m");
        assert_eq!(duration(730), "12h 10m");
        assert_eq!(duration(45), "45m");
        assert_eq!(local_time("2024-05-01T14:00:00Z"), "2024-05-01T14:00");
        assert_eq!(local_time("2024-05-01"), "2024-05-01");
    }
}
