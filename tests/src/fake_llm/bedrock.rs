//! The Bedrock side of the fake LLM: `ConverseStream` answered in the AWS event-stream
//! binary framing (each event one frame: prelude, headers `:message-type`, `:event-type`,
//! `:content-type`, a JSON payload, CRCs), errors as Bedrock sends them (an
//! `x-amzn-ErrorType` header before the stream; an exception frame within it), and Titan
//! Text Embeddings V2 through `InvokeModel`.
//!
//! A scripted [`Reply`] becomes: `messageStart`; its text as `contentBlockDelta`s of block
//! 0, one per word, and `contentBlockStop`; per tool call a `contentBlockStart` with the
//! `toolUse` id and name, its input JSON in two or more `contentBlockDelta` pieces and a
//! `contentBlockStop`; `messageStop` with the stop reason; `metadata` with the usage.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

use super::{Reply, ResponseBody, pieces, respond, with_head, words, write_events};

/// What a Bedrock path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    Converse { model: String },
    Embed { model: String },
}

/// The route of `path`, `/model/{modelId}/converse-stream` or `/model/{modelId}/invoke`
/// (the model id percent-encoded, as the SDK sends it).
pub(super) fn route(path: &str) -> Option<Route> {
    let rest = path.strip_prefix("/model/")?;
    let (model, action) = rest.rsplit_once('/')?;
    let model = percent_decode(model);
    match action {
        "converse-stream" => Some(Route::Converse { model }),
        "invoke" => Some(Route::Embed { model }),
        _ => None,
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn text_of(blocks: &[Value]) -> Vec<String> {
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A Converse request body in the OpenAI Chat Completions form (see the module notes of
/// [`super`]): what the matchers and the tests' assertions read.
pub fn as_openai(model: &str, body: &Value) -> Value {
    let mut messages = Vec::new();
    let system = text_of(array(body, "system"));
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system.join("\n")}));
    }
    for message in array(body, "messages") {
        let blocks = array(message, "content");
        if message.get("role").and_then(Value::as_str) == Some("assistant") {
            let text = text_of(blocks).join("\n");
            let calls: Vec<Value> = blocks
                .iter()
                .filter_map(|b| b.get("toolUse"))
                .map(|u| {
                    json!({"id": u["toolUseId"], "type": "function", "function": {
                        "name": u["name"],
                        "arguments": u.get("input").map(Value::to_string).unwrap_or_default(),
                    }})
                })
                .collect();
            let mut out = json!({"role": "assistant",
                "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { Value::String(text) }});
            if !calls.is_empty() {
                out["tool_calls"] = Value::Array(calls);
            }
            messages.push(out);
            continue;
        }
        // A user message: its texts and tool results in their order.
        for block in blocks {
            if let Some(text) = block.get("text") {
                messages.push(json!({"role": "user", "content": text}));
            } else if let Some(result) = block.get("toolResult") {
                let content: Vec<String> = array(result, "content")
                    .iter()
                    .map(|c| match (c.get("text"), c.get("json")) {
                        (Some(Value::String(t)), _) => t.clone(),
                        (_, Some(j)) => j.to_string(),
                        _ => String::new(),
                    })
                    .collect();
                let mut out = json!({"role": "tool", "tool_call_id": result["toolUseId"],
                                     "content": content.concat()});
                if let Some(status) = result.get("status") {
                    out["status"] = status.clone();
                }
                messages.push(out);
            }
        }
    }
    let mut out = Map::new();
    out.insert("model".into(), json!(model));
    out.insert("messages".into(), Value::Array(messages));
    out.insert("stream".into(), json!(true));
    if let Some(config) = body.get("toolConfig") {
        let tools: Vec<Value> = array(config, "tools")
            .iter()
            .filter_map(|t| t.get("toolSpec"))
            .map(|spec| {
                let mut function = json!({"name": spec["name"],
                    "parameters": spec.pointer("/inputSchema/json").cloned().unwrap_or(Value::Null)});
                if let Some(description) = spec.get("description") {
                    function["description"] = description.clone();
                }
                json!({"type": "function", "function": function})
            })
            .collect();
        out.insert("tools".into(), Value::Array(tools));
        let choice = config.get("toolChoice");
        let choice = match choice {
            Some(c) if c.get("any").is_some() => json!("required"),
            Some(c) if c.get("tool").is_some() => {
                json!({"type": "function", "function": {"name": c["tool"]["name"]}})
            }
            _ => json!("auto"),
        };
        out.insert("tool_choice".into(), choice);
    }
    if let Some(config) = body.get("inferenceConfig") {
        for (from, to) in [("maxTokens", "max_tokens"), ("temperature", "temperature")] {
            if let Some(value) = config.get(from) {
                out.insert(to.into(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// One event-stream frame.
fn frame(headers: Vec<Header>, payload: &Value) -> Bytes {
    let message = Message::new_from_parts(headers, Bytes::from(payload.to_string()));
    let mut buffer = Vec::new();
    match aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer) {
        Ok(()) => Bytes::from(buffer),
        Err(e) => panic!("fake LLM: writing an event-stream frame: {e}"),
    }
}

fn header(name: &'static str, value: &str) -> Header {
    Header::new(name, HeaderValue::String(value.to_owned().into()))
}

/// An `event` frame of type `kind`.
fn event(kind: &str, payload: Value) -> Bytes {
    frame(
        vec![
            header(":event-type", kind),
            header(":content-type", "application/json"),
            header(":message-type", "event"),
        ],
        &payload,
    )
}

/// An `exception` frame of type `kind`, as Bedrock ends a stream that fails.
fn exception(kind: &str, message: &str) -> Bytes {
    frame(
        vec![
            header(":exception-type", kind),
            header(":content-type", "application/json"),
            header(":message-type", "exception"),
        ],
        &json!({"message": message}),
    )
}

/// Converse's stop reason for the reply's finish reason (OpenAI's names in the script).
fn stop_reason(reply: &Reply) -> String {
    match super::finish_reason(reply).as_str() {
        "stop" => "end_turn".into(),
        "tool_calls" => "tool_use".into(),
        "length" => "max_tokens".into(),
        "content_filter" => "content_filtered".into(),
        other => other.into(),
    }
}

/// The frames of a streamed reply, and the number of completion pieces.
fn frames(reply: &Reply, number: usize) -> (Vec<Bytes>, u64) {
    let mut out = vec![event("messageStart", json!({"role": "assistant"}))];
    let mut produced = 0u64;
    let mut index = 0;
    if !reply.text.is_empty() {
        for word in words(&reply.text) {
            out.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"text": word}}),
            ));
            produced += 1;
        }
        out.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    for (n, (name, arguments)) in reply.calls.iter().enumerate() {
        out.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {
                "toolUseId": format!("tooluse_{number}_{n}"), "name": name}}}),
        ));
        for piece in pieces(arguments) {
            out.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}),
            ));
            produced += 1;
        }
        out.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    (out, produced)
}

/// A streamed `ConverseStream` answer.
pub(super) fn stream(reply: &Reply, number: usize) -> http::Response<ResponseBody> {
    let (mut events, produced) = frames(reply, number);
    if let Some(message) = &reply.stream_error {
        let kind = reply
            .stream_error_type
            .as_deref()
            .unwrap_or("modelStreamErrorException");
        events.push(exception(kind, message));
    } else {
        events.push(event(
            "messageStop",
            json!({"stopReason": stop_reason(reply)}),
        ));
        let (prompt, completion) = reply
            .usage
            .unwrap_or((super::DEFAULT_PROMPT_TOKENS, produced));
        // Converse counts cache reads apart from `inputTokens`.
        let cached = reply.cached_tokens.unwrap_or(0).min(prompt);
        let mut usage = json!({"inputTokens": prompt - cached, "outputTokens": completion,
                               "totalTokens": prompt + completion});
        if reply.cached_tokens.is_some() {
            usage["cacheReadInputTokens"] = json!(cached);
        }
        events.push(event(
            "metadata",
            json!({"usage": usage, "metrics": {"latencyMs": 1}}),
        ));
    }
    let cut = match reply.cut_off_after {
        Some(n) if n < events.len() => {
            events.truncate(n);
            true
        }
        _ => false,
    };
    let body = write_events(events, reply.chunk_delay, reply.write_size, cut);
    with_head(
        body,
        200,
        "application/vnd.amazon.eventstream",
        &reply.headers,
    )
}

/// The exception Bedrock names for an HTTP status.
fn error_type(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

/// An error answer before the stream, as Bedrock's REST-JSON protocol sends it.
pub(super) fn error(
    status: u16,
    message: &str,
    headers: &[(String, String)],
) -> http::Response<ResponseBody> {
    let mut headers = headers.to_vec();
    headers.push(("x-amzn-ErrorType".into(), error_type(status).into()));
    respond(
        status,
        "application/json",
        Bytes::from(json!({ "message": message }).to_string()),
        &headers,
    )
}

/// Length of the fake embeddings when the request names none (Titan V2's default).
pub const DEFAULT_EMBEDDING_DIMENSIONS: usize = 1024;

/// A deterministic unit vector for `text`: words hashed into `dimensions` buckets, so
/// texts that share words are near each other.
pub fn fake_embedding(text: &str, dimensions: usize) -> Vec<f32> {
    let dimensions = dimensions.max(1);
    let mut vector = vec![0f32; dimensions];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        // FNV-1a: stable across runs and platforms.
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
        vector[(hash % dimensions as u64) as usize] += 1.0;
    }
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|v| *v /= norm);
    }
    vector
}

/// Titan Text Embeddings V2 through `InvokeModel`: `{"inputText", "dimensions"}` →
/// `{"embedding", "inputTextTokenCount"}`.
pub(super) fn embed(model: &str, body: &Value) -> http::Response<ResponseBody> {
    let Some(text) = body.get("inputText").and_then(Value::as_str) else {
        return error(
            400,
            &format!("fake Bedrock {model}: inputText is missing"),
            &[],
        );
    };
    let dimensions = body
        .get("dimensions")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_EMBEDDING_DIMENSIONS, |d| d as usize);
    if ![256, 512, 1024].contains(&dimensions) {
        return error(
            400,
            "fake Bedrock: dimensions must be 256, 512 or 1024",
            &[],
        );
    }
    let answer = json!({
        "embedding": fake_embedding(text, dimensions),
        "inputTextTokenCount": words(text).len(),
    });
    respond(
        200,
        "application/json",
        Bytes::from(answer.to_string()),
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_decode_the_model_id() {
        assert_eq!(
            route("/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"),
            Some(Route::Converse {
                model: "anthropic.claude-3-5-haiku-20241022-v1:0".into()
            })
        );
        assert_eq!(
            route("/model/amazon.titan-embed-text-v2:0/invoke"),
            Some(Route::Embed {
                model: "amazon.titan-embed-text-v2:0".into()
            })
        );
        assert_eq!(route("/v1/chat/completions"), None);
    }

    #[test]
    fn a_converse_request_reads_as_chat_completions() {
        let body = json!({
            "system": [{"text": "be brief"}],
            "messages": [
                {"role": "user", "content": [{"text": "flights"}]},
                {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "search_flights", "input": {"origin": "ZRH"}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "t1", "content": [{"text": "none"}], "status": "error"}},
                    {"text": "and now?"}
                ]}
            ],
            "toolConfig": {"tools": [{"toolSpec": {"name": "search_flights", "description": "d", "inputSchema": {"json": {"type": "object"}}}}],
                           "toolChoice": {"any": {}}},
            "inferenceConfig": {"maxTokens": 300}
        });
        let seen = as_openai("m", &body);
        assert_eq!(
            seen,
            json!({
                "model": "m",
                "stream": true,
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "flights"},
                    {"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "type": "function",
                        "function": {"name": "search_flights", "arguments": "{\"origin\":\"ZRH\"}"}}]},
                    {"role": "tool", "tool_call_id": "t1", "content": "none", "status": "error"},
                    {"role": "user", "content": "and now?"}
                ],
                "tools": [{"type": "function", "function": {"name": "search_flights", "description": "d", "parameters": {"type": "object"}}}],
                "tool_choice": "required",
                "max_tokens": 300
            })
        );
    }

    #[test]
    fn frames_decode_as_written() {
        let (frames, _) = frames(&Reply::text("hello there"), 1);
        let mut bytes: &[u8] = &frames.concat();
        let mut kinds = Vec::new();
        while !bytes.is_empty() {
            let message = aws_smithy_eventstream::frame::read_message_from(&mut bytes)
                .unwrap_or_else(|e| panic!("{e}"));
            let kind = message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == ":event-type")
                .and_then(|h| h.value().as_string().ok())
                .map(|s| s.as_str().to_owned());
            kinds.push(kind.unwrap_or_default());
        }
        assert_eq!(
            kinds,
            [
                "messageStart",
                "contentBlockDelta",
                "contentBlockDelta",
                "contentBlockStop"
            ]
        );
    }

    #[test]
    fn embeddings_are_unit_vectors_and_similar_for_shared_words() {
        let a = fake_embedding("baggage allowance business", 256);
        let b = fake_embedding("Business baggage", 256);
        let c = fake_embedding("lounge access", 256);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert!(dot(&a, &b) > dot(&a, &c));
    }
}
