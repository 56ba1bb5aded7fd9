//! `POST /flights/cash`: a `FlightSearchParams` body in, `{success, results}` out.

use domain::flight::{FlightSearchParams, FlightSearchResult};
use std::convert::Infallible;

use lambda_http::http::Method;
use lambda_http::tower::{ServiceExt, service_fn};
use lambda_http::{Body, Request, Response};
use lambda_kit::http::ApiError;
use lambda_kit::http::lambda::{error_response, json_body, json_response};
use lambda_kit::layers::{Handler, deadline_of, tool_route};

use crate::deps::Deps;
use crate::search::search;

/// The route this function serves (behind `/internal` for IAM callers).
pub const ROUTE: &str = "/flights/cash";

/// The function as the runtime serves it: the shared layers (trace span, `POST` only, the
/// deadline, the access gate) around [`admitted`].
pub fn service(deps: Deps) -> Handler {
    let access = deps.access.clone();
    let fallback = deps.config.fallback_budget;
    let handler = service_fn(move |req: Request| {
        let deps = deps.clone();
        async move { Ok::<_, Infallible>(admitted(&deps, req).await) }
    });
    tool_route(ROUTE, Method::POST, access, fallback, handler)
}

/// Serves one request through [`service`] (what tests and benches call).
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    match service(deps.clone()).oneshot(req).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
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
    let result = search(deps, &params, deadline).await;
    deps.metrics.search(started, result.as_ref().err());
    match result {
        Ok(flights) => {
            tracing::info!(
                origin = %params.origin,
                destination = %params.destination,
                count = flights.len(),
                "cash search done"
            );
            json_response(200, &FlightSearchResult::new(flights, None))
        }
        Err(e) => error_response(&ApiError::from(&e)),
    }
}
