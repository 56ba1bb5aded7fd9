//! A fake Duffel Flights API (v2) for the local stack and the tests: `POST /air/offer_requests` answers
//! any route and date with five generated offers, shaped like the real reply (the offer of
//! Duffel's own client fixture is the template, so fields nobody reads stay realistic).
//!
//! The offers differ as real ones do: owner airline, departure time, price, one or two
//! connecting at the airline's hub (left out for `max_connections: 0`), fare brand and the
//! fare's change and refund conditions. Every offer has one slice per slice asked for, on
//! its date, and one passenger entry per traveller asked for; it is priced per seated
//! traveller (an infant without a seat pays a small fixed fare), scaled by cabin, and
//! expires 30 minutes from now by the real clock, as the function drops expired offers.
//! A request without a bearer token gets 401, an invalid body 422, both with Duffel's
//! `errors` body.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime, Time};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::airports;

/// Where the offer requests go.
pub const OFFER_REQUESTS_PATH: &str = "/air/offer_requests";

/// The currency of every generated amount.
const CURRENCY: &str = "EUR";
/// How long an offer can be booked, as Duffel's offers.
const OFFER_LIFETIME: Duration = Duration::minutes(30);
/// Time between a connection's two flights.
const LAYOVER_MINUTES: i64 = 95;
/// The fare of an infant on a lap, in cents, and the taxes in it.
const INFANT_FARE: (i64, i64) = (4_500, 2_000);
/// Distance of a slice between airports the fake does not place.
const UNKNOWN_SLICE_KM: f64 = 6_000.0;

/// Mounts the offer-request endpoint on `server`.
pub async fn mount(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path(OFFER_REQUESTS_PATH))
        .respond_with(DuffelOffers::new())
        .mount(server)
        .await;
}

/// The responder: the fixture's offer as a template, and a count of requests so every reply
/// has ids of its own.
pub struct DuffelOffers {
    template: Value,
    requests: AtomicU64,
}

impl DuffelOffers {
    pub fn new() -> Self {
        let fixture = crate::fixture_json("duffel/create_offer_request.duffel-api-python.json");
        Self {
            template: fixture["data"]["offers"][0].clone(),
            requests: AtomicU64::new(0),
        }
    }
}

impl Default for DuffelOffers {
    fn default() -> Self {
        Self::new()
    }
}

impl Respond for DuffelOffers {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let serial = self.requests.fetch_add(1, Ordering::Relaxed);
        let authorization = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        let (status, body) = answer(
            &self.template,
            authorization,
            &request.body,
            OffsetDateTime::now_utc(),
            serial,
        );
        ResponseTemplate::new(status).set_body_json(body)
    }
}

/// The status and body of the reply to one offer request: `template` is an offer of
/// Duffel's, `serial` makes the ids of this reply its own.
pub fn answer(
    template: &Value,
    authorization: Option<&str>,
    body: &[u8],
    now: OffsetDateTime,
    serial: u64,
) -> (u16, Value) {
    let has_token = authorization
        .and_then(|a| a.strip_prefix("Bearer "))
        .is_some_and(|token| !token.trim().is_empty());
    if !has_token {
        return (
            401,
            errors(
                "authentication_error",
                "missing_authorization_header",
                "Missing authorization header",
                "The 'Authorization' header must be set to 'Bearer <your access token>'.",
                None,
            ),
        );
    }
    match read_request(body, now.date()) {
        Ok(asked) => (201, offer_request(template, &asked, now, serial)),
        Err(invalid) => (
            422,
            errors(
                "validation_error",
                "invalid",
                &invalid.title,
                &invalid.message,
                Some(&invalid.pointer),
            ),
        ),
    }
}

/// Duffel's error body.
fn errors(kind: &str, code: &str, title: &str, message: &str, pointer: Option<&str>) -> Value {
    let mut error = json!({
        "type": kind,
        "code": code,
        "title": title,
        "message": message,
        "documentation_url": "https://duffel.com/docs/api/overview/errors",
    });
    if let Some(pointer) = pointer {
        let field = pointer.rsplit('/').next().unwrap_or_default();
        error["source"] = json!({"pointer": pointer, "field": field});
    }
    json!({"meta": {"status": if kind == "validation_error" { 422 } else { 401 }},
           "errors": [error]})
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Adult,
    Child,
    Infant,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Adult => "adult",
            Self::Child => "child",
            Self::Infant => "infant_without_seat",
        }
    }
}

#[derive(Debug)]
struct AskedSlice {
    origin: String,
    destination: String,
    date: Date,
}

/// What an offer request asks for.
#[derive(Debug)]
struct Asked {
    slices: Vec<AskedSlice>,
    passengers: Vec<Kind>,
    cabin: &'static str,
    non_stop: bool,
}

impl Asked {
    fn seated(&self) -> i64 {
        self.passengers
            .iter()
            .filter(|k| **k != Kind::Infant)
            .count() as i64
    }

    fn infants(&self) -> i64 {
        self.passengers
            .iter()
            .filter(|k| **k == Kind::Infant)
            .count() as i64
    }
}

struct Invalid {
    title: String,
    message: String,
    pointer: String,
}

fn invalid(pointer: &str, message: impl Into<String>) -> Invalid {
    Invalid {
        title: "Invalid field".to_owned(),
        message: message.into(),
        pointer: pointer.to_owned(),
    }
}

const CABINS: &[&str] = &["economy", "premium_economy", "business", "first"];

fn read_request(body: &[u8], today: Date) -> Result<Asked, Invalid> {
    let body: Value = serde_json::from_slice(body).map_err(|_| Invalid {
        title: "Invalid request body".to_owned(),
        message: "The request body must be JSON".to_owned(),
        pointer: "/data".to_owned(),
    })?;
    let data = body
        .get("data")
        .filter(|d| d.is_object())
        .ok_or_else(|| invalid("/data", "Field 'data' is required and must be an object"))?;
    let slices = match data.get("slices").and_then(Value::as_array) {
        Some(slices) if !slices.is_empty() => slices,
        _ => {
            return Err(invalid(
                "/data/slices",
                "Field 'slices' must list at least one slice",
            ));
        }
    };
    let slices = slices
        .iter()
        .enumerate()
        .map(|(i, s)| read_slice(s, i, today))
        .collect::<Result<Vec<_>, _>>()?;
    let passengers = read_passengers(data.get("passengers"))?;
    let cabin = match data.get("cabin_class") {
        None | Some(Value::Null) => "economy",
        Some(c) => CABINS
            .iter()
            .copied()
            .find(|known| c.as_str() == Some(*known))
            .ok_or_else(|| {
                invalid(
                    "/data/cabin_class",
                    "cabin_class must be one of economy, premium_economy, business, first",
                )
            })?,
    };
    let non_stop = match data.get("max_connections") {
        None | Some(Value::Null) => false,
        Some(n) => {
            n.as_u64().ok_or_else(|| {
                invalid("/data/max_connections", "max_connections must be 0, 1 or 2")
            })? == 0
        }
    };
    Ok(Asked {
        slices,
        passengers,
        cabin,
        non_stop,
    })
}

fn read_slice(slice: &Value, i: usize, today: Date) -> Result<AskedSlice, Invalid> {
    let code = |field: &str| {
        slice[field]
            .as_str()
            .map(str::trim)
            .filter(|c| c.len() == 3 && c.chars().all(|c| c.is_ascii_alphabetic()))
            .map(str::to_ascii_uppercase)
            .ok_or_else(|| {
                invalid(
                    &format!("/data/slices/{i}/{field}"),
                    format!("{field} must be an IATA airport or city code"),
                )
            })
    };
    let (origin, destination) = (code("origin")?, code("destination")?);
    if origin == destination {
        return Err(invalid(
            &format!("/data/slices/{i}/destination"),
            "destination must differ from origin",
        ));
    }
    let pointer = format!("/data/slices/{i}/departure_date");
    let date = slice["departure_date"]
        .as_str()
        .and_then(|d| Date::parse(d, format_description!("[year]-[month]-[day]")).ok())
        .ok_or_else(|| invalid(&pointer, "departure_date must be a date (YYYY-MM-DD)"))?;
    if date < today {
        return Err(invalid(&pointer, "departure_date must be after today"));
    }
    Ok(AskedSlice {
        origin,
        destination,
        date,
    })
}

/// Travellers by `type`, or by `age` as Duffel also accepts.
fn read_passengers(passengers: Option<&Value>) -> Result<Vec<Kind>, Invalid> {
    let list = match passengers.and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list,
        _ => {
            return Err(invalid(
                "/data/passengers",
                "Field 'passengers' must list at least one passenger",
            ));
        }
    };
    let mut kinds = Vec::with_capacity(list.len());
    for (i, passenger) in list.iter().enumerate() {
        let kind = match (passenger["type"].as_str(), passenger["age"].as_u64()) {
            (Some("adult"), _) => Kind::Adult,
            (Some("child"), _) => Kind::Child,
            (Some("infant_without_seat"), _) => Kind::Infant,
            (None, Some(age)) if age < 2 => Kind::Infant,
            (None, Some(age)) if age < 18 => Kind::Child,
            (None, Some(_)) => Kind::Adult,
            _ => {
                return Err(invalid(
                    &format!("/data/passengers/{i}/type"),
                    "type must be adult, child or infant_without_seat, or an age given",
                ));
            }
        };
        kinds.push(kind);
    }
    let count = |kind| kinds.iter().filter(|k| **k == kind).count();
    if count(Kind::Adult) == 0 {
        return Err(invalid(
            "/data/passengers",
            "at least one adult must travel",
        ));
    }
    if count(Kind::Infant) > count(Kind::Adult) {
        return Err(invalid(
            "/data/passengers",
            "each infant without a seat must travel with an adult of their own",
        ));
    }
    Ok(kinds)
}

/// A fare condition before departure.
#[derive(Debug, Clone, Copy)]
enum Condition {
    /// The airline does not say (`null`).
    Unknown,
    NotAllowed,
    Free,
    /// Allowed for a fee, in cents.
    Fee(i64),
}

/// One of the generated offers.
struct Plan {
    carrier: &'static str,
    name: &'static str,
    /// Local departure time of the outbound and the return.
    departs: (u8, u8),
    returns: (u8, u8),
    /// Price relative to the others, per mille.
    fare: i64,
    /// Connects at the carrier's hub (non-stop when the trip starts or ends there).
    connects: bool,
    brand: &'static str,
    change: Condition,
    refund: Condition,
    flight: u16,
    aircraft: (&'static str, &'static str),
}

const PLANS: &[Plan] = &[
    Plan {
        carrier: "LH",
        name: "Lufthansa",
        departs: (10, 5),
        returns: (17, 40),
        fare: 1_100,
        connects: false,
        brand: "Classic",
        change: Condition::Fee(7_000),
        refund: Condition::NotAllowed,
        flight: 400,
        aircraft: ("359", "Airbus A350-900"),
    },
    Plan {
        carrier: "UA",
        name: "United Airlines",
        departs: (13, 40),
        returns: (21, 15),
        fare: 990,
        connects: false,
        brand: "Basic",
        change: Condition::NotAllowed,
        refund: Condition::Unknown,
        flight: 960,
        aircraft: ("77W", "Boeing 777-300ER"),
    },
    Plan {
        carrier: "BA",
        name: "British Airways",
        departs: (7, 15),
        returns: (18, 30),
        fare: 860,
        connects: true,
        brand: "Saver",
        change: Condition::Fee(10_000),
        refund: Condition::Fee(15_000),
        flight: 902,
        aircraft: ("388", "Airbus A380-800"),
    },
    Plan {
        carrier: "AF",
        name: "Air France",
        departs: (11, 50),
        returns: (9, 35),
        fare: 920,
        connects: true,
        brand: "Standard",
        change: Condition::Free,
        refund: Condition::Fee(10_000),
        flight: 1_019,
        aircraft: ("359", "Airbus A350-900"),
    },
    Plan {
        carrier: "TK",
        name: "Turkish Airlines",
        departs: (16, 25),
        returns: (12, 55),
        fare: 1_240,
        connects: false,
        brand: "Flex",
        change: Condition::Free,
        refund: Condition::Free,
        flight: 1_588,
        aircraft: ("789", "Boeing 787-9"),
    },
];

/// The cabin's price relative to economy, per mille, and how Duffel's airlines name it.
fn cabin_factor(cabin: &str) -> (i64, &'static str) {
    match cabin {
        "premium_economy" => (1_700, "Premium Economy"),
        "business" => (4_200, "Business"),
        "first" => (7_500, "First"),
        _ => (1_000, "Economy"),
    }
}

/// The reply's `data`: the request as Duffel echoes it, with ids, and the offers.
fn offer_request(template: &Value, asked: &Asked, now: OffsetDateTime, serial: u64) -> Value {
    let ids = Ids { serial };
    let passengers: Vec<Value> = asked
        .passengers
        .iter()
        .enumerate()
        .map(|(i, kind)| json!({"id": ids.make("pas", i as u64), "type": kind.name()}))
        .collect();
    let slices: Vec<Value> = asked
        .slices
        .iter()
        .map(|s| {
            json!({
                "origin": place(&s.origin),
                "origin_type": "airport",
                "destination": place(&s.destination),
                "destination_type": "airport",
                "departure_date": s.date.to_string(),
            })
        })
        .collect();
    let reply = Generated {
        template,
        asked,
        passengers,
        now,
        ids,
    };
    let offers: Vec<Value> = PLANS
        .iter()
        .enumerate()
        .filter(|(_, plan)| !(asked.non_stop && connects(plan, asked)))
        .map(|(n, plan)| reply.offer(plan, n))
        .collect();
    json!({"data": {
        "id": reply.ids.make("orq", 0),
        "live_mode": false,
        "created_at": rfc3339(now),
        "cabin_class": asked.cabin,
        "passengers": reply.passengers,
        "slices": slices,
        "offers": offers,
    }})
}

/// Whether the plan connects on this trip (its hub is not an end of the outbound).
fn connects(plan: &Plan, asked: &Asked) -> bool {
    plan.connects
        && asked.slices.first().is_some_and(|s| {
            airports::carrier_hub(plan.carrier, &s.origin, &s.destination).is_some()
        })
}

/// What every offer of one reply is made of.
struct Generated<'a> {
    /// Duffel's offer, the shape of the generated ones.
    template: &'a Value,
    asked: &'a Asked,
    /// The request's passengers, with their ids.
    passengers: Vec<Value>,
    now: OffsetDateTime,
    ids: Ids,
}

impl Generated<'_> {
    /// The `n`-th offer, of `plan`.
    fn offer(&self, plan: &Plan, n: usize) -> Value {
        let asked = self.asked;
        let expires = rfc3339(self.now + OFFER_LIFETIME);
        let via = connects(plan, asked);
        let slices: Vec<Value> = asked
            .slices
            .iter()
            .enumerate()
            .map(|(i, s)| self.slice(plan, (n, i), s, via))
            .collect();
        let price = Price::of(plan, n, asked);
        let km: f64 = asked.slices.iter().map(slice_km).sum();
        let mut offer = self.template.clone();
        let fields = json!({
            "id": self.ids.make("off", n as u64),
            "live_mode": false,
            "created_at": rfc3339(self.now),
            "updated_at": rfc3339(self.now),
            "expires_at": expires,
            "owner": carrier(plan),
            "passengers": self.passengers,
            "slices": slices,
            "total_amount": amount(price.total),
            "total_currency": CURRENCY,
            "base_amount": amount(price.total - price.tax),
            "base_currency": CURRENCY,
            "tax_amount": amount(price.tax),
            "tax_currency": CURRENCY,
            "conditions": {
                "change_before_departure": condition(plan.change),
                "refund_before_departure": condition(plan.refund),
            },
            // The recorded baggage service names the recorded passenger and segment.
            "available_services": [],
            "payment_requirements": {
                "payment_required_by": expires,
                "price_guarantee_expires_at": expires,
                "requires_instant_payment": false,
            },
            "total_emissions_kg": ((km * 0.09) as i64 * asked.seated()).to_string(),
        });
        merge(&mut offer, fields);
        offer
    }

    /// Slice `i` of offer `n`: non-stop, or via the carrier's hub.
    fn slice(&self, plan: &Plan, (n, i): (usize, usize), asked: &AskedSlice, via: bool) -> Value {
        let (o, d) = (asked.origin.as_str(), asked.destination.as_str());
        let hub = via
            .then(|| airports::carrier_hub(plan.carrier, o, d))
            .flatten();
        let legs: Vec<(&str, &str)> = match hub {
            Some(hub) => vec![(o, hub), (hub, d)],
            None => vec![(o, d)],
        };
        let (hour, minute) = if i == 0 { plan.departs } else { plan.returns };
        let mut departs = PrimitiveDateTime::new(
            asked.date,
            Time::from_hms(hour, minute, 0).unwrap_or(Time::MIDNIGHT),
        );
        let mut segments = Vec::new();
        let mut elapsed = 0;
        for (k, (from, to)) in legs.iter().enumerate() {
            if k > 0 {
                departs += Duration::minutes(LAYOVER_MINUTES);
                elapsed += LAYOVER_MINUTES;
            }
            let minutes = airports::flight_minutes(from, to);
            let arrives = airports::local_arrival(from, to, departs, minutes);
            let leg = Leg {
                from,
                to,
                departs,
                arrives,
                minutes,
                number: plan.flight + (i * 2 + k) as u16,
            };
            let id = self.ids.make("seg", (n * 10 + i * 2 + k) as u64);
            segments.push(self.segment(plan, &leg, id));
            departs = arrives;
            elapsed += minutes;
        }
        let mut slice = self.template["slices"][0].clone();
        let (_, cabin_name) = cabin_factor(self.asked.cabin);
        merge(
            &mut slice,
            json!({
                "id": self.ids.make("sli", (n * 10 + i) as u64),
                "origin": place(o),
                "destination": place(d),
                "duration": iso_duration(elapsed),
                "fare_brand_name": format!("{cabin_name} {}", plan.brand),
                "segments": segments,
                "conditions": {"change_before_departure": condition(plan.change)},
            }),
        );
        slice
    }

    fn segment(&self, plan: &Plan, leg: &Leg<'_>, id: String) -> Value {
        let cabin = self.asked.cabin;
        let (_, cabin_name) = cabin_factor(cabin);
        let km = airports::distance_km(leg.from, leg.to);
        // Short legs of a connection fly narrow-bodies.
        let (code, name) = match km {
            Some(km) if km < 3_000.0 => ("32N", "Airbus A320neo"),
            _ => plan.aircraft,
        };
        let checked = if plan.brand == "Basic" { 0 } else { 1 };
        let on_board: Vec<Value> = self
            .passengers
            .iter()
            .map(|p| {
                json!({
                    "passenger_id": p["id"],
                    "cabin_class": cabin,
                    "cabin_class_marketing_name": cabin_name,
                    "fare_basis_code": format!("{}{}", &cabin_name[..1], plan.brand.to_ascii_uppercase()),
                    "baggages": [{"type": "checked", "quantity": checked},
                                 {"type": "carry_on", "quantity": 1}],
                })
            })
            .collect();
        let mut segment = self.template["slices"][0]["segments"][0].clone();
        merge(
            &mut segment,
            json!({
                "id": id,
                "origin": place(leg.from),
                "destination": place(leg.to),
                "origin_terminal": null,
                "destination_terminal": null,
                "departing_at": local(leg.departs),
                "arriving_at": local(leg.arrives),
                "duration": iso_duration(leg.minutes),
                "distance": km.map(|km| format!("{km:.1}")),
                "aircraft": {"iata_code": code, "name": name},
                "marketing_carrier": carrier(plan),
                "marketing_carrier_flight_number": leg.number.to_string(),
                "operating_carrier": carrier(plan),
                "operating_carrier_flight_number": leg.number.to_string(),
                "passengers": on_board,
            }),
        );
        segment
    }
}

/// One flight of a slice.
struct Leg<'a> {
    from: &'a str,
    to: &'a str,
    departs: PrimitiveDateTime,
    arrives: PrimitiveDateTime,
    minutes: i64,
    number: u16,
}

/// An offer's price in cents: per seated traveller from the distance, cabin and airline,
/// times the seated travellers, plus the infants' fixed fare.
struct Price {
    total: i64,
    tax: i64,
}

impl Price {
    fn of(plan: &Plan, n: usize, asked: &Asked) -> Self {
        let km: f64 = asked.slices.iter().map(slice_km).sum();
        let (cabin, _) = cabin_factor(asked.cabin);
        // Economy: a base per slice plus a rate per km; whole cents, so the cast is exact.
        let economy = 6_000 * asked.slices.len() as i64 + (km * 6.0) as i64;
        let seat = economy * cabin / 1_000 * plan.fare / 1_000 + (n as i64 * 37) % 100;
        let seat_tax = seat / 5;
        let (infant, infant_tax) = INFANT_FARE;
        Self {
            total: seat * asked.seated() + infant * asked.infants(),
            tax: seat_tax * asked.seated() + infant_tax * asked.infants(),
        }
    }
}

fn slice_km(slice: &AskedSlice) -> f64 {
    airports::distance_km(&slice.origin, &slice.destination).unwrap_or(UNKNOWN_SLICE_KM)
}

fn carrier(plan: &Plan) -> Value {
    json!({"iata_code": plan.carrier, "name": plan.name,
           "id": format!("aln_00001876aqC8c5umZmr{}", plan.carrier)})
}

fn place(code: &str) -> Value {
    let city = airports::city(code);
    json!({
        "type": "airport",
        "id": format!("arp_{}", code.to_ascii_lowercase()),
        "iata_code": code,
        "name": city.map_or_else(|| code.to_owned(), |c| format!("{c} ({code})")),
        "city_name": city,
    })
}

fn condition(condition: Condition) -> Value {
    match condition {
        Condition::Unknown => Value::Null,
        Condition::NotAllowed => {
            json!({"allowed": false, "penalty_amount": null, "penalty_currency": null})
        }
        Condition::Free => {
            json!({"allowed": true, "penalty_amount": "0.00", "penalty_currency": CURRENCY})
        }
        Condition::Fee(cents) => {
            json!({"allowed": true, "penalty_amount": amount(cents), "penalty_currency": CURRENCY})
        }
    }
}

/// Cents as Duffel's decimal string, `1234.56`.
fn amount(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// `PT8H15M`.
fn iso_duration(minutes: i64) -> String {
    format!("PT{}H{:02}M", minutes / 60, minutes % 60)
}

fn local(at: PrimitiveDateTime) -> String {
    at.format(format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second]"
    ))
    .unwrap_or_default()
}

fn rfc3339(at: OffsetDateTime) -> String {
    // Milliseconds, as Duffel writes them.
    let at = at
        .replace_nanosecond(at.millisecond() as u32 * 1_000_000)
        .unwrap_or(at);
    at.format(&Rfc3339).unwrap_or_default()
}

/// Sets the fields of `fields` on `target` (an object).
fn merge(target: &mut Value, fields: Value) {
    if let (Some(target), Value::Object(fields)) = (target.as_object_mut(), fields) {
        target.extend(fields);
    }
}

/// Duffel-style ids (`off_0000…`), distinct per reply and per object.
struct Ids {
    serial: u64,
}

impl Ids {
    fn make(&self, prefix: &str, n: u64) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut x = self
            .serial
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(n.wrapping_mul(0xBF58_476D_1CE4_E5B9))
            .wrapping_add(prefix.bytes().fold(0, |h: u64, b| {
                h.wrapping_mul(0x100_0000_01B3) ^ u64::from(b)
            }));
        let mut id = format!("{prefix}_0000");
        for _ in 0..18 {
            // splitmix64: well-spread characters from a counter.
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            id.push(char::from(ALPHABET[(z % ALPHABET.len() as u64) as usize]));
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2027-01-10 12:00 UTC);
    const TOKEN: Option<&str> = Some("Bearer duffel_test_local");

    fn template() -> Value {
        DuffelOffers::new().template
    }

    fn ask(data: Value) -> (u16, Value) {
        answer(&template(), TOKEN, data.to_string().as_bytes(), NOW, 1)
    }

    fn body(slices: Value, passengers: Value, cabin: &str) -> Value {
        json!({"data": {"slices": slices, "passengers": passengers, "cabin_class": cabin}})
    }

    fn one_way() -> Value {
        json!([{"origin": "FRA", "destination": "JFK", "departure_date": "2027-03-15"}])
    }

    fn offers(reply: &Value) -> Vec<Value> {
        reply["data"]["offers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn cents(amount: &Value) -> i64 {
        let text = amount.as_str().unwrap_or_default();
        let (whole, part) = text.split_once('.').unwrap_or((text, "0"));
        whole.parse::<i64>().unwrap_or(-1) * 100 + part.parse::<i64>().unwrap_or(-1)
    }

    #[test]
    fn one_way_and_round_trips_have_a_slice_per_direction_on_its_date() {
        let (status, reply) = ask(body(one_way(), json!([{"type": "adult"}]), "economy"));
        assert_eq!(status, 201);
        let one_way_offers = offers(&reply);
        assert_eq!(one_way_offers.len(), PLANS.len());
        assert!(
            one_way_offers
                .iter()
                .all(|o| o["slices"].as_array().map(Vec::len) == Some(1))
        );

        let round = json!([
            {"origin": "FRA", "destination": "JFK", "departure_date": "2027-03-15"},
            {"origin": "JFK", "destination": "FRA", "departure_date": "2027-03-22"}
        ]);
        let (_, reply) = ask(body(round, json!([{"type": "adult"}]), "economy"));
        for offer in offers(&reply) {
            let slices = offer["slices"].as_array().cloned().unwrap_or_default();
            assert_eq!(slices.len(), 2);
            for (slice, (from, to, day)) in slices
                .iter()
                .zip([("FRA", "JFK", "2027-03-15"), ("JFK", "FRA", "2027-03-22")])
            {
                let segments = slice["segments"].as_array().cloned().unwrap_or_default();
                assert_eq!(segments[0]["origin"]["iata_code"], from);
                assert_eq!(segments[segments.len() - 1]["destination"]["iata_code"], to);
                let departs = segments[0]["departing_at"].as_str().unwrap_or_default();
                assert!(departs.starts_with(&format!("{day}T")), "{departs}");
                assert_eq!(departs.len(), 19, "local time without an offset: {departs}");
                assert!(
                    slice["duration"]
                        .as_str()
                        .is_some_and(|d| d.starts_with("PT"))
                );
            }
        }
    }

    #[test]
    fn offers_differ_in_airline_time_price_and_conditions() {
        let (_, reply) = ask(body(one_way(), json!([{"type": "adult"}]), "business"));
        let offers = offers(&reply);
        let distinct = |field: &dyn Fn(&Value) -> String| {
            offers.iter().map(field).collect::<HashSet<_>>().len()
        };
        assert_eq!(
            distinct(&|o| o["owner"]["iata_code"].to_string()),
            offers.len()
        );
        assert_eq!(distinct(&|o| o["total_amount"].to_string()), offers.len());
        assert_eq!(distinct(&|o| o["id"].to_string()), offers.len());
        assert_eq!(
            distinct(&|o| o["slices"][0]["segments"][0]["departing_at"].to_string()),
            offers.len()
        );
        assert!(distinct(&|o| o["conditions"].to_string()) >= 4);
        assert!(distinct(&|o| o["slices"][0]["fare_brand_name"].to_string()) >= 4);
        let connecting = offers
            .iter()
            .filter(|o| o["slices"][0]["segments"].as_array().map(Vec::len) == Some(2))
            .count();
        assert!((1..=2).contains(&connecting), "{connecting}");
    }

    #[test]
    fn max_connections_zero_leaves_only_non_stop_offers() {
        let mut asked = body(one_way(), json!([{"type": "adult"}]), "economy");
        asked["data"]["max_connections"] = json!(0);
        let (_, reply) = ask(asked);
        let offers = offers(&reply);
        assert!(offers.len() >= 2);
        for offer in &offers {
            assert_eq!(
                offer["slices"][0]["segments"].as_array().map(Vec::len),
                Some(1)
            );
        }
        // From a hub of its own, the connecting airline flies non-stop.
        let from_london =
            json!([{"origin": "LHR", "destination": "JFK", "departure_date": "2027-03-15"}]);
        let (_, reply) = ask(body(from_london, json!([{"type": "adult"}]), "economy"));
        let ba = self::offers(&reply)
            .into_iter()
            .find(|o| o["owner"]["iata_code"] == "BA")
            .unwrap_or_default();
        assert_eq!(
            ba["slices"][0]["segments"].as_array().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn seated_travellers_pay_the_fare_and_lap_infants_a_small_one() {
        let (_, alone) = ask(body(one_way(), json!([{"type": "adult"}]), "economy"));
        let family = json!([{"type": "adult"}, {"type": "adult"}, {"type": "child"},
                            {"type": "infant_without_seat"}]);
        let (_, together) = ask(body(one_way(), family, "economy"));
        for (one, all) in offers(&alone).iter().zip(offers(&together)) {
            let seat = cents(&one["total_amount"]);
            assert_eq!(cents(&all["total_amount"]), 3 * seat + INFANT_FARE.0);
            assert_eq!(
                cents(&all["base_amount"]) + cents(&all["tax_amount"]),
                cents(&all["total_amount"])
            );
            assert_eq!(all["passengers"].as_array().map(Vec::len), Some(4));
            let on_board = &all["slices"][0]["segments"][0]["passengers"];
            assert_eq!(on_board.as_array().map(Vec::len), Some(4));
            assert_eq!(on_board[3]["passenger_id"], all["passengers"][3]["id"]);
            assert_eq!(all["passengers"][3]["type"], "infant_without_seat");
        }
        assert_eq!(
            together["data"]["passengers"].as_array().map(Vec::len),
            Some(4)
        );
    }

    #[test]
    fn cabins_are_on_every_segment_and_dearer_up_front() {
        let mut previous = 0;
        for cabin in CABINS {
            let (_, reply) = ask(body(one_way(), json!([{"type": "adult"}]), cabin));
            let offers = offers(&reply);
            for offer in &offers {
                for slice in offer["slices"].as_array().into_iter().flatten() {
                    for segment in slice["segments"].as_array().into_iter().flatten() {
                        for p in segment["passengers"].as_array().into_iter().flatten() {
                            assert_eq!(p["cabin_class"], *cabin);
                        }
                    }
                }
            }
            let cheapest = offers
                .iter()
                .map(|o| cents(&o["total_amount"]))
                .min()
                .unwrap_or(0);
            assert!(cheapest > previous, "{cabin}: {cheapest} after {previous}");
            previous = cheapest;
        }
    }

    #[test]
    fn offers_can_be_booked_for_half_an_hour() {
        let (_, reply) = ask(body(one_way(), json!([{"type": "adult"}]), "economy"));
        for offer in offers(&reply) {
            let expires = offer["expires_at"].as_str().unwrap_or_default();
            let expires =
                OffsetDateTime::parse(expires, &Rfc3339).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(expires - NOW, OFFER_LIFETIME);
        }
    }

    #[test]
    fn no_token_is_401_and_a_bad_body_422_with_duffels_errors() {
        let ok = body(one_way(), json!([{"type": "adult"}]), "economy").to_string();
        for authorization in [None, Some("duffel_test_local"), Some("Bearer  ")] {
            let (status, reply) = answer(&template(), authorization, ok.as_bytes(), NOW, 1);
            assert_eq!(status, 401);
            assert_eq!(reply["errors"][0]["type"], "authentication_error");
        }
        let past = json!([{"origin": "FRA", "destination": "JFK", "departure_date": "2026-12-01"}]);
        for (bad, pointer) in [
            (json!({}), "/data"),
            (
                json!({"data": {"passengers": [{"type": "adult"}]}}),
                "/data/slices",
            ),
            (
                body(past, json!([{"type": "adult"}]), "economy"),
                "/data/slices/0/departure_date",
            ),
            (body(one_way(), json!([]), "economy"), "/data/passengers"),
            (
                body(one_way(), json!([{"type": "pet"}]), "economy"),
                "/data/passengers/0/type",
            ),
            (
                body(
                    one_way(),
                    json!([{"type": "infant_without_seat"}]),
                    "economy",
                ),
                "/data/passengers",
            ),
            (
                body(one_way(), json!([{"type": "adult"}]), "coach"),
                "/data/cabin_class",
            ),
        ] {
            let (status, reply) = ask(bad);
            assert_eq!(status, 422, "{reply}");
            let error = &reply["errors"][0];
            assert_eq!(error["type"], "validation_error");
            assert_eq!(error["code"], "invalid");
            assert_eq!(error["source"]["pointer"], pointer, "{reply}");
            assert!(error["title"].is_string() && error["message"].is_string());
        }
        let (status, _) = answer(&template(), TOKEN, b"not json", NOW, 1);
        assert_eq!(status, 422);
    }
}
