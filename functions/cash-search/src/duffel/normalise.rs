//! Duffel offers as the shared `FlightResult`, `provider: "duffel"`.
//!
//! - Offers past `expires_at` cannot be booked and are dropped; so is an offer whose slices
//!   do not match the request (a round trip for a one-way search, or the reverse).
//! - `price`: `total_amount` for all travellers; `pricePerPerson`: that total shared by the
//!   seated travellers (Duffel prices the offer, not each traveller).
//! - `taxes`: `tax_amount` in `tax_currency`.
//! - `airline`: the offer's owner (the airline that sells it).
//! - `cabin`: the first segment's cabin for the first traveller, else the requested one.
//! - `tags`: non-stop, the fare brand, and the fare's conditions: changes and refunds before
//!   departure, with their fee when there is one, in the request's locale ([`crate::tags`]).
//! - Sorted cheapest first (Duffel does not sort), at most `maxResults`.

use std::collections::BTreeMap;
use std::str::FromStr;

use domain::carrier_sites;
use domain::flight::{
    Cabin, FlightEndpoint, FlightLeg, FlightResult, FlightSearchParams, Locale, Provider, Taxes,
};
use domain::flight_text::stops_text;
use domain::money::{Amount, price_text};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::reply::{Condition, Offer, Slice};
use crate::format::{duration_text, local_minute};
use crate::tags::{self as fare_tags, Allowance, Term};

/// Every offer that can be booked and matches the request, cheapest first, at most
/// `maxResults`. Each offer dropped is logged with the reason.
pub fn flights(
    offers: Vec<Offer>,
    params: &FlightSearchParams,
    now: OffsetDateTime,
) -> Vec<FlightResult> {
    let locale = params.locale.unwrap_or_default();
    let mut priced: Vec<(Amount, FlightResult)> = offers
        .iter()
        .enumerate()
        .filter_map(
            |(index, offer)| match flight(offer, index, params, locale, now) {
                Ok(flight) => Some(flight),
                Err(reason) => {
                    tracing::warn!(index, id = %offer.id, reason, "dropping a Duffel offer");
                    None
                }
            },
        )
        .collect();
    priced.sort_by(|(a, _), (b, _)| a.to_f64().total_cmp(&b.to_f64()));
    priced
        .into_iter()
        .map(|(_, flight)| flight)
        .take(usize::from(params.max_results))
        .collect()
}

fn flight(
    offer: &Offer,
    index: usize,
    params: &FlightSearchParams,
    locale: Locale,
    now: OffsetDateTime,
) -> Result<(Amount, FlightResult), &'static str> {
    if OffsetDateTime::parse(offer.expires_at.trim(), &Rfc3339).is_ok_and(|at| at <= now) {
        return Err("expired");
    }
    let wanted = if params.return_date.is_some() { 2 } else { 1 };
    if offer.slices.len() != wanted {
        return Err("its slices do not match the request");
    }
    let outbound = leg(&offer.slices[0], locale).ok_or("outbound has no segments")?;
    let inbound = match offer.slices.get(1) {
        Some(slice) => Some(leg(slice, locale).ok_or("inbound has no segments")?),
        None => None,
    };
    let total = Amount::parse(&offer.total_amount).ok_or("no price")?;
    let currency = offer.total_currency.trim().to_ascii_uppercase();
    let seated = u32::from(params.adults) + u32::from(params.children);
    let per_person = total.divided_by(seated).unwrap_or(total);

    let first_slice = &offer.slices[0];
    let cabin = first_slice
        .segments
        .first()
        .and_then(|s| s.passengers.first())
        .and_then(|p| Cabin::from_str(&p.cabin_class).ok())
        .unwrap_or(params.travel_class);
    let airline = match (offer.owner.name.trim(), offer.owner.iata_code.trim()) {
        ("", code) => code.to_owned(),
        (name, _) => name.to_owned(),
    };
    let total_stops =
        u32::try_from(first_slice.segments.len().saturating_sub(1)).unwrap_or(u32::MAX);

    let tags = tags(offer, total_stops, locale);
    let tax_currency = offer.tax_currency.trim().to_ascii_uppercase();
    let id = match offer.id.trim() {
        "" => format!("duffel-{}", index + 1),
        id => format!("duffel-{id}"),
    };
    let result = FlightResult {
        id,
        provider: Provider::Duffel,
        price: price_text(total, &currency, locale),
        price_per_person: price_text(per_person, &currency, locale),
        airline,
        cabin: cabin.display_name().to_owned(),
        tags,
        total_stops,
        miles: None,
        taxes: Taxes {
            amount: Amount::parse(&offer.tax_amount).map(Amount::to_f64),
            currency: (!tax_currency.is_empty()).then_some(tax_currency),
        },
        seats_left: None,
        // The offer's owner sells it: its site books it.
        booking_links: carrier_sites::link(&offer.owner.iata_code)
            .map(|link| BTreeMap::from([link])),
        outbound,
        inbound,
        program: None,
        seen_at: None,
        other_programs: Vec::new(),
        option: None,
    };
    Ok((total, result))
}

/// Non-stop, the fare brand, and the fare's conditions ([`fare_tags`]).
fn tags(offer: &Offer, total_stops: u32, locale: Locale) -> Vec<String> {
    let mut tags = Vec::new();
    if total_stops == 0 {
        tags.push("nonstop".to_owned());
    }
    let brand = offer
        .slices
        .first()
        .map_or("", |s| s.fare_brand_name.trim());
    if !brand.is_empty() {
        tags.push(fare_tags::fare(brand, locale));
    }
    let conditions = &offer.conditions;
    for (term, condition) in [
        (Term::Changes, &conditions.change_before_departure),
        (Term::Refund, &conditions.refund_before_departure),
    ] {
        let currency = condition
            .as_ref()
            .map(|c| c.penalty_currency.trim().to_ascii_uppercase())
            .unwrap_or_default();
        tags.extend(
            allowance(condition.as_ref(), &currency).map(|a| fare_tags::term(term, a, locale)),
        );
    }
    tags
}

/// What a condition allows, with its fee in `currency`; nothing when Duffel does not say.
fn allowance<'a>(condition: Option<&Condition>, currency: &'a str) -> Option<Allowance<'a>> {
    let condition = condition?;
    if !condition.allowed {
        return Some(Allowance::NotAllowed);
    }
    let fee = Amount::parse(&condition.penalty_amount).filter(|fee| fee.to_f64() > 0.0);
    Some(match fee {
        Some(fee) => Allowance::Fee(fee, currency),
        None => Allowance::Free,
    })
}

fn leg(slice: &Slice, locale: Locale) -> Option<FlightLeg> {
    let first = slice.segments.first()?;
    let last = slice.segments.last()?;
    let connections: Vec<&str> = slice.segments[..slice.segments.len() - 1]
        .iter()
        .map(|s| s.destination.iata_code.trim())
        .collect();
    let flight_numbers: Vec<String> = slice
        .segments
        .iter()
        .map(|s| {
            format!(
                "{}{}",
                s.marketing_carrier.iata_code.trim(),
                s.marketing_carrier_flight_number.trim()
            )
        })
        .filter(|n| !n.is_empty())
        .collect();
    Some(FlightLeg {
        departure: FlightEndpoint {
            airport: first.origin.iata_code.trim().to_owned(),
            time: local_minute(&first.departing_at),
        },
        arrival: FlightEndpoint {
            airport: last.destination.iata_code.trim().to_owned(),
            time: local_minute(&last.arriving_at),
        },
        duration: duration_text(&slice.duration).unwrap_or_else(|| "unknown".to_owned()),
        stops: stops_text(
            locale,
            u64::try_from(connections.len()).unwrap_or(u64::MAX),
            &connections,
        ),
        flight_numbers: flight_numbers.join(", "),
    })
}
