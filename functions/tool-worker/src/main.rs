//! Lambda entry point: builds the clients once per container, then hands the worker each
//! invocation: an SQS batch (`ReportBatchItemFailures`) or the fare-alert schedule's event.

use lambda_runtime::{Diagnostic, LambdaEvent, run, service_fn};
use shared::config::Env;
use tool_worker::Deps;
use tool_worker::event::handle_event;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::observability::init_tracing();
    let deps = Deps::from_env(&Env::from_process()).await?;
    // A failed Runtime API request polls again (shared::runtime_loop).
    shared::runtime_loop::keep_running(|| {
        run(service_fn(|event: LambdaEvent<serde_json::Value>| {
            let deps = deps.clone();
            // Only an event of neither shape fails the invocation; its reason goes to the log.
            async move {
                let result = handle_event(&deps, event.payload).await;
                result.map_err(|e| Diagnostic::from(e.to_string()))
            }
        }))
    })
    .await
}
