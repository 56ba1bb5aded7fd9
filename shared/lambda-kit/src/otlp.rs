//! Finished spans as an OTLP/HTTP trace export (`ExportTraceServiceRequest`, protobuf),
//! written straight from the SDK's `SpanData` into one reused buffer.
//!
//! Why not the `opentelemetry-otlp` exporter: it first converts every span into the
//! generated proto types, copying each attribute's key and value into a new `String`, then
//! encodes those; for a flight turn's dozen spans that was a quarter of what tracing cost
//! (docs/measurements.md, "Traces"). The wire format is the same: a unit test compares what
//! this writes with what `opentelemetry-proto` builds from the same spans, and the trace
//! test decodes every export with it.
//!
//! Field numbers are those of `opentelemetry/proto/trace/v1/trace.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

/// Where encoded bytes go. Protobuf puts a message's length before it, so an export is
/// walked twice in the same order: [`Sizer`] measures every message once (inner ones first)
/// and keeps the lengths in the order the messages begin, then [`Writer`] writes each
/// message behind the length kept for it.
trait Sink {
    fn key(&mut self, tag: u32, wire_type: WireType);
    fn varint(&mut self, value: u64);
    fn raw(&mut self, bytes: &[u8]);
    fn message<M: Message>(&mut self, tag: u32, message: &M);
}

/// The first walk: counts bytes, and keeps each message's length.
struct Sizer<'a> {
    count: usize,
    lengths: &'a mut Vec<usize>,
}

impl Sink for Sizer<'_> {
    fn key(&mut self, tag: u32, _: WireType) {
        self.count += key_len(tag);
    }
    fn varint(&mut self, value: u64) {
        self.count += encoded_len_varint(value);
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.count += bytes.len();
    }
    fn message<M: Message>(&mut self, tag: u32, message: &M) {
        let slot = self.lengths.len();
        self.lengths.push(0);
        let outer = std::mem::replace(&mut self.count, 0);
        message.fields(self);
        let inner = std::mem::replace(&mut self.count, outer);
        self.lengths[slot] = inner;
        self.count += key_len(tag) + encoded_len_varint(inner as u64) + inner;
    }
}

/// The second walk: writes, taking the lengths in the order the first walk kept them.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    lengths: std::slice::Iter<'a, usize>,
}

impl Sink for Writer<'_> {
    fn key(&mut self, tag: u32, wire_type: WireType) {
        encode_key(tag, wire_type, self.out);
    }
    fn varint(&mut self, value: u64) {
        encode_varint(value, self.out);
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }
    fn message<M: Message>(&mut self, tag: u32, message: &M) {
        // The walks visit the same messages in the same order: there is a length for each.
        let length = self.lengths.next().copied().unwrap_or_default();
        self.key(tag, WireType::LengthDelimited);
        self.varint(length as u64);
        message.fields(self);
    }
}

/// A protobuf message: how its fields are written.
trait Message {
    fn fields<S: Sink>(&self, out: &mut S);
}

fn message<S: Sink, M: Message>(out: &mut S, tag: u32, message: &M) {
    out.message(tag, message);
}

/// A length-delimited field; proto3 leaves an empty one out.
fn bytes<S: Sink>(out: &mut S, tag: u32, value: &[u8]) {
    if !value.is_empty() {
        out.key(tag, WireType::LengthDelimited);
        out.varint(value.len() as u64);
        out.raw(value);
    }
}

fn uint<S: Sink>(out: &mut S, tag: u32, value: u64) {
    if value != 0 {
        out.key(tag, WireType::Varint);
        out.varint(value);
    }
}

fn fixed32<S: Sink>(out: &mut S, tag: u32, value: u32) {
    if value != 0 {
        out.key(tag, WireType::ThirtyTwoBit);
        out.raw(&value.to_le_bytes());
    }
}

fn fixed64<S: Sink>(out: &mut S, tag: u32, value: u64) {
    if value != 0 {
        out.key(tag, WireType::SixtyFourBit);
        out.raw(&value.to_le_bytes());
    }
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `AnyValue`: one member of its `oneof` is always written, a default value included.
struct Any<'a>(&'a Value);

/// One scalar of an array, as an `AnyValue`.
enum Scalar<'a> {
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(&'a str),
}

impl Message for Scalar<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        match *self {
            Self::Str(s) => {
                out.key(1, WireType::LengthDelimited);
                out.varint(s.len() as u64);
                out.raw(s.as_bytes());
            }
            Self::Bool(b) => {
                out.key(2, WireType::Varint);
                out.varint(u64::from(b));
            }
            Self::Int(i) => {
                out.key(3, WireType::Varint);
                // int64 is written as its two's complement, as protobuf does.
                out.varint(i as u64);
            }
            Self::Double(f) => {
                out.key(4, WireType::SixtyFourBit);
                out.raw(&f.to_le_bytes());
            }
        }
    }
}

/// `ArrayValue { repeated AnyValue values = 1; }`.
struct Values<'a>(&'a Array);

impl Message for Values<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        match self.0 {
            Array::Bool(v) => v.iter().for_each(|b| message(out, 1, &Scalar::Bool(*b))),
            Array::I64(v) => v.iter().for_each(|i| message(out, 1, &Scalar::Int(*i))),
            Array::F64(v) => v.iter().for_each(|f| message(out, 1, &Scalar::Double(*f))),
            Array::String(v) => v
                .iter()
                .for_each(|s| message(out, 1, &Scalar::Str(s.as_str()))),
            // A kind of array this encoder does not know: its text, as one string.
            other => message(out, 1, &Scalar::Str(&other.to_string())),
        }
    }
}

impl Message for Any<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        match self.0 {
            Value::Bool(b) => Scalar::Bool(*b).fields(out),
            Value::I64(i) => Scalar::Int(*i).fields(out),
            Value::F64(f) => Scalar::Double(*f).fields(out),
            Value::String(s) => Scalar::Str(s.as_str()).fields(out),
            Value::Array(a) => message(out, 5, &Values(a)),
            other => Scalar::Str(&other.as_str()).fields(out),
        }
    }
}

/// `KeyValue { string key = 1; AnyValue value = 2; }`.
struct Attribute<'a>(&'a KeyValue);

impl Message for Attribute<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        bytes(out, 1, self.0.key.as_str().as_bytes());
        message(out, 2, &Any(&self.0.value));
    }
}

fn attributes<S: Sink>(out: &mut S, tag: u32, list: &[KeyValue]) {
    for kv in list {
        message(out, tag, &Attribute(kv));
    }
}

/// `Span.Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }`.
struct Event<'a>(&'a opentelemetry::trace::Event);

impl Message for Event<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        fixed64(out, 1, nanos(self.0.timestamp));
        bytes(out, 2, self.0.name.as_bytes());
        attributes(out, 3, &self.0.attributes);
        uint(out, 4, u64::from(self.0.dropped_attributes_count));
    }
}

/// `Status { string message = 2; StatusCode code = 3; }` (unset 0, ok 1, error 2).
struct SpanStatus<'a>(&'a Status);

impl Message for SpanStatus<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        match self.0 {
            Status::Unset => {}
            Status::Ok => uint(out, 3, 1),
            Status::Error { description } => {
                bytes(out, 2, description.as_bytes());
                uint(out, 3, 2);
            }
        }
    }
}

/// The span flags: the trace flags, and whether the parent is remote (both known).
fn flags(trace_flags: u8, parent_is_remote: bool) -> u32 {
    const HAS_IS_REMOTE: u32 = 0x100;
    const IS_REMOTE: u32 = 0x200;
    u32::from(trace_flags) | HAS_IS_REMOTE | if parent_is_remote { IS_REMOTE } else { 0 }
}

/// `Span.Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; uint32 dropped_attributes_count = 5; fixed32 flags = 6; }`.
struct Link<'a>(&'a opentelemetry::trace::Link);

impl Message for Link<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        let context = &self.0.span_context;
        bytes(out, 1, &context.trace_id().to_bytes());
        bytes(out, 2, &context.span_id().to_bytes());
        bytes(out, 3, context.trace_state().header().as_bytes());
        attributes(out, 4, &self.0.attributes);
        uint(out, 5, u64::from(self.0.dropped_attributes_count));
        fixed32(
            out,
            6,
            flags(context.trace_flags().to_u8(), context.is_remote()),
        );
    }
}

/// The `Span` message.
struct Span<'a>(&'a SpanData);

impl Message for Span<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        let span = self.0;
        let context = &span.span_context;
        bytes(out, 1, &context.trace_id().to_bytes());
        bytes(out, 2, &context.span_id().to_bytes());
        bytes(out, 3, context.trace_state().header().as_bytes());
        if span.parent_span_id != opentelemetry::trace::SpanId::INVALID {
            bytes(out, 4, &span.parent_span_id.to_bytes());
        }
        bytes(out, 5, span.name.as_bytes());
        let kind = match span.span_kind {
            SpanKind::Internal => 1,
            SpanKind::Server => 2,
            SpanKind::Client => 3,
            SpanKind::Producer => 4,
            SpanKind::Consumer => 5,
        };
        uint(out, 6, kind);
        fixed64(out, 7, nanos(span.start_time));
        fixed64(out, 8, nanos(span.end_time));
        attributes(out, 9, &span.attributes);
        uint(out, 10, u64::from(span.dropped_attributes_count));
        for event in span.events.iter() {
            message(out, 11, &Event(event));
        }
        uint(out, 12, u64::from(span.events.dropped_count));
        for link in span.links.iter() {
            message(out, 13, &Link(link));
        }
        uint(out, 14, u64::from(span.links.dropped_count));
        message(out, 15, &SpanStatus(&span.status));
        fixed32(
            out,
            16,
            flags(context.trace_flags().to_u8(), span.parent_span_is_remote),
        );
    }
}

/// `InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; }`.
struct Scope<'a>(&'a InstrumentationScope);

impl Message for Scope<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        bytes(out, 1, self.0.name().as_bytes());
        bytes(out, 2, self.0.version().unwrap_or_default().as_bytes());
        for kv in self.0.attributes() {
            message(out, 3, &Attribute(kv));
        }
    }
}

/// `ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }`:
/// the spans of `scope`, in the order they ended.
struct ScopeSpans<'a> {
    scope: &'a InstrumentationScope,
    spans: &'a [SpanData],
    /// Every span is of `scope` (no need to compare).
    only: bool,
}

impl Message for ScopeSpans<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        message(out, 1, &Scope(self.scope));
        for span in self
            .spans
            .iter()
            .filter(|s| self.only || s.instrumentation_scope == *self.scope)
        {
            message(out, 2, &Span(span));
        }
        bytes(
            out,
            3,
            self.scope.schema_url().unwrap_or_default().as_bytes(),
        );
    }
}

/// `Resource { repeated KeyValue attributes = 1; }`.
struct Resource<'a>(&'a [KeyValue]);

impl Message for Resource<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        attributes(out, 1, self.0);
    }
}

/// `ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }`.
struct ResourceSpans<'a> {
    resource: &'a [KeyValue],
    spans: &'a [SpanData],
}

impl Message for ResourceSpans<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        message(out, 1, &Resource(self.resource));
        // One `ScopeSpans` per scope, in the order the scopes first appear (one, usually).
        let mut scopes: Vec<&InstrumentationScope> = Vec::new();
        for span in self.spans {
            if !scopes.contains(&&span.instrumentation_scope) {
                scopes.push(&span.instrumentation_scope);
            }
        }
        let only = scopes.len() == 1;
        for scope in scopes {
            message(
                out,
                2,
                &ScopeSpans {
                    scope,
                    spans: self.spans,
                    only,
                },
            );
        }
    }
}

/// Writes the export of `spans`, from the process `resource` describes, into `out` (which
/// is cleared first): the body of a `POST /v1/traces` with `application/x-protobuf`.
/// `lengths` is scratch space, kept by the caller between exports.
pub fn encode_export(
    resource: &[KeyValue],
    spans: &[SpanData],
    out: &mut Vec<u8>,
    lengths: &mut Vec<usize>,
) {
    out.clear();
    lengths.clear();
    if spans.is_empty() {
        return;
    }
    let export = ResourceSpans { resource, spans };
    let mut sizer = Sizer { count: 0, lengths };
    message(&mut sizer, 1, &export);
    out.reserve(sizer.count);
    let mut writer = Writer {
        out,
        lengths: lengths.iter(),
    };
    message(&mut writer, 1, &export);
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::time::Duration;

    use opentelemetry::trace::{Event, Link, SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};
    use prost::Message as _;

    use super::*;

    fn context(trace: u128, span: u64, remote: bool) -> SpanContext {
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            remote,
            TraceState::from_key_value([("vendor", "v1")]).unwrap_or_default(),
        )
    }

    fn span(
        name: &'static str,
        scope: &InstrumentationScope,
        parent: u64,
        status: Status,
    ) -> SpanData {
        let start = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
        SpanData {
            span_context: context(7, parent + 1, false),
            parent_span_id: SpanId::from(parent),
            parent_span_is_remote: parent == 3,
            span_kind: SpanKind::Client,
            name: Cow::Borrowed(name),
            start_time: start,
            end_time: start + Duration::from_micros(250),
            attributes: vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.usage.input_tokens", 1200_i64),
                KeyValue::new("app.ok", false),
                KeyValue::new("app.zero", 0_i64),
                KeyValue::new("app.negative", -5_i64),
                KeyValue::new("app.cost", 0.0125),
                KeyValue::new("app.empty", ""),
                KeyValue::new(
                    "gen_ai.response.finish_reasons",
                    Value::Array(Array::String(vec!["stop".into(), "tool_call".into()])),
                ),
                KeyValue::new("app.ints", Value::Array(Array::I64(vec![0, 3]))),
                KeyValue::new("app.flags", Value::Array(Array::Bool(vec![true]))),
                KeyValue::new("app.ratios", Value::Array(Array::F64(vec![0.5]))),
            ],
            dropped_attributes_count: 1,
            events: {
                let mut events = SpanEvents::default();
                events.events.push(Event::new(
                    "guard.finding",
                    start + Duration::from_micros(10),
                    vec![KeyValue::new("app.guard.rule", "injection")],
                    0,
                ));
                events.dropped_count = 2;
                events
            },
            links: {
                let mut links = SpanLinks::default();
                links.links.push(Link::new(
                    context(9, 99, true),
                    vec![KeyValue::new("app.link", 1_i64)],
                    0,
                ));
                links
            },
            status,
            instrumentation_scope: scope.clone(),
        }
    }

    /// What this encoder writes decodes to exactly what `opentelemetry-proto`'s own
    /// conversion of the same spans builds.
    #[test]
    fn the_export_is_what_the_proto_crate_builds_from_the_same_spans() {
        let ours = InstrumentationScope::builder("tool-calling").build();
        let other = InstrumentationScope::builder("other")
            .with_version("1.2")
            .with_schema_url("https://opentelemetry.io/schemas/1.30.0")
            .with_attributes([KeyValue::new("scope.attr", "x")])
            .build();
        let spans = vec![
            span("invoke_agent travel", &ours, 0, Status::Unset),
            span("chat gpt-4o-mini", &other, 3, Status::Ok),
            span(
                "execute_tool search_flights",
                &ours,
                5,
                Status::error("upstream"),
            ),
        ];
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name("chat-router")
            .build();
        let attributes: Vec<KeyValue> = resource
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        let (mut body, mut lengths) = (Vec::new(), Vec::new());
        encode_export(&attributes, &spans, &mut body, &mut lengths);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();

        let mut expected = group_spans_by_resource_and_scope(
            spans,
            &ResourceAttributesWithSchema::from(&resource),
        );
        assert_eq!(decoded.resource_spans.len(), 1);
        let mut got = decoded.resource_spans[0].clone();
        // The resource's attributes come from a map: compared as a set.
        for r in [&mut got, &mut expected[0]] {
            if let Some(resource) = r.resource.as_mut() {
                resource.attributes.sort_by(|a, b| a.key.cmp(&b.key));
            }
        }
        assert_eq!(got, expected[0]);
        assert_eq!(got.scope_spans.len(), 2);
        assert_eq!(got.scope_spans[0].spans.len(), 2);

        encode_export(&attributes, &[], &mut body, &mut lengths);
        assert!(body.is_empty());
    }
}
