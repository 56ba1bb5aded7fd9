//! Lambda entry point: builds everything once per container, then answers each request
//! through `run_with_streaming_response` (Function URL, `RESPONSE_STREAM`, as MCP's SSE
//! answers need).

use std::convert::Infallible;

use lambda_http::{Request, run_with_streaming_response, service_fn};
use mcp_server::handler::handle;
use shared::config::Env;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::observability::init_tracing();
    let deps = mcp_server::deps::from_env(&Env::from_process()).await?;
    // A failed Runtime API request polls again (shared::runtime_loop).
    shared::runtime_loop::keep_running(|| {
        run_with_streaming_response(service_fn(|req: Request| {
            let deps = &deps;
            async move { Ok::<_, Infallible>(handle(deps, req).await) }
        }))
    })
    .await
}
