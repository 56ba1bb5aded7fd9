//! Lambda entry point: builds the Lambda and CodeDeploy clients once per container, then runs
//! the pre-traffic checks for each CodeDeploy lifecycle event.

use deploy_hook::{Deps, HookEvent, handle};
use lambda_runtime::{Diagnostic, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    lambda_kit::observability::init_tracing();
    let deps = Deps::from_env().await;
    // A failed Runtime API request polls again (lambda_kit::runtime_loop).
    lambda_kit::runtime_loop::keep_running(|| {
        run(service_fn(|event: LambdaEvent<HookEvent>| {
            let deps = deps.clone();
            async move {
                let report = handle(&deps, event.payload).await;
                let status = report.map(|r| serde_json::json!({ "status": r.status.as_str() }));
                status.map_err(|e| Diagnostic::from(e.to_string()))
            }
        }))
    })
    .await
}
