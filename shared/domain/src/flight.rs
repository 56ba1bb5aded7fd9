//! Flight search types: the LLM's `search_flights` arguments (seed 000 §2.2), the request
//! body of the two flight functions (§5.1) and their normalised results (§5.2).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_with::{DeserializeFromStr, SerializeDisplay};
use time::Date;

use super::schema::IsoDateSchema;
use crate::error::Error;

// Serde format `iso_date` for calendar dates as `YYYY-MM-DD`, the wire form of every date
// here (`time`'s own serde form is a tuple unless `serde-human-readable` is enabled).
// The macro's module takes no doc comment, so a wrapper exempts it from `missing_docs`.
#[allow(missing_docs)]
mod iso_date_format {
    time::serde::format_description!(
        pub iso_date,
        Date,
        "[year]-[month]-[day]"
    );
}
pub use iso_date_format::iso_date;

/// Travel class. Accepts any case and spaced or hyphenated spellings on input because LLMs
/// and callers are sloppy; always writes the canonical `SCREAMING_SNAKE_CASE` name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, SerializeDisplay, DeserializeFromStr,
)]
pub enum Cabin {
    /// The main cabin (Seats.aero's `Y`).
    Economy,
    /// Premium economy (Seats.aero's `W`).
    PremiumEconomy,
    /// Business class (Seats.aero's `J`).
    Business,
    /// First class (Seats.aero's `F`).
    First,
}

impl Cabin {
    /// Every cabin, from economy to first.
    pub const ALL: [Cabin; 4] = [
        Self::Economy,
        Self::PremiumEconomy,
        Self::Business,
        Self::First,
    ];

    /// Canonical wire name, e.g. `PREMIUM_ECONOMY`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Economy => "ECONOMY",
            Self::PremiumEconomy => "PREMIUM_ECONOMY",
            Self::Business => "BUSINESS",
            Self::First => "FIRST",
        }
    }

    /// Field prefix in Seats.aero availability rows (`YMileageCost`, `JAvailable`, ...).
    pub fn seatsaero_key(self) -> &'static str {
        match self {
            Self::Economy => "Y",
            Self::PremiumEconomy => "W",
            Self::Business => "J",
            Self::First => "F",
        }
    }

    /// Value of the Seats.aero `cabin` query parameter.
    pub fn seatsaero_api_value(self) -> &'static str {
        match self {
            Self::Economy => "economy",
            Self::PremiumEconomy => "premium",
            Self::Business => "business",
            Self::First => "first",
        }
    }

    /// Human-readable name for chat messages and `FlightResult::cabin`.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Economy => "Economy",
            Self::PremiumEconomy => "Premium Economy",
            Self::Business => "Business",
            Self::First => "First",
        }
    }
}

impl fmt::Display for Cabin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Cabin {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let normalised: String = s
            .trim()
            .chars()
            .map(|c| match c {
                ' ' | '-' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect();
        Self::ALL
            .into_iter()
            .find(|cabin| cabin.as_str() == normalised)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "cabin must be one of ECONOMY, PREMIUM_ECONOMY, BUSINESS, FIRST; got {s:?}"
                ))
            })
    }
}

impl JsonSchema for Cabin {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Cabin".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = Self::ALL.iter().map(|c| c.as_str()).collect();
        json_schema!({ "type": "string", "enum": names })
    }
}

/// A validated IATA airport (or city) code: three ASCII letters, stored upper case so that
/// `fra` and `FRA` compare, hash and dedupe alike.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, SerializeDisplay, DeserializeFromStr,
)]
pub struct IataCode(String);

impl IataCode {
    /// Parses and upper-cases a code; anything but exactly three ASCII letters is refused.
    pub fn parse(s: &str) -> Result<Self, Error> {
        if s.len() == 3 && s.bytes().all(|b| b.is_ascii_alphabetic()) {
            Ok(Self(s.to_ascii_uppercase()))
        } else {
            Err(Error::Invalid(format!(
                "IATA code must be exactly 3 letters (e.g. FRA), got {s:?}"
            )))
        }
    }

    /// The code, upper case.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for IataCode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for IataCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for IataCode {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl JsonSchema for IataCode {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "IataCode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 3,
            "maxLength": 3,
            "pattern": "^[A-Za-z]{3}$",
        })
    }
}

/// Arguments of the `search_flights` tool exactly as the LLM sends them.
/// Unknown fields are ignored on purpose: models add extras, and refusing them would only
/// cost a repair round. Field docs are the parameter descriptions the LLM reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "Search award (miles) and cash flights between two airports. Call it as soon as the user wants flights, even with details missing: it asks the user for what is missing and keeps what is known, so the next call needs only what the user added. Remembered preferences fill gaps."
)]
pub struct FlightSearchInput {
    /// Departure airport as a 3-letter IATA code, e.g. FRA.
    pub origin: IataCode,
    /// Arrival airport as a 3-letter IATA code, e.g. JFK.
    pub destination: IataCode,
    /// Outbound travel date, YYYY-MM-DD.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub depart_date: Date,
    /// Return travel date, YYYY-MM-DD; null or omitted for a one-way trip.
    #[serde(
        default,
        with = "iso_date::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<IsoDateSchema>")]
    pub return_date: Option<Date>,
    /// Adult passengers (12 years and older), 1 to 9. Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9), extend("default" = 1))]
    pub pax: Option<u8>,
    /// Children (2 to 11 years) with their own seat; adults and children together at most
    /// 9. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 8), extend("default" = 0))]
    pub children: Option<u8>,
    /// Infants (under 2) on an adult's lap; at most one per adult. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 9), extend("default" = 0))]
    pub infants: Option<u8>,
    /// Days either side of depart_date the user accepts ("±2 days" is 2), 0 to 3.
    /// Defaults to 0 (that day only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 3), extend("default" = 0))]
    pub flexibility: Option<u8>,
    /// Travel class.
    pub cabin: Cabin,
    /// True if the user wants to pay with miles: award seats are listed first. False puts
    /// cash fares first. Defaults to true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub award_only: Option<bool>,
    /// Frequent-flyer programmes the traveller can redeem miles with, e.g.
    /// ["Miles & More", "Flying Blue"]. Omit to search all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10), inner(length(min = 1, max = 64)))]
    pub loyalty_programs: Option<Vec<String>>,
    /// Optional extra filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<FlightConstraints>,
    /// Set true when the user wants to repeat or tweak the previous flight search; missing
    /// details are taken from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_last_request: Option<bool>,
}

/// Extra filters of a flight search (`constraints`). Inlined in the schema
/// because not every OpenAI-compatible endpoint resolves `$ref`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline, description = "Optional extra filters.")]
pub struct FlightConstraints {
    /// Maximum taxes and fees per passenger the user accepts, e.g. 300.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_taxes: Option<f64>,
    /// Only non-stop flights. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonstop_only: Option<bool>,
    /// Airline alliances to restrict to, e.g. ["Star Alliance", "oneworld", "SkyTeam"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 3), inner(length(min = 1, max = 32)))]
    pub alliances: Option<Vec<String>>,
}

/// At most `max_items` entries of 1 to `max_chars` characters: the bounds the schema states,
/// for callers that did not go through it.
fn check_list(
    field: &str,
    list: Option<&[String]>,
    max_items: usize,
    max_chars: usize,
) -> Result<(), Error> {
    let list = list.unwrap_or_default();
    if list.len() > max_items {
        return Err(Error::Invalid(format!(
            "{field}: at most {max_items} entries, got {}",
            list.len()
        )));
    }
    if list
        .iter()
        .any(|entry| entry.trim().is_empty() || entry.chars().count() > max_chars)
    {
        return Err(Error::Invalid(format!(
            "{field}: every entry must have 1 to {max_chars} characters"
        )));
    }
    Ok(())
}

/// Trims, upper-cases, sorts and deduplicates a free-text list so order and spelling do
/// not change the dedupe key.
fn canonical_list(list: Option<&[String]>) -> Vec<String> {
    let mut out: Vec<String> = list
        .unwrap_or_default()
        .iter()
        .map(|s| s.trim().to_uppercase())
        .filter(|s| !s.is_empty())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

impl FlightSearchInput {
    /// Adults when `pax` is not given.
    pub const DEFAULT_PAX: u8 = 1;
    /// Seated passengers (adults and children) one search takes at most.
    pub const MAX_PAX: u8 = 9;

    /// The request with every default applied and every list normalised, so that two
    /// inputs meaning the same search give equal values (and equal dedupe keys).
    /// Keys are written in sorted order, which also holds if `serde_json`'s
    /// `preserve_order` is ever switched on.
    pub fn canonical(&self) -> Value {
        let constraints = self.constraints.as_ref();
        json!({
            "award_only": self.award_only.unwrap_or(true),
            "cabin": self.cabin.as_str(),
            "constraints": {
                "alliances": canonical_list(constraints.and_then(|c| c.alliances.as_deref())),
                "max_taxes": constraints.and_then(|c| c.max_taxes),
                "nonstop_only": constraints.and_then(|c| c.nonstop_only).unwrap_or(false),
            },
            "depart_date": self.depart_date.to_string(),
            "destination": self.destination.as_str(),
            "loyalty_programs": canonical_list(self.loyalty_programs.as_deref()),
            "origin": self.origin.as_str(),
            "pax": self.pax.unwrap_or(Self::DEFAULT_PAX),
            "children": self.children.unwrap_or(0),
            "infants": self.infants.unwrap_or(0),
            "flexibility": self.flexibility.unwrap_or(0),
            "return_date": self.return_date.map(|d| d.to_string()),
            "reuse_last_request": self.reuse_last_request.unwrap_or(false),
        })
    }

    /// Adults and children share at most 9 seats; each infant sits on an adult's lap.
    fn validate_passengers(&self) -> Result<(), Error> {
        let adults = self.pax.unwrap_or(Self::DEFAULT_PAX);
        let children = self.children.unwrap_or(0);
        let infants = self.infants.unwrap_or(0);
        let seated = u16::from(adults) + u16::from(children);
        if seated > u16::from(Self::MAX_PAX) {
            return Err(Error::Invalid(format!(
                "pax + children must be at most {}, got {seated}",
                Self::MAX_PAX
            )));
        }
        if infants > adults {
            return Err(Error::Invalid(format!(
                "infants ({infants}) must not outnumber adults (pax {adults}): each sits on an adult's lap"
            )));
        }
        Ok(())
    }

    /// Checks what the JSON Schema cannot express (or a caller may have skipped).
    /// Same-day returns are allowed: day trips are real.
    pub fn validate(&self) -> Result<(), Error> {
        check_list("loyalty_programs", self.loyalty_programs.as_deref(), 10, 64)?;
        let alliances = self
            .constraints
            .as_ref()
            .and_then(|c| c.alliances.as_deref());
        check_list("constraints.alliances", alliances, 3, 32)?;
        if let Some(pax) = self.pax
            && !(1..=Self::MAX_PAX).contains(&pax)
        {
            return Err(Error::Invalid(format!(
                "pax must be between 1 and {}, got {pax}",
                Self::MAX_PAX
            )));
        }
        self.validate_passengers()?;
        if let Some(flex) = self.flexibility
            && flex > FlightSearchParams::MAX_FLEXIBILITY_DAYS
        {
            return Err(Error::Invalid(format!(
                "flexibility must be between 0 and {} days, got {flex}",
                FlightSearchParams::MAX_FLEXIBILITY_DAYS
            )));
        }
        if self.origin == self.destination {
            return Err(Error::Invalid(format!(
                "origin and destination must differ, both are {}",
                self.origin
            )));
        }
        if let Some(ret) = self.return_date
            && ret < self.depart_date
        {
            return Err(Error::Invalid(format!(
                "return_date {ret} must not be before depart_date {}",
                self.depart_date
            )));
        }
        if let Some(max) = self.constraints.as_ref().and_then(|c| c.max_taxes)
            && !(max.is_finite() && max >= 0.0)
        {
            return Err(Error::Invalid(format!(
                "constraints.max_taxes must be a non-negative number, got {max}"
            )));
        }
        Ok(())
    }
}

/// Language of formatted strings in flight results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Locale {
    /// German.
    De,
    /// English, the default.
    #[default]
    En,
}

impl Locale {
    /// The language a passage of prose is written in: the one whose common words it uses
    /// more ("was", "die" and "man" are words of both, so they count for neither); umlauts
    /// decide a tie.
    pub fn of_passage(text: &str) -> Self {
        const GERMAN: [&str; 24] = [
            "der", "und", "das", "ist", "nicht", "mit", "für", "auf", "ein", "eine", "den", "dem",
            "des", "sich", "auch", "es", "zu", "im", "bei", "von", "wird", "werden", "oder",
            "sind",
        ];
        const ENGLISH: [&str; 24] = [
            "the", "and", "is", "are", "not", "with", "for", "on", "a", "an", "of", "to", "it",
            "this", "that", "be", "can", "or", "by", "from", "as", "at", "you", "your",
        ];
        let lower = text.to_lowercase();
        let (mut de, mut en) = (0usize, 0usize);
        for word in lower.split(|c: char| !c.is_alphanumeric()) {
            de += usize::from(GERMAN.contains(&word));
            en += usize::from(ENGLISH.contains(&word));
        }
        match de.cmp(&en) {
            std::cmp::Ordering::Greater => Self::De,
            std::cmp::Ordering::Less => Self::En,
            std::cmp::Ordering::Equal if lower.contains(['ä', 'ö', 'ü', 'ß']) => Self::De,
            std::cmp::Ordering::Equal => Self::En,
        }
    }
}

fn default_adults() -> u8 {
    1
}

fn default_max_results() -> u8 {
    5
}

/// Reads any integer and saturates it into `u8`, for fields that are clamped rather than
/// rejected: `maxResults: 1000` means "as many as allowed", `flexibility: -2` means none.
fn saturating_u8<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u8, D::Error> {
    let value = i64::deserialize(deserializer)?;
    Ok(u8::try_from(value.clamp(0, i64::from(u8::MAX))).unwrap_or(u8::MAX))
}

/// Request body of `POST /flights/award` and `POST /flights/cash`. Everything but route, date and class has a default, so a minimal
/// body works.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlightSearchParams {
    /// Departure airport.
    pub origin: IataCode,
    /// Arrival airport.
    pub destination: IataCode,
    /// Outbound travel date.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub departure_date: Date,
    /// Return date of a round trip; absent for one way. The award search searches it only with
    /// `includeReturnAwards`.
    #[serde(
        default,
        with = "iso_date::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<IsoDateSchema>")]
    pub return_date: Option<Date>,
    /// Cabin to search.
    pub travel_class: Cabin,
    /// Adult passengers, at least 1; defaults to 1.
    #[serde(default = "default_adults")]
    #[schemars(range(min = 1, max = 9))]
    pub adults: u8,
    /// Children with their own seat; adults and children together at most 9.
    #[serde(default)]
    pub children: u8,
    /// Infants on an adult's lap, at most one per adult.
    #[serde(default)]
    pub infants: u8,
    /// Only non-stop flights.
    #[serde(default)]
    pub non_stop: bool,
    /// Days searched either side of `departureDate` (clamped to 0..=3).
    #[serde(default, deserialize_with = "saturating_u8")]
    #[schemars(with = "i64")]
    pub flexibility: u8,
    /// Whether the traveller pays with miles; accepted, but neither flight function reads it.
    #[serde(default)]
    pub use_miles: bool,
    /// Award search: also search `returnDate` in the reverse direction.
    #[serde(default)]
    pub include_return_awards: bool,
    /// Results wanted (clamped to 1..=20).
    #[serde(default = "default_max_results", deserialize_with = "saturating_u8")]
    #[schemars(with = "i64")]
    pub max_results: u8,
    /// Language and number format of the display texts; English when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<Locale>,
    /// Seats.aero programmes (source ids, e.g. `lufthansa`) to restrict the award search
    /// to; empty: all. The cash search ignores it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "sources_schema")]
    pub sources: Vec<String>,
}

/// `sources`: at most 25 of the Seats.aero programmes' source ids (an unknown one is 400).
fn sources_schema(_: &mut SchemaGenerator) -> Schema {
    let ids: Vec<&str> = super::loyalty::PROGRAMMES
        .iter()
        .map(|p| p.source)
        .collect();
    json_schema!({
        "type": "array",
        "maxItems": FlightSearchParams::MAX_SOURCES,
        "items": { "type": "string", "enum": ids },
    })
}

impl FlightSearchParams {
    /// Seated passengers an upstream booking accepts at most.
    pub const MAX_SEATED: u8 = 9;
    /// The widest date window either side of the departure date.
    pub const MAX_FLEXIBILITY_DAYS: u8 = 3;
    /// Results per search at most.
    pub const MAX_RESULTS: u8 = 20;
    /// Seats.aero programmes one search may name at most.
    pub const MAX_SOURCES: usize = 25;

    /// Validates, then clamps the soft limits (flexibility to 0..=3 days, maxResults to
    /// 1..=20): what both flight functions do with a request body.
    pub fn validated(mut self) -> Result<Self, Error> {
        self.validate()?;
        self.flexibility = self.flexibility.min(Self::MAX_FLEXIBILITY_DAYS);
        self.max_results = self.max_results.clamp(1, Self::MAX_RESULTS);
        Ok(self)
    }

    /// Checks a body received over HTTP; messages name the (camelCase) field.
    pub fn validate(&self) -> Result<(), Error> {
        if self.origin == self.destination {
            return Err(Error::Invalid(format!(
                "origin and destination must differ, both are {}",
                self.origin
            )));
        }
        if self.adults == 0 {
            return Err(Error::Invalid("adults must be at least 1".into()));
        }
        let seated = u16::from(self.adults) + u16::from(self.children);
        if seated > u16::from(Self::MAX_SEATED) {
            return Err(Error::Invalid(format!(
                "adults + children must be at most {}, got {seated}",
                Self::MAX_SEATED
            )));
        }
        if self.infants > self.adults {
            return Err(Error::Invalid(format!(
                "infants ({}) must not exceed adults ({})",
                self.infants, self.adults
            )));
        }
        if let Some(ret) = self.return_date
            && ret < self.departure_date
        {
            return Err(Error::Invalid(format!(
                "returnDate {ret} must not be before departureDate {}",
                self.departure_date
            )));
        }
        if self.sources.len() > Self::MAX_SOURCES {
            return Err(Error::Invalid(format!(
                "sources: at most {} programmes, got {}",
                Self::MAX_SOURCES,
                self.sources.len()
            )));
        }
        if let Some(unknown) = self.sources.iter().find(|s| {
            !super::loyalty::PROGRAMMES
                .iter()
                .any(|p| p.source == s.as_str())
        }) {
            return Err(Error::Invalid(format!(
                "sources: {unknown:?} is not a Seats.aero programme"
            )));
        }
        Ok(())
    }
}

/// The tool's arguments as a provider request, with the default `award_only = true`.
impl From<&FlightSearchInput> for FlightSearchParams {
    fn from(input: &FlightSearchInput) -> Self {
        Self {
            origin: input.origin.clone(),
            destination: input.destination.clone(),
            departure_date: input.depart_date,
            return_date: input.return_date,
            travel_class: input.cabin,
            adults: input.pax.unwrap_or(FlightSearchInput::DEFAULT_PAX),
            children: input.children.unwrap_or(0),
            infants: input.infants.unwrap_or(0),
            non_stop: input
                .constraints
                .as_ref()
                .and_then(|c| c.nonstop_only)
                .unwrap_or(false),
            flexibility: input
                .flexibility
                .unwrap_or(0)
                .min(Self::MAX_FLEXIBILITY_DAYS),
            use_miles: input.award_only.unwrap_or(true),
            include_return_awards: input.return_date.is_some(),
            max_results: default_max_results(),
            locale: None,
            sources: super::loyalty::sources_for(
                input.loyalty_programs.as_deref().unwrap_or_default(),
            )
            .0
            .into_iter()
            .map(str::to_owned)
            .collect(),
        }
    }
}

/// Which upstream a result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Seats.aero: award seats, priced in miles.
    Seatsaero,
    /// Amadeus flight offers: cash fares.
    Amadeus,
    /// Duffel offers: cash fares.
    Duffel,
}

impl Provider {
    /// A cash fare (Amadeus, Duffel) rather than an award seat (Seats.aero).
    pub fn is_cash(self) -> bool {
        matches!(self, Self::Amadeus | Self::Duffel)
    }
}

/// One normalised offer, the same shape for award and cash results so the
/// chat formatter treats both alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlightResult {
    /// The offer's id from its upstream (cash ids prefixed with the provider, `amadeus-…`).
    pub id: String,
    /// Which upstream found the offer.
    pub provider: Provider,
    /// Total price as shown to the user, e.g. "85,000 miles + $450.00".
    pub price: String,
    /// The price for one passenger, formatted as `price`.
    pub price_per_person: String,
    /// The airline (or airlines), by name or by IATA code, as the upstream gives it.
    pub airline: String,
    /// Display name of the cabin, e.g. "Business".
    pub cabin: String,
    /// Short labels of the row: `direct`, `return`, `nonstop`, and the fare's terms as notes
    /// (`fare: <brand>`, `ticket by <date>`).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Connections of the outbound leg.
    pub total_stops: u32,
    /// Miles per person of an award seat; `None` for cash fares.
    pub miles: Option<u64>,
    /// Taxes and fees: per person on award rows; for all travellers on cash rows.
    pub taxes: Taxes,
    /// Seats left at this price, when the upstream reports a count.
    pub seats_left: Option<u32>,
    /// Where to book the row, by label (label → URL): an award row's own programme, filled
    /// with the trip and travellers where its site takes them (`award_booking`); a cash
    /// row's selling airline (`carrier_sites`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub booking_links: Option<BTreeMap<String, String>>,
    /// The outbound leg (for an award row of the return search, the return flight).
    pub outbound: FlightLeg,
    /// Return leg, when the offer covers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbound: Option<FlightLeg>,
    /// The mileage programme whose miles price an award row, by its display name
    /// ("Air Canada Aeroplan"); none on cash rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// When the upstream last saw this availability (RFC 3339): award data is cached by
    /// Seats.aero, so it may be hours old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_at: Option<String>,
    /// The same flight (same flights, times and cabin) priced by other programmes, cheapest
    /// first: one itinerary is one row, with a priced option per programme.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_programs: Vec<ProgramPrice>,
    /// The number the chat offers this flight under, which `select_flight` takes: set by
    /// the agent's `search_flights` on the flights it lists, absent from the search
    /// functions' own replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<u8>,
}

/// What one more mileage programme asks for a flight already listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgramPrice {
    /// Display name of the programme ("United MileagePlus").
    pub program: Option<String>,
    /// Total for all seated travellers, as `FlightResult::price`.
    pub price: String,
    /// The price for one passenger, as `FlightResult::price_per_person`.
    pub price_per_person: String,
    /// Miles per person.
    pub miles: Option<u64>,
    /// Taxes and fees per person.
    pub taxes: Taxes,
    /// Seats left at this price, when the programme reports a count.
    pub seats_left: Option<u32>,
    /// When Seats.aero last saw this availability (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_at: Option<String>,
    /// Booking links, by label (label → URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub booking_links: Option<BTreeMap<String, String>>,
}

impl ProgramPrice {
    /// `flight`'s price, as an option of another row of the same itinerary.
    pub fn of(flight: &FlightResult) -> Self {
        Self {
            program: flight.program.clone(),
            price: flight.price.clone(),
            price_per_person: flight.price_per_person.clone(),
            miles: flight.miles,
            taxes: flight.taxes.clone(),
            seats_left: flight.seats_left,
            seen_at: flight.seen_at.clone(),
            booking_links: flight.booking_links.clone(),
        }
    }
}

/// Taxes and fees on top of the miles (or of the fare); both unknown for some sources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Taxes {
    /// In major units of `currency` (e.g. 41.74).
    pub amount: Option<f64>,
    /// ISO 4217 code, e.g. `USD`.
    pub currency: Option<String>,
}

/// One direction of an itinerary, pre-formatted for display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlightLeg {
    /// Where and when the leg leaves.
    pub departure: FlightEndpoint,
    /// Where and when the leg arrives.
    pub arrival: FlightEndpoint,
    /// Travel time as text, e.g. `9h 10m`.
    pub duration: String,
    /// Stops as text in the request's language: `Nonstop`, `1 stop (MUC)`.
    pub stops: String,
    /// Flight numbers, comma-separated, e.g. `LH100, OS112`.
    pub flight_numbers: String,
}

/// One end of a leg: an airport and a local time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightEndpoint {
    /// IATA code of the airport.
    pub airport: String,
    /// Local time at the airport, without a zone, e.g. `2027-03-15T14:00`.
    pub time: String,
}

/// Reply of both flight functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlightSearchResult {
    /// Always true in a reply: a failed search answers with the HTTP error envelope.
    pub success: bool,
    /// The flights found.
    pub results: FlightResults,
    /// What the upstream search covered; award searches only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<SearchStats>,
}

/// Award (Seats.aero) replies have the same shape and always carry `stats`.
pub type AwardSearchResult = FlightSearchResult;

/// The flights of a reply with their count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightResults {
    /// How many flights `flights` holds.
    pub count: usize,
    /// The normalised offers.
    pub flights: Vec<FlightResult>,
}

/// What the upstream search covered, so the chat can say "3 of 42, more available".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchStats {
    /// Flights the upstream had for the search (both directions, when the return was searched).
    pub total_available: u64,
    /// Whether the upstream had more than it returned.
    pub has_more: bool,
    /// First date searched (`YYYY-MM-DD`): the departure date less the flexibility.
    pub start_date: String,
    /// Last date searched (`YYYY-MM-DD`).
    pub end_date: String,
    /// Display name of the cabin searched, e.g. "Business".
    pub cabin: String,
    /// When the requested cabin had nothing: the other cabins that have award seats on the
    /// route in the same window, with their lowest mileage cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_cabins: Vec<CabinFrom>,
}

/// A cabin that has award seats, from how many miles (per traveller).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CabinFrom {
    /// The cabin.
    pub cabin: Cabin,
    /// Its lowest mileage cost per traveller.
    pub miles_from: u64,
}

impl FlightSearchResult {
    /// A successful reply; `count` is derived so it cannot disagree with `flights`.
    pub fn new(flights: Vec<FlightResult>, stats: Option<SearchStats>) -> Self {
        Self {
            success: true,
            results: FlightResults {
                count: flights.len(),
                flights,
            },
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn input(json: &str) -> FlightSearchInput {
        serde_json::from_str(json).unwrap()
    }

    const BASE: &str =
        r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS"}"#;

    #[test]
    fn free_text_lists_are_bounded_in_schema_and_validation() {
        let schema =
            serde_json::to_value(schemars::schema_for!(FlightSearchInput)).unwrap_or_default();
        let programs = &schema["properties"]["loyalty_programs"];
        assert_eq!(programs["maxItems"], json!(10), "{programs}");
        assert_eq!(programs["items"]["maxLength"], json!(64), "{programs}");
        let alliances = &schema["properties"]["constraints"]["properties"]["alliances"];
        assert_eq!(alliances["maxItems"], json!(3), "{alliances}");

        let eleven: Vec<String> = (0..11).map(|i| format!("P{i}")).collect();
        let mut too_many = input(BASE);
        too_many.loyalty_programs = Some(eleven);
        assert!(too_many.validate().is_err());
        let mut too_long = input(BASE);
        too_long.loyalty_programs = Some(vec!["M".repeat(65)]);
        assert!(too_long.validate().is_err());
        let mut fine = input(BASE);
        fine.loyalty_programs = Some(vec!["Miles & More".into()]);
        assert!(fine.validate().is_ok());
    }

    #[test]
    fn a_passage_is_in_the_language_of_its_common_words() {
        // "was" and "die" are words of both languages: this passage is English.
        let english =
            "The programme was changed; miles die after 36 months of no activity on the account.";
        assert_eq!(Locale::of_passage(english), Locale::En);
        let german = "Meilen verfallen grundsätzlich nach 36 Monaten, für Statuskunden gibt es einen Schutz.";
        assert_eq!(Locale::of_passage(german), Locale::De);
        assert_eq!(Locale::of_passage("Zürich"), Locale::De);
        assert_eq!(Locale::of_passage("Stopovers"), Locale::En);
    }

    #[test]
    fn cabin_parses_loose_spellings_and_writes_canonical() {
        for s in [
            "PREMIUM_ECONOMY",
            "premium_economy",
            "Premium Economy",
            "premium-economy",
            " premium economy ",
        ] {
            assert_eq!(s.parse::<Cabin>().unwrap(), Cabin::PremiumEconomy, "{s}");
        }
        let c: Cabin = serde_json::from_str(r#""business""#).unwrap();
        assert_eq!(c, Cabin::Business);
        assert_eq!(serde_json::to_string(&c).unwrap(), r#""BUSINESS""#);
        assert!(serde_json::from_str::<Cabin>(r#""coach""#).is_err());
        assert_eq!(Cabin::PremiumEconomy.seatsaero_key(), "W");
        assert_eq!(Cabin::PremiumEconomy.seatsaero_api_value(), "premium");
        assert_eq!(Cabin::PremiumEconomy.display_name(), "Premium Economy");
    }

    #[test]
    fn cabin_schema_is_string_enum() {
        let schema = schemars::schema_for!(Cabin);
        assert_eq!(schema.get("type"), Some(&json!("string")));
        assert_eq!(
            schema.get("enum"),
            Some(&json!(["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS", "FIRST"]))
        );
    }

    #[test]
    fn iata_code_validates_and_normalises() {
        assert_eq!(IataCode::parse("fra").unwrap().as_str(), "FRA");
        for bad in ["FR", "FRAN", "FR1", "", "FRÄ", " FRA"] {
            let err = IataCode::parse(bad).unwrap_err();
            assert!(err.to_string().contains("IATA"), "{bad}: {err}");
        }
        let code: IataCode = serde_json::from_str(r#""jfk""#).unwrap();
        assert_eq!(serde_json::to_string(&code).unwrap(), r#""JFK""#);
        assert!(serde_json::from_str::<IataCode>(r#""JFKX""#).is_err());
    }

    #[test]
    fn input_schema_has_descriptions_and_required_fields() {
        let schema = schemars::schema_for!(FlightSearchInput);
        let v = schema.as_value();
        let required = v["required"].as_array().unwrap();
        for f in ["origin", "destination", "depart_date", "cabin"] {
            assert!(required.contains(&json!(f)), "{f}");
        }
        assert_eq!(required.len(), 4);
        let props = &v["properties"];
        assert_eq!(props["origin"]["pattern"], json!("^[A-Za-z]{3}$"));
        assert_eq!(props["origin"]["maxLength"], json!(3));
        assert!(
            props["origin"]["description"]
                .as_str()
                .unwrap()
                .contains("FRA")
        );
        assert_eq!(props["depart_date"]["format"], json!("date"));
        assert_eq!(props["pax"]["minimum"], json!(1));
        assert_eq!(props["pax"]["maximum"], json!(9));
        assert_eq!(props["pax"]["default"], json!(1));
        assert_eq!(props["cabin"]["enum"].as_array().unwrap().len(), 4);
        assert_eq!(
            props["constraints"]["properties"]["max_taxes"]["minimum"],
            json!(0)
        );
        assert!(
            v.get("$defs").is_none(),
            "no $ref for endpoints that cannot resolve it"
        );
    }

    #[test]
    fn input_ignores_unknown_fields_and_parses_dates() {
        let i = input(
            r#"{"origin":"fra","destination":"jfk","depart_date":"2025-06-01",
                "return_date":null,"cabin":"business","note":"extra"}"#,
        );
        assert_eq!(i.depart_date, date!(2025 - 06 - 01));
        assert_eq!(i.return_date, None);
        assert_eq!(i.origin.as_str(), "FRA");
        assert!(
            serde_json::from_str::<FlightSearchInput>(
                r#"{"origin":"FRA","destination":"JFK","depart_date":"01.06.2025","cabin":"FIRST"}"#
            )
            .is_err()
        );
        let out = serde_json::to_value(&i).unwrap();
        assert_eq!(out["depart_date"], json!("2025-06-01"));
        assert!(out.get("return_date").is_none());
    }

    #[test]
    fn canonical_equal_for_same_meaning() {
        let a = input(BASE);
        let b = input(
            r#"{"cabin":"business","depart_date":"2025-06-01","destination":"jfk","origin":"fra",
                "pax":1,"award_only":true,"return_date":null,"loyalty_programs":[],
                "reuse_last_request":false,
                "constraints":{"nonstop_only":false,"alliances":[]}}"#,
        );
        assert_eq!(a.canonical(), b.canonical());

        let c = input(
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS",
                "loyalty_programs":["flying blue","Miles & More"," FLYING BLUE"],
                "constraints":{"alliances":["oneworld","Star Alliance"]}}"#,
        );
        let d = input(
            r#"{"constraints":{"alliances":["star alliance","ONEWORLD"]},
                "loyalty_programs":["MILES & MORE","Flying Blue"],
                "cabin":"BUSINESS","depart_date":"2025-06-01","destination":"JFK","origin":"FRA"}"#,
        );
        assert_eq!(c.canonical(), d.canonical());
        assert_eq!(
            c.canonical()["loyalty_programs"],
            json!(["FLYING BLUE", "MILES & MORE"])
        );
    }

    #[test]
    fn canonical_differs_for_different_meaning() {
        let base = input(BASE).canonical();
        for other in [
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"FIRST"}"#,
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-02","cabin":"BUSINESS"}"#,
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS","pax":2}"#,
            r#"{"origin":"JFK","destination":"FRA","depart_date":"2025-06-01","cabin":"BUSINESS"}"#,
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS","award_only":false}"#,
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS","children":1}"#,
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS","infants":1}"#,
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"BUSINESS","flexibility":2}"#,
        ] {
            assert_ne!(input(other).canonical(), base, "{other}");
        }
    }

    /// A call taken over from a dead host is prepared again from the canonical arguments
    /// the ledger keeps (chat-router's takeover): read back, they must name the same call.
    #[test]
    fn canonical_read_back_is_the_same_canonical() {
        let rich = r#"{"origin":"fra","destination":"jfk","depart_date":"2025-06-01",
            "return_date":"2025-06-09","cabin":"premium economy","pax":2,"children":1,
            "infants":1,"flexibility":3,"award_only":false,
            "loyalty_programs":["flying blue","Miles & More"],
            "constraints":{"alliances":["oneworld"],"nonstop_only":true,"max_taxes":250}}"#;
        for text in [BASE, rich] {
            let canonical = input(text).canonical();
            let again: FlightSearchInput = serde_json::from_value(canonical.clone()).unwrap();
            assert_eq!(again.canonical(), canonical, "{text}");
        }
    }

    #[test]
    fn canonical_has_all_defaults_and_sorted_keys() {
        let text = serde_json::to_string(&input(BASE).canonical()).unwrap();
        assert_eq!(
            text,
            r#"{"award_only":true,"cabin":"BUSINESS","children":0,"constraints":{"alliances":[],"max_taxes":null,"nonstop_only":false},"depart_date":"2025-06-01","destination":"JFK","flexibility":0,"infants":0,"loyalty_programs":[],"origin":"FRA","pax":1,"return_date":null,"reuse_last_request":false}"#
        );
    }

    #[test]
    fn validate_names_the_field() {
        assert!(input(BASE).validate().is_ok());
        let cases = [
            (r#""pax":0"#, "pax"),
            (r#""pax":10"#, "pax"),
            (r#""return_date":"2025-05-31""#, "return_date"),
            (r#""constraints":{"max_taxes":-1}"#, "max_taxes"),
            (r#""pax":5,"children":5"#, "children"),
            (r#""pax":1,"infants":2"#, "infants"),
            (r#""flexibility":4"#, "flexibility"),
        ];
        for (extra, field) in cases {
            let json = BASE.replacen('{', &format!("{{{extra},"), 1);
            let err = input(&json).validate().unwrap_err();
            assert!(err.to_string().contains(field), "{extra}: {err}");
        }
        let same = input(
            r#"{"origin":"FRA","destination":"fra","depart_date":"2025-06-01","cabin":"FIRST"}"#,
        );
        assert!(same.validate().unwrap_err().to_string().contains("origin"));
        let day_trip = BASE.replacen('{', r#"{"return_date":"2025-06-01","#, 1);
        assert!(input(&day_trip).validate().is_ok());
    }

    #[test]
    fn params_from_input_follows_seed_mapping() {
        let i = input(
            r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-06-01","cabin":"FIRST",
                "return_date":"2025-06-10","constraints":{"nonstop_only":true}}"#,
        );
        let p = FlightSearchParams::from(&i);
        assert_eq!(p.adults, 1);
        assert!(p.non_stop);
        assert!(p.use_miles);
        assert!(p.include_return_awards);
        assert_eq!(p.max_results, 5);
        assert_eq!(p.flexibility, 0);
        assert_eq!(p.travel_class, Cabin::First);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["departureDate"], json!("2025-06-01"));
        assert_eq!(v["returnDate"], json!("2025-06-10"));
        assert_eq!(v["travelClass"], json!("FIRST"));
        assert_eq!(v["includeReturnAwards"], json!(true));
        assert!(v.get("locale").is_none());

        let mut one_way = i.clone();
        one_way.return_date = None;
        one_way.award_only = Some(false);
        one_way.pax = Some(3);
        let p = FlightSearchParams::from(&one_way);
        assert!(!p.include_return_awards && !p.use_miles);
        assert_eq!(p.adults, 3);
    }

    #[test]
    fn params_minimal_body_gets_defaults() {
        let p: FlightSearchParams = serde_json::from_str(
            r#"{"origin":"fra","destination":"nrt","departureDate":"2025-07-01","travelClass":"ECONOMY","locale":"de"}"#,
        )
        .unwrap();
        assert_eq!((p.adults, p.children, p.infants), (1, 0, 0));
        assert_eq!((p.max_results, p.flexibility), (5, 0));
        assert!(!p.non_stop && !p.use_miles && !p.include_return_awards);
        assert_eq!(p.locale, Some(Locale::De));
        assert_eq!(Locale::default(), Locale::En);
        assert!(p.validate().is_ok());

        let mut many = p.clone();
        many.sources = vec!["lufthansa".into(); FlightSearchParams::MAX_SOURCES + 1];
        assert!(many.validate().unwrap_err().to_string().contains("sources"));
        let mut bad = p.clone();
        bad.infants = 2;
        assert!(bad.validate().unwrap_err().to_string().contains("infants"));
        let mut bad = p;
        bad.adults = 9;
        bad.children = 1;
        assert!(bad.validate().unwrap_err().to_string().contains("children"));
    }

    fn sample_flight() -> FlightResult {
        FlightResult {
            id: "abc".into(),
            provider: Provider::Seatsaero,
            price: "85,000 miles + $450".into(),
            price_per_person: "85,000 miles + $450".into(),
            airline: "LH".into(),
            cabin: "Business".into(),
            tags: vec!["Lufthansa".into()],
            total_stops: 0,
            miles: Some(85_000),
            taxes: Taxes {
                amount: Some(450.0),
                currency: Some("USD".into()),
            },
            seats_left: None,
            booking_links: None,
            outbound: FlightLeg {
                departure: FlightEndpoint {
                    airport: "FRA".into(),
                    time: "2025-06-01T10:00".into(),
                },
                arrival: FlightEndpoint {
                    airport: "JFK".into(),
                    time: "2025-06-01T12:45".into(),
                },
                duration: "8h 45m".into(),
                stops: "Nonstop".into(),
                flight_numbers: "LH400".into(),
            },
            inbound: None,
            program: None,
            seen_at: None,
            other_programs: Vec::new(),
            option: None,
        }
    }

    #[test]
    fn result_shape_matches_seed() {
        let r = FlightSearchResult::new(
            vec![sample_flight()],
            Some(SearchStats {
                total_available: 42,
                has_more: true,
                start_date: "2025-06-01".into(),
                end_date: "2025-06-01".into(),
                cabin: "Business".into(),
                other_cabins: Vec::new(),
            }),
        );
        assert_eq!(r.results.count, 1);
        let v = serde_json::to_value(&r).unwrap();
        let f = &v["results"]["flights"][0];
        assert_eq!(f["provider"], json!("seatsaero"));
        assert_eq!(f["pricePerPerson"], json!("85,000 miles + $450"));
        assert_eq!(f["seatsLeft"], Value::Null);
        assert_eq!(f["outbound"]["flightNumbers"], json!("LH400"));
        assert!(f.get("bookingLinks").is_none() && f.get("inbound").is_none());
        assert_eq!(v["stats"]["totalAvailable"], json!(42));
        assert_eq!(v["stats"]["hasMore"], json!(true));
        let back: FlightSearchResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);

        let cash = FlightSearchResult::new(vec![], None);
        assert!(serde_json::to_value(&cash).unwrap().get("stats").is_none());
    }
}
