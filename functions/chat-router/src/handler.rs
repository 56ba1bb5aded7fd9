//! One request: its route and method, the caller's token, the ids in its path, then the
//! resource that serves it (`chat`, `chats`, `decide`, the stores).

use lambda_http::http::{HeaderValue, Method, Response, header};
use lambda_http::lambda_runtime::streaming::Body;
use lambda_http::{Request, RequestExt};
use shared::domain::memory::MemoryChange;
use shared::http::auth::AuthenticatedUser;
use shared::http::{ApiError, ErrorCode};
use shared::observability::Trace;
use tracing::Instrument;

use crate::Deps;
use crate::chat::chat;
use crate::chats::{delete_chat, rename_chat, turn_events};
use crate::respond::{deleted, error, guarded_json, no_content, ok_json, paged, paged_guarded};
use crate::routes::{Route, route};
use crate::{turn_log, validate};

pub use crate::chat::{ChatRequest, MAX_KEY_CHARS, fingerprint};
pub use crate::chats::{AlertList, RenameRequest};
pub use crate::routes::{ROUTE_COUNT, route_summary};

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
