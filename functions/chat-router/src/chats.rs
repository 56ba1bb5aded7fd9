//! A user's chats and their turns, besides starting one: renaming and deleting a chat,
//! following a turn's events; and the list of fare alerts.

use lambda_http::Request;
use lambda_http::http::Response;
use lambda_http::lambda_runtime::streaming::Body;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use shared::domain::alert::FareAlert;
use shared::domain::chat::TITLE_CHARS;
use shared::http::auth::AuthenticatedUser;
use shared::http::lambda::json_body;
use shared::http::{ApiError, ErrorCode};
use shared::turns::{TurnRecord, TurnStatus};

use crate::respond::{error, follow};
use crate::{Deps, takeover, validate};
/// The answer of `GET /alerts`.
#[derive(Serialize, JsonSchema)]
pub struct AlertList {
    /// Oldest first, each with its matches, newest first.
    pub alerts: Vec<FareAlert>,
}

/// `GET …/turns/{turn_id}/events`: the turn's events after the resume point, followed
/// until `done`.
pub(crate) async fn turn_events(
    deps: &Deps,
    req: &Request,
    user_id: &str,
    chat_id: &str,
    turn_id: &str,
) -> Response<Body> {
    let after = match validate::resume_point(req) {
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
    // A turn whose host died before logging more than `init` is run again here.
    let successor = takeover::successor(deps, req, &turn);
    follow(deps, req, turn, after, successor)
}

/// A turn's events are readable only while its chat exists: deleting a chat makes the
/// answers of its turns unreadable at once, through the resume route and an
/// `Idempotency-Key` replay alike (404, as for a chat that never was); their records expire
/// with their TTL. A refused turn never had a chat of its own and holds no answer.
pub(crate) async fn chat_still_there(deps: &Deps, turn: &TurnRecord) -> Result<(), ApiError> {
    if turn.status == TurnStatus::Refused {
        return Ok(());
    }
    match deps.chats.get(&turn.owner_id, &turn.chat_id).await {
        Ok(_) => Ok(()),
        Err(e) => Err(ApiError::from(&e)),
    }
}

/// `PATCH /chats/{chat_id}`: the title its owner chose.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameRequest {
    /// 1 to 80 characters once trimmed; control and invisible characters are removed.
    pub title: String,
}

pub(crate) async fn rename_chat(
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

/// Deletes the user's chat: its tool-call records first, then the chat with its messages
/// and state (last, so a delete that stops half-way can be repeated). A chat a turn holds
/// is 409. Its turn records expire with their 24-hour TTL, unreadable from the moment the
/// chat is gone ([`chat_still_there`]).
pub(crate) async fn delete_chat(
    deps: &Deps,
    user: &AuthenticatedUser,
    chat_id: &str,
) -> shared::Result<()> {
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
