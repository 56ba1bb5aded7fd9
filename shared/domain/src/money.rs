//! Money and counts as the flight results show them. Both search functions write their
//! prices with [`price_text`], so an award's taxes and a cash fare read alike in one answer:
//!
//! - `en`: `€1,234.56`, `$450.00`, `£99.50`; currencies without a common symbol with their
//!   code first, `CHF 1,234.56`.
//! - `de`: `1.234,56 €`, `450,00 $`, `1.234,56 CHF` (the amount first, as German price
//!   lists write it).
//!
//! Amounts are exact decimals ([`Amount`]): upstreams send decimal strings or integer minor
//! units, and floating point would show its rounding in a price.

use super::flight::Locale;

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

    /// `minor / 10^scale`, e.g. taxes of `4174` cents with `scale` 2; `None` for more
    /// fraction digits than a price has (as [`Amount::parse`]).
    pub fn from_minor(minor: u64, scale: u32) -> Option<Self> {
        (scale <= MAX_SCALE).then_some(Self {
            minor: u128::from(minor),
            scale,
        })
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

    /// The amount as a float: a figure to show (a flight's `taxes.amount`), never to compute with.
    pub fn to_f64(self) -> f64 {
        // Display-only figure (the `taxes.amount` of the shared result type).
        self.minor as f64 / 10f64.powi(i32::try_from(self.scale).unwrap_or(0))
    }

    /// Digits with grouping for `locale`, without a currency: cents always have two digits
    /// (`99.5` → `99.50`), an amount given without fraction digits has none.
    pub fn digits(self, locale: Locale) -> String {
        let shown = if self.scale == 1 {
            self.rescaled(2).unwrap_or(self)
        } else {
            self
        };
        // `scale` is at most `MAX_SCALE`, so the power fits.
        let divisor = 10u128.pow(shown.scale);
        let (int, frac) = (shown.minor / divisor, shown.minor % divisor);
        let (group, decimal) = separators(locale);
        let mut text = grouped(int, group);
        if shown.scale > 0 {
            let width = shown.scale as usize;
            text.push(decimal);
            text.push_str(&format!("{frac:0width$}"));
        }
        text
    }
}

/// The thousands and decimal separators of `locale`.
fn separators(locale: Locale) -> (char, char) {
    match locale {
        Locale::En => (',', '.'),
        Locale::De => ('.', ','),
    }
}

/// `1234567` as `1,234,567` (`sep = ','`) or `1.234.567`.
pub fn grouped(n: u128, sep: char) -> String {
    let raw = n.to_string();
    let mut out = String::with_capacity(raw.len() + raw.len() / 3);
    for (i, c) in raw.chars().enumerate() {
        if i > 0 && (raw.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// A count such as miles with the grouping of `locale`: `85,000` / `85.000`.
pub fn count_text(n: u64, locale: Locale) -> String {
    grouped(u128::from(n), separators(locale).0)
}

/// The symbol of the currencies that are commonly written with one.
fn symbol(currency: &str) -> Option<&'static str> {
    match currency {
        "EUR" => Some("€"),
        "USD" => Some("$"),
        "GBP" => Some("£"),
        _ => None,
    }
}

/// `€1,234.56` (en) or `1.234,56 €` (de); see the module docs. `currency` is an ISO code,
/// upper case; an empty one leaves the digits alone.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(s: &str) -> Amount {
        Amount::parse(s).unwrap_or_else(|| panic!("amount {s:?}"))
    }

    fn cents(minor: u64) -> Amount {
        Amount::from_minor(minor, 2).unwrap_or_else(|| panic!("cents {minor}"))
    }

    #[test]
    fn prices_by_locale() {
        let a = amount("1234.56");
        assert_eq!(price_text(a, "EUR", Locale::En), "€1,234.56");
        assert_eq!(price_text(a, "EUR", Locale::De), "1.234,56 €");
        assert_eq!(price_text(a, "USD", Locale::En), "$1,234.56");
        assert_eq!(price_text(a, "USD", Locale::De), "1.234,56 $");
        assert_eq!(price_text(a, "GBP", Locale::De), "1.234,56 £");
        assert_eq!(price_text(a, "CHF", Locale::En), "CHF 1,234.56");
        assert_eq!(price_text(a, "CHF", Locale::De), "1.234,56 CHF");
        assert_eq!(
            price_text(amount("1234567"), "JPY", Locale::En),
            "JPY 1,234,567"
        );
        assert_eq!(
            price_text(amount("1234567"), "JPY", Locale::De),
            "1.234.567 JPY"
        );
        assert_eq!(price_text(amount("99.5"), "GBP", Locale::En), "£99.50");
        assert_eq!(price_text(amount("0.07"), "EUR", Locale::De), "0,07 €");
        assert_eq!(price_text(amount("999"), "", Locale::En), "999");
        assert_eq!(price_text(amount("999"), "", Locale::De), "999");
    }

    #[test]
    fn minor_units_keep_their_cents() {
        assert_eq!(price_text(cents(45_000), "USD", Locale::En), "$450.00");
        assert_eq!(price_text(cents(45_000), "USD", Locale::De), "450,00 $");
        assert_eq!(price_text(cents(4_174), "USD", Locale::En), "$41.74");
        assert_eq!(
            price_text(cents(123_405), "CAD", Locale::En),
            "CAD 1,234.05"
        );
        assert_eq!(price_text(cents(123_405), "EUR", Locale::De), "1.234,05 €");
        assert_eq!(price_text(cents(5), "GBP", Locale::En), "£0.05");
        assert_eq!(Amount::from_minor(45_000, 2), Some(amount("450.00")));
        assert_eq!(Amount::from_minor(450, 0), Some(amount("450")));
        assert_eq!(Amount::from_minor(1, 7), None);
        assert_eq!(
            Amount::from_minor(u64::MAX, 0).map(|a| a.digits(Locale::En)),
            Some("18,446,744,073,709,551,615".to_owned())
        );
    }

    #[test]
    fn counts_by_locale() {
        assert_eq!(count_text(85_000, Locale::En), "85,000");
        assert_eq!(count_text(1_250_000, Locale::De), "1.250.000");
        assert_eq!(count_text(999, Locale::De), "999");
        assert_eq!(count_text(0, Locale::En), "0");
        assert_eq!(grouped(1_000, ','), "1,000");
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
