//! `seatsaero-search`: the `POST /flights/award` Lambda, a wrapper around the Seats.aero
//! partner API (seed 000 §5.2).
//!
//! Flow: validate the body (`FlightSearchParams`: IATA codes upper-cased, flexibility clamped
//! to 0..=3 days, maxResults to 1..=20) → `GET /search` for `departure ± flexibility` in the
//! cabin → keep entries whose cabin is available or has seats at a real mileage cost (a
//! null / "0" / "" / unparsable cost is not one) → cheapest `maxResults` → `GET /trips/{id}`
//! for those, `SEATSAERO_TRIP_CONCURRENCY` at a time, in miles order → one `FlightResult`
//! per entry.
//!
//! Decisions:
//! - A failed trip lookup, or a reply without a usable trip in the cabin, drops that entry
//!   (logged): an availability without an itinerary has no times or flight numbers to show,
//!   and a failed lookup often means it went stale. Only when every lookup failed because
//!   Seats.aero was down or slow does the search answer 502/504.
//! - `miles`, `taxes` and `pricePerPerson` are per passenger, `price` the total for adults +
//!   children. Taxes arrive in minor units and are returned in major units; an empty
//!   `TaxesCurrency` is read as USD. Price texts: see `format.rs`.
//! - With `includeReturnAwards` and a `returnDate`, destination → origin is searched around
//!   the return date at the same time, with the same flexibility and `maxResults`. Award
//!   tickets are booked one way, so return results are separate flights tagged "return"
//!   (their `outbound` leg is the return flight), listed after the outbound ones. `stats`
//!   then covers both: counts added, `hasMore` of either, `endDate` the later window end. A
//!   failing return search is logged and leaves the outbound results.
//! - Times are the airports' local times as "YYYY-MM-DDTHH:MM" (Seats.aero's `Z` suffix on
//!   them is wrong).
//! - `nonStop` sends `only_direct_flights=true`, drops entries whose cabin is not direct and
//!   picks non-stop trips only.

mod client;
pub mod config;
mod deps;
mod flight;
mod format;
pub mod handler;
mod payload;
mod request;
mod search;

pub use config::Config;
pub use deps::Deps;
pub use handler::{handle, service};
pub use search::flights_from_replies;
