//! Wiring of the tool runtime that chat-router, tool-worker and mcp-server share: the LLM
//! client, the stores, the registry with every tool and its settings, and the pipeline. One
//! place, so every function runs a tool call the same way.

use crate::guard::payload::StoredTexts;
use std::sync::Arc;
use std::time::Duration;

use crate::alerts::FareChecker;
use crate::guard::links::{DEFAULT_LINK_HOSTS, LinkPolicy};
use crate::jobs::{RetrySchedule, SqsJobQueue};
use crate::llm::{ClientSettings, LlmClients, LlmProvider, Provider, Providers};
use crate::mcp::McpTools;
use crate::pipeline::{JobScheduler, Pipeline};
use crate::profiles::{AgentCatalog, ModelDefaults};
use agent_tools::ask_gpt::AskGptConfig;
use agent_tools::flights;
use agent_tools::{DynTool, FunctionClient, FunctionUrls, SigV4Signer, ToolDeps, ToolRegistry};
use shared::Result;
use shared::alerts::{AlertStore, DynamoAlertStore};
use shared::cache::DynamoResultCache;
use shared::config::{Env, LedgerConfig, RetentionConfig, StorageConfig};
use shared::domain::tool_call::ToolName;
use shared::ledger::{DynamoLedger, ToolCallLedger};
use shared::limits::DynamoRateLimiter;
use shared::memory::{DynamoMemoryStore, MemoryStore};
use shared::metrics::Metrics;
use shared::secrets::{AwsSecretSource, SecretsCache};
use shared::support::{DynamoSupportRequests, SupportRequests};
use shared::upstream::RetryPolicy;
use shared::usage::{DynamoUsageStore, PriceTable, UsageStore};

/// The LLM providers, for chat turns and `ask_gpt`.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// The provider of `ask_gpt` and of every profile that names none (`LLM_PROVIDER`:
    /// `openai`, the default, or `bedrock`).
    pub provider: Provider,
    /// e.g. `https://api.openai.com/v1` (`OPENAI_BASE_URL`).
    pub base_url: String,
    /// Default OpenAI model of every profile that names none (`OPENAI_MODEL`).
    pub model: String,
    /// Default Bedrock model (or inference profile) of every profile that names none
    /// (`BEDROCK_MODEL_ID`).
    pub bedrock_model: String,
    /// End the system prompt of Bedrock requests with a prompt-cache point
    /// (`BEDROCK_PROMPT_CACHE`, default false: models without prompt caching refuse it).
    pub bedrock_prompt_cache: bool,
    /// Secret holding the API key (`OPENAI_API_KEY_SECRET`); unset for keyless local
    /// servers such as Ollama or vLLM.
    pub key_secret: Option<String>,
    /// Ask for token usage in the stream (`LLM_STREAM_USAGE`, default true).
    pub stream_usage: bool,
    /// Model prefixes that reject a custom temperature (`LLM_FIXED_TEMPERATURE_MODELS`).
    pub fixed_temperature_models: Vec<String>,
    /// `max_tokens` of every LLM call whose agent profile sets none (`LLM_MAX_TOKENS`,
    /// default 1024): no call goes out without a bound on what it may cost.
    pub max_tokens: u32,
    /// What each model's tokens cost, for usage records and the daily budget
    /// (`LLM_PRICES_JSON`, default the built-in table).
    pub prices: PriceTable,
    /// What one user's LLM calls may cost per UTC day, in USD (`USER_DAILY_BUDGET_USD`;
    /// unset: no budget). Each call is held against it before it runs.
    pub daily_budget_usd: Option<f64>,
}

/// The Bedrock model of a deployment that sets no `BEDROCK_MODEL_ID`: tools, streaming and
/// forced tool choice, at a low price.
pub const DEFAULT_BEDROCK_MODEL: &str = "amazon.nova-lite-v1:0";

impl LlmSettings {
    /// The provider and default models the turns start from.
    pub fn model_defaults(&self) -> ModelDefaults {
        ModelDefaults {
            provider: self.provider,
            openai: self.model.clone(),
            bedrock: self.bedrock_model.clone(),
        }
    }

    /// Why OpenAI's own API will refuse this deployment's calls, if it will: it is used (by
    /// `LLM_PROVIDER` or a profile) without a key, as on a stack deployed with
    /// `LlmProvider=bedrock`, which has no OpenAI key secret. Keyless servers elsewhere
    /// (Ollama, the local stand-in) are fine.
    pub fn missing_openai_key(&self) -> Option<String> {
        let openai = self.base_url.starts_with("https://api.openai.com");
        (openai && self.key_secret.is_none()).then(|| {
            "an agent profile or LLM_PROVIDER uses openai at api.openai.com, but \
             OPENAI_API_KEY_SECRET is empty: those calls will be refused. Deploy with \
             LlmProvider=openai and BedrockModelId to run profiles on both providers"
                .to_owned()
        })
    }

    /// The default provider's default model (`ask_gpt`'s).
    pub fn default_model(&self) -> &str {
        match self.provider {
            Provider::OpenAi => &self.model,
            Provider::Bedrock => &self.bedrock_model,
        }
    }
}

/// Everything a tool runner reads from the environment.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// The DynamoDB tables.
    pub storage: StorageConfig,
    /// The tool-call ledger's dedupe window, retention and queue deadline.
    pub ledger: LedgerConfig,
    /// How long chats and usage records are kept.
    pub retention: RetentionConfig,
    /// The LLM providers, models, prices and budget.
    pub llm: LlmSettings,
    /// Where the tool functions answer (`TOOL_FUNCTION_URLS`).
    pub function_urls: FunctionUrls,
    /// The tool queue (`TOOL_QUEUE_URL`); unset: no retries, background tools run inline.
    pub tool_queue_url: Option<String>,
    /// The retries of tools that set no schedule of their own (`TOOL_MAX_ATTEMPTS`,
    /// `TOOL_RETRY_BASE_SECS`).
    pub retry: RetrySchedule,
    /// Hosts answers and tool results may link to (`ANSWER_LINK_HOSTS`, default
    /// [`DEFAULT_LINK_HOSTS`]; `.example.com` allows its subdomains).
    pub link_hosts: Vec<String>,
    /// How long a call may wait for approval (`APPROVAL_WINDOW_SECS`, default a day).
    pub approval_window: Duration,
    /// How users reach support outside the chat (`SUPPORT_CONTACT`: an address, a page),
    /// which `contact_support` tells them; unset, it names the operator of the service.
    pub support_contact: Option<String>,
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl ToolsConfig {
    /// Reads the configuration from `env`: the table names and `TOOL_FUNCTION_URLS` are
    /// required, the rest is optional or has a default; an invalid value is an error.
    pub fn from_env(env: &Env) -> Result<Self> {
        let storage = StorageConfig::from_env(env)?;
        let ledger = LedgerConfig::from_env(env)?;
        let retention = RetentionConfig::from_env(env)?;
        let retry = RetrySchedule::from_env(env)?;
        let prices = match env.get("LLM_PRICES_JSON") {
            Some(json) => PriceTable::from_json(json)?,
            None => PriceTable::default(),
        };
        let mut r = env.reader();
        let url_hint = "where the tool functions answer, e.g. https://<tools api>/internal; set by template.yaml";
        let config = Self {
            storage,
            ledger,
            retention,
            llm: LlmSettings {
                provider: r.parse_or("LLM_PROVIDER", Provider::OpenAi),
                base_url: r
                    .or("OPENAI_BASE_URL", "https://api.openai.com/v1")
                    .trim_end_matches('/')
                    .to_owned(),
                model: r.or("OPENAI_MODEL", "gpt-4o-mini"),
                bedrock_model: r.or("BEDROCK_MODEL_ID", DEFAULT_BEDROCK_MODEL),
                bedrock_prompt_cache: r.parse_or("BEDROCK_PROMPT_CACHE", false),
                key_secret: r
                    .optional("OPENAI_API_KEY_SECRET")
                    .filter(|s| !s.is_empty()),
                stream_usage: r.parse_or("LLM_STREAM_USAGE", true),
                fixed_temperature_models: list(
                    &r.or("LLM_FIXED_TEMPERATURE_MODELS", "gpt-5,o1,o3,o4"),
                ),
                max_tokens: r.parse_or("LLM_MAX_TOKENS", 1024u32).clamp(16, 128_000),
                prices,
                daily_budget_usd: r.parse_optional::<f64>("USER_DAILY_BUDGET_USD"),
            },
            function_urls: r.required_parse("TOOL_FUNCTION_URLS", url_hint),
            tool_queue_url: r.optional("TOOL_QUEUE_URL").filter(|s| !s.is_empty()),
            retry,
            link_hosts: list(&r.or("ANSWER_LINK_HOSTS", DEFAULT_LINK_HOSTS)),
            approval_window: Duration::from_secs(
                r.parse_or("APPROVAL_WINDOW_SECS", 86_400u64)
                    .clamp(1, 7 * 86_400),
            ),
            support_contact: r
                .optional("SUPPORT_CONTACT")
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty()),
        };
        if config
            .llm
            .daily_budget_usd
            .is_some_and(|b| !(b.is_finite() && b >= 0.0))
        {
            return Err(shared::Error::Config(
                "USER_DAILY_BUDGET_USD must be a non-negative number of US dollars".into(),
            ));
        }
        r.finish(config)
    }

    /// Retries of calls to the other functions: a couple, quickly; the tool timeout bounds
    /// them. Longer outages are the tool queue's business.
    pub fn function_retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
            attempt_timeout: Duration::from_secs(30),
        }
    }

    /// Retries of LLM calls before the first byte.
    pub fn llm_retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(300),
            max_delay: Duration::from_secs(3),
            attempt_timeout: Duration::from_secs(60),
        }
    }
}

/// The clients a tool runtime is built from (once per container).
pub struct ToolClients {
    /// The DynamoDB client of the ledger, the stores, the result cache and the rate limiter.
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// The SQS client of the tool queue (and the tool-worker's dead-letter queue).
    pub sqs: aws_sdk_sqs::Client,
    /// The container's secrets (the OpenAI key, MCP servers' tokens).
    pub secrets: Arc<SecretsCache>,
    /// The HTTP client of the tool functions, the LLM providers and the MCP servers.
    pub http: reqwest::Client,
    /// Builds the model clients the deployment's profiles use (the `llm` crate's `Clients`;
    /// `NoClients` in a function that never calls a model).
    pub llm: Arc<dyn LlmClients>,
    /// Signs calls to the functions' IAM routes; `None` in local runs (no API Gateway).
    pub signer: Option<SigV4Signer>,
    /// Where tool, LLM and turn metrics go (EMF on stdout in Lambda).
    pub metrics: Metrics,
}

impl ToolClients {
    /// The clients of a Lambda container, from the SDK configuration and the environment
    /// (`SECRETS_CACHE_TTL_SECS`).
    pub async fn from_sdk(
        sdk: &aws_config::SdkConfig,
        env: &Env,
        llm: Arc<dyn LlmClients>,
        signer: Option<SigV4Signer>,
        metrics: Metrics,
    ) -> Result<Self> {
        let secrets = Arc::new(SecretsCache::new(
            Arc::new(AwsSecretSource::new(shared::aws::secrets_manager(sdk))),
            shared::config::secrets_cache_ttl(env)?,
        ));
        let http = shared::upstream::http_client()?;
        // Traces, when a collector is configured (`OTEL_EXPORTER_OTLP_ENDPOINT`).
        shared::telemetry::configure(env, &http, &secrets).await;
        Ok(Self {
            dynamodb: shared::aws::dynamodb(sdk),
            sqs: sqs_client(sdk),
            secrets,
            http,
            llm,
            signer,
            metrics,
        })
    }
}

/// The shared parts of a function that runs tools.
#[derive(Clone)]
pub struct ToolRuntime {
    /// The providers the deployment's default and its profiles use.
    pub llm: Arc<dyn LlmProvider>,
    /// LLM usage and cost, with the users' daily budget.
    pub usage: Arc<dyn UsageStore>,
    /// The tool-call ledger the pipeline records calls in.
    pub ledger: Arc<dyn ToolCallLedger>,
    /// Runs tool calls, in turns and from the tool queue.
    pub pipeline: Arc<Pipeline>,
    /// What users asked to be remembered (`remember`, `GET/DELETE /memory`).
    pub memory: Arc<dyn MemoryStore>,
    /// Users' fare alerts (`create_fare_alert`, `GET/DELETE /alerts`, the worker's checks).
    pub alerts: Arc<dyn AlertStore>,
    /// The flight searches of an alert's check, through the same routes as `search_flights`.
    pub fares: Arc<FareChecker>,
    /// The container's secrets; the output guard keeps their values out of answers.
    pub secrets: Arc<SecretsCache>,
    /// Where tool, LLM and turn metrics go.
    pub metrics: Metrics,
}

/// Seed 000 §8.2: `ask_gpt` answers directly from the model's own knowledge.
const ASK_GPT_PROMPT: &str = "You answer the user's question directly from your own knowledge, \
briefly and in the user's language. If facts are uncertain or may have changed, say so.";

/// The tool queue's client: its sends appear in the trace.
fn sqs_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(sdk)
            .interceptor(shared::sdk_spans::SdkSpans)
            .build(),
    )
}

/// The providers the deployment's default and its profiles use, and only those: a
/// Bedrock-only deployment has no OpenAI client (and needs no OpenAI key). The OpenAI
/// client reads its key from Secrets Manager when one is configured.
fn llm_client(
    config: &ToolsConfig,
    agents: &AgentCatalog,
    clients: &ToolClients,
) -> Result<Providers> {
    let used_providers = agents.providers_used(&config.llm.model_defaults());
    let used = |provider: Provider| used_providers.contains(&provider);
    let settings = ClientSettings {
        base_url: config.llm.base_url.clone(),
        stream_usage: config.llm.stream_usage,
        key_secret: config.llm.key_secret.clone(),
        bedrock_prompt_cache: config.llm.bedrock_prompt_cache,
        retry: config.llm_retry(),
    };
    let mut providers = Providers::new(config.llm.provider);
    if used(Provider::OpenAi)
        && let Some(problem) = config.llm.missing_openai_key()
    {
        // Not an error: the deployment's other profiles still answer.
        tracing::warn!("{problem}");
    }
    for provider in [Provider::OpenAi, Provider::Bedrock] {
        if used(provider) {
            let client =
                clients
                    .llm
                    .connect(provider, &settings, &clients.secrets, &clients.http)?;
            providers = providers.with(provider, client);
        }
    }
    Ok(providers)
}

/// The stores tools keep users' things in.
struct ToolStores {
    usage: Arc<dyn UsageStore>,
    memory: Arc<dyn MemoryStore>,
    alerts: Arc<dyn AlertStore>,
    support: Arc<dyn SupportRequests>,
}

impl ToolStores {
    /// The stores on the deployment's tables (`config.storage`).
    fn on_dynamodb(config: &ToolsConfig, dynamodb: &aws_sdk_dynamodb::Client) -> Self {
        let chats_table = &config.storage.chats_table;
        Self {
            usage: usage_store(config, dynamodb.clone()),
            memory: Arc::new(DynamoMemoryStore::new(
                dynamodb.clone(),
                chats_table.clone(),
            )),
            alerts: Arc::new(DynamoAlertStore::new(dynamodb.clone(), chats_table.clone())),
            support: Arc::new(DynamoSupportRequests::new(
                dynamodb.clone(),
                chats_table.clone(),
            )),
        }
    }
}

/// What the tools are built from (`agent_tools::build_all`, where a new tool is listed).
fn tool_deps(
    config: &ToolsConfig,
    agents: &AgentCatalog,
    functions: FunctionClient,
    llm: Arc<dyn LlmProvider>,
    stores: ToolStores,
    metrics: Metrics,
) -> ToolDeps {
    let ToolStores {
        usage,
        memory,
        alerts,
        support,
    } = stores;
    ToolDeps {
        functions,
        urls: config.function_urls.clone(),
        links: LinkPolicy::new(&config.link_hosts),
        llm,
        usage,
        memory,
        alerts,
        support,
        support_contact: config.support_contact.clone(),
        metrics,
        ask_gpt: AskGptConfig {
            provider: config.llm.provider,
            model: config.llm.default_model().to_owned(),
            fallback: agents.ask_gpt_fallback(&config.llm.model_defaults()),
            system_prompt: ASK_GPT_PROMPT.to_owned(),
            fixed_temperature_models: config.llm.fixed_temperature_models.clone(),
            max_tokens: config.llm.max_tokens,
        },
    }
}

/// The tools with their settings from the agent catalog; a cache on a tool whose results
/// depend on the user is a configuration error.
fn registry(agents: &AgentCatalog, tools: Vec<Arc<dyn DynTool>>) -> Result<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    let known = |name: &ToolName| {
        ToolName::BUILT_IN.contains(name) || tools.iter().any(|t| t.name() == *name)
    };
    if let Some(unknown) = agents.named_tools().into_iter().find(|n| !known(n)) {
        return Err(shared::Error::Config(format!(
            "config/agents.toml names the tool `{unknown}`, which this deployment does not have"
        )));
    }
    for tool in tools {
        let settings = agents.tool_settings(tool.name());
        if settings.cache_ttl.is_some() && tool.cache_scope().is_none() {
            return Err(shared::Error::Config(format!(
                "tools.{}.cache_secs: this tool's results depend on the user and are never shared",
                tool.name()
            )));
        }
        registry.register(tool, settings);
    }
    Ok(registry)
}

/// LLM usage and cost, with the retention and the users' daily budget.
fn usage_store(config: &ToolsConfig, dynamodb: aws_sdk_dynamodb::Client) -> Arc<dyn UsageStore> {
    Arc::new(
        DynamoUsageStore::new(
            dynamodb,
            config.storage.usage_table.clone(),
            config.llm.prices.clone(),
        )
        .with_retention(config.retention.usage)
        .with_daily_budget(config.llm.daily_budget_usd),
    )
}

/// What the output guard checks stored tool texts against: the profiles' prompts, the
/// container's secrets, the hosts links may point to.
fn stored_texts(
    agents: &AgentCatalog,
    secrets: Arc<SecretsCache>,
    config: &ToolsConfig,
) -> StoredTexts {
    StoredTexts::new(prompt_parts(agents), secrets, config.link_hosts.clone())
}

/// The fixed texts of every profile's system messages: what the echo check indexes.
pub fn prompt_parts(agents: &AgentCatalog) -> Vec<String> {
    agents
        .profiles()
        .flat_map(crate::system_prompt::system_prompt_parts)
        .map(str::to_owned)
        .collect()
}

/// The external MCP servers' tools, their discovery started (at cold start, so the first
/// turn finds them listed; a turn waits for a discovery under way only up to its bound).
fn external_tools(
    agents: &AgentCatalog,
    http: reqwest::Client,
    secrets: Arc<SecretsCache>,
) -> Option<Arc<McpTools>> {
    if agents.mcp_servers().is_empty() {
        return None;
    }
    let external = Arc::new(McpTools::new(agents.mcp_servers(), http, secrets));
    if tokio::runtime::Handle::try_current().is_ok() {
        external.start();
    }
    Some(external)
}

impl ToolRuntime {
    /// Builds the runtime from `config`, the profiles and tool settings of `agents`, and
    /// `clients`; at most `max_parallel` calls of a step run. Starts the external MCP
    /// servers' discovery when a Tokio runtime is running.
    pub fn new(
        config: &ToolsConfig,
        agents: &AgentCatalog,
        clients: ToolClients,
        max_parallel: usize,
    ) -> Result<Self> {
        let llm: Arc<dyn LlmProvider> = Arc::new(llm_client(config, agents, &clients)?);
        let secrets = clients.secrets.clone();
        let http = clients.http.clone();
        let storage = &config.storage;
        let ledger: Arc<dyn ToolCallLedger> = Arc::new(DynamoLedger::new(
            clients.dynamodb.clone(),
            storage.tool_calls_table.clone(),
            config.ledger,
        ));
        let stores = ToolStores::on_dynamodb(config, &clients.dynamodb);
        let (usage, memory, alerts) = (
            stores.usage.clone(),
            stores.memory.clone(),
            stores.alerts.clone(),
        );
        let cache = Arc::new(DynamoResultCache::new(
            clients.dynamodb.clone(),
            storage.tool_calls_table.clone(),
        ));
        let limiter = Arc::new(DynamoRateLimiter::new(
            clients.dynamodb,
            storage.rate_limits_table.clone(),
        ));
        let functions = FunctionClient::new(clients.http, config.function_retry(), clients.signer);
        let urls = &config.function_urls;
        let fares = Arc::new(FareChecker::new(
            functions.clone(),
            urls.url(flights::AWARD_FUNCTION, flights::AWARD_ROUTE)?,
            urls.url(flights::CASH_FUNCTION, flights::CASH_ROUTE)?,
        ));
        let deps = tool_deps(
            config,
            agents,
            functions,
            llm.clone(),
            stores,
            clients.metrics.clone(),
        );
        let tools = agent_tools::build_all(&deps)?;
        let mut registry = registry(agents, tools)?;
        if let Some(external) = external_tools(agents, http, secrets.clone()) {
            registry.with_external(external);
        }
        let jobs = config.tool_queue_url.as_ref().map(|url| JobScheduler {
            queue: Arc::new(SqsJobQueue::new(clients.sqs, url.clone())),
            retry: config.retry,
        });
        let stored_texts = stored_texts(agents, secrets.clone(), config);
        let pipeline = Arc::new(Pipeline {
            registry: Arc::new(registry),
            ledger: ledger.clone(),
            limiter,
            max_parallel,
            jobs,
            cache: Some(cache),
            approval_window: config.approval_window,
            metrics: clients.metrics.clone(),
            stored_texts,
        });
        Ok(Self {
            llm,
            usage,
            ledger,
            pipeline,
            memory,
            alerts,
            fares,
            secrets,
            metrics: clients.metrics,
        })
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use shared::secrets::{SecretSource, SecretString};

    use super::*;

    struct NoSecrets;

    #[async_trait]
    impl SecretSource for NoSecrets {
        async fn fetch(&self, name: &str) -> Result<SecretString> {
            Err(shared::Error::Secret {
                name: name.into(),
                message: "none in this test".into(),
            })
        }
        async fn store(&self, _: &str, _: &str) -> Result<()> {
            Ok(())
        }
    }

    /// A runtime with clients that are never called.
    fn runtime(catalog: &AgentCatalog) -> ToolRuntime {
        try_runtime(catalog).unwrap_or_else(|e| panic!("runtime: {e}"))
    }

    fn try_runtime(catalog: &AgentCatalog) -> Result<ToolRuntime> {
        let (config, clients) = parts(&[]);
        ToolRuntime::new(&config, catalog, clients, 5)
    }

    /// The required variables and `vars`.
    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_pairs(
            [
                "TOOL_CALLS_TABLE",
                "CHATS_TABLE",
                "USAGE_TABLE",
                "RATE_LIMITS_TABLE",
                "KB_TABLE",
            ]
            .map(|k| (k, "t"))
            .into_iter()
            .chain([("TOOL_FUNCTION_URLS", "http://127.0.0.1:9")])
            .chain(vars.iter().copied()),
        )
    }

    /// A configuration from the required variables and `vars`, and clients never called.
    fn parts(vars: &[(&str, &str)]) -> (ToolsConfig, ToolClients) {
        let env = env(vars);
        let config = ToolsConfig::from_env(&env).unwrap_or_else(|e| panic!("config: {e}"));
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .build();
        let clients = ToolClients {
            dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
            sqs: aws_sdk_sqs::Client::new(&sdk),
            secrets: Arc::new(SecretsCache::new(
                Arc::new(NoSecrets),
                Duration::from_secs(1),
            )),
            http: reqwest::Client::new(),
            llm: Arc::new(llm::Clients::from_sdk(&sdk)),
            signer: None,
            metrics: Metrics::discard(),
        };
        (config, clients)
    }

    /// A deployment on Bedrock whose profiles name no other provider builds no OpenAI
    /// client, so it needs no OpenAI setting or key; a profile on OpenAI adds one.
    #[test]
    fn only_the_providers_in_use_are_built() {
        let on_bedrock = AgentCatalog::from_toml(
            "default_agent = \"a\"\n[agents.a]\nsystem_prompt = \"x\"\n",
            "test",
        )
        .unwrap_or_else(|e| panic!("agents: {e}"));
        let (config, clients) = parts(&[("LLM_PROVIDER", "bedrock")]);
        assert_eq!(config.llm.default_model(), DEFAULT_BEDROCK_MODEL);
        let providers =
            llm_client(&config, &on_bedrock, &clients).unwrap_or_else(|e| panic!("providers: {e}"));
        assert!(providers.has(Provider::Bedrock) && !providers.has(Provider::OpenAi));

        let mixed = AgentCatalog::from_toml(
            "default_agent = \"a\"\n[agents.a]\nsystem_prompt = \"x\"\n\
             [agents.b]\nsystem_prompt = \"y\"\nprovider = \"openai\"\n",
            "test",
        )
        .unwrap_or_else(|e| panic!("agents: {e}"));
        let providers =
            llm_client(&config, &mixed, &clients).unwrap_or_else(|e| panic!("providers: {e}"));
        assert!(providers.has(Provider::Bedrock) && providers.has(Provider::OpenAi));

        // The default deployment is OpenAI-only; Bedrock without a client is refused.
        let (config, mut clients) = parts(&[]);
        let providers =
            llm_client(&config, &on_bedrock, &clients).unwrap_or_else(|e| panic!("providers: {e}"));
        assert!(!providers.has(Provider::Bedrock) && providers.has(Provider::OpenAi));
        clients.llm = Arc::new(llm::Clients::new());
        let (config, _) = parts(&[("LLM_PROVIDER", "bedrock")]);
        assert!(llm_client(&config, &on_bedrock, &clients).is_err());
    }

    /// OpenAI's own API without a key (a Bedrock stack's profile on openai) is named at
    /// start; a keyed deployment or a keyless server of one's own is not.
    #[test]
    fn openai_without_a_key_is_named_only_for_openais_own_api() {
        let settings = |vars: &[(&str, &str)]| {
            ToolsConfig::from_env(&env(vars))
                .unwrap_or_else(|e| panic!("config: {e}"))
                .llm
        };
        let bedrock_stack = settings(&[("LLM_PROVIDER", "bedrock")]);
        assert!(
            bedrock_stack
                .missing_openai_key()
                .is_some_and(|m| m.contains("OPENAI_API_KEY_SECRET"))
        );
        let keyed = settings(&[("OPENAI_API_KEY_SECRET", "stack/openai-api-key")]);
        assert_eq!(keyed.missing_openai_key(), None);
        let ollama = settings(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]);
        assert_eq!(ollama.missing_openai_key(), None);
    }

    #[test]
    fn an_unknown_provider_is_a_configuration_error() {
        let err = ToolsConfig::from_env(&env(&[("LLM_PROVIDER", "vertex")]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("LLM_PROVIDER=\"vertex\" is invalid"), "{err}");
    }

    /// A result that depends on the user must never be served to another one.
    #[test]
    fn caching_a_users_own_tool_is_refused() {
        let catalog = AgentCatalog::from_toml(
            "default_agent = \"a\"\n[tools.remember]\ncache_secs = 60\n\
             [agents.a]\nsystem_prompt = \"x\"\ntools = [\"remember\"]\n",
            "test",
        )
        .unwrap_or_else(|e| panic!("agents: {e}"));
        let err = try_runtime(&catalog).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("tools.remember.cache_secs")),
            "{err:?}"
        );
    }

    #[test]
    fn a_tool_the_configuration_names_must_exist() {
        let catalog = AgentCatalog::from_toml(
            "default_agent = \"a\"\n[agents.a]\nsystem_prompt = \"x\"\ntools = [\"remember\", \"book_hotel\"]\n",
            "test",
        )
        .unwrap_or_else(|e| panic!("agents: {e}"));
        let err = try_runtime(&catalog).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("`book_hotel`")),
            "{err:?}"
        );
    }

    /// A registered tool must be given its limits in `config/agents.toml` and offered by a
    /// profile, or it could never be used.
    #[test]
    fn every_declared_tool_is_registered_configured_and_offered() {
        let catalog = AgentCatalog::built_in().unwrap_or_else(|e| panic!("agents: {e}"));
        let runtime = runtime(&catalog);
        let registry = &runtime.pipeline.registry;
        for tool in registry.names() {
            let Some(registered) = registry.get(tool) else {
                panic!("{tool} is listed but not registered");
            };
            // Validators compile at a tool's first call; a schema that cannot would fail
            // every call of the tool, so it fails here.
            if let Err(e) = registered.tool.schema().validator() {
                panic!("{tool}: {e}");
            }
            // Each compiles as Draft 7: a first call spares building 2020-12's validators.
            assert_eq!(
                registered.tool.schema().dialect(),
                agent_tools::Dialect::Draft7,
                "{tool}"
            );
            assert!(
                catalog.configures(tool),
                "{tool} has no [tools.{tool}] section in config/agents.toml"
            );
            assert!(
                catalog.profiles().any(|p| p.tools.contains(&tool)),
                "no profile in config/agents.toml offers {tool}"
            );
        }
    }
}
