//! Lambda entry point: builds everything once per container, then answers each request
//! through `run_with_streaming_response` (Function URL, `RESPONSE_STREAM`, as MCP's SSE
//! answers need).

use std::convert::Infallible;

use lambda_http::{Request, run_with_streaming_response, service_fn};
use mcp_server::handler::handle;
use shared::config::Env;

// One thread, as seatsaero-search: an invocation at a time, mostly waiting on its stores; a
// quarter less CPU and 0.5 MiB less memory than the multi-thread runtime (measurements.md).
#[tokio::main(flavor = "current_thread")]
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
