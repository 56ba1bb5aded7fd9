//! Dates in cases, relative to the day the model is told is today, so the dataset never
//! goes stale: `+14d` (or `+2w`), a weekday `fri` (the next one after today), `fri+7` (a
//! week later), `03-15` (the next 15 March from today on), and alternatives `fri|fri+7`
//! where the words allow both ("next Friday").

use time::{Date, Duration, Month, Weekday};

/// One alternative of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Today,
    Weekday(Weekday),
    MonthDay(Month, u8),
}

/// A parsed alternative: an anchor and days after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relative {
    anchor: Anchor,
    days: i64,
}

/// Parses an expression into its alternatives.
pub fn parse(expression: &str) -> Result<Vec<Relative>, String> {
    expression
        .split('|')
        .map(|a| alternative(a.trim()))
        .collect()
}

fn alternative(text: &str) -> Result<Relative, String> {
    let bad = || format!("`{text}` is not a date expression (+14d, +2w, fri, fri+7, 03-15, a|b)");
    let (anchor, offset) = match text.find('+') {
        Some(0) => ("", &text[1..]),
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, ""),
    };
    if text.is_empty() || text.contains('+') && offset.is_empty() {
        return Err(bad());
    }
    let days = match offset {
        "" => 0,
        o if o.ends_with('w') => o[..o.len() - 1].parse::<i64>().map_err(|_| bad())? * 7,
        o => o
            .strip_suffix('d')
            .unwrap_or(o)
            .parse::<i64>()
            .map_err(|_| bad())?,
    };
    let anchor = match anchor {
        "" => Anchor::Today,
        "mon" => Anchor::Weekday(Weekday::Monday),
        "tue" => Anchor::Weekday(Weekday::Tuesday),
        "wed" => Anchor::Weekday(Weekday::Wednesday),
        "thu" => Anchor::Weekday(Weekday::Thursday),
        "fri" => Anchor::Weekday(Weekday::Friday),
        "sat" => Anchor::Weekday(Weekday::Saturday),
        "sun" => Anchor::Weekday(Weekday::Sunday),
        md => {
            let (m, d) = md.split_once('-').ok_or_else(bad)?;
            let month = m
                .parse::<u8>()
                .ok()
                .and_then(|m| Month::try_from(m).ok())
                .ok_or_else(bad)?;
            let day = d.parse::<u8>().map_err(|_| bad())?;
            // 29 February would only exist every fourth year.
            if day == 0 || day > 28 && month == Month::February || day > 31 {
                return Err(bad());
            }
            Anchor::MonthDay(month, day)
        }
    };
    Ok(Relative { anchor, days })
}

impl Relative {
    /// The date it names when `today` is today.
    pub fn resolve(self, today: Date) -> Date {
        let base = match self.anchor {
            Anchor::Today => today,
            Anchor::Weekday(weekday) => today.next_occurrence(weekday),
            Anchor::MonthDay(month, day) => {
                let this_year = Date::from_calendar_date(today.year(), month, day).ok();
                match this_year {
                    Some(d) if d >= today => d,
                    _ => Date::from_calendar_date(today.year() + 1, month, day).unwrap_or(today),
                }
            }
        };
        base.saturating_add(Duration::days(self.days))
    }
}

/// Every date an expression accepts when `today` is today.
pub fn resolve(expression: &str, today: Date) -> Result<Vec<Date>, String> {
    Ok(parse(expression)?
        .into_iter()
        .map(|r| r.resolve(today))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn at(expression: &str, today: Date) -> Vec<String> {
        resolve(expression, today)
            .unwrap()
            .into_iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn expressions_resolve_against_today() {
        // A Sunday.
        let today = date!(2027 - 03 - 14);
        assert_eq!(at("+0d", today), ["2027-03-14"]);
        assert_eq!(at("+14d", today), ["2027-03-28"]);
        assert_eq!(at("+2w", today), ["2027-03-28"]);
        assert_eq!(at("fri", today), ["2027-03-19"]);
        assert_eq!(at("fri|fri+7", today), ["2027-03-19", "2027-03-26"]);
        // The next one after today: a Sunday's "sun" is a week away.
        assert_eq!(at("sun", today), ["2027-03-21"]);
        assert_eq!(at("03-15", today), ["2027-03-15"]);
        assert_eq!(at("03-14", today), ["2027-03-14"]);
        assert_eq!(at("03-13", today), ["2028-03-13"]);
        assert_eq!(at("12-24+2", today), ["2027-12-26"]);
    }

    #[test]
    fn bad_expressions_say_what_is_accepted() {
        for bad in ["friday", "+x", "13-01", "02-30", "", "fri+"] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains("not a date expression"), "{bad}: {err}");
        }
    }
}
