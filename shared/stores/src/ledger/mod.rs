//! The tool-call ledger: audit log and dedupe guard of every tool call (seed 000 §3, §11).
//!
//! One logical tool call per (chat, tool, canonical request). Its id is derived from the
//! dedupe key, so concurrent identical calls race on one DynamoDB item: a single conditional
//! write records and claims it (modelled on AWS Lambda Powertools' idempotency record), and a
//! losing writer gets the winner's item back with the failed condition, without another read.
//! Each execution is an *attempt*; the attempt number fences finishing writes, and every
//! attempt stays in the record for the audit log.

mod dedupe;
mod dynamo;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Duration;

pub(crate) use dedupe::hash_call;
pub use dedupe::{DedupeKey, write_canonical};
pub use dynamo::DynamoLedger;

use crate::Result;
use domain::tool_call::{ApprovalRecord, RefusedCall, ToolCallRecord, ToolCallStatus, ToolName};

/// What a caller asks the ledger for before executing a tool.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// The user the call is for: the chat's owner.
    pub owner_id: String,
    /// The chat the call is made in.
    pub chat_id: String,
    /// The tool to call.
    pub tool: ToolName,
    /// The tool's canonical arguments (defaults applied, normalised); hashed for dedupe.
    pub request: Value,
    /// How the claimed attempt starts.
    pub mode: ClaimMode,
}

/// How a claimed attempt starts: run now, queued, or waiting for the user's approval.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimMode {
    /// Claim for immediate execution: status `running` with a lease; after `lease` without
    /// a finishing write, another caller may take the call over.
    Run {
        /// How long the caller holds the attempt without finishing it.
        lease: Duration,
    },
    /// Record as `queued` for the tool worker.
    Enqueue,
    /// Record as `awaiting_approval` until the user decides or `approval.expires_at`
    /// passes (then an identical call starts a new attempt).
    AwaitApproval {
        /// What the user is asked, and until when.
        approval: ApprovalRecord,
    },
}

/// What the user decided about a call awaiting approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalChoice {
    /// Run it now: the attempt becomes `running` under `lease`, held by the caller.
    Approve {
        /// How long the caller holds the attempt without finishing it.
        lease: Duration,
    },
    /// Do not run it; the reason (the user's text) is kept.
    Deny {
        /// Why, in the user's words, if they gave a reason.
        reason: Option<String>,
    },
}

/// How [`ToolCallLedger::decide`] went.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// Approved: the caller holds the running attempt and executes it.
    Approved(ClaimedCall),
    /// Denied: the call as it is now (`canceled`, with the decision in `approval`).
    Denied(Box<ToolCallRecord>),
}

// The record is moved once per call and never stored in bulk: boxing it buys nothing.
/// What [`ToolCallLedger::record_and_claim`] got: the attempt, or the identical call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The caller holds this attempt: execute, then [`ToolCallLedger::finish`].
    Claimed(ClaimedCall),
    /// An identical call is in flight or succeeded within the dedupe window. Same id; when it
    /// succeeded, `response` holds the stored result. Nothing was executed or written.
    Duplicate(ToolCallRecord),
}

/// A claimed attempt: the fencing token for finishing writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedCall {
    /// The call's id.
    pub id: String,
    /// The chat the call was made in.
    pub chat_id: String,
    /// The tool called.
    pub tool: ToolName,
    /// The attempt's number: the fencing token of its finishing writes.
    pub attempt: u32,
    /// The attempt's status as claimed: `running`, `queued` or `awaiting_approval`.
    pub status: ToolCallStatus,
    /// The call's dedupe key.
    pub dedupe_key: String,
    /// True when this claim took over a `running` attempt whose lease had expired.
    pub took_over: bool,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool's result, kept as the call's response.
    Succeeded(Value),
    /// It failed; the text is kept as the call's error.
    Failed(String),
    /// It ran out of time; the text is kept as the call's error.
    Timeout(String),
    /// It was stopped; the text, why, is kept as the call's error.
    Canceled(String),
}

impl Outcome {
    /// The status the attempt ends with.
    pub fn status(&self) -> ToolCallStatus {
        match self {
            Self::Succeeded(_) => ToolCallStatus::Succeeded,
            Self::Failed(_) => ToolCallStatus::Failed,
            Self::Timeout(_) => ToolCallStatus::Timeout,
            Self::Canceled(_) => ToolCallStatus::Canceled,
        }
    }
}

/// One page of a chat's tool calls, newest first.
pub use lambda_kit::dynamo::Page;

use lambda_kit::companion::Companion;

/// The tool-call ledger: records, claims and ends tool calls, and lists them for the audit.
#[async_trait]
pub trait ToolCallLedger: Send + Sync {
    /// Records the call and claims its next attempt in one conditional write, or reports the
    /// duplicate it collided with.
    async fn record_and_claim(&self, request: ClaimRequest) -> Result<Claim>;

    /// [`ToolCallLedger::record_and_claim`] with companions (a rate-limit counter): for a
    /// new call they are written in the claim's transaction, all or nothing, and a
    /// companion's failed condition is its error (nothing is recorded). A duplicate writes
    /// nothing. A call that exists and may be claimed again (its attempt failed, its lease
    /// ran out) is claimed alone. The flag says whether the companions were written.
    async fn record_and_claim_with(
        &self,
        request: ClaimRequest,
        with: &[Companion],
    ) -> Result<(Claim, bool)>;

    /// Ends the claimed attempt (running → succeeded | failed | timeout | canceled). Rejected
    /// with `Error::Fenced` when a newer attempt holds the call.
    async fn finish(&self, call: &ClaimedCall, outcome: Outcome) -> Result<()>;

    /// [`ToolCallLedger::finish`] with extras in the same transaction (the result's cache
    /// entry): written only if the attempt's end is. They are extras: when they cannot be
    /// written, the end is written alone.
    async fn finish_with(
        &self,
        call: &ClaimedCall,
        outcome: Outcome,
        extras: &[Companion],
    ) -> Result<()>;

    /// running → running under a new attempt, for a redelivered job whose attempt
    /// `attempt` is `running` but whose lease has expired (its worker died): the new attempt
    /// fences the old one off, and only one of several concurrent redeliveries gets it.
    /// `Error::IllegalTransition` while the lease holds, `Error::Fenced` if another attempt
    /// took it first.
    async fn take_over_expired(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        lease: Duration,
    ) -> Result<ClaimedCall>;

    /// Ends the lease of a `running` attempt `attempt` now, so that the next claim of the
    /// call takes it over at once: for a call whose caller is known to be gone (the turn
    /// that made it was taken over from its dead host). False if the attempt was not
    /// running under a lease any more.
    async fn expire_lease(&self, chat_id: &str, call_id: &str, attempt: u32) -> Result<bool>;

    /// queued → running for the attempt a worker was handed.
    async fn start_queued(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        lease: Duration,
    ) -> Result<ClaimedCall>;

    /// failed | timeout → queued as a new attempt (a retry).
    async fn requeue(
        &self,
        chat_id: &str,
        call_id: &str,
        failed_attempt: u32,
    ) -> Result<ClaimedCall>;

    /// queued → canceled by the system, for a queued attempt whose job could not be sent
    /// (nothing would ever run it). Fenced on `attempt`; `reason` becomes the error.
    async fn withdraw(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        reason: &str,
    ) -> Result<()>;

    /// queued → failed, for a queued attempt the tool worker gave up on without starting it
    /// (its job's last delivery before the dead-letter queue could not be handled). Fenced
    /// on `attempt`; `reason` becomes the error, so the audit log says why.
    async fn abandon(&self, chat_id: &str, call_id: &str, attempt: u32, reason: &str)
    -> Result<()>;

    /// awaiting_approval → running (approved) or canceled (denied), by the chat's owner,
    /// once: the conditional write lets one of several concurrent decisions through; the
    /// others get `Error::IllegalTransition` naming the status they found. A call past its
    /// approval window becomes `expired` instead, and that is the error's `from`.
    async fn decide(
        &self,
        owner_id: &str,
        chat_id: &str,
        call_id: &str,
        choice: ApprovalChoice,
    ) -> Result<Decided>;

    /// queued | running → canceled, by the chat's owner.
    async fn cancel(&self, owner_id: &str, chat_id: &str, call_id: &str) -> Result<ToolCallRecord>;

    /// One call of the owner's chat; `Error::NotFound` for a missing or foreign one.
    async fn get(&self, owner_id: &str, chat_id: &str, call_id: &str) -> Result<ToolCallRecord>;

    /// The owner's chat's calls, most recently attempted first; each with every attempt.
    async fn list(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<ToolCallRecord>>;

    /// Deletes every record of the chat's tool calls (and refused calls); the caller has
    /// checked that the chat is the user's. Returns how many were deleted.
    async fn delete_chat(&self, chat_id: &str) -> Result<usize>;

    /// Adds the tool-output guard's `flags` to a call's audit record (only written when a
    /// scan found something).
    async fn flag(&self, chat_id: &str, call_id: &str, flags: &[&str]) -> Result<()>;

    /// Keeps a call that was refused before it ran, for the audit.
    async fn record_refused(&self, owner_id: &str, call: &RefusedCall) -> Result<()>;

    /// The owner's chat's refused calls, newest first.
    async fn list_refused(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<RefusedCall>>;
}
