//! Lenient shapes of the Seats.aero partner API replies (see tests/fixtures/README.md).
//!
//! Data keys are PascalCase, the top-level keys of `/trips/{id}` snake_case. Numbers may
//! arrive as strings, cabin fields as `null`, `"0"` or `""`; unknown fields are ignored and
//! missing ones defaulted. One odd entry is dropped on its own instead of failing the whole
//! reply: a reply is read in one pass, every entry typed, and only when that fails (some
//! entry is odd, or the reply is not JSON) read again with its entries as raw JSON text
//! (`&RawValue`, checked but not built into values), each then read on its own.
//!
//! Everything borrows from the reply body: texts are `Cow`s that point into it unless they
//! carry escapes. Entries are read as they were when the replies were parsed into
//! `serde_json::Value`s first ([`entry`]).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use domain::flight::Cabin;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

/// Reads `body` as JSON. serde_json checks the UTF-8 of each string it borrows from a byte
/// slice; a body checked once as a whole reads as text without those checks, a tenth of a
/// warm search's CPU. A body that is not UTF-8 reads as bytes, failing as it always did.
fn from_body<'a, T: Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

/// The entries of a reply, each read or why it could not be.
pub(crate) type Entries<T> = Vec<serde_json::Result<T>>;

/// `GET /search`.
#[derive(Debug, Default)]
pub(crate) struct SearchReply<'a> {
    pub data: Entries<Availability<'a>>,
    pub count: Option<u64>,
    pub has_more: Option<bool>,
}

/// The shape of a `GET /search` reply, `D` its entries: typed or raw.
#[derive(Deserialize)]
#[serde(
    expecting = "struct SearchReply",
    bound(deserialize = "D: Deserialize<'de> + Default")
)]
struct SearchShape<D> {
    #[serde(default, deserialize_with = "null_as_default")]
    data: D,
    #[serde(default, deserialize_with = "lenient_u64")]
    count: Option<u64>,
    #[serde(default, rename = "hasMore", deserialize_with = "lenient_bool")]
    has_more: Option<bool>,
}

impl<'a> SearchReply<'a> {
    /// The reply, in one pass when every entry is an availability, else entry by entry.
    pub fn parse(body: &'a [u8]) -> serde_json::Result<Self> {
        if let Ok(reply) = from_body::<SearchShape<Vec<Object<Availability<'a>>>>>(body) {
            return Ok(Self {
                data: reply.data.into_iter().map(|entry| Ok(entry.0)).collect(),
                count: reply.count,
                has_more: reply.has_more,
            });
        }
        let reply = from_body::<SearchShape<Vec<&'a RawValue>>>(body)?;
        Ok(Self {
            data: reply.data.into_iter().map(Availability::parse).collect(),
            count: reply.count,
            has_more: reply.has_more,
        })
    }
}

/// One availability: a route, a date and a mileage programme, with the fields of each of
/// the four cabins (`JAvailable`, `JMileageCost`, ...), read by [`Availability::cabin`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Availability<'a> {
    #[serde(rename = "ID", borrow, deserialize_with = "required_string")]
    pub id: Cow<'a, str>,
    #[serde(
        rename = "Route",
        borrow,
        default,
        deserialize_with = "null_as_default"
    )]
    pub route: Route<'a>,
    #[serde(
        rename = "Source",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    pub source: Option<Cow<'a, str>>,
    #[serde(
        rename = "TaxesCurrency",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    pub taxes_currency: Option<Cow<'a, str>>,
    /// When Seats.aero last saw this availability (RFC 3339).
    #[serde(
        rename = "UpdatedAt",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    pub updated_at: Option<Cow<'a, str>>,

    #[serde(rename = "YAvailable", default, deserialize_with = "lenient_bool")]
    y_available: Option<bool>,
    #[serde(rename = "YRemainingSeats", default, deserialize_with = "lenient_u64")]
    y_remaining_seats: Option<u64>,
    #[serde(rename = "YMileageCost", default, deserialize_with = "lenient_u64")]
    y_mileage_cost: Option<u64>,
    #[serde(
        rename = "YAirlines",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    y_airlines: Option<Cow<'a, str>>,
    #[serde(rename = "YDirect", default, deserialize_with = "lenient_bool")]
    y_direct: Option<bool>,
    #[serde(rename = "YTotalTaxes", default, deserialize_with = "lenient_u64")]
    y_total_taxes: Option<u64>,

    #[serde(rename = "WAvailable", default, deserialize_with = "lenient_bool")]
    w_available: Option<bool>,
    #[serde(rename = "WRemainingSeats", default, deserialize_with = "lenient_u64")]
    w_remaining_seats: Option<u64>,
    #[serde(rename = "WMileageCost", default, deserialize_with = "lenient_u64")]
    w_mileage_cost: Option<u64>,
    #[serde(
        rename = "WAirlines",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    w_airlines: Option<Cow<'a, str>>,
    #[serde(rename = "WDirect", default, deserialize_with = "lenient_bool")]
    w_direct: Option<bool>,
    #[serde(rename = "WTotalTaxes", default, deserialize_with = "lenient_u64")]
    w_total_taxes: Option<u64>,

    #[serde(rename = "JAvailable", default, deserialize_with = "lenient_bool")]
    j_available: Option<bool>,
    #[serde(rename = "JRemainingSeats", default, deserialize_with = "lenient_u64")]
    j_remaining_seats: Option<u64>,
    #[serde(rename = "JMileageCost", default, deserialize_with = "lenient_u64")]
    j_mileage_cost: Option<u64>,
    #[serde(
        rename = "JAirlines",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    j_airlines: Option<Cow<'a, str>>,
    #[serde(rename = "JDirect", default, deserialize_with = "lenient_bool")]
    j_direct: Option<bool>,
    #[serde(rename = "JTotalTaxes", default, deserialize_with = "lenient_u64")]
    j_total_taxes: Option<u64>,

    #[serde(rename = "FAvailable", default, deserialize_with = "lenient_bool")]
    f_available: Option<bool>,
    #[serde(rename = "FRemainingSeats", default, deserialize_with = "lenient_u64")]
    f_remaining_seats: Option<u64>,
    #[serde(rename = "FMileageCost", default, deserialize_with = "lenient_u64")]
    f_mileage_cost: Option<u64>,
    #[serde(
        rename = "FAirlines",
        borrow,
        default,
        deserialize_with = "lenient_string"
    )]
    f_airlines: Option<Cow<'a, str>>,
    #[serde(rename = "FDirect", default, deserialize_with = "lenient_bool")]
    f_direct: Option<bool>,
    #[serde(rename = "FTotalTaxes", default, deserialize_with = "lenient_u64")]
    f_total_taxes: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Route<'a> {
    #[serde(rename = "OriginAirport", borrow, deserialize_with = "lenient_string")]
    pub origin: Option<Cow<'a, str>>,
    #[serde(
        rename = "DestinationAirport",
        borrow,
        deserialize_with = "lenient_string"
    )]
    pub destination: Option<Cow<'a, str>>,
}

/// The fields of one cabin of an [`Availability`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CabinOffer<'a> {
    pub available: bool,
    pub seats: Option<u64>,
    /// `None` for a missing, unparsable or zero cost: not a price one can book at.
    pub miles: Option<u64>,
    pub airlines: Option<Cow<'a, str>>,
    pub direct: Option<bool>,
    /// Minor units, when the reply carries them (newer replies: `JTotalTaxes`).
    pub taxes_minor: Option<u64>,
}

impl<'a> Availability<'a> {
    /// One raw entry of a `GET /search` reply. Only an object is an availability
    /// ([`Object`]).
    pub fn parse(raw: &'a RawValue) -> serde_json::Result<Self> {
        entry::<Object<Self>>(raw).map(|entry| entry.0)
    }

    pub fn cabin(&self, cabin: Cabin) -> CabinOffer<'a> {
        let (available, seats, miles, airlines, direct, taxes) = match cabin {
            Cabin::Economy => (
                self.y_available,
                self.y_remaining_seats,
                self.y_mileage_cost,
                &self.y_airlines,
                self.y_direct,
                self.y_total_taxes,
            ),
            Cabin::PremiumEconomy => (
                self.w_available,
                self.w_remaining_seats,
                self.w_mileage_cost,
                &self.w_airlines,
                self.w_direct,
                self.w_total_taxes,
            ),
            Cabin::Business => (
                self.j_available,
                self.j_remaining_seats,
                self.j_mileage_cost,
                &self.j_airlines,
                self.j_direct,
                self.j_total_taxes,
            ),
            Cabin::First => (
                self.f_available,
                self.f_remaining_seats,
                self.f_mileage_cost,
                &self.f_airlines,
                self.f_direct,
                self.f_total_taxes,
            ),
        };
        CabinOffer {
            available: available.unwrap_or(false),
            seats,
            miles: miles.filter(|m| *m > 0),
            airlines: airlines.clone(),
            direct,
            taxes_minor: taxes,
        }
    }
}

/// `GET /trips/{id}`. Its `booking_links` are not read: they list the same partner pages
/// for every trip, for one adult; rows link to their own programme (`award_booking`).
#[derive(Debug, Default)]
pub(crate) struct TripsReply<'a> {
    pub data: Entries<Trip<'a>>,
}

/// The shape of a `GET /trips/{id}` reply, `D` its trips: typed or raw.
#[derive(Deserialize)]
#[serde(
    expecting = "struct TripsReply",
    bound(deserialize = "D: Deserialize<'de> + Default")
)]
struct TripsShape<D> {
    #[serde(default, deserialize_with = "null_as_default")]
    data: D,
}

impl<'a> TripsReply<'a> {
    /// The reply, in one pass when every trip reads, else entry by entry.
    pub fn parse(body: &'a [u8]) -> serde_json::Result<Self> {
        if let Ok(reply) = from_body::<TripsShape<Vec<Trip<'a>>>>(body) {
            return Ok(Self {
                data: reply.data.into_iter().map(Ok).collect(),
            });
        }
        let reply = from_body::<TripsShape<Vec<&'a RawValue>>>(body)?;
        Ok(Self {
            data: reply.data.into_iter().map(entry).collect(),
        })
    }
}

/// One itinerary of an availability, in one cabin.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Trip<'a> {
    #[serde(
        rename = "AvailabilitySegments",
        borrow,
        deserialize_with = "null_as_default"
    )]
    pub segments: Vec<Segment<'a>>,
    #[serde(rename = "TotalDuration", deserialize_with = "lenient_u64")]
    pub total_duration: Option<u64>,
    #[serde(rename = "Stops", deserialize_with = "lenient_u64")]
    pub stops: Option<u64>,
    #[serde(rename = "Carriers", borrow, deserialize_with = "lenient_string")]
    pub carriers: Option<Cow<'a, str>>,
    #[serde(rename = "RemainingSeats", deserialize_with = "lenient_u64")]
    pub remaining_seats: Option<u64>,
    #[serde(rename = "MileageCost", deserialize_with = "lenient_u64")]
    pub mileage_cost: Option<u64>,
    /// Minor units of `TaxesCurrency` (cents).
    #[serde(rename = "TotalTaxes", deserialize_with = "lenient_u64")]
    pub total_taxes: Option<u64>,
    #[serde(rename = "TaxesCurrency", borrow, deserialize_with = "lenient_string")]
    pub taxes_currency: Option<Cow<'a, str>>,
    #[serde(rename = "FlightNumbers", borrow, deserialize_with = "lenient_string")]
    pub flight_numbers: Option<Cow<'a, str>>,
    #[serde(rename = "OriginAirport", borrow, deserialize_with = "lenient_string")]
    pub origin: Option<Cow<'a, str>>,
    #[serde(
        rename = "DestinationAirport",
        borrow,
        deserialize_with = "lenient_string"
    )]
    pub destination: Option<Cow<'a, str>>,
    #[serde(rename = "DepartsAt", borrow, deserialize_with = "lenient_string")]
    pub departs_at: Option<Cow<'a, str>>,
    #[serde(rename = "ArrivesAt", borrow, deserialize_with = "lenient_string")]
    pub arrives_at: Option<Cow<'a, str>>,
    #[serde(rename = "Cabin", borrow, deserialize_with = "lenient_string")]
    pub cabin: Option<Cow<'a, str>>,
    #[serde(rename = "Source", borrow, deserialize_with = "lenient_string")]
    pub source: Option<Cow<'a, str>>,
    #[serde(rename = "UpdatedAt", borrow, deserialize_with = "lenient_string")]
    pub updated_at: Option<Cow<'a, str>>,
}

impl Trip<'_> {
    pub fn stop_count(&self) -> u64 {
        self.stops
            .unwrap_or_else(|| self.segments.len().saturating_sub(1) as u64)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Segment<'a> {
    #[serde(rename = "FlightNumber", borrow, deserialize_with = "lenient_string")]
    pub flight_number: Option<Cow<'a, str>>,
    #[serde(rename = "OriginAirport", borrow, deserialize_with = "lenient_string")]
    pub origin: Option<Cow<'a, str>>,
    #[serde(
        rename = "DestinationAirport",
        borrow,
        deserialize_with = "lenient_string"
    )]
    pub destination: Option<Cow<'a, str>>,
    #[serde(rename = "DepartsAt", borrow, deserialize_with = "lenient_string")]
    pub departs_at: Option<Cow<'a, str>>,
    #[serde(rename = "ArrivesAt", borrow, deserialize_with = "lenient_string")]
    pub arrives_at: Option<Cow<'a, str>>,
    #[serde(rename = "Order", deserialize_with = "lenient_u64")]
    pub order: Option<u64>,
}

/// An entry that must be a JSON object: serde would also read an array into a struct, field
/// by field, which the `#[serde(flatten)]` availabilities of old did not accept.
pub(crate) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }

        d.deserialize_map(ObjectVisitor(PhantomData)).map(Object)
    }
}

/// One raw entry of a reply (an availability, a trip, a booking link), borrowing from it.
///
/// serde refuses an object that names a field twice, where the `serde_json::Value` these
/// entries were once parsed into keeps the last value; so an entry that fails is read once
/// more through a `Value` (owned texts), and only fails if that fails too.
pub(crate) fn entry<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> serde_json::Result<T> {
    serde_json::from_str::<T>(raw.get()).or_else(|error| {
        let value: Value = serde_json::from_str(raw.get()).map_err(|_| error)?;
        T::deserialize(value)
    })
}

/// Any JSON value as the lenient readers below see it: scalars as `serde_json::Value`
/// holds them, texts borrowed from the body when they carry no escapes, arrays and objects
/// skipped (none of the readers accepts one).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Text(Cow<'a, str>),
    /// An array or an object.
    Nested,
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

/// Mirrors `serde_json::Value`'s own visitor, so that a field reads as it did when the
/// replies were parsed into `Value`s first.
impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Scalar::Number(n.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Self::Value, E> {
        Ok(Number::from_f64(f).map_or(Scalar::Null, Scalar::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Owned(s)))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Scalar::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Nested)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Nested)
    }
}

impl<'a> Scalar<'a> {
    /// A count or cost sent as a number or a numeric string; anything else is `None`.
    pub fn as_u64(&self) -> Option<u64> {
        let from_f64 =
            |f: f64| (f.is_finite() && f >= 0.0 && f <= u64::MAX as f64).then_some(f as u64);
        match self {
            Self::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(from_f64)),
            Self::Text(s) => {
                let s = s.trim();
                s.parse::<u64>()
                    .ok()
                    .or_else(|| s.parse::<f64>().ok().and_then(from_f64))
            }
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Bool(b) => Some(*b),
            Self::Number(n) => n.as_u64().map(|n| n != 0),
            Self::Text(s) => {
                let s = s.trim();
                if s.eq_ignore_ascii_case("true") || s == "1" {
                    Some(true)
                } else if s.eq_ignore_ascii_case("false") || s == "0" {
                    Some(false)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// A non-empty, trimmed text; numbers are accepted as text.
    pub fn into_text(self) -> Option<Cow<'a, str>> {
        match self {
            Self::Text(Cow::Borrowed(s)) => {
                Some(s.trim()).filter(|s| !s.is_empty()).map(Cow::Borrowed)
            }
            Self::Text(Cow::Owned(s)) => {
                let trimmed = s.trim();
                if trimmed.is_empty() {
                    None
                } else if trimmed.len() == s.len() {
                    Some(Cow::Owned(s))
                } else {
                    Some(Cow::Owned(trimmed.to_owned()))
                }
            }
            Self::Number(n) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }
}

fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Scalar::deserialize(d)?.as_u64())
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Scalar::deserialize(d)?.as_bool())
}

fn lenient_string<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    Ok(Scalar::deserialize(d)?.into_text())
}

fn required_string<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Cow<'a, str>, D::Error> {
    Scalar::deserialize(d)?
        .into_text()
        .ok_or_else(|| de::Error::custom("expected a non-empty string"))
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
    use serde_json::{Value, json};

    /// Text or bytes, a body reads the same: the same value, or an error where bytes fail.
    #[test]
    fn a_body_reads_the_same_as_text_or_as_bytes() {
        let bodies: [&[u8]; 5] = [
            br#"{"data":[{"ID":"a","Route":{"OriginAirport":"SFO"}}],"count":"1"}"#,
            br#"{"data":[],"note":"caf\u00e9 \"x\""}"#,
            b"{\"data\":[],\"note\":\"\xff\"}",
            b"{\"data\":[\"\xc3\x28\"]}",
            b"not json",
        ];
        for body in bodies {
            let text = from_body::<Value>(body).map_err(|e| e.to_string());
            let bytes = serde_json::from_slice::<Value>(body).map_err(|e| e.to_string());
            assert_eq!(text, bytes, "{}", String::from_utf8_lossy(body));
        }
    }

    fn availability(v: &Value) -> Availability<'static> {
        let text: &'static str = Box::leak(v.to_string().into_boxed_str());
        let raw: &'static RawValue =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("raw: {e}"));
        Availability::parse(raw).unwrap_or_else(|e| panic!("availability: {e}"))
    }

    fn search(v: &Value) -> SearchReply<'static> {
        let text: &'static str = Box::leak(v.to_string().into_boxed_str());
        SearchReply::parse(text.as_bytes()).unwrap_or_else(|e| panic!("search: {e}"))
    }

    fn scalar(v: &Value) -> Scalar<'static> {
        let text: &'static str = Box::leak(v.to_string().into_boxed_str());
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    #[test]
    fn cabin_fields_accept_strings_numbers_and_blanks() {
        let a = availability(&json!({
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
        assert_eq!(scalar(&json!("12500.0")).as_u64(), Some(12500));
        assert_eq!(scalar(&json!("abc")).as_u64(), None);
        assert_eq!(scalar(&json!(-5)).as_u64(), None);
        assert_eq!(scalar(&json!("NaN")).as_u64(), None);
        assert_eq!(scalar(&json!("inf")).as_u64(), None);
        assert_eq!(scalar(&json!("yes")).as_bool(), None);
        let parse = |v: Value| {
            let text = v.to_string();
            let raw: Box<RawValue> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            Availability::parse(&raw).map(|_| ())
        };
        assert!(parse(json!({"ID": ""})).is_err());
        assert!(parse(json!({"Route": {}})).is_err());
        // Not an object: not read field by field as serde reads arrays into structs.
        assert!(parse(json!(["a1", null, null, null, true])).is_err());
    }

    #[test]
    fn texts_are_borrowed_unless_escaped_and_numbers_read_as_value_did() {
        let body = r#"{"ID": "a\u00e91 ", "Source": " united ", "JAirlines": 7,
                       "Route": {"OriginAirport": "SFO"}}"#;
        let raw: &RawValue = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}"));
        let a = Availability::parse(raw).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(a.id, Cow::Owned(ref id) if id == "aé1"));
        assert!(matches!(a.source, Some(Cow::Borrowed("united"))));
        assert!(matches!(a.route.origin, Some(Cow::Borrowed("SFO"))));
        assert_eq!(a.cabin(Cabin::Business).airlines.as_deref(), Some("7"));
        for (value, as_u64, as_bool, text) in [
            (json!(12500.7), Some(12500), None, Some("12500.7")),
            (json!(1e308), None, None, Some("1e+308")),
            (
                json!(u64::MAX),
                Some(u64::MAX),
                Some(true),
                Some("18446744073709551615"),
            ),
            (json!(-1), None, None, Some("-1")),
            (json!(0), Some(0), Some(false), Some("0")),
            (json!(" 9000 "), Some(9000), None, Some("9000")),
            (json!(" TRUE "), None, Some(true), Some("TRUE")),
            (json!("  "), None, None, None),
            (json!([1]), None, None, None),
            (json!({"a": 1}), None, None, None),
            (json!(null), None, None, None),
        ] {
            let s = scalar(&value);
            assert_eq!(s.as_u64(), as_u64, "{value}");
            assert_eq!(s.as_bool(), as_bool, "{value}");
            assert_eq!(s.into_text().as_deref(), text, "{value}");
        }
    }

    #[test]
    fn trips_fixture_shape() {
        let reply = TripsReply::parse(
            br#"{"data":[{"AvailabilitySegments":null,"MileageCost":"70000","TotalTaxes":1290,
                "Stops":null,"Extra":1}],"booking_links":null}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let Some(Ok(trip)) = reply.data.first() else {
            panic!("{:?}", reply.data)
        };
        assert_eq!(trip.mileage_cost, Some(70000));
        assert_eq!(trip.total_taxes, Some(1290));
        assert_eq!(trip.stop_count(), 0);
    }

    /// A reply with an odd entry is read entry by entry; its other entries read as they do
    /// in one pass.
    #[test]
    fn one_pass_and_entry_by_entry_read_alike() {
        let fixture =
            test_support::fixture_json("seatsaero/cached_search_response.docs-example.json");
        // The real replies are read in one pass.
        let text = fixture.to_string();
        let typed = serde_json::from_str::<SearchShape<Vec<Object<Availability>>>>(&text);
        assert!(typed.is_ok_and(|reply| reply.data.len() > 40));
        let one_pass = search(&fixture);
        assert!(one_pass.data.iter().all(Result::is_ok));
        for odd in [json!(["array", null]), json!({"ID": ""}), json!(7)] {
            let mut with_odd = fixture.clone();
            if let Some(data) = with_odd["data"].as_array_mut() {
                data.insert(3, odd.clone());
            }
            let mut by_entry = search(&with_odd);
            assert!(by_entry.data.remove(3).is_err(), "{odd}");
            assert_eq!(
                format!("{:?}", by_entry.data),
                format!("{:?}", one_pass.data)
            );
            assert_eq!(
                (by_entry.count, by_entry.has_more),
                (one_pass.count, one_pass.has_more)
            );
        }

        let text = test_support::fixture("seatsaero/get_trips_response.docs-example.json");
        let typed = serde_json::from_str::<TripsShape<Vec<Trip>>>(&text);
        assert!(typed.is_ok_and(|reply| reply.data.len() == 3));
        let one_pass = TripsReply::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(one_pass.data.iter().all(Result::is_ok));
        let with_odd = text.replacen(
            r#""data": ["#,
            r#""data": [{"AvailabilitySegments": "none"}, "#,
            1,
        );
        assert_ne!(with_odd, text);
        let mut by_entry = TripsReply::parse(with_odd.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(by_entry.data.remove(0).is_err());
        assert_eq!(format!("{by_entry:?}"), format!("{one_pass:?}"));
    }
}
