//! Dates that are not one day: "±3 days around 15 March", "3 Tage flexibel", "between 12
//! and 18 March", "12.–18. März"; and a way back: "a return on 5 March", "Rückflug am 5.
//! März".

use time::Date;

/// The most days either side a search takes (`search_flights`' `flexibility`).
pub(super) const MAX_FLEXIBILITY: u8 = 3;

/// Words that make a message about the way back.
const RETURN_WORDS: &[&str] = &[
    "return",
    "returning",
    "back",
    "rückflug",
    "rückreise",
    "zurück",
    "retour",
];

/// Words that join the two days of a range.
const RANGE_JOINERS: &[&str] = &["and", "to", "until", "till", "und", "bis", "-", "–"];

/// Days either side the message asks for: "±3", "+/- 2 days", "3 days either side",
/// "2 Tage flexibel"; `None` without one.
pub(super) fn flexibility_in(lower: &str) -> Option<u8> {
    let compact = lower
        .replace("+/-", "±")
        .replace("+-", "±")
        .replace("± ", "±");
    for word in compact.split_whitespace() {
        if let Some(rest) = word.strip_prefix('±') {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(days) = digits.parse::<u8>() {
                return Some(days);
            }
        }
    }
    let words: Vec<&str> = compact.split_whitespace().collect();
    for (i, pair) in words.windows(2).enumerate() {
        let (Ok(days), unit) = (pair[0].parse::<u8>(), pair[1]) else {
            continue;
        };
        if !matches!(unit, "days" | "day" | "tage" | "tag") {
            continue;
        }
        let after: Vec<&str> = words.iter().skip(i + 2).take(2).copied().collect();
        let flexible = after.iter().any(|w| {
            matches!(
                w.trim_matches(|c: char| !c.is_alphanumeric()),
                "either" | "flexible" | "flexibel" | "around" | "um" | "früher" | "später"
            )
        });
        if flexible {
            return Some(days);
        }
    }
    None
}

/// The first and last day of a range the message names ("between 12 and 18 March",
/// "12-18 march", "vom 12. bis 18. märz"), given `dates`, the dates found in it, and the
/// day numbers written before a month.
pub(super) fn range_in(lower: &str, dates: &[Date]) -> Option<(Date, Date)> {
    let end = *dates.first()?;
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    // "between 28 February and 3 March": two whole dates.
    if words.iter().any(|w| matches!(*w, "between" | "zwischen"))
        && let [first, last, ..] = dates
        && first < last
    {
        return Some((*first, *last));
    }
    // "12-18" or "12.–18." as one word, or "12 and 18" as three.
    for (i, word) in words.iter().enumerate() {
        let joined = word
            .split_once(['-', '–'])
            .and_then(|(a, b)| Some((day_number(a)?, day_number(b)?)));
        let spread = words
            .get(i + 2)
            .filter(|_| words.get(i + 1).is_some_and(|j| RANGE_JOINERS.contains(j)))
            .and_then(|b| Some((day_number(word)?, day_number(b)?)));
        if let Some((first, last)) = joined.or(spread)
            && last == end.day()
            && first < last
        {
            let start = end.replace_day(first).ok()?;
            return Some((start, end));
        }
    }
    None
}

/// A search of `start`..=`end`: the middle day and the days either side that cover it, at
/// most [`MAX_FLEXIBILITY`]; `true` when the range was wider than that.
pub(super) fn centred(start: Date, end: Date) -> (Date, u8, bool) {
    let span = (end - start).whole_days();
    let half = (span + 1) / 2;
    let middle = start + time::Duration::days(span / 2);
    let flexibility = u8::try_from(half.min(i64::from(MAX_FLEXIBILITY))).unwrap_or(0);
    (middle, flexibility, half > i64::from(MAX_FLEXIBILITY))
}

/// The message asks about the way back.
pub(super) fn is_about_return(lower: &str) -> bool {
    lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| RETURN_WORDS.contains(&w))
}

/// "12", "12." as a day of the month.
fn day_number(word: &str) -> Option<u8> {
    word.trim_end_matches('.')
        .parse::<u8>()
        .ok()
        .filter(|d| (1..=31).contains(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    #[test]
    fn flexible_days_in_english_and_german() {
        for (message, days) in [
            ("fra to jfk ±3 days around 15 march", Some(3)),
            ("fra to jfk +/- 2 days", Some(2)),
            ("fra to jfk 15 march, 3 days either side", Some(3)),
            ("fra nach jfk am 15. märz, 2 tage flexibel", Some(2)),
            ("fra nach jfk ± 1 tag", Some(1)),
            ("fra to jfk for 3 days", None),
            ("fra to jfk on 15 march", None),
        ] {
            assert_eq!(flexibility_in(message), days, "{message}");
        }
    }

    #[test]
    fn ranges_in_english_and_german() {
        let end = date!(2027 - 03 - 18);
        let start = date!(2027 - 03 - 12);
        for message in [
            "fra to jfk between 12 and 18 march",
            "fra to jfk 12-18 march",
            "fra nach jfk zwischen dem 12. und 18. märz",
            "fra nach jfk vom 12. bis 18. märz",
            "fra nach jfk 12.–18. märz",
        ] {
            assert_eq!(range_in(message, &[end]), Some((start, end)), "{message}");
        }
        let february = date!(2027 - 02 - 28);
        assert_eq!(
            range_in("between 28 february and 18 march", &[february, end]),
            Some((february, end))
        );
        assert_eq!(range_in("fra to jfk on 18 march", &[end]), None);
        assert_eq!(range_in("2 adults on 18 march", &[end]), None);
    }

    #[test]
    fn a_range_is_searched_from_its_middle() {
        assert_eq!(
            centred(date!(2027 - 03 - 12), date!(2027 - 03 - 18)),
            (date!(2027 - 03 - 15), 3, false)
        );
        assert_eq!(
            centred(date!(2027 - 03 - 14), date!(2027 - 03 - 15)),
            (date!(2027 - 03 - 14), 1, false)
        );
        // Three weeks: the middle week, and the answer says so.
        assert_eq!(
            centred(date!(2027 - 03 - 01), date!(2027 - 03 - 21)),
            (date!(2027 - 03 - 11), 3, true)
        );
    }

    #[test]
    fn the_way_back_in_english_and_german() {
        for message in [
            "what about a return on 5 march?",
            "und der rückflug am 5. märz?",
        ] {
            assert!(is_about_return(message), "{message}");
        }
        assert!(!is_about_return("fra to jfk on 5 march"));
    }
}
