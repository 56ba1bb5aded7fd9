//! The award search: date window, `GET /search`, filter and sort, concurrent trip lookups,
//! and with `includeReturnAwards` the reverse direction as well.

use std::time::Instant;

use domain::flight::{
    Cabin, CabinFrom, FlightResult, FlightSearchParams, FlightSearchResult, IataCode, SearchStats,
};
use domain::{Error, Result};
use futures::StreamExt;
use lambda_kit::secrets::SecretString;
use time::{Date, Duration};

use crate::client::{SERVICE, SearchQuery, SeatsAero};
use crate::deps::Deps;
use crate::flight::{self, Candidate, Shape};
use crate::payload::{SearchReply, TripsReply};
use domain::award_booking::Party;

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
    /// When the requested cabin had nothing: what the other cabins have.
    other_cabins: Vec<CabinFrom>,
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
        other_cabins: found.other_cabins,
    };
    Ok(FlightSearchResult::new(found.flights, Some(stats)))
}

/// The shape of the outbound flights of a search.
fn outbound_shape(params: &FlightSearchParams) -> Shape {
    Shape {
        cabin: params.travel_class,
        locale: params.locale.unwrap_or_default(),
        party: Party {
            adults: params.adults,
            children: params.children,
            infants: params.infants,
        },
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
    let reply = read_body(search, SearchReply::parse)?;
    let candidates = candidates(reply, &shape, usize::from(params.max_results));
    let replies = candidates
        .into_iter()
        .map(|candidate| (candidate, Ok(trips)))
        .collect();
    settle(&shape, replies)
}

/// A reply body as `lambda_kit::upstream::read_json` reads a successful response (an error is
/// the body's not being the expected JSON), with `parse`, borrowing from it.
fn read_body<'a, T>(
    body: &'a [u8],
    parse: impl FnOnce(&'a [u8]) -> serde_json::Result<T>,
) -> Result<T> {
    parse(body).map_err(|e| Error::Upstream {
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
    let mut query = SearchQuery {
        origin: direction.origin,
        destination: direction.destination,
        cabin: Some(direction.shape.cabin),
        start,
        end,
        take: deps.config.take,
        direct_only: params.non_stop,
        sources: &params.sources,
    };
    let body = deps.client.search(key, &query, deadline).await?;
    let reply = read_body(&body, SearchReply::parse)?;
    let total_available = reply.count.unwrap_or(reply.data.len() as u64);
    let has_more = reply.has_more.unwrap_or(false);
    let candidates = candidates(reply, &direction.shape, usize::from(params.max_results));
    let other_cabins = if candidates.is_empty() && !direction.shape.return_leg {
        query.cabin = None;
        other_cabins(deps, key, &query, &direction.shape, deadline).await
    } else {
        Vec::new()
    };
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
        other_cabins,
    })
}

/// The other cabins with award seats in the same search, from how many miles, for the
/// answer that the requested cabin has none. One more search, without the cabin filter;
/// when it fails the answer only says the cabin had nothing.
async fn other_cabins(
    deps: &Deps,
    key: &SecretString,
    query: &SearchQuery<'_>,
    shape: &Shape,
    deadline: Instant,
) -> Vec<CabinFrom> {
    let body = match deps.client.search(key, query, deadline).await {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(error = %e, "search of the other cabins failed");
            return Vec::new();
        }
    };
    match read_body(&body, SearchReply::parse) {
        Ok(reply) => cabins_from(reply, shape),
        Err(e) => {
            tracing::warn!(error = %e, "search of the other cabins unreadable");
            Vec::new()
        }
    }
}

/// The lowest mileage cost of each cabin but the requested one that has seats, in cabin
/// order (Economy first).
fn cabins_from(reply: SearchReply<'_>, shape: &Shape) -> Vec<CabinFrom> {
    let availabilities: Vec<_> = reply.data.into_iter().filter_map(|a| a.ok()).collect();
    Cabin::ALL
        .into_iter()
        .filter(|cabin| *cabin != shape.cabin)
        .filter_map(|cabin| {
            let miles_from = availabilities
                .iter()
                .map(|a| a.cabin(cabin))
                .filter(|o| o.available || o.seats.is_some_and(|s| s > 0))
                .filter(|o| !shape.non_stop || o.direct != Some(false))
                .filter_map(|o| o.miles.filter(|m| *m > 0))
                .min()?;
            Some(CabinFrom { cabin, miles_from })
        })
        .collect()
}

/// Entries whose cabin is available (or has seats) at a real mileage cost, cheapest first
/// (ties keep the upstream order), at most `max`.
fn candidates<'a>(reply: SearchReply<'a>, shape: &Shape, max: usize) -> Vec<Candidate<'a>> {
    let mut candidates: Vec<Candidate<'a>> = reply
        .data
        .into_iter()
        .filter_map(|availability| match availability {
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
        })
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
    candidates: Vec<Candidate<'_>>,
    concurrency: usize,
    deadline: Instant,
) -> Result<Vec<FlightResult>> {
    // Owned ids: with futures over borrowed candidates in the stream, rustc fails to prove
    // the handler's future `Send` ("implementation of `Send` is not general enough").
    let ids: Vec<String> = candidates
        .iter()
        .map(|c| c.availability.id.clone().into_owned())
        .collect();
    let bodies: Vec<Result<Vec<u8>>> = futures::stream::iter(ids)
        .map(|id| async move { client.trips(key, &id, deadline).await })
        .buffered(concurrency.max(1))
        .collect()
        .await;
    settle(shape, candidates.into_iter().zip(bodies).collect())
}

/// The flights of the candidates' trip replies (`GET /trips/{id}` bodies), cheapest first
/// (see [`load_flights`]).
fn settle<B: AsRef<[u8]>>(
    shape: &Shape,
    replies: Vec<(Candidate<'_>, Result<B>)>,
) -> Result<Vec<FlightResult>> {
    let lookups = replies.len();
    let mut flights = Vec::with_capacity(lookups);
    let mut failed = 0;
    let mut outage: Option<Error> = None;
    for (candidate, body) in replies {
        let id = candidate.availability.id.as_ref();
        match flight_of(shape, &candidate, body) {
            Ok(Some(flight)) => flights.push(flight),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(id, error = %e, "trip lookup failed; availability dropped");
                failed += 1;
                if matches!(
                    e,
                    Error::Upstream { .. }
                        | Error::UpstreamUnavailable { .. }
                        | Error::UpstreamTimeout { .. }
                ) {
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

/// The flight of one candidate: `Err` when its trip lookup failed (a body that is not the
/// expected JSON included), `None` when the reply has no usable trip (logged).
fn flight_of<B: AsRef<[u8]>>(
    shape: &Shape,
    candidate: &Candidate<'_>,
    body: Result<B>,
) -> Result<Option<FlightResult>> {
    let body = body?;
    let reply = read_body(body.as_ref(), TripsReply::parse)?;
    match flight::build(shape, candidate, reply) {
        Ok(flight) => Ok(Some(flight)),
        Err(why) => {
            let id = candidate.availability.id.as_ref();
            tracing::warn!(id, why, "availability dropped");
            Ok(None)
        }
    }
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

    #[test]
    fn other_cabins_are_offered_from_their_lowest_cost() {
        let shape = Shape {
            cabin: Cabin::First,
            locale: domain::flight::Locale::En,
            party: Party {
                adults: 1,
                children: 0,
                infants: 0,
            },
            non_stop: false,
            return_leg: false,
        };
        let body = br#"{"data": [
            {"ID": "a", "YAvailable": true, "YMileageCost": "30000",
             "JAvailable": true, "JMileageCost": "70000", "FAvailable": false, "FMileageCost": "0"},
            {"ID": "b", "YAvailable": true, "YMileageCost": "25000",
             "JAvailable": false, "JMileageCost": "55000", "WRemainingSeats": 2, "WMileageCost": "40000"}
        ]}"#;
        let reply = read_body(body, SearchReply::parse).unwrap_or_else(|e| panic!("{e}"));
        let cabins: Vec<(Cabin, u64)> = cabins_from(reply, &shape)
            .into_iter()
            .map(|c| (c.cabin, c.miles_from))
            .collect();
        assert_eq!(
            cabins,
            [
                (Cabin::Economy, 25_000),
                (Cabin::PremiumEconomy, 40_000),
                (Cabin::Business, 70_000)
            ]
        );
    }

    #[test]
    fn odd_entries_are_dropped_one_by_one() {
        let shape = Shape {
            cabin: domain::flight::Cabin::Business,
            locale: domain::flight::Locale::En,
            party: Party {
                adults: 1,
                children: 0,
                infants: 0,
            },
            non_stop: false,
            return_leg: false,
        };
        // A number out of `f64`'s range (1e400) fails `serde_json::Value`: read into a field
        // it drops its entry; in a field nobody reads it is skipped.
        let body = br#"{"data": [
            {"ID": "good", "JAvailable": true, "JMileageCost": "30000", "Extra": 1e400},
            ["array", null, null, null, true, 0, 30000],
            "text", null, 7,
            {"ID": {"nested": 1}, "JAvailable": true, "JMileageCost": "30000"},
            {"JAvailable": true, "JMileageCost": "30000"},
            {"ID": "bad-route", "Route": "SFO-JFK", "JAvailable": true, "JMileageCost": "1"},
            {"ID": "bad-cost", "JAvailable": true, "JMileageCost": 1e400},
            {"ID": "first", "ID": "twice", "JAvailable": true, "JMileageCost": "1"},
            {"ID": "odd-types", "JAvailable": [true], "JRemainingSeats": "2",
             "JMileageCost": " 20000 ", "JDirect": "yes", "Route": {"OriginAirport": 1}}
        ]}"#;
        let reply = read_body(body, SearchReply::parse).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reply.data.len(), 11);
        let candidates = candidates(reply, &shape, 20);
        let ids: Vec<&str> = candidates
            .iter()
            .map(|c| c.availability.id.as_ref())
            .collect();
        // A key given twice: the last one counts, as in a `serde_json::Value`.
        assert_eq!(ids, ["twice", "odd-types", "good"]);
        let odd = &candidates[1];
        assert_eq!(odd.availability.route.origin.as_deref(), Some("1"));
        assert!(!odd.offer.available);
        assert_eq!(
            (odd.offer.seats, odd.offer.direct, odd.miles),
            (Some(2), None, 20_000)
        );
    }
}
