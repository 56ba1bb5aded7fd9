//! Makes recorded upstream answers fit the question: the fixtures are real API answers for
//! one route and date (SFO → JFK in 2023, GIG → MAD in 2020); the local fakes move them to
//! the requested airports and date, so a demo search for FRA → JFK on a future date shows
//! FRA → JFK on that date. Amadeus' connections and prices stay as recorded; the fake
//! Seats.aero's trips are made per availability (`award_trips`).

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime};

/// The requested route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub origin: String,
    pub destination: String,
    pub date: Date,
}

/// Shifts every date and date-time string in `value` by `days`.
pub fn shift_dates(value: &mut Value, days: i64) {
    match value {
        Value::String(text) => {
            if let Some(shifted) = shift_one(text, days) {
                *text = shifted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shift_dates(v, days)),
        Value::Object(map) => map.values_mut().for_each(|v| shift_dates(v, days)),
        _ => {}
    }
}

fn shift_one(text: &str, days: i64) -> Option<String> {
    let delta = Duration::days(days);
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return (t + delta).format(&Rfc3339).ok();
    }
    let date_format = time::macros::format_description!("[year]-[month]-[day]");
    let local_format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    if let Ok(t) = PrimitiveDateTime::parse(text, local_format) {
        return (t + delta).format(local_format).ok();
    }
    if text.len() == 10
        && let Ok(d) = Date::parse(text, date_format)
    {
        return (d + delta).format(date_format).ok();
    }
    None
}

/// Replaces string values of the keys in `keys` that equal `from` with `to`, anywhere.
pub fn replace_codes(value: &mut Value, keys: &[&str], from: &str, to: &str) {
    match value {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| replace_codes(v, keys, from, to)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if keys.contains(&key.as_str()) && v.as_str() == Some(from) {
                    *v = Value::String(to.to_owned());
                } else {
                    replace_codes(v, keys, from, to);
                }
            }
        }
        _ => {}
    }
}

/// Days from `from` to `to`.
pub fn days_between(from: Date, to: Date) -> i64 {
    (to - from).whole_days()
}

/// The first date in `value` under `key` (a date or date-time string).
pub fn first_date(value: &Value, key: &str) -> Option<Date> {
    match value {
        Value::Array(items) => items.iter().find_map(|v| first_date(v, key)),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if k == key {
                v.as_str().and_then(|s| s.get(..10)).and_then(|s| {
                    Date::parse(s, time::macros::format_description!("[year]-[month]-[day]")).ok()
                })
            } else {
                first_date(v, key)
            }
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use time::macros::date;

    use super::*;

    #[test]
    fn dates_and_codes_move() {
        let mut v = json!({"Date": "2023-08-11", "DepartsAt": "2024-05-01T13:52:00Z",
            "at": "2020-08-01T21:50:00", "OriginAirport": "SFO", "Other": "SFO", "n": 3});
        shift_dates(&mut v, 10);
        replace_codes(&mut v, &["OriginAirport"], "SFO", "FRA");
        assert_eq!(v["Date"], json!("2023-08-21"));
        assert_eq!(v["DepartsAt"], json!("2024-05-11T13:52:00Z"));
        assert_eq!(v["at"], json!("2020-08-11T21:50:00"));
        assert_eq!(v["OriginAirport"], json!("FRA"));
        assert_eq!(v["Other"], json!("SFO"));
        assert_eq!(first_date(&v, "DepartsAt"), Some(date!(2024 - 05 - 11)));
        assert_eq!(
            days_between(date!(2024 - 05 - 01), date!(2024 - 05 - 11)),
            10
        );
    }
}
