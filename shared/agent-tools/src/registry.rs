//! The tools this deployment can run, by name, with their settings, and the external MCP
//! servers' tools behind [`ExternalTools`].

use std::sync::Arc;

use agent_core::llm::ToolSpec;
use async_trait::async_trait;
use serde_json::Value;
use shared::domain::tool_call::ToolName;

use crate::dyn_tool::DynTool;
use crate::settings::ToolSettings;

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
