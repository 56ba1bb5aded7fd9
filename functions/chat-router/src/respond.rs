//! Responses every route builds: the error envelope (with `WWW-Authenticate` and
//! `Retry-After` where they apply), JSON bodies and pages, and event streams.

use lambda_http::Request;
use lambda_http::http::{HeaderValue, Response, header};
use lambda_http::lambda_runtime::streaming::{Body, Sender, channel};
use shared::domain::flight::Locale;
use shared::http::lambda::{deadline, error_response, json_response};
use shared::http::{ApiError, ErrorCode};
use shared::turns::TurnRecord;
use tracing::Instrument;

use crate::Deps;
use crate::events::Emitter;
use crate::{turn_log, validate};
use agent::language;
use agent::{OpenTurn, StopSignal};

/// 204, or the error in the envelope.
pub(crate) fn deleted(result: shared::Result<()>) -> Response<Body> {
    match result {
        Ok(()) => no_content(),
        Err(e) => error(&ApiError::from(&e)),
    }
}

/// A listing: `limit` and `cursor` from the query (400 when malformed), then `list`'s page.
pub(crate) async fn paged<T: serde::Serialize>(
    req: &Request,
    list: impl AsyncFnOnce(u32, Option<String>) -> shared::Result<T>,
) -> Response<Body> {
    match validate::page(req) {
        Ok((limit, cursor)) => ok_json(list(limit, cursor).await),
        Err(e) => error(&e),
    }
}

/// As [`paged`], for pages of stored texts: calls and messages ([`guarded_json`]).
pub(crate) async fn paged_guarded<T: serde::Serialize>(
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
pub(crate) fn guarded_json<T: serde::Serialize>(
    deps: &Deps,
    result: shared::Result<T>,
) -> Response<Body> {
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
pub(crate) fn ok_json<T: serde::Serialize>(result: shared::Result<T>) -> Response<Body> {
    match result {
        Ok(value) => json_response(200, &value),
        Err(e) => error(&ApiError::from(&e)),
    }
}

/// The first supported language of the request's `Accept-Language`.
pub(crate) fn accept_language(req: &Request) -> Option<Locale> {
    req.headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .and_then(language::from_accept_language)
}

/// Starts the turn on its own task and returns the stream its events are written to.
pub(crate) fn stream(
    deps: Deps,
    turn: OpenTurn,
    record: TurnRecord,
    stop: StopSignal,
    debug: bool,
) -> Response<Body> {
    let (sender, body) = channel();
    tokio::spawn(run(deps, turn, record, stop, debug, sender, None));
    event_stream(body)
}

/// Runs the turn on its own task and records its events, sending them to `client`; returns
/// once `done` is stored and sent. `resumed`: see `turn_log::record`.
pub(crate) async fn run(
    deps: Deps,
    turn: OpenTurn,
    record: TurnRecord,
    stop: StopSignal,
    debug: bool,
    client: Sender,
    resumed: Option<u64>,
) {
    let (emitter, queue) = Emitter::new(debug);
    let agent = deps.agent.clone();
    // The turn's tasks outlive the handler: they carry its span (and so its trace id) and
    // the chat and turn ids on every log line.
    let span = tracing::info_span!("turn", chat_id = %turn.chat_id(), turn_id = %record.turn_id);
    // The turn's spans go out once it has ended, before its stream does.
    let running = tokio::spawn(
        async move {
            agent.run_turn(turn, &emitter).await;
            shared::telemetry::flush().await;
        }
        .instrument(span.clone()),
    );
    // A gone client only stops the sending: holding the body open until the turn's log is
    // written (and its spans sent) keeps the invocation (and so the turn) alive on Lambda.
    turn_log::record(
        deps.turns.clone(),
        record,
        stop,
        queue,
        client,
        running,
        resumed,
    )
    .instrument(span)
    .await;
}

/// Streams a turn's stored events after `after`, following it until `done`; an error it
/// adds is in the follower's `Accept-Language`. A resent request passes the `successor`
/// that takes the turn over if its host died early (see `turn_log::follow`).
pub(crate) fn follow(
    deps: &Deps,
    req: &Request,
    turn: TurnRecord,
    after: Option<u64>,
    successor: Option<turn_log::Successor>,
) -> Response<Body> {
    let (sender, body) = channel();
    let follower = turn_log::Follower {
        until: deadline(req, deps.config.turn_timeout),
        locale: accept_language(req).unwrap_or_default(),
    };
    tokio::spawn(turn_log::follow(
        deps.turns.clone(),
        deps.chats.clone(),
        turn,
        after,
        follower,
        sender,
        successor,
    ));
    event_stream(body)
}

pub(crate) fn event_stream(body: Body) -> Response<Body> {
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

pub(crate) fn no_content() -> Response<Body> {
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
