//! Duffel (Flights API v2) as the cash-fare provider: one offer request with
//! `return_offers=true` per search, the token from Secrets Manager, offers normalised to the
//! shared `FlightResult` (`provider: "duffel"`).

mod normalise;
mod reply;

use std::time::{Duration, Instant};

use domain::flight::{Cabin, FlightResult, FlightSearchParams};
use domain::{Error, Result};
use lambda_kit::upstream;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::deps::Deps;

pub use normalise::flights;
pub use reply::{Offer, OfferRequestReply};

/// Upstream name in errors and logs ("Duffel is unavailable; try again later").
pub const SERVICE: &str = "Duffel";
/// The API version every request names (`Duffel-Version`).
pub const API_VERSION: &str = "v2";
/// Duffel's bounds on how long it waits for the airlines (`supplier_timeout`, ms).
const SUPPLIER_TIMEOUT_MS: (u128, u128) = (2_000, 60_000);
/// Time left for our side after the airlines answered: reading and normalising the offers.
const OWN_MARGIN: Duration = Duration::from_secs(2);

/// Searches Duffel and returns the normalised offers, cheapest first.
pub async fn search(
    deps: &Deps,
    params: &FlightSearchParams,
    deadline: Instant,
) -> Result<Vec<FlightResult>> {
    let settings = deps.config.duffel.as_ref().ok_or_else(|| {
        Error::Config("CASH_PROVIDER is duffel, but Duffel's settings were not read".into())
    })?;
    let token = deps.secrets.get(&settings.token_secret).await?;
    let url = format!("{}/air/offer_requests", settings.base_url);
    let body = offer_request(params);
    let query = [
        ("return_offers", "true".to_owned()),
        ("supplier_timeout", supplier_timeout(deadline).to_string()),
    ];
    let response = upstream::send(SERVICE, deadline, &deps.config.retry, || {
        deps.http
            .post(&url)
            .query(&query)
            .bearer_auth(token.expose())
            .header("Duffel-Version", API_VERSION)
            .header(reqwest::header::ACCEPT, "application/json")
            .json(&body)
    })
    .await?;
    if response.status() == StatusCode::UNAUTHORIZED {
        // A rotated token reaches this container at once instead of after the cache's TTL.
        deps.secrets.invalidate(&settings.token_secret).await;
    }
    let reply: OfferRequestReply = upstream::read_json(SERVICE, response).await?;
    Ok(flights(reply.into_offers(), params, deps.clock.now()))
}

/// How long Duffel may wait for the airlines: what the deadline leaves after our margin,
/// within Duffel's bounds.
fn supplier_timeout(deadline: Instant) -> u128 {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(OWN_MARGIN);
    left.as_millis()
        .clamp(SUPPLIER_TIMEOUT_MS.0, SUPPLIER_TIMEOUT_MS.1)
}

/// Duffel's name of a cabin.
pub fn cabin_class(cabin: Cabin) -> &'static str {
    match cabin {
        Cabin::Economy => "economy",
        Cabin::PremiumEconomy => "premium_economy",
        Cabin::Business => "business",
        Cabin::First => "first",
    }
}

/// The offer request's body: one slice per direction, one passenger per traveller (children
/// and infants by type), the cabin, and no connections for a non-stop search.
pub fn offer_request(params: &FlightSearchParams) -> Value {
    let slice = |from: &str, to: &str, date: String| json!({"origin": from, "destination": to, "departure_date": date});
    let (origin, destination) = (params.origin.to_string(), params.destination.to_string());
    let mut slices = vec![slice(
        &origin,
        &destination,
        params.departure_date.to_string(),
    )];
    if let Some(back) = params.return_date {
        slices.push(slice(&destination, &origin, back.to_string()));
    }
    let passengers: Vec<Value> = [
        ("adult", params.adults),
        ("child", params.children),
        ("infant_without_seat", params.infants),
    ]
    .into_iter()
    .flat_map(|(kind, count)| (0..count).map(move |_| json!({"type": kind})))
    .collect();
    let mut data = json!({
        "slices": slices,
        "passengers": passengers,
        "cabin_class": cabin_class(params.travel_class),
    });
    if params.non_stop {
        data["max_connections"] = json!(0);
    }
    json!({ "data": data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(extra: Value) -> FlightSearchParams {
        let mut body = json!({"origin": "lhr", "destination": "jfk",
            "departureDate": "2027-03-15", "travelClass": "PREMIUM_ECONOMY"});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        serde_json::from_value(body).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_one_way_request_has_one_slice_and_every_traveller() {
        let body = offer_request(&params(json!({"adults": 2, "children": 1, "infants": 1})));
        let data = &body["data"];
        assert_eq!(
            data["slices"],
            json!([{"origin": "LHR", "destination": "JFK", "departure_date": "2027-03-15"}])
        );
        assert_eq!(
            data["passengers"],
            json!([{"type": "adult"}, {"type": "adult"}, {"type": "child"},
                   {"type": "infant_without_seat"}])
        );
        assert_eq!(data["cabin_class"], "premium_economy");
        assert!(data.get("max_connections").is_none());
    }

    #[test]
    fn a_return_request_flies_back_on_its_date_and_nonstop_means_no_connections() {
        let body = offer_request(&params(
            json!({"returnDate": "2027-03-22", "nonStop": true}),
        ));
        assert_eq!(
            body["data"]["slices"][1],
            json!({"origin": "JFK", "destination": "LHR", "departure_date": "2027-03-22"})
        );
        assert_eq!(body["data"]["max_connections"], 0);
    }

    #[test]
    fn the_airlines_get_what_the_deadline_leaves_within_duffels_bounds() {
        let now = Instant::now();
        assert_eq!(supplier_timeout(now), 2_000);
        let far = supplier_timeout(now + Duration::from_secs(300));
        assert_eq!(far, 60_000);
        let mid = supplier_timeout(now + Duration::from_secs(12));
        assert!((9_000..=10_000).contains(&mid), "{mid}");
    }
}
