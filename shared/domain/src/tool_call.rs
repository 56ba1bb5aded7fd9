//! Tool names and the stored tool-call record (its status: `tool_call_status`).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use super::schema::DateTimeSchema;
pub use super::tool_call_status::ToolCallStatus;

/// A tool's name, as the model calls it and the ledger records it (`search_flights`).
///
/// The set of names is open: a tool declares its own (`Tool::INFO` in `agent-tools`) and
/// the registry knows which exist. The consts here are the names the turn and the stores
/// refer to themselves (agent-tools tests that each is a tool's); a name from text (a stored record, the configuration) is checked
/// and kept with [`ToolName::parse`]. A name the model sends is looked up in the registry,
/// never parsed, so hostile text cannot add names.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName(&'static str);

/// At most this many distinct names are kept from text; a deployment has a few dozen.
const MAX_PARSED_NAMES: usize = 1024;

static PARSED_NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

impl ToolName {
    /// Flight search: award seats and cash fares.
    pub const SEARCH_FLIGHTS: Self = Self::new("search_flights");
    /// Search of the knowledge base.
    pub const SEARCH_KNOWLEDGE_BASE: Self = Self::new("search_knowledge_base");
    /// A question answered by the general model, without tools.
    pub const ASK_GPT: Self = Self::new("ask_gpt");
    /// Client-rendered: 2 to 4 quick replies (`ui` event `quick_replies`).
    pub const SUGGEST_REPLIES: Self = Self::new("suggest_replies");
    /// Not a registry tool: the turn offers one `transfer_to_<agent>` per handoff target of
    /// the profile, and records each handoff in the ledger under this name.
    pub const HANDOFF: Self = Self::new("handoff");
    /// Not a registry tool: a tool of an external MCP server a profile lists
    /// (`mcp_servers`), offered as `<server>__<tool>` and recorded under this name with
    /// the offered name in its request (`{"tool": ..., "arguments": ...}`).
    pub const MCP: Self = Self::new("mcp");

    /// The names of the turn's own mechanisms, which are not registry tools.
    pub const BUILT_IN: &'static [ToolName] = &[Self::HANDOFF, Self::MCP];

    /// A name written in the code. An invalid one (see [`ToolName::is_valid`]) in a
    /// `const` fails the build.
    pub const fn new(name: &'static str) -> Self {
        assert!(
            Self::is_valid(name),
            "a tool name is [a-z][a-z0-9_]*, at most 64 bytes"
        );
        Self(name)
    }

    /// Lower-case ASCII letters, digits and `_`, starting with a letter, at most 64 bytes:
    /// what every LLM provider accepts as a function name.
    pub const fn is_valid(name: &str) -> bool {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() > 64 || !bytes[0].is_ascii_lowercase() {
            return false;
        }
        let mut i = 1;
        while i < bytes.len() {
            let b = bytes[i];
            if !(b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
                return false;
            }
            i += 1;
        }
        true
    }

    /// A name read from text we wrote (a stored record, the configuration). Kept for the
    /// life of the process: names are few, and [`MAX_PARSED_NAMES`] bounds them.
    pub fn parse(name: &str) -> Result<Self, crate::error::Error> {
        if !Self::is_valid(name) {
            return Err(crate::error::Error::Invalid(format!(
                "`{name}` is not a tool name"
            )));
        }
        let mut names = PARSED_NAMES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(kept) = names.get(name) {
            return Ok(Self(kept));
        }
        if names.len() >= MAX_PARSED_NAMES {
            return Err(crate::error::Error::Invalid(format!(
                "`{name}`: more than {MAX_PARSED_NAMES} tool names"
            )));
        }
        let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.insert(kept);
        Ok(Self(kept))
    }

    /// The name as the model calls the tool.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::str::FromStr for ToolName {
    type Err = crate::error::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for ToolName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&name).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ToolName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A tool's name, as the model calls it and the ledger records it: one of the deployment's tools (`search_flights`, `search_knowledge_base`, ...), `handoff` for a handoff to another agent, or `mcp` for a tool of an external MCP server. The set is open: a deployment may add tools.",
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]{0,63}$",
        })
    }
}

/// One execution attempt of a tool call, kept for the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptRecord {
    /// Its number, from 1.
    pub attempt: u32,
    /// How it stands or how it ended.
    pub status: ToolCallStatus,
    /// When it was queued for the tool worker; `None` for an attempt that ran at once.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTimeSchema>")]
    pub queued_at: Option<OffsetDateTime>,
    /// When it started running.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTimeSchema>")]
    pub started_at: Option<OffsetDateTime>,
    /// When it ended.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTimeSchema>")]
    pub finished_at: Option<OffsetDateTime>,
    /// Why it failed, timed out or was canceled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl AttemptRecord {
    /// When this attempt began: started, or queued if it never started.
    pub fn began_at(&self) -> Option<OffsetDateTime> {
        self.started_at.or(self.queued_at)
    }
}

/// A tool call as the audit API shows it: the latest attempt's state at the top level and
/// every attempt, newest first, in `attempts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallRecord {
    /// The call's id (`tc_` and the start of its dedupe key): the `job_id` of the turn's events.
    pub id: String,
    /// The chat the call was made in.
    pub chat_id: String,
    /// The tool called.
    pub tool: ToolName,
    /// The latest attempt's status.
    pub status: ToolCallStatus,
    /// The latest attempt's number, from 1.
    pub attempt: u32,
    /// The tool's canonical arguments (defaults applied, normalised), as hashed for dedupe.
    pub request: Value,
    /// The result of the latest attempt, once it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// Why the latest attempt failed, timed out or was canceled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Hex SHA-256 over the chat, the tool and the canonical request: identical calls share it.
    pub dedupe_key: String,
    /// When the call was first recorded.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub created_at: OffsetDateTime,
    /// When its status last changed.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub updated_at: OffsetDateTime,
    /// When the latest attempt started running.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTimeSchema>")]
    pub started_at: Option<OffsetDateTime>,
    /// When the latest attempt ended.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTimeSchema>")]
    pub finished_at: Option<OffsetDateTime>,
    /// Every attempt, newest first.
    pub attempts: Vec<AttemptRecord>,
    /// Until when a `running` attempt's worker holds the call; past it, that worker is
    /// gone. Internal (history reads it), not part of the audit API.
    #[serde(skip)]
    pub lease_until: Option<OffsetDateTime>,
    /// What the tool-output guard found in a result (e.g. `override_instructions`); the
    /// result reached the model as data, but an operator should look.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// For a call that needs the user's approval: what they were asked, until when, and
    /// what they decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRecord>,
}

impl ToolCallRecord {
    /// Waiting for approval past its window: it reads (and is stored, once touched) as
    /// `expired`.
    pub fn approval_expired(&self, now: OffsetDateTime) -> bool {
        self.status == ToolCallStatus::AwaitingApproval
            && self.approval.as_ref().is_some_and(|a| a.expires_at <= now)
    }
}

/// The user's say over a call that needs approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRecord {
    /// What the user was asked to approve (the tool's summary of the call).
    pub summary: String,
    /// Until when the call may be approved; then it is `expired`.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub expires_at: OffsetDateTime,
    /// What the user decided; `None` while undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ApprovalDecision>,
    /// The reason the user gave with a denial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the user decided.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schemars(with = "Option<DateTimeSchema>")]
    pub decided_at: Option<OffsetDateTime>,
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// The user let the call run.
    Approved,
    /// The user refused it; the call is canceled.
    Denied,
}

/// Why a tool call was refused before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// The model named a tool that does not exist.
    UnknownTool,
    /// The tool exists but the agent profile does not offer it.
    OutsideProfile,
    /// The arguments were not valid JSON or failed the tool's schema or rules.
    InvalidArguments,
    /// Over the cap of tool calls per step or per message.
    OverCap,
    /// The model called a tool in a step that offered none (the cap or the step limit was
    /// reached).
    NotOffered,
    /// The turn's time for tools was used up.
    NoTimeLeft,
    /// The user's per-tool rate limit was used up.
    RateLimited,
    /// The rate limiter or the ledger could not be asked; the call is refused rather than
    /// run unchecked (fail closed).
    ChecksUnavailable,
}

impl RefusalReason {
    /// The reason's name as serialised (`unknown_tool`, `over_cap`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::OutsideProfile => "outside_profile",
            Self::InvalidArguments => "invalid_arguments",
            Self::OverCap => "over_cap",
            Self::NotOffered => "not_offered",
            Self::NoTimeLeft => "no_time_left",
            Self::RateLimited => "rate_limited",
            Self::ChecksUnavailable => "checks_unavailable",
        }
    }
}

/// A tool call refused before it ran, kept for the audit: what
/// the model tried and why it did not run. `tool` and `arguments` are the model's text,
/// shortened; they are shown to the chat's owner only and never executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RefusedCall {
    /// The refusal's id, a ULID.
    pub id: String,
    /// The chat the call was made in.
    pub chat_id: String,
    /// The tool as the model named it (may name no real tool).
    pub tool: String,
    /// The arguments as the model sent them, at most [`RefusedCall::MAX_ARGUMENT_CHARS`]
    /// characters.
    pub arguments: String,
    /// Why the call was refused.
    pub reason: RefusalReason,
    /// What the model was told.
    pub message: String,
    /// When it was refused.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub created_at: OffsetDateTime,
}

impl RefusedCall {
    /// Longest tool name kept.
    pub const MAX_TOOL_CHARS: usize = 64;
    /// Longest argument text kept.
    pub const MAX_ARGUMENT_CHARS: usize = 2_000;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_table_matches_the_contract() {
        use ToolCallStatus::*;
        let all = [
            Queued,
            Running,
            Succeeded,
            Failed,
            Timeout,
            Canceled,
            AwaitingApproval,
            Expired,
        ];
        let legal = [
            (Queued, Running),
            (Queued, Canceled),
            (Queued, Failed),
            (Running, Succeeded),
            (Running, Failed),
            (Running, Timeout),
            (Running, Canceled),
            (Failed, Queued),
            (Timeout, Queued),
            (AwaitingApproval, Running),
            (AwaitingApproval, Canceled),
            (AwaitingApproval, Expired),
        ];
        for from in all {
            for to in all {
                assert_eq!(
                    from.can_transition_to(to),
                    legal.contains(&(from, to)),
                    "{from} -> {to}"
                );
            }
        }
    }

    #[test]
    fn tool_names_round_trip_and_bad_names_are_refused() {
        for tool in [
            ToolName::SEARCH_FLIGHTS,
            ToolName::MCP,
            ToolName::new("my_tool2"),
        ] {
            assert_eq!(tool.as_str().parse::<ToolName>().ok(), Some(tool));
            assert_eq!(
                serde_json::to_value(tool).ok(),
                Some(Value::from(tool.as_str()))
            );
            let back: ToolName = serde_json::from_value(Value::from(tool.as_str())).unwrap();
            assert_eq!(back, tool);
        }
        for bad in ["", "Rm", "rm-rf", "1tool", "tool name", &"a".repeat(65)] {
            assert!(bad.parse::<ToolName>().is_err(), "{bad:?}");
        }
        assert!(serde_json::from_value::<ToolName>(Value::from("DROP TABLE")).is_err());
    }
}
