//! The framing check in front of the MCP transport: the body of a POST must be one JSON-RPC
//! 2.0 request or notification. What is not JSON gets -32700, a batch or anything that is
//! not a JSON-RPC message -32600, both with HTTP 400 and `id: null` unless the id is
//! readable, as the official SDK servers answer (the transport itself would answer 415 with
//! plain text).

use serde_json::{Value, json};

/// JSON-RPC's parse error: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request: JSON, but not one request or notification.
pub const INVALID_REQUEST: i64 = -32600;

/// Why a body is refused before the transport sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub code: i64,
    pub message: &'static str,
    /// The request's id when it could be read, else `null`.
    pub id: Value,
}

impl Refusal {
    /// The JSON-RPC error body (HTTP 400).
    pub fn body(&self) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id,
               "error": {"code": self.code, "message": self.message}})
    }
}

/// `Ok` when `body` is one JSON-RPC 2.0 request or notification, else what to answer.
pub fn check(body: &[u8]) -> Result<(), Refusal> {
    let refuse = |code, message, id| Err(Refusal { code, message, id });
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(_) => {
            return refuse(
                PARSE_ERROR,
                "Parse error: the body is not JSON",
                Value::Null,
            );
        }
    };
    let Value::Object(message) = value else {
        return match value {
            Value::Array(_) => refuse(
                INVALID_REQUEST,
                "Invalid Request: batches are not supported",
                Value::Null,
            ),
            _ => refuse(
                INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC object",
                Value::Null,
            ),
        };
    };
    // An id is a string or a number; any other id cannot be echoed.
    let id = match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
            id,
        );
    }
    if !message.get("method").is_some_and(Value::is_string) {
        return refuse(
            INVALID_REQUEST,
            "Invalid Request: method must be a string",
            id,
        );
    }
    if message
        .get("id")
        .is_some_and(|i| !matches!(i, Value::String(_) | Value::Number(_)))
    {
        return refuse(
            INVALID_REQUEST,
            "Invalid Request: id must be a string or a number",
            Value::Null,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<(i64, Value)> {
        check(body.as_bytes()).err().map(|r| (r.code, r.id))
    }

    #[test]
    fn one_request_or_notification_passes() {
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
    }

    #[test]
    fn garbage_batches_and_odd_messages_get_their_json_rpc_codes() {
        assert_eq!(code("{not json"), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(code(""), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#),
            Some((INVALID_REQUEST, Value::Null))
        );
        assert_eq!(code("42"), Some((INVALID_REQUEST, Value::Null)));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#),
            Some((INVALID_REQUEST, json!(7)))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"q","method":3}"#),
            Some((INVALID_REQUEST, json!("q")))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"m"}"#),
            Some((INVALID_REQUEST, Value::Null))
        );
        let refusal = check(b"[]").err().unwrap_or_else(|| panic!("refused"));
        assert_eq!(refusal.body()["error"]["code"], json!(INVALID_REQUEST));
        assert_eq!(refusal.body()["id"], Value::Null);
    }
}
