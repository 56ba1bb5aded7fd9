//! Lambda entry point: builds the clients once per container, then serves requests.

use lambda_kit::config::Env;
use seatsaero_search::{Deps, service};

// One thread: Lambda sends one invocation at a time, and its work is waiting on Seats.aero.
// A multi-thread runtime would hand every HTTP exchange between the invocation and the
// connection tasks on its workers, paying thread wake-ups for nothing: 0.8 → 0.45 ms of CPU
// per warm award search in the cold-start bench (docs/measurements.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_kit::observability::init_tracing();
    let deps = Deps::from_env(&Env::from_process()).await?;
    lambda_kit::bootstrap::serve(service(deps)).await
}
