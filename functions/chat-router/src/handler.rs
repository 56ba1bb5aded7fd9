//! Routes, authentication and the response stream.
//!
//! Everything that can be refused is refused before the stream starts, as a JSON error with
//! a proper status: bad token (401), bad body (400/413), unknown agent (400), foreign or
//! missing chat (404), a reused idempotency key (422). Once `200 text/event-stream` is
//! sent, problems arrive as `error` events followed by `done`.
//!
//! A turn is begun by writing its record (the `Idempotency-Key`'s turn, or a new one)
//! before anything else: a resent request finds the record and follows that turn's event
//! log instead of starting another (see `turn_log`).

use lambda_http::http::{HeaderValue, Method, Response, header};
use lambda_http::lambda_runtime::streaming::{Body, channel};
use lambda_http::{Request, RequestExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use shared::domain::alert::FareAlert;
use shared::domain::chat::TITLE_CHARS;
use shared::domain::flight::Locale;
use shared::domain::memory::MemoryChange;
use shared::http::auth::AuthenticatedUser;
use shared::http::lambda::{deadline, error_response, json_body, json_response};
use shared::http::{ApiError, ErrorCode};
use shared::observability::Trace;
use shared::turns::{Begun, TurnRecord, TurnStatus, turn_id_for_key};
use tracing::Instrument;

use crate::Deps;
use crate::events::Emitter;
use crate::{turn_log, validate};
use agent::language;
use agent::profiles::AgentProfile;
use agent::timezone::UserTimeZone;
use agent::{OpenTurn, StopSignal, TurnInput};

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
    /// The language of the user's texts, a tag such as `de` or `en-GB`; before
    /// `Accept-Language` and the message's own.
    #[serde(default)]
    pub language: Option<String>,
}

#[derive(strum::EnumCount)]
enum Route<'a> {
    Chat,
    Chats,
    Messages {
        chat_id: &'a str,
    },
    /// `PATCH` renames the chat, `DELETE` deletes it.
    OneChat {
        chat_id: &'a str,
    },
    ToolCalls {
        chat_id: &'a str,
    },
    RefusedCalls {
        chat_id: &'a str,
    },
    ToolCall {
        chat_id: &'a str,
        call_id: &'a str,
    },
    Cancel {
        chat_id: &'a str,
        call_id: &'a str,
    },
    /// `approve` or `deny` a call awaiting approval; streams the turn that follows.
    Decide {
        chat_id: &'a str,
        call_id: &'a str,
        approve: bool,
    },
    TurnEvents {
        chat_id: &'a str,
        turn_id: &'a str,
    },
    TurnCancel {
        chat_id: &'a str,
        turn_id: &'a str,
    },
    /// `GET` lists what is remembered about the user, `DELETE` forgets all of it.
    Memory,
    /// `DELETE` forgets one preference (by name) or note (by id).
    Forget {
        item: &'a str,
    },
    /// `GET` lists the user's fare alerts with what they found.
    Alerts,
    /// `DELETE` removes one of the user's fare alerts.
    Alert {
        alert_id: &'a str,
    },
}

/// Matches on the path's trailing segments, so the router works under any prefix (a
/// Function URL, `cargo lambda watch`'s `/lambda-url/chat-router/…`, a custom domain).
fn route(path: &str) -> Option<Route<'_>> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [.., "chats", chat_id, "tool-calls"] => Some(Route::ToolCalls { chat_id }),
        [.., "chats", chat_id, "refused-calls"] => Some(Route::RefusedCalls { chat_id }),
        [.., "chats", chat_id, "tool-calls", call_id] => Some(Route::ToolCall { chat_id, call_id }),
        [.., "chats", chat_id, "tool-calls", call_id, "cancel"] => {
            Some(Route::Cancel { chat_id, call_id })
        }
        [
            ..,
            "chats",
            chat_id,
            "tool-calls",
            call_id,
            verb @ ("approve" | "deny"),
        ] => Some(Route::Decide {
            chat_id,
            call_id,
            approve: *verb == "approve",
        }),
        [.., "chats", chat_id, "turns", turn_id, "events"] => {
            Some(Route::TurnEvents { chat_id, turn_id })
        }
        [.., "chats", chat_id, "turns", turn_id, "cancel"] => {
            Some(Route::TurnCancel { chat_id, turn_id })
        }
        [.., "chats", chat_id, "messages"] => Some(Route::Messages { chat_id }),
        [.., "chats", chat_id] => Some(Route::OneChat { chat_id }),
        [.., "chats"] => Some(Route::Chats),
        [.., "chat"] => Some(Route::Chat),
        [.., "memory"] => Some(Route::Memory),
        [.., "memory", item] => Some(Route::Forget { item }),
        [.., "alerts"] => Some(Route::Alerts),
        [.., "alerts", alert_id] => Some(Route::Alert { alert_id }),
        _ => None,
    }
}

/// How many routes the router has: every one must be in the OpenAPI document.
pub const ROUTE_COUNT: usize = <Route as strum::EnumCount>::COUNT;

/// The name of the route `path` matches and the methods it answers: how the OpenAPI
/// document is checked against the router.
pub fn route_summary(path: &str) -> Option<(&'static str, &'static [Method])> {
    route(path).map(|r| (r.name(), r.methods()))
}

impl Route<'_> {
    /// A name per route, for [`route_summary`].
    fn name(&self) -> &'static str {
        match self {
            Route::Chat => "chat",
            Route::Chats => "chats",
            Route::Messages { .. } => "messages",
            Route::OneChat { .. } => "one_chat",
            Route::ToolCalls { .. } => "tool_calls",
            Route::RefusedCalls { .. } => "refused_calls",
            Route::ToolCall { .. } => "tool_call",
            Route::Cancel { .. } => "cancel",
            Route::Decide { .. } => "decide",
            Route::TurnEvents { .. } => "turn_events",
            Route::TurnCancel { .. } => "turn_cancel",
            Route::Memory => "memory",
            Route::Forget { .. } => "forget",
            Route::Alerts => "alerts",
            Route::Alert { .. } => "alert",
        }
    }

    /// The methods the route answers.
    fn methods(&self) -> &'static [Method] {
        match self {
            Route::Chat
            | Route::Cancel { .. }
            | Route::TurnCancel { .. }
            | Route::Decide { .. } => &[Method::POST],
            Route::OneChat { .. } => &[Method::PATCH, Method::DELETE],
            Route::Forget { .. } | Route::Alert { .. } => &[Method::DELETE],
            Route::Memory => &[Method::GET, Method::DELETE],
            _ => &[Method::GET],
        }
    }

    /// The ids the path names, each checked by [`validate::id`].
    fn ids(&self) -> Vec<(&'static str, &str)> {
        match *self {
            Route::Chat | Route::Chats | Route::Memory | Route::Alerts => Vec::new(),
            Route::Forget { item } => vec![("item", item)],
            Route::Alert { alert_id } => vec![("alert_id", alert_id)],
            Route::ToolCalls { chat_id }
            | Route::Messages { chat_id }
            | Route::RefusedCalls { chat_id }
            | Route::OneChat { chat_id } => vec![("chat_id", chat_id)],
            Route::ToolCall { chat_id, call_id }
            | Route::Cancel { chat_id, call_id }
            | Route::Decide {
                chat_id, call_id, ..
            } => {
                vec![("chat_id", chat_id), ("call_id", call_id)]
            }
            Route::TurnEvents { chat_id, turn_id } | Route::TurnCancel { chat_id, turn_id } => {
                vec![("chat_id", chat_id), ("turn_id", turn_id)]
            }
        }
    }
}

/// Handles one request inside a span that carries its X-Ray trace id, so every log line of
/// it (and of the turn it starts) can be found by that id.
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let trace = Trace::of(&req);
    let span = Trace::span(trace.as_ref());
    route_request(deps, req).instrument(span).await
}

async fn route_request(deps: &Deps, req: Request) -> Response<Body> {
    let path = req.raw_http_path().to_owned();
    let path = if path.is_empty() {
        req.uri().path().to_owned()
    } else {
        path
    };
    let Some(route) = route(&path) else {
        return error(&ApiError::new(
            ErrorCode::NotFound,
            format!("no route for {path}"),
        ));
    };
    let allowed = route.methods();
    if !allowed.contains(req.method()) {
        let names: Vec<&str> = allowed.iter().map(Method::as_str).collect();
        let names = names.join(", ");
        let mut response = error(&ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{} is not allowed here; use {names}", req.method()),
        ));
        if let Ok(value) = HeaderValue::from_str(&names) {
            response.headers_mut().insert(header::ALLOW, value);
        }
        return response;
    }
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let user = match deps.auth.authenticate(authorization).await {
        Ok(user) => user,
        Err(e) => return error(&ApiError::from(&e)),
    };
    if let Err(e) = route
        .ids()
        .into_iter()
        .try_for_each(|(field, value)| validate::id(field, value).map(drop))
    {
        return error(&e);
    }
    dispatch(deps, &req, route, user).await
}

/// Runs an authenticated request on its route.
async fn dispatch(
    deps: &Deps,
    req: &Request,
    route: Route<'_>,
    user: AuthenticatedUser,
) -> Response<Body> {
    let user_id = user.user_id.as_str();
    match route {
        Route::Chat => chat(deps, req, user).await,
        Route::OneChat { chat_id } if req.method() == Method::PATCH => {
            match rename_chat(deps, req, user_id, chat_id).await {
                Ok(()) => no_content(),
                Err(e) => error(&e),
            }
        }
        Route::OneChat { chat_id } => deleted(delete_chat(deps, &user, chat_id).await),
        Route::TurnEvents { chat_id, turn_id } => {
            turn_events(deps, req, user_id, chat_id, turn_id).await
        }
        // Stops the turn at its next safe point; a turn already over is left as it is.
        Route::TurnCancel { chat_id, turn_id } => ok_json(
            deps.turns
                .request_cancel(user_id, chat_id, turn_id)
                .await
                .map(|turn| turn_log::cancel_response(&turn)),
        ),
        Route::Chats => {
            paged(req, async |limit, cursor: Option<String>| {
                deps.chats.list(user_id, limit, cursor.as_deref()).await
            })
            .await
        }
        // Stored tool results and session state hold upstream free text: guarded as the
        // turn's events were.
        Route::Messages { chat_id } => {
            paged_guarded(deps, req, async |limit, cursor: Option<String>| {
                let cursor = cursor.as_deref();
                deps.chats.messages(user_id, chat_id, limit, cursor).await
            })
            .await
        }
        // A chat without tool calls has no item to carry its owner: check the chat first.
        Route::ToolCalls { chat_id } => {
            paged_guarded(deps, req, async |limit, cursor: Option<String>| {
                deps.chats.get(user_id, chat_id).await?;
                let cursor = cursor.as_deref();
                deps.ledger.list(user_id, chat_id, limit, cursor).await
            })
            .await
        }
        Route::RefusedCalls { chat_id } => {
            paged_guarded(deps, req, async |limit, cursor: Option<String>| {
                deps.chats.get(user_id, chat_id).await?;
                let cursor = cursor.as_deref();
                deps.ledger
                    .list_refused(user_id, chat_id, limit, cursor)
                    .await
            })
            .await
        }
        // queued | running → canceled: a worker skips a canceled call; a running one's
        // late finish is refused by the fence.
        Route::Cancel { chat_id, call_id } => {
            guarded_json(deps, deps.ledger.cancel(user_id, chat_id, call_id).await)
        }
        Route::ToolCall { chat_id, call_id } => {
            guarded_json(deps, deps.ledger.get(user_id, chat_id, call_id).await)
        }
        Route::Decide {
            chat_id,
            call_id,
            approve,
        } => crate::decide::decide(deps, req, user, chat_id, call_id, approve).await,
        Route::Memory if req.method() == Method::GET => ok_json(deps.memory.get(user_id).await),
        Route::Memory => deleted(deps.memory.clear(user_id).await),
        Route::Forget { item } => {
            let change = MemoryChange::Forget(item.to_owned());
            deleted(deps.memory.change(user_id, &change).await.map(drop))
        }
        Route::Alerts => ok_json(
            deps.alerts
                .list(user_id)
                .await
                .map(|alerts| AlertList { alerts }),
        ),
        // Another user's alert is as missing as one that never was: 404 either way.
        Route::Alert { alert_id } => deleted(deps.alerts.delete(user_id, alert_id).await),
    }
}

/// The answer of `GET /alerts`.
#[derive(Serialize, JsonSchema)]
pub struct AlertList {
    /// Oldest first, each with its matches, newest first.
    pub alerts: Vec<FareAlert>,
}

/// `GET …/turns/{turn_id}/events`: the turn's events after the resume point, followed
/// until `done`.
async fn turn_events(
    deps: &Deps,
    req: &Request,
    user_id: &str,
    chat_id: &str,
    turn_id: &str,
) -> Response<Body> {
    let after = match resume_point(req) {
        Ok(after) => after,
        Err(e) => return error(&e),
    };
    let turn = match deps.turns.get(user_id, chat_id, turn_id).await {
        Ok(turn) => turn,
        Err(e) => return error(&ApiError::from(&e)),
    };
    if let Err(e) = chat_still_there(deps, &turn).await {
        return error(&e);
    }
    follow(deps, req, turn, after)
}

/// A turn's events are readable only while its chat exists: deleting a chat makes the
/// answers of its turns unreadable at once, through the resume route and an
/// `Idempotency-Key` replay alike (404, as for a chat that never was); their records expire
/// with their TTL. A refused turn never had a chat of its own and holds no answer.
async fn chat_still_there(deps: &Deps, turn: &TurnRecord) -> Result<(), ApiError> {
    if turn.status == TurnStatus::Refused {
        return Ok(());
    }
    match deps.chats.get(&turn.owner_id, &turn.chat_id).await {
        Ok(_) => Ok(()),
        Err(e) => Err(ApiError::from(&e)),
    }
}

/// 204, or the error in the envelope.
fn deleted(result: shared::Result<()>) -> Response<Body> {
    match result {
        Ok(()) => no_content(),
        Err(e) => error(&ApiError::from(&e)),
    }
}

/// A listing: `limit` and `cursor` from the query (400 when malformed), then `list`'s page.
async fn paged<T: serde::Serialize>(
    req: &Request,
    list: impl AsyncFnOnce(u32, Option<String>) -> shared::Result<T>,
) -> Response<Body> {
    match validate::page(req) {
        Ok((limit, cursor)) => ok_json(list(limit, cursor).await),
        Err(e) => error(&e),
    }
}

/// As [`paged`], for pages of stored texts: calls and messages ([`guarded_json`]).
async fn paged_guarded<T: serde::Serialize>(
    deps: &Deps,
    req: &Request,
    list: impl AsyncFnOnce(u32, Option<String>) -> shared::Result<T>,
) -> Response<Body> {
    match validate::page(req) {
        Ok((limit, cursor)) => guarded_json(deps, list(limit, cursor).await),
        Err(e) => error(&e),
    }
}

/// As [`ok_json`] for what holds stored texts (the requests the model made, upstream
/// results, refusals, tool messages and session state): each string passes the output
/// guard's checks first, as in a turn's events.
fn guarded_json<T: serde::Serialize>(deps: &Deps, result: shared::Result<T>) -> Response<Body> {
    let value = result.and_then(|value| serde_json::to_value(value).map_err(shared::Error::from));
    match value {
        Ok(mut json) => {
            deps.agent.audit_guard().value(&mut json);
            json_response(200, &json)
        }
        Err(e) => error(&ApiError::from(&e)),
    }
}

/// 200 with `result` as JSON, or its error in the envelope.
fn ok_json<T: serde::Serialize>(result: shared::Result<T>) -> Response<Body> {
    match result {
        Ok(value) => json_response(200, &value),
        Err(e) => error(&ApiError::from(&e)),
    }
}

/// Deletes the user's chat: its tool-call records first, then the chat with its messages
/// and state (last, so a delete that stops half-way can be repeated). A chat a turn holds
/// is 409. Its turn records expire with their 24-hour TTL, unreadable from the moment the
/// chat is gone ([`chat_still_there`]).
/// `PATCH /chats/{chat_id}`: the title its owner chose.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameRequest {
    /// 1 to 80 characters once trimmed; control and invisible characters are removed.
    pub title: String,
}

async fn rename_chat(
    deps: &Deps,
    req: &Request,
    user_id: &str,
    chat_id: &str,
) -> Result<(), ApiError> {
    let body: RenameRequest = json_body(req)?;
    let title = agent::guard::input::normalise(&body.title)
        .text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let length = title.chars().count();
    if !(1..=TITLE_CHARS).contains(&length) {
        return Err(ApiError::new(
            ErrorCode::ValidationFailed,
            format!("title: 1 to {TITLE_CHARS} characters are allowed, got {length}"),
        )
        .with_details(json!({"field": "title"})));
    }
    deps.chats
        .rename(user_id, chat_id, &title)
        .await
        .map_err(|e| ApiError::from(&e))
}

async fn delete_chat(deps: &Deps, user: &AuthenticatedUser, chat_id: &str) -> shared::Result<()> {
    let chat = deps.chats.get(&user.user_id, chat_id).await?;
    let calls = deps.ledger.delete_chat(&chat.id).await?;
    deps.chats.delete(&user.user_id, &chat.id).await?;
    tracing::info!(
        chat_id,
        tool_calls = calls,
        "chat deleted on its owner's request"
    );
    Ok(())
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
/// follows the first turn from its first event (never a second turn); another request with
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
        return follow(deps, req, turn, None);
    }
    error(&ApiError::new(
        ErrorCode::IdempotencyKeyReused,
        "Idempotency-Key: this key was used for a different request",
    ))
}

async fn chat(deps: &Deps, req: &Request, user: AuthenticatedUser) -> Response<Body> {
    let valid = match validate_chat(deps, req) {
        Ok(valid) => valid,
        Err(e) => return error(&e),
    };
    // Asked for without the privilege: ignored, not refused (the turn is the same).
    let debug = valid.body.debug && deps.config.may_debug(&user);
    let turn_deadline = deadline(req, deps.config.turn_timeout);
    let record = new_turn_record(&user.user_id, &valid, turn_deadline);
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
    let input = TurnInput {
        user_id: user.user_id,
        chat_id: valid.body.chat_id,
        profile: valid.profile,
        agent_named: valid.body.agent.is_some(),
        message: valid.message,
        deadline: turn_deadline,
        timezone: valid.timezone,
        language: valid.language,
        turn_id: record.turn_id.clone(),
        new_chat_id: record.chat_id.clone(),
        stop: stop.clone(),
        decision: None,
        trace: Trace::of(req),
        begin_with,
    };
    // A foreign or missing chat, a busy chat or a used-up limit is refused here, before the
    // stream starts; the record keeps why, for a resend that is following it.
    match deps.agent.open(input).await {
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

/// A `POST /chat` that passed every check, before anything is stored.
struct ValidChat {
    body: ChatRequest,
    /// The message, normalised and trimmed.
    message: String,
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
    let normalised = agent::guard::input::normalise(&body.message);
    if normalised.removed_invisible > 0 {
        tracing::warn!(
            removed = normalised.removed_invisible,
            "input guard: invisible format or control characters removed from the message"
        );
    }
    let message = normalised.text.trim().to_owned();
    if message.is_empty() {
        return Err(ApiError::new(
            ErrorCode::ValidationFailed,
            "message: must not be empty",
        ));
    }
    let max = deps.config.max_message_chars;
    if message.chars().count() > max {
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

/// The first supported language of the request's `Accept-Language`.
pub(crate) fn accept_language(req: &Request) -> Option<Locale> {
    req.headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .and_then(language::from_accept_language)
}

/// The record of the turn `chat` starts: its id comes from the `Idempotency-Key` when there
/// is one, so a resend names the same turn.
fn new_turn_record(user_id: &str, chat: &ValidChat, deadline: std::time::Instant) -> TurnRecord {
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
        fingerprint: fingerprint(&chat.body, &chat.message),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now + deadline.saturating_duration_since(std::time::Instant::now()),
        created_at: now,
        refusal: None,
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

/// What makes two requests "the same" for an idempotency key: the body as understood.
fn fingerprint(body: &ChatRequest, message: &str) -> String {
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

/// Where a resume starts: after `Last-Event-ID` (or `?after=`); `None` replays from `init`.
fn resume_point(req: &Request) -> Result<Option<u64>, ApiError> {
    let header = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let query = req
        .query_string_parameters_ref()
        .and_then(|q| q.first("after"))
        .map(str::to_owned);
    header
        .or(query)
        .map(|v| {
            v.parse::<u64>().map_err(|_| {
                ApiError::new(
                    ErrorCode::ValidationFailed,
                    "Last-Event-ID / after: must be an event id (a whole number)",
                )
            })
        })
        .transpose()
}

/// Starts the turn on its own task and returns the stream its events are written to.
pub(crate) fn stream(
    deps: Deps,
    turn: OpenTurn,
    record: TurnRecord,
    stop: StopSignal,
    debug: bool,
) -> Response<Body> {
    let (emitter, queue) = Emitter::new(debug);
    let (sender, body) = channel();
    let agent = deps.agent.clone();
    // The turn's tasks outlive the handler: they carry its span (and so its trace id) and
    // the chat and turn ids on every log line.
    let span = tracing::info_span!("turn", chat_id = %turn.chat_id(), turn_id = %record.turn_id);
    tokio::spawn(async move { agent.run_turn(turn, &emitter).await }.instrument(span.clone()));
    // A gone client only stops the sending: holding the body open until the turn's log is
    // written keeps the invocation (and so the turn) alive on Lambda.
    tokio::spawn(
        turn_log::record(deps.turns.clone(), record, stop, queue, sender).instrument(span),
    );
    event_stream(body)
}

/// Streams a turn's stored events after `after`, following it until `done`; an error it
/// adds is in the follower's `Accept-Language`.
pub(crate) fn follow(
    deps: &Deps,
    req: &Request,
    turn: TurnRecord,
    after: Option<u64>,
) -> Response<Body> {
    let (sender, body) = channel();
    let until = deadline(req, deps.config.turn_timeout);
    let locale = accept_language(req).unwrap_or_default();
    tokio::spawn(turn_log::follow(
        deps.turns.clone(),
        turn,
        after,
        until,
        locale,
        sender,
    ));
    event_stream(body)
}

fn event_stream(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn no_content() -> Response<Body> {
    let mut response = Response::new(Body::from(String::new()));
    *response.status_mut() = lambda_http::http::StatusCode::NO_CONTENT;
    response
}

pub(crate) fn error(api: &ApiError) -> Response<Body> {
    let mut response: Response<Body> = error_response(api);
    if api.code == ErrorCode::Unauthorized {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(seconds) = retry_after(api) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Whole seconds until a 429's `reset_at` (at least 1), for `Retry-After`.
fn retry_after(api: &ApiError) -> Option<i64> {
    if api.code != ErrorCode::RateLimited {
        return None;
    }
    let reset = api.details.as_ref()?.get("reset_at")?.as_str()?;
    let reset =
        time::OffsetDateTime::parse(reset, &time::format_description::well_known::Rfc3339).ok()?;
    let wait = (reset - time::OffsetDateTime::now_utc())
        .as_seconds_f64()
        .ceil();
    Some((wait as i64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_under_any_prefix() {
        assert!(matches!(route("/chat"), Some(Route::Chat)));
        assert!(matches!(
            route("/lambda-url/chat-router/chat"),
            Some(Route::Chat)
        ));
        assert!(matches!(
            route("/chats/c1/tool-calls"),
            Some(Route::ToolCalls { chat_id: "c1" })
        ));
        assert!(matches!(
            route("/chats/c1/tool-calls/t9"),
            Some(Route::ToolCall {
                chat_id: "c1",
                call_id: "t9"
            })
        ));
        assert!(matches!(
            route("/chats/c1/tool-calls/t9/cancel"),
            Some(Route::Cancel {
                chat_id: "c1",
                call_id: "t9"
            })
        ));
        assert!(matches!(route("/memory"), Some(Route::Memory)));
        assert!(matches!(
            route("/memory/home_airport"),
            Some(Route::Forget {
                item: "home_airport"
            })
        ));
        assert!(matches!(route("/alerts"), Some(Route::Alerts)));
        assert!(matches!(
            route("/alerts/01J0ALERT"),
            Some(Route::Alert {
                alert_id: "01J0ALERT"
            })
        ));
        assert!(route("/nope").is_none());
    }
}
