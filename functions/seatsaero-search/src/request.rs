//! The request body: `FlightSearchParams`, validated and clamped. `json_body` answers 413,
//! `invalid_json`, and `validation_failed` with the offending field's name in front.

use lambda_http::Request;
use shared::domain::flight::FlightSearchParams;
use shared::http::ApiError;
use shared::http::lambda::json_body;

pub(crate) fn parse(req: &Request) -> Result<FlightSearchParams, ApiError> {
    json_body::<FlightSearchParams>(req)?
        .validated()
        .map_err(|e| ApiError::from(&e))
}
