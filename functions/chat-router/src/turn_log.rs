//! A turn's events on the wire and in its log. Every event gets its sequence number in the
//! turn (`init` is 0), sent as the SSE `id:`; the same numbers are stored, so a client that
//! resumes with `Last-Event-ID` gets exactly the events it missed.
//!
//! Recording: the turn's own stream sends each event at once and hands it to a flusher that
//! writes them in chunks: about once a second while the turn streams, and last the
//! remaining events with `done`, before `done` is sent. A flush also reads whether a cancel
//! was asked for; a turn that waits on its tools without events checks every few seconds.
//!
//! Following: a resent request or `GET …/events` reads the log from its start (`init`
//! included: it names the turn's language, which the turn record cannot) or after a
//! sequence, and polls it until `done`.
//!
//! A dead host: every write to the log renews the turn's liveness, and the recorder writes
//! at least every 2 s. A running turn whose liveness ran out (its host crashed, was killed
//! for memory or timed out) or whose deadline passed was ended by its host: the first
//! follower, or the first new message in its chat, to see it appends
//! `error{code:"interrupted"}` (retryable: the client sends the message again) and `done`,
//! and frees the chat. A live turn that finds itself ended so stops at its next write.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::texts::UserText;
use agent::{StopSignal, TurnErrorCode, TurnEvent};
use bytes::Bytes;
use lambda_http::lambda_runtime::streaming::Sender;
use serde_json::json;
use shared::chats::ChatStore;
use shared::domain::flight::Locale;
use shared::turns::{StoredEvent, TurnRecord, TurnStatus, TurnStore};
use tokio::sync::mpsc;

use crate::events;

/// How often a streaming turn writes its events at most.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often a turn without new events (waiting on tools) checks for a cancel.
const IDLE_CHECK: Duration = Duration::from_secs(2);
/// How often a follower reads the log of a running turn.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// A running turn is declared interrupted this long after its deadline or its liveness
/// ran out (its host had until about then to write its last events): with
/// [`shared::turns::LIVENESS`], 10 s after a dead host's last write.
pub const GRACE: time::Duration = time::Duration::seconds(5);

/// The event as stored (and framed) with its sequence number.
pub fn stored(seq: u64, event: &TurnEvent) -> StoredEvent {
    let (name, data) = event.to_wire();
    StoredEvent {
        seq,
        event: name.to_owned(),
        data: data.to_string(),
    }
}

/// `id: SEQ\nevent: NAME\ndata: JSON\n\n`.
pub fn frame(event: &StoredEvent) -> Bytes {
    let mut frame = Vec::new();
    frame_into(&mut frame, event);
    Bytes::from(frame)
}

/// Appends `event`'s frame to `frames`: events that are ready together go out in one write.
fn frame_into(frames: &mut Vec<u8>, event: &StoredEvent) {
    use std::io::Write as _;
    // Writing into a `Vec` cannot fail.
    let _ = write!(
        frames,
        "id: {}\nevent: {}\ndata: {}\n\n",
        event.seq, event.event, event.data
    );
}

/// An event that ends a stream outside the log (no `id:`: it is not part of the turn).
fn unlogged(event: &TurnEvent) -> Bytes {
    Bytes::from(events::to_sse(event))
}

struct Batch {
    events: Vec<StoredEvent>,
    last: bool,
}

/// Most events sent in one write: the turn's events that are ready when the stream is
/// polled go out together (one chunk, one system call), and never wait for more.
const EVENTS_PER_WRITE: usize = 64;

/// The events of a turn on their way to its log: numbered, and handed to the flusher in
/// batches.
struct Log {
    seq: u64,
    pending: Vec<StoredEvent>,
    last_flush: Instant,
    batches: mpsc::UnboundedSender<Batch>,
}

impl Log {
    /// How long to wait for the turn's next event before writing what is pending (or, with
    /// nothing pending, reading for a cancel).
    fn wait(&self) -> Duration {
        if self.pending.is_empty() {
            IDLE_CHECK
        } else {
            FLUSH_EVERY.saturating_sub(self.last_flush.elapsed())
        }
    }

    /// `event` with its sequence number.
    fn number(&mut self, event: &TurnEvent) -> StoredEvent {
        let stored = stored(self.seq, event);
        self.seq += 1;
        stored
    }

    /// Hands what is pending to the flusher; `last` with `done`.
    fn flush(&mut self, last: bool) {
        let _ = self.batches.send(Batch {
            events: std::mem::take(&mut self.pending),
            last,
        });
        self.last_flush = Instant::now();
    }
}

/// The turn's event as this run logs it: `None` for the dead host's `init`, which was
/// logged and which its client has (`resumed` after 0); a turn run again opened the chat
/// its first host created, so the turn created it.
fn as_logged(event: TurnEvent, turn: &TurnRecord, resumed: Option<u64>) -> Option<TurnEvent> {
    match event {
        TurnEvent::Init(_) if resumed.is_some_and(|from| from > 0) => None,
        TurnEvent::Init(mut init) if resumed.is_some() => {
            init.created = turn.created;
            Some(TurnEvent::Init(init))
        }
        event => Some(event),
    }
}

/// Sends a turn's events to its client and its log, in order; returns once `done` is
/// stored and sent (or the turn dropped its queue). `done` waits for the turn's task `run`
/// to end too: its spans are exported before the invocation ends.
///
/// `resumed` is the sequence number a turn taken over from its dead host goes on from (see
/// [`follow`]): after 0, the dead host's `init` is logged and its client has it, so this
/// run's is neither sent nor logged; at 0 the log was empty and this run begins it.
pub async fn record(
    store: Arc<dyn TurnStore>,
    turn: TurnRecord,
    stop: StopSignal,
    mut queue: mpsc::UnboundedReceiver<TurnEvent>,
    mut client: Sender,
    run: tokio::task::JoinHandle<()>,
    resumed: Option<u64>,
) {
    let (batches, flushed) = mpsc::unbounded_channel::<Batch>();
    let flusher = tokio::spawn(flush(store, turn.clone(), stop, flushed));
    let mut connected = true;
    let mut log = Log {
        seq: resumed.unwrap_or(0),
        pending: Vec::new(),
        last_flush: Instant::now(),
        batches,
    };
    let done = loop {
        let first = match tokio::time::timeout(log.wait(), queue.recv()).await {
            Ok(Some(event)) => event,
            // The turn ended without `done` (it panicked): end the log as it would have.
            Ok(None) => TurnEvent::DONE,
            // Due: write what is pending, or (nothing pending) just read for a cancel.
            Err(_) => {
                log.flush(false);
                continue;
            }
        };
        let ready = std::iter::once(first)
            .chain(std::iter::from_fn(|| queue.try_recv().ok()))
            .take(EVENTS_PER_WRITE);
        let (mut frames, mut done) = (Vec::new(), None);
        for event in ready.filter_map(|event| as_logged(event, &turn, resumed)) {
            let event = log.number(&event);
            if event.event == "done" {
                done = Some(event);
                break;
            }
            frame_into(&mut frames, &event);
            // `init` too: it names the turn's language, which the record does not know.
            log.pending.push(event);
        }
        if connected && !frames.is_empty() && client.send_data(frames.into()).await.is_err() {
            tracing::warn!(turn_id = %turn.turn_id, "client disconnected; finishing the turn without it");
            connected = false;
        }
        if let Some(done) = done {
            log.pending.push(done.clone());
            log.flush(true);
            break done;
        }
        if !log.pending.is_empty() && log.last_flush.elapsed() >= FLUSH_EVERY {
            log.flush(false);
        }
    };
    drop(log);
    // Stored before shown: `done` goes out once the log has it, and the response (and so
    // the invocation) stays open until then.
    if let Err(e) = flusher.await {
        tracing::error!(error = %e, "the turn's event flusher failed");
    }
    if let Err(e) = run.await {
        tracing::error!(error = %e, "the turn's task failed");
    }
    if connected {
        let _ = client.send_data(frame(&done)).await;
    }
}

/// Writes the batches in order; a flush that reads a cancel stops the turn.
async fn flush(
    store: Arc<dyn TurnStore>,
    turn: TurnRecord,
    stop: StopSignal,
    mut batches: mpsc::UnboundedReceiver<Batch>,
) {
    while let Some(batch) = batches.recv().await {
        if batch.last {
            match store.finish(&turn, &batch.events).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(turn_id = %turn.turn_id, "the turn was marked interrupted before it finished")
                }
                Err(e) => {
                    tracing::error!(turn_id = %turn.turn_id, error = %e, "storing the turn's last events failed; a resume reports it interrupted")
                }
            }
            return;
        }
        match store.append(&turn, &batch.events).await {
            Ok(true) if !stop.is_stopped() => {
                tracing::info!(turn_id = %turn.turn_id, "cancel requested; stopping the turn");
                stop.stop();
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(turn_id = %turn.turn_id, error = %e, "storing the turn's events failed")
            }
        }
    }
}

/// Who follows a turn: until when (its own deadline; the client then resumes from the last
/// id it got), and in which language the errors it adds are written.
pub struct Follower {
    pub until: Instant,
    pub locale: Locale,
}

/// What takes a turn over from its dead host and runs it on, streaming to the client
/// (`chat`'s, from the resent request): given the turn as read, what its log holds and the
/// client. It hands the client back when it could not take the turn.
pub type Successor = Box<
    dyn FnOnce(TurnRecord, Logged, Sender) -> futures::future::BoxFuture<'static, Option<Sender>>
        + Send,
>;

/// What a dead host's log says it did, for the request that takes its turn over: nothing
/// but `init`, or the first model step's text and the calls it started (which the new host
/// goes on from), or more than a new host can go on from.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    /// The sequence number the new host's events go on from (0: the log is empty).
    pub next: u64,
    /// `None`: the log holds more than the first step's text and calls (a second step, an
    /// answer, a refused or queued call): the turn cannot go on elsewhere.
    pub step: Option<LoggedStep>,
}

/// The first model step as logged: its text before its calls, and its calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoggedStep {
    /// The step's text.
    pub said: String,
    /// The `job_id` of each call it started, in order.
    pub started: Vec<String>,
    /// The calls whose `tool_result` is logged.
    pub ended: std::collections::HashSet<String>,
}

impl Logged {
    /// Reads a dead host's log.
    pub fn of(events: &[StoredEvent]) -> Self {
        let next = events.last().map_or(0, |e| e.seq + 1);
        let mut step = LoggedStep::default();
        let field = |event: &StoredEvent, name: &str| {
            serde_json::from_str::<serde_json::Value>(&event.data)
                .ok()
                .and_then(|data| data.get(name).cloned())
        };
        for event in events {
            let fits = match event.event.as_str() {
                "init" | "debug" | "tool_progress" => true,
                // The step's text comes before its calls; text after them is a later step's.
                "assistant_token" => {
                    let text = field(event, "content");
                    match text.as_ref().and_then(|t| t.as_str()) {
                        Some(text) if step.started.is_empty() => {
                            step.said.push_str(text);
                            true
                        }
                        _ => false,
                    }
                }
                "tool_started" => {
                    let running = field(event, "status").is_some_and(|s| s == "running");
                    match field(event, "job_id").and_then(|id| id.as_str().map(str::to_owned)) {
                        Some(id) if running => {
                            step.started.push(id);
                            true
                        }
                        _ => false,
                    }
                }
                // A refused call (no job id) cannot be told again from the ledger.
                "tool_result" => {
                    match field(event, "job_id").and_then(|id| id.as_str().map(str::to_owned)) {
                        Some(id) => {
                            step.ended.insert(id);
                            true
                        }
                        None => false,
                    }
                }
                _ => false,
            };
            if !fits {
                return Self { next, step: None };
            }
        }
        Self {
            next,
            step: Some(step),
        }
    }
}

/// Streams `turn`'s events after `after` (all of them, `init` first, for `None`) to
/// `client`, following the log until `done` or until the [`Follower`]'s deadline.
///
/// A turn whose host died before its log held more than `init` and the first model step's
/// text and calls is taken over by the `successor`, when the follower is a resend or a
/// resume that has one ([`Logged`]): it runs the turn again, or goes on from that step,
/// streaming on from the log's end. Any other dead turn is ended as interrupted.
pub async fn follow(
    store: Arc<dyn TurnStore>,
    chats: Arc<dyn ChatStore>,
    mut turn: TurnRecord,
    after: Option<u64>,
    follower: Follower,
    mut client: Sender,
    mut successor: Option<Successor>,
) {
    let Follower { until, locale } = follower;
    let text = |code| UserText::for_error(code).text(locale);
    // `None` until `init` went out: the logged one, as the turn sent it. A turn whose log
    // has none (it ended before its first write, or was logged before `init` was) gets the
    // record's.
    let mut last = after;
    loop {
        let read = match last {
            Some(seq) => store.events_after(&turn, seq).await,
            None => store.events_from(&turn, 0).await,
        };
        let events = match read {
            Ok(events) => events,
            Err(e) => {
                tracing::error!(turn_id = %turn.turn_id, error = %e, "reading the turn's events failed");
                let code = TurnErrorCode::Internal;
                end_with(&mut client, json!({ "code": code, "message": text(code) })).await;
                return;
            }
        };
        // No logged `init` to send first: the log starts later, or the turn ended with none.
        let record_init = last.is_none() && events.first().map_or(turn.ended(), |e| e.seq > 0);
        let init = record_init.then(|| turn.init_event());
        if !send_read(&mut client, init, &events, &mut last).await {
            return;
        }
        if record_init && events.is_empty() {
            last = Some(0);
        }
        if !events.is_empty() {
            continue;
        }
        // The record was read before these events, and a turn's status ends in the same
        // write as its `done`: an ended turn with nothing after `last` has nothing more to
        // send (the follower resumed at or past its end). Polling would hold the invocation
        // until its deadline.
        if turn.ended() {
            return;
        }
        if Instant::now() + POLL_EVERY >= until {
            // Out of time here; the client resumes with the last id it got.
            return;
        }
        tokio::time::sleep(POLL_EVERY).await;
        turn = match store
            .get(&turn.owner_id, &turn.chat_id, &turn.turn_id)
            .await
        {
            Ok(record) => record,
            Err(e) => {
                tracing::error!(turn_id = %turn.turn_id, error = %e, "reading the turn failed");
                continue;
            }
        };
        client = match after_quiet_poll(&store, &chats, &turn, last, locale, &mut successor, client)
            .await
        {
            Some(back) => back,
            None => return,
        };
    }
}

/// What a follower whose poll found nothing new does about the turn's record: ends its
/// stream with the refusal of the request that began the turn (a limit, a busy chat), or,
/// when the turn's host is gone, hands it to the `successor` or ends it as interrupted and
/// frees its chat. `None`: the stream is over (or taken over); else the client, to poll on.
async fn after_quiet_poll(
    store: &Arc<dyn TurnStore>,
    chats: &Arc<dyn ChatStore>,
    turn: &TurnRecord,
    last: Option<u64>,
    locale: Locale,
    successor: &mut Option<Successor>,
    mut client: Sender,
) -> Option<Sender> {
    let text = |code| UserText::for_error(code).text(locale);
    match turn.status {
        TurnStatus::Refused => {
            if last.is_some() || client.send_data(frame(&turn.init_event())).await.is_ok() {
                let error = turn.refusal.clone().unwrap_or_else(|| {
                    let code = TurnErrorCode::Conflict;
                    json!({ "code": code, "message": text(code) })
                });
                end_with(&mut client, error).await;
            }
            None
        }
        TurnStatus::Running if turn.overdue(time::OffsetDateTime::now_utc() - GRACE) => {
            if let Some(take_over) = successor.take() {
                client = try_take_over(store.as_ref(), turn, take_over, client).await?;
            }
            tracing::warn!(turn_id = %turn.turn_id, "the turn's host is gone; ending it as interrupted");
            let message = text(TurnErrorCode::Interrupted);
            if interrupt(store.as_ref(), turn, last.unwrap_or(0), &message).await {
                release(chats.as_ref(), turn).await;
            }
            Some(client)
        }
        _ => Some(client),
    }
}

/// Sends what a read of the log found in one write, after the record's `init` when the log
/// has none to send first; `last` moves to the last event sent. False once the stream is
/// over: the client is gone, or `done` went out.
async fn send_read(
    client: &mut Sender,
    init: Option<StoredEvent>,
    events: &[StoredEvent],
    last: &mut Option<u64>,
) -> bool {
    let mut frames = Vec::new();
    if let Some(init) = &init {
        frame_into(&mut frames, init);
    }
    let mut ended = false;
    for event in events {
        frame_into(&mut frames, event);
        *last = Some(event.seq);
        if event.event == "done" {
            ended = true;
            break;
        }
    }
    let gone = !frames.is_empty() && client.send_data(frames.into()).await.is_err();
    !(gone || ended)
}

/// Hands the dead `turn` to `take_over` when its whole log ([`Logged`]) allows it (a
/// follower that resumed after an id has not read it all); gives the client back when the
/// turn was not taken (alive after all, taken by another, or not resumable).
async fn try_take_over(
    store: &dyn TurnStore,
    turn: &TurnRecord,
    take_over: Successor,
    client: Sender,
) -> Option<Sender> {
    match store.events_from(turn, 0).await.map(|e| Logged::of(&e)) {
        Ok(logged) if logged.step.is_some() => {
            tracing::warn!(turn_id = %turn.turn_id, next = logged.next, "the turn's host is gone; taking the turn over here if it may");
            take_over(turn.clone(), logged, client).await
        }
        Ok(_) => Some(client),
        Err(e) => {
            tracing::error!(turn_id = %turn.turn_id, error = %e, "reading the turn's events failed");
            Some(client)
        }
    }
}

/// Ends a turn its host ended (overdue without `done`) in its log, after event `last`:
/// `error{code:"interrupted"}` and `done`, which this and every follower then read. Whether
/// it was ended (false: it was alive after all, or the write failed).
async fn interrupt(store: &dyn TurnStore, turn: &TurnRecord, last: u64, message: &str) -> bool {
    let ending = [
        stored(
            last + 1,
            &TurnEvent::error(TurnErrorCode::Interrupted, message),
        ),
        stored(last + 2, &TurnEvent::DONE),
    ];
    match store.interrupt(turn, &ending).await {
        Ok(ended) => ended,
        Err(e) => {
            tracing::error!(turn_id = %turn.turn_id, error = %e, "marking the turn interrupted failed");
            false
        }
    }
}

/// Lets go of the chat an ended turn held (its host could not).
async fn release(chats: &dyn ChatStore, turn: &TurnRecord) {
    if let Err(e) = chats.release(&turn.chat_id, &turn.turn_id).await {
        tracing::error!(turn_id = %turn.turn_id, error = %e, "freeing the chat of an interrupted turn failed");
    }
}

/// Frees the chat `turn` holds if its host left it behind: a running turn that is overdue
/// is ended in its log (`interrupted`), and an ended one lets go. Whether the chat is free
/// now (false: the turn is alive, or freeing it failed).
pub async fn free_chat(
    store: &dyn TurnStore,
    chats: &dyn ChatStore,
    turn: &TurnRecord,
    message: &str,
) -> bool {
    if turn.status == TurnStatus::Running {
        if !turn.overdue(time::OffsetDateTime::now_utc() - GRACE) {
            return false;
        }
        let last = match store.events_from(turn, 0).await {
            Ok(events) => events.last().map_or(0, |e| e.seq),
            Err(e) => {
                tracing::error!(turn_id = %turn.turn_id, error = %e, "reading the turn's events failed");
                return false;
            }
        };
        tracing::warn!(turn_id = %turn.turn_id, "the chat's turn lost its host; ending it as interrupted");
        if !interrupt(store, turn, last, message).await {
            // Ended by someone else meanwhile (then free the chat all the same), or alive.
            let ended = store
                .get(&turn.owner_id, &turn.chat_id, &turn.turn_id)
                .await
                .is_ok_and(|now| now.ended());
            if !ended {
                return false;
            }
        }
    }
    match chats.release(&turn.chat_id, &turn.turn_id).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(turn_id = %turn.turn_id, error = %e, "freeing the chat failed");
            false
        }
    }
}

/// Ends a follower's stream with an `error` (`data`: code and message) that is not part of
/// the turn's log, so it carries no `id:`.
async fn end_with(client: &mut Sender, error: serde_json::Value) {
    let error = Bytes::from(format!("event: error\ndata: {error}\n\n"));
    let _ = client.send_data(error).await;
    let _ = client.send_data(unlogged(&TurnEvent::DONE)).await;
}

/// The answer of `POST …/turns/{turn_id}/cancel`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct CancelResponse {
    pub turn_id: String,
    pub chat_id: String,
    /// A turn that has already ended is left as it is.
    pub status: TurnStatus,
    /// Whether the turn was asked to stop (false for one that has already ended).
    pub cancel_requested: bool,
}

/// The cancel route's answer.
pub fn cancel_response(turn: &TurnRecord) -> CancelResponse {
    CancelResponse {
        turn_id: turn.turn_id.clone(),
        chat_id: turn.chat_id.clone(),
        status: turn.status,
        // The record keeps its flag after the turn ends; asking again then stops nothing.
        cancel_requested: turn.cancel_requested && turn.status == TurnStatus::Running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(events: &[(&str, serde_json::Value)]) -> Vec<StoredEvent> {
        events
            .iter()
            .enumerate()
            .map(|(seq, (event, data))| StoredEvent {
                seq: seq as u64,
                event: (*event).to_owned(),
                data: data.to_string(),
            })
            .collect()
    }

    fn started(job: &str, status: &str) -> (&'static str, serde_json::Value) {
        (
            "tool_started",
            json!({"tool": "search_flights", "job_id": job, "deduped": false, "status": status}),
        )
    }

    #[test]
    fn a_log_is_read_as_its_first_steps_text_and_calls_or_as_more() {
        let empty = Logged::of(&[]);
        assert_eq!(empty.next, 0);
        assert_eq!(empty.step, Some(LoggedStep::default()));

        let step = Logged::of(&log(&[
            ("init", json!({})),
            ("assistant_token", json!({"content": "Let me look. "})),
            started("tc_1", "running"),
            started("tc_2", "running"),
            ("tool_progress", json!({})),
            ("tool_result", json!({"job_id": "tc_1"})),
        ]));
        assert_eq!(step.next, 6);
        let step = step.step.unwrap();
        assert_eq!(step.said, "Let me look. ");
        assert_eq!(step.started, ["tc_1", "tc_2"]);
        assert!(step.ended.contains("tc_1") && !step.ended.contains("tc_2"));

        for beyond in [
            // Text after the calls: a later step's.
            vec![
                started("tc_1", "running"),
                ("assistant_token", json!({"content": "x"})),
            ],
            // A refused call, a queued one, an answer, a handoff.
            vec![("tool_result", json!({"job_id": null}))],
            vec![started("tc_1", "queued")],
            vec![("final", json!({}))],
            vec![("handoff", json!({}))],
        ] {
            assert_eq!(Logged::of(&log(&beyond)).step, None, "{beyond:?}");
        }
    }
}
