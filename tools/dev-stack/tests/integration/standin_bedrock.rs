//! `LLM_PROVIDER=bedrock make dev`: the offline stand-in answers the runtime's Bedrock
//! client through the fake's ConverseStream (event-stream frames), as it answers OpenAI
//! requests: a flight question becomes a `search_flights` call, a tool result is relayed.

use std::time::{Duration, Instant};

use agent::llm::{
    CompletionRequest, FinishReason, LlmProvider, PromptMessage, ToolChoice, ToolSpec,
};
use llm::BedrockClient;
use serde_json::json;
use shared::upstream::RetryPolicy;
use test_support::fake_llm::{FakeLlm, Protocol};

fn client(fake: &FakeLlm) -> BedrockClient {
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new("local", "local", None, None, "test"),
            ),
        )
        .build();
    BedrockClient::new(
        llm::bedrock::sdk_client_at(&sdk, &fake.endpoint_url()),
        RetryPolicy::default(),
    )
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} tool"),
        parameters: json!({"type": "object"}).into(),
    }
}

#[tokio::test]
async fn the_stand_in_calls_tools_and_relays_results_over_bedrock() {
    let fake = FakeLlm::start_with(
        0,
        Box::new(|request| dev_stack::standin::reply(request, test_support::clock::today())),
    )
    .await;
    let client = client(&fake);
    let mut request = CompletionRequest {
        provider: None,
        model: "offline-stand-in".into(),
        messages: vec![
            PromptMessage::system("You are a travel assistant."),
            PromptMessage::user(format!(
                "Business flights from Frankfurt to New York on {}",
                test_support::future_date()
            )),
        ]
        .into(),
        tools: vec![tool("search_flights"), tool("search_knowledge_base")].into(),
        tool_choice: ToolChoice::Auto,
        temperature: None,
        max_tokens: Some(512),
        fallback: Default::default(),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let first = client
        .complete(&request, deadline, &mut |_: &str| {})
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.finish_reason, Some(FinishReason::ToolCalls));
    let call = first
        .tool_calls
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("no tool call: {first:?}"));
    assert_eq!(call.name, "search_flights");
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    assert_eq!(
        (args["origin"].as_str(), args["destination"].as_str()),
        (Some("FRA"), Some("JFK"))
    );

    std::sync::Arc::make_mut(&mut request.messages)
        .push(PromptMessage::assistant("", vec![call.clone()]));
    std::sync::Arc::make_mut(&mut request.messages).push(PromptMessage::tool(
        call.id,
        "Here are the flights I found for FRA → JFK.",
    ));
    let mut streamed = String::new();
    let second = client
        .complete(&request, deadline, &mut |t: &str| streamed.push_str(t))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(second.tool_calls.is_empty());
    assert!(streamed.contains("FRA → JFK"), "{streamed}");
    assert_eq!(fake.protocols(), [Protocol::Bedrock, Protocol::Bedrock]);
}
