//! A tool as the registry and the pipeline hold it, its arguments and requests as JSON:
//! what `TypedTool` (`typed`) makes of a typed tool and what an external MCP tool is.

use async_trait::async_trait;
use serde_json::Value;
use shared::Result;
use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

use crate::context::ToolContext;
use crate::schema::ToolSchema;

/// A tool as the registry and the pipeline hold it: arguments and requests as JSON. A
/// `Tool` becomes one through `TypedTool`; an external MCP server's tool is one itself.
#[async_trait]
pub trait DynTool: Send + Sync {
    /// The name the model calls it by and the ledger records.
    fn name(&self) -> ToolName;

    /// Schema and description offered to the LLM, and the validator of its arguments.
    fn schema(&self) -> &ToolSchema;

    /// Checks the LLM's arguments and returns the canonical request: defaults applied and
    /// spelling normalised, so it is both the dedupe input and what [`DynTool::execute`] runs.
    /// An `Error::Invalid` goes back to the LLM, which may correct its call.
    fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Value>;

    /// Runs the canonical request. `Err` means the tool could not do its job (upstream
    /// down, ...); the message for the LLM is derived from it by the pipeline.
    async fn execute(&self, ctx: &ToolContext, request: &Value) -> Result<ToolExecutionResult>;

    /// True when the tool's message is the answer itself, so no final completion is made
    /// (seed 000 §12.1: `skipFinalCompletion` for `search_flights`).
    fn answers_directly(&self) -> bool {
        false
    }

    /// `Some(source)` when the result depends only on the canonical request, the language
    /// and `source` (the upstream it comes from, e.g. the function URLs), never on who
    /// asks or their chat: other users may then be served it from the result cache
    /// (`cache_secs`). Tools that read the user, the chat or their memory keep `None`.
    fn cache_scope(&self) -> Option<String> {
        None
    }

    /// What the user is asked to approve, in their language, for a tool that needs approval
    /// (`approval = "always"`): one line saying what the call will do. The default names
    /// the tool and its canonical request.
    fn approval_summary(&self, request: &Value, locale: Locale) -> String {
        default_approval_summary(self.name(), request, locale)
    }

    /// For a tool whose settings ask for approval: whether this call still needs it
    /// ([`crate::Tool::needs_approval`]). Asked before the call is recorded.
    async fn needs_approval(&self, _ctx: &ToolContext, _request: &Value) -> bool {
        true
    }

    /// What this tool's rate limit counts: its name (an external tool: its offered name).
    fn limit_scope(&self) -> shared::limits::LimitScope {
        shared::limits::LimitScope::Tool(self.name())
    }

    /// `Some(kind)` for a tool the client renders (a UI skill): its result's `raw` is the
    /// `ui` event's payload, sent and stored with the answer; nothing else runs.
    fn ui_kind(&self) -> Option<shared::domain::ui::UiKind> {
        None
    }
}

/// What the user is asked to approve when the tool says nothing better: its name and
/// canonical request.
pub fn default_approval_summary(name: ToolName, request: &Value, locale: Locale) -> String {
    match locale {
        Locale::De => format!("{name} ausführen mit {request}"),
        Locale::En => format!("Run {name} with {request}"),
    }
}
