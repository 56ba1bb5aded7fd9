//! Fare alerts: a user asks to be told when a route has an award seat under a number of
//! miles, or a cash fare under a price, within a date range. `create_fare_alert` keeps one
//! (after the user approved it), tool-worker checks the kept ones on a schedule and records
//! each flight that meets the limits once, and `GET/DELETE /alerts` lists and removes them.
//!
//! Flights come from the flight functions, which read them from third parties: everything
//! in an [`AlertFlight`] is data to show, never an instruction, and logs never show it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::Date;

use super::flight::{
    Cabin, FlightEndpoint, FlightResult, IataCode, Locale, Provider, Taxes, iso_date,
};
use super::flight_notes::grouped;
use super::money::Amount;
use super::schema::IsoDateSchema;
use crate::error::Error;

/// The widest date range of one alert, in days (both ends included).
pub const MAX_RANGE_DAYS: i64 = 31;
/// Longest text kept of a flight's fields: upstream strings are not ours to size.
const MAX_FIELD_CHARS: usize = 64;

/// An amount in a currency, e.g. 800.00 EUR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct Money {
    /// Above 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub amount: f64,
    /// A 3-letter ISO 4217 code, e.g. EUR or USD.
    #[schemars(pattern(r"^[A-Za-z]{3}$"))]
    pub currency: String,
}

/// Arguments of the `create_fare_alert` tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "Keep a fare alert: the route is checked regularly and every flight within the limits is kept for the user. Set max_miles (award seats), max_price (cash fares) or both. The user is asked to approve it before it is kept."
)]
pub struct CreateFareAlertArgs {
    /// Departure airport as a 3-letter IATA code, e.g. FRA.
    pub origin: IataCode,
    /// Arrival airport as a 3-letter IATA code, e.g. JFK.
    pub destination: IataCode,
    /// First departure date to watch, YYYY-MM-DD; not in the past.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub date_from: Date,
    /// Last departure date to watch, YYYY-MM-DD; at most 31 days including date_from.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub date_to: Date,
    /// Travel class.
    pub cabin: Cabin,
    /// Most miles (points) an award seat may cost, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_miles: Option<u64>,
    /// Highest cash fare, in its currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_price: Option<Money>,
}

impl CreateFareAlertArgs {
    /// Whether `alert` already watches what these arguments ask: the same route, days,
    /// cabin and limits.
    pub fn same_as(&self, alert: &FareAlert) -> bool {
        (
            &self.origin,
            &self.destination,
            self.date_from,
            self.date_to,
            self.cabin,
            self.max_miles,
            &self.max_price,
        ) == (
            &alert.origin,
            &alert.destination,
            alert.date_from,
            alert.date_to,
            alert.cabin,
            alert.max_miles,
            &alert.max_price,
        )
    }

    /// Checks what the schema cannot: the dates against each other and `today` (the
    /// user's date), and that some limit is set.
    pub fn validate(&self, today: Date) -> Result<(), Error> {
        if self.origin == self.destination {
            return Err(Error::Invalid(format!(
                "origin and destination must differ, both are {}",
                self.origin
            )));
        }
        if self.date_from < today {
            return Err(Error::Invalid(format!(
                "date_from {} is in the past: today is {today} for the user",
                self.date_from
            )));
        }
        if self.date_to < self.date_from {
            return Err(Error::Invalid(format!(
                "date_to {} must not be before date_from {}",
                self.date_to, self.date_from
            )));
        }
        if (self.date_to - self.date_from).whole_days() >= MAX_RANGE_DAYS {
            return Err(Error::Invalid(format!(
                "date_from to date_to: at most {MAX_RANGE_DAYS} days, got {}",
                (self.date_to - self.date_from).whole_days() + 1
            )));
        }
        if self.max_miles.is_none() && self.max_price.is_none() {
            return Err(Error::Invalid(
                "set max_miles, max_price or both: an alert needs a limit".into(),
            ));
        }
        if self.max_miles == Some(0) {
            return Err(Error::Invalid("max_miles must be at least 1".into()));
        }
        if let Some(price) = &self.max_price {
            if !(price.amount.is_finite() && price.amount > 0.0) {
                return Err(Error::Invalid(format!(
                    "max_price.amount must be above 0, got {}",
                    price.amount
                )));
            }
            if !(price.currency.len() == 3
                && price.currency.bytes().all(|b| b.is_ascii_alphabetic()))
            {
                return Err(Error::Invalid(
                    "max_price.currency must be a 3-letter code, e.g. EUR".into(),
                ));
            }
        }
        Ok(())
    }

    /// The currency upper-cased: the dedupe input and what is stored.
    pub fn canonical(&self) -> Value {
        let mut args = self.clone();
        if let Some(price) = &mut args.max_price {
            price.currency = price.currency.to_ascii_uppercase();
        }
        json!(args)
    }

    /// One line saying what the alert watches, for the user to approve: "Fare alert
    /// FRA → JFK, 1–15 Mar 2027, business, at most 80,000 miles".
    pub fn summary(&self, locale: Locale) -> String {
        let de = locale == Locale::De;
        let mut limits = Vec::new();
        if let Some(miles) = self.max_miles {
            limits.push(if de {
                format!("höchstens {} Meilen", grouped(miles, '.'))
            } else {
                format!("at most {} miles", grouped(miles, ','))
            });
        }
        if let Some(price) = &self.max_price {
            let amount = money_text(price.amount, locale);
            let currency = price.currency.to_ascii_uppercase();
            limits.push(if de {
                format!("höchstens {amount} {currency}")
            } else {
                format!("at most {currency} {amount}")
            });
        }
        let joiner = if de { " oder " } else { " or " };
        format!(
            "{} {} → {}, {}, {}, {}",
            if de { "Preisalarm" } else { "Fare alert" },
            self.origin,
            self.destination,
            date_range(self.date_from, self.date_to, locale),
            cabin_name(self.cabin, locale),
            limits.join(joiner)
        )
    }
}

fn cabin_name(cabin: Cabin, locale: Locale) -> &'static str {
    match (cabin, locale) {
        (Cabin::Economy, _) => "economy",
        (Cabin::PremiumEconomy, _) => "premium economy",
        (Cabin::Business, _) => "business",
        (Cabin::First, Locale::En) => "first",
        (Cabin::First, Locale::De) => "First Class",
    }
}

fn month_name(date: Date, locale: Locale) -> &'static str {
    const EN: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DE: [&str; 12] = [
        "Jan.", "Feb.", "März", "Apr.", "Mai", "Juni", "Juli", "Aug.", "Sept.", "Okt.", "Nov.",
        "Dez.",
    ];
    let index = usize::from(u8::from(date.month())) - 1;
    match locale {
        Locale::En => EN[index],
        Locale::De => DE[index],
    }
}

/// One day: "18 Jul 2027" (German: "18. Juli 2027").
pub fn day_text(date: Date, locale: Locale) -> String {
    date_range(date, date, locale)
}

/// "1–15 Mar 2027", "28 Feb – 3 Mar 2027", "30 Dec 2026 – 5 Jan 2027" (German: "1.–15. März
/// 2027").
pub fn date_range(from: Date, to: Date, locale: Locale) -> String {
    let day = |d: Date| match locale {
        Locale::En => d.day().to_string(),
        Locale::De => format!("{}.", d.day()),
    };
    let month = |d: Date| month_name(d, locale);
    if from == to {
        return format!("{} {} {}", day(from), month(from), from.year());
    }
    if from.year() != to.year() {
        return format!(
            "{} {} {} – {} {} {}",
            day(from),
            month(from),
            from.year(),
            day(to),
            month(to),
            to.year()
        );
    }
    if from.month() != to.month() {
        return format!(
            "{} {} – {} {} {}",
            day(from),
            month(from),
            day(to),
            month(to),
            to.year()
        );
    }
    format!("{}–{} {} {}", day(from), day(to), month(to), to.year())
}

/// `800` as "800", `799.5` as "799.50" (German "799,50"), grouped: the prices' digits
/// ([`Amount::digits`]); the summary puts the currency code itself.
fn money_text(amount: f64, locale: Locale) -> String {
    let cents = (amount * 100.0).round() as u64;
    let (minor, scale) = match cents % 100 {
        0 => (cents / 100, 0),
        _ => (cents, 2),
    };
    Amount::from_minor(minor, scale)
        .map(|amount| amount.digits(locale))
        .unwrap_or_default()
}

/// A kept fare alert with what it found so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FareAlert {
    /// The alert's id, a ULID.
    pub id: String,
    /// Departure airport.
    pub origin: IataCode,
    /// Arrival airport.
    pub destination: IataCode,
    /// First departure date watched.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub date_from: Date,
    /// Last departure date watched.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub date_to: Date,
    /// Travel class.
    pub cabin: Cabin,
    /// Most miles (per traveller) an award seat may cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_miles: Option<u64>,
    /// Highest cash fare, its currency upper case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_price: Option<Money>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339; `None` until the first check.
    #[serde(default)]
    pub last_checked_at: Option<String>,
    /// RFC 3339; `None` once the range is over (the alert is no longer checked).
    #[serde(default)]
    pub next_check_at: Option<String>,
    /// What the checks found, newest first.
    #[serde(default)]
    pub matches: Vec<AlertMatch>,
}

impl FareAlert {
    /// A new alert from validated arguments.
    pub fn new(id: String, args: &CreateFareAlertArgs, created_at: String) -> Self {
        Self {
            id,
            origin: args.origin.clone(),
            destination: args.destination.clone(),
            date_from: args.date_from,
            date_to: args.date_to,
            cabin: args.cabin,
            max_miles: args.max_miles,
            max_price: args.max_price.clone().map(|mut p| {
                p.currency = p.currency.to_ascii_uppercase();
                p
            }),
            created_at,
            last_checked_at: None,
            next_check_at: None,
            matches: Vec::new(),
        }
    }

    /// The alert's request as its tool took it, e.g. for its summary.
    pub fn args(&self) -> CreateFareAlertArgs {
        CreateFareAlertArgs {
            origin: self.origin.clone(),
            destination: self.destination.clone(),
            date_from: self.date_from,
            date_to: self.date_to,
            cabin: self.cabin,
            max_miles: self.max_miles,
            max_price: self.max_price.clone(),
        }
    }

    /// `flight` as a match when it departs within the range and meets the limit for its
    /// kind: an award seat (miles) `max_miles`, a cash fare `max_price` in the same
    /// currency (fares are never converted). `None` otherwise.
    pub fn match_for(&self, flight: &FlightResult, found_at: &str) -> Option<AlertMatch> {
        let departs = flight.outbound.departure.time.get(..10)?;
        let date = Date::parse(departs, &iso_date_format()).ok()?;
        if date < self.date_from || date > self.date_to {
            return None;
        }
        let within = match flight.provider {
            Provider::Seatsaero => match (self.max_miles, flight.miles) {
                (Some(max), Some(miles)) => miles > 0 && miles <= max,
                _ => false,
            },
            Provider::Amadeus | Provider::Duffel => match (&self.max_price, cash_price(flight)) {
                (Some(max), Some(price)) => {
                    price.currency == max.currency && price.amount <= max.amount
                }
                _ => false,
            },
        };
        within.then(|| AlertMatch::of(flight, date, found_at))
    }
}

fn iso_date_format() -> &'static [time::format_description::BorrowedFormatItem<'static>] {
    time::macros::format_description!("[year]-[month]-[day]")
}

/// A cash offer's total as a number: its price text as the flight functions write it in
/// English ("€1,234.56", "CHF 1,234.56") in the currency of its taxes. `None` when either
/// is missing or unreadable.
pub fn cash_price(flight: &FlightResult) -> Option<Money> {
    let currency = flight
        .taxes
        .currency
        .as_deref()?
        .trim()
        .to_ascii_uppercase();
    let digits: String = flight
        .price
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let amount: f64 = digits.parse().ok()?;
    (amount.is_finite() && amount > 0.0 && currency.len() == 3)
        .then_some(Money { amount, currency })
}

/// A flight an alert found, once per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlertMatch {
    /// Derived from the provider, the flight, its date and its price or miles: the same
    /// offer found again has the same key, a cheaper one a new key.
    pub key: String,
    /// The flight, as kept.
    pub flight: AlertFlight,
    /// RFC 3339.
    pub found_at: String,
}

/// What is kept of a matching flight: enough to show and recognise it, every text clipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlertFlight {
    /// Which upstream found it.
    pub provider: Provider,
    /// The airline, as the flight function wrote it.
    pub airline: String,
    /// The outbound's flight numbers.
    pub flight_numbers: String,
    /// The departure date.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub date: Date,
    /// Where and when it leaves.
    pub departure: FlightEndpoint,
    /// Where and when it arrives.
    pub arrival: FlightEndpoint,
    /// Connections of the outbound leg.
    pub stops: u32,
    /// Display name of the cabin, e.g. "Business".
    pub cabin: String,
    /// As the flight function wrote it, e.g. "70,000 miles + $41.74".
    pub price: String,
    /// An award seat's miles per person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miles: Option<u64>,
    /// A cash fare's total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cash: Option<Money>,
    /// Taxes and fees, as the flight's.
    #[serde(default)]
    pub taxes: Taxes,
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_FIELD_CHARS).collect()
}

impl AlertMatch {
    /// `flight`, departing on `date` and found at `found_at` (RFC 3339), as a match: every text
    /// clipped, its key derived from what identifies the offer and what it costs.
    pub fn of(flight: &FlightResult, date: Date, found_at: &str) -> Self {
        let endpoint = |e: &FlightEndpoint| FlightEndpoint {
            airport: clip(&e.airport),
            time: clip(&e.time),
        };
        let cash = match flight.provider {
            Provider::Amadeus | Provider::Duffel => cash_price(flight),
            Provider::Seatsaero => None,
        };
        let kept = AlertFlight {
            provider: flight.provider,
            airline: clip(&flight.airline),
            flight_numbers: clip(&flight.outbound.flight_numbers),
            date,
            departure: endpoint(&flight.outbound.departure),
            arrival: endpoint(&flight.outbound.arrival),
            stops: flight.total_stops,
            cabin: clip(&flight.cabin),
            price: clip(&flight.price),
            miles: flight.miles,
            cash,
            taxes: Taxes {
                amount: flight.taxes.amount,
                currency: flight.taxes.currency.as_deref().map(clip),
            },
        };
        Self {
            key: kept.key(),
            flight: kept,
            found_at: found_at.to_owned(),
        }
    }
}

impl AlertFlight {
    /// SHA-256 over what identifies the offer (provider, carrier, flight numbers, route and
    /// times, date) and what it costs, hex, first 32 characters.
    fn key(&self) -> String {
        let price = match (self.miles, &self.cash) {
            (Some(miles), _) => format!("miles:{miles}"),
            (None, Some(cash)) => format!("cash:{:.2} {}", cash.amount, cash.currency),
            (None, None) => format!("price:{}", self.price),
        };
        let parts = [
            json!(self.provider).to_string(),
            self.airline.clone(),
            self.flight_numbers.clone(),
            self.date.to_string(),
            self.departure.airport.clone(),
            self.departure.time.clone(),
            self.arrival.airport.clone(),
            self.arrival.time.clone(),
            price,
        ];
        let digest = Sha256::digest(parts.join("\u{1f}").as_bytes());
        hex::encode(digest).chars().take(32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flight::FlightLeg;
    use time::macros::date;

    fn args(v: Value) -> CreateFareAlertArgs {
        serde_json::from_value(v).unwrap()
    }

    fn base() -> Value {
        json!({"origin": "fra", "destination": "JFK", "date_from": "2027-03-01",
               "date_to": "2027-03-15", "cabin": "business", "max_miles": 80000})
    }

    const TODAY: Date = date!(2027 - 02 - 01);

    #[test]
    fn validate_checks_dates_and_limits() {
        args(base()).validate(TODAY).unwrap();
        let mut past = base();
        past["date_from"] = json!("2027-01-31");
        assert!(args(past).validate(TODAY).is_err());
        let mut reversed = base();
        reversed["date_to"] = json!("2027-02-28");
        assert!(args(reversed).validate(TODAY).is_err());
        let mut long = base();
        long["date_to"] = json!("2027-04-01");
        let err = args(long).validate(TODAY).unwrap_err().to_string();
        assert!(err.contains("at most 31 days"), "{err}");
        let mut month = base();
        month["date_to"] = json!("2027-03-31");
        args(month).validate(TODAY).unwrap();
        let mut none = base();
        none.as_object_mut().unwrap().remove("max_miles");
        assert!(args(none).validate(TODAY).is_err());
        let mut same = base();
        same["destination"] = json!("FRA");
        assert!(args(same).validate(TODAY).is_err());
    }

    #[test]
    fn canonical_upper_cases_codes_and_currency() {
        let mut v = base();
        v["max_price"] = json!({"amount": 800, "currency": "eur"});
        let canonical = args(v).canonical();
        assert_eq!(canonical["origin"], json!("FRA"));
        assert_eq!(canonical["cabin"], json!("BUSINESS"));
        assert_eq!(canonical["max_price"]["currency"], json!("EUR"));
    }

    #[test]
    fn summary_in_english_and_german() {
        let a = args(base());
        assert_eq!(
            a.summary(Locale::En),
            "Fare alert FRA → JFK, 1–15 Mar 2027, business, at most 80,000 miles"
        );
        assert_eq!(
            a.summary(Locale::De),
            "Preisalarm FRA → JFK, 1.–15. März 2027, business, höchstens 80.000 Meilen"
        );
        let mut v = base();
        v["date_to"] = json!("2027-03-31");
        v["date_from"] = json!("2027-03-02");
        v["max_price"] = json!({"amount": 1234.5, "currency": "eur"});
        v["date_from"] = json!("2027-02-28");
        assert_eq!(
            args(v).summary(Locale::En),
            "Fare alert FRA → JFK, 28 Feb – 31 Mar 2027, business, at most 80,000 miles or at most EUR 1,234.50"
        );
        let mut v = base();
        v["max_price"] = json!({"amount": 1800, "currency": "usd"});
        assert!(
            args(v.clone())
                .summary(Locale::En)
                .ends_with("or at most USD 1,800"),
            "whole amounts without cents"
        );
        v["max_price"] = json!({"amount": 1234.5, "currency": "eur"});
        assert!(
            args(v)
                .summary(Locale::De)
                .ends_with("oder höchstens 1.234,50 EUR")
        );
    }

    fn flight(provider: Provider, when: &str, miles: Option<u64>, price: &str) -> FlightResult {
        let endpoint = |airport: &str| FlightEndpoint {
            airport: airport.into(),
            time: when.into(),
        };
        FlightResult {
            id: "x".into(),
            provider,
            price: price.into(),
            price_per_person: price.into(),
            airline: "LH".into(),
            cabin: "Business".into(),
            tags: Vec::new(),
            total_stops: 0,
            miles,
            taxes: Taxes {
                amount: Some(41.74),
                currency: Some("EUR".into()),
            },
            seats_left: None,
            booking_links: None,
            outbound: FlightLeg {
                departure: endpoint("FRA"),
                arrival: endpoint("JFK"),
                duration: "8h".into(),
                stops: "Nonstop".into(),
                flight_numbers: "LH400".into(),
            },
            inbound: None,
            program: None,
            seen_at: None,
            other_programs: Vec::new(),
            option: None,
        }
    }

    #[test]
    fn matches_need_the_range_and_the_limit_of_their_kind() {
        let mut v = base();
        v["max_price"] = json!({"amount": 900, "currency": "EUR"});
        let alert = FareAlert::new("a1".into(), &args(v), "t".into());
        let award = |miles| flight(Provider::Seatsaero, "2027-03-05T10:00", Some(miles), "x");
        assert!(alert.match_for(&award(80_000), "now").is_some());
        assert!(alert.match_for(&award(80_001), "now").is_none());
        let late = flight(Provider::Seatsaero, "2027-03-16T10:00", Some(1), "x");
        assert!(alert.match_for(&late, "now").is_none());
        let cash = |price: &str| flight(Provider::Amadeus, "2027-03-05T10:00", None, price);
        let m = alert.match_for(&cash("€899.99"), "now").unwrap();
        assert_eq!(m.flight.cash.as_ref().unwrap().amount, 899.99);
        assert!(alert.match_for(&cash("€1,899.99"), "now").is_none());
        // Same offer, same key; another price, another key.
        assert_eq!(
            alert.match_for(&award(70_000), "a").unwrap().key,
            alert.match_for(&award(70_000), "b").unwrap().key
        );
        assert_ne!(
            alert.match_for(&award(70_000), "a").unwrap().key,
            alert.match_for(&award(60_000), "a").unwrap().key
        );
    }
}
