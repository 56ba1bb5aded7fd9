//! Lambda entry point: builds clients and configuration once per container, then serves.

use cash_search::{Deps, service};
use lambda_kit::config::Env;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_kit::observability::init_tracing();
    let deps = Deps::from_env(&Env::from_process()).await?;
    lambda_kit::bootstrap::serve(service(deps)).await
}
