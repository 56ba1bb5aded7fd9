//! Agent profiles (seed 002) and per-tool settings, read from `config/agents.toml`: which
//! tools a conversation may use, how hard the model is pushed to use them, with which
//! system prompt and model, and each tool's timeout and rate limit.
//!
//! The file in the repository is compiled into the binary as the default; `AGENTS_FILE`
//! points at another one at run time.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::guard::GuardMode;
use crate::llm::{ModelRef, Provider, ToolChoice};
use crate::mcp::config::McpServerConfig;
use agent_tools::{Approval, RateLimitEntry, ToolSettings};
use shared::domain::tool_call::ToolName;
use shared::{Error, Result};

/// The profiles shipped with the repository.
pub const BUILT_IN: &str = include_str!("../../config/agents.toml");

/// How the model may use the profile's tools. Forcing (`required` or a named tool) applies
/// to the first step of each agent that holds the turn (a handoff starts again); later
/// steps are `auto`, so the model can answer in text once it has results (seed 002's
/// follow-up without `mode: ANY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoiceMode {
    /// `auto`: the model decides whether to call a tool.
    Auto,
    /// `required`: the first step must call a tool.
    Required,
    /// `none`: no step may call a tool.
    None,
    /// A tool's name: the first step must call that tool.
    Tool(ToolName),
}

impl<'de> Deserialize<'de> for ToolChoiceMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "auto" => Self::Auto,
            "required" => Self::Required,
            "none" => Self::None,
            other => Self::Tool(other.parse().map_err(|_| {
                serde::de::Error::custom(format!(
                    "tool_choice must be auto, required, none or a tool name, got `{other}`"
                ))
            })?),
        })
    }
}

impl ToolChoiceMode {
    /// The wire choice for step `step` (0-based) of a turn.
    pub fn for_step(&self, step: usize) -> ToolChoice {
        match (self, step) {
            (Self::None, _) => ToolChoice::None,
            (Self::Required, 0) => ToolChoice::Required,
            (Self::Tool(name), 0) => ToolChoice::Tool(name.as_str().to_owned()),
            _ => ToolChoice::Auto,
        }
    }
}

/// One agent profile (`[agents.<name>]`): how the turns it answers are prompted, which
/// model answers them and which tools they may call.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfile {
    /// The profile's key in the file: what requests and handoffs name it by.
    pub name: String,
    /// What the profile is for (`description`); the handoff tools to it show it to the model.
    pub description: String,
    /// The system prompt of its turns (`system_prompt`, trimmed).
    pub system_prompt: String,
    /// Who answers this profile's turns (`provider`: `openai` or `bedrock`); `None`: the
    /// deployment's `LLM_PROVIDER`.
    pub provider: Option<Provider>,
    /// `None`: the provider's default model (`OPENAI_MODEL`, `BEDROCK_MODEL_ID`).
    pub model: Option<String>,
    /// The model of steps that offer tools (seed 001: a light model decides on tools);
    /// `None`: `model`.
    pub decision_model: Option<String>,
    /// The model that writes the answer (a stronger one); `None`: `model`.
    pub answer_model: Option<String>,
    /// Models a step's call goes to, in order, when its own stays unavailable (`fallback`).
    pub fallback: Vec<FallbackModel>,
    /// The tools it offers (`tools`); its MCP servers' tools and handoffs come on top.
    pub tools: Vec<ToolName>,
    /// Tools of `tools` that run in the background through the tool queue: the turn records
    /// them as `queued` and goes on; the result reaches the model on a later turn.
    pub async_tools: Vec<ToolName>,
    /// How hard the model is pushed to call a tool (`tool_choice`, default `auto`).
    pub tool_choice: ToolChoiceMode,
    /// The sampling temperature of its model calls (`temperature`); `None` leaves it out of
    /// the request.
    pub temperature: Option<f32>,
    /// What the input guard does with a message that looks like an attack (`guard`:
    /// `flag`, the default, or `block`).
    pub guard: GuardMode,
    /// The most tokens one model step may generate (`max_tokens`); `None`: the deployment's
    /// `LLM_MAX_TOKENS`.
    pub max_tokens: Option<u32>,
    /// Profiles this one may hand the turn to (`handoffs`): the model is offered one
    /// `transfer_to_<agent>` tool per target.
    pub handoffs: Vec<String>,
    /// Per-tool approval that overrides the tool's own `approval` in this profile.
    pub approval: BTreeMap<ToolName, Approval>,
    /// External MCP servers whose allowed tools this profile offers (`mcp_servers`).
    pub mcp_servers: Vec<String>,
}

impl AgentProfile {
    /// Whether `tool` is among the profile's `tools`.
    pub fn allows(&self, tool: ToolName) -> bool {
        self.tools.contains(&tool)
    }

    /// The provider of this profile's turns, the deployment's unless it names its own.
    pub fn provider(&self, defaults: &ModelDefaults) -> Provider {
        self.provider.unwrap_or(defaults.provider)
    }

    /// The provider and models of this profile's steps; the provider's default model
    /// stands in for a `model` left out.
    pub fn step_models(&self, defaults: &ModelDefaults) -> StepModels {
        let provider = self.provider(defaults);
        let model = self
            .model
            .as_deref()
            .unwrap_or_else(|| defaults.model(provider));
        let fallback = resolve_fallback(&self.fallback, provider, defaults);
        StepModels {
            provider,
            decision: self.decision_model.as_deref().unwrap_or(model).to_owned(),
            answer: self.answer_model.as_deref().unwrap_or(model).to_owned(),
            fallback,
        }
    }

    /// Every provider this profile's calls may go to: its own and its fallbacks'.
    pub fn providers(&self, defaults: &ModelDefaults) -> impl Iterator<Item = Provider> {
        let own = self.provider(defaults);
        std::iter::once(own).chain(self.fallback.iter().map(move |f| f.provider.unwrap_or(own)))
    }

    /// What the pipeline may run in a step of this profile.
    pub fn tool_policy(&self) -> ToolPolicy<'_> {
        ToolPolicy {
            allowed: &self.tools,
            background: &self.async_tools,
            approval: Some(&self.approval),
            mcp_servers: &self.mcp_servers,
        }
    }
}

/// The deployment's provider (`LLM_PROVIDER`) and each provider's default model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDefaults {
    /// The provider of profiles that name none (`LLM_PROVIDER`).
    pub provider: Provider,
    /// `OPENAI_MODEL`.
    pub openai: String,
    /// `BEDROCK_MODEL_ID`.
    pub bedrock: String,
}

impl ModelDefaults {
    /// The default model of `provider`.
    pub fn model(&self, provider: Provider) -> &str {
        match provider {
            Provider::OpenAi => &self.openai,
            Provider::Bedrock => &self.bedrock,
        }
    }
}

/// Which provider and model serve which step of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepModels {
    /// One provider serves every step of a profile.
    pub provider: Provider,
    /// Steps that offer tools: the model decides whether to call them.
    pub decision: String,
    /// The step whose text is the answer the client sees.
    pub answer: String,
    /// Where each step's call goes, in order, when its model stays unavailable.
    pub fallback: std::sync::Arc<[ModelRef]>,
}

/// One model of a profile's `fallback` list: `{ provider = "bedrock", model = "..." }`. A
/// provider left out is the profile's; a model left out, the provider's default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackModel {
    /// Who serves it; `None`: the profile's provider.
    #[serde(default)]
    pub provider: Option<Provider>,
    /// The model id; `None`: the provider's default (`OPENAI_MODEL`, `BEDROCK_MODEL_ID`).
    #[serde(default)]
    pub model: Option<String>,
}

/// `list`'s models, a provider left out being `own` and a model left out its provider's
/// default.
fn resolve_fallback(
    list: &[FallbackModel],
    own: Provider,
    defaults: &ModelDefaults,
) -> std::sync::Arc<[ModelRef]> {
    list.iter()
        .map(|entry| {
            let provider = entry.provider.unwrap_or(own);
            ModelRef {
                provider,
                model: entry
                    .model
                    .clone()
                    .unwrap_or_else(|| defaults.model(provider).to_owned()),
            }
        })
        .collect()
}

/// `list` names a provider or a model in every entry, and no empty model (`owner` says
/// whose list it is in the error).
fn check_fallback(list: &[FallbackModel], owner: &str, source: &str) -> Result<()> {
    match list.iter().position(|f| {
        f.model.as_deref().is_some_and(|m| m.trim().is_empty())
            || (f.model.is_none() && f.provider.is_none())
    }) {
        Some(i) => Err(Error::Config(format!(
            "{source}: {owner} has fallback model {} without a provider or model",
            i + 1
        ))),
        None => Ok(()),
    }
}

impl StepModels {
    /// True when another model writes the answer than the one that decides on tools: a
    /// decision step's text is then not the answer.
    pub fn split(&self) -> bool {
        self.decision != self.answer
    }
}

/// Which tools a step may call, and which of them run in the background.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolPolicy<'a> {
    /// The tools the step may call.
    pub allowed: &'a [ToolName],
    /// Tools of `allowed` whose calls go to the tool queue (when there is one) instead of
    /// running in the step.
    pub background: &'a [ToolName],
    /// The profile's approval overrides of the tools' own `approval`.
    pub approval: Option<&'a BTreeMap<ToolName, Approval>>,
    /// The external MCP servers whose tools the step may call.
    pub mcp_servers: &'a [String],
}

impl ToolPolicy<'_> {
    /// Whether `tool`'s calls wait for the user here: the profile's say, else the tool's.
    pub fn needs_approval(&self, tool: ToolName, own: Approval) -> bool {
        let approval = self
            .approval
            .and_then(|overrides| overrides.get(&tool).copied())
            .unwrap_or(own);
        approval == Approval::Always
    }
}

impl<'a> ToolPolicy<'a> {
    /// Every tool of `allowed` runs in the turn.
    pub fn inline(allowed: &'a [ToolName]) -> Self {
        Self {
            allowed,
            background: &[],
            approval: None,
            mcp_servers: &[],
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    #[serde(default)]
    description: String,
    system_prompt: String,
    #[serde(default)]
    provider: Option<Provider>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    decision_model: Option<String>,
    #[serde(default)]
    answer_model: Option<String>,
    #[serde(default)]
    fallback: Vec<FallbackModel>,
    #[serde(default)]
    tools: Vec<ToolName>,
    #[serde(default)]
    async_tools: Vec<ToolName>,
    #[serde(default = "auto")]
    tool_choice: ToolChoiceMode,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    guard: GuardMode,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    handoffs: Vec<String>,
    #[serde(default)]
    approval: BTreeMap<ToolName, Approval>,
    #[serde(default)]
    mcp_servers: Vec<String>,
}

fn auto() -> ToolChoiceMode {
    ToolChoiceMode::Auto
}

/// A tool's own retry schedule (seed 003's `retryConfig`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryEntry {
    /// Attempts in all, the first included; 1 turns retries off.
    max_attempts: u32,
    /// Delay before the first retry, doubled for each further one.
    #[serde(default)]
    base_secs: Option<u64>,
    /// The failures that are retried; both when absent.
    #[serde(default)]
    on: Option<Vec<RetryFailure>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RetryFailure {
    Upstream,
    Timeout,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolEntry {
    timeout_secs: Option<f64>,
    rate_limit: Option<RateLimitEntry>,
    retry: Option<RetryEntry>,
    cache_secs: Option<u64>,
    #[serde(default)]
    approval: Approval,
    /// Only for `ask_gpt`, the one tool that calls a model.
    #[serde(default)]
    fallback: Vec<FallbackModel>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    default_agent: String,
    #[serde(default)]
    tools: BTreeMap<ToolName, ToolEntry>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, crate::mcp::config::McpServerEntry>,
    agents: BTreeMap<String, AgentEntry>,
}

/// All profiles plus the tool settings, validated.
#[derive(Debug, Clone)]
pub struct AgentCatalog {
    default_agent: String,
    agents: BTreeMap<String, AgentProfile>,
    tools: BTreeMap<ToolName, ToolSettings>,
    mcp_servers: Vec<McpServerConfig>,
    /// `[tools.ask_gpt] fallback`: where `ask_gpt`'s calls go when its model is unavailable.
    ask_gpt_fallback: Vec<FallbackModel>,
}

/// A tool's settings from its `[tools.<name>]` entry: timeout, rate limit and retries, each
/// checked (`source` names the file in errors).
fn tool_settings(name: ToolName, entry: ToolEntry, source: &str) -> Result<ToolSettings> {
    let mut settings = ToolSettings::default();
    if let Some(secs) = entry.timeout_secs {
        if !(secs.is_finite() && secs > 0.0 && secs <= 900.0) {
            return Err(Error::Config(format!(
                "{source}: tools.{name}.timeout_secs must be in (0, 900], got {secs}"
            )));
        }
        settings.timeout = Duration::from_secs_f64(secs);
    }
    if let Some(limit) = entry.rate_limit {
        settings.rate_limit = Some(limit.checked(&format!("tools.{name}"), source)?);
    }
    if let Some(retry) = entry.retry {
        let base_secs = retry
            .base_secs
            .unwrap_or(crate::jobs::DEFAULT_RETRY_BASE_SECS);
        if !(1..=10).contains(&retry.max_attempts) || base_secs > 900 {
            return Err(Error::Config(format!(
                "{source}: tools.{name}.retry needs max_attempts 1 to 10 and base_secs 0 to 900"
            )));
        }
        settings.retry = Some(crate::jobs::RetrySchedule {
            max_attempts: retry.max_attempts,
            base_delay: Duration::from_secs(base_secs),
        });
        if let Some(on) = retry.on {
            settings.retry_on = agent_tools::RetryOn {
                upstream: on.contains(&RetryFailure::Upstream),
                timeout: on.contains(&RetryFailure::Timeout),
            };
        }
    }
    if let Some(secs) = entry.cache_secs {
        if !(1..=86_400).contains(&secs) {
            return Err(Error::Config(format!(
                "{source}: tools.{name}.cache_secs must be 1 to 86400, got {secs}"
            )));
        }
        settings.cache_ttl = Some(Duration::from_secs(secs));
    }
    settings.approval = entry.approval;
    Ok(settings)
}

/// A profile's own rules: a forced tool and the async tools are among its tools, limits
/// are above 0, and a model it names is not empty (`source` and `name` go into errors).
fn check_agent(name: &str, entry: &AgentEntry, source: &str) -> Result<()> {
    let models = [
        ("model", &entry.model),
        ("decision_model", &entry.decision_model),
        ("answer_model", &entry.answer_model),
    ];
    if let Some((key, _)) = models
        .iter()
        .find(|(_, m)| m.as_deref().is_some_and(|m| m.trim().is_empty()))
    {
        return Err(Error::Config(format!(
            "{source}: agent `{name}` has an empty {key}; leave it out for the default"
        )));
    }
    check_fallback(&entry.fallback, &format!("agent `{name}`"), source)?;
    if let ToolChoiceMode::Tool(forced) = &entry.tool_choice
        && !entry.tools.contains(forced)
    {
        return Err(Error::Config(format!(
            "{source}: agent `{name}` forces {forced}, which is not in its tools"
        )));
    }
    if let Some(stray) = entry.async_tools.iter().find(|t| !entry.tools.contains(t)) {
        return Err(Error::Config(format!(
            "{source}: agent `{name}` runs {stray} asynchronously, but it is not in its tools"
        )));
    }
    if entry.max_tokens == Some(0) {
        return Err(Error::Config(format!(
            "{source}: agent `{name}` has max_tokens = 0; leave it out for the default"
        )));
    }
    if entry.tool_choice == ToolChoiceMode::Required && entry.tools.is_empty() {
        return Err(Error::Config(format!(
            "{source}: agent `{name}` requires a tool call but has no tools"
        )));
    }
    Ok(())
}

/// Every handoff names another profile of the file, by a name a tool name can carry.
fn check_handoffs(agents: &BTreeMap<String, AgentProfile>, source: &str) -> Result<()> {
    for profile in agents.values() {
        for target in &profile.handoffs {
            if target == &profile.name || !agents.contains_key(target) {
                return Err(Error::Config(format!(
                    "{source}: agent `{}` hands off to `{target}`, which is not another agent of the file",
                    profile.name
                )));
            }
            if !target
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                || target.len() > 40
            {
                return Err(Error::Config(format!(
                    "{source}: agent `{target}` is a handoff target, so its name must be at most 40 letters, digits, `_` or `-`"
                )));
            }
        }
        // `mcp` stands for the external tools of the profile's MCP servers.
        let offers = |t: &ToolName| {
            profile.tools.contains(t) || (*t == ToolName::MCP && !profile.mcp_servers.is_empty())
        };
        if let Some(stray) = profile.approval.keys().find(|t| !offers(t)) {
            return Err(Error::Config(format!(
                "{source}: agent `{}` sets approval for {stray}, which is not in its tools",
                profile.name
            )));
        }
    }
    Ok(())
}

impl AgentCatalog {
    /// Parses and checks a catalog: the default exists, a forced tool is in the profile's
    /// list, timeouts and limits are positive. `source` names the file in errors.
    pub fn from_toml(text: &str, source: &str) -> Result<Self> {
        let file: AgentsFile =
            toml::from_str(text).map_err(|e| Error::Config(format!("{source}: {e}")))?;
        let mut ask_gpt_fallback = Vec::new();
        let mut tools = BTreeMap::new();
        for (name, mut entry) in file.tools {
            let fallback = std::mem::take(&mut entry.fallback);
            if !fallback.is_empty() {
                if name != ToolName::ASK_GPT {
                    return Err(Error::Config(format!(
                        "{source}: tools.{name}.fallback: only ask_gpt calls a model"
                    )));
                }
                check_fallback(&fallback, &format!("tools.{name}"), source)?;
                ask_gpt_fallback = fallback;
            }
            tools.insert(name, tool_settings(name, entry, source)?);
        }
        let mcp_servers = file
            .mcp_servers
            .into_iter()
            .map(|(name, entry)| crate::mcp::config::server(&name, entry, source))
            .collect::<Result<Vec<_>>>()?;
        let mut agents = BTreeMap::new();
        for (name, entry) in file.agents {
            check_agent(&name, &entry, source)?;
            if let Some(stray) = entry
                .mcp_servers
                .iter()
                .find(|s| !mcp_servers.iter().any(|server| &server.name == *s))
            {
                return Err(Error::Config(format!(
                    "{source}: agent `{name}` lists MCP server `{stray}`, which has no [mcp_servers.{stray}] section"
                )));
            }
            agents.insert(
                name.clone(),
                AgentProfile {
                    name,
                    description: entry.description,
                    system_prompt: entry.system_prompt.trim().to_owned(),
                    provider: entry.provider,
                    model: entry.model,
                    decision_model: entry.decision_model,
                    answer_model: entry.answer_model,
                    fallback: entry.fallback,
                    tools: entry.tools,
                    async_tools: entry.async_tools,
                    tool_choice: entry.tool_choice,
                    temperature: entry.temperature,
                    guard: entry.guard,
                    max_tokens: entry.max_tokens,
                    handoffs: entry.handoffs,
                    approval: entry.approval,
                    mcp_servers: entry.mcp_servers,
                },
            );
        }
        check_handoffs(&agents, source)?;
        if !agents.contains_key(&file.default_agent) {
            return Err(Error::Config(format!(
                "{source}: default_agent `{}` is not defined",
                file.default_agent
            )));
        }
        Ok(Self {
            default_agent: file.default_agent,
            agents,
            tools,
            mcp_servers,
            ask_gpt_fallback,
        })
    }

    /// Where `ask_gpt`'s calls go, in order, when the deployment's default model stays
    /// unavailable (`[tools.ask_gpt] fallback`; a provider left out is the deployment's).
    pub fn ask_gpt_fallback(&self, defaults: &ModelDefaults) -> std::sync::Arc<[ModelRef]> {
        resolve_fallback(&self.ask_gpt_fallback, defaults.provider, defaults)
    }

    /// Every provider some call of the deployment may go to: the default one, each
    /// profile's and its fallbacks', and `ask_gpt`'s fallbacks'.
    pub fn providers_used(&self, defaults: &ModelDefaults) -> Vec<Provider> {
        let mut used = vec![defaults.provider];
        used.extend(self.profiles().flat_map(|p| p.providers(defaults)));
        used.extend(self.ask_gpt_fallback(defaults).iter().map(|m| m.provider));
        used
    }

    /// The catalog compiled into the binary.
    pub fn built_in() -> Result<Self> {
        Self::from_toml(BUILT_IN, "config/agents.toml")
    }

    /// `AGENTS_FILE` if set, else the built-in catalog.
    pub fn from_env(env: &shared::config::Env) -> Result<Self> {
        match env.get("AGENTS_FILE") {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Error::Config(format!("AGENTS_FILE {path}: {e}")))?;
                Self::from_toml(&text, path)
            }
            None => Self::built_in(),
        }
    }

    /// The named profile, or the default one when `name` is `None`.
    pub fn profile(&self, name: Option<&str>) -> Option<&AgentProfile> {
        self.agents.get(name.unwrap_or(&self.default_agent))
    }

    /// The profiles' names, in alphabetical order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    /// Every profile, in the order of their names.
    pub fn profiles(&self) -> impl Iterator<Item = &AgentProfile> {
        self.agents.values()
    }

    /// True when the file sets `tool`'s timeout and limits itself.
    pub fn configures(&self, tool: ToolName) -> bool {
        self.tools.contains_key(&tool)
    }

    /// The tools the file sets timeouts and limits for (`[tools.<name>]`).
    pub fn configured_tools(&self) -> impl Iterator<Item = ToolName> + '_ {
        self.tools.keys().copied()
    }

    /// Every tool a profile offers or the file configures: each must be registered
    /// (checked where the registry is built).
    pub fn named_tools(&self) -> std::collections::BTreeSet<ToolName> {
        let offered = self
            .agents
            .values()
            .flat_map(|p| p.tools.iter().chain(&p.async_tools).copied());
        offered.chain(self.configured_tools()).collect()
    }

    /// The external MCP servers of the file (`[mcp_servers.<name>]`).
    pub fn mcp_servers(&self) -> &[McpServerConfig] {
        &self.mcp_servers
    }

    /// The catalog for a function that never offers external tools (mcp-server): nothing
    /// is discovered or connected at its cold start.
    pub fn without_mcp_servers(mut self) -> Self {
        self.mcp_servers.clear();
        for profile in self.agents.values_mut() {
            profile.mcp_servers.clear();
        }
        self
    }

    /// Settings of `tool`; the defaults when the file does not mention it.
    pub fn tool_settings(&self, tool: ToolName) -> ToolSettings {
        self.tools.get(&tool).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_catalog_loads() {
        let catalog = AgentCatalog::built_in().unwrap();
        let default = catalog.profile(None).unwrap();
        assert!(default.allows(ToolName::SEARCH_FLIGHTS));
        assert!(
            catalog.tool_settings(ToolName::SEARCH_FLIGHTS).timeout
                > catalog
                    .tool_settings(ToolName::SEARCH_KNOWLEDGE_BASE)
                    .timeout
        );
    }

    #[test]
    fn a_tool_may_declare_its_own_retries() {
        let catalog = |retry: &str| {
            AgentCatalog::from_toml(
                &format!(
                    "default_agent = \"a\"\n[tools.search_flights]\nretry = {retry}\n\
                     [agents.a]\nsystem_prompt = \"x\"\ntools = [\"search_flights\"]\n"
                ),
                "test",
            )
        };
        let settings = catalog("{ max_attempts = 5, base_secs = 2 }")
            .unwrap()
            .tool_settings(ToolName::SEARCH_FLIGHTS);
        assert_eq!(
            settings.retry,
            Some(crate::jobs::RetrySchedule {
                max_attempts: 5,
                base_delay: Duration::from_secs(2)
            })
        );
        let only_timeouts = catalog("{ max_attempts = 3, on = [\"timeout\"] }")
            .unwrap()
            .tool_settings(ToolName::SEARCH_FLIGHTS);
        assert!(
            only_timeouts
                .retry_on
                .covers(crate::pipeline::CallStatus::Timeout)
        );
        assert!(
            !only_timeouts
                .retry_on
                .covers(crate::pipeline::CallStatus::Failed)
        );
        assert!(catalog("{ max_attempts = 3, on = [\"everything\"] }").is_err());
        for bad in [
            "{ max_attempts = 0 }",
            "{ max_attempts = 11 }",
            "{ max_attempts = 2, base_secs = 901 }",
        ] {
            let err = catalog(bad).unwrap_err().to_string();
            assert!(err.contains("tools.search_flights.retry"), "{bad}: {err}");
        }
    }

    #[test]
    fn cache_times_are_bounded() {
        let catalog = |secs: u64| {
            AgentCatalog::from_toml(
                &format!(
                    "default_agent = \"a\"\n[tools.search_flights]\ncache_secs = {secs}\n\
                     [agents.a]\nsystem_prompt = \"x\"\ntools = [\"search_flights\"]\n"
                ),
                "test",
            )
        };
        let settings = catalog(600)
            .unwrap()
            .tool_settings(ToolName::SEARCH_FLIGHTS);
        assert_eq!(settings.cache_ttl, Some(Duration::from_secs(600)));
        for bad in [0, 86_401] {
            let err = catalog(bad).unwrap_err().to_string();
            assert!(
                err.contains("tools.search_flights.cache_secs"),
                "{bad}: {err}"
            );
        }
    }

    fn one_agent(settings: &str) -> Result<AgentCatalog> {
        AgentCatalog::from_toml(
            &format!("default_agent = \"a\"\n[agents.a]\nsystem_prompt = \"x\"\n{settings}\n"),
            "test",
        )
    }

    fn defaults(provider: Provider) -> ModelDefaults {
        ModelDefaults {
            provider,
            openai: "deployment".into(),
            bedrock: "bedrock-default".into(),
        }
    }

    fn step_models(settings: &str) -> StepModels {
        let catalog = one_agent(settings).unwrap();
        catalog
            .profile(None)
            .unwrap()
            .step_models(&defaults(Provider::OpenAi))
    }

    #[test]
    fn fallback_models_take_the_profiles_provider_and_the_providers_default_model() {
        let models = step_models(
            "model = \"m\"\nfallback = [{ provider = \"bedrock\" }, { model = \"mini\" }, { provider = \"bedrock\", model = \"b:1\" }]",
        );
        let refs: Vec<String> = models.fallback.iter().map(ToString::to_string).collect();
        assert_eq!(
            refs,
            ["bedrock:bedrock-default", "openai:mini", "bedrock:b:1"]
        );
        let catalog = one_agent("fallback = [{ provider = \"bedrock\" }]").unwrap();
        let providers: Vec<Provider> = catalog
            .profile(None)
            .unwrap()
            .providers(&defaults(Provider::OpenAi))
            .collect();
        assert_eq!(providers, [Provider::OpenAi, Provider::Bedrock]);
        for bad in ["fallback = [{}]", "fallback = [{ model = \" \" }]"] {
            let err = one_agent(bad).unwrap_err().to_string();
            assert!(err.contains("fallback model 1"), "{bad}: {err}");
        }
        let err = one_agent("fallback = [{ modle = \"x\" }]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("modle"), "{err}");
    }

    #[test]
    fn only_ask_gpt_may_name_fallback_models_among_the_tools() {
        let catalog = |tool: &str, fallback: &str| {
            AgentCatalog::from_toml(
                &format!(
                    "default_agent = \"a\"\n[tools.{tool}]\nfallback = {fallback}\n\
                     [agents.a]\nsystem_prompt = \"x\"\n"
                ),
                "test",
            )
        };
        let ok = catalog(
            "ask_gpt",
            "[{ provider = \"bedrock\" }, { model = \"mini\" }]",
        )
        .unwrap();
        let defaults = defaults(Provider::OpenAi);
        let refs: Vec<String> = ok
            .ask_gpt_fallback(&defaults)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(refs, ["bedrock:bedrock-default", "openai:mini"]);
        assert!(ok.providers_used(&defaults).contains(&Provider::Bedrock));
        let err = catalog("search_flights", "[{ model = \"m\" }]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("only ask_gpt calls a model"), "{err}");
        let err = catalog("ask_gpt", "[{}]").unwrap_err().to_string();
        assert!(err.contains("tools.ask_gpt has fallback model 1"), "{err}");
    }

    #[test]
    fn step_models_fall_back_to_the_profile_model_then_the_deployment() {
        let both = |decision: &str, answer: &str| StepModels {
            provider: Provider::OpenAi,
            decision: decision.into(),
            answer: answer.into(),
            fallback: Default::default(),
        };
        assert_eq!(step_models(""), both("deployment", "deployment"));
        assert!(!step_models("").split());
        assert_eq!(step_models("model = \"m\""), both("m", "m"));
        assert_eq!(
            step_models("decision_model = \"light\""),
            both("light", "deployment")
        );
        assert_eq!(
            step_models("model = \"m\"\nanswer_model = \"strong\""),
            both("m", "strong")
        );
        let split = step_models("decision_model = \"light\"\nanswer_model = \"strong\"");
        assert_eq!(split, both("light", "strong"));
        assert!(split.split());
        // The same model twice is one model: the turn runs as without the settings.
        assert!(!step_models("model = \"m\"\ndecision_model = \"m\"").split());
    }

    #[test]
    fn a_profile_names_its_provider_or_runs_on_the_deployments() {
        let models = |settings: &str, provider| {
            one_agent(settings)
                .unwrap()
                .profile(None)
                .unwrap()
                .step_models(&defaults(provider))
        };
        let on_bedrock = models("provider = \"bedrock\"", Provider::OpenAi);
        assert_eq!(
            (on_bedrock.provider, on_bedrock.answer.as_str()),
            (Provider::Bedrock, "bedrock-default")
        );
        let inherited = models("", Provider::Bedrock);
        assert_eq!(
            (inherited.provider, inherited.decision.as_str()),
            (Provider::Bedrock, "bedrock-default")
        );
        let own = models(
            "provider = \"openai\"\nmodel = \"gpt-4.1\"",
            Provider::Bedrock,
        );
        assert_eq!(
            (own.provider, own.answer.as_str()),
            (Provider::OpenAi, "gpt-4.1")
        );
        let err = one_agent("provider = \"vertex\"").unwrap_err().to_string();
        assert!(err.contains("vertex"), "{err}");
    }

    #[test]
    fn empty_model_names_are_refused_naming_the_profile_and_setting() {
        for key in ["model", "decision_model", "answer_model"] {
            let err = one_agent(&format!("{key} = \" \""))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("agent `a`") && err.contains(&format!("empty {key}")),
                "{key}: {err}"
            );
        }
    }

    #[test]
    fn forcing_applies_to_the_first_step_only() {
        assert_eq!(ToolChoiceMode::Required.for_step(0), ToolChoice::Required);
        assert_eq!(ToolChoiceMode::Required.for_step(1), ToolChoice::Auto);
        assert_eq!(ToolChoiceMode::None.for_step(3), ToolChoice::None);
        assert_eq!(
            ToolChoiceMode::Tool(ToolName::ASK_GPT).for_step(0),
            ToolChoice::Tool("ask_gpt".into())
        );
    }

    #[test]
    fn bad_catalogs_are_refused_with_the_reason() {
        let missing_default = r#"
            default_agent = "x"
            [agents.y]
            system_prompt = "hi"
        "#;
        let err = AgentCatalog::from_toml(missing_default, "t").unwrap_err();
        assert!(err.to_string().contains("default_agent"), "{err}");
        let forced_outside = r#"
            default_agent = "y"
            [agents.y]
            system_prompt = "hi"
            tools = ["search_knowledge_base"]
            tool_choice = "search_flights"
        "#;
        let err = AgentCatalog::from_toml(forced_outside, "t").unwrap_err();
        assert!(err.to_string().contains("forces"), "{err}");
        // A tool the deployment lacks is refused where the registry is built
        // (`runtime::tests::a_tool_the_configuration_names_must_exist`); a name no tool
        // could have is refused here.
        let bad_name = r#"
            default_agent = "y"
            [agents.y]
            system_prompt = "hi"
            tools = ["Book Hotel"]
        "#;
        assert!(AgentCatalog::from_toml(bad_name, "t").is_err());
        let async_outside = r#"
            default_agent = "y"
            [agents.y]
            system_prompt = "hi"
            tools = ["search_knowledge_base"]
            async_tools = ["ask_gpt"]
        "#;
        let err = AgentCatalog::from_toml(async_outside, "t").unwrap_err();
        assert!(err.to_string().contains("asynchronously"), "{err}");
    }
}
