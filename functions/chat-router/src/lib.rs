//! chat-router: one chat turn per `POST /chat`, streamed as Server-Sent Events, in which the
//! LLM may call tools; plus the tool-call audit log of a chat.
//!
//! `main.rs` builds [`Deps`] once per container and hands every request to
//! [`handler::handle`]; tests call the same handler against DynamoDB Local and fakes.

pub mod config;
pub mod events;
pub mod handler;
pub mod history;
pub mod turn;

use std::sync::Arc;

use shared::Result;
use shared::chats::{ChatStore, DynamoChatStore};
use shared::domain::tool_call::ToolName;
use shared::http::auth::{AuthConfig, Authenticator};
use shared::ledger::{DynamoLedger, ToolCallLedger};
use shared::limits::DynamoRateLimiter;
use shared::llm::{ApiKey, LlmProvider, OpenAiClient, OpenAiConfig};
use shared::secrets::SecretsCache;
use shared::tools::agents::AgentCatalog;
use shared::tools::ask_gpt::{AskGptConfig, AskGptTool};
use shared::tools::flights::{FlightSearchConfig, SearchFlightsTool};
use shared::tools::knowledge_base::{KnowledgeBaseConfig, SearchKnowledgeBaseTool};
use shared::tools::pipeline::Pipeline;
use shared::tools::{Tool, ToolRegistry};
use shared::usage::{DynamoUsageStore, UsageStore};

pub use config::Config;

/// Everything a request needs, built once per container.
#[derive(Clone)]
pub struct Deps {
    pub config: Arc<Config>,
    pub auth: Arc<Authenticator>,
    pub chats: Arc<dyn ChatStore>,
    pub ledger: Arc<dyn ToolCallLedger>,
    pub usage: Arc<dyn UsageStore>,
    pub llm: Arc<dyn LlmProvider>,
    pub pipeline: Arc<Pipeline>,
    pub agents: Arc<AgentCatalog>,
}

impl Deps {
    /// Wires the stores, the LLM client and the tool registry from configuration.
    pub fn new(
        config: Config,
        agents: AgentCatalog,
        auth: AuthConfig,
        dynamodb: aws_sdk_dynamodb::Client,
        secrets: Arc<SecretsCache>,
        http: reqwest::Client,
    ) -> Result<Self> {
        let key = match &config.openai_key_secret {
            Some(name) => ApiKey::Secret {
                cache: secrets.clone(),
                name: name.clone(),
            },
            None => ApiKey::None,
        };
        let llm: Arc<dyn LlmProvider> = Arc::new(OpenAiClient::new(
            http.clone(),
            OpenAiConfig {
                base_url: config.openai_base_url.clone(),
                stream_usage: config.stream_usage,
                retry: config.llm_retry(),
            },
            key,
        ));
        let storage = &config.storage;
        let ledger: Arc<dyn ToolCallLedger> = Arc::new(DynamoLedger::new(
            dynamodb.clone(),
            storage.tool_calls_table.clone(),
            config.ledger,
        ));
        let usage: Arc<dyn UsageStore> = Arc::new(DynamoUsageStore::new(
            dynamodb.clone(),
            storage.usage_table.clone(),
            config.prices.clone(),
        ));
        let chats = Arc::new(DynamoChatStore::new(
            dynamodb.clone(),
            storage.chats_table.clone(),
        ));
        let limiter = Arc::new(DynamoRateLimiter::new(
            dynamodb,
            storage.rate_limits_table.clone(),
        ));
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(SearchFlightsTool::new(
                http.clone(),
                FlightSearchConfig {
                    award_url: config.award_search_url.clone(),
                    cash_url: config.cash_search_url.clone(),
                    retry: config.tool_retry(),
                },
            )?),
            Arc::new(SearchKnowledgeBaseTool::new(
                http.clone(),
                KnowledgeBaseConfig {
                    search_url: config.kb_search_url.clone(),
                    retry: config.tool_retry(),
                },
            )?),
            Arc::new(AskGptTool::new(
                llm.clone(),
                usage.clone(),
                AskGptConfig {
                    model: config.openai_model.clone(),
                    system_prompt: ASK_GPT_PROMPT.to_owned(),
                    fixed_temperature_models: config.fixed_temperature_models.clone(),
                },
            )?),
        ];
        let mut registry = ToolRegistry::new();
        for tool in tools {
            let settings = agents.tool_settings(tool.name());
            registry.register(tool, settings);
        }
        debug_assert!(ToolName::ALL.iter().all(|t| registry.get(*t).is_some()));
        let pipeline = Arc::new(Pipeline {
            registry: Arc::new(registry),
            ledger: ledger.clone(),
            limiter,
            max_parallel: config.max_parallel_tools,
        });
        let auth = Arc::new(Authenticator::new(auth, secrets, http));
        Ok(Self {
            config: Arc::new(config),
            auth,
            chats,
            ledger,
            usage,
            llm,
            pipeline,
            agents: Arc::new(agents),
        })
    }
}

/// Seed 000 §8.2: `ask_gpt` answers directly from the model's own knowledge.
const ASK_GPT_PROMPT: &str = "You answer the user's question directly from your own knowledge, \
briefly and in the user's language. If facts are uncertain or may have changed, say so.";
