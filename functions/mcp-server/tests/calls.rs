//! tools/call through the real pipeline against the emulators (DynamoDB Local, moto):
//! `award_value` needs no upstream, so the ledger, the dedupe window, validation and the
//! token check are what is tested.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent::runtime::ToolClients;
use lambda_http::{Body, Request};
use mcp_server::handler::{Deps, handle};
use serde_json::{Value, json};
use shared::config::Env;
use shared::http::auth::{DevClaims, mint_hs256};
use shared::metrics::Metrics;
use shared::secrets::{AwsSecretSource, SecretsCache};

const ISSUER: &str = "https://issuer.test/";
const AUDIENCE: &str = "mcp-tests";

struct Server {
    deps: Deps,
    key: String,
}

async fn server() -> Server {
    server_with(&[]).await
}

async fn server_with(extra: &[(&str, String)]) -> Server {
    let key = test_support::unique("mcp-signing-key-0123456789abcdef");
    let key_name = test_support::create_secret("mcp-test/jwt", &key).await;
    let mut pairs: Vec<(String, String)> = std::env::vars().collect();
    pairs.retain(|(k, _)| {
        !matches!(
            k.as_str(),
            "TOOL_QUEUE_URL" | "TOOL_DLQ_URL" | "JWT_JWKS_URL"
        )
    });
    pairs.extend(
        [
            ("MCP_TOOLS", "award_value".to_owned()),
            ("MCP_PUBLIC_URL", "https://mcp.test".to_owned()),
            ("JWT_SECRET_NAME", key_name),
            ("JWT_ISSUER", ISSUER.to_owned()),
            ("JWT_AUDIENCE", AUDIENCE.to_owned()),
            // Required by the runtime; award_value calls no function.
            ("TOOL_FUNCTION_URLS", "http://127.0.0.1:9".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    pairs.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let env = Env::from_pairs(pairs);
    let sdk = test_support::sdk_config().await;
    let clients = ToolClients {
        dynamodb: test_support::dynamodb().await,
        sqs: test_support::sqs().await,
        secrets: Arc::new(SecretsCache::new(
            Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
            Duration::from_secs(300),
        )),
        http: shared::upstream::http_client().unwrap_or_else(|e| panic!("{e}")),
        llm: std::sync::Arc::new(agent::llm::NoClients),
        signer: agent::tools::SigV4Signer::from_sdk_config(&sdk),
        metrics: Metrics::capture("mcp-server"),
    };
    let deps = mcp_server::deps::build(&env, clients).unwrap_or_else(|e| panic!("deps: {e}"));
    Server { deps, key }
}

impl Server {
    fn token(&self, user: &str) -> String {
        let claims = DevClaims::new(user, ISSUER, AUDIENCE, Duration::from_secs(600));
        mint_hs256(&self.key, &claims).unwrap_or_else(|e| panic!("{e}"))
    }

    async fn call(&self, token: &str, arguments: Value) -> (u16, Value) {
        self.call_tool(token, "award_value", arguments).await
    }

    async fn call_tool(&self, token: &str, name: &str, arguments: Value) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": arguments,
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}});
        let request: Request = lambda_http::http::Request::post("https://mcp.test/mcp")
            .header("host", "mcp.test")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .header("authorization", format!("Bearer {token}"))
            .body(Body::Text(body.to_string()))
            .unwrap_or_else(|e| panic!("{e}"));
        test_support::json_response(handle(&self.deps, request).await).await
    }
}

#[tokio::test]
async fn a_call_runs_once_and_an_identical_one_is_served_from_the_ledger() {
    let server = server().await;
    let token = server.token(&test_support::unique("mcp-user"));
    let args = json!({"cash_price": 1200, "currency": "EUR", "miles": 60000, "taxes": 200});
    let (status, first) = server.call(&token, args.clone()).await;
    assert_eq!(status, 200, "{first}");
    let result = &first["result"];
    assert_eq!(result["isError"], json!(false), "{first}");
    assert_eq!(
        result["_meta"]["tool-calling/status"],
        json!("succeeded"),
        "{first}"
    );
    assert_eq!(result["_meta"]["tool-calling/deduplicated"], json!(false));
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );

    let (_, second) = server.call(&token, args).await;
    assert_eq!(
        second["result"]["_meta"]["tool-calling/deduplicated"],
        json!(true),
        "{second}"
    );
    assert_eq!(
        second["result"]["_meta"]["tool-calling/jobId"],
        result["_meta"]["tool-calling/jobId"]
    );
}

#[tokio::test]
async fn schema_invalid_arguments_are_a_tool_error_naming_the_problem() {
    let server = server().await;
    let token = server.token(&test_support::unique("mcp-user"));
    let (status, body) = server
        .call(
            &token,
            json!({"cash_price": -5, "currency": "EUR", "miles": 0}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], json!(true), "{body}");
    assert_eq!(
        body["result"]["_meta"]["tool-calling/status"],
        json!("rejected")
    );
}

#[tokio::test]
async fn over_the_rate_limit_a_call_is_a_tool_error_with_the_reset_time() {
    // The built-in catalog, with award_value allowed once an hour per user.
    let catalog = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/agents.toml"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let limited = catalog.replace(
        "[tools.award_value]\ntimeout_secs = 2\nrate_limit = { max = 120, window_secs = 3600 }",
        "[tools.award_value]\ntimeout_secs = 2\nrate_limit = { max = 1, window_secs = 3600 }",
    );
    assert_ne!(
        limited, catalog,
        "config/agents.toml's award_value entry changed"
    );
    let file = std::env::temp_dir().join(format!("{}.toml", test_support::unique("mcp-agents")));
    std::fs::write(&file, limited).unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(&[("AGENTS_FILE", file.display().to_string())]).await;
    let token = server.token(&test_support::unique("mcp-user"));
    let (_, first) = server
        .call(
            &token,
            json!({"cash_price": 900, "currency": "EUR", "miles": 50000}),
        )
        .await;
    assert_eq!(first["result"]["isError"], json!(false), "{first}");
    // Other arguments: not the ledger's answer, a second call the limit counts.
    let (status, second) = server
        .call(
            &token,
            json!({"cash_price": 901, "currency": "EUR", "miles": 50000}),
        )
        .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(status, 200, "{second}");
    let result = &second["result"];
    assert_eq!(result["isError"], json!(true), "{second}");
    assert_eq!(
        result["_meta"]["tool-calling/status"],
        json!("rate_limited")
    );
    let reset = result["_meta"]["tool-calling/resetAt"]
        .as_str()
        .unwrap_or_else(|| panic!("no resetAt: {second}"));
    assert!(
        time::OffsetDateTime::parse(reset, &time::format_description::well_known::Rfc3339).is_ok(),
        "{reset}"
    );
}

#[tokio::test]
async fn a_tool_not_served_is_a_protocol_error_and_runs_nothing() {
    let server = server().await;
    let token = server.token(&test_support::unique("mcp-user"));
    for name in ["ask_gpt", "search_flights"] {
        let (_, body) = server.call_tool(&token, name, json!({})).await;
        assert_eq!(body["error"]["code"], json!(-32602), "{name}: {body}");
    }
}
