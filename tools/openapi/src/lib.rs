//! The OpenAPI 3.1 document of every HTTP route of the functions (`docs/openapi.json`),
//! generated from the Rust types the handlers read and write: schemars derives their JSON
//! Schemas (2020-12, which OpenAPI 3.1 takes as is); this crate adds paths, parameters,
//! statuses and security as docs/api.md describes them.
//!
//! `cargo run -p openapi` rewrites the committed document; a test (`tests/integration/committed.rs`)
//! fails while it differs from what the code generates, and checks the chat-router's paths
//! against its router.

mod components;
mod operation;
mod router;
mod tools;

use serde_json::{Map, Value, json};

pub use components::Components;

/// Where the document is committed, relative to the repository root.
pub const DOCUMENT_PATH: &str = "docs/openapi.json";

/// The command that rewrites the committed document.
pub const REGENERATE: &str = "cargo run -q -p openapi";

/// Path items carry the function that serves them in this extension.
pub const FUNCTION_KEY: &str = "x-function";

/// The generator's one error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two types with one schema name but different schemas (a request and a response
    /// type, which are generated separately).
    #[error("schema name `{0}` is used by two different schemas")]
    NameClash(String),
    #[error("{action} {path}: {source}")]
    File {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{0} is not valid JSON: {1}")]
    Json(String, serde_json::Error),
}

/// The whole document.
/// Each tool of the catalog by name: its heading for users, `{"en": …, "de": …}`.
fn tool_titles() -> Value {
    agent::tools::CATALOG
        .iter()
        .map(|info| {
            let title = json!({ "en": info.title.en, "de": info.title.de });
            (info.name.as_str().to_owned(), title)
        })
        .collect::<Map<String, Value>>()
        .into()
}

pub fn document() -> Result<Value, Error> {
    let mut components = Components::new();
    let mut paths = Map::new();
    for (path, item) in router::paths(&mut components)
        .into_iter()
        .chain(tools::paths(&mut components))
    {
        paths.insert(path, item);
    }
    let schemas = components.into_schemas()?;
    Ok(json!({
        "openapi": "3.1.1",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Tool-calling chat backend",
            "version": "1",
            "summary": "The chat-router's streaming chat API and the flight and knowledge-base tool functions.",
            "description": "Generated from the Rust types by `cargo run -p openapi`; do not edit by hand. The prose reference is docs/api.md. Every error is the JSON envelope `ErrorEnvelope`. An event stream (`text/event-stream`) has the schema `SseEvent`, one event (`id`, `event`, `data`) whose `data` is JSON with the `contentSchema` of its event, and lists its events in `x-sse-events`: event name to the schema of its `data`. `x-tool-titles` gives each built-in tool's heading for users, in English and German (the web chat's tool cards).",
            "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"}
        },
        "servers": [router::server_local(), router::server_deployed()],
        "tags": [
            {"name": "chat", "description": "Chat turns, streamed as Server-Sent Events"},
            {"name": "turns", "description": "Resuming and stopping a turn"},
            {"name": "history", "description": "Chats and their messages"},
            {"name": "audit", "description": "A chat's tool calls"},
            {"name": "memory", "description": "What the assistant remembers about the user"},
            {"name": "alerts", "description": "Fare alerts"},
            {"name": "flights", "description": "Flight search functions (award and cash)"},
            {"name": "knowledge base", "description": "Knowledge-base retrieval function"}
        ],
        "paths": paths,
        "x-tool-titles": tool_titles(),
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "userJwt": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "The user's token (`iss`, `aud`, `exp`, `sub`). The chat-router verifies it itself (HS256 or the issuer's JWKS); on the public tool routes API Gateway's JWT authorizer does. docs/api.md#authentication."
                },
                "iamSigV4": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "x-amazon-apigateway-authtype": "awsSigv4",
                    "description": "AWS SigV4 (service `execute-api`) by a role allowed `execute-api:Invoke` on `POST /internal/*`: the chat-router's and the tool-worker's. The signed `x-tool-user` header names the user. API Gateway refuses other requests itself, without this envelope."
                }
            }
        }
    }))
}

/// `value` with every object's keys in order, so the written file does not depend on how
/// `serde_json` keeps maps in this build.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The document as committed: sorted, pretty, with a final newline.
pub fn render(document: &Value) -> String {
    let mut text =
        serde_json::to_string_pretty(&sorted(document)).unwrap_or_else(|_| String::new());
    text.push('\n');
    text
}
