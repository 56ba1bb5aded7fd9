//! Display texts of cash offers: durations and prices.
//!
//! Prices stay exact decimals (Amadeus sends decimal strings; no floating point on money).
//! The text follows the request's locale: English `€1,234.56` / `$1,234.56` / `£1,234.56`,
//! German `1.234,56 €`; currencies without a common symbol are written with their code,
//! `CHF 1,234.56` / `1.234,56 CHF`.

use shared::domain::flight::Locale;

/// A non-negative decimal amount: `minor / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amount {
    minor: u128,
    scale: u32,
}

/// More fraction digits than any currency uses; longer strings are not prices.
const MAX_SCALE: u32 = 6;

impl Amount {
    /// Parses `"3842.10"`, `"12"`, `"0.5"`; refuses signs, exponents and anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || !digits(int) || !digits(frac) || frac.len() > MAX_SCALE as usize {
            return None;
        }
        let scale = u32::try_from(frac.len()).ok()?;
        let minor = format!("{int}{frac}").parse::<u128>().ok()?;
        Some(Self { minor, scale })
    }

    fn rescaled(self, scale: u32) -> Option<Self> {
        let factor = 10u128.checked_pow(scale.checked_sub(self.scale)?)?;
        Some(Self {
            minor: self.minor.checked_mul(factor)?,
            scale,
        })
    }

    /// Shared by `n` people, rounded half up at the amount's own precision.
    pub fn divided_by(self, n: u32) -> Option<Self> {
        let n = u128::from(n);
        if n == 0 {
            return None;
        }
        // `(minor + n / 2) / n` without the sum, which can pass `u128::MAX` for a price of
        // 39 digits.
        let (quotient, remainder) = (self.minor / n, self.minor % n);
        Some(Self {
            minor: quotient + u128::from(remainder >= n - n / 2),
            scale: self.scale,
        })
    }

    /// `self - other`, or `None` when it would be negative.
    pub fn minus(self, other: Self) -> Option<Self> {
        let scale = self.scale.max(other.scale);
        let (a, b) = (self.rescaled(scale)?, other.rescaled(scale)?);
        Some(Self {
            minor: a.minor.checked_sub(b.minor)?,
            scale,
        })
    }

    pub fn to_f64(self) -> f64 {
        // Display-only figure (the `taxes.amount` of the shared result type).
        self.minor as f64 / 10f64.powi(i32::try_from(self.scale).unwrap_or(0))
    }

    /// Digits with grouping for `locale`; cents always have two digits, whole amounts none.
    fn digits(self, locale: Locale) -> String {
        let shown = if self.scale == 1 {
            self.rescaled(2).unwrap_or(self)
        } else {
            self
        };
        let divisor = 10u128.pow(shown.scale);
        let (int, frac) = (shown.minor / divisor, shown.minor % divisor);
        let (group, decimal) = match locale {
            Locale::En => (',', '.'),
            Locale::De => ('.', ','),
        };
        let raw = int.to_string();
        let mut grouped = String::with_capacity(raw.len() + raw.len() / 3);
        for (i, c) in raw.chars().enumerate() {
            if i > 0 && (raw.len() - i) % 3 == 0 {
                grouped.push(group);
            }
            grouped.push(c);
        }
        if shown.scale > 0 {
            let width = shown.scale as usize;
            grouped.push(decimal);
            grouped.push_str(&format!("{frac:0width$}"));
        }
        grouped
    }
}

fn symbol(currency: &str) -> Option<&'static str> {
    match currency {
        "EUR" => Some("€"),
        "USD" => Some("$"),
        "GBP" => Some("£"),
        _ => None,
    }
}

/// `€1,234.56` (en) or `1.234,56 €` (de); see the module docs.
pub fn price_text(amount: Amount, currency: &str, locale: Locale) -> String {
    let digits = amount.digits(locale);
    let currency = currency.trim();
    match (locale, symbol(currency)) {
        (Locale::En, Some(sym)) => format!("{sym}{digits}"),
        (Locale::De, Some(sym)) => format!("{digits} {sym}"),
        (_, None) if currency.is_empty() => digits,
        (Locale::En, None) => format!("{currency} {digits}"),
        (Locale::De, None) => format!("{digits} {currency}"),
    }
}

/// `Nonstop`, `1 stop (MUC)`, `2 stops (MUC, VIE)` from the connection airports.
pub fn stops_text(connections: &[&str]) -> String {
    match connections {
        [] => "Nonstop".to_owned(),
        [one] => format!("1 stop ({one})"),
        many => format!("{} stops ({})", many.len(), many.join(", ")),
    }
}

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

    fn amount(s: &str) -> Amount {
        Amount::parse(s).unwrap_or_else(|| panic!("amount {s:?}"))
    }

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

    #[test]
    fn prices_by_locale() {
        let a = amount("1234.56");
        assert_eq!(price_text(a, "EUR", Locale::En), "€1,234.56");
        assert_eq!(price_text(a, "EUR", Locale::De), "1.234,56 €");
        assert_eq!(price_text(a, "USD", Locale::En), "$1,234.56");
        assert_eq!(price_text(a, "CHF", Locale::En), "CHF 1,234.56");
        assert_eq!(price_text(a, "CHF", Locale::De), "1.234,56 CHF");
        assert_eq!(
            price_text(amount("1234567"), "JPY", Locale::En),
            "JPY 1,234,567"
        );
        assert_eq!(price_text(amount("99.5"), "GBP", Locale::En), "£99.50");
        assert_eq!(price_text(amount("0.07"), "EUR", Locale::De), "0,07 €");
        assert_eq!(price_text(amount("999"), "", Locale::En), "999");
    }

    #[test]
    fn arithmetic_stays_exact() {
        assert_eq!(amount("3842.10").divided_by(2), Some(amount("1921.05")));
        assert_eq!(amount("100.00").divided_by(3), Some(amount("33.33")));
        assert_eq!(amount("0.05").divided_by(2), Some(amount("0.03")));
        assert_eq!(amount("1").divided_by(0), None);
        assert_eq!(
            amount("3842.10").minus(amount("3661")),
            Some(amount("181.10"))
        );
        assert_eq!(amount("1").minus(amount("2")), None);
        assert!((amount("181.10").to_f64() - 181.1).abs() < 1e-9);
        for bad in ["", "-1", "1e3", "1.2.3", "€5", ".5", "1.1234567"] {
            assert_eq!(Amount::parse(bad), None, "{bad}");
        }
    }
}
