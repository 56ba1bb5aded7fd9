//! Lenient shapes of the Seats.aero partner API replies (see tests/fixtures/README.md).
//!
//! Data keys are PascalCase, the top-level keys of `/trips/{id}` snake_case. Numbers may
//! arrive as strings, cabin fields as `null`, `"0"` or `""`; unknown fields are ignored and
//! missing ones defaulted. Entries stay raw JSON in the reply types so that one odd entry is
//! dropped on its own instead of failing the whole reply.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use shared::domain::flight::Cabin;

/// `GET /search`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SearchReply {
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: Vec<Value>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub count: Option<u64>,
    #[serde(default, rename = "hasMore", deserialize_with = "lenient_bool")]
    pub has_more: Option<bool>,
}

/// One availability: a route, a date and a mileage programme, with per-cabin fields
/// (`JAvailable`, `JMileageCost`, ...) that are read by [`Availability::cabin`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Availability {
    #[serde(rename = "ID", deserialize_with = "required_string")]
    pub id: String,
    #[serde(rename = "Route", default, deserialize_with = "null_as_default")]
    pub route: Route,
    #[serde(rename = "Source", default, deserialize_with = "lenient_string")]
    pub source: Option<String>,
    #[serde(rename = "TaxesCurrency", default, deserialize_with = "lenient_string")]
    pub taxes_currency: Option<String>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Route {
    #[serde(rename = "OriginAirport", deserialize_with = "lenient_string")]
    pub origin: Option<String>,
    #[serde(rename = "DestinationAirport", deserialize_with = "lenient_string")]
    pub destination: Option<String>,
}

/// The fields of one cabin of an [`Availability`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CabinOffer {
    pub available: bool,
    pub seats: Option<u64>,
    /// `None` for a missing, unparsable or zero cost: not a price one can book at.
    pub miles: Option<u64>,
    pub airlines: Option<String>,
    pub direct: Option<bool>,
    /// Minor units, when the reply carries them (newer replies: `JTotalTaxes`).
    pub taxes_minor: Option<u64>,
}

impl Availability {
    pub fn cabin(&self, cabin: Cabin) -> CabinOffer {
        let key = cabin.seatsaero_key();
        let field = |name: &str| self.rest.get(&format!("{key}{name}"));
        CabinOffer {
            available: field("Available").and_then(value_bool).unwrap_or(false),
            seats: field("RemainingSeats").and_then(value_u64),
            miles: field("MileageCost").and_then(value_u64).filter(|m| *m > 0),
            airlines: field("Airlines").and_then(value_string),
            direct: field("Direct").and_then(value_bool),
            taxes_minor: field("TotalTaxes").and_then(value_u64),
        }
    }
}

/// `GET /trips/{id}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TripsReply {
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: Vec<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub booking_links: Vec<Value>,
}

/// One itinerary of an availability, in one cabin.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Trip {
    #[serde(rename = "AvailabilitySegments", deserialize_with = "null_as_default")]
    pub segments: Vec<Segment>,
    #[serde(rename = "TotalDuration", deserialize_with = "lenient_u64")]
    pub total_duration: Option<u64>,
    #[serde(rename = "Stops", deserialize_with = "lenient_u64")]
    pub stops: Option<u64>,
    #[serde(rename = "Carriers", deserialize_with = "lenient_string")]
    pub carriers: Option<String>,
    #[serde(rename = "RemainingSeats", deserialize_with = "lenient_u64")]
    pub remaining_seats: Option<u64>,
    #[serde(rename = "MileageCost", deserialize_with = "lenient_u64")]
    pub mileage_cost: Option<u64>,
    /// Minor units of `TaxesCurrency` (cents).
    #[serde(rename = "TotalTaxes", deserialize_with = "lenient_u64")]
    pub total_taxes: Option<u64>,
    #[serde(rename = "TaxesCurrency", deserialize_with = "lenient_string")]
    pub taxes_currency: Option<String>,
    #[serde(rename = "FlightNumbers", deserialize_with = "lenient_string")]
    pub flight_numbers: Option<String>,
    #[serde(rename = "OriginAirport", deserialize_with = "lenient_string")]
    pub origin: Option<String>,
    #[serde(rename = "DestinationAirport", deserialize_with = "lenient_string")]
    pub destination: Option<String>,
    #[serde(rename = "DepartsAt", deserialize_with = "lenient_string")]
    pub departs_at: Option<String>,
    #[serde(rename = "ArrivesAt", deserialize_with = "lenient_string")]
    pub arrives_at: Option<String>,
    #[serde(rename = "Cabin", deserialize_with = "lenient_string")]
    pub cabin: Option<String>,
    #[serde(rename = "Source", deserialize_with = "lenient_string")]
    pub source: Option<String>,
}

impl Trip {
    pub fn stop_count(&self) -> u64 {
        self.stops
            .unwrap_or_else(|| self.segments.len().saturating_sub(1) as u64)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Segment {
    #[serde(rename = "FlightNumber", deserialize_with = "lenient_string")]
    pub flight_number: Option<String>,
    #[serde(rename = "OriginAirport", deserialize_with = "lenient_string")]
    pub origin: Option<String>,
    #[serde(rename = "DestinationAirport", deserialize_with = "lenient_string")]
    pub destination: Option<String>,
    #[serde(rename = "DepartsAt", deserialize_with = "lenient_string")]
    pub departs_at: Option<String>,
    #[serde(rename = "ArrivesAt", deserialize_with = "lenient_string")]
    pub arrives_at: Option<String>,
    #[serde(rename = "Order", deserialize_with = "lenient_u64")]
    pub order: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct BookingLink {
    #[serde(deserialize_with = "lenient_string")]
    pub label: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    pub link: Option<String>,
}

/// A count or cost sent as a number or a numeric string; anything else is `None`.
pub(crate) fn value_u64(value: &Value) -> Option<u64> {
    let from_f64 = |f: f64| (f.is_finite() && f >= 0.0 && f <= u64::MAX as f64).then_some(f as u64);
    match value {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(from_f64)),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<u64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().and_then(from_f64))
        }
        _ => None,
    }
}

pub(crate) fn value_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_u64().map(|n| n != 0),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A non-empty, trimmed text; numbers are accepted as text.
pub(crate) fn value_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim()).filter(|s| !s.is_empty()).map(str::to_owned),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(value_u64(&Value::deserialize(d)?))
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(value_bool(&Value::deserialize(d)?))
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(value_string(&Value::deserialize(d)?))
}

fn required_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    value_string(&Value::deserialize(d)?)
        .ok_or_else(|| serde::de::Error::custom("expected a non-empty string"))
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn availability(v: Value) -> Availability {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("availability: {e}"))
    }

    #[test]
    fn cabin_fields_accept_strings_numbers_and_blanks() {
        let a = availability(json!({
            "ID": "a1", "JAvailable": "true", "JMileageCost": 45000, "JRemainingSeats": "7",
            "JAirlines": " AS ", "JDirect": true, "JTotalTaxes": "560",
            "FAvailable": null, "FMileageCost": null, "FRemainingSeats": null,
            "WAvailable": false, "WMileageCost": "0", "WAirlines": "",
            "YMileageCost": "", "Unknown": {"nested": [1, 2]}
        }));
        assert_eq!(
            a.cabin(Cabin::Business),
            CabinOffer {
                available: true,
                seats: Some(7),
                miles: Some(45000),
                airlines: Some("AS".into()),
                direct: Some(true),
                taxes_minor: Some(560),
            }
        );
        assert_eq!(a.cabin(Cabin::First), CabinOffer::default());
        assert_eq!(a.cabin(Cabin::PremiumEconomy).miles, None);
        assert_eq!(a.cabin(Cabin::PremiumEconomy).airlines, None);
        assert_eq!(a.cabin(Cabin::Economy).miles, None);
        assert_eq!(a.route.origin, None);
    }

    #[test]
    fn odd_values() {
        assert_eq!(value_u64(&json!("12500.0")), Some(12500));
        assert_eq!(value_u64(&json!("abc")), None);
        assert_eq!(value_u64(&json!(-5)), None);
        assert_eq!(value_u64(&json!("NaN")), None);
        assert_eq!(value_u64(&json!("inf")), None);
        assert_eq!(value_bool(&json!("yes")), None);
        assert!(serde_json::from_value::<Availability>(json!({"ID": ""})).is_err());
        assert!(serde_json::from_value::<Availability>(json!({"Route": {}})).is_err());
    }

    #[test]
    fn trips_fixture_shape() {
        let reply: TripsReply = serde_json::from_str(
            r#"{"data":[{"AvailabilitySegments":null,"MileageCost":"70000","TotalTaxes":1290,
                "Stops":null,"Extra":1}],"booking_links":null}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(reply.booking_links.is_empty());
        let trip: Trip = serde_json::from_value(reply.data[0].clone()).unwrap_or_default();
        assert_eq!(trip.mileage_cost, Some(70000));
        assert_eq!(trip.total_taxes, Some(1290));
        assert_eq!(trip.stop_count(), 0);
    }
}
