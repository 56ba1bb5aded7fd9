//! `POST /flights/award`: body → validated `FlightSearchParams` → award search → reply.
//! Every failure is mapped once, by `lambda_kit::http::ApiError`, to the error envelope.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use lambda_kit::http::ApiError;
use lambda_kit::http::lambda::{error_response, json_response};
use lambda_kit::layers::{Handler, call, deadline_of, tool_function};

use crate::deps::Deps;
use crate::{request, search};

/// The route this function serves (behind `/internal` for IAM callers).
pub const ROUTE: &str = "/flights/award";

/// The function as the runtime serves it: the shared layers (trace span, `POST` only, the
/// deadline, the access gate) around [`search`].
pub fn service(deps: Deps) -> Handler {
    let (access, fallback) = (deps.access.clone(), deps.config.deadline_fallback);
    tool_function(
        ROUTE,
        Method::POST,
        access,
        fallback,
        deps,
        |deps: Deps, req| async move { search(&deps, req).await },
    )
}

/// Serves one request through [`service`] (what tests and benches call).
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    call(service(deps.clone()), req).await
}

/// An admitted `POST`: the body's search, run until the invocation's deadline.
async fn search(deps: &Deps, req: Request) -> Response<Body> {
    let deadline = deadline_of(&req, deps.config.deadline_fallback);
    let params = match request::parse(&req) {
        Ok(params) => params,
        Err(error) => return error_response(&error),
    };
    let started = std::time::Instant::now();
    let result = search::run(deps, &params, deadline).await;
    deps.metrics.search(started, result.as_ref().err());
    match result {
        Ok(result) => json_response(200, &result),
        Err(err) => error_response(&ApiError::from(&err)),
    }
}
