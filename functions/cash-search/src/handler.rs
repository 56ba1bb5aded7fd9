//! `POST /flights/cash`: a `FlightSearchParams` body in, `{success, results}` out.

use domain::flight::{FlightSearchParams, FlightSearchResult};
use lambda_http::http::{Method, header};
use lambda_http::{Body, Request, Response};
use lambda_kit::http::lambda::{deadline, error_response, json_body, json_response};
use lambda_kit::http::{ApiError, ErrorCode};
use lambda_kit::observability::Trace;
use tracing::Instrument;

use crate::deps::Deps;
use crate::search::search;

/// The route this function serves (behind `/internal` for IAM callers).
pub const ROUTE: &str = "/flights/cash";

/// Handles one request inside a span that carries the caller's X-Ray trace id.
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let trace = Trace::of(&req);
    serve(deps, req)
        .instrument(Trace::span(trace.as_ref()))
        .await
}

async fn serve(deps: &Deps, req: Request) -> Response<Body> {
    if req.method() != Method::POST {
        let mut response = error_response(&ApiError::new(
            ErrorCode::MethodNotAllowed,
            "use POST with a JSON flight search",
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return response;
    }
    let deadline = deadline(&req, deps.config.fallback_budget);
    if let Err(refused) = deps.access.gate(&req, ROUTE).await {
        return refused;
    }
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
