//! Reassembles an OpenAI Chat Completions answer from its Server-Sent Events stream.
//!
//! The assembler is pure and synchronous: bytes go in exactly as the network delivers them
//! (split anywhere, also inside a line or a UTF-8 sequence), text deltas come out as soon as
//! their event is complete, and [`StreamAssembler::finish`] yields the [`Completion`].
//!
//! Tolerated provider quirks: CRLF or CR line ends, comments / keep-alives (`: ping`),
//! events not separated by blank lines, tool calls sent whole in one delta and without
//! `index` (Gemini's compatibility layer, Ollama), calls without `id` (an id `call_<n>` is
//! made up), several calls reusing `index` 0 with distinct ids, `arguments` sent as a JSON
//! object instead of text, and a plain non-streamed completion object
//! ([`StreamAssembler::push_completion_json`]).

use serde::Deserialize;
use serde_json::Value;

use agent_core::llm::{Completion, FinishReason, ToolCallRequest};
use domain::token_usage::TokenUsage;
use domain::{Error, Result};

const SERVICE: &str = "llm";

/// A line longer than this is not an LLM stream (and must not grow memory without bound).
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Reassembles one streamed completion. Feed it with [`feed`](Self::feed), then call
/// [`flush`](Self::flush) (for deltas of an unterminated last line) and
/// [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct StreamAssembler {
    /// Bytes of the line being received.
    line: Vec<u8>,
    /// The previous line ended in `\r`: a `\n` right after it belongs to that line end.
    skip_lf: bool,
    /// `data:` payload of the event being received (lines joined by `\n`).
    data: Vec<u8>,
    has_data: bool,
    /// `data: [DONE]` was seen (or a non-streamed completion was read).
    done: bool,
    content: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    model: Option<String>,
    usage: Option<TokenUsage>,
}

#[derive(Debug)]
struct PartialCall {
    index: Option<u64>,
    id: Option<String>,
    name: String,
    arguments: String,
}

impl StreamAssembler {
    /// A parser with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the stream; returns the text deltas of the events they
    /// complete, in order. An `error` object in the stream, a malformed event or an
    /// oversized line is an [`Error::Upstream`]. Input after `data: [DONE]` is ignored.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    start = i + 1;
                    continue;
                }
            }
            if b == b'\n' || b == b'\r' {
                self.line.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.line);
                self.on_line(&line, &mut out)?;
                self.skip_lf = b == b'\r';
                start = i + 1;
            }
        }
        self.line.extend_from_slice(&bytes[start..]);
        if self.line.len() > MAX_LINE_BYTES {
            return Err(upstream("stream line too long"));
        }
        Ok(out)
    }

    /// Ends the input: processes an unterminated last line and a last event without its
    /// blank line, returning their text deltas. Idempotent.
    pub fn flush(&mut self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.on_line(&line, &mut out)?;
        }
        self.dispatch(&mut out)?;
        Ok(out)
    }

    /// Reads a whole non-streamed completion object (`choices[0].message`), for proxies
    /// that ignore `stream: true`; returns its text as one delta.
    pub fn push_completion_json(&mut self, body: &[u8]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.on_payload(body, &mut out)?;
        self.done = true;
        Ok(out)
    }

    /// Whether the stream's end marker (`data: [DONE]`) has been seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The text received so far.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The finished completion. `requested_model` stands in when the provider named none.
    /// A stream that ended without `[DONE]` and without a finish reason was cut off and is
    /// an error, as is a tool call without a name.
    pub fn finish(mut self, requested_model: &str) -> Result<Completion> {
        self.flush()?;
        if !self.done && self.finish_reason.is_none() {
            return Err(upstream("the stream ended before the answer was complete"));
        }
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (n, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(upstream("the model sent a tool call without a name"));
            }
            tool_calls.push(ToolCallRequest {
                id: call.id.unwrap_or_else(|| format!("call_{n}")),
                name: call.name,
                arguments: call.arguments,
            });
        }
        Ok(Completion {
            model: self.model.unwrap_or_else(|| requested_model.to_owned()),
            content: self.content,
            tool_calls,
            finish_reason: self.finish_reason.map(|r| finish_reason(&r)),
            usage: self.usage,
        })
    }

    fn on_line(&mut self, line: &[u8], out: &mut Vec<String>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return Ok(()); // comment / keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        if field != b"data" {
            return Ok(()); // `event:`, `id:`, `retry:` carry nothing we use
        }
        if self.has_data {
            // Some servers omit the blank line between events: a complete payload followed
            // by another `data:` line is an event of its own, not a multi-line one.
            if is_complete_payload(&self.data) {
                self.dispatch(out)?;
            } else {
                self.data.push(b'\n');
            }
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<String>) -> Result<()> {
        if !self.has_data {
            return Ok(());
        }
        self.has_data = false;
        let data = std::mem::take(&mut self.data);
        let payload = data.trim_ascii();
        if payload.is_empty() || self.done {
            return Ok(());
        }
        if payload == b"[DONE]" {
            self.done = true;
            return Ok(());
        }
        self.on_payload(payload, out)
    }

    fn on_payload(&mut self, payload: &[u8], out: &mut Vec<String>) -> Result<()> {
        let chunk: WireChunk = serde_json::from_slice(payload)
            .map_err(|e| upstream(&format!("malformed stream event: {e}")))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(upstream(&format!(
                "error in stream: {}",
                error_message(&error)
            )));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = Some(model);
        }
        if let Some(usage) = chunk.usage.and_then(WireUsage::into_usage) {
            self.usage = Some(usage);
        }
        // Only the first choice: requests ask for one (`n` is never sent).
        let choice = chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0);
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(body) = choice.delta.or(choice.message) {
            let mut text = body.content.as_ref().map(content_text).unwrap_or_default();
            // A refusal is what the user should read in place of an answer.
            if let Some(refusal) = body.refusal.filter(|r| !r.is_empty()) {
                text.push_str(&refusal);
            }
            if !text.is_empty() {
                self.content.push_str(&text);
                out.push(text);
            }
            for call in body.tool_calls.unwrap_or_default() {
                self.tool_delta(call);
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
        }
        Ok(())
    }

    fn tool_delta(&mut self, delta: WireToolCall) {
        let id = delta.id.filter(|id| !id.is_empty());
        let (name, arguments) = match delta.function {
            Some(f) => (
                f.name.filter(|n| !n.is_empty()),
                f.arguments.map(arguments_text).unwrap_or_default(),
            ),
            None => (None, String::new()),
        };
        let existing = match delta.index {
            // A delta continues the latest call with its index, unless it carries another
            // id: then the provider reuses the index for a new call.
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.index == Some(index))
                .filter(|&pos| match (&id, &self.calls[pos].id) {
                    (Some(new), Some(old)) => new == old,
                    _ => true,
                }),
            // Without an index, a delta naming a call starts one; a bare arguments piece
            // continues the last call.
            None if id.is_none() && name.is_none() => self.calls.len().checked_sub(1),
            None => None,
        };
        let pos = match existing {
            Some(pos) => pos,
            None => {
                self.calls.push(PartialCall {
                    index: delta.index,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if call.id.is_none() {
            call.id = id;
        }
        if call.name.is_empty()
            && let Some(name) = name
        {
            call.name = name;
        }
        call.arguments.push_str(&arguments);
    }
}

fn upstream(message: &str) -> Error {
    Error::Upstream {
        service: SERVICE,
        message: message.to_owned(),
    }
}

fn is_complete_payload(data: &[u8]) -> bool {
    let data = data.trim_ascii();
    data == b"[DONE]" || serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok()
}

/// A short, printable message from an `error` value (`{"message": ...}` or a string).
fn error_message(error: &Value) -> String {
    let text = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or("the provider reported an error");
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// `content` is text, or (some providers) an array of `{"type":"text","text":...}` parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// `arguments` is JSON text; a provider sending an object gets it re-serialised.
fn arguments_text(arguments: Value) -> String {
    match arguments {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<WireDelta>,
    /// Non-streamed completions carry the whole message here.
    #[serde(default)]
    message: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// Some OpenAI-compatible providers send the cached count at the top level instead.
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn into_usage(self) -> Option<TokenUsage> {
        if self.prompt_tokens.is_none() && self.completion_tokens.is_none() {
            return None;
        }
        let prompt_tokens = self.prompt_tokens.unwrap_or(0);
        let completion_tokens = self.completion_tokens.unwrap_or(0);
        Some(TokenUsage {
            prompt_tokens,
            completion_tokens,
            // Saturating: the counts are the provider's, and may be anything.
            total_tokens: self
                .total_tokens
                .unwrap_or(prompt_tokens.saturating_add(completion_tokens)),
            cached_tokens: self
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(self.cached_tokens)
                .unwrap_or(0),
            estimated: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A realistic OpenAI stream: role chunk, text with multi-byte characters, two parallel
    /// tool calls with arguments in pieces, finish reason, a keep-alive, usage, `[DONE]`.
    fn openai_stream() -> String {
        let chunks = [
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"Grüße"},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":" aus Zürich 🛫, "},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"ich suche…"},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"search_flights","arguments":""}}]},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"origin\": \"ZRH\","}}]},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"kb_search","arguments":""}}]},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"destination\": \"Málaga\"}"}}]},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"query\":\"Gepäck\"}"}}]},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
        ];
        let mut s = String::new();
        for (i, c) in chunks.iter().enumerate() {
            s.push_str("data: ");
            s.push_str(c);
            s.push_str("\n\n");
            if i == 3 {
                s.push_str(": keep-alive\n\n");
            }
        }
        s.push_str(r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":42,"total_tokens":162}}"#);
        s.push_str("\n\ndata: [DONE]\n\n");
        s
    }

    fn expected() -> Completion {
        Completion {
            model: "gpt-4o-2024-08-06".into(),
            content: "Grüße aus Zürich 🛫, ich suche…".into(),
            tool_calls: vec![
                ToolCallRequest {
                    id: "call_A".into(),
                    name: "search_flights".into(),
                    arguments: r#"{"origin": "ZRH", "destination": "Málaga"}"#.into(),
                },
                ToolCallRequest {
                    id: "call_B".into(),
                    name: "kb_search".into(),
                    arguments: r#"{"query":"Gepäck"}"#.into(),
                },
            ],
            finish_reason: Some(FinishReason::ToolCalls),
            usage: Some(TokenUsage {
                prompt_tokens: 120,
                completion_tokens: 42,
                total_tokens: 162,
                cached_tokens: 0,
                estimated: false,
            }),
        }
    }

    /// Feeds `pieces` in order; returns the concatenated deltas and the completion.
    fn run<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> Result<(String, Completion)> {
        let mut a = StreamAssembler::new();
        let mut text = String::new();
        for piece in pieces {
            for delta in a.feed(piece)? {
                assert!(!delta.is_empty());
                text.push_str(&delta);
            }
        }
        for delta in a.flush()? {
            text.push_str(&delta);
        }
        Ok((text, a.finish("requested-model")?))
    }

    fn run_whole(stream: &str) -> Result<(String, Completion)> {
        run([stream.as_bytes()])
    }

    #[test]
    fn whole_stream() {
        let (text, completion) = run_whole(&openai_stream()).unwrap();
        assert_eq!(completion, expected());
        assert_eq!(text, completion.content);
    }

    #[test]
    fn split_at_every_byte_position() {
        let stream = openai_stream();
        let bytes = stream.as_bytes();
        let want = (expected().content, expected());
        for i in 0..=bytes.len() {
            let got = run([&bytes[..i], &bytes[i..]]).unwrap();
            assert_eq!(got, want, "split at byte {i}");
        }
    }

    #[test]
    fn one_byte_at_a_time_and_random_splits() {
        let stream = openai_stream();
        let bytes = stream.as_bytes();
        let want = (expected().content, expected());
        assert_eq!(run(bytes.chunks(1)).unwrap(), want);
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..300 {
            let mut cuts: Vec<usize> = (0..rng.usize(1..12))
                .map(|_| rng.usize(0..=bytes.len()))
                .collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for cut in cuts {
                pieces.push(&bytes[start..cut]);
                start = cut;
            }
            pieces.push(&bytes[start..]);
            assert_eq!(run(pieces).unwrap(), want);
        }
    }

    #[test]
    fn crlf_and_cr_line_ends_at_every_split() {
        let want = (expected().content, expected());
        for ending in ["\r\n", "\r"] {
            let stream = openai_stream().replace('\n', ending);
            let bytes = stream.as_bytes();
            for i in 0..=bytes.len() {
                assert_eq!(
                    run([&bytes[..i], &bytes[i..]]).unwrap(),
                    want,
                    "{ending:?} split at {i}"
                );
            }
        }
    }

    #[test]
    fn deltas_come_out_as_soon_as_their_event_is_complete() {
        let mut a = StreamAssembler::new();
        let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n";
        assert!(a.feed(first.as_bytes()).unwrap().is_empty()); // no blank line yet
        assert_eq!(a.feed(b"\n").unwrap(), vec!["Hel".to_owned()]);
        assert_eq!(a.content(), "Hel");
        let second = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n";
        assert_eq!(a.feed(second.as_bytes()).unwrap(), vec!["lo".to_owned()]);
        assert!(!a.is_done());
        a.feed(b"data: [DONE]\n\n").unwrap();
        assert!(a.is_done());
        let completion = a.finish("gpt-x").unwrap();
        assert_eq!(completion.content, "Hello");
        assert_eq!(completion.model, "gpt-x");
        assert_eq!(completion.finish_reason, None);
        assert_eq!(completion.usage, None);
    }

    #[test]
    fn whole_calls_without_index_or_id() {
        // Gemini's compatibility layer: every call complete in one delta, no index, no id.
        let stream = concat!(
            "data: {\"model\":\"gemini-2.5-flash\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[",
            "{\"function\":{\"name\":\"search_flights\",\"arguments\":\"{\\\"origin\\\":\\\"FRA\\\"}\"},\"type\":\"function\"},",
            "{\"function\":{\"name\":\"kb_search\",\"arguments\":\"{}\"},\"type\":\"function\"}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"\",\"function\":{\"name\":\"third\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: [DONE]\n\n"
        );
        let (_, c) = run_whole(stream).unwrap();
        let calls: Vec<_> = c
            .tool_calls
            .iter()
            .map(|t| (t.id.as_str(), t.name.as_str(), t.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_0", "search_flights", r#"{"origin":"FRA"}"#),
                ("call_1", "kb_search", "{}"),
                ("call_2", "third", "{}"),
            ]
        );
        assert_eq!(c.model, "gemini-2.5-flash");
        assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn index_reused_with_new_ids_and_object_arguments() {
        // Some providers number every call 0 but give each its own id; Ollama-style
        // servers may send arguments as an object.
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"one\",\"arguments\":{\"x\":1}}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"two\",\"arguments\":\"{\\\"y\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"arguments\":\":2}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        );
        let (_, c) = run_whole(stream).unwrap();
        assert_eq!(
            c.tool_calls,
            vec![
                ToolCallRequest {
                    id: "a".into(),
                    name: "one".into(),
                    arguments: r#"{"x":1}"#.into()
                },
                ToolCallRequest {
                    id: "b".into(),
                    name: "two".into(),
                    arguments: r#"{"y":2}"#.into()
                },
            ]
        );
        // Ended by its finish reason, without [DONE].
        assert_eq!(c.finish_reason, Some(FinishReason::Stop));
    }

    #[test]
    fn invalid_argument_text_is_kept_verbatim() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"search_flights\",\"arguments\":\"{not \"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"json\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        let (_, c) = run_whole(stream).unwrap();
        assert_eq!(c.tool_calls[0].arguments, "{not json");
    }

    #[test]
    fn events_without_blank_lines_and_multi_line_data() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n",
            // One event whose JSON spans two data lines (legal SSE).
            "data: {\"choices\":[{\"delta\":\n",
            "data: {\"content\":\"c\"}}]}\n\n",
            "event: message\nid: 7\nretry: 100\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"d\"},\"finish_reason\":\"length\"}]}\n",
            "data: [DONE]\n",
        );
        let (text, c) = run_whole(stream).unwrap();
        assert_eq!(text, "abcd");
        assert_eq!(c.content, "abcd");
        assert_eq!(c.finish_reason, Some(FinishReason::Length));
    }

    #[test]
    fn unterminated_last_line_is_flushed() {
        let mut a = StreamAssembler::new();
        let deltas = a
            .feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}")
            .unwrap();
        assert!(deltas.is_empty());
        assert_eq!(a.flush().unwrap(), vec!["hi".to_owned()]);
        assert!(a.flush().unwrap().is_empty());
        assert_eq!(a.finish("m").unwrap().content, "hi");
    }

    #[test]
    fn error_object_in_the_stream() {
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"error\":{\"message\":\"The server had an error\\nwhile processing\",\"type\":\"server_error\"}}\n\n";
        match run_whole(stream) {
            Err(Error::Upstream { service, message }) => {
                assert_eq!(service, "llm");
                assert_eq!(
                    message,
                    "error in stream: The server had an errorwhile processing"
                );
            }
            other => panic!("expected an upstream error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_event_and_truncated_stream_are_errors() {
        assert!(matches!(
            run_whole("data: {\"choices\":[\n\n"),
            Err(Error::Upstream { .. })
        ));
        match run_whole("data: {\"choices\":[{\"delta\":{\"content\":\"half\"}}]}\n\n") {
            Err(Error::Upstream { message, .. }) => assert!(message.contains("ended before")),
            other => panic!("expected an error, got {other:?}"),
        }
        assert!(run_whole("").is_err());
    }

    #[test]
    fn call_without_name_is_an_error() {
        let stream = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n";
        assert!(matches!(run_whole(stream), Err(Error::Upstream { .. })));
    }

    #[test]
    fn input_after_done_is_ignored() {
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\ndata: not json\n\n";
        assert_eq!(run_whole(stream).unwrap().1.content, "ok");
    }

    #[test]
    fn other_choices_and_content_parts_and_refusals() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"}},{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"par\"},{\"type\":\"text\",\"text\":\"ts\"}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\" no.\"},\"finish_reason\":\"content_filter\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
        );
        let (_, c) = run_whole(stream).unwrap();
        assert_eq!(c.content, "parts no.");
        assert_eq!(c.finish_reason, Some(FinishReason::ContentFilter));
        assert_eq!(
            c.usage,
            Some(TokenUsage {
                prompt_tokens: 3,
                completion_tokens: 2,
                total_tokens: 5,
                cached_tokens: 0,
                estimated: false,
            })
        );
    }

    #[test]
    fn cached_tokens_at_the_top_level_of_usage_count_too() {
        let usage = |u: &str| {
            let stream = format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"hi\"}},\"finish_reason\":\"stop\"}}],\"usage\":{u}}}\n\n"
            );
            run_whole(&stream).unwrap().1.usage.map(|u| u.cached_tokens)
        };
        assert_eq!(
            usage(r#"{"prompt_tokens":9,"completion_tokens":1,"cached_tokens":4}"#),
            Some(4)
        );
        assert_eq!(
            usage(
                r#"{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":6},"cached_tokens":4}"#
            ),
            Some(6)
        );
        assert_eq!(
            usage(r#"{"prompt_tokens":9,"completion_tokens":1}"#),
            Some(0)
        );
    }

    #[test]
    fn non_streamed_completion() {
        let body = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"llama3.1:8b",
            "choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
              {"id":"call_x","type":"function","function":{"name":"search_flights","arguments":"{\"origin\":\"ZRH\"}"}},
              {"id":"call_y","type":"function","function":{"name":"kb_search","arguments":"{}"}}]},
              "finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#;
        let mut a = StreamAssembler::new();
        assert!(a.push_completion_json(body).unwrap().is_empty());
        assert!(a.is_done());
        let c = a.finish("requested").unwrap();
        assert_eq!(c.model, "llama3.1:8b");
        assert_eq!(c.content, "");
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[1].id, "call_y");
        assert_eq!(c.usage.map(|u| u.total_tokens), Some(15));

        let mut a = StreamAssembler::new();
        let text = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}]}"#;
        assert_eq!(
            a.push_completion_json(text).unwrap(),
            vec!["Hi!".to_owned()]
        );
        assert_eq!(
            a.finish("m").unwrap().finish_reason,
            Some(FinishReason::Stop)
        );

        let mut a = StreamAssembler::new();
        assert!(
            a.push_completion_json(br#"{"error":{"message":"quota"}}"#)
                .is_err()
        );
    }

    #[test]
    fn oversized_line_is_refused() {
        let mut a = StreamAssembler::new();
        let big = vec![b'x'; MAX_LINE_BYTES + 1];
        assert!(a.feed(&big).is_err());
    }
}
