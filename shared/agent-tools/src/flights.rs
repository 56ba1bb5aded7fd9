//! `search_flights` (seed 000 §5): both flight functions in parallel, each allowed to fail
//! alone, results filtered by the constraints and formatted for the chat by the tool itself,
//! so the turn needs no second LLM call.

use std::fmt::Write as _;

use async_trait::async_trait;
use futures::FutureExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::flight_message::format_message;
use super::flight_rows;
use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::functions::FunctionClient;
use crate::schema::ToolSchema;
use crate::typed::Tool;
use guardrails::links::LinkPolicy;
use shared::Error;
use shared::Result;
use shared::domain::flight::{
    Cabin, FlightResult, FlightSearchInput, FlightSearchParams, FlightSearchResult, Locale,
};
use shared::domain::loyalty;
use shared::domain::session::{FlightRequestSnapshot, PendingFlightRequest, SessionStatePatch};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_output::FlightSearchOutput;
use shared::domain::tool_result::ToolExecutionResult;

/// The function of the award search.
pub const AWARD_FUNCTION: &str = "seatsaero-search";
/// seatsaero-search's route.
pub const AWARD_ROUTE: &str = "/flights/award";
/// The function of the cash search.
pub const CASH_FUNCTION: &str = "cash-search";
/// cash-search's route.
pub const CASH_ROUTE: &str = "/flights/cash";

/// Where `search_flights` searches and which booking links it keeps.
#[derive(Debug, Clone)]
pub struct FlightSearchConfig {
    /// `POST` endpoint of seatsaero-search, e.g. `https://…/flights/award`.
    pub award_url: String,
    /// `POST` endpoint of cash-search, e.g. `https://…/flights/cash`.
    pub cash_url: String,
    /// Booking links that may reach the client and the model (`ANSWER_LINK_HOSTS`).
    pub links: LinkPolicy,
}

/// `search_flights`: award and cash flights side by side, asking for what is missing.
pub struct SearchFlightsTool {
    functions: FunctionClient,
    config: FlightSearchConfig,
}

/// `search_flights`' canonical request: a search to run, or what is known of one that
/// still lacks something.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged, try_from = "Value")]
pub enum FlightRequest {
    /// What is known of a search that still lacks something.
    Gathering(Gathering),
    /// A complete search.
    Search(FlightSearchInput),
}

/// Read back as the code wrote it: a kept request if it is one, else a search. (Not
/// serde's untagged matching, which buffers the value and loses the custom field formats.)
impl TryFrom<Value> for FlightRequest {
    type Error = serde_json::Error;

    fn try_from(value: Value) -> std::result::Result<Self, Self::Error> {
        match serde_json::from_value::<Gathering>(value.clone()) {
            Ok(gathering) => Ok(Self::Gathering(gathering)),
            Err(_) => serde_json::from_value(value).map(Self::Search),
        }
    }
}

impl SearchFlightsTool {
    /// The tool over `functions` with `config`.
    pub fn new(functions: FunctionClient, config: FlightSearchConfig) -> Self {
        Self { functions, config }
    }

    async fn search(
        &self,
        service: &'static str,
        url: &str,
        params: &FlightSearchParams,
        ctx: &ToolContext,
    ) -> Result<FlightSearchResult> {
        self.functions.post_json(service, url, params, ctx).await
    }
}

/// The fields without which no search can run; what is missing is asked for.
const REQUIRED: [&str; 4] = ["origin", "destination", "depart_date", "cabin"];

impl SearchFlightsTool {
    /// Both searches in parallel. Whichever ends first is reported while the other still
    /// runs, so a slow provider does not leave the user looking at nothing.
    async fn search_both(
        &self,
        input: &FlightSearchInput,
        ctx: &ToolContext,
    ) -> (Result<FlightSearchResult>, Result<FlightSearchResult>) {
        let mut params = FlightSearchParams::from(input);
        params.locale = Some(ctx.locale);
        let award = self.search("seatsaero-search", &self.config.award_url, &params, ctx);
        let cash = self.search("cash-search", &self.config.cash_url, &params, ctx);
        tokio::pin!(award, cash);
        tokio::select! {
            award = &mut award => match (&mut cash).now_or_never() {
                Some(cash) => (award, cash),
                None => {
                    let count = matches_of(&award, input);
                    ctx.progress.report(first_done(Search::Award, count, ctx.locale));
                    (award, cash.await)
                }
            },
            cash = &mut cash => match (&mut award).now_or_never() {
                Some(award) => (award, cash),
                None => {
                    let count = matches_of(&cash, input);
                    ctx.progress.report(first_done(Search::Cash, count, ctx.locale));
                    (award.await, cash)
                }
            },
        }
    }
}

/// Fills what the LLM left out, in order of precedence: the request being gathered over
/// the last turns, the last search when the LLM asks to reuse it, the user's remembered
/// preferences. Explicit arguments always win.
fn fill_gaps(args: &mut Value, ctx: &ToolContext) {
    let state = &ctx.session_state;
    let reuse = args
        .get("reuse_last_request")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(object) = args.as_object_mut() else {
        return;
    };
    let mut fill = |from: Option<Value>| {
        if let Some(Value::Object(from)) = from {
            for (key, value) in from {
                if object.get(&key).is_none_or(Value::is_null) {
                    object.insert(key, value);
                }
            }
        }
    };
    fill(state.pending_flight_request.as_ref().map(|p| json!(p)));
    if reuse {
        fill(state.last_flight_request.as_ref().map(|l| json!(l)));
    }
    fill(Some(Value::Object(
        ctx.memory.preferences.as_search_defaults(),
    )));
}

/// Models often write `"business"` or `"Premium Economy"`; the schema's enum is strict, so
/// normalise before validating instead of spending a repair round on it.
fn normalise_cabin(args: &mut Value) {
    if let Some(cabin) = args.get_mut("cabin")
        && let Some(parsed) = cabin.as_str().and_then(|c| c.parse::<Cabin>().ok())
    {
        *cabin = Value::String(parsed.as_str().to_owned());
    }
}

#[async_trait]
impl Tool for SearchFlightsTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("search_flights"),
        label: Label {
            en: "the flight search",
            de: "die Flugsuche",
        },
        title: Label {
            en: "Flight search",
            de: "Flugsuche",
        },
        mcp: McpExposure::Served,
    };
    /// The model's object as sent: a complete search or part of one (see `prepare`).
    type Args = serde_json::Map<String, Value>;
    type Request = FlightRequest;
    type Output = FlightSearchOutput;

    fn build(deps: &ToolDeps) -> Result<Self> {
        Ok(Self::new(
            deps.functions.clone(),
            FlightSearchConfig {
                award_url: deps.urls.url(AWARD_FUNCTION, AWARD_ROUTE)?,
                cash_url: deps.urls.url(CASH_FUNCTION, CASH_ROUTE)?,
                links: deps.links.clone(),
            },
        ))
    }

    /// [`FlightSearchInput`]'s schema without required fields: a search with details
    /// missing asks for them instead of being refused.
    fn schema() -> Result<ToolSchema> {
        ToolSchema::gathering::<FlightSearchInput>(Self::INFO.name)?
            .with_output::<FlightSearchOutput>()
    }

    /// Gaps filled from the chat and the user's preferences; lenient cabin spellings.
    fn tidy(args: &mut Value, ctx: &ToolContext) {
        fill_gaps(args, ctx);
        normalise_cabin(args);
    }

    fn prepare(&self, args: Self::Args, ctx: &ToolContext) -> Result<FlightRequest> {
        let missing: Vec<&str> = REQUIRED
            .into_iter()
            .filter(|key| args.get(*key).is_none_or(Value::is_null))
            .collect();
        let args = Value::Object(args);
        if !missing.is_empty() {
            // What is there must still be right; the rest is asked for.
            let pending: PendingFlightRequest = from_args(args)?;
            check_not_past(pending.depart_date, ctx.today)?;
            let missing = missing.into_iter().map(str::to_owned).collect();
            return Ok(FlightRequest::Gathering(Gathering { pending, missing }));
        }
        let input: FlightSearchInput = from_args(args)?;
        input.validate()?;
        check_not_past(Some(input.depart_date), ctx.today)?;
        Ok(FlightRequest::Search(input))
    }

    fn canonical(request: &FlightRequest) -> Result<Value> {
        Ok(match request {
            FlightRequest::Gathering(gathering) => serde_json::to_value(gathering)?,
            FlightRequest::Search(input) => input.canonical(),
        })
    }

    async fn run(&self, ctx: &ToolContext, request: FlightRequest) -> Result<ToolExecutionResult> {
        let input = match request {
            FlightRequest::Gathering(gathering) => return Ok(gathering.ask(ctx.locale)),
            FlightRequest::Search(input) => input,
        };
        let (award, cash) = self.search_both(&input, ctx).await;
        let mut failed = Vec::new();
        let award = award
            .inspect_err(|e| {
                tracing::warn!(error = %e, "award search failed");
                failed.push("award");
            })
            .ok();
        let cash = cash
            .inspect_err(|e| {
                tracing::warn!(error = %e, "cash search failed");
                failed.push("cash");
            })
            .ok();
        if award.is_none() && cash.is_none() {
            // Both down: nothing to show. An error lets the pipeline record `failed`.
            return Err(Error::Upstream {
                service: "flight search",
                message: "both flight searches failed".into(),
            });
        }
        let mut award = award.map(|r| filtered(r, &input));
        let mut cash = cash.map(|r| filtered(r, &input));
        let links_dropped = [award.as_mut(), cash.as_mut()]
            .into_iter()
            .flatten()
            .map(|r| drop_foreign_links(r, &self.config.links))
            .sum::<usize>();
        if links_dropped > 0 {
            tracing::warn!(
                links_dropped,
                "flight results carried booking links that are not https, not on ANSWER_LINK_HOSTS or for another route or date; dropped"
            );
        }
        let (text, offered) = format_message(
            &input,
            award.as_mut(),
            cash.as_mut(),
            ctx.locale,
            time::OffsetDateTime::now_utc(),
        );
        let award_count = award.as_ref().map_or(0, |r| r.results.count);
        let cash_count = cash.as_ref().map_or(0, |r| r.results.count);
        let patch = SessionStatePatch {
            last_flight_request: Some(Some(FlightRequestSnapshot::from(&input))),
            pending_flight_request: Some(None),
            offered_flights: Some(offered),
            ..Default::default()
        };
        let output = FlightSearchOutput {
            seats_result: award,
            cash_result: cash,
            missing: Vec::new(),
        };
        let mut result = ToolExecutionResult::succeeded(text.message)
            .with_answer(text.answer)
            .with_raw(json!(output));
        if let Some(note) = unknown_names_note(&input, ctx.locale == Locale::De) {
            result.append(&format!("\n\n{note}"));
        }
        if links_dropped > 0 {
            result = result.with_metadata("links_dropped", links_dropped);
        }
        Ok(result
            .with_state_patch(patch)
            .with_metadata("mode", "flights")
            .with_metadata("award_count", award_count)
            .with_metadata("cash_count", cash_count)
            .with_metadata("failed_providers", json!(failed)))
    }

    fn answers_directly(&self) -> bool {
        true
    }

    /// The request carries everything (preferences were filled in by `prepare`), and the
    /// message depends only on it, the language and the two searches asked.
    fn cache_scope(&self) -> Option<String> {
        Some(format!(
            "{} {}",
            self.config.award_url, self.config.cash_url
        ))
    }
}

/// The model's arguments (already checked against the schema) as `T`.
fn from_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|e| Error::Invalid(e.to_string()))
}

/// The two searches of `search_flights`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search {
    Award,
    Cash,
}

/// How many of a search's flights pass the request's filters; `None` if it failed.
fn matches_of(result: &Result<FlightSearchResult>, input: &FlightSearchInput) -> Option<usize> {
    let result = result.as_ref().ok()?.clone();
    Some(filtered(result, input).results.count)
}

/// The progress report when `done` ended first (with `count` matches, `None`: failed) and
/// the other search is still running.
fn first_done(done: Search, count: Option<usize>, locale: Locale) -> String {
    let de = locale == Locale::De;
    match (done, count, de) {
        (Search::Award, Some(n), true) => {
            format!("Prämiensuche fertig: {n} Treffer. Die Tarifsuche läuft noch …")
        }
        (Search::Award, Some(n), false) => {
            format!("Award search done: {n} found. Still checking cash fares …")
        }
        (Search::Award, None, true) => {
            "Prämiensuche nicht erreichbar. Die Tarifsuche läuft noch …".into()
        }
        (Search::Award, None, false) => {
            "Award search unavailable. Still checking cash fares …".into()
        }
        (Search::Cash, Some(n), true) => {
            format!("Tarifsuche fertig: {n} Treffer. Die Prämiensuche läuft noch …")
        }
        (Search::Cash, Some(n), false) => {
            format!("Cash fares done: {n} found. Still searching award seats …")
        }
        (Search::Cash, None, true) => {
            "Tarifsuche nicht erreichbar. Die Prämiensuche läuft noch …".into()
        }
        (Search::Cash, None, false) => {
            "Cash fares unavailable. Still searching award seats …".into()
        }
    }
}

/// The user's date, not UTC's: late in the evening in San Francisco it is already tomorrow
/// in UTC, and early in the morning in Sydney it is still yesterday.
fn check_not_past(depart: Option<time::Date>, today: time::Date) -> Result<()> {
    match depart {
        Some(date) if date < today => Err(Error::Invalid(format!(
            "depart_date {date} is in the past: today is {today} for the user"
        ))),
        _ => Ok(()),
    }
}

/// A flight request that lacks something no search can run without: kept in the chat's
/// `pending_flight_request` and completed by the next call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gathering {
    pending: PendingFlightRequest,
    missing: Vec<String>,
}

impl Gathering {
    /// The question to the user (the answer of this turn) and the kept request.
    fn ask(self, locale: Locale) -> ToolExecutionResult {
        let de = locale == Locale::De;
        let names: Vec<&str> = self.missing.iter().map(|m| missing_name(m, de)).collect();
        let p = &self.pending;
        let known: Vec<String> = [
            p.origin
                .as_ref()
                .map(|o| format!("{} {o}", if de { "von" } else { "from" })),
            p.destination
                .as_ref()
                .map(|d| format!("{} {d}", if de { "nach" } else { "to" })),
            p.depart_date
                .map(|d| format!("{} {d}", if de { "am" } else { "on" })),
            p.cabin.map(|c| c.display_name().to_owned()),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut message = if de {
            format!("Für die Flugsuche fehlt mir noch: {}.", names.join(", "))
        } else {
            format!("To search flights I still need: {}.", names.join(", "))
        };
        if !known.is_empty() {
            let _ = write!(
                message,
                " {} {}.",
                if de { "Bisher:" } else { "So far:" },
                known.join(", ")
            );
        }
        let patch = SessionStatePatch {
            pending_flight_request: Some(Some(self.pending)),
            ..Default::default()
        };
        let output = FlightSearchOutput {
            missing: self.missing.clone(),
            ..FlightSearchOutput::default()
        };
        ToolExecutionResult::succeeded(message)
            .with_raw(json!(output))
            .with_state_patch(patch)
            .with_metadata("mode", "pending")
            .with_metadata("missing", json!(self.missing))
    }
}

/// What a missing field is called for the user.
fn missing_name(field: &str, de: bool) -> &'static str {
    match (field, de) {
        ("origin", true) => "der Abflughafen",
        ("origin", false) => "the departure airport",
        ("destination", true) => "das Ziel",
        ("destination", false) => "the destination",
        ("depart_date", true) => "das Reisedatum",
        ("depart_date", false) => "the travel date",
        (_, true) => "die Reiseklasse (Economy, Premium Economy, Business oder First)",
        (_, false) => "the cabin (Economy, Premium Economy, Business or First)",
    }
}

/// Removes booking links the policy does not allow (not `https`, or a host off the list):
/// they would reach the client's flight cards and the model; and links that name another
/// route or date than their row's. Returns how many went.
fn drop_foreign_links(result: &mut FlightSearchResult, links: &LinkPolicy) -> usize {
    let mut dropped = 0;
    for flight in &mut result.results.flights {
        let maps = std::iter::once(&mut flight.booking_links).chain(
            flight
                .other_programs
                .iter_mut()
                .map(|o| &mut o.booking_links),
        );
        for map_slot in maps {
            if let Some(map) = map_slot.as_mut() {
                let before = map.len();
                map.retain(|_, url| links.allows(url));
                dropped += before - map.len();
                if map.is_empty() {
                    *map_slot = None;
                }
            }
        }
        dropped += flight_rows::drop_links_of_other_trips(flight);
    }
    dropped
}

/// Applies the constraints the flight functions do not: the taxes ceiling, non-stop, and
/// the alliances (every carrier of the itinerary, by its flight numbers, must belong to
/// one of them; a flight whose carriers are unknown is dropped). Loyalty programmes went
/// to Seats.aero as its `sources`. Then one row per itinerary (`flight_rows::merged`).
fn filtered(mut result: FlightSearchResult, input: &FlightSearchInput) -> FlightSearchResult {
    let constraints = input.constraints.clone().unwrap_or_default();
    let (alliances, _) =
        loyalty::alliances_for(constraints.alliances.as_deref().unwrap_or_default());
    let keep = |f: &FlightResult| {
        let taxes_ok = match (constraints.max_taxes, f.taxes.amount) {
            (Some(max), Some(amount)) => amount <= max,
            _ => true,
        };
        let stops_ok = !constraints.nonstop_only.unwrap_or(false) || f.total_stops == 0;
        let alliance_ok = alliances.is_empty() || {
            let codes = carriers(f);
            !codes.is_empty()
                && codes
                    .iter()
                    .all(|code| alliances.iter().any(|a| a.has(code)))
        };
        taxes_ok && stops_ok && alliance_ok
    };
    result.results.flights.retain(keep);
    result.results.flights = flight_rows::merged(std::mem::take(&mut result.results.flights));
    result.results.count = result.results.flights.len();
    result
}

/// The airlines (IATA codes) flying a result, from its legs' flight numbers ("LH400, UA 12").
fn carriers(flight: &FlightResult) -> Vec<String> {
    std::iter::once(&flight.outbound)
        .chain(flight.inbound.as_ref())
        .flat_map(|leg| leg.flight_numbers.split(','))
        .filter_map(|number| {
            let code = number.trim().get(..2)?;
            code.chars()
                .all(|c| c.is_ascii_alphanumeric())
                .then(|| code.to_ascii_uppercase())
        })
        .collect()
}

/// What the user asked for that could not be applied: programmes and alliances this
/// deployment does not know. Shown with the results, so the user and the model see it.
fn unknown_names_note(input: &FlightSearchInput, de: bool) -> Option<String> {
    let (_, programmes) =
        loyalty::sources_for(input.loyalty_programs.as_deref().unwrap_or_default());
    let alliances = input
        .constraints
        .as_ref()
        .and_then(|c| c.alliances.as_deref())
        .map(|a| loyalty::alliances_for(a).1)
        .unwrap_or_default();
    let mut notes = Vec::new();
    if !programmes.is_empty() {
        let list = programmes.join(", ");
        notes.push(if de {
            format!(
                "Diese Meilenprogramme kenne ich nicht: {list}. Ich habe in allen anderen gesucht."
            )
        } else {
            format!("I don't know these mileage programmes: {list}. I searched the others.")
        });
    }
    if !alliances.is_empty() {
        let list = alliances.join(", ");
        notes.push(if de {
            format!("Diese Allianzen kenne ich nicht (bekannt: Star Alliance, oneworld, SkyTeam): {list}.")
        } else {
            format!("I don't know these alliances (known: Star Alliance, oneworld, SkyTeam): {list}.")
        });
    }
    (!notes.is_empty()).then(|| notes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::domain::memory::UserMemory;
    use shared::domain::session::SessionState;
    use std::sync::Arc;

    fn ctx(state: SessionState, memory: Value) -> ToolContext {
        ToolContext {
            user_id: "u".into(),
            chat_id: "c".into(),
            session_state: state,
            memory: Arc::new(UserMemory {
                preferences: serde_json::from_value(memory).unwrap_or_default(),
                notes: Vec::new(),
            }),
            today: time::macros::date!(2026 - 01 - 01),
            locale: Locale::En,
            deadline: std::time::Instant::now(),
            progress: Default::default(),
            trace_header: None,
        }
    }

    fn state_with_last() -> SessionState {
        SessionState {
            last_flight_request: serde_json::from_value(json!({
                "origin": "FRA", "destination": "JFK", "depart_date": "2026-03-15",
                "cabin": "BUSINESS", "pax": 2
            }))
            .ok(),
            pending_flight_request: serde_json::from_value(json!({"destination": "LHR"})).ok(),
            ..Default::default()
        }
    }

    #[test]
    fn explicit_beats_pending_beats_last_beats_preferences() {
        let prefs = json!({"home_airport": "MUC", "cabin": "ECONOMY", "pax": 3, "children": 1});
        let mut args = json!({"reuse_last_request": true, "cabin": "FIRST"});
        fill_gaps(&mut args, &ctx(state_with_last(), prefs.clone()));
        assert_eq!(args["origin"], json!("FRA"), "last beats preferences");
        assert_eq!(args["destination"], json!("LHR"), "pending beats last");
        assert_eq!(args["cabin"], json!("FIRST"), "explicit wins");
        assert_eq!(args["pax"], json!(2));
        assert_eq!(args["children"], json!(1), "preferences fill the rest");

        let mut args = json!({"cabin": "FIRST"});
        fill_gaps(&mut args, &ctx(state_with_last(), json!({})));
        assert!(
            args.get("origin").is_none(),
            "the last search only on request"
        );
        assert_eq!(args["destination"], json!("LHR"));
    }

    #[test]
    fn cabin_spelling_is_normalised() {
        let mut args = json!({"cabin": "premium economy"});
        normalise_cabin(&mut args);
        assert_eq!(args["cabin"], json!("PREMIUM_ECONOMY"));
    }
}
