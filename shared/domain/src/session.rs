//! Per-chat session state (seed 000 §13) and the partial updates tools return.
//!
//! A [`SessionStatePatch`] is built so that patches compose: absent parts leave the state
//! alone, preferences merge key by key and memory only appends. That is what lets two
//! concurrent patches on one chat both survive an optimistic-concurrency retry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::{DefaultOnNull, serde_as};
use time::Date;

use super::flight::{
    Cabin, FlightConstraints, FlightResult, FlightSearchInput, IataCode, Locale, iso_date,
};
use super::schema::IsoDateSchema;

/// Context the tools keep between turns. Every part is optional so old or partial stored
/// states still load; unknown keys are ignored.
#[serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionState {
    /// The last flight search that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_flight_request: Option<FlightRequestSnapshot>,
    /// A flight search still missing details, kept until the user gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_flight_request: Option<PendingFlightRequest>,
    /// A question the knowledge base could not answer, for `ask_gpt` to take up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_gpt_query: Option<PendingGptQuery>,
    /// The flights the last search listed, numbered as the user saw them, so
    /// `select_flight` can take "option 3".
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<OfferedFlight>")]
    pub offered_flights: Vec<OfferedFlight>,
    /// The flights the user picked (`select_flight`), as [`OfferedFlight`]s.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<Value>")]
    pub selected_itineraries: Vec<Value>,
    /// Preferences kept with the chat, by name; the turn's prompt shows them to the model.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schemars(with = "Map<String, Value>")]
    pub preferences: Map<String, Value>,
    /// Notes kept with the chat. Not what `remember` keeps for the user ([`crate::memory`]).
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<MemoryEntry>")]
    pub memory: Vec<MemoryEntry>,
    /// The user's IANA time zone, as last sent with a message: "today" is their date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The language of the user's texts, as last asked for or written: a short message
    /// ("ok") keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Locale>,
    /// The agent profile that answered last (a handoff changes it): the next turn starts
    /// there unless its request names an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_agent: Option<String>,
}

fn default_pax() -> u8 {
    FlightSearchInput::DEFAULT_PAX
}

/// The last flight search that ran, so `reuse_last_request` and follow-ups ("and in
/// First?") can fill in what the user did not repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightRequestSnapshot {
    /// Departure airport.
    pub origin: IataCode,
    /// Arrival airport.
    pub destination: IataCode,
    /// Outbound travel date.
    #[serde(with = "iso_date")]
    #[schemars(with = "IsoDateSchema")]
    pub depart_date: Date,
    /// Return date; `None` for one way.
    #[serde(
        default,
        with = "iso_date::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<IsoDateSchema>")]
    pub return_date: Option<Date>,
    /// Travel class.
    pub cabin: Cabin,
    /// Adult passengers (the default applied).
    #[serde(default = "default_pax")]
    pub pax: u8,
    /// Children with their own seat; `None` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<u8>,
    /// Infants on an adult's lap; `None` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infants: Option<u8>,
    /// Days either side of the departure date; `None` for that day only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flexibility: Option<u8>,
    /// The search's `award_only`, as the model sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub award_only: Option<bool>,
    /// The frequent-flyer programmes searched, as the model named them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loyalty_programs: Option<Vec<String>>,
    /// The search's extra filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<FlightConstraints>,
}

/// What a successful search records as `last_flight_request`.
impl From<&FlightSearchInput> for FlightRequestSnapshot {
    fn from(input: &FlightSearchInput) -> Self {
        Self {
            origin: input.origin.clone(),
            destination: input.destination.clone(),
            depart_date: input.depart_date,
            return_date: input.return_date,
            cabin: input.cabin,
            pax: input.pax.unwrap_or(FlightSearchInput::DEFAULT_PAX),
            children: input.children.filter(|n| *n > 0),
            infants: input.infants.filter(|n| *n > 0),
            flexibility: input.flexibility.filter(|n| *n > 0),
            award_only: input.award_only,
            loyalty_programs: input.loyalty_programs.clone(),
            constraints: input.constraints.clone(),
        }
    }
}

/// The reverse, for `reuse_last_request`: a snapshot is a complete search.
impl From<&FlightRequestSnapshot> for FlightSearchInput {
    fn from(s: &FlightRequestSnapshot) -> Self {
        Self {
            origin: s.origin.clone(),
            destination: s.destination.clone(),
            depart_date: s.depart_date,
            return_date: s.return_date,
            pax: Some(s.pax),
            children: s.children,
            infants: s.infants,
            flexibility: s.flexibility,
            cabin: s.cabin,
            award_only: s.award_only,
            loyalty_programs: s.loyalty_programs.clone(),
            constraints: s.constraints.clone(),
            reuse_last_request: None,
        }
    }
}

/// A flight search the user has started but not fully specified yet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingFlightRequest {
    /// Departure airport, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<IataCode>,
    /// Arrival airport, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<IataCode>,
    /// Outbound travel date, once known.
    #[serde(
        default,
        with = "iso_date::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<IsoDateSchema>")]
    pub depart_date: Option<Date>,
    /// Return date, if one was given.
    #[serde(
        default,
        with = "iso_date::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<IsoDateSchema>")]
    pub return_date: Option<Date>,
    /// Travel class, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cabin: Option<Cabin>,
    /// Adult passengers, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pax: Option<u8>,
    /// Children with their own seat, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<u8>,
    /// Infants on an adult's lap, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infants: Option<u8>,
    /// Days either side of the departure date, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flexibility: Option<u8>,
    /// The search's `award_only`, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub award_only: Option<bool>,
    /// Frequent-flyer programmes to search, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loyalty_programs: Option<Vec<String>>,
    /// Extra filters, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<FlightConstraints>,
}

/// One flight of a search's list, under the number shown to the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OfferedFlight {
    /// The number the user saw the flight under.
    pub option: u8,
    /// The flight as the search returned it.
    pub flight: FlightResult,
}

/// A question the knowledge base could not answer, kept so `ask_gpt` can pick it up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PendingGptQuery {
    /// The question, as the knowledge base was asked it.
    pub query: String,
    /// When it was asked (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<String>,
}

/// A note kept in a chat's session state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryEntry {
    /// What kind of note it is (`type` on the wire, e.g. `note`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The note's text.
    pub content: String,
    /// When it was kept (RFC 3339).
    pub created_at: String,
}

/// A partial update, on the wire like the seed's `Partial<SessionState>`.
///
/// - `last_flight_request`, `pending_flight_request`, `pending_gpt_query`: absent = leave,
///   `null` = clear, value = replace.
/// - `offered_flights`, `selected_itineraries`: replaced when present (send `[]` to clear).
/// - `preferences`: merged key by key; a `null` value removes the key.
/// - `memory`: appended.
#[serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStatePatch {
    /// Absent leaves it, `null` clears it, a value replaces it.
    #[serde(
        default,
        with = "::serde_with::rust::double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_flight_request: Option<Option<FlightRequestSnapshot>>,
    /// Absent leaves it, `null` clears it, a value replaces it.
    #[serde(
        default,
        with = "::serde_with::rust::double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub pending_flight_request: Option<Option<PendingFlightRequest>>,
    /// Absent leaves it, `null` clears it, a value replaces it.
    #[serde(
        default,
        with = "::serde_with::rust::double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub pending_gpt_query: Option<Option<PendingGptQuery>>,
    /// Replaced when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_flights: Option<Vec<OfferedFlight>>,
    /// Replaced when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_itineraries: Option<Vec<Value>>,
    /// Merged key by key; a `null` value removes the key.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub preferences: Map<String, Value>,
    /// Appended.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryEntry>,
    /// Replaces the remembered time zone when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Replaces the remembered language when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Locale>,
    /// Replaces the active agent when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_agent: Option<String>,
}

impl SessionStatePatch {
    /// True when applying the patch would change nothing, so the write can be skipped.
    pub fn is_empty(&self) -> bool {
        self.last_flight_request.is_none()
            && self.pending_flight_request.is_none()
            && self.pending_gpt_query.is_none()
            && self.offered_flights.is_none()
            && self.selected_itineraries.is_none()
            && self.preferences.is_empty()
            && self.memory.is_empty()
            && self.timezone.is_none()
            && self.language.is_none()
            && self.active_agent.is_none()
    }

    /// Folds a later patch into this one, so several tools' patches from one turn can be
    /// written at once: applying the result equals applying `self`, then `later`.
    pub fn merge(&mut self, later: SessionStatePatch) {
        if later.last_flight_request.is_some() {
            self.last_flight_request = later.last_flight_request;
        }
        if later.pending_flight_request.is_some() {
            self.pending_flight_request = later.pending_flight_request;
        }
        if later.pending_gpt_query.is_some() {
            self.pending_gpt_query = later.pending_gpt_query;
        }
        if later.offered_flights.is_some() {
            self.offered_flights = later.offered_flights;
        }
        if later.selected_itineraries.is_some() {
            self.selected_itineraries = later.selected_itineraries;
        }
        // Null markers are kept: they must still remove the key from the stored state.
        self.preferences.extend(later.preferences);
        self.memory.extend(later.memory);
        if later.timezone.is_some() {
            self.timezone = later.timezone;
        }
        if later.language.is_some() {
            self.language = later.language;
        }
        if later.active_agent.is_some() {
            self.active_agent = later.active_agent;
        }
    }
}

impl SessionState {
    /// Applies a patch with the semantics documented on [`SessionStatePatch`].
    pub fn apply(&mut self, patch: &SessionStatePatch) {
        if let Some(v) = &patch.last_flight_request {
            self.last_flight_request.clone_from(v);
        }
        if let Some(v) = &patch.pending_flight_request {
            self.pending_flight_request.clone_from(v);
        }
        if let Some(v) = &patch.pending_gpt_query {
            self.pending_gpt_query.clone_from(v);
        }
        if let Some(v) = &patch.offered_flights {
            self.offered_flights.clone_from(v);
        }
        if let Some(v) = &patch.selected_itineraries {
            self.selected_itineraries.clone_from(v);
        }
        for (key, value) in &patch.preferences {
            if value.is_null() {
                self.preferences.remove(key);
            } else {
                self.preferences.insert(key.clone(), value.clone());
            }
        }
        self.memory.extend(patch.memory.iter().cloned());
        if let Some(zone) = &patch.timezone {
            self.timezone = Some(zone.clone());
        }
        if patch.language.is_some() {
            self.language = patch.language;
        }
        if let Some(agent) = &patch.active_agent {
            self.active_agent = Some(agent.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::date;

    fn snapshot() -> FlightRequestSnapshot {
        let input: FlightSearchInput = serde_json::from_value(json!({
            "origin": "fra", "destination": "jfk", "depart_date": "2025-06-01",
            "cabin": "BUSINESS", "loyalty_programs": ["Miles & More"],
        }))
        .unwrap();
        FlightRequestSnapshot::from(&input)
    }

    fn patch(v: Value) -> SessionStatePatch {
        serde_json::from_value(v).unwrap()
    }

    fn memory(content: &str) -> MemoryEntry {
        MemoryEntry {
            kind: "note".into(),
            content: content.into(),
            created_at: "2025-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn snapshot_from_input_applies_pax_default() {
        let s = snapshot();
        assert_eq!(s.pax, 1);
        assert_eq!(s.origin.as_str(), "FRA");
        assert_eq!(s.depart_date, date!(2025 - 06 - 01));
        let back = FlightSearchInput::from(&s);
        assert_eq!(back.cabin, Cabin::Business);
        assert_eq!(back.pax, Some(1));
    }

    #[test]
    fn state_round_trips_and_skips_empty_parts() {
        assert_eq!(
            serde_json::to_value(SessionState::default()).unwrap(),
            json!({})
        );
        let state: SessionState = serde_json::from_value(json!({
            "last_flight_request": {
                "origin": "FRA", "destination": "JFK", "depart_date": "2025-06-01",
                "return_date": null, "cabin": "BUSINESS", "pax": 2
            },
            "pending_flight_request": null,
            "preferences": {"seat": "aisle"},
            "memory": null,
            "something_new": 1
        }))
        .unwrap();
        assert_eq!(state.last_flight_request.as_ref().unwrap().pax, 2);
        assert!(state.memory.is_empty());
        let v = serde_json::to_value(&state).unwrap();
        assert!(v.get("pending_flight_request").is_none());
        assert!(v.get("memory").is_none());
        assert_eq!(serde_json::from_value::<SessionState>(v).unwrap(), state);
    }

    #[test]
    fn leave_clear_replace() {
        let mut state = SessionState {
            last_flight_request: Some(snapshot()),
            pending_gpt_query: Some(PendingGptQuery {
                query: "q".into(),
                asked_at: None,
            }),
            ..Default::default()
        };
        let before = state.clone();

        state.apply(&patch(json!({})));
        assert_eq!(state, before, "absent leaves");

        state.apply(&patch(json!({"pending_gpt_query": null})));
        assert_eq!(state.pending_gpt_query, None, "null clears");
        assert_eq!(state.last_flight_request, before.last_flight_request);

        state.apply(&patch(json!({
            "pending_flight_request": {"origin": "muc", "flexibility": 3},
            "selected_itineraries": [{"id": "a"}]
        })));
        let pending = state.pending_flight_request.as_ref().unwrap();
        assert_eq!(pending.origin.as_ref().unwrap().as_str(), "MUC");
        assert_eq!(pending.flexibility, Some(3));
        assert_eq!(state.selected_itineraries, vec![json!({"id": "a"})]);

        state.apply(&patch(json!({"selected_itineraries": []})));
        assert!(state.selected_itineraries.is_empty());
    }

    #[test]
    fn preferences_merge_and_null_removes() {
        let mut state = SessionState::default();
        state.apply(&patch(
            json!({"preferences": {"seat": "aisle", "alliance": "star"}}),
        ));
        state.apply(&patch(
            json!({"preferences": {"seat": "window", "alliance": null}}),
        ));
        state.apply(&patch(json!({"preferences": {"home": "FRA"}})));
        assert_eq!(
            Value::Object(state.preferences),
            json!({"seat": "window", "home": "FRA"})
        );
    }

    #[test]
    fn memory_appends() {
        let mut state = SessionState {
            memory: vec![memory("one")],
            ..Default::default()
        };
        let p = SessionStatePatch {
            memory: vec![memory("two")],
            ..Default::default()
        };
        state.apply(&p);
        state.apply(&p);
        let contents: Vec<_> = state.memory.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["one", "two", "two"]);
        assert_eq!(
            serde_json::to_value(&state.memory[0]).unwrap()["type"],
            json!("note")
        );
    }

    #[test]
    fn patch_json_round_trip_keeps_explicit_null() {
        let p = SessionStatePatch {
            last_flight_request: Some(Some(snapshot())),
            pending_flight_request: Some(None),
            preferences: Map::from_iter([("seat".to_string(), Value::Null)]),
            ..Default::default()
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["pending_flight_request"], Value::Null);
        assert!(
            v.as_object()
                .unwrap()
                .contains_key("pending_flight_request")
        );
        assert!(v.get("pending_gpt_query").is_none());
        assert!(v.get("memory").is_none());
        assert_eq!(v["last_flight_request"]["depart_date"], json!("2025-06-01"));
        let back: SessionStatePatch = serde_json::from_value(v).unwrap();
        assert_eq!(back, p);
        assert!(!back.is_empty());
        assert!(SessionStatePatch::default().is_empty());
        assert_eq!(
            serde_json::to_value(SessionStatePatch::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn merged_patch_equals_sequential_application() {
        let a = patch(json!({
            "pending_gpt_query": {"query": "q"},
            "preferences": {"seat": "aisle", "meal": "veg"},
            "memory": [{"type": "note", "content": "a", "created_at": "t"}]
        }));
        let b = patch(json!({
            "pending_gpt_query": null,
            "preferences": {"meal": null},
            "memory": [{"type": "note", "content": "b", "created_at": "t"}]
        }));
        let start = SessionState {
            preferences: Map::from_iter([("meal".to_string(), json!("any"))]),
            ..Default::default()
        };
        let mut sequential = start.clone();
        sequential.apply(&a);
        sequential.apply(&b);

        let mut merged = a.clone();
        merged.merge(b);
        let mut at_once = start;
        at_once.apply(&merged);
        assert_eq!(at_once, sequential);
        assert_eq!(at_once.pending_gpt_query, None);
        assert_eq!(Value::Object(at_once.preferences), json!({"seat": "aisle"}));
    }
}
