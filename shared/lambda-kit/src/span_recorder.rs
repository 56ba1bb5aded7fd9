//! The `tracing` layer that records the trace's spans (those of
//! [`crate::telemetry::TARGET`]) as OpenTelemetry spans, ready for [`crate::otlp`].
//!
//! Why not `tracing-opentelemetry` and the OpenTelemetry SDK: they build each span twice
//! (a builder while it runs, the SDK's span data when it ends), copy every attribute's key
//! into a `KeyValue`, and bring two crates of machinery (samplers, processors, context
//! propagation) that a function which exports after each invocation never uses. Here a
//! span is one record in its `tracing` span's extensions, keyed by the fields' own static
//! names, moved into the buffer when it closes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::{LookupSpan, Registry};

/// At most this many finished spans wait for the export; more are dropped (and counted in
/// the log), so a runaway loop cannot hold the container's memory.
const MAX_BUFFERED: usize = 2048;

/// An attribute's value: the kinds OpenTelemetry has that our spans use.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// `bool_value`.
    Bool(bool),
    /// `int_value` (OpenTelemetry has no unsigned integers).
    Int(i64),
    /// `double_value`.
    Double(f64),
    /// `string_value`.
    Str(String),
    /// An `array_value` of strings.
    Strs(Vec<String>),
}

/// An attribute: the field's static name and its value.
pub type Attribute = (&'static str, AttrValue);

/// `SpanKind` as OTLP numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Internal = 1,
    Server = 2,
    Client = 3,
    Producer = 4,
    Consumer = 5,
}

impl Kind {
    fn parse(text: &str) -> Self {
        match text {
            "server" => Self::Server,
            "client" => Self::Client,
            "producer" => Self::Producer,
            "consumer" => Self::Consumer,
            _ => Self::Internal,
        }
    }
}

/// Something that happened in a span (a guard finding, a handoff).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub time: u64,
    pub name: String,
    pub attributes: Vec<Attribute>,
}

/// One span: while it runs, in its `tracing` span's extensions; once closed, in the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedSpan {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The parent's span id; `None` for a trace's root.
    pub parent: Option<[u8; 8]>,
    /// The parent is another process's (it came in a `traceparent`).
    pub parent_is_remote: bool,
    /// The W3C `tracestate` the trace came with, passed on unread.
    pub trace_state: String,
    /// Whether the trace is recorded (the caller's `traceparent` may say it is not).
    pub sampled: bool,
    pub name: String,
    pub kind: Kind,
    /// Start and end, nanoseconds since the Unix epoch.
    pub start: u64,
    pub end: u64,
    pub attributes: Vec<Attribute>,
    pub events: Vec<SpanEvent>,
    /// The span failed: its status is an error with this description.
    pub error: Option<String>,
}

/// Now, in nanoseconds since the Unix epoch.
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A span id: random, never all zeros (the W3C's invalid id).
fn new_span_id() -> [u8; 8] {
    fastrand::u64(1..).to_be_bytes()
}

fn new_trace_id() -> [u8; 16] {
    fastrand::u128(1..).to_be_bytes()
}

/// Finished spans, kept until the export takes them.
#[derive(Debug, Default)]
pub struct Buffer {
    spans: Mutex<Vec<RecordedSpan>>,
}

impl Buffer {
    /// The spans so far; the buffer starts again with room for as many.
    pub fn take(&self) -> Vec<RecordedSpan> {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        let room = spans.len().clamp(16, MAX_BUFFERED);
        std::mem::replace(&mut *spans, Vec::with_capacity(room))
    }

    fn push(&self, span: RecordedSpan) {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        if spans.len() < MAX_BUFFERED {
            spans.push(span);
        } else {
            drop(spans);
            tracing::warn!(max = MAX_BUFFERED, "trace buffer full: a span was dropped");
        }
    }
}

/// The layer. Which spans and events it sees is its filter's business
/// (`crate::telemetry::layer`).
#[derive(Debug, Clone)]
pub struct Recorder {
    buffer: Arc<Buffer>,
}

impl Recorder {
    pub fn new(buffer: Arc<Buffer>) -> Self {
        Self { buffer }
    }
}

impl<S> Layer<S> for Recorder
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        // The nearest recorded ancestor (the filter hides the others from this layer).
        let parent = span.parent().and_then(|parent| {
            let extensions = parent.extensions();
            extensions
                .get::<RecordedSpan>()
                .map(|p| (p.trace_id, p.span_id, p.trace_state.clone(), p.sampled))
        });
        let (trace_id, parent, trace_state, sampled) = match parent {
            Some((trace, id, state, sampled)) => (trace, Some(id), state, sampled),
            None => (new_trace_id(), None, String::new(), true),
        };
        let mut recorded = RecordedSpan {
            trace_id,
            span_id: new_span_id(),
            parent,
            parent_is_remote: false,
            trace_state,
            sampled,
            name: attrs.metadata().name().to_owned(),
            kind: Kind::Internal,
            start: now_nanos(),
            end: 0,
            attributes: Vec::with_capacity(attrs.fields().len()),
            events: Vec::new(),
            error: None,
        };
        attrs.record(&mut Visitor(&mut recorded));
        span.extensions_mut().insert(recorded);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(recorded) = span.extensions_mut().get_mut::<RecordedSpan>()
        {
            values.record(&mut Visitor(recorded));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let mut recorded_event = SpanEvent {
            time: now_nanos(),
            name: String::new(),
            attributes: Vec::new(),
        };
        event.record(&mut Visitor(&mut recorded_event));
        if let Some(recorded) = span.extensions_mut().get_mut::<RecordedSpan>() {
            recorded.events.push(recorded_event);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut recorded) = span.extensions_mut().remove::<RecordedSpan>() else {
            return;
        };
        if recorded.sampled {
            recorded.end = now_nanos();
            self.buffer.push(recorded);
        }
    }
}

/// What takes a span's or an event's fields.
trait Fields {
    fn set(&mut self, key: &'static str, value: AttrValue);
}

/// A span's fields: `otel.name` and `otel.kind` set its name and kind, the others are
/// attributes; fields recorded empty are left out.
impl Fields for RecordedSpan {
    fn set(&mut self, key: &'static str, value: AttrValue) {
        match (key, value) {
            ("otel.name", AttrValue::Str(name)) => self.name = name,
            ("otel.kind", AttrValue::Str(kind)) => self.kind = Kind::parse(&kind),
            (key, value) => set_attribute(&mut self.attributes, key, value),
        }
    }
}

/// An event's fields: its message is its name, the others its attributes.
impl Fields for SpanEvent {
    fn set(&mut self, key: &'static str, value: AttrValue) {
        match (key, value) {
            ("message", AttrValue::Str(name)) => self.name = name,
            (key, value) => self.attributes.push((key, value)),
        }
    }
}

/// Sets `key` in `attributes`: a field recorded again replaces its value.
pub fn set_attribute(attributes: &mut Vec<Attribute>, key: &'static str, value: AttrValue) {
    match attributes.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => attributes.push((key, value)),
    }
}

/// The visitor that hands `tracing`'s fields to a [`Fields`].
struct Visitor<'a, F>(&'a mut F);

impl<F: Fields> Visit for Visitor<'_, F> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields arrive here too, their `Debug` being their `Display`.
        self.0
            .set(field.name(), AttrValue::Str(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.set(field.name(), AttrValue::Str(value.to_owned()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.set(field.name(), AttrValue::Int(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        self.0.set(field.name(), AttrValue::Int(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.set(field.name(), AttrValue::Double(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.set(field.name(), AttrValue::Bool(value));
    }
}

/// Runs `f` on the record of `span`, if it has one (traces on, the span recorded).
pub fn with_recorded<R>(span: &tracing::Span, f: impl FnOnce(&mut RecordedSpan) -> R) -> Option<R> {
    let id = span.id()?;
    let mut f = Some(f);
    tracing::dispatcher::get_default(|dispatch| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        let data = registry.span_data(&id)?;
        let mut extensions = tracing_subscriber::registry::SpanData::extensions_mut(&data);
        let recorded = extensions.get_mut::<RecordedSpan>()?;
        f.take().map(|f| f(recorded))
    })
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// A span tree under a subscriber of its own: names, kinds, parents, fields recorded
    /// later, events, a failed status, and a remote parent set after the span began.
    #[test]
    fn spans_are_recorded_with_their_tree_fields_and_events() {
        let buffer = Arc::new(Buffer::default());
        let subscriber = tracing_subscriber::registry().with(Recorder::new(buffer.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let turn = tracing::info_span!(
                "invoke_agent",
                otel.name = %format!("invoke_agent {}", "travel"),
                gen_ai.agent.name = "travel",
                app.tokens = 3_u64,
            );
            let call = turn.in_scope(|| {
                tracing::info_span!(
                    "http",
                    otel.kind = "client",
                    http.response.status_code = tracing::field::Empty,
                    app.ok = tracing::field::Empty,
                )
            });
            call.record("http.response.status_code", 503_i64);
            call.record("app.ok", false);
            with_recorded(&call, |r| r.error = Some("503".into()));
            call.in_scope(|| tracing::info!(app.guard.blocked = true, "guard.finding"));
            let served = tracing::info_span!(parent: None, "request", otel.kind = "server");
            with_recorded(&served, |r| {
                r.trace_id = [9; 16];
                r.parent = Some([4; 8]);
                r.parent_is_remote = true;
            });
            drop((call, served));
        });
        let spans = buffer.take();
        assert_eq!(spans.len(), 3, "{spans:#?}");
        // In the order they ended.
        let (call, served, turn) = (&spans[0], &spans[1], &spans[2]);
        assert_eq!(turn.name, "invoke_agent travel");
        assert_eq!(turn.kind, Kind::Internal);
        assert_eq!(turn.parent, None);
        assert_eq!(
            turn.attributes,
            vec![
                ("gen_ai.agent.name", AttrValue::Str("travel".into())),
                ("app.tokens", AttrValue::Int(3)),
            ]
        );
        assert_eq!(call.name, "http");
        assert_eq!(call.kind, Kind::Client);
        assert_eq!(
            call.attributes,
            vec![
                ("http.response.status_code", AttrValue::Int(503)),
                ("app.ok", AttrValue::Bool(false)),
            ]
        );
        assert_eq!(call.error.as_deref(), Some("503"));
        assert_eq!(call.events.len(), 1);
        assert_eq!(call.events[0].name, "guard.finding");
        assert_eq!(
            call.events[0].attributes,
            vec![("app.guard.blocked", AttrValue::Bool(true))]
        );
        assert_eq!(call.parent, Some(turn.span_id));
        assert_eq!(call.trace_id, turn.trace_id);
        assert!(!call.parent_is_remote);
        assert!(call.start <= call.end && call.start > 0);
        assert_eq!(served.kind, Kind::Server);
        assert_eq!(served.trace_id, [9; 16]);
        assert_eq!(served.parent, Some([4; 8]));
        assert_ne!(served.span_id, [0; 8]);
        assert_ne!(served.trace_id, call.trace_id);
    }

    #[test]
    fn a_span_outside_any_subscriber_has_no_record() {
        assert_eq!(with_recorded(&tracing::Span::none(), |_| ()), None);
    }
}
