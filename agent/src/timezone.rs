//! The user's day. "Today" in the prompt and the past-date check of flight requests use
//! the user's local date: an IANA time zone sent with the message, or the one remembered in
//! the chat; UTC when none is known. Without it, "tomorrow" said in the morning in Sydney or
//! in the evening in San Francisco would search the wrong day.

use jiff::tz::TimeZone;
use shared::{Error, Result};
use time::{Date, Month, OffsetDateTime};

/// Longer than any IANA name; a longer text is refused before the lookup.
const MAX_NAME_LEN: usize = 64;

/// A known IANA time zone, e.g. `Europe/Berlin`.
#[derive(Debug, Clone)]
pub struct UserTimeZone {
    name: String,
    zone: TimeZone,
}

impl UserTimeZone {
    /// `name` if the bundled time-zone database knows it; otherwise a validation error that
    /// names the field.
    pub fn parse(name: &str) -> Result<Self> {
        let unknown = || {
            Error::Invalid(format!(
                "timezone must be an IANA time zone such as \"Europe/Berlin\", got {:?}",
                name.chars().take(MAX_NAME_LEN).collect::<String>()
            ))
        };
        if name.is_empty() || name.len() > MAX_NAME_LEN {
            return Err(unknown());
        }
        let zone = jiff::tz::db().get(name).map_err(|_| unknown())?;
        Ok(Self {
            name: name.to_owned(),
            zone,
        })
    }

    /// The zone's IANA name, as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The date in this zone at `now`.
    pub fn date_at(&self, now: OffsetDateTime) -> Date {
        let local = jiff::Timestamp::from_second(now.unix_timestamp())
            .map(|t| t.to_zoned(self.zone.clone()).date());
        local
            .ok()
            .and_then(|d| {
                let month = Month::try_from(u8::try_from(d.month()).ok()?).ok()?;
                let day = u8::try_from(d.day()).ok()?;
                Date::from_calendar_date(i32::from(d.year()), month, day).ok()
            })
            .unwrap_or(now.date())
    }
}

/// The user's date at `now`: in `zone`, or UTC.
pub fn local_date(zone: Option<&UserTimeZone>, now: OffsetDateTime) -> Date {
    zone.map_or(now.date(), |zone| zone.date_at(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::{date, datetime};

    #[test]
    fn the_same_instant_is_another_day_elsewhere() {
        let now = datetime!(2027-03-01 22:00 UTC);
        let zone = |name: &str| UserTimeZone::parse(name).unwrap();
        assert_eq!(local_date(None, now), date!(2027 - 03 - 01));
        assert_eq!(zone("Australia/Sydney").date_at(now), date!(2027 - 03 - 02));
        assert_eq!(zone("Europe/Berlin").date_at(now), date!(2027 - 03 - 01));
        let morning = datetime!(2027-03-02 06:00 UTC);
        assert_eq!(
            zone("America/Los_Angeles").date_at(morning),
            date!(2027 - 03 - 01)
        );
    }

    #[test]
    fn unknown_zones_are_refused_with_the_field_named() {
        for bad in ["", "Mars/Olympus", "Europe/Berlin; DROP", &"x".repeat(200)] {
            let err = UserTimeZone::parse(bad).unwrap_err().to_string();
            assert!(err.contains("timezone"), "{err}");
        }
    }
}
