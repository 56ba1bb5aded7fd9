//! The MCP side of the function: rmcp's stateless Streamable HTTP transport in JSON mode
//! around a handler that lists the served tools and runs their calls through the pipeline.

use std::borrow::Cow;
use std::sync::Arc;

use agent::pipeline::Pipeline;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use shared::domain::tool_call::ToolName;
use shared::http::auth::AuthenticatedUser;

use crate::{call, convert, listing};

/// How long one `tools/call` may take: within the Function URL's limit, with room to answer.
const CALL_TIME: std::time::Duration = std::time::Duration::from_secs(25);

/// The revisions served: the stateless one and the two before it, so 2025-era clients
/// (the TypeScript SDK 1.x) work too.
const VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
];

/// What every request's handler shares: the served tools as listed and their names, and the
/// pipeline that runs their calls (`None`: listing only, for tests of the transport).
#[derive(Clone)]
pub struct Served {
    pub tools: Arc<Vec<Tool>>,
    pub names: Arc<Vec<ToolName>>,
    pub pipeline: Option<Arc<Pipeline>>,
}

/// One request's handler; the transport builds one per request.
#[derive(Clone)]
pub struct McpTools {
    served: Served,
}

impl McpTools {
    pub fn new(served: Served) -> Self {
        Self { served }
    }
}

/// The caller the handler in front of the transport verified.
fn caller(context: &RequestContext<RoleServer>) -> Option<AuthenticatedUser> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<AuthenticatedUser>())
        .cloned()
}

impl ServerHandler for McpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("tool-calling", env!("CARGO_PKG_VERSION")),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(listing::list_result(&self.served.tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let refuse = |text: &str| {
            Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(text.to_owned()),
            ])))
        };
        // A tool this server does not list is the caller's mistake, a protocol error
        // (-32602), as the spec has it; a listed tool's failures are tool results.
        if !self
            .served
            .tools
            .iter()
            .any(|tool| tool.name == request.name)
        {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", printable(&request.name)),
                None,
            ));
        }
        // The handler in front verified every caller; without one nothing runs.
        let (Some(user), Some(pipeline)) = (caller(&context), &self.served.pipeline) else {
            return refuse("This server cannot run tools right now.");
        };
        let deadline = std::time::Instant::now() + CALL_TIME;
        let arguments = request.arguments.unwrap_or_default();
        match call::call(
            pipeline,
            &self.served.names,
            &user,
            &request.name,
            arguments,
            deadline,
        )
        .await
        {
            Some(outcome) => Ok(CallToolResponse::Complete(convert::call_result(&outcome))),
            None => refuse("The call was not run."),
        }
    }
}

/// A caller's tool name as it may be echoed: at most 64 visible ASCII characters.
fn printable(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(64)
        .collect()
}

/// The transport: no sessions, JSON answers, browsers only from `allowed_origins` (a
/// request without `Origin` is not a browser's and passes).
pub fn service(
    served: Served,
    allowed_origins: Vec<String>,
    max_body_bytes: usize,
) -> StreamableHttpService<McpTools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(max_body_bytes)
        .with_allowed_origins(allowed_origins)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(McpTools::new(served.clone())),
        Arc::default(),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent::llm::ToolSpec;
    use serde_json::{Value, json};

    fn specs() -> Served {
        Served {
            tools: Arc::new(
                listing::tool(
                    &ToolSpec {
                        name: "search_flights".into(),
                        description: "Search flights".into(),
                        parameters: json!({"type": "object", "properties": {}}).into(),
                    },
                    None,
                )
                .into_iter()
                .collect(),
            ),
            names: Arc::new(vec![ToolName::SEARCH_FLIGHTS]),
            pipeline: None,
        }
    }

    async fn post(body: Value, method: &str) -> (u16, Value) {
        let svc = service(specs(), Vec::new(), 1 << 20);
        let mut request = http::Request::post("/mcp");
        // tools/call names its tool in a header too (2026-07-28).
        if let Some(name) = body["params"]["name"].as_str() {
            request = request.header("mcp-name", name);
        }
        let request = request
            .header("host", "mcp.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(http_body_util::Full::new(bytes::Bytes::from(
                body.to_string(),
            )))
            .unwrap_or_else(|e| panic!("{e}"));
        test_support::json_response(svc.handle(request).await).await
    }

    fn meta() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}})
    }

    #[tokio::test]
    async fn tools_list_answers_statelessly_with_the_served_tools() {
        let (status, body) = post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}),
            "tools/list",
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["result"]["tools"][0]["name"],
            json!("search_flights"),
            "{body}"
        );
        assert_eq!(body["result"]["ttlMs"], json!(listing::LIST_TTL_MS));
    }

    #[tokio::test]
    async fn a_call_that_cannot_run_is_a_tool_error_not_a_protocol_error() {
        let (status, body) = post(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "search_flights", "arguments": {}, "_meta": meta()}}),
            "tools/call",
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["isError"], json!(true), "{body}");
        assert!(body.get("error").is_none(), "{body}");
    }

    #[tokio::test]
    async fn an_unknown_tool_is_a_protocol_error() {
        for name in ["ask_gpt", "no_such_tool"] {
            let (_, body) = post(
                json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": name, "arguments": {}, "_meta": meta()}}),
                "tools/call",
            )
            .await;
            assert_eq!(body["error"]["code"], json!(-32602), "{body}");
            assert!(body.get("result").is_none(), "{body}");
        }
    }

    #[tokio::test]
    async fn removed_methods_are_not_found() {
        let (status, body) = post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": meta()}}),
            "ping",
        )
        .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"]["code"], json!(-32601), "{body}");
    }
}
