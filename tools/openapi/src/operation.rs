//! One operation of the document, built field by field.

use serde_json::{Map, Value, json};

use crate::components::SSE_EVENT;

/// An operation object under construction.
pub struct Operation {
    value: Map<String, Value>,
    responses: Map<String, Value>,
    parameters: Vec<Value>,
    error: Value,
}

impl Operation {
    /// `error` is the schema every error answer has (the envelope).
    pub fn new(id: &str, tag: &str, summary: &str, error: &Value) -> Self {
        let mut value = Map::new();
        value.insert("operationId".into(), json!(id));
        value.insert("tags".into(), json!([tag]));
        value.insert("summary".into(), json!(summary));
        Self {
            value,
            responses: Map::new(),
            parameters: Vec::new(),
            error: error.clone(),
        }
    }

    pub fn description(mut self, text: &str) -> Self {
        self.value.insert("description".into(), json!(text));
        self
    }

    /// Who may call: one security scheme of `components.securitySchemes`.
    pub fn security(mut self, scheme: &str) -> Self {
        self.value
            .insert("security".into(), json!([{ scheme: [] }]));
        self
    }

    /// A parameter object (`path`, `query` or `header`).
    pub fn parameter(mut self, parameter: Value) -> Self {
        self.parameters.push(parameter);
        self
    }

    /// A JSON request body.
    pub fn json_body(mut self, schema: Value, required: bool, description: &str) -> Self {
        self.value.insert(
            "requestBody".into(),
            json!({
                "required": required,
                "description": description,
                "content": {"application/json": {"schema": schema}}
            }),
        );
        self
    }

    /// A JSON answer.
    pub fn json(mut self, status: u16, description: &str, schema: Value) -> Self {
        self.responses.insert(
            status.to_string(),
            json!({
                "description": description,
                "content": {"application/json": {"schema": schema}}
            }),
        );
        self
    }

    /// `204` with no body.
    pub fn no_content(mut self, description: &str) -> Self {
        self.responses
            .insert("204".into(), json!({ "description": description }));
        self
    }

    /// `200 text/event-stream`: the events' names with their `data` schemas.
    pub fn event_stream(mut self, description: &str, events: &[(String, Value)]) -> Self {
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        let by_name: Map<String, Value> = events.iter().cloned().collect();
        self.responses.insert(
            "200".into(),
            json!({
                "description": description,
                "headers": {
                    "Cache-Control": {"schema": {"const": "no-cache"}},
                    "X-Accel-Buffering": {"schema": {"const": "no"}}
                },
                "content": {"text/event-stream": {
                    "schema": {
                        "$ref": format!("#/components/schemas/{SSE_EVENT}"),
                        "description": format!("Each event of the stream (OpenAPI 3.1 has no schema for a stream as a whole); the events: {}.", names.join(", "))
                    },
                    "x-sse-events": by_name
                }}
            }),
        );
        self
    }

    /// An error answer: the envelope, with what the status means here.
    pub fn error(mut self, status: u16, description: &str) -> Self {
        let mut response = json!({
            "description": description,
            "content": {"application/json": {"schema": self.error.clone()}}
        });
        if let Some(header) = error_header(status) {
            response["headers"] = header;
        }
        self.responses.insert(status.to_string(), response);
        self
    }

    pub fn build(mut self) -> Value {
        if !self.parameters.is_empty() {
            self.value
                .insert("parameters".into(), Value::Array(self.parameters));
        }
        self.value
            .insert("responses".into(), Value::Object(self.responses));
        Value::Object(self.value)
    }
}

/// The headers some error statuses carry.
fn error_header(status: u16) -> Option<Value> {
    match status {
        401 => Some(json!({"WWW-Authenticate": {
            "description": "`Bearer` (chat-router)",
            "schema": {"type": "string"}
        }})),
        405 => Some(json!({"Allow": {
            "description": "The methods the path answers",
            "schema": {"type": "string"}
        }})),
        429 => Some(json!({"Retry-After": {
            "description": "Seconds until `details.reset_at` (`POST /chat`)",
            "schema": {"type": "integer", "minimum": 1}
        }})),
        _ => None,
    }
}

/// A required path parameter.
pub fn path(name: &str, description: &str, schema: Value) -> Value {
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "description": description,
        "schema": schema
    })
}

/// An optional query parameter.
pub fn query(name: &str, description: &str, schema: Value) -> Value {
    json!({
        "name": name,
        "in": "query",
        "required": false,
        "description": description,
        "schema": schema
    })
}

/// An optional header parameter.
pub fn header(name: &str, description: &str, schema: Value) -> Value {
    json!({
        "name": name,
        "in": "header",
        "required": false,
        "description": description,
        "schema": schema
    })
}
