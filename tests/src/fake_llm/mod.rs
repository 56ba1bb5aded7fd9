//! A scripted LLM server for tests on `127.0.0.1:<random port>`, answering with replies
//! the test queued. It speaks two protocols, so one test body runs against either provider:
//!
//! - OpenAI: `POST /v1/chat/completions` ([`FakeLlm::base_url`] is the client's base URL);
//! - Amazon Bedrock: `POST /model/{modelId}/converse-stream`, answered in the AWS
//!   event-stream binary framing, and `POST /model/{modelId}/invoke` for Titan embeddings
//!   ([`FakeLlm::endpoint_url`] is what `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` takes); see
//!   [`bedrock`].
//!
//! Bedrock requests are recorded (and matched) in the OpenAI form (the model from the path,
//! `system` as a system message, `toolUse` blocks as `tool_calls`, `toolResult` blocks as
//! `tool` messages, `toolConfig` as `tools` and `tool_choice`), so a test's assertions on
//! [`FakeLlm::requests`] hold for both; [`FakeLlm::raw_requests`] has them as sent.
//!
//! ```no_run
//! # async fn demo() {
//! use serde_json::json;
//! use test_support::fake_llm::{FakeLlm, Reply, matchers};
//!
//! let fake = FakeLlm::start().await;
//! fake.push(Reply::tool_calls(vec![("search_flights", json!({"origin": "ZRH"}))]))
//!     .push(Reply::text("Here are your flights."));
//! // Used by the first request without tools, whenever it comes (e.g. an inner call).
//! fake.when(matchers::no_tools(), Reply::text("plain answer"));
//! // point the client at fake.base_url() ...
//! assert_eq!(fake.request_count(), 0);
//! # }
//! ```
//!
//! Streamed replies look like OpenAI's: a role chunk, text in word-sized chunks, tool calls
//! with their `arguments` in 2+ pieces, a finish chunk, a usage chunk (`choices: []`) and
//! `data: [DONE]`; `model` echoes the requested model. Bedrock's have the same pieces as
//! `messageStart`, `contentBlockStart`/`contentBlockDelta`/`contentBlockStop`,
//! `messageStop` and `metadata` events.

pub mod bedrock;

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::serve::{
    BoxError, LocalServer, ResponseBody, spawn_server, spawn_server_on, text_response,
};

/// Prompt tokens reported when a reply does not set its own usage.
pub const DEFAULT_PROMPT_TOKENS: u64 = 10;

/// A request predicate for [`FakeLlm::when`]; see [`matchers`] for ready-made ones.
type Matcher = Box<dyn Fn(&Value) -> bool + Send + Sync>;

/// Computes a reply from the request body, for requests nothing scripted answers.
pub type Responder = Box<dyn Fn(&Value) -> Reply + Send + Sync>;

/// The fake server. Dropping it stops the server.
pub struct FakeLlm {
    server: LocalServer,
    script: Arc<Mutex<Script>>,
}

#[derive(Default)]
struct Script {
    matched: Vec<(Matcher, Reply)>,
    queue: VecDeque<Reply>,
    /// Every request in the OpenAI form, with the protocol it came in and its body as sent.
    requests: Vec<Value>,
    protocols: Vec<Protocol>,
    raw: Vec<Value>,
    responder: Option<Responder>,
}

/// The protocol a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    OpenAi,
    Bedrock,
}

impl fmt::Debug for FakeLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let script = self.script();
        f.debug_struct("FakeLlm")
            .field("addr", &self.server.addr())
            .field("queued", &script.queue.len())
            .field("matched", &script.matched.len())
            .field("requests", &script.requests.len())
            .finish()
    }
}

impl FakeLlm {
    /// Starts the server on its own task. Panics when no local port can be bound.
    pub async fn start() -> Self {
        Self::serve(None, None).await
    }

    /// A server on `port` (0: any) that answers every request with `responder`'s reply
    /// (an offline stand-in for a real LLM, e.g. in the local stack).
    pub async fn start_with(port: u16, responder: Responder) -> Self {
        Self::serve(Some(port), Some(responder)).await
    }

    async fn serve(port: Option<u16>, responder: Option<Responder>) -> Self {
        let script = Arc::new(Mutex::new(Script {
            responder,
            ..Script::default()
        }));
        let shared = Arc::clone(&script);
        let handler: crate::serve::Handler = Arc::new(move |request| {
            let script = Arc::clone(&shared);
            Box::pin(async move { handle(script, request).await })
        });
        let server = match port {
            Some(port) => spawn_server_on(port, handler).await,
            None => spawn_server(handler).await,
        };
        Self { server, script }
    }

    /// `http://127.0.0.1:PORT/v1`: what an OpenAI client takes as its base URL.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// `http://127.0.0.1:PORT`: the Bedrock Runtime endpoint (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`).
    pub fn endpoint_url(&self) -> String {
        self.server.base_url()
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Queues a reply for the next request that no [`when`](Self::when) reply matches
    /// (first in, first out). Returns `self` for chaining.
    pub fn push(&self, reply: Reply) -> &Self {
        self.script().queue.push_back(reply);
        self
    }

    /// Adds a reply for the first request whose JSON body satisfies `matcher`. These are
    /// checked before the FIFO queue, in the order they were added, so concurrent requests
    /// of different kinds get the right answers. Each reply is used once. The matcher runs
    /// under the script's lock: it must not call back into this `FakeLlm`.
    pub fn when(
        &self,
        matcher: impl Fn(&Value) -> bool + Send + Sync + 'static,
        reply: Reply,
    ) -> &Self {
        self.script().matched.push((Box::new(matcher), reply));
        self
    }

    /// Every request body received, in arrival order (also unscripted ones). A body that
    /// is not JSON is recorded as a JSON string.
    pub fn requests(&self) -> Vec<Value> {
        self.script().requests.clone()
    }

    /// The protocol of each request, in arrival order.
    pub fn protocols(&self) -> Vec<Protocol> {
        self.script().protocols.clone()
    }

    /// Every request body as sent (a Bedrock one as Converse JSON), in arrival order.
    pub fn raw_requests(&self) -> Vec<Value> {
        self.script().raw.clone()
    }

    pub fn request_count(&self) -> usize {
        self.script().requests.len()
    }

    /// The most recent request body.
    pub fn last_request(&self) -> Option<Value> {
        self.script().requests.last().cloned()
    }

    /// Scripted replies not used yet (queued and `when`), e.g. to assert a test used all.
    pub fn pending(&self) -> usize {
        let script = self.script();
        script.queue.len() + script.matched.len()
    }

    fn script(&self) -> MutexGuard<'_, Script> {
        lock(&self.script)
    }
}

fn lock(script: &Mutex<Script>) -> MutexGuard<'_, Script> {
    // A panicking matcher must not make every later request panic too.
    script.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One scripted answer. Build with a constructor, refine with the `with_*` methods.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    text: String,
    calls: Vec<(String, String)>,
    chunk_delay: Duration,
    first_byte_delay: Duration,
    usage: Option<(u64, u64)>,
    cached_tokens: Option<u64>,
    finish_reason: Option<String>,
    headers: Vec<(String, String)>,
    streamed: bool,
    cut_off_after: Option<usize>,
    stream_error: Option<String>,
    /// Bedrock: the exception type of `stream_error` (default `modelStreamErrorException`).
    stream_error_type: Option<String>,
    /// Writes the body in pieces of this many bytes, whatever its events' bounds.
    write_size: Option<usize>,
}

#[derive(Debug, Clone)]
enum Kind {
    Answer,
    Status { status: u16, message: String },
}

impl Reply {
    fn answer() -> Self {
        Self {
            kind: Kind::Answer,
            text: String::new(),
            calls: Vec::new(),
            chunk_delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
            usage: None,
            cached_tokens: None,
            finish_reason: None,
            headers: Vec::new(),
            streamed: true,
            cut_off_after: None,
            stream_error: None,
            stream_error_type: None,
            write_size: None,
        }
    }

    /// A text answer, streamed word by word (`finish_reason: "stop"`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::answer().with_text(text)
    }

    /// Parallel tool calls (`finish_reason: "tool_calls"`), each `arguments` JSON text
    /// streamed in two or more pieces. Call ids are `call_<request>_<n>`.
    pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Self {
        calls
            .into_iter()
            .fold(Self::answer(), |reply, (name, args)| {
                reply.with_tool_call(name, args)
            })
    }

    /// One tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::answer().with_tool_call(name, arguments)
    }

    /// One tool call whose `arguments` text is sent as given, e.g. `"{not json"`.
    pub fn raw_tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self::answer().with_raw_tool_call(name, arguments)
    }

    /// An HTTP error with an OpenAI-style body
    /// `{"error":{"message":"fake LLM: scripted HTTP <status>",...}}`.
    pub fn status(status: u16) -> Self {
        Self::error(status, format!("fake LLM: scripted HTTP {status}"))
    }

    /// An HTTP error with an OpenAI-style body carrying `message`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Status {
                status,
                message: message.into(),
            },
            ..Self::answer()
        }
    }

    /// Text streamed before the tool calls (or replacing the text of [`Reply::text`]).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Adds a tool call after those already in the reply.
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.calls.push((name.into(), arguments.to_string()));
        self
    }

    /// Adds a tool call with verbatim `arguments` text.
    pub fn with_raw_tool_call(
        mut self,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.calls.push((name.into(), arguments.into()));
        self
    }

    /// Pause between two SSE events of the stream.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Pause before the response headers (time to first byte); also for error statuses.
    pub fn with_first_byte_delay(mut self, delay: Duration) -> Self {
        self.first_byte_delay = delay;
        self
    }

    /// Reported usage. Default: [`DEFAULT_PROMPT_TOKENS`] prompt tokens and one completion
    /// token per streamed text or arguments piece.
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }

    /// As [`Reply::with_usage`], `cached_tokens` of the prompt served from the provider's
    /// prompt cache (`prompt_tokens_details.cached_tokens`, as OpenAI reports it).
    pub fn with_cached_usage(
        mut self,
        prompt_tokens: u64,
        cached_tokens: u64,
        completion_tokens: u64,
    ) -> Self {
        self.usage = Some((prompt_tokens, completion_tokens));
        self.cached_tokens = Some(cached_tokens);
        self
    }

    /// Overrides `finish_reason` (default `"tool_calls"` with calls, else `"stop"`).
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// An extra response header, e.g. `Retry-After` on a 429.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answers with one `application/json` completion object, as proxies that ignore
    /// `stream: true` do.
    pub fn non_streaming(mut self) -> Self {
        self.streamed = false;
        self
    }

    /// Breaks the connection after `events` SSE events (the role chunk counts as one):
    /// no finish chunk, no `[DONE]`.
    pub fn cut_off_after(mut self, events: usize) -> Self {
        self.cut_off_after = Some(events);
        self
    }

    /// Ends the stream with an `{"error":{"message":...}}` event instead of the finish
    /// chunk, usage and `[DONE]` (what OpenAI sends when it fails mid-answer).
    pub fn then_stream_error(mut self, message: impl Into<String>) -> Self {
        self.stream_error = Some(message.into());
        self
    }

    /// As [`Reply::then_stream_error`]; a Bedrock stream ends with an exception of this
    /// type, e.g. `throttlingException` (default `modelStreamErrorException`).
    pub fn then_stream_exception(
        mut self,
        kind: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        self.stream_error = Some(message.into());
        self.stream_error_type = Some(kind.into());
        self
    }

    /// Writes the streamed body in pieces of `bytes` bytes (at least 1), cutting through
    /// events and frames: a client must reassemble them.
    pub fn in_pieces_of(mut self, bytes: usize) -> Self {
        self.write_size = Some(bytes.max(1));
        self
    }

    /// The text the reply streams (empty for an error status).
    pub fn content(&self) -> &str {
        &self.text
    }

    /// The tool calls the reply makes, in order: each name with its `arguments` text.
    pub fn calls(&self) -> &[(String, String)] {
        &self.calls
    }
}

/// Ready-made predicates for [`FakeLlm::when`].
pub mod matchers {
    use serde_json::Value;

    fn tools(body: &Value) -> &[Value] {
        body.get("tools")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn messages(body: &Value) -> &[Value] {
        body.get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn content(message: &Value) -> &str {
        message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The request offers no tools (e.g. a plain inner completion).
    pub fn no_tools() -> impl Fn(&Value) -> bool + Send + Sync + 'static {
        |body| tools(body).is_empty()
    }

    /// The request offers at least one tool.
    pub fn has_tools() -> impl Fn(&Value) -> bool + Send + Sync + 'static {
        |body| !tools(body).is_empty()
    }

    /// The request offers a tool named `name`.
    pub fn offers_tool(name: impl Into<String>) -> impl Fn(&Value) -> bool + Send + Sync {
        let name = name.into();
        move |body| {
            tools(body)
                .iter()
                .any(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(&name))
        }
    }

    /// The last message has this role, e.g. `"tool"` for the round after tool results.
    pub fn last_role(role: impl Into<String>) -> impl Fn(&Value) -> bool + Send + Sync {
        let role = role.into();
        move |body| {
            messages(body)
                .last()
                .and_then(|m| m.get("role"))
                .and_then(Value::as_str)
                == Some(&role)
        }
    }

    /// The last user message contains `text`.
    pub fn last_user_contains(text: impl Into<String>) -> impl Fn(&Value) -> bool + Send + Sync {
        let text = text.into();
        move |body| {
            messages(body)
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .is_some_and(|m| content(m).contains(&text))
        }
    }

    /// Some message (any role) contains `text`.
    pub fn any_message_contains(text: impl Into<String>) -> impl Fn(&Value) -> bool + Send + Sync {
        let text = text.into();
        move |body| messages(body).iter().any(|m| content(m).contains(&text))
    }

    /// The request asks for this model.
    pub fn model(name: impl Into<String>) -> impl Fn(&Value) -> bool + Send + Sync {
        let name = name.into();
        move |body| body.get("model").and_then(Value::as_str) == Some(&name)
    }
}

async fn handle(
    script: Arc<Mutex<Script>>,
    request: http::Request<Incoming>,
) -> http::Response<ResponseBody> {
    let path = request.uri().path().to_owned();
    let route = match (
        request.method() == http::Method::POST,
        bedrock::route(&path),
    ) {
        (true, _) if path == "/v1/chat/completions" => None,
        (true, Some(route)) => Some(route),
        _ => {
            return openai_error(
                404,
                &format!(
                    "fake LLM serves POST /v1/chat/completions, /model/{{id}}/converse-stream \
                     and /model/{{id}}/invoke, not {} {path}",
                    request.method(),
                ),
                &[],
            );
        }
    };
    let bytes = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return text_response(400, format!("reading the request body: {e}")),
    };
    let raw: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let (protocol, body) = match &route {
        None => (Protocol::OpenAi, raw.clone()),
        Some(bedrock::Route::Embed { model }) => return bedrock::embed(model, &raw),
        Some(bedrock::Route::Converse { model }) => {
            (Protocol::Bedrock, bedrock::as_openai(model, &raw))
        }
    };

    let (number, reply) = {
        let mut script = lock(&script);
        script.requests.push(body.clone());
        script.protocols.push(protocol);
        script.raw.push(raw);
        let number = script.requests.len();
        // A long-running stand-in (the local stack) keeps only recent requests.
        if script.responder.is_some() && script.requests.len() > 100 {
            script.requests.remove(0);
            script.protocols.remove(0);
            script.raw.remove(0);
        }
        let reply = match script.matched.iter().position(|(m, _)| m(&body)) {
            Some(i) => Some(script.matched.remove(i).1),
            None => script
                .queue
                .pop_front()
                .or_else(|| script.responder.as_ref().map(|r| r(&body))),
        };
        (number, reply)
    };
    let Some(reply) = reply else {
        let model = body.get("model").and_then(Value::as_str).unwrap_or("?");
        let message = format!(
            "fake LLM: no scripted reply for request #{number} (model {model}); \
             push() or when() one more reply"
        );
        return match protocol {
            Protocol::OpenAi => openai_error(500, &message, &[]),
            Protocol::Bedrock => bedrock::error(500, &message, &[]),
        };
    };

    if !reply.first_byte_delay.is_zero() {
        tokio::time::sleep(reply.first_byte_delay).await;
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_owned();
    match (protocol, &reply.kind) {
        (Protocol::OpenAi, Kind::Status { status, message }) => {
            openai_error(*status, message, &reply.headers)
        }
        (Protocol::OpenAi, Kind::Answer) if reply.streamed => stream(reply, model, number),
        (Protocol::OpenAi, Kind::Answer) => whole(&reply, &model, number),
        (Protocol::Bedrock, Kind::Status { status, message }) => {
            bedrock::error(*status, message, &reply.headers)
        }
        // Converse streams always; `non_streaming` is an OpenAI proxy's quirk.
        (Protocol::Bedrock, Kind::Answer) => bedrock::stream(&reply, number),
    }
}

fn openai_error(
    status: u16,
    message: &str,
    headers: &[(String, String)],
) -> http::Response<ResponseBody> {
    let body = json!({
        "error": {"message": message, "type": "fake_llm_error", "param": null, "code": null}
    });
    respond(
        status,
        "application/json",
        Bytes::from(body.to_string()),
        headers,
    )
}

fn respond(
    status: u16,
    content_type: &'static str,
    body: Bytes,
    headers: &[(String, String)],
) -> http::Response<ResponseBody> {
    let body = Full::new(body)
        .map_err(|never| match never {})
        .boxed_unsync();
    with_head(http::Response::new(body), status, content_type, headers)
}

fn with_head(
    mut response: http::Response<ResponseBody>,
    status: u16,
    content_type: &'static str,
    headers: &[(String, String)],
) -> http::Response<ResponseBody> {
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    map.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    for (name, value) in headers {
        match (
            http::HeaderName::try_from(name.as_str()),
            http::HeaderValue::try_from(value.as_str()),
        ) {
            (Ok(name), Ok(value)) => {
                map.append(name, value);
            }
            _ => panic!("fake LLM: invalid scripted header {name}: {value}"),
        }
    }
    response
}

fn created() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn call_id(request: usize, n: usize) -> String {
    format!("call_{request}_{n}")
}

/// Text in word-sized pieces, each word with the whitespace before it.
fn words(text: &str) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_whitespace() && current.chars().any(|c| !c.is_whitespace()) {
            pieces.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// `text` in up to three pieces (two or more when it has two or more characters), cut at
/// character boundaries.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 2 {
        return vec![text.to_owned()];
    }
    let n = chars.len().min(3);
    (0..n)
        .map(|i| {
            chars[i * chars.len() / n..(i + 1) * chars.len() / n]
                .iter()
                .collect()
        })
        .collect()
}

/// The SSE events of a streamed reply, without the final `[DONE]`; and the number of
/// completion pieces (for the default usage).
fn events(reply: &Reply, model: &str, number: usize) -> (Vec<Value>, u64) {
    let id = format!("chatcmpl-fake-{number}");
    let created = created();
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        })
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let mut produced = 0u64;
    for word in words(&reply.text) {
        out.push(chunk(json!({ "content": word }), None));
        produced += 1;
    }
    for (n, (name, arguments)) in reply.calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": n, "id": call_id(number, n), "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        for piece in pieces(arguments) {
            out.push(chunk(
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
                None,
            ));
            produced += 1;
        }
    }
    (out, produced)
}

fn finish_reason(reply: &Reply) -> String {
    reply.finish_reason.clone().unwrap_or_else(|| {
        if reply.calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    })
}

fn usage(reply: &Reply, produced: u64) -> Value {
    let (prompt, completion) = reply.usage.unwrap_or((DEFAULT_PROMPT_TOKENS, produced));
    let mut usage = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    if let Some(cached) = reply.cached_tokens {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
    }
    usage
}

fn stream(reply: Reply, model: String, number: usize) -> http::Response<ResponseBody> {
    let (mut events, produced) = events(&reply, &model, number);
    if let Some(message) = &reply.stream_error {
        events.push(json!({"error": {"message": message, "type": "server_error", "code": null}}));
    } else {
        events.push(json!({
            "id": format!("chatcmpl-fake-{number}"), "object": "chat.completion.chunk",
            "created": created(), "model": model,
            "choices": [{"index": 0, "delta": {}, "logprobs": null,
                         "finish_reason": finish_reason(&reply)}]
        }));
        events.push(json!({
            "id": format!("chatcmpl-fake-{number}"), "object": "chat.completion.chunk",
            "created": created(), "model": model, "choices": [], "usage": usage(&reply, produced)
        }));
    }
    let mut lines: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    if reply.stream_error.is_none() {
        lines.push("data: [DONE]\n\n".into());
    }
    let cut = match reply.cut_off_after {
        Some(n) if n < lines.len() => {
            lines.truncate(n);
            true
        }
        _ => false,
    };

    let body = write_events(
        lines.into_iter().map(Bytes::from).collect(),
        reply.chunk_delay,
        reply.write_size,
        cut,
    );
    let mut response = with_head(body, 200, "text/event-stream", &reply.headers);
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    response
}

/// A 200 response whose body is `events` written from a task: `delay` apart, in pieces of
/// `write_size` bytes when set, broken off after the last when `cut`.
fn write_events(
    events: Vec<Bytes>,
    delay: Duration,
    write_size: Option<usize>,
    cut: bool,
) -> http::Response<ResponseBody> {
    let (mut sender, body) = http_body_util::channel::Channel::<Bytes, BoxError>::new(4);
    tokio::spawn(async move {
        for (i, event) in events.into_iter().enumerate() {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let size = write_size.unwrap_or(event.len()).max(1);
            for piece in event.chunks(size) {
                if sender
                    .send_data(Bytes::copy_from_slice(piece))
                    .await
                    .is_err()
                {
                    return; // the client went away
                }
            }
        }
        if cut {
            sender.abort("fake LLM: scripted cut-off".into());
        }
    });
    http::Response::new(body.boxed_unsync())
}

fn whole(reply: &Reply, model: &str, number: usize) -> http::Response<ResponseBody> {
    let produced = (words(&reply.text).len()
        + reply
            .calls
            .iter()
            .map(|(_, a)| pieces(a).len())
            .sum::<usize>()) as u64;
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() && !reply.calls.is_empty() {
            Value::Null
        } else {
            Value::String(reply.text.clone())
        },
    });
    if !reply.calls.is_empty() {
        message["tool_calls"] = reply
            .calls
            .iter()
            .enumerate()
            .map(|(n, (name, arguments))| {
                json!({"id": call_id(number, n), "type": "function",
                       "function": {"name": name, "arguments": arguments}})
            })
            .collect();
    }
    let body = json!({
        "id": format!("chatcmpl-fake-{number}"), "object": "chat.completion",
        "created": created(), "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason(reply)}],
        "usage": usage(reply, produced),
    });
    respond(
        200,
        "application/json",
        Bytes::from(body.to_string()),
        &reply.headers,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_leading_whitespace() {
        assert_eq!(words("Hello there,  you"), ["Hello", " there,", "  you"]);
        assert_eq!(words(" lead"), [" lead"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn arguments_come_in_two_or_more_pieces() {
        assert_eq!(pieces("{}"), ["{", "}"]);
        assert_eq!(pieces("{\"a\":1}").concat(), "{\"a\":1}");
        assert_eq!(pieces("{\"a\":1}").len(), 3);
        assert_eq!(pieces("äöü€").concat(), "äöü€");
        assert_eq!(pieces(""), [""]);
    }
}
