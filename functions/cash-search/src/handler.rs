//! `POST /flights/cash`: a `FlightSearchParams` body in, `{success, results}` out.

use domain::flight::FlightSearchParams;

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use lambda_kit::http::ApiError;
use lambda_kit::http::lambda::{error_response, json_body, json_response};
use lambda_kit::layers::{Handler, call, deadline_of, tool_function};

use crate::deps::Deps;
use crate::search::search_window;

/// The route this function serves (behind `/internal` for IAM callers).
pub const ROUTE: &str = "/flights/cash";

/// The function as the runtime serves it: the shared layers (trace span, `POST` only, the
/// deadline, the access gate) around [`admitted`].
pub fn service(deps: Deps) -> Handler {
    let (access, fallback) = (deps.access.clone(), deps.config.fallback_budget);
    tool_function(
        ROUTE,
        Method::POST,
        access,
        fallback,
        deps,
        |deps: Deps, req| async move { admitted(&deps, req).await },
    )
}

/// Serves one request through [`service`] (what tests and benches call).
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    call(service(deps.clone()), req).await
}

/// An admitted `POST`, run until the invocation's deadline.
async fn admitted(deps: &Deps, req: Request) -> Response<Body> {
    let deadline = deadline_of(&req, deps.config.fallback_budget);
    let params = match json_body::<FlightSearchParams>(&req) {
        Ok(params) => params,
        Err(e) => return error_response(&e),
    };
    let params = match params.validated() {
        Ok(params) => params,
        Err(e) => return error_response(&ApiError::from(&e)),
    };
    let started = std::time::Instant::now();
    let today = deps.clock.now().date();
    let result = search_window(deps, &params, today, deadline).await;
    deps.metrics.search(started, result.as_ref().err());
    match result {
        Ok(found) => {
            tracing::info!(
                origin = %params.origin,
                destination = %params.destination,
                count = found.results.count,
                "cash search done"
            );
            json_response(200, &found)
        }
        Err(e) => error_response(&ApiError::from(&e)),
    }
}
