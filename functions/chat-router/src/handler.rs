//! Routes, authentication and the response stream.
//!
//! Everything that can be refused is refused before the stream starts, as a JSON error with
//! a proper status: bad token (401), bad body (400/413), unknown agent (400), foreign or
//! missing chat (404). Once `200 text/event-stream` is sent, problems arrive as `error`
//! events followed by `done`.

use bytes::Bytes;
use lambda_http::http::{HeaderValue, Method, Response, header};
use lambda_http::lambda_runtime::streaming::{Body, channel};
use lambda_http::{Request, RequestExt};
use serde::Deserialize;
use serde_json::json;
use shared::http::auth::AuthenticatedUser;
use shared::http::lambda::{deadline, error_response, json_body, json_response};
use shared::http::{ApiError, ErrorCode};

use crate::Deps;
use crate::events::{self, Emitter};
use agent::timezone::UserTimeZone;
use agent::{OpenTurn, TurnEvent, TurnInput};

/// Most tool calls returned by one audit page.
const MAX_PAGE: u32 = 100;

/// Body of `POST /chat`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    #[serde(default)]
    pub chat_id: Option<String>,
    pub message: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub debug: bool,
    /// The user's IANA time zone (e.g. `Europe/Berlin`); remembered in the chat.
    #[serde(default)]
    pub timezone: Option<String>,
}

enum Route<'a> {
    Chat,
    ToolCalls { chat_id: &'a str },
    RefusedCalls { chat_id: &'a str },
    ToolCall { chat_id: &'a str, call_id: &'a str },
    Cancel { chat_id: &'a str, call_id: &'a str },
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
        [.., "chat"] => Some(Route::Chat),
        _ => None,
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
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
    let (allowed, method_ok) = match route {
        Route::Chat | Route::Cancel { .. } => ("POST", req.method() == Method::POST),
        _ => ("GET", req.method() == Method::GET),
    };
    if !method_ok {
        let mut response = error(&ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{} is not allowed here; use {allowed}", req.method()),
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allowed));
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
    match route {
        Route::Chat => chat(deps, &req, user).await,
        Route::ToolCalls { chat_id } => {
            let (limit, cursor) = page_request(&req);
            let page = async {
                // A chat without tool calls has no item to carry its owner: check the chat.
                deps.chats.get(&user.user_id, chat_id).await?;
                deps.ledger
                    .list(&user.user_id, chat_id, limit, cursor.as_deref())
                    .await
            };
            match page.await {
                Ok(page) => json_response(200, &page),
                Err(e) => error(&ApiError::from(&e)),
            }
        }
        Route::RefusedCalls { chat_id } => {
            let (limit, cursor) = page_request(&req);
            let page = async {
                deps.chats.get(&user.user_id, chat_id).await?;
                deps.ledger
                    .list_refused(&user.user_id, chat_id, limit, cursor.as_deref())
                    .await
            };
            match page.await {
                Ok(page) => json_response(200, &page),
                Err(e) => error(&ApiError::from(&e)),
            }
        }
        // queued | running → canceled: a worker skips a canceled call; a running one's
        // late finish is refused by the fence.
        Route::Cancel { chat_id, call_id } => {
            match deps.ledger.cancel(&user.user_id, chat_id, call_id).await {
                Ok(record) => json_response(200, &record),
                Err(e) => error(&ApiError::from(&e)),
            }
        }
        Route::ToolCall { chat_id, call_id } => {
            match deps.ledger.get(&user.user_id, chat_id, call_id).await {
                Ok(record) => json_response(200, &record),
                Err(e) => error(&ApiError::from(&e)),
            }
        }
    }
}

/// `limit` (1–100, default 20) and `cursor` of an audit listing.
fn page_request(req: &Request) -> (u32, Option<String>) {
    let query = req.query_string_parameters_ref();
    let limit = query
        .and_then(|q| q.first("limit"))
        .and_then(|l| l.parse::<u32>().ok())
        .unwrap_or(20)
        .clamp(1, MAX_PAGE);
    let cursor = query.and_then(|q| q.first("cursor")).map(str::to_owned);
    (limit, cursor)
}

async fn chat(deps: &Deps, req: &Request, user: AuthenticatedUser) -> Response<Body> {
    let body: ChatRequest = match json_body(req) {
        Ok(body) => body,
        Err(e) => return error(&e),
    };
    // Asked for without the privilege: ignored, not refused (the turn is the same).
    let debug = body.debug && deps.config.may_debug(&user);
    let message = body.message.trim().to_owned();
    if message.is_empty() {
        return error(&ApiError::new(
            ErrorCode::ValidationFailed,
            "message: must not be empty",
        ));
    }
    let max = deps.config.max_message_chars;
    if message.chars().count() > max {
        return error(&ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("message: at most {max} characters are allowed"),
        ));
    }
    let Some(profile) = deps.agents.profile(body.agent.as_deref()).cloned() else {
        let known: Vec<&str> = deps.agents.names().collect();
        return error(
            &ApiError::new(
                ErrorCode::ValidationFailed,
                format!("agent: unknown agent; known agents: {}", known.join(", ")),
            )
            .with_details(json!({ "agents": known })),
        );
    };
    let timezone = match body
        .timezone
        .as_deref()
        .map(UserTimeZone::parse)
        .transpose()
    {
        Ok(zone) => zone,
        Err(e) => return error(&ApiError::from(&e)),
    };
    let input = TurnInput {
        authorization: user.authorization_header(),
        user_id: user.user_id,
        chat_id: body.chat_id,
        profile,
        message,
        deadline: deadline(req, deps.config.turn_timeout),
        timezone,
    };
    // A foreign or missing chat is refused here, before the stream starts.
    match deps.agent.open(input).await {
        Ok(turn) => stream(deps.clone(), turn, debug),
        Err(e) => error(&ApiError::from(&e)),
    }
}

/// Starts the turn on its own task and returns the stream its events are written to.
fn stream(deps: Deps, turn: OpenTurn, debug: bool) -> Response<Body> {
    let (emitter, mut queue) = Emitter::new(debug);
    let (mut sender, body) = channel();
    tokio::spawn(async move { deps.agent.run_turn(turn, &emitter).await });
    tokio::spawn(async move {
        let mut connected = true;
        // Drain until the turn drops its emitter. A gone client only stops the writing:
        // holding the body open until the turn ends keeps the invocation (and so the
        // turn's writes) alive on Lambda.
        while let Some(event) = queue.recv().await {
            if connected
                && sender
                    .send_data(Bytes::from(events::to_sse(&event)))
                    .await
                    .is_err()
            {
                tracing::warn!("client disconnected; finishing the turn without it");
                connected = false;
            }
            if matches!(event, TurnEvent::Done) {
                break;
            }
        }
    });
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

fn error(api: &ApiError) -> Response<Body> {
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
        assert!(route("/nope").is_none());
    }
}
