//! The parts of Duffel's offer-request reply this function reads. Every field is optional
//! and unknown fields are ignored; offers are parsed one by one, so one malformed offer is
//! dropped (and logged) instead of failing the search.

use serde::Deserialize;
use serde_json::Value;

use crate::lenient;

/// The reply's envelope: `{"data": {"offers": [...]}}`; the offers stay raw until each is
/// read on its own.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct OfferRequestReply {
    data: Value,
}

impl OfferRequestReply {
    pub fn into_offers(self) -> Vec<Offer> {
        let items = match self.data.get("offers") {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::Null) | None => Vec::new(),
            Some(_) => {
                tracing::warn!("Duffel reply's offers is not an array");
                Vec::new()
            }
        };
        lenient::parse_each(items, "Duffel offer")
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Offer {
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(deserialize_with = "lenient::string")]
    pub total_amount: String,
    pub total_currency: String,
    #[serde(deserialize_with = "lenient::string")]
    pub base_amount: String,
    #[serde(deserialize_with = "lenient::string")]
    pub tax_amount: String,
    pub tax_currency: String,
    /// RFC 3339; an offer past it can no longer be booked.
    pub expires_at: String,
    pub owner: Carrier,
    pub slices: Vec<Slice>,
    pub passengers: Vec<Value>,
    pub conditions: Conditions,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Carrier {
    pub iata_code: String,
    pub name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Slice {
    /// ISO 8601, e.g. `PT02H26M`.
    pub duration: String,
    pub fare_brand_name: String,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Segment {
    pub origin: Place,
    pub destination: Place,
    /// Local time at the airport, without an offset.
    pub departing_at: String,
    pub arriving_at: String,
    pub marketing_carrier: Carrier,
    #[serde(deserialize_with = "lenient::string")]
    pub marketing_carrier_flight_number: String,
    pub passengers: Vec<SegmentPassenger>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Place {
    pub iata_code: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SegmentPassenger {
    pub cabin_class: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Conditions {
    pub change_before_departure: Option<Condition>,
    pub refund_before_departure: Option<Condition>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Condition {
    pub allowed: bool,
    #[serde(deserialize_with = "lenient::string")]
    pub penalty_amount: String,
    pub penalty_currency: String,
}
