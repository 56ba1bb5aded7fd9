//! The parts of Amadeus' flight-offers reply (seed 000 §6.5) this function reads. Every
//! field is optional and unknown fields are ignored; offers are parsed one by one, so one
//! malformed offer is dropped (and logged) instead of failing the search.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::lenient;

/// The reply's envelope; `data` stays raw until each offer is read on its own.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct OffersReply {
    data: Value,
    dictionaries: Value,
}

/// What a reply holds once read: the offers that parsed, and carrier names by code.
#[derive(Debug, Default)]
pub struct Offers {
    pub offers: Vec<Offer>,
    pub carriers: BTreeMap<String, String>,
}

impl OffersReply {
    pub fn into_offers(self) -> Offers {
        let carriers = match self.dictionaries.get("carriers") {
            Some(Value::Object(map)) => map
                .iter()
                .filter_map(|(code, name)| Some((code.clone(), name.as_str()?.trim().to_owned())))
                .filter(|(_, name)| !name.is_empty())
                .collect(),
            _ => BTreeMap::new(),
        };
        let items = match self.data {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            other => {
                tracing::warn!(kind = kind(&other), "Amadeus reply has no data array");
                Vec::new()
            }
        };
        let offers = lenient::parse_each(items, "Amadeus offer");
        Offers { offers, carriers }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Offer {
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
    pub last_ticketing_date: String,
    #[serde(deserialize_with = "lenient::opt_u32")]
    pub number_of_bookable_seats: Option<u32>,
    pub itineraries: Vec<Itinerary>,
    pub price: Price,
    pub validating_airline_codes: Vec<String>,
    pub traveler_pricings: Vec<TravelerPricing>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Itinerary {
    pub duration: String,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Segment {
    pub departure: Endpoint,
    pub arrival: Endpoint,
    pub carrier_code: String,
    #[serde(deserialize_with = "lenient::string")]
    pub number: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Endpoint {
    pub iata_code: String,
    pub at: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Price {
    pub currency: String,
    #[serde(deserialize_with = "lenient::string")]
    pub total: String,
    #[serde(deserialize_with = "lenient::string")]
    pub base: String,
    #[serde(deserialize_with = "lenient::string")]
    pub grand_total: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TravelerPricing {
    pub traveler_type: String,
    pub price: Price,
    pub fare_details_by_segment: Vec<FareDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FareDetails {
    pub cabin: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Offers {
        serde_json::from_value::<OffersReply>(value)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_offers()
    }

    #[test]
    fn one_bad_offer_is_dropped() {
        let offers = read(json!({
            "data": [
                {"id": "1", "itineraries": "not a list"},
                {"id": 2, "numberOfBookableSeats": "4", "price": {"total": 10.5, "currency": null},
                 "itineraries": [{"segments": [{"number": 400, "carrierCode": "LH"}]}]},
            ],
            "dictionaries": {"carriers": {"LH": "LUFTHANSA", "XX": 5}},
        }));
        assert_eq!(offers.offers.len(), 1);
        let offer = &offers.offers[0];
        assert_eq!(offer.id, "2");
        assert_eq!(offer.number_of_bookable_seats, Some(4));
        assert_eq!(offer.price.total, "10.5");
        assert_eq!(offer.itineraries[0].segments[0].number, "400");
        assert_eq!(offers.carriers.len(), 1);
        assert_eq!(
            offers.carriers.get("LH").map(String::as_str),
            Some("LUFTHANSA")
        );
    }

    #[test]
    fn empty_shapes() {
        assert!(read(json!({})).offers.is_empty());
        assert!(
            read(json!({"data": null, "dictionaries": null}))
                .offers
                .is_empty()
        );
        assert!(read(json!({"data": {"id": "1"}})).offers.is_empty());
    }
}
