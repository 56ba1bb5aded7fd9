//! Display texts of cash offers that are the providers' own: times and durations. Prices
//! are the shared formatter's ([`domain::money`]), stops the shared leg text's
//! ([`domain::flight_text`]) and fare terms [`crate::tags`]'s, so award and cash
//! rows of one answer read alike.

/// Local time to the minute (`2020-08-01T21:50`), as the award results show it.
pub fn local_minute(at: &str) -> String {
    let at = at.trim();
    match at.get(..16) {
        Some(minutes) if at.as_bytes().get(10) == Some(&b'T') => minutes.to_owned(),
        _ => at.to_owned(),
    }
}

/// ISO-8601 durations as Amadeus writes them (`PT7H35M`, `PT1H`, `P1DT2H`) as `7h 35m`,
/// `1h`, `26h`; `None` for anything else.
pub fn duration_text(iso: &str) -> Option<String> {
    let rest = iso.trim().strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut minutes: u64 = 0;
    let mut seen = false;
    for (part, units) in [
        (date, &[('D', 1440u64)][..]),
        (time, &[('H', 60), ('M', 1), ('S', 0)][..]),
    ] {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let factor = units.iter().find(|(u, _)| *u == c)?.1;
            let n: u64 = number.parse().ok()?;
            minutes = minutes.checked_add(n.checked_mul(factor)?)?;
            number.clear();
            seen = true;
        }
        if !number.is_empty() {
            return None;
        }
    }
    if !seen {
        return None;
    }
    let (h, m) = (minutes / 60, minutes % 60);
    Some(match (h, m) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h {m}m"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration_text("PT7H35M").as_deref(), Some("7h 35m"));
        assert_eq!(duration_text("PT15H55M").as_deref(), Some("15h 55m"));
        assert_eq!(duration_text("PT1H").as_deref(), Some("1h"));
        assert_eq!(duration_text("PT45M").as_deref(), Some("45m"));
        assert_eq!(duration_text("P1DT2H5M").as_deref(), Some("26h 5m"));
        for bad in ["", "7h", "PT", "PTxH", "PT5X", "PT12"] {
            assert_eq!(duration_text(bad), None, "{bad}");
        }
    }
}
