//! One external server's MCP client (rmcp, Streamable HTTP over the project's reqwest
//! client): the 2026-07-28 revision when the server speaks it, else 2025-11-25's
//! `initialize`. Errors name what failed, never what the server said: its texts are hostile.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, MergedList, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError};
use shared::Error;
use shared::secrets::SecretsCache;

use super::config::McpServerConfig;
use shared::Result;

/// Largest answer taken from a server: tool lists and results are read whole.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// An open client; rmcp keeps its transport's task running for the container's life.
pub(super) type Connection = RunningService<RoleClient, ()>;

/// Connects to `server` (and agrees on a protocol revision), with its bearer token when it
/// has a secret.
pub(super) async fn connect(
    server: &McpServerConfig,
    http: &reqwest::Client,
    secrets: &SecretsCache,
) -> Result<Connection> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
        .max_json_response_size(MAX_RESPONSE_BYTES);
    if let Some(name) = &server.secret {
        config = config.auth_header(secrets.get(name).await?.expose());
    }
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    ().serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|e| {
            let reason = if e.is_authorization_required() {
                "it asks for authorization (check the token in its secret)"
            } else {
                "it could not be reached or did not speak MCP"
            };
            upstream(&server.name, reason)
        })
}

/// The server's tools, all pages, with its cache hint.
pub(super) async fn list_tools(
    server: &McpServerConfig,
    connection: &Connection,
) -> Result<MergedList<rmcp::model::Tool>> {
    connection
        .list_all_tools_with_cache_hint()
        .await
        .map_err(|e| failure(&server.name, &e))
}

/// Calls the server's tool `tool` with `arguments`.
pub(super) async fn call_tool(
    server: &McpServerConfig,
    connection: &Arc<Connection>,
    tool: &str,
    arguments: JsonObject,
) -> Result<CallToolResult> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    connection
        .call_tool(params)
        .await
        .map_err(|e| failure(&server.name, &e))
}

/// Whether the connection is gone for good (a new one is opened for the next call).
pub(super) fn is_closed(error: &Error) -> bool {
    matches!(error, Error::Upstream { message, .. } if message.ends_with(CLOSED))
}

const CLOSED: &str = "the connection closed";

/// What failed, in our words: a protocol error by its code (the server's own message is
/// not repeated), anything else by kind.
fn failure(server: &str, error: &ServiceError) -> Error {
    match error {
        ServiceError::McpError(data) => Error::UpstreamRejected {
            service: "mcp",
            status: 400,
            message: format!("MCP server `{server}` answered with error {}", data.code.0),
        },
        ServiceError::Timeout { .. } => Error::UpstreamTimeout { service: "mcp" },
        ServiceError::TransportClosed => upstream(server, CLOSED),
        e if e.is_authorization_required() => upstream(server, "it refused our token"),
        ServiceError::TransportSend(_) => upstream(server, "it could not be reached"),
        _ => upstream(server, "it answered what MCP does not allow"),
    }
}

fn upstream(server: &str, reason: &str) -> Error {
    Error::Upstream {
        service: "mcp",
        message: format!("MCP server `{server}`: {reason}"),
    }
}
