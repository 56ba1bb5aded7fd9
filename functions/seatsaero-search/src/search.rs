//! The award search: date window, `GET /search`, filter and sort, concurrent trip lookups,
//! and with `includeReturnAwards` the reverse direction as well.

use std::time::Instant;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use shared::domain::flight::{
    FlightResult, FlightSearchParams, FlightSearchResult, IataCode, SearchStats,
};
use shared::secrets::SecretString;
use shared::{Error, Result};
use time::{Date, Duration};

use crate::client::{SERVICE, SearchQuery, SeatsAero};
use crate::deps::Deps;
use crate::flight::{self, Candidate, Shape};
use crate::payload::{Availability, SearchReply, TripsReply};

/// One direction of the search.
struct Direction<'a> {
    origin: &'a IataCode,
    destination: &'a IataCode,
    date: Date,
    shape: Shape,
}

/// What one direction found.
struct Found {
    flights: Vec<FlightResult>,
    total_available: u64,
    has_more: bool,
    start: Date,
    end: Date,
}

/// `departure ± flexibility` days (flexibility is already clamped to 0..=3).
fn window(date: Date, flexibility: u8) -> (Date, Date) {
    let days = Duration::days(i64::from(flexibility));
    (
        date.checked_sub(days).unwrap_or(date),
        date.checked_add(days).unwrap_or(date),
    )
}

pub(crate) async fn run(
    deps: &Deps,
    params: &FlightSearchParams,
    deadline: Instant,
) -> Result<FlightSearchResult> {
    let key = deps.secrets.get(&deps.config.api_key_secret).await?;
    let shape = outbound_shape(params);
    let outbound = Direction {
        origin: &params.origin,
        destination: &params.destination,
        date: params.departure_date,
        shape,
    };
    let inbound = params
        .return_date
        .filter(|_| params.include_return_awards)
        .map(|date| Direction {
            origin: &params.destination,
            destination: &params.origin,
            date,
            shape: Shape {
                return_leg: true,
                ..shape
            },
        });

    let (out, back) = futures::future::join(
        search_direction(deps, &key, params, outbound, deadline),
        async {
            match inbound {
                Some(direction) => {
                    Some(search_direction(deps, &key, params, direction, deadline).await)
                }
                None => None,
            }
        },
    )
    .await;
    let mut found = out?;
    // The return search is an extra: when it fails, the outbound results still count.
    match back {
        Some(Ok(back)) => {
            found.flights.extend(back.flights);
            found.total_available += back.total_available;
            found.has_more |= back.has_more;
            found.end = found.end.max(back.end);
        }
        Some(Err(e)) => tracing::warn!(error = %e, "return search failed; outbound results only"),
        None => {}
    }
    let stats = SearchStats {
        total_available: found.total_available,
        has_more: found.has_more,
        start_date: found.start.to_string(),
        end_date: found.end.to_string(),
        cabin: params.travel_class.display_name().to_owned(),
    };
    Ok(FlightSearchResult::new(found.flights, Some(stats)))
}

/// The shape of the outbound flights of a search.
fn outbound_shape(params: &FlightSearchParams) -> Shape {
    Shape {
        cabin: params.travel_class,
        locale: params.locale.unwrap_or_default(),
        seated: u64::from(params.adults) + u64::from(params.children),
        non_stop: params.non_stop,
        return_leg: false,
    }
}

/// The flights one direction of a search makes of Seats.aero's replies, without HTTP:
/// `search` is a `GET /search` body, `trips` the `GET /trips/{id}` body every candidate
/// gets. Bodies are read as the client reads them (one that is not the expected JSON is an
/// `Error::Upstream`); the rest is what the search does. For tests that fuzz the replies.
pub fn flights_from_replies(
    params: &FlightSearchParams,
    search: &[u8],
    trips: &[u8],
) -> Result<Vec<FlightResult>> {
    let shape = outbound_shape(params);
    let reply: SearchReply = read_body(search)?;
    let candidates = candidates(reply, &shape, usize::from(params.max_results));
    let replies = candidates
        .into_iter()
        .map(|candidate| (candidate, read_body::<TripsReply>(trips)))
        .collect();
    settle(&shape, replies)
}

/// A reply body as `shared::upstream::read_json` reads a successful response.
fn read_body<T: DeserializeOwned>(body: &[u8]) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| Error::Upstream {
        service: SERVICE,
        message: format!("unexpected response body: {e}"),
    })
}

async fn search_direction(
    deps: &Deps,
    key: &SecretString,
    params: &FlightSearchParams,
    direction: Direction<'_>,
    deadline: Instant,
) -> Result<Found> {
    let (start, end) = window(direction.date, params.flexibility);
    let query = SearchQuery {
        origin: direction.origin,
        destination: direction.destination,
        cabin: direction.shape.cabin,
        start,
        end,
        take: deps.config.take,
        direct_only: params.non_stop,
        sources: &params.sources,
    };
    let reply = deps.client.search(key, &query, deadline).await?;
    let total_available = reply.count.unwrap_or(reply.data.len() as u64);
    let has_more = reply.has_more.unwrap_or(false);
    let candidates = candidates(reply, &direction.shape, usize::from(params.max_results));
    let flights = load_flights(
        &deps.client,
        key,
        &direction.shape,
        candidates,
        deps.config.trip_concurrency,
        deadline,
    )
    .await?;
    tracing::info!(
        origin = %direction.origin,
        destination = %direction.destination,
        %start,
        %end,
        total_available,
        flights = flights.len(),
        "award search done"
    );
    Ok(Found {
        flights,
        total_available,
        has_more,
        start,
        end,
    })
}

/// Entries whose cabin is available (or has seats) at a real mileage cost, cheapest first
/// (ties keep the upstream order), at most `max`.
fn candidates(reply: SearchReply, shape: &Shape, max: usize) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = reply
        .data
        .into_iter()
        .filter_map(
            |value| match serde_json::from_value::<Availability>(value) {
                Ok(availability) => {
                    let offer = availability.cabin(shape.cabin);
                    let bookable = offer.available || offer.seats.is_some_and(|s| s > 0);
                    let direct_ok = !shape.non_stop || offer.direct != Some(false);
                    let miles = offer.miles?;
                    (bookable && direct_ok).then_some(Candidate {
                        availability,
                        offer,
                        miles,
                    })
                }
                Err(e) => {
                    tracing::warn!(error = %e, "malformed availability dropped");
                    None
                }
            },
        )
        .collect();
    candidates.sort_by_key(|c| c.miles);
    candidates.truncate(max);
    candidates
}

/// Trip details of every candidate, `concurrency` at a time, in candidate order. A failed
/// lookup drops its entry; only when every lookup failed because the upstream is down or
/// slow does the search fail (502/504) instead of answering "nothing found".
async fn load_flights(
    client: &SeatsAero,
    key: &SecretString,
    shape: &Shape,
    candidates: Vec<Candidate>,
    concurrency: usize,
    deadline: Instant,
) -> Result<Vec<FlightResult>> {
    let replies: Vec<_> = futures::stream::iter(candidates)
        .map(|candidate| async move {
            let reply = client
                .trips(key, &candidate.availability.id, deadline)
                .await;
            (candidate, reply)
        })
        .buffered(concurrency.max(1))
        .collect()
        .await;
    settle(shape, replies)
}

/// The flights of the candidates' trip replies, cheapest first (see [`load_flights`]).
fn settle(
    shape: &Shape,
    replies: Vec<(Candidate, Result<TripsReply>)>,
) -> Result<Vec<FlightResult>> {
    let lookups = replies.len();
    let mut flights = Vec::with_capacity(lookups);
    let mut failed = 0;
    let mut outage: Option<Error> = None;
    for (candidate, reply) in replies {
        let id = candidate.availability.id.as_str();
        match reply {
            Ok(reply) => match flight::build(shape, &candidate, reply) {
                Ok(flight) => flights.push(flight),
                Err(why) => tracing::warn!(id, why, "availability dropped"),
            },
            Err(e) => {
                tracing::warn!(id, error = %e, "trip lookup failed; availability dropped");
                failed += 1;
                if matches!(e, Error::Upstream { .. } | Error::UpstreamTimeout { .. }) {
                    outage.get_or_insert(e);
                }
            }
        }
    }
    if lookups > 0
        && failed == lookups
        && let Some(e) = outage
    {
        return Err(e);
    }
    // The trip's own mileage may differ from the availability's summary.
    flights.sort_by_key(|f| f.miles);
    Ok(flights)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    #[test]
    fn windows() {
        assert_eq!(
            window(date!(2025 - 03 - 01), 3),
            (date!(2025 - 02 - 26), date!(2025 - 03 - 04))
        );
        assert_eq!(
            window(date!(2025 - 03 - 01), 0),
            (date!(2025 - 03 - 01), date!(2025 - 03 - 01))
        );
    }
}
