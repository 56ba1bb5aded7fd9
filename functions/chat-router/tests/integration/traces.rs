//! One trace per turn: a flight turn's spans, exported over OTLP/HTTP to a local receiver
//! and decoded as a collector would, form one tree across the router, the award function
//! and its upstream, with the GenAI conventions' attributes; message text stays out unless
//! an operator opts in.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::{Value, json};
use shared::config::Env;
use test_support::fake_llm::Reply;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::{Rig, flight_args};

/// A span as the receiver got it.
#[derive(Debug, Clone)]
struct Received {
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    attributes: BTreeMap<String, Value>,
}

fn value(any: Option<&Any>) -> Value {
    match any {
        Some(Any::StringValue(s)) => json!(s),
        Some(Any::IntValue(i)) => json!(i),
        Some(Any::DoubleValue(d)) => json!(d),
        Some(Any::BoolValue(b)) => json!(b),
        Some(Any::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(|v| value(v.value.as_ref())).collect())
        }
        _ => Value::Null,
    }
}

/// Every span the receiver got so far.
async fn received(receiver: &MockServer) -> Vec<Received> {
    let mut spans = Vec::new();
    for request in receiver.received_requests().await.unwrap_or_default() {
        let export = ExportTraceServiceRequest::decode(request.body.as_slice())
            .unwrap_or_else(|e| panic!("not an OTLP trace export: {e}"));
        for resource in export.resource_spans {
            for scope in resource.scope_spans {
                for span in scope.spans {
                    spans.push(Received {
                        trace: span.trace_id,
                        id: span.span_id,
                        parent: span.parent_span_id,
                        name: span.name,
                        attributes: span
                            .attributes
                            .iter()
                            .map(|kv| {
                                (
                                    kv.key.clone(),
                                    value(kv.value.as_ref().and_then(|v| v.value.as_ref())),
                                )
                            })
                            .collect(),
                    });
                }
            }
        }
    }
    spans
}

/// The spans of the turn of `chat_id`: its `invoke_agent` span's trace.
async fn turn_trace(receiver: &MockServer, chat_id: &str) -> Vec<Received> {
    let all = received(receiver).await;
    let root = all
        .iter()
        .find(|s| s.attributes.get("gen_ai.conversation.id") == Some(&json!(chat_id)))
        .unwrap_or_else(|| panic!("no invoke_agent span for {chat_id}: {all:#?}"));
    all.iter()
        .filter(|s| s.trace == root.trace)
        .cloned()
        .collect()
}

fn one<'a>(spans: &'a [Received], name: &str) -> &'a Received {
    let found: Vec<&Received> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "{name}: {spans:#?}");
    found[0]
}

async fn receiver() -> MockServer {
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver)
        .await;
    receiver
}

/// Turns traces on towards `receiver`, with the collector's key from a secret.
async fn traces_to(receiver: &MockServer, capture: bool) {
    let headers =
        test_support::create_secret("otlp-headers", "x-collector-key=k%3Dtest, x-team=travel")
            .await;
    let mut vars = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), receiver.uri()),
        ("OTEL_EXPORTER_OTLP_HEADERS_SECRET".to_owned(), headers),
    ];
    if capture {
        vars.push((
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT".to_owned(),
            "true".to_owned(),
        ));
    }
    let http = shared::upstream::http_client().unwrap_or_else(|e| panic!("{e}"));
    let secrets = shared::secrets::SecretsCache::new(
        std::sync::Arc::new(shared::secrets::AwsSecretSource::new(
            test_support::secrets_manager().await,
        )),
        std::time::Duration::from_secs(60),
    );
    assert!(shared::telemetry::configure(&Env::from_pairs(vars), &http, &secrets).await);
}

/// The one test that turns traces on for this process (they are per container): the span
/// tree of a flight turn, then the same with content capture on.
#[tokio::test]
async fn a_flight_turn_is_one_trace_across_the_router_the_function_and_its_upstream() {
    shared::observability::init_tracing();
    let receiver = receiver().await;
    traces_to(&receiver, false).await;

    // The router's DynamoDB client as production builds it, so its calls are traced.
    let dynamodb = shared::aws::dynamodb(&test_support::sdk_config().await);
    let rig = Rig::with_dynamodb(|_| {}, None, dynamodb).await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]).with_usage(1200, 80));
    let user = test_support::unique("traced");
    let message = "Business FRA to JFK, the traced turn";
    let turn = rig
        .chat(Some(&rig.token(&user)), json!({"message": message}))
        .await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(turn.names().last(), Some(&"done"));
    let chat_id = turn.chat_id();
    let spans = turn_trace(&receiver, &chat_id).await;
    // Every export carries the collector's key from the secret, decoded.
    for request in receiver.received_requests().await.unwrap_or_default() {
        let key = request.headers.get("x-collector-key");
        assert_eq!(key.and_then(|v| v.to_str().ok()), Some("k=test"));
        assert!(request.headers.get("x-team").is_some());
    }

    // The turn is the root; its model call and its tool call hang below it.
    let root = one(&spans, "invoke_agent travel");
    assert!(root.parent.is_empty(), "{root:#?}");
    assert_eq!(
        root.attributes["gen_ai.operation.name"],
        json!("invoke_agent")
    );
    assert_eq!(root.attributes["gen_ai.agent.name"], json!("travel"));
    // The turn's `init` names its trace, so a client can link to it.
    let trace_id: String = root.trace.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(turn.first("init")["trace"]["id"], json!(trace_id));
    let chat = one(&spans, "chat gpt-4o-mini");
    assert_eq!(chat.parent, root.id);
    assert_eq!(chat.attributes["gen_ai.provider.name"], json!("openai"));
    assert_eq!(
        chat.attributes["gen_ai.request.model"],
        json!("gpt-4o-mini")
    );
    assert_eq!(
        chat.attributes["gen_ai.response.finish_reasons"],
        json!(["tool_call"])
    );
    // The token counts are the metered usage.
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let usage = rig.deps.usage.list_for_user(&user, since).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(chat.attributes["gen_ai.usage.input_tokens"], json!(1200));
    assert_eq!(chat.attributes["gen_ai.usage.output_tokens"], json!(80));
    assert_eq!(usage[0].prompt_tokens, 1200);
    assert_eq!(usage[0].completion_tokens, 80);

    let tool = one(&spans, "execute_tool search_flights");
    assert_eq!(tool.parent, root.id);
    assert_eq!(tool.attributes["gen_ai.tool.name"], json!("search_flights"));
    assert_eq!(tool.attributes["app.tool.outcome"], json!("executed"));
    assert_eq!(tool.attributes["app.tool.status"], json!("succeeded"));
    let job_id = turn.first("tool_result")["job_id"].clone();
    assert_eq!(tool.attributes["app.tool.job_id"], job_id);

    // The ledger's DynamoDB calls beneath the tool call: the claim and the recorded result.
    let ledger: Vec<&Received> = spans
        .iter()
        .filter(|s| {
            s.parent == tool.id && s.attributes.get("rpc.service") == Some(&json!("DynamoDB"))
        })
        .collect();
    assert!(
        !ledger.is_empty(),
        "no DynamoDB call under the tool: {spans:#?}"
    );
    for call in &ledger {
        assert!(call.name.starts_with("DynamoDB."), "{call:#?}");
        assert_eq!(call.attributes["rpc.system"], json!("aws-api"));
        assert_eq!(call.attributes["app.http.attempts"], json!(1), "{call:#?}");
    }
    assert!(
        ledger
            .iter()
            .any(|s| s.attributes.get("aws.dynamodb.table_names")
                == Some(&json!(test_support::require_env("TOOL_CALLS_TABLE")))),
        "no call to the tool-calls table: {ledger:#?}"
    );

    // The turn's own bookkeeping (its record, log and chat) has no spans of its own.
    assert!(
        !spans
            .iter()
            .any(|s| s.parent == root.id && s.attributes.contains_key("rpc.service")),
        "{spans:#?}"
    );

    // The call to the award function, its server span (joined by `traceparent`), and the
    // function's own calls to Seats.aero beneath that.
    let calls: Vec<&Received> = spans.iter().filter(|s| s.parent == tool.id).collect();
    let award_call = calls
        .iter()
        .find(|s| s.attributes.get("app.upstream.service") == Some(&json!("seatsaero-search")))
        .unwrap_or_else(|| panic!("no call to the award function under the tool: {spans:#?}"));
    assert_eq!(award_call.name, "POST");
    assert_eq!(
        award_call.attributes["http.response.status_code"],
        json!(200)
    );
    let served = spans
        .iter()
        .find(|s| s.parent == award_call.id)
        .unwrap_or_else(|| panic!("the award function's span is not under the call: {spans:#?}"));
    assert!(served.name.starts_with("POST /"), "{served:#?}");
    let upstream: Vec<&Received> = spans.iter().filter(|s| s.parent == served.id).collect();
    assert!(
        upstream
            .iter()
            .any(|s| s.attributes.get("app.upstream.service") == Some(&json!("Seats.aero"))),
        "no Seats.aero call under the award function: {spans:#?}"
    );

    // No message text, prompt or tool arguments without the opt-in.
    let everything = format!("{spans:?}");
    assert!(!everything.contains("the traced turn"), "{everything}");
    assert!(!everything.contains("gen_ai.input.messages"));
    assert!(!everything.contains("gen_ai.tool.call.arguments"));

    // With it, the prompt and the call's arguments are there.
    traces_to(&receiver, true).await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]).with_usage(1000, 50));
    let opted = rig
        .chat(
            Some(&rig.token(&user)),
            json!({"message": "Business FRA to JFK, the opted-in turn"}),
        )
        .await;
    traces_to(&receiver, false).await;
    assert_eq!(opted.status, 200, "{:?}", opted.json);
    let spans = turn_trace(&receiver, &opted.chat_id()).await;
    let chat = one(&spans, "chat gpt-4o-mini");
    let input = chat.attributes["gen_ai.input.messages"]
        .as_str()
        .unwrap_or_default();
    assert!(input.contains("the opted-in turn"), "{input}");
    let tool = one(&spans, "execute_tool search_flights");
    assert!(
        tool.attributes["gen_ai.tool.call.arguments"]
            .as_str()
            .is_some_and(|a| a.contains("FRA")),
        "{tool:#?}"
    );
}
