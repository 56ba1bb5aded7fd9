//! `POST /flights/award`: body → validated `FlightSearchParams` → award search → reply.
//! Every failure is mapped once, by `lambda_kit::http::ApiError`, to the error envelope.

use lambda_http::http::{HeaderValue, Method, header};
use lambda_http::{Body, Request, Response};
use lambda_kit::http::lambda::{deadline, error_response, json_response};
use lambda_kit::http::{ApiError, ErrorCode};
use lambda_kit::observability::Trace;
use tracing::Instrument;

use crate::deps::Deps;
use crate::{request, search};

/// The route this function serves (behind `/internal` for IAM callers).
pub const ROUTE: &str = "/flights/award";

/// Handles one request inside a span that carries the caller's X-Ray trace id.
pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let trace = Trace::of(&req);
    serve(deps, req)
        .instrument(Trace::span(trace.as_ref()))
        .await
}

async fn serve(deps: &Deps, req: Request) -> Response<Body> {
    let deadline = deadline(&req, deps.config.deadline_fallback);
    if req.method() != Method::POST {
        let mut response = error_response(&ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{} is not allowed here; use POST", req.method()),
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if let Err(refused) = deps.access.gate(&req, ROUTE).await {
        return refused;
    }
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
