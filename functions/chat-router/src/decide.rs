//! `POST /chats/{chat_id}/tool-calls/{job_id}/approve|deny`: the user's decision on a call
//! that waited for their approval, and the turn that follows it, streamed like a chat turn.
//!
//! Exactly once: the decision is a turn whose id derives from the call, so every request
//! deciding the same call names the same turn record. The first begins it and takes the
//! decision in the ledger; a repeat of the same decision (a double click, a resend, ten
//! at once) follows that turn's events instead of running anything again; the other
//! decision is 409. A decision refused before its turn started (a busy chat, an expired
//! call) leaves a refused record, which the next request replaces.

use lambda_http::Request;
use lambda_http::http::Response;
use lambda_http::lambda_runtime::streaming::Body;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use shared::Error;
use shared::http::auth::AuthenticatedUser;
use shared::http::lambda::{deadline, json_body};
use shared::http::{ApiError, ErrorCode};
use shared::turns::{Begun, TurnRecord, TurnStatus, turn_id_for_key};

use crate::Deps;
use crate::respond::{accept_language, error, follow, stream};
use agent::guard::input::UserMessage;
use agent::{CallDecision, StopSignal, TurnInput};

/// Longest reason kept with a denial.
pub const MAX_REASON_CHARS: usize = 500;

/// Body of `deny` (and, empty, of `approve`); the body may be left out.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// Why the user denied the call (`deny` only), at most 500 characters.
    #[serde(default)]
    #[schemars(length(max = MAX_REASON_CHARS))]
    pub reason: Option<String>,
}

pub async fn decide(
    deps: &Deps,
    req: &Request,
    user: AuthenticatedUser,
    chat_id: &str,
    job_id: &str,
    approve: bool,
) -> Response<Body> {
    let reason = match reason(req, approve) {
        Ok(reason) => reason,
        Err(e) => return error(&e),
    };
    let turn_deadline = deadline(req, deps.config.turn_timeout);
    let record = decision_record(&user.user_id, chat_id, job_id, approve, turn_deadline);
    match deps.turns.begin(&record).await {
        Ok(Begun::New) => {}
        Ok(Begun::Existing(turn)) if turn.fingerprint == record.fingerprint => {
            tracing::info!(turn_id = %turn.turn_id, "repeated decision; following its turn");
            return follow(deps, req, turn, None, None);
        }
        Ok(Begun::Existing(_)) => {
            let decided = if approve { "denied" } else { "approved" };
            return error(
                &ApiError::new(
                    ErrorCode::Conflict,
                    format!("this tool call was {decided} already"),
                )
                .with_details(json!({ "status": decided })),
            );
        }
        Err(e) => return error(&ApiError::from(&e)),
    }
    let stop = StopSignal::default();
    let Some(profile) = deps.agents.profile(None).cloned() else {
        return error(&ApiError::new(ErrorCode::Internal, "no default agent"));
    };
    let input = TurnInput {
        user_id: user.user_id,
        chat_id: Some(chat_id.to_owned()),
        profile,
        agent_named: false,
        message: UserMessage::default(),
        deadline: turn_deadline,
        timezone: None,
        language: accept_language(req),
        turn_id: record.turn_id.clone(),
        new_chat_id: chat_id.to_owned(),
        stop: stop.clone(),
        decision: Some(CallDecision {
            job_id: job_id.to_owned(),
            approve,
            reason,
        }),
        trace: shared::observability::Trace::of(req),
        begin_with: Vec::new(),
        resumes: false,
        replay: None,
    };
    match deps.agent.open(input).await {
        Ok(turn) => stream(deps.clone(), turn, record, stop, false),
        Err(e) => {
            let api = refusal(&e);
            if let Err(e) = deps.turns.refuse(&record, json!(api)).await {
                tracing::error!(turn_id = %record.turn_id, error = %e, "recording the refusal failed");
            }
            error(&api)
        }
    }
}

/// The error for a decision refused before its turn; a call that is not waiting says what
/// it is (`details.status`: `expired`, `canceled` after a denial, `succeeded`, …).
fn refusal(e: &Error) -> ApiError {
    let api = ApiError::from(e);
    match e {
        Error::IllegalTransition { from, .. } => api.with_details(json!({ "status": from })),
        _ => api,
    }
}

/// The reason of a denial: trimmed, at most [`MAX_REASON_CHARS`]; none with an approval.
fn reason(req: &Request, approve: bool) -> Result<Option<String>, ApiError> {
    let body: DecisionBody = match json_body(req) {
        Ok(body) => body,
        Err(e) if e.code == ErrorCode::InvalidJson && is_empty(req) => DecisionBody::default(),
        Err(e) => return Err(e),
    };
    let reason = body
        .reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    match reason {
        Some(_) if approve => Err(ApiError::new(
            ErrorCode::ValidationFailed,
            "reason: only a denial takes a reason",
        )),
        Some(r) if r.chars().count() > MAX_REASON_CHARS => Err(ApiError::new(
            ErrorCode::ValidationFailed,
            format!("reason: at most {MAX_REASON_CHARS} characters"),
        )),
        other => Ok(other),
    }
}

fn is_empty(req: &Request) -> bool {
    match req.body() {
        lambda_http::Body::Empty => true,
        lambda_http::Body::Text(text) => text.trim().is_empty(),
        lambda_http::Body::Binary(bytes) => bytes.iter().all(u8::is_ascii_whitespace),
        _ => true,
    }
}

/// The turn a decision on `job_id` begins: one id per call and user, and a fingerprint per
/// decision, so the same decision again follows it and the other one is refused.
fn decision_record(
    user_id: &str,
    chat_id: &str,
    job_id: &str,
    approve: bool,
    deadline: std::time::Instant,
) -> TurnRecord {
    let now = time::OffsetDateTime::now_utc();
    let verdict = if approve { "approve" } else { "deny" };
    TurnRecord {
        turn_id: turn_id_for_key(user_id, &format!("decision\u{0}{chat_id}\u{0}{job_id}")),
        owner_id: user_id.to_owned(),
        chat_id: chat_id.to_owned(),
        created: false,
        fingerprint: hex::encode(Sha256::digest(verdict.as_bytes())),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now + deadline.saturating_duration_since(std::time::Instant::now()),
        created_at: now,
        refusal: None,
        alive_until: Some(now + shared::turns::LIVENESS),
        host: 0,
        request: None,
    }
}
