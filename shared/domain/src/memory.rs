//! What a user asked the assistant to remember, across all their chats: travel preferences
//! that fill in a flight search ("from my home airport") and short notes. Written by the
//! `remember` tool, read at the start of every turn, listed and deleted with
//! `GET/DELETE /memory`.
//!
//! Everything in here came from the user (through the model), so it reaches the model only
//! as data in a fenced block, and logs never show it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::flight::{Cabin, IataCode};
use crate::error::Error;

/// The most notes kept per user; a new note beyond it replaces the oldest.
pub const MAX_NOTES: usize = 20;
/// The longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 300;

/// Preferences a flight search starts from when the request leaves them out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TravelPreferences {
    /// The airport the user usually flies from, as a 3-letter IATA code, e.g. FRA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_airport: Option<IataCode>,
    /// The cabin the user usually books.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cabin: Option<Cabin>,
    /// Frequent-flyer programmes the user collects or redeems with, e.g. ["Miles & More"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10), inner(length(min = 1, max = 64)))]
    pub loyalty_programs: Option<Vec<String>>,
    /// Adults who usually travel, 1 to 9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9))]
    pub pax: Option<u8>,
    /// Children (2 to 11) who usually travel along.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 8))]
    pub children: Option<u8>,
    /// Infants (under 2) who usually travel along.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 9))]
    pub infants: Option<u8>,
}

/// The names of the preferences, as `DELETE /memory/{name}` takes them.
pub const PREFERENCE_NAMES: [&str; 6] = [
    "home_airport",
    "cabin",
    "loyalty_programs",
    "pax",
    "children",
    "infants",
];

impl TravelPreferences {
    /// True when no preference is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Takes every preference `other` sets.
    fn merge(&mut self, other: &TravelPreferences) {
        fn take<T: Clone>(mine: &mut Option<T>, theirs: &Option<T>) {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
        take(&mut self.home_airport, &other.home_airport);
        take(&mut self.cabin, &other.cabin);
        take(&mut self.loyalty_programs, &other.loyalty_programs);
        take(&mut self.pax, &other.pax);
        take(&mut self.children, &other.children);
        take(&mut self.infants, &other.infants);
    }

    /// Clears the preference called `name`; false when it is no preference or not set.
    fn forget(&mut self, name: &str) -> bool {
        fn clear<T>(slot: &mut Option<T>) -> bool {
            slot.take().is_some()
        }
        match name {
            "home_airport" => clear(&mut self.home_airport),
            "cabin" => clear(&mut self.cabin),
            "loyalty_programs" => clear(&mut self.loyalty_programs),
            "pax" => clear(&mut self.pax),
            "children" => clear(&mut self.children),
            "infants" => clear(&mut self.infants),
            _ => false,
        }
    }

    /// The preferences as flight-search arguments (`home_airport` becomes `origin`), for
    /// filling what a request leaves out.
    pub fn as_search_defaults(&self) -> serde_json::Map<String, Value> {
        let mut out = serde_json::Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                out.insert(key.to_owned(), value);
            }
        };
        put("origin", self.home_airport.as_ref().map(|c| json!(c)));
        put("cabin", self.cabin.map(|c| json!(c)));
        put(
            "loyalty_programs",
            self.loyalty_programs.as_ref().map(|p| json!(p)),
        );
        put("pax", self.pax.map(|n| json!(n)));
        put("children", self.children.map(|n| json!(n)));
        put("infants", self.infants.map(|n| json!(n)));
        out
    }
}

/// Something the user wants remembered that is not a search preference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryNote {
    /// The note's id, a ULID; `DELETE /memory/{id}` takes it.
    pub id: String,
    /// The note, in the user's words.
    pub content: String,
    /// RFC 3339.
    pub created_at: String,
}

/// Everything remembered about one user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserMemory {
    /// The travel preferences.
    #[serde(default)]
    pub preferences: TravelPreferences,
    /// The notes, oldest first.
    #[serde(default)]
    pub notes: Vec<MemoryNote>,
}

/// A change to a user's memory.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryChange {
    /// Sets the given preferences and appends a note (an identical note is kept once).
    Remember {
        /// Preferences to set; those it leaves out stay as they are.
        preferences: TravelPreferences,
        /// A note to append.
        note: Option<MemoryNote>,
    },
    /// Removes one preference (by name) or one note (by id).
    Forget(String),
}

impl UserMemory {
    /// True when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.preferences.is_empty() && self.notes.is_empty()
    }

    /// Applies `change`; false when it changed nothing (an unknown name to forget, a note
    /// already there).
    pub fn apply(&mut self, change: &MemoryChange) -> bool {
        match change {
            MemoryChange::Remember { preferences, note } => {
                let before = self.clone();
                self.preferences.merge(preferences);
                if let Some(note) = note
                    && !self.notes.iter().any(|n| n.content == note.content)
                {
                    self.notes.push(note.clone());
                    let excess = self.notes.len().saturating_sub(MAX_NOTES);
                    self.notes.drain(..excess);
                }
                *self != before
            }
            MemoryChange::Forget(name) => {
                let before = self.notes.len();
                self.notes.retain(|n| &n.id != name);
                self.notes.len() != before || self.preferences.forget(name)
            }
        }
    }
}

/// Arguments of the `remember` tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "Remember what the user states about how they travel (home airport, usual cabin, programmes, who travels) or asks you to remember, for this and their later chats. Only call it for things the user said about themselves."
)]
pub struct RememberArgs {
    /// Travel preferences the user stated; those left out stay as they are.
    #[serde(flatten)]
    pub preferences: TravelPreferences,
    /// Anything else the user asked to be remembered, in a short sentence, e.g. "prefers
    /// aisle seats".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 300))]
    pub note: Option<String>,
}

impl RememberArgs {
    /// Checks what the JSON Schema cannot express (or a caller may have skipped): something to
    /// remember, the note's length, the bounds of `pax` and `loyalty_programs`.
    pub fn validate(&self) -> Result<(), Error> {
        let note = self.note.as_deref().map(str::trim);
        if self.preferences.is_empty() && note.is_none_or(str::is_empty) {
            return Err(Error::Invalid(
                "nothing to remember: set a preference or a note".into(),
            ));
        }
        if let Some(note) = note {
            if note.is_empty() {
                return Err(Error::Invalid("note must not be empty".into()));
            }
            if note.chars().count() > MAX_NOTE_CHARS {
                return Err(Error::Invalid(format!(
                    "note: at most {MAX_NOTE_CHARS} characters"
                )));
            }
        }
        let p = &self.preferences;
        if p.pax.is_some_and(|n| !(1..=9).contains(&n)) {
            return Err(Error::Invalid("pax must be 1 to 9".into()));
        }
        if let Some(list) = &p.loyalty_programs
            && (list.len() > 10 || list.iter().any(|n| n.trim().is_empty() || n.len() > 64))
        {
            return Err(Error::Invalid(
                "loyalty_programs: at most 10 names of 1 to 64 characters".into(),
            ));
        }
        Ok(())
    }

    /// The note trimmed, empty parts left out: the dedupe input and what is stored.
    pub fn canonical(&self) -> Value {
        let mut args = self.clone();
        args.note = self.note.as_deref().map(|n| n.trim().to_owned());
        if let Some(list) = &mut args.preferences.loyalty_programs {
            for name in list.iter_mut() {
                *name = name.trim().to_owned();
            }
        }
        json!(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(id: &str, content: &str) -> MemoryNote {
        MemoryNote {
            id: id.into(),
            content: content.into(),
            created_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    fn remember(v: Value, note: Option<MemoryNote>) -> MemoryChange {
        MemoryChange::Remember {
            preferences: serde_json::from_value(v).unwrap(),
            note,
        }
    }

    #[test]
    fn remember_merges_and_forget_removes() {
        let mut m = UserMemory::default();
        assert!(m.apply(&remember(
            json!({"home_airport": "muc", "cabin": "BUSINESS"}),
            None
        )));
        assert!(m.apply(&remember(
            json!({"cabin": "FIRST"}),
            Some(note("n1", "aisle"))
        )));
        assert_eq!(m.preferences.home_airport.as_ref().unwrap().as_str(), "MUC");
        assert_eq!(m.preferences.cabin, Some(Cabin::First));
        assert!(
            !m.apply(&remember(json!({}), Some(note("n2", "aisle")))),
            "same note twice"
        );
        assert!(m.apply(&MemoryChange::Forget("cabin".into())));
        assert!(m.apply(&MemoryChange::Forget("n1".into())));
        assert!(!m.apply(&MemoryChange::Forget("n1".into())));
        assert!(!m.apply(&MemoryChange::Forget("nonsense".into())));
        assert_eq!(m.preferences.cabin, None);
        assert!(m.notes.is_empty());
    }

    #[test]
    fn notes_are_capped_oldest_first() {
        let mut m = UserMemory::default();
        for i in 0..MAX_NOTES + 3 {
            m.apply(&remember(
                json!({}),
                Some(note(&i.to_string(), &format!("n{i}"))),
            ));
        }
        assert_eq!(m.notes.len(), MAX_NOTES);
        assert_eq!(m.notes[0].content, "n3");
    }

    #[test]
    fn preferences_become_search_defaults() {
        let p: TravelPreferences = serde_json::from_value(
            json!({"home_airport": "fra", "loyalty_programs": ["Miles & More"], "pax": 2}),
        )
        .unwrap();
        assert_eq!(
            Value::Object(p.as_search_defaults()),
            json!({"origin": "FRA", "loyalty_programs": ["Miles & More"], "pax": 2})
        );
    }

    #[test]
    fn remember_args_need_something_and_bound_the_note() {
        let empty: RememberArgs = serde_json::from_value(json!({"note": "  "})).unwrap();
        assert!(empty.validate().is_err());
        let long: RememberArgs =
            serde_json::from_value(json!({"note": "x".repeat(MAX_NOTE_CHARS + 1)})).unwrap();
        assert!(long.validate().is_err());
        let ok: RememberArgs =
            serde_json::from_value(json!({"home_airport": "FRA", "note": " aisle "})).unwrap();
        ok.validate().unwrap();
        assert_eq!(
            ok.canonical(),
            json!({"home_airport": "FRA", "note": "aisle"})
        );
    }
}
