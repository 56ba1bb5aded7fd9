//! Finished spans as an OTLP/HTTP trace export (`ExportTraceServiceRequest`, protobuf),
//! written straight from the recorded spans (`crate::span_recorder`) into one reused
//! buffer, without building the generated proto types first (that copied every
//! attribute's key and value once more). A unit test decodes what this writes with
//! `opentelemetry-proto`, and the trace test decodes every export with it.
//!
//! Field numbers are those of `opentelemetry/proto/trace/v1/trace.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`.

use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

use crate::span_recorder::{AttrValue, Attribute, RecordedSpan, SpanEvent};

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

/// `AnyValue`: one member of its `oneof` is always written, a default value included.
struct Any<'a>(&'a AttrValue);

/// One scalar, as an `AnyValue`.
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

/// `ArrayValue { repeated AnyValue values = 1; }` of strings.
struct Strings<'a>(&'a [String]);

impl Message for Strings<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        for s in self.0 {
            message(out, 1, &Scalar::Str(s));
        }
    }
}

impl Message for Any<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        match self.0 {
            AttrValue::Bool(b) => Scalar::Bool(*b).fields(out),
            AttrValue::Int(i) => Scalar::Int(*i).fields(out),
            AttrValue::Double(f) => Scalar::Double(*f).fields(out),
            AttrValue::Str(s) => Scalar::Str(s).fields(out),
            AttrValue::Strs(list) => message(out, 5, &Strings(list)),
        }
    }
}

/// `KeyValue { string key = 1; AnyValue value = 2; }`.
struct KeyValue<'a>(&'a Attribute);

impl Message for KeyValue<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        bytes(out, 1, self.0.0.as_bytes());
        message(out, 2, &Any(&self.0.1));
    }
}

fn attributes<S: Sink>(out: &mut S, tag: u32, list: &[Attribute]) {
    for attribute in list {
        message(out, tag, &KeyValue(attribute));
    }
}

/// `Span.Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }`.
struct Event<'a>(&'a SpanEvent);

impl Message for Event<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        fixed64(out, 1, self.0.time);
        bytes(out, 2, self.0.name.as_bytes());
        attributes(out, 3, &self.0.attributes);
    }
}

/// `Status { string message = 2; StatusCode code = 3; }` (error 2).
struct Failed<'a>(&'a str);

impl Message for Failed<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        bytes(out, 2, self.0.as_bytes());
        uint(out, 3, 2);
    }
}

/// The span flags: sampled, and whether the parent is remote (both known).
fn flags(sampled: bool, parent_is_remote: bool) -> u32 {
    const HAS_IS_REMOTE: u32 = 0x100;
    const IS_REMOTE: u32 = 0x200;
    u32::from(sampled) | HAS_IS_REMOTE | if parent_is_remote { IS_REMOTE } else { 0 }
}

/// The `Span` message.
struct Span<'a>(&'a RecordedSpan);

impl Message for Span<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        let span = self.0;
        bytes(out, 1, &span.trace_id);
        bytes(out, 2, &span.span_id);
        bytes(out, 3, span.trace_state.as_bytes());
        if let Some(parent) = &span.parent {
            bytes(out, 4, parent);
        }
        bytes(out, 5, span.name.as_bytes());
        uint(out, 6, span.kind as u64);
        fixed64(out, 7, span.start);
        fixed64(out, 8, span.end);
        attributes(out, 9, &span.attributes);
        for event in &span.events {
            message(out, 11, &Event(event));
        }
        // An unset status is an empty message: left out, as proto3 leaves it.
        if let Some(error) = &span.error {
            message(out, 15, &Failed(error));
        }
        fixed32(out, 16, flags(span.sampled, span.parent_is_remote));
    }
}

/// `InstrumentationScope { string name = 1; }`: the spans are all this project's.
struct Scope;

/// The instrumentation scope of every span.
pub const SCOPE: &str = "tool-calling";

impl Message for Scope {
    fn fields<S: Sink>(&self, out: &mut S) {
        bytes(out, 1, SCOPE.as_bytes());
    }
}

/// `ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }`, in the order
/// the spans ended.
struct ScopeSpans<'a>(&'a [RecordedSpan]);

impl Message for ScopeSpans<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        message(out, 1, &Scope);
        for span in self.0 {
            message(out, 2, &Span(span));
        }
    }
}

/// `Resource { repeated KeyValue attributes = 1; }`.
struct Resource<'a>(&'a [Attribute]);

impl Message for Resource<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        attributes(out, 1, self.0);
    }
}

/// `ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }`.
struct ResourceSpans<'a> {
    resource: &'a [Attribute],
    spans: &'a [RecordedSpan],
}

impl Message for ResourceSpans<'_> {
    fn fields<S: Sink>(&self, out: &mut S) {
        message(out, 1, &Resource(self.resource));
        message(out, 2, &ScopeSpans(self.spans));
    }
}

/// Writes the export of `spans`, from the process `resource` describes, into `out` (which
/// is cleared first): the body of a `POST /v1/traces` with `application/x-protobuf`.
/// `lengths` is scratch space, kept by the caller between exports.
pub fn encode_export(
    resource: &[Attribute],
    spans: &[RecordedSpan],
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
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, ArrayValue, InstrumentationScope, KeyValue as ProtoKeyValue, any_value,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
    use opentelemetry_proto::tonic::trace::v1::{
        ResourceSpans as ProtoResourceSpans, ScopeSpans as ProtoScopeSpans, Span as ProtoSpan,
        Status, span::Event as ProtoEvent,
    };
    use prost::Message as _;

    use super::*;
    use crate::span_recorder::Kind;

    const START: u64 = 1_700_000_000_123_456_789;

    fn recorded(name: &str, id: u8, parent: Option<u8>, remote: bool) -> RecordedSpan {
        RecordedSpan {
            trace_id: [7; 16],
            span_id: [id; 8],
            parent: parent.map(|p| [p; 8]),
            parent_is_remote: remote,
            trace_state: if remote {
                "vendor=v1".into()
            } else {
                String::new()
            },
            sampled: true,
            name: name.to_owned(),
            kind: Kind::Client,
            start: START,
            end: START + 250_000,
            attributes: vec![
                ("gen_ai.operation.name", AttrValue::Str("chat".into())),
                ("gen_ai.usage.input_tokens", AttrValue::Int(1200)),
                ("app.ok", AttrValue::Bool(false)),
                ("app.zero", AttrValue::Int(0)),
                ("app.negative", AttrValue::Int(-5)),
                ("app.cost", AttrValue::Double(0.0125)),
                ("app.empty", AttrValue::Str(String::new())),
                (
                    "gen_ai.response.finish_reasons",
                    AttrValue::Strs(vec!["stop".into(), "tool_call".into()]),
                ),
            ],
            events: vec![SpanEvent {
                time: START + 10_000,
                name: "guard.finding".into(),
                attributes: vec![("app.guard.rule", AttrValue::Str("injection".into()))],
            }],
            error: None,
        }
    }

    fn kv(key: &str, value: any_value::Value) -> ProtoKeyValue {
        ProtoKeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    fn text(s: &str) -> any_value::Value {
        any_value::Value::StringValue(s.to_owned())
    }

    /// The proto message `recorded` stands for, built field by field.
    fn expected(span: &RecordedSpan) -> ProtoSpan {
        use any_value::Value::{BoolValue, DoubleValue, IntValue};
        ProtoSpan {
            trace_id: span.trace_id.to_vec(),
            span_id: span.span_id.to_vec(),
            trace_state: span.trace_state.clone(),
            parent_span_id: span.parent.map(|p| p.to_vec()).unwrap_or_default(),
            flags: 0x101 | if span.parent_is_remote { 0x200 } else { 0 },
            name: span.name.clone(),
            kind: 3,
            start_time_unix_nano: START,
            end_time_unix_nano: START + 250_000,
            attributes: vec![
                kv("gen_ai.operation.name", text("chat")),
                kv("gen_ai.usage.input_tokens", IntValue(1200)),
                kv("app.ok", BoolValue(false)),
                kv("app.zero", IntValue(0)),
                kv("app.negative", IntValue(-5)),
                kv("app.cost", DoubleValue(0.0125)),
                kv("app.empty", text("")),
                kv(
                    "gen_ai.response.finish_reasons",
                    any_value::Value::ArrayValue(ArrayValue {
                        values: ["stop", "tool_call"]
                            .map(|s| AnyValue {
                                value: Some(text(s)),
                            })
                            .to_vec(),
                    }),
                ),
            ],
            dropped_attributes_count: 0,
            events: vec![ProtoEvent {
                time_unix_nano: START + 10_000,
                name: "guard.finding".into(),
                attributes: vec![kv("app.guard.rule", text("injection"))],
                dropped_attributes_count: 0,
            }],
            dropped_events_count: 0,
            links: vec![],
            dropped_links_count: 0,
            status: span.error.as_ref().map(|e| Status {
                message: e.clone(),
                code: 2,
            }),
        }
    }

    /// What this encoder writes decodes, with the proto crate's generated types, to exactly
    /// the messages the recorded spans stand for.
    #[test]
    fn the_export_decodes_to_the_spans_it_was_written_from() {
        let mut failed = recorded("execute_tool search_flights", 5, Some(1), false);
        failed.error = Some("upstream".into());
        failed.kind = Kind::Client;
        let spans = vec![
            recorded("invoke_agent travel", 1, None, false),
            recorded("POST /search", 3, Some(9), true),
            failed,
        ];
        let resource = vec![
            ("service.name", AttrValue::Str("chat-router".into())),
            ("telemetry.sdk.language", AttrValue::Str("rust".into())),
        ];
        let (mut body, mut lengths) = (Vec::new(), Vec::new());
        encode_export(&resource, &spans, &mut body, &mut lengths);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();

        let want = ProtoResourceSpans {
            resource: Some(ProtoResource {
                attributes: vec![
                    kv("service.name", text("chat-router")),
                    kv("telemetry.sdk.language", text("rust")),
                ],
                dropped_attributes_count: 0,
                entity_refs: vec![],
            }),
            scope_spans: vec![ProtoScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE.into(),
                    ..Default::default()
                }),
                spans: spans.iter().map(expected).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        };
        assert_eq!(decoded.resource_spans, vec![want]);

        encode_export(&resource, &[], &mut body, &mut lengths);
        assert!(body.is_empty());
    }
}
