//! A resent request or a resume takes its turn over when the turn's host died while its
//! first model step was under way: it becomes the turn's host
//! ([`shared::turns::TurnStore::take_over`]) and runs the turn in its own process,
//! streaming on from where the log ends.
//!
//! - Nothing but `init` logged: the turn runs again from its start.
//! - The first step's text and calls logged ([`turn_log::Logged`]): the turn goes on from
//!   that step (`agent::ReplayedStep`), its calls taken from the ledger, so the model is
//!   not asked again; the calls run again through the pipeline, which answers those that
//!   ended from the ledger and takes over those left running. Only calls of tools that
//!   only read, or UI skills, may be run so ([`replayed_step`]).
//!
//! Nothing the dead host did is repeated that anyone saw: the chat holds nothing of the
//! turn (checked first: a host that wrote its step to the chat is not taken over, its turn
//! ends as interrupted). A tool call it left running is taken over by the new run at once
//! when the tool only reads ([`orphaned_calls`]); one that writes or waits keeps the turn
//! from running again.

use std::time::Instant;

use lambda_http::Request;
use lambda_http::lambda_runtime::streaming::Sender;
use shared::domain::tool_call::{ToolCallRecord, ToolCallStatus};
use shared::turns::TurnRecord;

use crate::turn_log::{self, Logged, LoggedStep, Successor};
use crate::{Deps, respond};
use agent::guard::input::UserMessage;
use agent::texts::UserText;
use agent::timezone::UserTimeZone;
use agent::turn::{ReplayedCall, ReplayedStep};
use agent::{StopSignal, TurnErrorCode, TurnEvent, TurnInput};
use shared::domain::flight::Locale;
use shared::http::lambda::deadline;
use shared::observability::Trace;

/// Messages read back to see whether the dead host wrote anything of its turn to the chat:
/// its first write holds the user's message and the step's messages.
const RECENT: u32 = 4;

/// The [`Successor`] of a resend or a resume (`GET …/events`, no body): the turn's request
/// as its record keeps it, marked `resumes`; `None` when the record keeps none (a
/// decision's turn) or names an agent the catalog no longer has.
pub(crate) fn successor(deps: &Deps, req: &Request, turn: &TurnRecord) -> Option<Successor> {
    let request = turn.request.as_ref()?;
    let profile = deps.agents.profile(request.agent.as_deref())?.clone();
    let timezone = match request.timezone.as_deref().map(UserTimeZone::parse) {
        Some(Ok(zone)) => Some(zone),
        Some(Err(_)) => return None,
        None => None,
    };
    let input = TurnInput {
        user_id: turn.owner_id.clone(),
        chat_id: (!turn.created).then(|| turn.chat_id.clone()),
        profile,
        agent_named: request.agent.is_some(),
        message: UserMessage::new(&request.message),
        deadline: deadline(req, deps.config.turn_timeout),
        timezone,
        language: request.language,
        turn_id: turn.turn_id.clone(),
        new_chat_id: turn.chat_id.clone(),
        stop: StopSignal::default(),
        decision: None,
        trace: Trace::of(req),
        begin_with: Vec::new(),
        resumes: true,
        replay: None,
    };
    let (deps, debug) = (deps.clone(), request.debug);
    Some(Box::new(move |turn, logged, client| {
        Box::pin(take_over(deps, input, debug, turn, logged, client))
    }))
}

/// Takes `turn` over and runs it to its end on `client`, on from what its log holds; gives
/// the client back when the turn was not taken (see [`Successor`]).
async fn take_over(
    deps: Deps,
    input: TurnInput,
    debug: bool,
    turn: TurnRecord,
    logged: Logged,
    client: Sender,
) -> Option<Sender> {
    let (next, Some(step)) = (logged.next, logged.step) else {
        return Some(client);
    };
    match deps
        .chats
        .recent_messages(&turn.owner_id, &turn.chat_id, RECENT)
        .await
    {
        Ok(messages) if messages.iter().all(|m| m.created_at < turn.created_at) => {}
        Ok(_) => {
            tracing::warn!(turn_id = %turn.turn_id, "the dead host wrote to the chat already; the turn is not run again");
            return Some(client);
        }
        Err(e) => {
            tracing::error!(turn_id = %turn.turn_id, error = %e, "reading the chat failed; the turn is not run again");
            return Some(client);
        }
    }
    let Some(orphans) = orphaned_calls(&deps, &turn).await else {
        return Some(client);
    };
    let replay = if step.started.is_empty() && step.said.is_empty() {
        None
    } else {
        match replayed_step(&deps, &turn, step).await {
            Some(step) => Some(step),
            None => return Some(client),
        }
    };
    let left = input.deadline.saturating_duration_since(Instant::now());
    let deadline = time::OffsetDateTime::now_utc() + left;
    let record = match deps.turns.take_over(&turn, deadline).await {
        Ok(Some(record)) => record,
        Ok(None) => return Some(client),
        Err(e) => {
            tracing::error!(turn_id = %turn.turn_id, error = %e, "taking the turn over failed");
            return Some(client);
        }
    };
    tracing::info!(turn_id = %record.turn_id, host = record.host, "took the turn over from its dead host");
    // The dead host's running calls are this turn's to run again now, not after their
    // leases (the tool's timeout and 30 s): the same call in the new run takes them over.
    for call in orphans {
        if let Err(e) = deps
            .ledger
            .expire_lease(&call.chat_id, &call.id, call.attempt)
            .await
        {
            tracing::error!(call_id = %call.id, error = %e, "ending a dead host's lease failed; the call is taken over when it runs out");
        }
    }
    // In the chat the turn holds (a resend for a new chat names none).
    let input = TurnInput {
        chat_id: Some(record.chat_id.clone()),
        replay,
        ..input
    };
    let stop = input.stop.clone();
    match deps.agent.open(input).await {
        Ok(open) => respond::run(deps, open, record, stop, debug, client, Some(next)).await,
        // The turn is this request's now and ran nothing: it ends with the error, and its
        // chat is let go of.
        Err(e) => {
            tracing::error!(turn_id = %record.turn_id, error = %e, "the taken-over turn could not open its chat");
            end_with_error(&deps, record, &e, client, next).await;
        }
    }
    None
}

/// Ends the taken-over `record` with the error `e` and `done`, logged and sent from event
/// `next` on (after the record's `init` for an empty log), and frees its chat.
async fn end_with_error(
    deps: &Deps,
    record: TurnRecord,
    e: &shared::Error,
    mut client: Sender,
    next: u64,
) {
    let code = match e {
        shared::Error::NotFound => TurnErrorCode::NotFound,
        shared::Error::Limited { .. } => TurnErrorCode::RateLimited,
        _ => TurnErrorCode::Interrupted,
    };
    let message = UserText::for_error(code).text(Locale::default());
    // An empty log: the client has no `init` yet; it gets the record's, as a follower would.
    if next == 0 {
        let _ = client
            .send_data(turn_log::frame(&record.init_event()))
            .await;
    }
    let next = next.max(1);
    let ending = [
        turn_log::stored(next, &TurnEvent::error(code, message)),
        turn_log::stored(next + 1, &TurnEvent::DONE),
    ];
    if let Err(e) = deps.turns.finish(&record, &ending).await {
        tracing::error!(turn_id = %record.turn_id, error = %e, "storing the turn's end failed");
    }
    for event in &ending {
        if client.send_data(turn_log::frame(event)).await.is_err() {
            break;
        }
    }
    if let Err(e) = deps.chats.release(&record.chat_id, &record.turn_id).await {
        tracing::error!(turn_id = %record.turn_id, error = %e, "freeing the chat failed");
    }
}

/// The first step of `turn` as its dead host logged it, with its calls from the ledger:
/// `None` (the turn is not taken over) when a call is not found, belongs to a tool that
/// neither only reads nor is a UI skill (running it again could act twice), or the step
/// has text but no call (it was answering: the answer cannot be taken back).
async fn replayed_step(deps: &Deps, turn: &TurnRecord, step: LoggedStep) -> Option<ReplayedStep> {
    if step.started.is_empty() {
        return None;
    }
    let mut calls = Vec::with_capacity(step.started.len());
    for job_id in step.started {
        let call = match deps
            .ledger
            .get(&turn.owner_id, &turn.chat_id, &job_id)
            .await
        {
            Ok(call) => call,
            Err(e) => {
                tracing::warn!(turn_id = %turn.turn_id, call_id = %job_id, error = %e, "a logged call is not in the ledger; the turn is not taken over");
                return None;
            }
        };
        if !deps.agent.reruns_safely(call.tool) {
            tracing::warn!(turn_id = %turn.turn_id, tool = %call.tool, "the logged step called a tool that must not run twice; the turn is not taken over");
            return None;
        }
        calls.push(ReplayedCall {
            job_id,
            tool: call.tool,
            arguments: call.request,
        });
    }
    Some(ReplayedStep {
        said: step.said,
        calls,
        ended: step.ended,
    })
}

/// The tool calls the dead host of `turn` left running, which a new run of the turn takes
/// over: `None` when the turn may not run again, because the host had a call running that
/// is not safe to run twice (it may still be under way somewhere) or one that waits (for
/// approval, for the worker). Calls that ended are fine: the new run reuses a result and
/// tries a failure again.
async fn orphaned_calls(deps: &Deps, turn: &TurnRecord) -> Option<Vec<ToolCallRecord>> {
    let page = match deps
        .ledger
        .list(&turn.owner_id, &turn.chat_id, RECENT, None)
        .await
    {
        Ok(page) => page,
        Err(e) => {
            tracing::error!(turn_id = %turn.turn_id, error = %e, "reading the chat's tool calls failed; the turn is not run again");
            return None;
        }
    };
    let mut orphans = Vec::new();
    // Most recently attempted first: the turn's own calls lead the page.
    for call in page
        .items
        .into_iter()
        .filter(|c| c.updated_at >= turn.created_at)
    {
        match call.status {
            ToolCallStatus::Running if deps.agent.reruns_safely(call.tool) => orphans.push(call),
            ToolCallStatus::Running | ToolCallStatus::Queued | ToolCallStatus::AwaitingApproval => {
                tracing::warn!(turn_id = %turn.turn_id, tool = %call.tool, status = %call.status, "the dead host left a tool call that must not run twice; the turn is not run again");
                return None;
            }
            _ => {}
        }
    }
    Some(orphans)
}
