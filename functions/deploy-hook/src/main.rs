//! Lambda entry point: builds the Lambda and CodeDeploy clients once per container, then runs
//! the pre-traffic checks for each CodeDeploy lifecycle event.

use deploy_hook::{CHECK_TIMEOUT, Config, Deps, HookEvent, handle};
use lambda_runtime::{LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    lambda_kit::observability::init_tracing();
    let sdk = lambda_kit::aws::sdk_config().await;
    let deps = Deps {
        lambda: aws_sdk_lambda::Client::new(&sdk),
        codedeploy: aws_sdk_codedeploy::Client::new(&sdk),
        config: Config::from_env(),
        check_timeout: CHECK_TIMEOUT,
    };
    // A failed Runtime API request polls again (lambda_kit::runtime_loop).
    lambda_kit::runtime_loop::keep_running(|| {
        run(service_fn(|event: LambdaEvent<HookEvent>| {
            let deps = deps.clone();
            async move {
                handle(&deps, event.payload)
                    .await
                    .map(|report| serde_json::json!({ "status": report.status.as_str() }))
                    .map_err(|e| lambda_runtime::Diagnostic::from(e.to_string()))
            }
        }))
    })
    .await
}
