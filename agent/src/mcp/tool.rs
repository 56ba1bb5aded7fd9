//! An external MCP server's tool as a pipeline tool: offered as `<server>__<tool>` with the
//! server's input schema, recorded under `mcp`, its result relayed as text. The pipeline
//! treats it like every tool (ledger, limits, timeout, approval, fenced and scanned result).

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::limits::LimitScope;

use super::Server;
use crate::guard::detect;
use agent_tools::{DynTool, ToolContext, ToolSchema};
use shared::{Error, Result};

/// Longest description taken from a server; the rest is cut.
const MAX_DESCRIPTION_CHARS: usize = 600;

/// Longest result text passed on; the history cuts tool messages further.
const MAX_RESULT_CHARS: usize = 16_000;

/// One allowed tool of an external MCP server, offered as `<server>__<tool>`.
pub struct ExternalTool {
    server: Arc<Server>,
    /// The tool's own name on its server.
    remote: String,
    /// `<server>__<tool>`: what the model calls, the ledger records and the limit counts.
    offered: &'static str,
    schema: ToolSchema,
}

impl ExternalTool {
    /// The tool as the server listed it, if its schema compiles. A description that reads
    /// like instructions to the model is replaced by a neutral one (and logged): the
    /// server's texts are not ours.
    pub(super) fn new(
        server: Arc<Server>,
        offered: &'static str,
        listed: &rmcp::model::Tool,
    ) -> Result<Self> {
        let name = &server.config.name;
        let remote = listed.name.to_string();
        let own: String = listed
            .description
            .as_deref()
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control() || *c == '\n')
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        let findings = detect::scan(&own);
        let description = if findings.is_empty() && !own.trim().is_empty() {
            format!("{} (tool of the external service `{name}`)", own.trim())
        } else {
            if !findings.is_empty() {
                tracing::warn!(server = %name, tool = %remote, ?findings, "an MCP tool's description reads like instructions; offered with a neutral one");
            }
            format!("Tool `{remote}` of the external service `{name}`.")
        };
        let parameters = Value::Object((*listed.input_schema).clone());
        let schema = ToolSchema::from_json(offered, description, parameters)?;
        Ok(Self {
            server,
            remote,
            offered,
            schema,
        })
    }
}

#[async_trait]
impl DynTool for ExternalTool {
    fn name(&self) -> ToolName {
        ToolName::MCP
    }

    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    /// The arguments as the server's schema allows them, under the offered name: the
    /// ledger's request, so identical calls of one tool dedupe and other tools' do not.
    fn prepare(&self, args: Value, _ctx: &ToolContext) -> Result<Value> {
        let args = self.schema.parse::<Value>(&args)?;
        if !args.is_object() {
            return Err(Error::Invalid("the arguments must be a JSON object".into()));
        }
        Ok(json!({ "tool": self.offered, "arguments": args }))
    }

    async fn execute(&self, _ctx: &ToolContext, request: &Value) -> Result<ToolExecutionResult> {
        let arguments = request["arguments"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let result = self.server.call(&self.remote, arguments).await?;
        Ok(relayed(&self.server.config.name, result))
    }

    fn limit_scope(&self) -> LimitScope {
        LimitScope::External(self.offered)
    }

    fn approval_summary(&self, request: &Value, locale: Locale) -> String {
        let (tool, server, args) = (
            &self.remote,
            &self.server.config.name,
            &request["arguments"],
        );
        match locale {
            Locale::De => format!("`{tool}` beim externen Dienst `{server}` ausführen mit {args}"),
            Locale::En => format!("Run `{tool}` of the external service `{server}` with {args}"),
        }
    }
}

/// The result as the model reads it: its text parts (structured content when there are
/// none), cut to a size; `isError` makes it a failed result the model can explain.
fn relayed(server: &str, result: CallToolResult) -> ToolExecutionResult {
    let mut parts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    let structured = result.structured_content.as_ref().map(Value::to_string);
    if parts.is_empty()
        && let Some(structured) = &structured
    {
        parts.push(structured);
    }
    let left_out = result.content.len()
        - result
            .content
            .iter()
            .filter(|b| b.as_text().is_some())
            .count();
    let mut message: String = parts.join("\n").chars().take(MAX_RESULT_CHARS).collect();
    if left_out > 0 {
        message.push_str(&format!("\n({left_out} non-text parts left out)"));
    }
    let result = if result.is_error == Some(true) {
        ToolExecutionResult::failed(format!(
            "The external service `{server}` reports an error: {message}"
        ))
    } else if message.trim().is_empty() {
        ToolExecutionResult::succeeded(format!("The external service `{server}` returned nothing."))
    } else {
        ToolExecutionResult::succeeded(message)
    };
    result.with_metadata("mcp_server", server)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock;

    use super::*;

    #[test]
    fn a_result_is_relayed_as_text_and_an_error_as_a_failure() {
        let ok = relayed(
            "notes",
            CallToolResult::success(vec![ContentBlock::text("FRA-JFK: shoulder season")]),
        );
        assert_eq!(ok.message, "FRA-JFK: shoulder season");
        assert_eq!(ok.metadata["mcp_server"], "notes");
        let failed = relayed(
            "notes",
            CallToolResult::error(vec![ContentBlock::text("no such route")]),
        );
        assert_eq!(
            failed.status,
            shared::domain::tool_result::ExecutionStatus::Failed
        );
        assert!(
            failed.message.contains("no such route"),
            "{}",
            failed.message
        );
        let structured = relayed("notes", CallToolResult::structured(json!({"fare": 1})));
        assert!(
            structured.message.contains("\"fare\""),
            "{}",
            structured.message
        );
        let long = relayed(
            "notes",
            CallToolResult::success(vec![ContentBlock::text("x".repeat(50_000))]),
        );
        assert_eq!(long.message.chars().count(), MAX_RESULT_CHARS);
    }
}
