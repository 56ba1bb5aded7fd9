//! Lambda entry point: builds the clients and loads the knowledge base once per container,
//! then serves requests.

use kb_retrieve::{Deps, service};
use lambda_kit::config::Env;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_kit::observability::init_tracing();
    let deps = Deps::from_env(&Env::from_process()).await?;
    lambda_kit::bootstrap::serve(service(deps)).await
}
