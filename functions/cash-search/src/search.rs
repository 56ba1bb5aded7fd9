//! One cash search on the deployment's provider: Duffel's offer request ([`crate::duffel`])
//! or Amadeus' `GET /v2/shopping/flight-offers` with a valid token, retried once with a
//! fresh token when Amadeus rejects the one we sent.

use std::time::Instant;

use domain::Result;
use domain::flight::{FlightResult, FlightSearchParams, FlightSearchResult, SearchStats};
use lambda_kit::upstream;
use reqwest::{Response, StatusCode};
use time::{Date, Duration};

use crate::config::CashProvider;
use crate::deps::Deps;
use crate::duffel;
use crate::normalise;
use crate::offers::OffersReply;
use crate::token::AccessToken;
use crate::token::SERVICE;

/// Days of a flexible window searched at most: each is one upstream search, and a cash
/// search takes seconds. The asked day and the days either side of it.
pub const MAX_DAYS: u8 = 3;

/// The days a search covers: the asked day first, then the nearest days of its window
/// (`± flexibility`, not before `today`), at most [`MAX_DAYS`] in all, in date order.
pub fn days(params: &FlightSearchParams, today: Date) -> Vec<Date> {
    let asked = params.departure_date;
    let mut days = vec![asked];
    for distance in 1..=i64::from(params.flexibility) {
        for day in [
            asked - Duration::days(distance),
            asked + Duration::days(distance),
        ] {
            if days.len() < usize::from(MAX_DAYS) && day >= today {
                days.push(day);
            }
        }
    }
    days.sort_unstable();
    days
}

/// Searches the deployment's provider on each of [`days`] (a return shifted with its
/// departure, so the stay stays as long) and merges the lists by rank: each day's best,
/// then each day's second. The stats say which days were searched.
pub async fn search_window(
    deps: &Deps,
    params: &FlightSearchParams,
    today: Date,
    deadline: Instant,
) -> Result<FlightSearchResult> {
    let days = days(params, today);
    let several = days.len() > 1;
    let searches = days.iter().map(|&day| {
        let shift = day - params.departure_date;
        let one_day = FlightSearchParams {
            departure_date: day,
            return_date: params.return_date.map(|back| back + shift),
            flexibility: 0,
            ..params.clone()
        };
        async move {
            let mut flights = search(deps, &one_day, deadline).await?;
            // Amadeus numbers its offers per reply: ids stay unique across the days.
            if several {
                for flight in &mut flights {
                    flight.id = format!("{}@{day}", flight.id);
                }
            }
            Ok::<_, domain::Error>(flights)
        }
    });
    let mut lists = Vec::with_capacity(days.len());
    let mut failure = None;
    for result in futures::future::join_all(searches).await {
        match result {
            Ok(flights) => lists.push(flights.into_iter()),
            Err(e) => failure = Some(e),
        }
    }
    // One day failing loses that day; all failing is the search failing.
    if lists.is_empty()
        && let Some(e) = failure
    {
        return Err(e);
    }
    let mut flights = Vec::new();
    loop {
        let before = flights.len();
        flights.extend(lists.iter_mut().filter_map(Iterator::next));
        if flights.len() == before {
            break;
        }
    }
    flights.truncate(usize::from(params.max_results));
    let (first, last) = (days.first().copied(), days.last().copied());
    let stats = SearchStats {
        total_available: flights.len() as u64,
        has_more: false,
        start_date: first.unwrap_or(params.departure_date).to_string(),
        end_date: last.unwrap_or(params.departure_date).to_string(),
        cabin: params.travel_class.display_name().to_owned(),
        other_cabins: Vec::new(),
    };
    Ok(FlightSearchResult::new(flights, Some(stats)))
}

/// Searches the deployment's provider on the asked day and returns the normalised offers.
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

    #[test]
    fn a_flexible_search_covers_the_asked_day_and_its_nearest_neighbours() {
        let params = |flexibility: u8| -> FlightSearchParams {
            serde_json::from_value(json!({
                "origin": "FRA", "destination": "JFK", "departureDate": "2027-03-15",
                "travelClass": "business", "flexibility": flexibility,
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let today = time::macros::date!(2027 - 03 - 01);
        let days = |flex: u8, today: Date| -> Vec<String> {
            days(&params(flex), today)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(days(0, today), ["2027-03-15"]);
        assert_eq!(days(1, today), ["2027-03-14", "2027-03-15", "2027-03-16"]);
        // ±3 days is 7 days: the 3 nearest are searched.
        assert_eq!(days(3, today), ["2027-03-14", "2027-03-15", "2027-03-16"]);
        // Not a day in the past.
        let late = time::macros::date!(2027 - 03 - 15);
        assert_eq!(days(3, late), ["2027-03-15", "2027-03-16", "2027-03-17"]);
    }
}
