//! Lambda entry point: builds everything once per container, then streams each answer
//! (Function URL, `RESPONSE_STREAM`, as MCP's SSE answers need).

use mcp_server::handler::handle;
use shared::config::Env;

// One thread, as seatsaero-search: an invocation at a time, mostly waiting on its stores; a
// quarter less CPU and 0.5 MiB less memory than the multi-thread runtime (measurements.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::observability::init_tracing();
    let deps = mcp_server::deps::from_env(&Env::from_process()).await?;
    shared::bootstrap::serve_streaming(|req| handle(&deps, req)).await
}
