//! Glue between `lambda_http` and the handlers: JSON bodies in (size-limited, errors that
//! name the field), JSON and error envelopes out, and the invocation's deadline.

use std::time::{Duration, Instant, SystemTime};

use lambda_http::http::{StatusCode, header};
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ApiError, ErrorCode, MAX_BODY_BYTES};

/// Parses the request body as `T`. Refuses bodies over [`MAX_BODY_BYTES`] (413), empty or
/// malformed JSON and JSON that is not an object (400 `invalid_json`) and JSON of the wrong shape (400 `validation_failed`,
/// the message prefixed with the path of the offending field, e.g. `origin: ...`).
pub fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    let bytes: &[u8] = match req.body() {
        Body::Empty => &[],
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    };
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ApiError::payload_too_large());
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(
            ErrorCode::InvalidJson,
            "request body is empty; expected a JSON object",
        ));
    }
    // Every body is an object: serde would read a struct from a JSON array too.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::new(
            ErrorCode::InvalidJson,
            "request body must be a JSON object",
        ));
    }
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        use serde_json::error::Category;
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            Category::Data => {
                let message = strip_position(&inner);
                let message = message.strip_prefix("invalid input: ").unwrap_or(&message);
                // serde names missing fields itself; for bad values the path says where.
                let message = if path == "." || message.contains(&format!("`{path}`")) {
                    message.to_owned()
                } else {
                    format!("{path}: {message}")
                };
                ApiError::new(ErrorCode::ValidationFailed, message)
            }
            Category::Syntax | Category::Eof | Category::Io => invalid_json(&inner),
        }
    })?;
    json.end().map_err(|e| invalid_json(&e))?;
    Ok(value)
}

fn invalid_json(e: &serde_json::Error) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidJson,
        format!("request body is not valid JSON: {e}"),
    )
}

/// serde's data errors end in " at line 1 column 57", which helps nobody reading a 400.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// A JSON response; `B` is any body built from text (the buffered `lambda_http::Body` or a
/// streaming function's body).
pub fn json_response<T: Serialize, B: From<String>>(status: u16, value: &T) -> Response<B> {
    match serde_json::to_string(value) {
        Ok(body) => build(status, body),
        Err(e) => {
            tracing::error!(error = %e, "could not serialise a response");
            error_response(&ApiError::new(ErrorCode::Internal, "internal error"))
        }
    }
}

/// `error`'s envelope as a JSON response with the error's status.
pub fn error_response<B: From<String>>(error: &ApiError) -> Response<B> {
    build(error.status(), error.body())
}

fn build<B: From<String>>(status: u16, body: String) -> Response<B> {
    let mut response = Response::new(B::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// When this invocation must have answered: the Lambda deadline minus a safety margin for
/// writing the response, or `fallback` from now when there is no Lambda context (tests).
pub fn deadline(req: &Request, fallback: Duration) -> Instant {
    const MARGIN: Duration = Duration::from_millis(500);
    let now = Instant::now();
    let remaining = req
        .lambda_context_ref()
        .map(|ctx| ctx.deadline())
        .filter(|d| *d > SystemTime::UNIX_EPOCH)
        .and_then(|d| d.duration_since(SystemTime::now()).ok());
    match remaining {
        Some(left) => now + left.saturating_sub(MARGIN),
        None => now + fallback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Input {
        #[allow(dead_code)]
        origin: String,
    }

    fn request(body: &str) -> Request {
        let mut req = Request::new(Body::Text(body.to_owned()));
        *req.method_mut() = lambda_http::http::Method::POST;
        req
    }

    #[test]
    fn body_errors() {
        let err = |body: &str| {
            json_body::<Input>(&request(body))
                .err()
                .map(|e| (e.code, e.message))
        };
        assert_eq!(err("").map(|e| e.0), Some(ErrorCode::InvalidJson));
        assert_eq!(err("{").map(|e| e.0), Some(ErrorCode::InvalidJson));
        assert_eq!(
            err("{}"),
            Some((
                ErrorCode::ValidationFailed,
                "missing field `origin`".to_owned()
            ))
        );
        let big = format!("{{\"origin\":\"{}\"}}", "x".repeat(MAX_BODY_BYTES));
        assert_eq!(err(&big).map(|e| e.0), Some(ErrorCode::PayloadTooLarge));
        assert!(json_body::<Input>(&request(r#"{"origin":"FRA"}"#)).is_ok());
        assert_eq!(
            err(r#"{"origin": 42}"#),
            Some((
                ErrorCode::ValidationFailed,
                "origin: invalid type: integer `42`, expected a string".to_owned()
            ))
        );
        assert_eq!(
            err(r#"{"origin":"FRA"} trailing"#).map(|e| e.0),
            Some(ErrorCode::InvalidJson)
        );
    }

    #[test]
    fn responses_are_json() {
        let response: Response<Body> =
            error_response(&ApiError::new(ErrorCode::NotFound, "not found"));
        assert_eq!(response.status(), 404);
        assert_eq!(
            response
                .headers()
                .get(header::CONTENT_TYPE)
                .map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
    }
}
