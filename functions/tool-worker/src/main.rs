//! Lambda entry point: builds the clients once per container, then hands each invocation
//! to the worker: an SQS batch (event source mapping with `ReportBatchItemFailures`) or the
//! fare-alert schedule's event.

use agent::profiles::AgentCatalog;
use agent::runtime::ToolClients;
use agent::tools::SigV4Signer;
use lambda_runtime::{LambdaEvent, run, service_fn};
use shared::config::Env;
use shared::metrics::Metrics;
use tool_worker::event::handle_event;
use tool_worker::{Config, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::observability::init_tracing();
    let env = Env::from_process();
    let config = Config::from_env(&env)?;
    let agents = AgentCatalog::from_env(&env)?;
    let sdk = shared::aws::sdk_config().await;
    // No user token here: calls to the IAM routes are signed with the function's role.
    let metrics = Metrics::stdout("tool-worker", &env);
    let clients = ToolClients::from_sdk(
        &sdk,
        &env,
        std::sync::Arc::new(llm::Clients::from_sdk(&sdk)),
        SigV4Signer::from_sdk_config(&sdk),
        metrics,
    )?;
    let deps = Deps::new(config, &agents, clients)?;
    // A failed Runtime API request polls again (shared::runtime_loop).
    shared::runtime_loop::keep_running(|| {
        run(service_fn(|event: LambdaEvent<serde_json::Value>| {
            let deps = deps.clone();
            // Only an event of neither shape fails the invocation; its reason goes to the log.
            async move {
                handle_event(&deps, event.payload)
                    .await
                    .map_err(|e| lambda_runtime::Diagnostic::from(e.to_string()))
            }
        }))
    })
    .await
}
