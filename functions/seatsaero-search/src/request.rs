//! The request body: `FlightSearchParams`, validated and clamped. `json_body` answers 413,
//! `invalid_json`, and `validation_failed` with the offending field's name in front.

use domain::flight::FlightSearchParams;
use lambda_http::Request;
use lambda_kit::http::ApiError;
use lambda_kit::http::lambda::json_body;

pub(crate) fn parse(req: &Request) -> Result<FlightSearchParams, ApiError> {
    json_body::<FlightSearchParams>(req)?
        .validated()
        .map_err(|e| ApiError::from(&e))
}
