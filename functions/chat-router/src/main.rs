//! Lambda entry point: builds the clients once per container, then streams each request's
//! response (Function URL, `RESPONSE_STREAM`).

use chat_router::Deps;
use chat_router::handler::handle;
use shared::config::Env;

// One thread, as the other functions: at 512 MB Lambda gives the function about a third of
// a vCPU, so a second worker thread buys no parallel CPU, only wake-ups between threads
// (measurements.md, "Cold start").
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::observability::init_tracing();
    let deps = Deps::from_env(&Env::from_process()).await?;
    shared::bootstrap::serve_streaming(|req| handle(&deps, req)).await
}
