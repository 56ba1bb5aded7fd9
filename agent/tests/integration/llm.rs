//! The OpenAI-compatible client against wiremock (exact wire checks) and against the
//! scripted fake LLM server (real streaming with delays). No emulators needed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent::llm::{
    Completion, CompletionRequest, FinishReason, LlmProvider, NoTokens, PromptMessage,
    ToolCallRequest, ToolChoice, ToolSpec,
};
use async_trait::async_trait;
use llm::{ApiKey, OpenAiClient, OpenAiConfig};
use serde_json::{Value, json};
use shared::Error;
use shared::secrets::{SecretSource, SecretString, SecretsCache};
use shared::upstream::RetryPolicy;
use shared::usage::TokenUsage;
use test_support::fake_llm::{FakeLlm, Reply};
use wiremock::matchers::{bearer_token, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(base_url: String) -> OpenAiConfig {
    OpenAiConfig {
        base_url,
        stream_usage: true,
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            attempt_timeout: Duration::from_secs(5),
        },
    }
}

fn client(base_url: String, key: ApiKey) -> OpenAiClient {
    OpenAiClient::new(reqwest::Client::new(), config(base_url), key)
}

fn key() -> ApiKey {
    ApiKey::Static(SecretString::new("sk-test-123"))
}

fn request(tools: bool) -> CompletionRequest {
    CompletionRequest {
        provider: None,
        model: "gpt-4o-mini".into(),
        messages: vec![
            PromptMessage::system("You help with flights."),
            PromptMessage::user("Flights from Zurich to London?"),
        ]
        .into(),
        tools: if tools {
            vec![ToolSpec {
                name: "search_flights".into(),
                description: "Search award and cash flights".into(),
                parameters: json!({"type": "object", "properties": {"origin": {"type": "string"}}})
                    .into(),
            }]
            .into()
        } else {
            Default::default()
        },
        tool_choice: ToolChoice::Auto,
        temperature: None,
        max_tokens: None,
        fallback: Default::default(),
    }
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

/// An SSE body of the given `data:` payloads, ending in `[DONE]`.
fn sse(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        body.push_str(&format!("data: {event}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
           "model": "gpt-4o-mini-2024-07-18",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
           "model": "gpt-4o-mini-2024-07-18", "choices": [],
           "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                     "total_tokens": prompt + completion}})
}

fn text_stream() -> String {
    sse(&[
        delta(json!({"role": "assistant", "content": ""}), None),
        delta(json!({"content": "Hello"}), None),
        delta(json!({"content": " from"}), None),
        delta(json!({"content": " Zürich"}), None),
        delta(json!({}), Some("stop")),
        usage_chunk(25, 3),
    ])
}

fn streaming(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(response)
        .mount(server)
        .await;
}

async fn complete(
    client: &OpenAiClient,
    req: &CompletionRequest,
) -> (shared::Result<Completion>, Vec<String>) {
    let mut tokens = Vec::new();
    let result = client
        .complete(req, deadline(), &mut |t: &str| tokens.push(t.to_owned()))
        .await;
    (result, tokens)
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn streams_text_and_captures_usage() {
    let server = MockServer::start().await;
    mount(&server, streaming(text_stream())).await;
    let client = client(format!("{}/v1", server.uri()), key());

    let (result, tokens) = complete(&client, &request(false)).await;
    let completion = result.unwrap();
    assert_eq!(tokens, ["Hello", " from", " Zürich"]);
    assert_eq!(
        completion,
        Completion {
            model: "gpt-4o-mini-2024-07-18".into(),
            content: "Hello from Zürich".into(),
            tool_calls: vec![],
            finish_reason: Some(FinishReason::Stop),
            usage: Some(TokenUsage {
                prompt_tokens: 25,
                completion_tokens: 3,
                total_tokens: 28,
                cached_tokens: 0,
                estimated: false,
            }),
        }
    );
}

#[tokio::test]
async fn reassembles_two_parallel_tool_calls() {
    let server = MockServer::start().await;
    let call = |index: u64, head: Option<(&str, &str)>, args: &str| {
        let mut c = json!({"index": index, "function": {"arguments": args}});
        if let Some((id, name)) = head {
            c["id"] = json!(id);
            c["type"] = json!("function");
            c["function"]["name"] = json!(name);
        }
        delta(json!({"tool_calls": [c]}), None)
    };
    let body = sse(&[
        delta(json!({"role": "assistant", "content": null}), None),
        call(0, Some(("call_a", "search_flights")), ""),
        call(0, None, "{\"origin\":"),
        call(0, None, "\"ZRH\"}"),
        call(1, Some(("call_b", "kb_search")), ""),
        call(1, None, "{\"query\":"),
        call(1, None, "\"baggage\"}"),
        delta(json!({}), Some("tool_calls")),
        usage_chunk(50, 30),
    ]);
    mount(&server, streaming(body)).await;
    let client = client(format!("{}/v1", server.uri()), key());

    let (result, tokens) = complete(&client, &request(true)).await;
    let completion = result.unwrap();
    assert!(tokens.is_empty());
    assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        completion.tool_calls,
        vec![
            ToolCallRequest {
                id: "call_a".into(),
                name: "search_flights".into(),
                arguments: r#"{"origin":"ZRH"}"#.into()
            },
            ToolCallRequest {
                id: "call_b".into(),
                name: "kb_search".into(),
                arguments: r#"{"query":"baggage"}"#.into()
            },
        ]
    );
    assert_eq!(completion.usage.map(|u| u.total_tokens), Some(80));
}

#[tokio::test]
async fn retries_a_500_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_json(
            json!({"error": {"message": "The server had an error", "type": "server_error"}}),
        ))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, streaming(text_stream())).await;
    let client = client(format!("{}/v1", server.uri()), key());

    let (result, tokens) = complete(&client, &request(false)).await;
    assert_eq!(result.unwrap().content, "Hello from Zürich");
    assert_eq!(tokens.concat(), "Hello from Zürich");
    assert_eq!(bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn persistent_500s_become_an_upstream_error() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(503)).await;
    let client = client(format!("{}/v1", server.uri()), key());
    let (result, _) = complete(&client, &request(false)).await;
    match result {
        // Unavailable through every retry: a profile's fallback model may answer.
        Err(Error::UpstreamUnavailable { service, message }) => {
            assert_eq!(service, "llm");
            assert_eq!(message, "HTTP 503");
        }
        other => panic!("expected UpstreamUnavailable, got {other:?}"),
    }
    assert_eq!(bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn honours_retry_after_on_429() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "1")
                .set_body_json(json!({"error": {"message": "Rate limit reached"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(&server, streaming(text_stream())).await;
    let client = client(format!("{}/v1", server.uri()), key());

    let started = Instant::now();
    let (result, _) = complete(&client, &request(false)).await;
    assert_eq!(result.unwrap().content, "Hello from Zürich");
    // The policy's own backoff is at most 50 ms: the pause came from Retry-After.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_400_is_rejected_with_the_providers_message() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "Invalid schema for function 'search_flights'.",
            "type": "invalid_request_error", "param": "tools[0]", "code": "invalid_function_parameters"}})),
    )
    .await;
    let client = client(format!("{}/v1", server.uri()), key());
    let (result, _) = complete(&client, &request(true)).await;
    match result {
        Err(Error::UpstreamRejected {
            service,
            status,
            message,
        }) => {
            assert_eq!((service, status), ("llm", 400));
            assert_eq!(message, "Invalid schema for function 'search_flights'.");
        }
        other => panic!("expected UpstreamRejected, got {other:?}"),
    }
    assert_eq!(bodies(&server).await.len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn sends_the_key_as_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(bearer_token("sk-test-123"))
        .respond_with(streaming(text_stream()))
        .mount(&server)
        .await;
    let client = client(format!("{}/v1/", server.uri()), key());
    let (result, _) = complete(&client, &request(false)).await;
    assert_eq!(result.unwrap().content, "Hello from Zürich");
}

/// An in-memory secret store counting reads.
struct MemorySecrets {
    value: std::sync::Mutex<String>,
    fetches: AtomicUsize,
}

#[async_trait]
impl SecretSource for MemorySecrets {
    async fn fetch(&self, _name: &str) -> shared::Result<SecretString> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        Ok(SecretString::new(self.value.lock().unwrap().clone()))
    }

    async fn store(&self, _name: &str, value: &str) -> shared::Result<()> {
        *self.value.lock().unwrap() = value.to_owned();
        Ok(())
    }
}

#[tokio::test]
async fn key_from_the_secrets_cache_is_cached_and_dropped_when_rejected() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(bearer_token("sk-from-secret"))
        .respond_with(streaming(text_stream()))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "Incorrect API key provided"}})),
        )
        .mount(&server)
        .await;
    // A trailing newline, as secrets pasted into a console often have.
    let source = Arc::new(MemorySecrets {
        value: std::sync::Mutex::new("sk-from-secret\n".into()),
        fetches: AtomicUsize::new(0),
    });
    let cache = Arc::new(SecretsCache::new(source.clone(), Duration::from_secs(300)));
    let key = ApiKey::Secret {
        cache: cache.clone(),
        name: "openai-key".into(),
    };
    assert!(!format!("{key:?}").contains("sk-"));
    let client = client(format!("{}/v1", server.uri()), key);

    for _ in 0..2 {
        let (result, _) = complete(&client, &request(false)).await;
        assert_eq!(result.unwrap().content, "Hello from Zürich");
    }
    assert_eq!(
        source.fetches.load(Ordering::SeqCst),
        1,
        "read once, then cached"
    );

    // The key is rotated away from under us: the endpoint rejects it.
    cache.put("openai-key", "sk-revoked").await.unwrap();
    let (result, _) = complete(&client, &request(false)).await;
    match result {
        Err(Error::Upstream { message, .. }) => assert!(message.contains("401"), "{message}"),
        other => panic!("expected Upstream, got {other:?}"),
    }
    // The rejected key was dropped from the cache: the next call reads the store again.
    source.store("openai-key", "sk-from-secret").await.unwrap();
    let (result, _) = complete(&client, &request(false)).await;
    assert!(result.is_ok());
    assert_eq!(source.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn no_authorization_header_without_a_key() {
    let server = MockServer::start().await;
    mount(&server, streaming(text_stream())).await;
    let client = client(format!("{}/v1", server.uri()), ApiKey::None);
    let (result, _) = complete(&client, &request(false)).await;
    assert!(result.is_ok());
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1);
    assert!(received[0].headers.get("authorization").is_none());
    assert_eq!(received[0].headers["content-type"], "application/json");
}

#[tokio::test]
async fn request_body_shape() {
    let server = MockServer::start().await;
    mount(&server, streaming(text_stream())).await;
    let client = client(format!("{}/v1", server.uri()), key());

    // Without tools: no tools, tool_choice, parallel_tool_calls, temperature, max_tokens.
    complete(&client, &request(false)).await.0.unwrap();
    // With tools, a forced tool, temperature and a token limit, and a tool round.
    let mut with_tools = request(true);
    with_tools.tool_choice = ToolChoice::Tool("search_flights".into());
    with_tools.temperature = Some(0.5);
    with_tools.max_tokens = Some(256);
    std::sync::Arc::make_mut(&mut with_tools.messages).push(PromptMessage::assistant(
        "",
        vec![ToolCallRequest {
            id: "call_a".into(),
            name: "search_flights".into(),
            arguments: r#"{"origin":"ZRH"}"#.into(),
        }],
    ));
    std::sync::Arc::make_mut(&mut with_tools.messages)
        .push(PromptMessage::tool("call_a", r#"{"flights":[]}"#));
    complete(&client, &with_tools).await.0.unwrap();
    // Usage not requested from servers that reject `stream_options`.
    let plain = OpenAiClient::new(
        reqwest::Client::new(),
        OpenAiConfig {
            stream_usage: false,
            ..config(format!("{}/v1", server.uri()))
        },
        ApiKey::None,
    );
    complete(&plain, &request(false)).await.0.unwrap();

    let bodies = bodies(&server).await;
    assert_eq!(
        bodies[0],
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You help with flights."},
                {"role": "user", "content": "Flights from Zurich to London?"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
    assert_eq!(
        bodies[1],
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You help with flights."},
                {"role": "user", "content": "Flights from Zurich to London?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_a",
                  "type": "function",
                  "function": {"name": "search_flights", "arguments": "{\"origin\":\"ZRH\"}"}}]},
                {"role": "tool", "tool_call_id": "call_a", "content": "{\"flights\":[]}"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "search_flights", "description": "Search award and cash flights",
                "parameters": {"type": "object", "properties": {"origin": {"type": "string"}}}}}],
            "tool_choice": {"type": "function", "function": {"name": "search_flights"}},
            "parallel_tool_calls": true,
            "temperature": 0.5,
            "max_tokens": 256,
        })
    );
    assert!(bodies[2].get("stream_options").is_none());
}

#[tokio::test]
async fn accepts_a_non_streamed_json_answer() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "llama3.1",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Plain answer."}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
        })),
    )
    .await;
    let client = client(format!("{}/v1", server.uri()), ApiKey::None);
    let (result, tokens) = complete(&client, &request(false)).await;
    let completion = result.unwrap();
    assert_eq!(tokens, ["Plain answer."]);
    assert_eq!(completion.model, "llama3.1");
    assert_eq!(completion.content, "Plain answer.");
    assert_eq!(completion.usage.map(|u| u.total_tokens), Some(9));
}

#[tokio::test]
async fn tokens_reach_the_sink_as_they_stream() {
    let fake = FakeLlm::start().await;
    let delay = Duration::from_millis(100);
    fake.push(Reply::text("one two three four").with_chunk_delay(delay));
    let client = client(fake.base_url(), ApiKey::None);

    let started = Instant::now();
    let mut arrivals = Vec::new();
    let completion = client
        .complete(&request(false), deadline(), &mut |t: &str| {
            arrivals.push((started.elapsed(), t.to_owned()))
        })
        .await
        .unwrap();
    let total = started.elapsed();
    assert_eq!(completion.content, "one two three four");
    assert_eq!(completion.model, "gpt-4o-mini");
    assert_eq!(arrivals.len(), 4);
    // Words leave the fake one pause apart; handed out as they arrive, the first reaches
    // the sink well before the last (buffered, all four would arrive at once).
    let spread = arrivals[3].0 - arrivals[0].0;
    assert!(spread >= delay * 2, "tokens spread over {spread:?}");
    assert!(total >= delay * 6);
    assert!(completion.usage.is_some());
}

#[tokio::test]
async fn deadline_mid_stream_is_a_timeout() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("a b c d e f").with_chunk_delay(Duration::from_millis(200)));
    let client = client(fake.base_url(), ApiKey::None);
    let mut tokens = 0;
    let result = client
        .complete(
            &request(false),
            Instant::now() + Duration::from_millis(500),
            &mut |_: &str| tokens += 1,
        )
        .await;
    assert!(
        matches!(result, Err(Error::UpstreamTimeout { service: "llm" })),
        "{result:?}"
    );
    assert!(tokens >= 1, "some text streamed before the deadline");
}

#[tokio::test]
async fn slow_first_byte_is_retried() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("too late").with_first_byte_delay(Duration::from_millis(400)))
        .push(Reply::text("in time"));
    let mut config = config(fake.base_url());
    config.retry.attempt_timeout = Duration::from_millis(150);
    let client = OpenAiClient::new(reqwest::Client::new(), config, ApiKey::None);
    // The first attempt's headers take too long; the second attempt gets the next reply.
    let completion = client
        .complete(&request(false), deadline(), &mut NoTokens)
        .await
        .unwrap();
    assert_eq!(completion.content, "in time");
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn broken_streams_are_upstream_errors() {
    let fake = FakeLlm::start().await;
    // Written apart, so the text arrives before the break (the stream had begun).
    fake.push(
        Reply::text("one two three")
            .cut_off_after(3)
            .with_chunk_delay(Duration::from_millis(20)),
    )
    .push(Reply::text("partial answer").then_stream_error("The server is overloaded"));
    let client = client(fake.base_url(), ApiKey::None);

    let (result, tokens) = complete(&client, &request(false)).await;
    // A dropped connection; after text, never retried nor passed to a fallback model.
    assert!(
        matches!(
            result,
            Err(Error::UpstreamUnavailable { service: "llm", .. })
        ),
        "{result:?}"
    );
    assert!(
        !tokens.concat().is_empty(),
        "text was forwarded before the break"
    );
    assert_eq!(fake.request_count(), 1, "first: {tokens:?}");
    let (result, tokens) = complete(&client, &request(false)).await;
    match result {
        Err(Error::Upstream { message, .. }) => {
            assert_eq!(message, "error in stream: The server is overloaded")
        }
        other => panic!("expected Upstream, got {other:?}"),
    }
    assert_eq!(tokens.concat(), "partial answer");
    assert_eq!(
        fake.request_count(),
        2,
        "nothing retried once the stream started"
    );
}

/// A stream that breaks off before any text (a connection dropped under load) showed the
/// client nothing: it is asked once more, and the second answer is the turn's.
#[tokio::test]
async fn a_stream_cut_before_any_text_is_asked_once_more() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("lost").cut_off_after(1))
        .push(Reply::text("second try"));
    let client = client(fake.base_url(), ApiKey::None);
    let (result, tokens) = complete(&client, &request(false)).await;
    assert_eq!(
        result.map(|c| c.content).ok().as_deref(),
        Some("second try")
    );
    assert_eq!(tokens.concat(), "second try");
    assert_eq!(fake.request_count(), 2);

    // Only once: a second break-off is the turn's error.
    fake.push(Reply::text("lost").cut_off_after(1))
        .push(Reply::text("lost again").cut_off_after(1));
    let (result, _) = complete(&client, &request(false)).await;
    assert!(
        matches!(result, Err(Error::UpstreamUnavailable { .. })),
        "{result:?}"
    );
    assert_eq!(fake.request_count(), 4);
}

/// A server that sends `data: [DONE]` and then keeps the connection open must not hold the
/// turn until its deadline: the answer is complete at `[DONE]`.
#[tokio::test]
async fn the_stream_ends_at_done_even_if_the_connection_stays_open() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("addr: {e}"));
    let server = tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = vec![0u8; 65536];
        let _ = socket.read(&mut request).await;
        let body = text_stream();
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{body}\r\n", body.len());
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(chunk.as_bytes()).await;
        // Never the final zero-length chunk: the connection just stays open.
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let client = client(format!("http://{addr}/v1"), ApiKey::None);
    let started = Instant::now();
    let (result, tokens) = complete(&client, &request(false)).await;
    server.abort();
    let completion = result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(completion.content, tokens.concat());
    assert!(!completion.content.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the client waited {:?} after [DONE]",
        started.elapsed()
    );
}
