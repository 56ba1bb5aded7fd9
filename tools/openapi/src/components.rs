//! The document's `components.schemas`: request bodies as they are read (serde's
//! deserialize side) and responses and events as they are written (serialize side), each
//! from its own schemars generator.

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use shared::http::ErrorEnvelope;

use crate::Error;

/// The schema of one event of a stream.
pub const SSE_EVENT: &str = "SseEvent";

pub struct Components {
    requests: SchemaGenerator,
    responses: SchemaGenerator,
    /// Schemas added by hand (the SSE frame).
    extra: Map<String, Value>,
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    })
}

impl Default for Components {
    fn default() -> Self {
        Self::new()
    }
}

impl Components {
    pub fn new() -> Self {
        Self {
            requests: settings().for_deserialize().into_generator(),
            responses: settings().for_serialize().into_generator(),
            extra: Map::new(),
        }
    }

    /// The schema of a request body (or a `$ref` to it).
    pub fn request<T: JsonSchema>(&mut self) -> Value {
        self.requests.subschema_for::<T>().to_value()
    }

    /// The schema of a response body (or a `$ref` to it).
    pub fn response<T: JsonSchema>(&mut self) -> Value {
        self.responses.subschema_for::<T>().to_value()
    }

    /// The error envelope every function answers errors with.
    pub fn error(&mut self) -> Value {
        self.response::<ErrorEnvelope>()
    }

    /// The turn stream's events: name and the schema of its `data`. Also adds `SseEvent`,
    /// one frame of the stream.
    pub fn events(&mut self) -> Vec<(String, Value)> {
        let events: Vec<(String, Value)> = chat_router::events::schemas(&mut self.responses)
            .into_iter()
            .map(|(name, schema)| (name, schema.to_value()))
            .collect();
        let frames: Vec<Value> = events
            .iter()
            .map(|(name, data)| {
                json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The event's place in its turn (`init` is 0); absent on an event that is not part of the turn's log."},
                        "event": {"const": name},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": data
                        }
                    },
                    "required": ["event", "data"]
                })
            })
            .collect();
        self.extra.insert(
            SSE_EVENT.into(),
            json!({
                "description": "One Server-Sent Event as a client parses it: `id` (optional), `event` and `data`, the event's JSON on one line.",
                "oneOf": frames
            }),
        );
        events
    }

    /// Every named schema; a name both generators used must mean the same schema.
    pub fn into_schemas(mut self) -> Result<Map<String, Value>, Error> {
        let mut schemas = self.responses.take_definitions(true);
        for (name, schema) in self.requests.take_definitions(true) {
            match schemas.get(&name) {
                Some(existing) if *existing != schema => return Err(Error::NameClash(name)),
                _ => {
                    schemas.insert(name, schema);
                }
            }
        }
        schemas.extend(self.extra);
        Ok(schemas)
    }
}
