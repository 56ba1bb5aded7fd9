//! Lambda entry point: builds the clients once per container, then hands each SQS batch to
//! the handler (event source mapping with `ReportBatchItemFailures`).

use agent::profiles::AgentCatalog;
use agent::runtime::ToolClients;
use agent::tools::SigV4Signer;
use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, run, service_fn};
use shared::config::Env;
use tool_worker::handler::handle;
use tool_worker::{Config, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::observability::init_tracing();
    let env = Env::from_process();
    let config = Config::from_env(&env)?;
    let agents = AgentCatalog::from_env(&env)?;
    let sdk = shared::aws::sdk_config().await;
    // No user token here: calls to the IAM routes are signed with the function's role.
    let clients = ToolClients::from_sdk(&sdk, &env, SigV4Signer::from_sdk_config(&sdk))?;
    let deps = Deps::new(config, &agents, clients)?;
    run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let deps = deps.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(&deps, event.payload).await) }
    }))
    .await
}
