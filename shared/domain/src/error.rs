//! The crate's one error type. The functions' HTTP handlers map it to the error envelope
//! once; the `Display` texts are for logs, never sent to clients as they are.

use crate::tool_call_status::ToolCallStatus;

/// A result whose error is, by default, the domain's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every way the backend's code fails; each function's HTTP layer maps it to a status.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A required environment variable is missing or unparsable (raised at cold start).
    #[error("configuration: {0}")]
    Config(String),

    /// Caller input that fails validation; the message names the field.
    #[error("invalid input: {0}")]
    Invalid(String),

    /// Missing, malformed, expired or foreign bearer token. The message is safe to show
    /// (e.g. "token expired"); it never echoes the token.
    #[error("unauthorized: {0}")]
    Unauthorized(String),

    /// Missing, or owned by someone else: the two are deliberately indistinguishable.
    #[error("not found")]
    NotFound,

    /// A tool-call status change the state machine does not allow.
    #[error("illegal transition of tool call {id}: {from} -> {to}")]
    IllegalTransition {
        /// The tool call's id in the ledger.
        id: String,
        /// The status the call is in.
        from: ToolCallStatus,
        /// The status the change asked for.
        to: ToolCallStatus,
    },

    /// A finishing write from an attempt that no longer holds the call (fencing).
    #[error("tool call {id}: attempt {attempt} was superseded by attempt {current}")]
    Fenced {
        /// The tool call's id in the ledger.
        id: String,
        /// The attempt that tried to write.
        attempt: u32,
        /// The attempt that holds the call now.
        current: u32,
    },

    /// A per-user limit is used up (`what`: a tool, `chat turns`, the daily budget) until
    /// `reset_at` (429).
    #[error("{what}: limit reached until {reset_at}")]
    Limited {
        /// The limit's name, as a 429's `details.limit` gives it: a tool's name,
        /// `chat_turns`, `daily_budget`, a public route.
        what: String,
        /// When the limit frees up again.
        reset_at: time::OffsetDateTime,
    },

    /// Another turn of the chat is running (and its lease has not expired): one turn at a
    /// time per chat. `turn_id` names it, so a client can follow it instead (409).
    #[error("turn {turn_id} of this chat is still running")]
    TurnInProgress {
        /// The running turn.
        turn_id: String,
    },

    /// The turn a request would begin exists already (a resent request with the same
    /// `Idempotency-Key`): the record is the earlier one, to follow or refuse.
    #[error("turn {} has begun already", .0.turn_id)]
    TurnBegun(Box<crate::turn::TurnRecord>),

    /// Optimistic-concurrency retries ran out.
    #[error("too much contention updating {0}")]
    Contention(String),

    /// A secret could not be read, written or parsed (Secrets Manager, the secrets cache).
    #[error("secret {name}: {message}")]
    Secret {
        /// The secret's name.
        name: String,
        /// What went wrong; never the secret's value.
        message: String,
    },

    /// A DynamoDB call failed for a reason other than a checked condition.
    #[error("DynamoDB {op}: {message}")]
    Dynamo {
        /// The DynamoDB operation that failed (e.g. `TransactWriteItems`).
        op: &'static str,
        /// The SDK's error, as text.
        message: String,
    },

    /// A stored item that does not have the shape this code writes.
    #[error("malformed stored item: {0}")]
    Corrupt(String),

    /// An upstream API (Seats.aero, Amadeus, the LLM, another function) stayed unavailable,
    /// answered garbage, or failed in a way that is not the caller's fault (502).
    #[error("upstream {service}: {message}")]
    Upstream {
        /// Which upstream (e.g. `llm`, `jwks`, `s3`).
        service: &'static str,
        /// What went wrong, for the log.
        message: String,
    },

    /// An upstream API stayed unavailable through every retry: it kept answering 429, 408 or
    /// 5xx, or the connection failed (502, as [`Error::Upstream`]). Unlike `Upstream`, it
    /// says nothing against the request: another provider may answer it.
    #[error("upstream {service}: {message}")]
    UpstreamUnavailable {
        /// Which upstream.
        service: &'static str,
        /// What the last attempt saw, for the log.
        message: String,
    },

    /// An upstream API did not answer within the time we had (504).
    #[error("upstream {service} timed out")]
    UpstreamTimeout {
        /// Which upstream.
        service: &'static str,
    },

    /// An upstream API rejected the request as the caller's fault (4xx). `message` is a
    /// short, safe summary (e.g. Amadeus' error title), never the upstream body.
    #[error("upstream {service} rejected the request ({status}): {message}")]
    UpstreamRejected {
        /// Which upstream.
        service: &'static str,
        /// The HTTP status it answered with.
        status: u16,
        /// A short, safe summary of why.
        message: String,
    },

    /// JSON that could not be read or written.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// A short, fixed name of the error's kind, for metrics and log fields.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Config(_) => "config",
            Self::Invalid(_) => "invalid",
            Self::Unauthorized(_) => "unauthorized",
            Self::NotFound => "not_found",
            Self::IllegalTransition { .. } => "illegal_transition",
            Self::Fenced { .. } => "fenced",
            Self::Limited { .. } => "limited",
            Self::TurnInProgress { .. } => "turn_in_progress",
            Self::TurnBegun(_) => "turn_begun",
            Self::Contention(_) => "contention",
            Self::Secret { .. } => "secret",
            Self::Dynamo { .. } => "dynamodb",
            Self::Corrupt(_) => "corrupt",
            // One kind for both: metrics and logs tell upstream failures apart by service.
            Self::Upstream { .. } | Self::UpstreamUnavailable { .. } => "upstream",
            Self::UpstreamTimeout { .. } => "timeout",
            Self::UpstreamRejected { .. } => "rejected",
            Self::Json(_) => "json",
        }
    }
}
