//! Lambda entry point: builds the clients once per container, then streams each request's
//! response through `run_with_streaming_response` (Function URL, `RESPONSE_STREAM`).

use agent::profiles::AgentCatalog;
use agent::runtime::ToolClients;
use agent::tools::SigV4Signer;
use chat_router::handler::handle;
use chat_router::{Config, Deps};
use lambda_http::{Request, run_with_streaming_response, service_fn};
use shared::config::Env;
use shared::http::auth::AuthConfig;
use shared::metrics::Metrics;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::observability::init_tracing();
    let env = Env::from_process();
    let config = Config::from_env(&env)?;
    let agents = AgentCatalog::from_env(&env)?;
    let auth = AuthConfig::from_env(&env)?;
    let sdk = shared::aws::sdk_config().await;
    // Tool calls go to the IAM-authorised routes, signed with this function's role; the
    // user's token stays here.
    let metrics = Metrics::stdout("chat-router", &env);
    let clients = ToolClients::from_sdk(
        &sdk,
        &env,
        std::sync::Arc::new(llm::Clients::from_sdk(&sdk)),
        SigV4Signer::from_sdk_config(&sdk),
        metrics,
    )?;
    let deps = Deps::new(config, agents, auth, clients)?;
    // A failed Runtime API request polls again (shared::runtime_loop).
    shared::runtime_loop::keep_running(|| {
        run_with_streaming_response(service_fn(|req: Request| {
            let deps = deps.clone();
            async move { Ok::<_, std::convert::Infallible>(handle(&deps, req).await) }
        }))
    })
    .await
}
