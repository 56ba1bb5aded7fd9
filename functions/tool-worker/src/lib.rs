//! tool-worker: consumes the SQS tool queue. Each message names a queued attempt of a tool
//! call (a retry after a passing failure, or a background call); the worker runs it through
//! the same pipeline and ledger as chat-router and reports per message, so one bad message
//! never holds up the rest of its batch.
//!
//! `main.rs` builds [`Deps`] once per container and hands every batch to
//! [`handler::handle`]; tests call the same handler with events built from real queue
//! messages.

pub mod handler;

use std::sync::Arc;

use agent::jobs::DeadLetters;
use agent::pipeline::Pipeline;
use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolRuntime, ToolsConfig};
use shared::chats::{ChatStore, DynamoChatStore};
use shared::config::Env;
use shared::{Error, Result};

/// The worker's configuration: the shared tool settings plus the dead-letter queue.
#[derive(Debug, Clone)]
pub struct Config {
    pub tools: ToolsConfig,
    /// Where jobs that end failed are parked for inspection (`TOOL_DLQ_URL`).
    pub dead_letter_queue_url: String,
}

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let tools = ToolsConfig::from_env(env)?;
        let mut r = env.reader();
        let dead_letter_queue_url = r.required(
            "TOOL_DLQ_URL",
            "the tool queue's dead-letter queue; set by template.yaml",
        );
        let config = r.finish(Self {
            tools,
            dead_letter_queue_url,
        })?;
        if config.tools.tool_queue_url.is_none() {
            return Err(Error::Config(
                "TOOL_QUEUE_URL: the tool queue, for scheduling further retries; set by template.yaml"
                    .into(),
            ));
        }
        Ok(config)
    }
}

/// Everything a batch needs, built once per container.
#[derive(Clone)]
pub struct Deps {
    pub pipeline: Arc<Pipeline>,
    pub chats: Arc<dyn ChatStore>,
    pub dead_letters: DeadLetters,
}

impl Deps {
    pub fn new(config: Config, agents: &AgentCatalog, clients: ToolClients) -> Result<Self> {
        let chats = Arc::new(DynamoChatStore::new(
            clients.dynamodb.clone(),
            config.tools.storage.chats_table.clone(),
        ));
        let dead_letters = DeadLetters::new(clients.sqs.clone(), config.dead_letter_queue_url);
        // One job runs one call: no step-level parallelism to bound.
        let runtime = ToolRuntime::new(&config.tools, agents, clients, 1)?;
        Ok(Self {
            pipeline: runtime.pipeline,
            chats,
            dead_letters,
        })
    }
}
