//! Everything a request needs, built once per container from the environment: the same
//! tool runtime as the chat-router's (registry, pipeline, ledger, limits, output guard), the
//! token verifier, and the MCP transport around the served tools.

use std::sync::Arc;

use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolRuntime, ToolsConfig};
use shared::config::Env;
use shared::http::auth::{AuthConfig, Authenticator};

use crate::config::Config;
use crate::handler::Deps;
use crate::listing;
use crate::server::{self, Served};

/// One call at a time per request: an MCP client asks for one tool per `tools/call`.
const MAX_PARALLEL: usize = 1;

/// The clients of a Lambda container, from the environment: tool calls go to the
/// IAM-authorised routes, signed with this function's role; no model client (it serves
/// tools, never a model).
pub async fn from_env(env: &Env) -> shared::Result<Deps> {
    let sdk = shared::aws::sdk_config().await;
    let clients = ToolClients::from_sdk(
        &sdk,
        env,
        Arc::new(agent::llm::NoClients),
        agent::tools::SigV4Signer::from_sdk_config(&sdk),
        shared::metrics::Metrics::stdout("mcp-server", env),
    )
    .await?;
    build(env, clients)
}

pub fn build(env: &Env, clients: ToolClients) -> shared::Result<Deps> {
    let config = Config::from_env(env)?;
    let tools = ToolsConfig::from_env(env)?;
    // Other servers' tools are theirs to serve: none is discovered here.
    let agents = AgentCatalog::from_env(env)?.without_mcp_servers();
    let auth = AuthConfig::from_env(env)?;
    let issuer = auth.issuer.clone();
    let authenticator = Authenticator::new(auth, clients.secrets.clone(), clients.http.clone())
        .with_metrics(clients.metrics.clone());
    let runtime = ToolRuntime::new(&tools, &agents, clients, MAX_PARALLEL)?;
    let names = config.tools.names().to_vec();
    // In the configured order, each with its result's schema where it has one.
    let mut tools = Vec::with_capacity(names.len());
    for registered in names
        .iter()
        .filter_map(|n| runtime.pipeline.registry.get(*n))
    {
        let schema = registered.tool.schema();
        tools.extend(listing::tool(&schema.spec, schema.output()?));
    }
    if tools.len() != names.len() {
        return Err(shared::Error::Config(format!(
            "MCP_TOOLS names a tool this deployment did not register: {}",
            config.tools
        )));
    }
    let served = Served {
        tools: Arc::new(tools),
        names: Arc::new(names),
        pipeline: Some(runtime.pipeline.clone()),
    };
    Ok(Deps {
        service: server::service(
            served,
            config.allowed_origins.clone(),
            config.max_body_bytes,
        ),
        auth: Arc::new(authenticator),
        caller_auth: config.auth,
        public_url: config.public_url.clone(),
        issuer,
        max_body_bytes: config.max_body_bytes,
    })
}
