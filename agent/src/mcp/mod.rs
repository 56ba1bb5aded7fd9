//! Tools of external MCP servers (`[mcp_servers.<name>]` in `config/agents.toml`, listed by
//! a profile's `mcp_servers`). Each server's tools are listed at cold start, all servers at
//! once and each under its `discover_timeout_secs`, and listed again when their TTL ends;
//! only the tools its `allow` names are kept. A server that is down or slow has its tools
//! left out (logged, retried a little later); a turn waits for a discovery under way at
//! most that long and never for a server that already failed.
//!
//! Calls go through the pipeline like every tool's ([`tool::ExternalTool`]).

mod client;
pub mod config;
pub mod tool;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::JsonObject;
use shared::secrets::SecretsCache;
use tokio::sync::{Mutex, watch};

use crate::llm::ToolSpec;
use agent_tools::{ExternalTools, RegisteredTool, ToolSettings};
use client::Connection;
use config::{McpServerConfig, SEPARATOR};
use shared::Result;
use tool::ExternalTool;

/// After a failed discovery, how long a server's tools stay out before it is asked again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// The external servers of a deployment and the tools discovered on them.
pub struct McpTools {
    servers: Vec<Arc<Server>>,
}

/// One server: its client, its allowed tools' offered names, what was discovered.
pub(crate) struct Server {
    pub(crate) config: McpServerConfig,
    http: reqwest::Client,
    secrets: Arc<SecretsCache>,
    /// Allowed tool → offered name, made once per process: the names come from the
    /// configuration, and the rate limiter keys on them.
    offered: BTreeMap<String, &'static str>,
    connection: Mutex<Option<Arc<Connection>>>,
    listing: RwLock<Listing>,
    discovering: AtomicBool,
    /// Whether a discovery has ended at least once (successfully or not).
    discovered: watch::Sender<bool>,
}

#[derive(Default)]
struct Listing {
    tools: Vec<RegisteredTool>,
    /// When to list again; `None`: never listed.
    next_at: Option<Instant>,
}

impl McpTools {
    /// The tools of `servers`, none listed yet (see [`McpTools::start`]); `http` and
    /// `secrets` connect to the servers.
    pub fn new(
        servers: &[McpServerConfig],
        http: reqwest::Client,
        secrets: Arc<SecretsCache>,
    ) -> Self {
        let servers = servers
            .iter()
            .map(|config| {
                let offered = config
                    .allow
                    .iter()
                    .map(|tool| {
                        let name: &'static str =
                            Box::leak(config.offered_name(tool).into_boxed_str());
                        (tool.clone(), name)
                    })
                    .collect();
                Arc::new(Server {
                    config: config.clone(),
                    http: http.clone(),
                    secrets: secrets.clone(),
                    offered,
                    connection: Mutex::new(None),
                    listing: RwLock::new(Listing::default()),
                    discovering: AtomicBool::new(false),
                    discovered: watch::channel(false).0,
                })
            })
            .collect();
        Self { servers }
    }

    /// Whether the deployment has no external server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every server's discovery in the background (at cold start, so the first
    /// turn finds the tools listed).
    pub fn start(&self) {
        for server in &self.servers {
            tokio::spawn(server.clone().discover());
        }
    }
}

#[async_trait::async_trait]
impl ExternalTools for McpTools {
    /// Waits until every server that has not been listed yet is, or its discovery has
    /// failed (each bounded by its `discover_timeout_secs`); starts a new discovery in the
    /// background where a listing's TTL has ended. Servers the profile does not use are
    /// discovered too: the worker and other profiles need them.
    async fn ready(&self) {
        let waits = self.servers.iter().map(|server| server.clone().ready());
        futures::future::join_all(waits).await;
    }

    /// The specs of the tools discovered on `servers`, in the configuration's order.
    fn specs(&self, servers: &[String]) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .filter(|server| servers.contains(&server.config.name))
            .flat_map(|server| server.tools())
            .map(|tool| tool.tool.schema().spec.clone())
            .collect()
    }

    /// The discovered tool offered as `offered`, and its server's name.
    fn tool(&self, offered: &str) -> Option<(RegisteredTool, &str)> {
        let (server, _) = offered.split_once(SEPARATOR)?;
        let server = self.servers.iter().find(|s| s.config.name == server)?;
        let tool = server
            .tools()
            .into_iter()
            .find(|t| t.tool.schema().spec.name == offered)?;
        Some((tool, server.config.name.as_str()))
    }
}

/// Whether `name` is an external tool's offered name (it need not exist).
pub fn is_offered_name(name: &str) -> bool {
    name.contains(SEPARATOR)
}

impl Server {
    fn tools(&self) -> Vec<RegisteredTool> {
        match self.listing.read() {
            Ok(listing) => listing.tools.clone(),
            Err(poisoned) => poisoned.into_inner().tools.clone(),
        }
    }

    fn next_at(&self) -> Option<Instant> {
        match self.listing.read() {
            Ok(listing) => listing.next_at,
            Err(poisoned) => poisoned.into_inner().next_at,
        }
    }

    async fn ready(self: Arc<Self>) {
        match self.next_at() {
            Some(at) if at > Instant::now() => {}
            Some(_) => {
                tokio::spawn(self.discover());
            }
            None => {
                let mut discovered = self.discovered.subscribe();
                if !self.discovering.load(Ordering::SeqCst) {
                    tokio::spawn(self.clone().discover());
                }
                let bound = self.config.discover_timeout + Duration::from_millis(100);
                let _ = tokio::time::timeout(bound, discovered.wait_for(|done| *done)).await;
            }
        }
    }

    /// Lists the server's tools (one discovery at a time) and keeps the allowed ones.
    async fn discover(self: Arc<Self>) {
        if self.discovering.swap(true, Ordering::SeqCst) {
            return;
        }
        let name = &self.config.name;
        let started = Instant::now();
        let listed = tokio::time::timeout(self.config.discover_timeout, self.clone().list()).await;
        let next = match listed {
            Ok(Ok((tools, ttl))) => {
                tracing::info!(server = %name, tools = tools.len(), elapsed_ms = started.elapsed().as_millis() as u64, "MCP server's tools discovered");
                self.store(Some(tools), ttl);
                ttl
            }
            Ok(Err(e)) => {
                tracing::warn!(server = %name, error = %e, "MCP server's tools left out: discovery failed");
                self.drop_connection().await;
                self.store(None, RETRY_AFTER);
                RETRY_AFTER
            }
            Err(_) => {
                tracing::warn!(server = %name, timeout_ms = self.config.discover_timeout.as_millis() as u64, "MCP server's tools left out: discovery timed out");
                self.drop_connection().await;
                self.store(None, RETRY_AFTER);
                RETRY_AFTER
            }
        };
        tracing::debug!(server = %name, next_in_secs = next.as_secs(), "next MCP discovery");
        self.discovering.store(false, Ordering::SeqCst);
        self.discovered.send_replace(true);
    }

    /// `Some(tools)` replaces the listing; `None` keeps what an earlier discovery found.
    fn store(&self, tools: Option<Vec<RegisteredTool>>, ttl: Duration) {
        let mut listing = match self.listing.write() {
            Ok(listing) => listing,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(tools) = tools {
            listing.tools = tools;
        }
        listing.next_at = Some(Instant::now() + ttl);
    }

    /// The allowed tools the server lists, and how long the list holds.
    async fn list(self: Arc<Self>) -> Result<(Vec<RegisteredTool>, Duration)> {
        let connection = self.connection().await?;
        let listed = client::list_tools(&self.config, &connection).await?;
        let hint = listed.ttl_ms.map(Duration::from_millis);
        let ttl = hint.map_or(self.config.ttl, |hint| {
            hint.clamp(Duration::from_secs(1), self.config.ttl)
        });
        let settings = ToolSettings {
            timeout: self.config.timeout,
            rate_limit: self.config.rate_limit,
            approval: self.config.approval,
            ..ToolSettings::default()
        };
        let mut tools = Vec::new();
        for listed in &listed.items {
            let Some(offered) = self.offered.get(listed.name.as_ref()).copied() else {
                continue;
            };
            match ExternalTool::new(self.clone(), offered, listed) {
                Ok(tool) => tools.push(RegisteredTool {
                    tool: Arc::new(tool),
                    settings,
                }),
                Err(e) => {
                    tracing::warn!(server = %self.config.name, tool = %offered, error = %e, "MCP tool left out: its input schema does not compile");
                }
            }
        }
        let missing: Vec<&str> = self
            .offered
            .values()
            .filter(|offered| !tools.iter().any(|t| t.tool.schema().spec.name == **offered))
            .copied()
            .collect();
        if !missing.is_empty() {
            tracing::warn!(server = %self.config.name, ?missing, "allowed MCP tools the server does not offer");
        }
        Ok((tools, ttl))
    }

    /// The open connection, or a new one.
    async fn connection(&self) -> Result<Arc<Connection>> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let connection = Arc::new(client::connect(&self.config, &self.http, &self.secrets).await?);
        *slot = Some(connection.clone());
        Ok(connection)
    }

    async fn drop_connection(&self) {
        self.connection.lock().await.take();
    }

    /// Calls the server's tool `tool`; a closed connection is dropped so the next call
    /// opens another.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<rmcp::model::CallToolResult> {
        let connection = self.connection().await?;
        let called = client::call_tool(&self.config, &connection, tool, arguments).await;
        if let Err(e) = &called
            && client::is_closed(e)
        {
            self.drop_connection().await;
        }
        called
    }
}
