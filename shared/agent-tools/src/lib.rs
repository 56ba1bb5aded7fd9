//! Tools the LLM can call: one file per tool, each implementing [`Tool`], and the one list
//! that registers them ([`tools!`] below). Which tools a conversation may use is the agent
//! profile's business (`agent::profiles`); how a step's calls run is the pipeline's
//! (`agent::pipeline`).
//!
//! Adding a tool: a file here implementing [`Tool`], its `mod` line and its line in
//! `tools!`, and its settings in `config/agents.toml`. `docs/adding-a-tool.md` walks
//! through it with [`award_value`] as the example.

#![deny(missing_docs)]

pub mod ask_gpt;
pub mod award_value;
pub mod catalog;
mod deps;
pub mod fare_alert;
mod flight_message;
mod flight_rows;
pub mod flights;
mod functions;
pub mod knowledge_base;
pub mod metered;
pub mod remember;
mod schema;
pub mod select_flight;
mod settings;
mod typed;
pub mod ui;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;

pub use catalog::{Label, McpExposure, ToolInfo};
pub use deps::{FunctionUrls, ToolDeps};
pub use functions::{FunctionClient, SigV4Signer};
pub use schema::ToolSchema;
pub use settings::RateLimitEntry;
pub use settings::{
    Approval, DEFAULT_RETRY_BASE_SECS, MAX_DELAY, RetryOn, RetrySchedule, ToolSettings,
};
pub use typed::{Tool, TypedTool, with_output};

use agent_core::llm::ToolSpec;
use shared::domain::flight::Locale;
use shared::domain::memory::UserMemory;
use shared::domain::session::SessionState;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
pub use shared::{Error, Result};

/// Declares this deployment's tools, one line each, in the order the model is offered
/// them: [`CATALOG`] (their facts) and [`build_all`] (their instances) come from it.
macro_rules! tools {
    ($($tool:ty),* $(,)?) => {
        /// Every tool's facts (name, label, MCP exposure), in the order of [`build_all`].
        pub const CATALOG: &[ToolInfo] = &[$(<$tool as Tool>::INFO),*];

        /// Every tool, built once per container, in the order the model is offered them.
        pub fn build_all(deps: &ToolDeps) -> Result<Vec<Arc<dyn DynTool>>> {
            Ok(vec![$(TypedTool::<$tool>::build(deps)?),*])
        }
    };
}

tools! {
    flights::SearchFlightsTool,
    knowledge_base::SearchKnowledgeBaseTool,
    ask_gpt::AskGptTool,
    award_value::AwardValueTool,
    remember::RememberTool,
    select_flight::SelectFlightTool,
    ui::SuggestRepliesTool,
    ui::ShowFlightOptionsTool,
    fare_alert::CreateFareAlertTool,
}

/// Who a tool runs for, and until when.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Whose call it is (the token's subject).
    pub user_id: String,
    /// The chat the call belongs to.
    pub chat_id: String,
    /// The chat's state when the turn started (the last search, pending requests, picks).
    pub session_state: SessionState,
    /// What the user asked to be remembered, as it was when the turn started.
    pub memory: Arc<UserMemory>,
    /// The user's date (in their time zone, else UTC): dates before it are in the past.
    pub today: time::Date,
    /// The language the tool answers the user in.
    pub locale: Locale,
    /// The tool must answer before this instant; the pipeline also enforces it.
    pub deadline: Instant,
    /// Where a long-running tool tells the user how far it got (`tool_progress`).
    pub progress: Progress,
    /// The X-Ray trace of the invocation this call belongs to (`X-Amzn-Trace-Id`), passed
    /// on to the functions a tool calls so one chat turn is one trace.
    pub trace_header: Option<String>,
}

/// A running tool's progress reports, in the user's language; the pipeline forwards them
/// as `tool_progress` events. The default goes nowhere (the worker has no client).
#[derive(Debug, Clone, Default)]
pub struct Progress(Option<tokio::sync::mpsc::UnboundedSender<String>>);

impl Progress {
    /// A reporter and the receiving end the pipeline reads.
    pub fn channel() -> (Self, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Self(Some(tx)), rx)
    }

    /// Tells the user how far the call got (dropped when nobody listens).
    pub fn report(&self, message: impl Into<String>) {
        if let Some(tx) = &self.0 {
            // A closed channel means the call is over: nobody to tell.
            let _ = tx.send(message.into());
        }
    }
}

/// A tool as the registry and the pipeline hold it: arguments and requests as JSON. A
/// [`Tool`] becomes one through [`TypedTool`]; an external MCP server's tool is one itself.
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

/// Tools discovered at run time on other servers (the MCP servers of `config/agents.toml`,
/// `agent::mcp::McpTools`). The registry holds them behind this trait so that it does not
/// depend on how they are discovered.
#[async_trait]
pub trait ExternalTools: Send + Sync {
    /// Waits (bounded) for a discovery under way; see `agent::mcp::McpTools::ready`.
    async fn ready(&self);
    /// The specs of the tools discovered on `servers`.
    fn specs(&self, servers: &[String]) -> Vec<ToolSpec>;
    /// The discovered tool offered as `offered`, and its server's name.
    fn tool(&self, offered: &str) -> Option<(RegisteredTool, &str)>;
}

/// A registered tool with its settings.
#[derive(Clone)]
pub struct RegisteredTool {
    /// The tool.
    pub tool: Arc<dyn DynTool>,
    /// Its limits from `config/agents.toml`.
    pub settings: ToolSettings,
}

/// The tools this deployment can run, by name, and the external MCP servers' tools.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// In registration order, which is the order the model is offered them in.
    tools: Vec<(ToolName, RegisteredTool)>,
    external: Option<Arc<dyn ExternalTools>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool` with its settings; a second tool of one name replaces the first.
    pub fn register(&mut self, tool: Arc<dyn DynTool>, settings: ToolSettings) -> &mut Self {
        let name = tool.name();
        let registered = RegisteredTool { tool, settings };
        match self.tools.iter_mut().find(|(known, _)| *known == name) {
            Some((_, slot)) => *slot = registered,
            None => self.tools.push((name, registered)),
        }
        self
    }

    /// The name the model's `name` stands for, if it is a registered tool or one of the
    /// turn's own ([`ToolName::BUILT_IN`]). Text from the model is only compared, never
    /// kept as a name.
    pub fn lookup(&self, name: &str) -> Option<ToolName> {
        let registered = self.tools.iter().map(|(name, _)| *name);
        registered
            .chain(ToolName::BUILT_IN.iter().copied())
            .find(|known| known.as_str() == name)
    }

    /// The registered tool of `name`.
    pub fn get(&self, name: ToolName) -> Option<&RegisteredTool> {
        self.tools
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, tool)| tool)
    }

    /// Adds the external MCP servers' tools.
    pub fn with_external(&mut self, external: Arc<dyn ExternalTools>) -> &mut Self {
        self.external = Some(external);
        self
    }

    /// The external MCP servers' tools, if any are configured.
    pub fn external(&self) -> Option<&Arc<dyn ExternalTools>> {
        self.external.as_ref()
    }

    /// The tool a ledger record names: a registered one, or for `mcp` the external tool
    /// its request names, if it is (still) discovered.
    pub fn resolve(&self, tool: ToolName, request: &Value) -> Option<RegisteredTool> {
        if tool == ToolName::MCP {
            let offered = request["tool"].as_str()?;
            return self.external.as_ref()?.tool(offered).map(|(tool, _)| tool);
        }
        self.get(tool).cloned()
    }

    /// As [`ToolRegistry::resolve`], once a discovery of the external servers that is
    /// under way has ended (bounded): a worker's first job may come before it.
    pub async fn resolve_ready(&self, tool: ToolName, request: &Value) -> Option<RegisteredTool> {
        if tool == ToolName::MCP
            && let Some(external) = &self.external
        {
            external.ready().await;
        }
        self.resolve(tool, request)
    }

    /// The name a ledger record's call was made under: an external tool's offered name,
    /// else the tool's.
    pub fn call_name(tool: ToolName, request: &Value) -> String {
        match request["tool"].as_str() {
            Some(offered) if tool == ToolName::MCP => offered.to_owned(),
            _ => tool.as_str().to_owned(),
        }
    }

    /// The specs of the external tools discovered on `servers`.
    pub fn external_specs(&self, servers: &[String]) -> Vec<ToolSpec> {
        match &self.external {
            Some(external) if !servers.is_empty() => external.specs(servers),
            _ => Vec::new(),
        }
    }

    /// The specs of `allowed` tools that are registered, in registry order.
    pub fn specs(&self, allowed: &[ToolName]) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(name, _)| allowed.contains(name))
            .map(|(_, t)| t.tool.schema().spec.clone())
            .collect()
    }

    /// The registered tools' names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = ToolName> + '_ {
        self.tools.iter().map(|(name, _)| *name)
    }
}
