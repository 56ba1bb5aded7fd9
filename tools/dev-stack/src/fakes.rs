//! The fakes the local stack starts when no real keys are set: the LLM stand-in, the
//! Seats.aero and Amadeus APIs answering from the recorded fixtures, and Duffel answering
//! generated offers (`test_support::duffel`).

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use test_support::fake_llm::FakeLlm;
use time::{Date, OffsetDateTime};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::award_trips::{self, AwardQuery};
use crate::reshape::{Route, days_between, first_date, replace_codes, shift_dates};
use crate::standin;

/// `POST` here on the fake Seats.aero with `{"delay_ms": N, "searches": K}` (K defaults to
/// 1): its next K searches answer after N ms (at most 10 s), as a slow real one does. For a
/// client's test that wants to see a search while it runs (the web chat's end-to-end test);
/// the fake is otherwise as quick as ever.
pub const LATENCY_PATH: &str = "/__fake/latency";

/// The most [`LATENCY_PATH`] may ask for.
const MAX_LATENCY: Duration = Duration::from_secs(10);

/// The running fakes; dropping them stops them.
pub struct Fakes {
    pub llm: Option<FakeLlm>,
    pub seatsaero: Option<MockServer>,
    pub amadeus: Option<MockServer>,
    pub duffel: Option<MockServer>,
}

/// Ports of the fakes; `None` leaves a fake out (its real service is used).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ports {
    pub llm: Option<u16>,
    pub seatsaero: Option<u16>,
    pub amadeus: Option<u16>,
    pub duffel: Option<u16>,
}

async fn wiremock_on(port: u16) -> Result<MockServer, String> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    Ok(MockServer::builder().listener(listener).start().await)
}

pub async fn start(ports: Ports) -> Result<Fakes, String> {
    let llm = match ports.llm {
        Some(port) => Some(
            FakeLlm::start_with(
                port,
                Box::new(|request| standin::reply(request, standin::today())),
            )
            .await,
        ),
        None => None,
    };
    let seatsaero = match ports.seatsaero {
        Some(port) => {
            let server = wiremock_on(port).await?;
            mount_seatsaero(&server).await;
            Some(server)
        }
        None => None,
    };
    let amadeus = match ports.amadeus {
        Some(port) => {
            let server = wiremock_on(port).await?;
            // The token endpoint as in the tests; offers fitted to the question.
            test_support::upstreams::mount_amadeus(&server).await;
            Mock::given(method("GET"))
                .and(path("/v2/shopping/flight-offers"))
                .respond_with(AmadeusOffers {
                    fixture: test_support::fixture_json(
                        "amadeus/flight_offers_search_response.amadeus-java.json",
                    ),
                })
                .with_priority(1)
                .mount(&server)
                .await;
            Some(server)
        }
        None => None,
    };
    let duffel = match ports.duffel {
        Some(port) => {
            let server = wiremock_on(port).await?;
            test_support::duffel::mount(&server).await;
            Some(server)
        }
        None => None,
    };
    Ok(Fakes {
        llm,
        seatsaero,
        amadeus,
        duffel,
    })
}

fn query(request: &Request, name: &str) -> Option<String> {
    request
        .url
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn date_param(request: &Request, name: &str) -> Option<Date> {
    Date::parse(
        &query(request, name)?,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .ok()
}

/// The route of the last award search, for trip lookups of ids no search answered.
type LastRoute = Arc<Mutex<Option<Route>>>;

/// The availabilities the searches answered, by id, with their place in the recording: what
/// their trip lookups answer.
type Seen = Arc<Mutex<HashMap<String, (Value, usize)>>>;

/// More availabilities than this remembered: the oldest searches are forgotten (all of
/// them; a lookup of one of theirs then falls back to the last route).
const MAX_SEEN: usize = 20_000;

/// How long the next searches wait: (delay, how many searches still wait).
type Latency = Arc<Mutex<(Duration, u32)>>;

async fn mount_seatsaero(server: &MockServer) {
    let last: LastRoute = Arc::default();
    let seen: Seen = Arc::default();
    let latency: Latency = Arc::default();
    let search = test_support::fixture_json("seatsaero/cached_search_response.docs-example.json");
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(SeatsSearch {
            fixture: search.clone(),
            last: last.clone(),
            seen: seen.clone(),
            latency: latency.clone(),
        })
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path(LATENCY_PATH))
        .respond_with(SetLatency(latency))
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/trips/[^/]+$"))
        .respond_with(SeatsTrips {
            fixture: test_support::fixture_json("seatsaero/get_trips_response.docs-example.json"),
            stand_in: search["data"][0].clone(),
            last,
            seen,
        })
        .mount(server)
        .await;
}

struct SetLatency(Latency);

impl Respond for SetLatency {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return ResponseTemplate::new(400).set_body_string("expected {\"delay_ms\": N}");
        };
        let delay = Duration::from_millis(body["delay_ms"].as_u64().unwrap_or(0)).min(MAX_LATENCY);
        let searches = body["searches"]
            .as_u64()
            .map_or(1, |n| u32::try_from(n.min(100)).unwrap_or(1));
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = (delay, searches);
        ResponseTemplate::new(204)
    }
}

struct SeatsSearch {
    fixture: Value,
    last: LastRoute,
    seen: Seen,
    latency: Latency,
}

impl SeatsSearch {
    /// The delay of this search: the one asked for, while searches are left to delay.
    fn delay(&self) -> Duration {
        let mut latency = self.latency.lock().unwrap_or_else(PoisonError::into_inner);
        if latency.1 == 0 {
            return Duration::ZERO;
        }
        latency.1 -= 1;
        latency.0
    }
}

impl Respond for SeatsSearch {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.answer(request).set_delay(self.delay())
    }
}

impl SeatsSearch {
    fn answer(&self, request: &Request) -> ResponseTemplate {
        let (Some(origin), Some(destination), Some(date)) = (
            query(request, "origin_airport"),
            query(request, "destination_airport"),
            date_param(request, "start_date"),
        ) else {
            return ResponseTemplate::new(200).set_body_json(self.fixture.clone());
        };
        let route = Route {
            origin: origin.to_ascii_uppercase(),
            destination: destination.to_ascii_uppercase(),
            date,
        };
        let sources = query(request, "sources")
            .map(|s| {
                s.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let asked = AwardQuery {
            route: route.clone(),
            end: date_param(request, "end_date"),
            cabin: query(request, "cabin").filter(|c| !c.trim().is_empty()),
            sources,
        };
        let (body, places) =
            award_trips::fit_search(&self.fixture, &asked, OffsetDateTime::now_utc());
        {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            if seen.len() > MAX_SEEN {
                seen.clear();
            }
            let items = body["data"].as_array().into_iter().flatten();
            for (item, place) in items.zip(places) {
                if let Some(id) = item["ID"].as_str() {
                    seen.insert(id.to_owned(), (item.clone(), place));
                }
            }
        }
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(route);
        ResponseTemplate::new(200).set_body_json(body)
    }
}

struct SeatsTrips {
    fixture: Value,
    /// A recorded availability, for ids no search answered.
    stand_in: Value,
    last: LastRoute,
    seen: Seen,
}

impl Respond for SeatsTrips {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let id = request
            .url
            .path_segments()
            .and_then(|mut s| s.next_back())
            .unwrap_or_default()
            .to_owned();
        let known = self
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned();
        let (availability, place) = match known {
            Some(known) => known,
            None => {
                let last = self
                    .last
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let Some(route) = last else {
                    // No search yet: the recording as it is.
                    return ResponseTemplate::new(200).set_body_json(self.fixture.clone());
                };
                let mut stand_in = self.stand_in.clone();
                stand_in["ID"] = Value::String(id.clone());
                stand_in["Date"] = Value::String(route.date.to_string());
                stand_in["Route"]["OriginAirport"] = Value::String(route.origin);
                stand_in["Route"]["DestinationAirport"] = Value::String(route.destination);
                let place = (award_trips::seed(&id) % 10) as usize;
                (stand_in, place)
            }
        };
        let Some(route) = route_of(&availability) else {
            return ResponseTemplate::new(404)
                .set_body_json(serde_json::json!({"error": "unknown availability"}));
        };
        let body = award_trips::trips_reply(&self.fixture, &availability, place, &route);
        ResponseTemplate::new(200).set_body_json(body)
    }
}

/// The route and day of an availability.
fn route_of(availability: &Value) -> Option<Route> {
    Some(Route {
        origin: availability["Route"]["OriginAirport"].as_str()?.to_owned(),
        destination: availability["Route"]["DestinationAirport"]
            .as_str()?
            .to_owned(),
        date: Date::parse(
            availability["Date"].as_str()?,
            time::macros::format_description!("[year]-[month]-[day]"),
        )
        .ok()?,
    })
}

struct AmadeusOffers {
    fixture: Value,
}

impl Respond for AmadeusOffers {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut body = self.fixture.clone();
        if let (Some(origin), Some(destination), Some(date)) = (
            query(request, "originLocationCode"),
            query(request, "destinationLocationCode"),
            date_param(request, "departureDate"),
        ) {
            let segments = body["data"][0]["itineraries"][0]["segments"].clone();
            let from = segments[0]["departure"]["iataCode"]
                .as_str()
                .map(str::to_owned);
            let to = segments
                .as_array()
                .and_then(|s| s.last())
                .and_then(|s| s["arrival"]["iataCode"].as_str())
                .map(str::to_owned);
            if let Some(first) = first_date(&segments[0]["departure"], "at") {
                shift_dates(&mut body, days_between(first, date));
            }
            if let (Some(from), Some(to)) = (from, to) {
                replace_codes(
                    &mut body,
                    &["iataCode", "originLocationCode"],
                    &from,
                    &origin,
                );
                replace_codes(
                    &mut body,
                    &["iataCode", "destinationLocationCode"],
                    &to,
                    &destination,
                );
            }
        }
        ResponseTemplate::new(200).set_body_raw(
            serde_json::to_vec(&body).unwrap_or_default(),
            "application/vnd.amadeus+json",
        )
    }
}
