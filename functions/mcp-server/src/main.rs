//! Lambda entry point: builds everything once per container, then answers each request
//! through `run_with_streaming_response` (Function URL, `RESPONSE_STREAM`, as MCP's SSE
//! answers need).

use agent::runtime::ToolClients;
use agent::tools::SigV4Signer;
use lambda_http::{Request, run_with_streaming_response, service_fn};
use mcp_server::handler::handle;
use shared::config::Env;
use shared::metrics::Metrics;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::observability::init_tracing();
    let env = Env::from_process();
    let sdk = shared::aws::sdk_config().await;
    let metrics = Metrics::stdout("mcp-server", &env);
    // Tool calls go to the IAM-authorised routes, signed with this function's role.
    let clients = ToolClients::from_sdk(
        &sdk,
        &env,
        std::sync::Arc::new(agent::llm::NoClients),
        SigV4Signer::from_sdk_config(&sdk),
        metrics,
    )?;
    let deps = mcp_server::deps::build(&env, clients)?;
    shared::runtime_loop::keep_running(|| {
        run_with_streaming_response(service_fn(|req: Request| {
            let deps = &deps;
            async move { Ok::<_, std::convert::Infallible>(handle(deps, req).await) }
        }))
    })
    .await
}
