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
use shared::http::auth::{AuthConfig, Authenticator};
use shared::ledger::ToolCallLedger;
use shared::llm::LlmProvider;
use shared::tools::agents::AgentCatalog;
use shared::tools::pipeline::Pipeline;
use shared::tools::setup::{ToolClients, ToolRuntime};
use shared::usage::UsageStore;

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
    /// Wires the stores, the LLM client, the tool registry and the tool queue.
    pub fn new(
        config: Config,
        agents: AgentCatalog,
        auth: AuthConfig,
        clients: ToolClients,
    ) -> Result<Self> {
        let chats = Arc::new(DynamoChatStore::new(
            clients.dynamodb.clone(),
            config.tools.storage.chats_table.clone(),
        ));
        let auth = Arc::new(Authenticator::new(
            auth,
            clients.secrets.clone(),
            clients.http.clone(),
        ));
        let runtime = ToolRuntime::new(&config.tools, &agents, clients, config.max_parallel_tools)?;
        Ok(Self {
            config: Arc::new(config),
            auth,
            chats,
            ledger: runtime.ledger,
            usage: runtime.usage,
            llm: runtime.llm,
            pipeline: runtime.pipeline,
            agents: Arc::new(agents),
        })
    }
}
