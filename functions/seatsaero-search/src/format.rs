//! Display texts of a flight in the caller's locale.
//!
//! - `en`: "85,000 miles + $450" (whole amounts without cents, "$41.74" otherwise; `$`, `€`
//!   and `£` as symbols, other currencies as "CAD 41.74").
//! - `de`: "85.000 Meilen + 450,00 USD" (German digit grouping and decimal comma, always two
//!   decimals and the ISO code after the amount, as German price lists write it).
//!
//! Without known taxes the text is the miles alone. Amounts are integers in minor units
//! (cents) all the way, so no float rounding shows up in a price.

use shared::domain::flight::Locale;

/// `12345678` → `12,345,678` (`sep = ','`).
fn group(n: u64, sep: char) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

fn money(locale: Locale, minor: u64, currency: &str) -> String {
    let (major, cents) = (minor / 100, minor % 100);
    match locale {
        Locale::De => format!("{},{cents:02} {currency}", group(major, '.')),
        Locale::En => {
            let amount = if cents == 0 {
                group(major, ',')
            } else {
                format!("{}.{cents:02}", group(major, ','))
            };
            match currency {
                "USD" => format!("${amount}"),
                "EUR" => format!("€{amount}"),
                "GBP" => format!("£{amount}"),
                other => format!("{other} {amount}"),
            }
        }
    }
}

/// The price text: miles, plus taxes when they are known.
pub(crate) fn price(locale: Locale, miles: u64, taxes: Option<(u64, &str)>) -> String {
    let miles = match locale {
        Locale::De => format!("{} Meilen", group(miles, '.')),
        Locale::En => format!("{} miles", group(miles, ',')),
    };
    match taxes {
        Some((minor, currency)) => format!("{miles} + {}", money(locale, minor, currency)),
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

/// "Nonstop", "1 stop (PTY)", "2 stops (PTY, IST)"; German "1 Zwischenstopp (PTY)".
pub(crate) fn stops(locale: Locale, stops: u64, via: &[String]) -> String {
    if stops == 0 {
        return "Nonstop".to_owned();
    }
    let word = match (locale, stops) {
        (Locale::En, 1) => "stop",
        (Locale::En, _) => "stops",
        (Locale::De, 1) => "Zwischenstopp",
        (Locale::De, _) => "Zwischenstopps",
    };
    if via.is_empty() {
        format!("{stops} {word}")
    } else {
        format!("{stops} {word} ({})", via.join(", "))
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
            "85,000 miles + $450"
        );
        assert_eq!(
            price(Locale::De, 85_000, Some((45_000, "USD"))),
            "85.000 Meilen + 450,00 USD"
        );
        assert_eq!(
            price(Locale::En, 70_000, Some((4_174, "USD"))),
            "70,000 miles + $41.74"
        );
        assert_eq!(
            price(Locale::En, 1_250_000, Some((123_405, "CAD"))),
            "1,250,000 miles + CAD 1,234.05"
        );
        assert_eq!(
            price(Locale::De, 1_250_000, Some((123_405, "EUR"))),
            "1.250.000 Meilen + 1.234,05 EUR"
        );
        assert_eq!(price(Locale::En, 999, None), "999 miles");
        assert_eq!(price(Locale::En, 0, Some((5, "GBP"))), "0 miles + £0.05");
    }

    #[test]
    fn durations_stops_and_times() {
        assert_eq!(duration(455), "7h 35m");
        assert_eq!(duration(730), "12h 10m");
        assert_eq!(duration(45), "45m");
        assert_eq!(stops(Locale::En, 0, &[]), "Nonstop");
        assert_eq!(stops(Locale::En, 1, &["PTY".into()]), "1 stop (PTY)");
        assert_eq!(
            stops(Locale::De, 2, &["PTY".into(), "IST".into()]),
            "2 Zwischenstopps (PTY, IST)"
        );
        assert_eq!(stops(Locale::En, 2, &[]), "2 stops");
        assert_eq!(local_time("2024-05-01T14:00:00Z"), "2024-05-01T14:00");
        assert_eq!(local_time("2024-05-01"), "2024-05-01");
    }
}
