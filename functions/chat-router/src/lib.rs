//! chat-router: one chat turn per `POST /chat`, streamed as Server-Sent Events, in which the
//! LLM may call tools; plus the tool-call audit log of a chat.
//!
//! This crate is HTTP, SSE and wiring: the turn itself is the `agent` crate's
//! ([`agent::Agent`]). `main.rs` builds [`Deps`] once per container and hands every request
//! to [`handler::handle`]; tests call the same handler against DynamoDB Local and fakes.

mod chat;
mod chats;
pub mod config;
pub mod decide;
pub mod events;
pub mod handler;
mod respond;
mod routes;
mod takeover;
pub mod turn_log;
pub mod validate;

use std::sync::Arc;

use agent::Agent;
use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolRuntime};
use agent::tools::SigV4Signer;
use shared::Result;
use shared::alerts::AlertStore;
use shared::chats::{ChatStore, DynamoChatStore};
use shared::config::Env;
use shared::http::auth::{AuthConfig, Authenticator};
use shared::ledger::ToolCallLedger;
use shared::memory::MemoryStore;
use shared::metrics::Metrics;
use shared::turns::{DynamoTurnStore, TurnStore};
use shared::usage::UsageStore;

pub use config::Config;

/// Everything a request needs, built once per container.
#[derive(Clone)]
pub struct Deps {
    pub config: Arc<Config>,
    pub auth: Arc<Authenticator>,
    /// For the audit routes' owner checks; turns reach the chats through `agent`.
    pub chats: Arc<dyn ChatStore>,
    pub ledger: Arc<dyn ToolCallLedger>,
    pub usage: Arc<dyn UsageStore>,
    pub agents: Arc<AgentCatalog>,
    pub agent: Arc<Agent>,
    /// What users asked to be remembered (`GET/DELETE /memory`).
    pub memory: Arc<dyn MemoryStore>,
    /// Turn records and event logs (resume, resend, cancel).
    pub turns: Arc<dyn TurnStore>,
    /// Users' fare alerts (`GET /alerts`, `DELETE /alerts/{id}`).
    pub alerts: Arc<dyn AlertStore>,
}

impl Deps {
    /// The clients of a Lambda container, from the environment. Tool calls go to the
    /// IAM-authorised routes, signed with this function's role; the user's token stays here.
    pub async fn from_env(env: &Env) -> Result<Self> {
        let config = Config::from_env(env)?;
        let agents = AgentCatalog::from_env(env)?;
        // Half of init's work, on a second thread meanwhile.
        let guards = agent::guard::GuardsBuilding::start(&agents);
        let auth = AuthConfig::from_env(env)?;
        let sdk = shared::aws::sdk_config().await;
        let clients = ToolClients::from_sdk(
            &sdk,
            env,
            Arc::new(llm::Clients::from_sdk(&sdk)),
            SigV4Signer::from_sdk_config(&sdk),
            Metrics::stdout("chat-router", env),
        )
        .await?;
        let deps = Self::new(config, agents, auth, clients)?;
        guards.finish();
        deps.agent.warm();
        Ok(deps)
    }

    /// Wires the stores, the LLM client, the tool registry, the tool queue and the runtime.
    pub fn new(
        config: Config,
        agents: AgentCatalog,
        auth: AuthConfig,
        clients: ToolClients,
    ) -> Result<Self> {
        let chats: Arc<dyn ChatStore> = Arc::new(
            DynamoChatStore::new(
                clients.dynamodb.clone(),
                config.tools.storage.chats_table.clone(),
            )
            .with_retention(config.tools.retention.chats),
        );
        let turns: Arc<dyn TurnStore> = Arc::new(DynamoTurnStore::new(
            clients.dynamodb.clone(),
            config.tools.storage.chats_table.clone(),
        ));
        let auth = Arc::new(
            Authenticator::new(auth, clients.secrets.clone(), clients.http.clone())
                .with_metrics(clients.metrics.clone()),
        );
        let runtime = ToolRuntime::new(&config.tools, &agents, clients, config.max_parallel_tools)?;
        let agents = Arc::new(agents);
        let agent = Agent::new(
            &runtime,
            chats.clone(),
            agents.clone(),
            config.turn_settings(),
        );
        Ok(Self {
            config: Arc::new(config),
            auth,
            chats,
            ledger: runtime.ledger,
            usage: runtime.usage,
            agents,
            agent: Arc::new(agent),
            memory: runtime.memory,
            turns,
            alerts: runtime.alerts,
        })
    }
}
