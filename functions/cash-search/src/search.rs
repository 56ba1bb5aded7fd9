//! One cash search on the deployment's provider: Duffel's offer request ([`crate::duffel`])
//! or Amadeus' `GET /v2/shopping/flight-offers` with a valid token, retried once with a
//! fresh token when Amadeus rejects the one we sent.

use std::time::Instant;

use domain::Result;
use domain::flight::{FlightResult, FlightSearchParams};
use lambda_kit::upstream;
use reqwest::{Response, StatusCode};

use crate::config::CashProvider;
use crate::deps::Deps;
use crate::duffel;
use crate::normalise;
use crate::offers::OffersReply;
use crate::token::AccessToken;
use crate::token::SERVICE;

/// Searches the deployment's provider and returns the normalised offers. `flexibility` is
/// not applied: both providers search one departure date.
pub async fn search(
    deps: &Deps,
    params: &FlightSearchParams,
    deadline: Instant,
) -> Result<Vec<FlightResult>> {
    match deps.config.provider {
        CashProvider::Duffel => duffel::search(deps, params, deadline).await,
        CashProvider::Amadeus => amadeus(deps, params, deadline).await,
    }
}

/// Searches Amadeus with a valid token, once more with a fresh one if Amadeus rejects it.
async fn amadeus(
    deps: &Deps,
    params: &FlightSearchParams,
    deadline: Instant,
) -> Result<Vec<FlightResult>> {
    let token = deps.token.token(deadline).await?;
    let mut response = offers_request(deps, params, &token, deadline).await?;
    if response.status() == StatusCode::UNAUTHORIZED {
        // Revoked or expired early: one more try with another token; a second 401 is ours.
        tracing::warn!("Amadeus rejected the access token; retrying with a fresh one");
        let fresh = deps.token.replace_rejected(&token, deadline).await?;
        response = offers_request(deps, params, &fresh, deadline).await?;
    }
    let reply: OffersReply = upstream::read_json(SERVICE, response).await?;
    Ok(normalise::flights(reply.into_offers(), params))
}

/// Query parameters in Amadeus' names; counts of zero children or infants are left out.
pub fn query(params: &FlightSearchParams, currency: &str) -> Vec<(&'static str, String)> {
    let mut query = vec![
        ("originLocationCode", params.origin.to_string()),
        ("destinationLocationCode", params.destination.to_string()),
        ("departureDate", params.departure_date.to_string()),
    ];
    if let Some(ret) = params.return_date {
        query.push(("returnDate", ret.to_string()));
    }
    query.push(("adults", params.adults.to_string()));
    if params.children > 0 {
        query.push(("children", params.children.to_string()));
    }
    if params.infants > 0 {
        query.push(("infants", params.infants.to_string()));
    }
    query.extend([
        ("travelClass", params.travel_class.as_str().to_owned()),
        ("nonStop", params.non_stop.to_string()),
        ("currencyCode", currency.to_owned()),
        ("max", params.max_results.to_string()),
    ]);
    query
}

async fn offers_request(
    deps: &Deps,
    params: &FlightSearchParams,
    token: &AccessToken,
    deadline: Instant,
) -> Result<Response> {
    let url = format!("{}/v2/shopping/flight-offers", deps.config.base_url);
    let query = query(params, &deps.config.currency);
    upstream::send(SERVICE, deadline, &deps.config.retry, || {
        deps.http
            .get(&url)
            .query(&query)
            .bearer_auth(token.expose())
            .header(reqwest::header::ACCEPT, "application/vnd.amadeus+json")
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_in_amadeus_terms() {
        let params: FlightSearchParams = serde_json::from_value(json!({
            "origin": "fra", "destination": "jfk", "departureDate": "2027-03-15",
            "returnDate": "2027-03-22", "travelClass": "premium economy", "adults": 2,
            "infants": 1, "nonStop": true, "maxResults": 7,
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let query = query(&params, "EUR");
        let expected = [
            ("originLocationCode", "FRA"),
            ("destinationLocationCode", "JFK"),
            ("departureDate", "2027-03-15"),
            ("returnDate", "2027-03-22"),
            ("adults", "2"),
            ("infants", "1"),
            ("travelClass", "PREMIUM_ECONOMY"),
            ("nonStop", "true"),
            ("currencyCode", "EUR"),
            ("max", "7"),
        ];
        let got: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(got, expected);
    }
}
