//! Fare alerts as the stand-in scripts them: "Alert me when business class FRA to JFK in
//! March drops below 60,000 miles" calls `create_fare_alert` (a route, a date range of at
//! most 31 days, a cabin, a limit in miles or cash), which waits for the user's approval;
//! what is missing is asked for. Once the user approved or denied the call, the runtime
//! says how it ended and the stand-in tells the user.

use serde_json::json;
use test_support::fake_llm::Reply;
use time::{Date, Month};

use super::{
    Ask, FlightIntent, did_not_work, find_word, flight_intent, month_of, text, unfenced, year_of,
};

/// Words that ask for an alert.
const ALERT_WORDS: &[&str] = &[
    "alert",
    "alerts",
    "notify",
    "let me know",
    "tell me when",
    "watch",
    "benachrichtige",
    "benachrichtigen",
    "benachrichtigung",
    "alarm",
    "preisalarm",
    "gib mir bescheid",
    "sag mir bescheid",
    "informiere",
];

/// Units of a miles limit.
const MILES_WORDS: &[&str] = &["miles", "mile", "meilen", "points", "punkte", "avios"];

/// Currencies of a cash limit, by how they are written.
const CURRENCIES: &[(&str, &str)] = &[
    ("€", "EUR"),
    ("eur", "EUR"),
    ("euro", "EUR"),
    ("euros", "EUR"),
    ("$", "USD"),
    ("usd", "USD"),
    ("dollar", "USD"),
    ("dollars", "USD"),
    ("£", "GBP"),
    ("gbp", "GBP"),
    ("pounds", "GBP"),
    ("pfund", "GBP"),
    ("chf", "CHF"),
    ("franken", "CHF"),
];

/// Words before a month that mean the whole month: "in March", "im März".
const MONTH_LEADS: &[&str] = &["in", "im", "during", "throughout", "for", "für"];

/// How the stand-in's questions for a missing route and a missing limit begin (English,
/// German): the next message may answer them.
const ASKED: [&str; 6] = [
    "Which route should I watch",
    "Welche Strecke soll ich",
    "Below how many miles",
    "Unter wie vielen Meilen",
    "Which days should I watch",
    "Welche Tage soll ich",
];

/// The widest range of one alert, in days after its first (31 days in all).
const MAX_EXTRA_DAYS: i64 = 30;

/// The limits a message names.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Limits {
    pub miles: Option<u64>,
    pub price: Option<(f64, &'static str)>,
}

impl Limits {
    fn any(&self) -> bool {
        self.miles.is_some() || self.price.is_some()
    }
}

/// The alert a message asks for, if it asks for one (or answers the stand-in's question
/// about one): the `create_fare_alert` call, or the question for what is missing. The
/// route, cabin and days come from the message, else from the last search.
pub(super) fn request(message: &str, intent: &FlightIntent, ask: &Ask<'_>) -> Option<Reply> {
    let (text_all, intent) = match super::asked_after(ask.messages, &ASKED) {
        // Only when the message gives what was asked: a route or a limit.
        Some(earlier)
            if intent.destination.is_some()
                || limits_in(message).any()
                || intent.depart_date.is_some()
                || month_range(&message.to_lowercase(), ask.today).is_some() =>
        {
            let both = format!("{earlier}\n{message}");
            let intent = flight_intent(&both, ask.today);
            (both, intent)
        }
        _ => (message.to_owned(), intent.clone()),
    };
    let lower = text_all.to_lowercase();
    if !ALERT_WORDS.iter().any(|w| find_word(&lower, w).is_some()) {
        return None;
    }
    let limits = limits_in(&text_all);
    let named_route = intent.origin.is_some() && intent.destination.is_some();
    // "How do fare alerts work?" asks about alerts, not for one.
    if !named_route && !limits.any() {
        return None;
    }
    let last = ask.context.last.as_ref();
    let (origin, destination, cabin) = match (&intent.origin, &intent.destination, last) {
        (Some(o), Some(d), _) => (o.clone(), d.clone(), intent.cabin),
        (_, _, Some(last)) => (
            last.origin.to_string(),
            last.destination.to_string(),
            intent.cabin.or(Some(last.cabin.as_str())),
        ),
        _ => {
            return Some(text(
                if ask.german {
                    "Welche Strecke soll ich für dich beobachten, etwa „FRA nach JFK im März“?"
                } else {
                    "Which route should I watch for you, say \"FRA to JFK in March\"?"
                }
                .to_owned(),
            ));
        }
    };
    if !limits.any() {
        return Some(text(if ask.german {
            format!(
                "Unter wie vielen Meilen (oder welchem Preis) soll ich dich für {origin} → {destination} benachrichtigen?"
            )
        } else {
            format!(
                "Below how many miles (or what price) should I alert you for {origin} → {destination}?"
            )
        }));
    }
    let last_day = if named_route {
        None
    } else {
        last.map(|l| l.depart_date)
    };
    // No days named and no search to take them from: ask, rather than pick a month.
    if month_range(&lower, ask.today).is_none()
        && intent.depart_date.is_none()
        && last_day.is_none()
    {
        return Some(text(if ask.german {
            format!(
                "Welche Tage soll ich für {origin} → {destination} beobachten, etwa „im März“ oder „1. bis 15. März“ (höchstens 31 Tage)?"
            )
        } else {
            format!(
                "Which days should I watch {origin} → {destination} for, say \"in March\" or \"1 to 15 March\" (31 days at most)?"
            )
        }));
    }
    let (from, to) = days(&lower, &intent, last_day, ask.today);
    let mut args = json!({
        "origin": origin,
        "destination": destination,
        "date_from": from.to_string(),
        "date_to": to.to_string(),
        "cabin": cabin.unwrap_or("ECONOMY"),
    });
    if let Some(miles) = limits.miles {
        args["max_miles"] = json!(miles);
    }
    if let Some((amount, currency)) = limits.price {
        args["max_price"] = json!({"amount": amount, "currency": currency});
    }
    Some(Reply::tool_call("create_fare_alert", args))
}

/// The quick reply after a search that sets an alert on it: below a round number of miles
/// for the cabin.
pub(super) fn quick_reply(cabin: &str, german: bool) -> String {
    let miles: u64 = match cabin {
        "FIRST" => 90_000,
        "BUSINESS" => 60_000,
        "PREMIUM_ECONOMY" => 45_000,
        _ => 30_000,
    };
    if german {
        format!(
            "Alarm unter {} Meilen",
            shared::domain::flight_notes::grouped(miles, '.')
        )
    } else {
        format!(
            "Alert me below {} miles",
            shared::domain::flight_notes::grouped(miles, ',')
        )
    }
}

/// The days to watch: a month named ("in March": from today on when it is this month), the
/// dates named (one day, or from the first to the second), the week from the last search's
/// day, else the next 31 days; never more than 31 days.
fn days(lower: &str, intent: &FlightIntent, last_day: Option<Date>, today: Date) -> (Date, Date) {
    let named = super::dates_in(lower, today);
    let (from, to) = if let Some(range) = month_range(lower, today) {
        range
    } else if let Some(range) = super::window::range_in(lower, &named) {
        range
    } else if let Some(from) = intent.depart_date {
        (from, intent.return_date.unwrap_or(from))
    } else if let Some(day) = last_day {
        (day, day + time::Duration::days(6))
    } else {
        (today, today + time::Duration::days(MAX_EXTRA_DAYS))
    };
    (from, to.min(from + time::Duration::days(MAX_EXTRA_DAYS)))
}

/// "in March", "im März", "March 2027": the month's days still to come.
fn month_range(lower: &str, today: Date) -> Option<(Date, Date)> {
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '!' | '?'))
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().find_map(|(i, word)| {
        // Full names only: "mar" or "may" could be other words.
        let name = word.trim_end_matches('.');
        let full = name.chars().count() >= 4 || matches!(name, "mai" | "may");
        let month = month_of(word).filter(|_| full)?;
        let year = words.get(i + 1).and_then(|w| year_of(w));
        let led = i > 0 && MONTH_LEADS.contains(&words[i - 1]);
        if !led && year.is_none() {
            return None;
        }
        let year = year.unwrap_or(if month >= today.month() {
            today.year()
        } else {
            today.year() + 1
        });
        whole_month(year, month, today)
    })
}

fn whole_month(year: i32, month: Month, today: Date) -> Option<(Date, Date)> {
    let first = Date::from_calendar_date(year, month, 1).ok()?;
    let last = Date::from_calendar_date(year, month, month.length(year)).ok()?;
    Some((first.max(today), last))
}

/// Miles and cash limits: "60,000 miles", "60.000 Meilen", "60k miles", "€800", "800 EUR",
/// "CHF 900".
pub(super) fn limits_in(message: &str) -> Limits {
    let lower = message.to_lowercase();
    let words: Vec<&str> = lower
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '!' | '?' | '(' | ')' | '"'))
        })
        .filter(|w| !w.is_empty())
        .collect();
    let currency = |word: &str| {
        CURRENCIES
            .iter()
            .find(|(written, _)| *written == word)
            .map(|(_, code)| *code)
    };
    let mut limits = Limits::default();
    for (i, word) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or_default();
        let before = i.checked_sub(1).map(|j| words[j]).unwrap_or_default();
        if let Some(n) = number(word) {
            if MILES_WORDS.contains(&next) {
                limits.miles = limits.miles.or(Some(n.round() as u64).filter(|m| *m > 0));
            } else if let Some(code) = currency(next).or_else(|| currency(before)) {
                limits.price = limits.price.or(Some((n, code)));
            }
            continue;
        }
        // A symbol stuck to the amount: "€800", "800€", "$1,200".
        for symbol in ["€", "$", "£"] {
            let amount = word
                .strip_prefix(symbol)
                .or_else(|| word.strip_suffix(symbol));
            if let (Some(n), Some(code)) = (amount.and_then(number), currency(symbol)) {
                limits.price = limits.price.or(Some((n, code)));
            }
        }
    }
    limits
}

/// A number as people write it: "60000", "60,000", "60.000", "1,200.50", "60k".
fn number(word: &str) -> Option<f64> {
    let (digits, factor) = match word.strip_suffix('k') {
        Some(digits) => (digits, 1000.0),
        None => (word, 1.0),
    };
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let groups: Vec<&str> = digits.split([',', '.']).collect();
    if groups
        .iter()
        .any(|g| g.is_empty() || !g.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let value: f64 = match groups.as_slice() {
        [one] => one.parse().ok()?,
        // The last group of three digits: they all separate thousands.
        [.., last] if last.len() == 3 => groups.concat().parse().ok()?,
        [head @ .., last] if last.len() <= 2 => format!("{}.{last}", head.concat()).parse().ok()?,
        _ => return None,
    };
    Some(value * factor).filter(|v| *v > 0.0)
}

/// How a call that waited for the user's approval ended, as the runtime tells the model
/// after the decision: "The user approved the call of create_fare_alert … <<<DATA …>>>".
#[derive(Debug, PartialEq)]
pub(super) struct Verdict<'a> {
    pub approved: bool,
    pub tool: &'a str,
    /// The call's outcome (its tool message).
    pub outcome: &'a str,
}

impl<'a> Verdict<'a> {
    pub(super) fn of(content: &'a str) -> Option<Self> {
        let rest = content.trim_start().strip_prefix("The user ")?;
        let (approved, rest) = if let Some(rest) = rest.strip_prefix("approved the call of ") {
            (true, rest)
        } else {
            (false, rest.strip_prefix("denied the call of ")?)
        };
        let tool = rest.split_whitespace().next()?;
        let outcome = rest
            .find("<<<DATA ")
            .map_or("", |start| unfenced(&rest[start..]));
        Some(Self {
            approved,
            tool,
            outcome: outcome.trim(),
        })
    }

    /// What the user reads: the alert kept (in plain words), or that it was left.
    pub(super) fn relayed(&self, german: bool) -> String {
        let alert = self.tool == "create_fare_alert";
        if !self.approved {
            return match (alert, german) {
                (true, false) => "All right, I did not set the fare alert.",
                (true, true) => "In Ordnung, ich lege den Preisalarm nicht an.",
                (false, false) => "All right, I left it as it was.",
                (false, true) => "In Ordnung, dann lasse ich es.",
            }
            .to_owned();
        }
        if self.outcome.starts_with('[') {
            return did_not_work(german);
        }
        // The tool writes in the turn's language: "Saved: Fare alert …. The alert is …".
        let saved = |prefix: &str, end: &str| {
            self.outcome
                .strip_prefix(prefix)
                .and_then(|rest| rest.split_once(end))
                .map(|(summary, _)| summary.trim())
        };
        if let Some(summary) = saved("Saved: ", ". The alert is checked") {
            let summary = summary.strip_prefix("Fare alert ").unwrap_or(summary);
            return format!(
                "Done: your fare alert {summary} is saved. It is checked regularly; you find what it finds, and can delete it, under your fare alerts."
            );
        }
        if let Some(summary) = saved("Gespeichert: ", ". Der Alarm wird") {
            let summary = summary.strip_prefix("Preisalarm ").unwrap_or(summary);
            return format!(
                "Erledigt: Dein Preisalarm {summary} ist gespeichert. Er wird regelmäßig geprüft; Treffer findest du unter deinen Preisalarmen, wo du ihn auch löschen kannst."
            );
        }
        super::relay_tool_result(self.outcome, german)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    #[test]
    fn numbers_and_limits_as_people_write_them() {
        assert_eq!(number("60,000"), Some(60_000.0));
        assert_eq!(number("60.000"), Some(60_000.0));
        assert_eq!(number("60k"), Some(60_000.0));
        assert_eq!(number("1,200.50"), Some(1_200.5));
        assert_eq!(number("799,5"), Some(799.5));
        assert_eq!(number("abc"), None);
        assert_eq!(
            limits_in("below 60,000 miles or €800"),
            Limits {
                miles: Some(60_000),
                price: Some((800.0, "EUR"))
            }
        );
        assert_eq!(limits_in("unter 60.000 Meilen").miles, Some(60_000));
        assert_eq!(limits_in("under CHF 1.200").price, Some((1_200.0, "CHF")));
        assert_eq!(limits_in("below 500 dollars").price, Some((500.0, "USD")));
        assert_eq!(limits_in("FRA to JFK in March"), Limits::default());
    }

    #[test]
    fn a_month_is_its_days_to_come_and_a_range_at_most_31_days() {
        let today = date!(2027 - 03 - 10);
        assert_eq!(
            month_range("in march", today),
            Some((today, date!(2027 - 03 - 31)))
        );
        assert_eq!(
            month_range("im februar", today),
            Some((date!(2028 - 02 - 01), date!(2028 - 02 - 29)))
        );
        assert_eq!(month_range("prices may drop", today), None);
        let none = flight_intent("", today);
        let (from, to) = days("", &none, None, today);
        assert_eq!((to - from).whole_days(), MAX_EXTRA_DAYS);
        let both = flight_intent("from 1 april to 30 may", today);
        let (from, to) = days("from 1 april to 30 may", &both, None, today);
        assert_eq!((from, to), (date!(2027 - 04 - 01), date!(2027 - 05 - 01)));
    }
}
