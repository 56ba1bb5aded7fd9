//! tool-worker: consumes the SQS tool queue, and checks fare alerts on a schedule
//! ([`alerts`]). Each message names a queued attempt of a tool
//! call (a retry after a passing failure, or a background call); the worker runs it through
//! the same pipeline and ledger as chat-router and reports per message, so one bad message
//! never holds up the rest of its batch.
//!
//! `main.rs` builds [`Deps`] once per container and hands every invocation to
//! [`event::handle_event`]: an SQS batch goes to [`handler::handle`], a scheduled event to
//! [`alerts::check_due`]. Tests call the same handlers with events built from real queue
//! messages.

pub mod alerts;
pub mod event;
pub mod handler;

use std::sync::Arc;

use agent::alerts::FareChecker;
use agent::jobs::DeadLetters;
use agent::pipeline::Pipeline;
use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolRuntime, ToolsConfig};
use shared::alerts::AlertStore;
use shared::chats::{ChatStore, DynamoChatStore};
use shared::clock::{Clock, SystemClock};
use shared::config::Env;
use shared::{Error, Result};

/// The worker's configuration: the shared tool settings plus the dead-letter queue.
#[derive(Debug, Clone)]
pub struct Config {
    pub tools: ToolsConfig,
    /// Where jobs that end failed are parked for inspection (`TOOL_DLQ_URL`).
    pub dead_letter_queue_url: String,
    /// The worker function's own timeout (`WORKER_TIMEOUT_SECS`, set by the template from
    /// the same parameter as the function's `Timeout`): every tool must finish inside it.
    pub function_timeout: std::time::Duration,
    /// Deliveries of a message before the queue's redrive policy moves it to the dead-letter
    /// queue (`TOOL_MAX_RECEIVE_COUNT`, set from the template's `ToolMaxReceiveCount`): on
    /// the last one, a job that still cannot be handled fails its call with the reason.
    pub max_receive_count: u32,
    /// Time between two checks of a fare alert (`ALERT_CHECK_MINUTES`, set by the template
    /// from the same parameter as the schedule's rate).
    pub alert_check_interval: std::time::Duration,
}

/// Default `ALERT_CHECK_MINUTES`, the template's `AlertCheckMinutes`.
pub const DEFAULT_ALERT_CHECK_MINUTES: u64 = 60;

/// Default `TOOL_MAX_RECEIVE_COUNT`, the template's `ToolMaxReceiveCount`.
pub const DEFAULT_MAX_RECEIVE_COUNT: u32 = 5;

/// Time a job needs besides its tool: reading and writing the ledger, the session-state
/// patch, scheduling a retry.
pub const JOB_OVERHEAD: std::time::Duration = std::time::Duration::from_secs(3);

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let tools = ToolsConfig::from_env(env)?;
        let mut r = env.reader();
        let dead_letter_queue_url = r.required(
            "TOOL_DLQ_URL",
            "the tool queue's dead-letter queue; set by template.yaml",
        );
        let function_timeout =
            std::time::Duration::from_secs(r.parse_or("WORKER_TIMEOUT_SECS", 30u64));
        let max_receive_count = r
            .parse_or("TOOL_MAX_RECEIVE_COUNT", DEFAULT_MAX_RECEIVE_COUNT)
            .max(1);
        let alert_minutes = r
            .parse_or("ALERT_CHECK_MINUTES", DEFAULT_ALERT_CHECK_MINUTES)
            .max(1);
        let config = r.finish(Self {
            tools,
            dead_letter_queue_url,
            function_timeout,
            max_receive_count,
            alert_check_interval: std::time::Duration::from_secs(alert_minutes * 60),
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
    pub max_receive_count: u32,
    /// Fare alerts and the searches that check them (scheduled runs).
    pub alerts: Arc<dyn AlertStore>,
    pub fares: Arc<FareChecker>,
    pub alert_check_interval: std::time::Duration,
    /// The function's own timeout: a scheduled run stops starting checks before it.
    pub function_timeout: std::time::Duration,
    /// What "today" and a check's next time are decided by (tests move it).
    pub clock: Arc<dyn Clock>,
}

impl Deps {
    /// The clients of a Lambda container, from the environment. No user token here: calls
    /// to the IAM routes are signed with the function's role.
    pub async fn from_env(env: &Env) -> Result<Self> {
        let config = Config::from_env(env)?;
        let agents = AgentCatalog::from_env(env)?;
        let sdk = shared::aws::sdk_config().await;
        let clients = ToolClients::from_sdk(
            &sdk,
            env,
            Arc::new(llm::Clients::from_sdk(&sdk)),
            agent::tools::SigV4Signer::from_sdk_config(&sdk),
            shared::metrics::Metrics::stdout("tool-worker", env),
        )
        .await?;
        let deps = Self::new(config, &agents, clients)?;
        // Every job's result is scanned: the detector is built at init, not by the first job.
        agent::guard::detect::warm();
        Ok(deps)
    }

    pub fn new(config: Config, agents: &AgentCatalog, clients: ToolClients) -> Result<Self> {
        check_tool_timeouts(agents, config.function_timeout)?;
        let chats = Arc::new(
            DynamoChatStore::new(
                clients.dynamodb.clone(),
                config.tools.storage.chats_table.clone(),
            )
            .with_retention(config.tools.retention.chats),
        );
        let dead_letters = DeadLetters::new(clients.sqs.clone(), config.dead_letter_queue_url);
        let max_receive_count = config.max_receive_count;
        // One job runs one call: no step-level parallelism to bound.
        let runtime = ToolRuntime::new(&config.tools, agents, clients, 1)?;
        Ok(Self {
            pipeline: runtime.pipeline,
            chats,
            dead_letters,
            max_receive_count,
            alerts: runtime.alerts,
            fares: runtime.fares,
            alert_check_interval: config.alert_check_interval,
            function_timeout: config.function_timeout,
            clock: Arc::new(SystemClock),
        })
    }
}

/// A tool that cannot finish inside the worker's own timeout would be killed mid-job and
/// leave its call `running`: a configuration error, refused at start-up.
pub fn check_tool_timeouts(
    agents: &AgentCatalog,
    function_timeout: std::time::Duration,
) -> Result<()> {
    let too_long: Vec<String> = agents
        .configured_tools()
        .map(|tool| (tool, agents.tool_settings(tool).timeout))
        .filter(|(_, timeout)| *timeout + JOB_OVERHEAD > function_timeout)
        .map(|(tool, timeout)| format!("{tool} ({} s)", timeout.as_secs_f64()))
        .collect();
    if too_long.is_empty() {
        return Ok(());
    }
    Err(Error::Config(format!(
        "tool timeouts do not fit in the worker's {} s (WORKER_TIMEOUT_SECS) with {} s for its ledger writes: {}. Lower timeout_secs in config/agents.toml or raise the template parameter ToolWorkerTimeoutSeconds.",
        function_timeout.as_secs(),
        JOB_OVERHEAD.as_secs(),
        too_long.join(", ")
    )))
}
