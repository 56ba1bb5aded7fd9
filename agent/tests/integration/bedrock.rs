//! The Bedrock Converse-stream client through the AWS SDK against the fake LLM's Bedrock
//! side (real event-stream frames over HTTP). No emulators needed.

use std::time::{Duration, Instant};

use agent::llm::{
    Completion, CompletionRequest, FinishReason, LlmProvider, PromptMessage, ToolCallRequest,
    ToolChoice, ToolSpec,
};
use aws_credential_types::Credentials;
use llm::BedrockClient;
use serde_json::json;
use shared::Error;
use shared::upstream::RetryPolicy;
use test_support::fake_llm::{FakeLlm, Protocol, Reply};

const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";

fn client(fake: &FakeLlm) -> BedrockClient {
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
                "AKIDTEST", "secret", None, None, "test",
            )),
        )
        .build();
    let sdk_client = aws_sdk_bedrockruntime::Client::from_conf(
        llm::bedrock::sdk_config(&sdk)
            .endpoint_url(fake.endpoint_url())
            .build(),
    );
    BedrockClient::new(
        sdk_client,
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            attempt_timeout: Duration::from_secs(5),
        },
    )
}

fn request(tools: bool) -> CompletionRequest {
    CompletionRequest {
        provider: None,
        model: MODEL.into(),
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
        temperature: Some(0.3),
        max_tokens: Some(256),
        fallback: Default::default(),
    }
}

async fn complete(
    client: &BedrockClient,
    req: &CompletionRequest,
) -> (shared::Result<Completion>, Vec<String>) {
    let mut tokens = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let result = client
        .complete(req, deadline, &mut |t: &str| tokens.push(t.to_owned()))
        .await;
    (result, tokens)
}

#[tokio::test]
async fn streams_text_with_usage_over_real_frames() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("Hello from Zürich").with_usage(25, 3));
    let (result, tokens) = complete(&client(&fake), &request(false)).await;
    let completion = result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tokens, ["Hello", " from", " Zürich"]);
    assert_eq!(completion.content, "Hello from Zürich");
    assert_eq!(completion.model, MODEL);
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    let usage = completion.usage.unwrap_or_default();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (25, 3));
    assert_eq!(fake.protocols(), [Protocol::Bedrock]);
    // The request as Converse sent it: system apart, inference settings, no tools.
    let raw = &fake.raw_requests()[0];
    assert_eq!(raw["system"], json!([{"text": "You help with flights."}]));
    assert_eq!(raw["inferenceConfig"]["maxTokens"], json!(256));
    assert!(raw.get("toolConfig").is_none(), "{raw}");
    assert_eq!(fake.requests()[0]["model"], json!(MODEL));
}

/// With the prompt cache on, the system prompt ends with a cache point, and the tokens the
/// cache served are recorded as cached (Converse counts them apart from `inputTokens`).
#[tokio::test]
async fn the_prompt_cache_marks_the_system_prompt_and_counts_cached_tokens() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("Cached.").with_cached_usage(1_200, 1_024, 2));
    fake.push(Reply::text("Not cached."));
    let cached = client(&fake).with_prompt_cache(true);
    let (result, _) = complete(&cached, &request(true)).await;
    let usage = result
        .unwrap_or_else(|e| panic!("{e}"))
        .usage
        .unwrap_or_default();
    assert_eq!((usage.prompt_tokens, usage.cached_tokens), (1_200, 1_024));
    let raw = &fake.raw_requests()[0];
    assert_eq!(
        raw["system"],
        json!([{"text": "You help with flights."}, {"cachePoint": {"type": "default"}}])
    );
    // Off (the default), no cache point is sent.
    let (result, _) = complete(&client(&fake), &request(true)).await;
    result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fake.raw_requests()[1]["system"],
        json!([{"text": "You help with flights."}])
    );
}

/// The body cut into pieces of every size from 1 byte up: frames split anywhere (inside
/// the prelude, the headers, the payload, the CRC) are put together again.
#[tokio::test]
async fn frames_split_at_every_boundary_are_reassembled() {
    let fake = FakeLlm::start().await;
    let client = client(&fake);
    for size in (1..=40).chain([97, 211, 1000]) {
        fake.push(
            Reply::text("Zwei Flüge")
                .with_tool_call("search_flights", json!({"origin": "ZRH", "cabin": "First"}))
                .with_tool_call("search_knowledge_base", json!({"query": "Gepäck"}))
                .in_pieces_of(size),
        );
        let (result, tokens) = complete(&client, &request(true)).await;
        let completion = result.unwrap_or_else(|e| panic!("pieces of {size}: {e}"));
        assert_eq!(tokens.concat(), "Zwei Flüge", "pieces of {size}");
        let calls: Vec<(&str, serde_json::Value)> = completion
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    serde_json::from_str(&c.arguments).unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("search_flights", json!({"origin": "ZRH", "cabin": "First"})),
                ("search_knowledge_base", json!({"query": "Gepäck"}))
            ],
            "pieces of {size}"
        );
        assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
    }
}

#[tokio::test]
async fn tools_go_as_tool_config_and_results_as_tool_result_blocks() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("Nothing found."));
    let mut req = request(true);
    req.tool_choice = ToolChoice::Tool("search_flights".into());
    std::sync::Arc::make_mut(&mut req.messages).push(PromptMessage::assistant(
        "",
        vec![
            ToolCallRequest {
                id: "tooluse_a".into(),
                name: "search_flights".into(),
                arguments: r#"{"origin":"ZRH"}"#.into(),
            },
            ToolCallRequest {
                id: "tooluse_b".into(),
                name: "search_flights".into(),
                arguments: r#"{"origin":"#.into(),
            },
        ],
    ));
    std::sync::Arc::make_mut(&mut req.messages)
        .push(PromptMessage::tool("tooluse_a", r#"{"flights":[]}"#));
    std::sync::Arc::make_mut(&mut req.messages)
        .push(PromptMessage::tool("tooluse_b", "arguments are not valid JSON").with_failure(true));
    let (result, _) = complete(&client(&fake), &req).await;
    result.unwrap_or_else(|e| panic!("{e}"));
    let raw = &fake.raw_requests()[0];
    assert_eq!(
        raw["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "search_flights"}})
    );
    assert_eq!(
        raw["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"]["origin"],
        json!({"type": "string"})
    );
    let messages = raw["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 3, "{raw}");
    assert_eq!(
        messages[1]["content"][0]["toolUse"],
        json!({"toolUseId": "tooluse_a", "name": "search_flights", "input": {"origin": "ZRH"}})
    );
    let results = &messages[2]["content"];
    assert_eq!(results[0]["toolResult"]["status"], json!("success"));
    assert_eq!(results[1]["toolResult"]["status"], json!("error"));
    assert_eq!(
        results[1]["toolResult"]["content"],
        json!([{"text": "arguments are not valid JSON"}])
    );
}

#[tokio::test]
async fn throttling_and_5xx_are_retried_before_the_stream() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::status(429))
        .push(Reply::status(503))
        .push(Reply::text("finally"));
    let (result, _) = complete(&client(&fake), &request(false)).await;
    assert_eq!(result.map(|c| c.content).ok().as_deref(), Some("finally"));
    assert_eq!(fake.request_count(), 3);

    for _ in 0..3 {
        fake.push(Reply::status(500));
    }
    let (result, _) = complete(&client(&fake), &request(false)).await;
    match result {
        // Unavailable through every retry: a profile's fallback model may answer.
        Err(Error::UpstreamUnavailable { message, .. }) => {
            assert_eq!(message, "InternalServerException (HTTP 500)");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.request_count(), 6);
}

#[tokio::test]
async fn a_refused_request_is_not_retried_and_its_message_is_not_passed_on() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::error(400, "secret-ish upstream detail"));
    let (result, _) = complete(&client(&fake), &request(false)).await;
    match result {
        Err(e @ Error::UpstreamRejected { .. }) => {
            assert!(!e.to_string().contains("secret-ish"), "{e}");
            assert!(e.to_string().contains("ValidationException"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn errors_in_the_stream_end_the_call_after_the_text_so_far() {
    let fake = FakeLlm::start().await;
    let client = client(&fake);
    for kind in ["modelStreamErrorException", "throttlingException"] {
        fake.push(Reply::text("partial answer").then_stream_exception(kind, "upstream detail"));
        let (result, tokens) = complete(&client, &request(false)).await;
        assert_eq!(tokens.concat(), "partial answer");
        match result {
            Err(Error::Upstream { message, .. }) => {
                assert!(!message.contains("upstream detail"), "{message}");
                assert!(
                    message.to_lowercase().contains(&kind.to_lowercase()),
                    "{message}"
                );
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
    // Never retried once streaming.
    assert_eq!(fake.request_count(), 2);

    fake.push(Reply::text("cut short answer").cut_off_after(2));
    let (result, tokens) = complete(&client, &request(false)).await;
    // Cut off before `messageStop`: an error, whatever text made it through.
    assert!(result.is_err(), "{result:?}");
    assert!("cut".starts_with(&tokens.concat()), "{tokens:?}");
}

#[tokio::test]
async fn the_deadline_bounds_a_slow_stream() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("one two three four").with_chunk_delay(Duration::from_millis(400)));
    let started = Instant::now();
    let deadline = started + Duration::from_millis(700);
    let result = client(&fake)
        .complete(&request(false), deadline, &mut |_: &str| {})
        .await;
    assert!(
        matches!(result, Err(Error::UpstreamTimeout { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
}
