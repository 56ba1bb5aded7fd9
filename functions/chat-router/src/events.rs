//! The SSE events of `POST /chat` (docs/api.md) and the emitter that
//! queues them for the response stream.
//!
//! The turn never waits for the client: events go into an unbounded queue drained by a
//! forwarder task, so a slow or vanished client cannot stall or abort the tool pipeline.

use agent::{EventSink, TurnEvent};
use schemars::{Schema, SchemaGenerator};
use serde_json::Value;
use tokio::sync::mpsc;

/// Every event name with the schema of its `data`, in the contract's order: what the
/// OpenAPI document lists for the event streams. Read from [`TurnEvent`]'s own schema (one
/// `{"event": NAME, "data": …}` alternative per event), which joins the document's schemas,
/// so a new event is listed without a line here.
pub fn schemas(generator: &mut SchemaGenerator) -> Vec<(String, Schema)> {
    let reference = generator.subschema_for::<TurnEvent>();
    let name = reference
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|path| path.rsplit('/').next())
        .unwrap_or_default()
        .to_owned();
    let alternatives = generator
        .definitions()
        .get(&name)
        .and_then(|event| event.get("oneOf"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    alternatives
        .into_iter()
        .filter_map(|alternative| {
            let properties = alternative.get("properties")?;
            let name = properties.pointer("/event/const")?.as_str()?.to_owned();
            let data = Schema::try_from(properties.get("data")?.clone()).ok()?;
            Some((name, data))
        })
        .collect()
}

/// `event: NAME\ndata: JSON\n\n`. JSON text has no raw newlines, so one data line suffices.
pub fn to_sse(event: &TurnEvent) -> String {
    let (name, data) = event.to_wire();
    format!("event: {name}\ndata: {data}\n\n")
}

/// Queues a turn's events for the response stream. Cloning shares the queue.
#[derive(Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<TurnEvent>,
    debug: bool,
}

impl Emitter {
    pub fn new(debug: bool) -> (Self, mpsc::UnboundedReceiver<TurnEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx, debug }, rx)
    }
}

impl EventSink for Emitter {
    /// Queues `event`; debug events only when the request asked for them. A gone client
    /// is not an error here: the turn finishes regardless.
    fn emit(&self, event: TurnEvent) {
        if matches!(event, TurnEvent::Debug(_)) && !self.debug {
            return;
        }
        let _ = self.tx.send(event);
    }

    fn wants_debug(&self) -> bool {
        self.debug
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_event_and_one_data_line() {
        let event = TurnEvent::token("line one\nline two");
        assert_eq!(
            to_sse(&event),
            "event: assistant_token\ndata: {\"content\":\"line one\\nline two\"}\n\n"
        );
        assert_eq!(to_sse(&TurnEvent::DONE), "event: done\ndata: {}\n\n");
    }

    #[test]
    fn debug_events_only_when_asked() {
        let (quiet, mut rx) = Emitter::new(false);
        agent::events::debug(&quiet, "x", || json!({}));
        quiet.emit(TurnEvent::DONE);
        assert_eq!(rx.try_recv().ok(), Some(TurnEvent::DONE));
        let (loud, mut rx) = Emitter::new(true);
        agent::events::debug(&loud, "x", || json!({"a": 1}));
        assert_eq!(rx.try_recv().ok().map(|e| e.name()), Some("debug"));
    }
}
