//! Bounds on what a request names: the ids in its path and body, paging parameters and the
//! resume point. A value out of bounds is 400 `validation_failed`, before anything is read or
//! stored, so no hostile id reaches a key condition or a log line at full length.

use lambda_http::{Request, RequestExt};
use serde_json::json;
use shared::http::{ApiError, ErrorCode};

/// Ids are ULIDs (26 characters); the margin allows other id schemes of a deployment.
pub const MAX_ID_LEN: usize = 64;
/// What [`id`] accepts, as a regular expression (for the OpenAPI document).
pub const ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";
/// What [`page`] accepts as a cursor.
pub const CURSOR_PATTERN: &str = "^[0-9A-Fa-f]{1,2048}$";
/// A listing cursor is a hex-encoded key: a few hundred characters in practice.
pub const MAX_CURSOR_LEN: usize = 2048;
/// Items per page of an audit listing.
pub const MAX_PAGE: u32 = 100;
pub const DEFAULT_PAGE: u32 = 20;

/// `value` if it is a well-formed id: 1–64 ASCII letters, digits, `-` or `_`.
pub fn id<'a>(field: &str, value: &'a str) -> Result<&'a str, ApiError> {
    let well_formed = !value.is_empty()
        && value.len() <= MAX_ID_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if well_formed {
        Ok(value)
    } else {
        Err(invalid(
            field,
            format!("{field} must be 1–{MAX_ID_LEN} letters, digits, '-' or '_'"),
        ))
    }
}

/// `limit` (1–100, default 20) and `cursor` of an audit listing.
pub fn page(req: &Request) -> Result<(u32, Option<String>), ApiError> {
    let query = req.query_string_parameters_ref();
    let limit = match query.and_then(|q| q.first("limit")) {
        None => DEFAULT_PAGE,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => {
                return Err(invalid(
                    "limit",
                    format!("limit must be a whole number from 1 to {MAX_PAGE}"),
                ));
            }
        },
    };
    let cursor = query.and_then(|q| q.first("cursor"));
    if let Some(cursor) = cursor
        && (cursor.is_empty()
            || cursor.len() > MAX_CURSOR_LEN
            || !cursor.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(invalid(
            "cursor",
            "cursor is malformed; pass the next_cursor of the previous page".to_owned(),
        ));
    }
    Ok((limit, cursor.map(str::to_owned)))
}

fn invalid(field: &str, message: String) -> ApiError {
    ApiError::new(ErrorCode::ValidationFailed, message).with_details(json!({"field": field}))
}

/// Where a resume starts: after `Last-Event-ID` (or `?after=`); `None` replays from `init`.
pub fn resume_point(req: &Request) -> Result<Option<u64>, ApiError> {
    let header = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let query = req
        .query_string_parameters_ref()
        .and_then(|q| q.first("after"))
        .map(str::to_owned);
    header
        .or(query)
        .map(|v| {
            v.parse::<u64>().map_err(|_| {
                ApiError::new(
                    ErrorCode::ValidationFailed,
                    "Last-Event-ID / after: must be an event id (a whole number)",
                )
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_bounded_in_length_and_alphabet() {
        assert!(id("chat_id", "01JQ7Z8M4V6K2R3T5W7Y9A1B3C").is_ok());
        assert!(id("chat_id", "chat-42_a").is_ok());
        for bad in [
            "",
            "a b",
            "x/y",
            "ünï",
            "a%2Fb",
            &"a".repeat(65),
            &"a".repeat(10_000),
        ] {
            let e = id("chat_id", bad).err();
            assert_eq!(
                e.map(|e| e.code),
                Some(ErrorCode::ValidationFailed),
                "{bad:?}"
            );
        }
    }
}
