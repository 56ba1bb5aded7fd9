//! Dedupe keys: SHA-256 over the chat id, the tool name and the canonical request.
//!
//! The original hashed `JSON.stringify({chatId, toolName, request})`, which depends on key
//! order. Here the request is serialised canonically (object keys sorted at every level,
//! no whitespace) and the three parts are length-prefixed, so no two different inputs share
//! a byte string. Tools apply their defaults and normalisation (e.g. IATA upper case) before
//! the request reaches the ledger; see `FlightSearchInput::canonical`.

use serde_json::Value;
use sha2::{Digest, Sha256};

use domain::tool_call::ToolName;

/// Hex SHA-256 dedupe key of one logical tool call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DedupeKey(String);

impl DedupeKey {
    /// The key of `tool` called in `chat_id` with `canonical_request`.
    pub fn new(chat_id: &str, tool: ToolName, canonical_request: &Value) -> Self {
        Self(hash_call(b"tool-call/v1", chat_id, tool, canonical_request))
    }

    /// The key as hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tool call id that belongs to this key: identical calls share it by construction,
    /// so a duplicate learns the id without reading anything.
    pub fn call_id(&self) -> String {
        format!("tc_{}", &self.0[..32])
    }
}

/// Hex SHA-256 over `version`, `scope`, the tool and its canonical request, each part
/// length-prefixed so no two different inputs share a byte string.
pub(crate) fn hash_call(version: &[u8], scope: &str, tool: ToolName, request: &Value) -> String {
    let mut json = String::new();
    write_canonical(request, &mut json);
    let mut hasher = Sha256::new();
    for part in [
        version,
        scope.as_bytes(),
        tool.as_str().as_bytes(),
        json.as_bytes(),
    ] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hex::encode(hasher.finalize())
}

/// Appends `value` as canonical JSON. Written out rather than relying on serde_json's map
/// order, which a dependency enabling `preserve_order` would silently change.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"a":1,"b":{"y":[1,2],"x":"s"}}"#).unwrap_or_default();
        let b: Value =
            serde_json::from_str(r#"{"b":{"x":"s","y":[1,2]},"a":1}"#).unwrap_or_default();
        assert_eq!(
            DedupeKey::new("c1", ToolName::ASK_GPT, &a),
            DedupeKey::new("c1", ToolName::ASK_GPT, &b)
        );
    }

    #[test]
    fn every_part_counts() {
        let req = json!({"query": "miles"});
        let base = DedupeKey::new("c1", ToolName::ASK_GPT, &req);
        assert_ne!(base, DedupeKey::new("c2", ToolName::ASK_GPT, &req));
        assert_ne!(
            base,
            DedupeKey::new("c1", ToolName::SEARCH_KNOWLEDGE_BASE, &req)
        );
        assert_ne!(
            base,
            DedupeKey::new("c1", ToolName::ASK_GPT, &json!({"query": "Miles"}))
        );
        // Array order is meaningful and kept.
        assert_ne!(
            DedupeKey::new("c1", ToolName::ASK_GPT, &json!([1, 2])),
            DedupeKey::new("c1", ToolName::ASK_GPT, &json!([2, 1]))
        );
    }

    #[test]
    fn canonical_text_is_compact_and_sorted() {
        let mut out = String::new();
        write_canonical(&json!({"b": [true, null, 1.5], "a": "x\"y"}), &mut out);
        assert_eq!(out, r#"{"a":"x\"y","b":[true,null,1.5]}"#);
    }

    #[test]
    fn call_id_is_stable_and_short() {
        let key = DedupeKey::new("c1", ToolName::ASK_GPT, &json!({}));
        assert_eq!(key.call_id(), key.call_id());
        assert_eq!(key.call_id().len(), 35);
        assert_eq!(key.as_str().len(), 64);
    }
}
