//! `POST /chat`: everything that can be refused is refused before the stream starts, as a
//! JSON error with a proper status: bad token (401), bad body (400/413), unknown agent
//! (400), foreign or missing chat (404), a reused idempotency key (422). Once
//! `200 text/event-stream` is sent, problems arrive as `error` events followed by `done`.
//!
//! A turn is begun by writing its record (the `Idempotency-Key`'s turn, or a new one)
//! before anything else: a resent request finds the record and follows that turn's event
//! log instead of starting another (see `turn_log`).

use lambda_http::Request;
use lambda_http::http::Response;
use lambda_http::lambda_runtime::streaming::Body;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use shared::companion::Companion;
use shared::domain::flight::Locale;
use shared::http::auth::AuthenticatedUser;
use shared::http::lambda::{deadline, json_body};
use shared::http::{ApiError, ErrorCode};
use shared::observability::Trace;
use shared::turns::{Begun, TurnRecord, TurnRequest, TurnStatus, turn_id_for_key};

use crate::Deps;
use crate::chats::chat_still_there;
use crate::respond::{accept_language, error, follow, stream};
use crate::{takeover, turn_log, validate};
use agent::guard::input::UserMessage;
use agent::language;
use agent::profiles::AgentProfile;
use agent::texts::UserText;
use agent::timezone::UserTimeZone;
use agent::{StopSignal, TurnErrorCode, TurnInput};

/// Longest `Idempotency-Key` accepted.
pub const MAX_KEY_CHARS: usize = 255;

/// Body of `POST /chat`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    /// Continue this chat; without it, a new chat owned by the caller is created.
    #[serde(default)]
    #[schemars(regex(pattern = validate::ID_PATTERN))]
    pub chat_id: Option<String>,
    /// The user's message: normalised (NFKC; invisible format and control characters
    /// removed) and trimmed, then not empty and at most `MAX_MESSAGE_CHARS` characters (413
    /// above).
    pub message: String,
    /// The agent profile (`travel` by default).
    #[serde(default)]
    pub agent: Option<String>,
    /// Also send `debug` events, if the caller may have them.
    #[serde(default)]
    pub debug: bool,
    /// The user's IANA time zone (e.g. `Europe/Berlin`); remembered in the chat.
    #[serde(default)]
    pub timezone: Option<String>,
    /// The language of the user's texts, a tag such as `de` or `en-GB`. A turn speaks the
    /// message's own language when it shows one, else the chat's, else this one, else
    /// `Accept-Language`'s.
    #[serde(default)]
    pub language: Option<String>,
}

/// Writes the turn's record, which claims its idempotency key. `Err` is the whole answer
/// when the key was used before (see [`begun_already`]).
async fn begin(deps: &Deps, req: &Request, record: &TurnRecord) -> Result<(), Response<Body>> {
    match deps.turns.begin(record).await {
        Ok(Begun::New) => Ok(()),
        Ok(Begun::Existing(turn)) => Err(begun_already(deps, req, record, turn).await),
        Err(e) => Err(error(&ApiError::from(&e))),
    }
}

/// The answer to a request whose idempotency key names a turn that exists: the same request
/// follows the first turn from its first event (never a second turn), and runs the turn
/// again from the request its record keeps if its host died early; another request with
/// that key is 422.
async fn begun_already(
    deps: &Deps,
    req: &Request,
    record: &TurnRecord,
    turn: TurnRecord,
) -> Response<Body> {
    if turn.fingerprint == record.fingerprint {
        if let Err(e) = chat_still_there(deps, &turn).await {
            return error(&e);
        }
        tracing::info!(turn_id = %turn.turn_id, "resent message; following its turn");
        let successor = takeover::successor(deps, req, &turn);
        return follow(deps, req, turn, None, successor);
    }
    error(&ApiError::new(
        ErrorCode::IdempotencyKeyReused,
        "Idempotency-Key: this key was used for a different request",
    ))
}

pub(crate) async fn chat(deps: &Deps, req: &Request, user: AuthenticatedUser) -> Response<Body> {
    let valid = match validate_chat(deps, req) {
        Ok(valid) => valid,
        Err(e) => return error(&e),
    };
    // Asked for without the privilege: ignored, not refused (the turn is the same).
    let debug = valid.body.debug && deps.config.may_debug(&user);
    let turn_deadline = deadline(req, deps.config.turn_timeout);
    let record = new_turn_record(&user.user_id, &valid, turn_deadline, debug);
    let input = |stop: &StopSignal, begin_with: &[Companion]| TurnInput {
        user_id: user.user_id.clone(),
        chat_id: valid.body.chat_id.clone(),
        profile: valid.profile.clone(),
        agent_named: valid.body.agent.is_some(),
        message: valid.message.clone(),
        deadline: turn_deadline,
        timezone: valid.timezone.clone(),
        language: valid.language,
        turn_id: record.turn_id.clone(),
        new_chat_id: record.chat_id.clone(),
        stop: stop.clone(),
        decision: None,
        trace: Trace::of(req),
        begin_with: begin_with.to_vec(),
        resumes: false,
        replay: None,
    };
    // A new chat's turn record goes into the chat's creating write; in an existing chat it
    // is written first, before the chat is taken.
    let begin_with = if record.created {
        match deps.turns.begin_companion(&record) {
            Ok(write) => vec![write],
            Err(e) => return error(&ApiError::from(&e)),
        }
    } else {
        if let Err(response) = begin(deps, req, &record).await {
            return response;
        }
        Vec::new()
    };
    let stop = StopSignal::default();
    let mut opened = deps.agent.open(input(&stop, &begin_with)).await;
    // The chat is held by a turn whose host is gone (crashed, killed, timed out): that turn
    // is ended as interrupted and the chat freed, then this one takes it.
    if let Err(shared::Error::TurnInProgress { turn_id }) = &opened
        && free_dead_turns_chat(deps, req, &record, turn_id).await
    {
        opened = deps.agent.open(input(&stop, &begin_with)).await;
    }
    // A foreign or missing chat, a busy chat or a used-up limit is refused here, before the
    // stream starts; the record keeps why, for a resend that is following it.
    match opened {
        Ok(turn) => stream(deps.clone(), turn, record, stop, debug),
        Err(shared::Error::TurnBegun(turn)) => begun_already(deps, req, &record, *turn).await,
        Err(e) => {
            let api = ApiError::from(&e);
            if let Err(e) = deps.turns.refuse(&record, json!(api)).await {
                tracing::error!(turn_id = %record.turn_id, error = %e, "recording the refusal failed");
            }
            error(&api)
        }
    }
}

/// Whether the chat of `record` was held by turn `holder` whose host is gone, and is free
/// now (see `turn_log::free_chat`).
async fn free_dead_turns_chat(
    deps: &Deps,
    req: &Request,
    record: &TurnRecord,
    holder: &str,
) -> bool {
    let Ok(turn) = deps
        .turns
        .get(&record.owner_id, &record.chat_id, holder)
        .await
    else {
        return false;
    };
    let locale = accept_language(req).unwrap_or_default();
    let message = UserText::for_error(TurnErrorCode::Interrupted).text(locale);
    turn_log::free_chat(deps.turns.as_ref(), deps.chats.as_ref(), &turn, &message).await
}

/// A `POST /chat` that passed every check, before anything is stored.
struct ValidChat {
    body: ChatRequest,
    /// The message, normalised and trimmed.
    message: UserMessage,
    profile: AgentProfile,
    timezone: Option<UserTimeZone>,
    /// The language the request asks for, if it names a supported one.
    language: Option<Locale>,
    idempotency_key: Option<String>,
}

/// Checks the body, the agent, the time zone, the language and the `Idempotency-Key` of a
/// `POST /chat`.
fn validate_chat(deps: &Deps, req: &Request) -> Result<ValidChat, ApiError> {
    let body: ChatRequest = json_body(req)?;
    if let Some(chat_id) = &body.chat_id {
        validate::id("chat_id", chat_id)?;
    }
    // Emptiness and length hold for the text that is stored and sent to the model: NFKC can
    // multiply a message's length, and an invisible-only message normalises to nothing.
    let message = UserMessage::new(&body.message);
    if message.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ValidationFailed,
            "message: must not be empty",
        ));
    }
    let max = deps.config.max_message_chars;
    if message.as_str().chars().count() > max {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("message: at most {max} characters are allowed"),
        ));
    }
    let Some(profile) = deps.agents.profile(body.agent.as_deref()).cloned() else {
        let known: Vec<&str> = deps.agents.names().collect();
        return Err(ApiError::new(
            ErrorCode::ValidationFailed,
            format!("agent: unknown agent; known agents: {}", known.join(", ")),
        )
        .with_details(json!({ "agents": known })));
    };
    let timezone = body
        .timezone
        .as_deref()
        .map(UserTimeZone::parse)
        .transpose()
        .map_err(|e| ApiError::from(&e))?;
    let language = requested_language(&body, req)?;
    let idempotency_key = idempotency_key(req)?;
    Ok(ValidChat {
        body,
        message,
        profile,
        timezone,
        language,
        idempotency_key,
    })
}

/// The `language` field when it names a supported language, else `Accept-Language`'s
/// first supported one; a malformed field is 400 naming it, a malformed header is ignored.
fn requested_language(body: &ChatRequest, req: &Request) -> Result<Option<Locale>, ApiError> {
    let field = body
        .language
        .as_deref()
        .map(language::from_field)
        .transpose()
        .map_err(|e| ApiError::from(&e).with_details(json!({"field": "language"})))?
        .flatten();
    Ok(field.or_else(|| accept_language(req)))
}

/// The record of the turn `chat` starts: its id comes from the `Idempotency-Key` when there
/// is one, so a resend names the same turn; it keeps the checked request, so a resume can
/// run the turn again if its host dies early.
fn new_turn_record(
    user_id: &str,
    chat: &ValidChat,
    deadline: std::time::Instant,
    debug: bool,
) -> TurnRecord {
    let now = time::OffsetDateTime::now_utc();
    TurnRecord {
        turn_id: match &chat.idempotency_key {
            Some(key) => turn_id_for_key(user_id, key),
            None => shared::ids::new_id(),
        },
        owner_id: user_id.to_owned(),
        chat_id: chat
            .body
            .chat_id
            .clone()
            .unwrap_or_else(shared::ids::new_id),
        created: chat.body.chat_id.is_none(),
        fingerprint: fingerprint(&chat.body, chat.message.as_str()),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now + deadline.saturating_duration_since(std::time::Instant::now()),
        created_at: now,
        refusal: None,
        alive_until: Some(now + shared::turns::LIVENESS),
        host: 0,
        request: Some(Box::new(TurnRequest {
            message: chat.message.as_str().to_owned(),
            agent: chat.body.agent.clone(),
            timezone: chat.body.timezone.clone(),
            language: chat.language,
            debug,
        })),
    }
}

/// The request's `Idempotency-Key` (a string, or a structured-field string in quotes).
fn idempotency_key(req: &Request) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get("idempotency-key") else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::new(
            ErrorCode::ValidationFailed,
            format!("Idempotency-Key: 1 to {MAX_KEY_CHARS} visible ASCII characters"),
        )
    };
    let text = value.to_str().map_err(|_| invalid())?.trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    if text.is_empty() || text.len() > MAX_KEY_CHARS || !text.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(invalid());
    }
    Ok(Some(text.to_owned()))
}

/// What makes two requests "the same" for an idempotency key: the body as understood
/// (`message` normalised).
pub fn fingerprint(body: &ChatRequest, message: &str) -> String {
    let mut canonical = json!({
        "chat_id": body.chat_id,
        "message": message,
        "agent": body.agent,
        "debug": body.debug,
        "timezone": body.timezone,
    });
    // Only when sent: the keys of requests before the field keep their fingerprints.
    if let Some(language) = &body.language {
        canonical["language"] = json!(language);
    }
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}
