//! A chat turn's record and its stored events: the plain types the turn store keeps and the
//! error type names (a resent request finds the turn it began, `Error::TurnBegun`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

/// How long a turn's record, events and idempotency key are kept.
pub const RETENTION: time::Duration = time::Duration::DAY;

/// How long a running turn counts as alive after its host last said so. The host renews it
/// with each write to the turn's log, at least every 2 s while the turn runs; a turn whose
/// host died (a crash, an out-of-memory kill, the function's timeout) is overdue this long
/// after its last write, not at its deadline.
pub const LIVENESS: time::Duration = time::Duration::seconds(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
/// Where a turn is in its life, as its record keeps it.
pub enum TurnStatus {
    /// Begun; its events may still grow.
    Running,
    /// Ended with `done` (answered, failed with an `error` event, or stopped by a cancel).
    Finished,
    /// Refused before it started (limit, busy chat, missing chat): no events but `init`.
    /// A resend with the same key may try again.
    Refused,
    /// Its host ended it before `done` (the deadline passed): it ends with
    /// `error{code:"interrupted"}`.
    Interrupted,
}

/// One stored event: its place in the turn, its SSE name and its `data` JSON as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Its sequence number in the turn, `init` being 0.
    pub seq: u64,
    /// The SSE event name (`init`, `tool_result`, `done`, ...).
    pub event: String,
    /// The event's `data` line: its JSON, serialised as sent.
    pub data: String,
}

/// A turn as begun.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// The turn's id, a ULID; derived from the user and a key ([`turn_id_for_key`]) when a
    /// resend must find the same turn.
    pub turn_id: String,
    /// The user who began the turn and owns its chat.
    pub owner_id: String,
    /// The chat the turn belongs to.
    pub chat_id: String,
    /// Whether the turn creates its chat (the `init` event's `created`).
    pub created: bool,
    /// A hash of the request that began it: a resend with the same key must match it.
    pub fingerprint: String,
    /// Where the turn is in its life.
    pub status: TurnStatus,
    /// Set by a cancel; the turn stops at its next safe point.
    pub cancel_requested: bool,
    /// When the turn must be over; past it, a `running` turn was ended by its host.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// When the turn was begun.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The error a refused turn was refused with (the HTTP error envelope's `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<serde_json::Value>,
    /// Until when the turn's host has shown it is alive ([`LIVENESS`] after its latest
    /// write); `None` for a record written before hosts renewed it.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub alive_until: Option<OffsetDateTime>,
    /// Which host runs the turn: 0 for the one that began it, one more for each that took
    /// it over after its host died. A host's writes to the record hold only while it is
    /// still the turn's host, so one that was taken for dead and comes back stops.
    #[serde(default, skip_serializing_if = "is_first_host")]
    pub host: u32,
    /// What began the turn, for a resume (`GET …/events`, no body) that finds its host dead
    /// before anything but `init` was logged and runs the turn again. `None` for a turn
    /// that cannot run again so (a decision's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<TurnRequest>>,
}

/// The request a turn runs, as checked when it began (`TurnRecord::request`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRequest {
    /// The user's message, normalised.
    pub message: String,
    /// The agent profile the request named; `None`: the chat's active agent or the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The user's IANA time zone, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The language the request asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<crate::flight::Locale>,
    /// Whether the caller asked for debug events and may have them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub debug: bool,
}

fn is_first_host(host: &u32) -> bool {
    *host == 0
}

impl TurnRecord {
    /// The turn's first event as the record knows it, before the turn ran: without the
    /// turn's language, which the logged `init` has.
    pub fn init_event(&self) -> StoredEvent {
        StoredEvent {
            seq: 0,
            event: "init".into(),
            data: serde_json::json!({
                "chat_id": self.chat_id,
                "created": self.created,
                "turn_id": self.turn_id,
            })
            .to_string(),
        }
    }

    /// Finished or interrupted: its log is complete.
    pub fn ended(&self) -> bool {
        matches!(self.status, TurnStatus::Finished | TurnStatus::Interrupted)
    }

    /// Running past its deadline, or past the time its host last said it was alive: its
    /// host ended it.
    pub fn overdue(&self, now: OffsetDateTime) -> bool {
        self.status == TurnStatus::Running
            && (self.deadline < now || self.alive_until.is_some_and(|alive| alive < now))
    }

    /// When the turn's host must next show it is alive, written at `now`: [`LIVENESS`]
    /// later, at most its deadline.
    pub fn alive_after(&self, now: OffsetDateTime) -> OffsetDateTime {
        (now + LIVENESS).min(self.deadline)
    }
}

/// How beginning a turn went (the turn store's `begin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// The record is new: this request runs the turn.
    New,
    /// A turn with this id exists (a resend): follow or replay it.
    Existing(TurnRecord),
}

/// The turn id a user's `Idempotency-Key` stands for: the same key always names the same
/// turn, and keys of different users never meet.
pub fn turn_id_for_key(owner_id: &str, key: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(owner_id.as_bytes());
    hasher.update([0]);
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    ulid::Ulid::from_bytes(bytes).to_string()
}
