//! The MCP side of the function: rmcp's stateless Streamable HTTP transport in JSON mode
//! around a handler that lists the served tools (calls through the pipeline come next).

use std::borrow::Cow;
use std::sync::Arc;

use agent::llm::ToolSpec;
use rmcp::model::{
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::listing;

/// The revisions served: the stateless one and the two before it, so 2025-era clients
/// (the TypeScript SDK 1.x) work too.
const VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
];

/// One request's handler; the transport builds one per request from the shared specs.
#[derive(Clone)]
pub struct McpTools {
    specs: Arc<Vec<ToolSpec>>,
}

impl McpTools {
    pub fn new(specs: Arc<Vec<ToolSpec>>) -> Self {
        Self { specs }
    }
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
        Ok(listing::list_result(&self.specs))
    }
}

/// The transport: no sessions, JSON answers, browsers only from `allowed_origins` (a
/// request without `Origin` is not a browser's and passes).
pub fn service(
    specs: Arc<Vec<ToolSpec>>,
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
        move || Ok(McpTools::new(specs.clone())),
        Arc::default(),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    fn specs() -> Arc<Vec<ToolSpec>> {
        Arc::new(vec![ToolSpec {
            name: "search_flights".into(),
            description: "Search flights".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }])
    }

    async fn post(body: Value, method: &str) -> (u16, Value) {
        let svc = service(specs(), Vec::new(), 1 << 20);
        let request = http::Request::post("/mcp")
            .header("host", "mcp.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(http_body_util::Full::new(bytes::Bytes::from(
                body.to_string(),
            )))
            .unwrap_or_else(|e| panic!("{e}"));
        let response = svc.handle(request).await;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::String(text)),
        )
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
