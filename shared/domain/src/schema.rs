//! JSON Schema stand-ins for field types whose wire form is a string written by a serde
//! helper (`time`'s own types have no schemars support): used as `#[schemars(with = …)]`.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A `time::Date` serialised with `flight::iso_date`: `YYYY-MM-DD`.
pub struct IsoDateSchema;

impl JsonSchema for IsoDateSchema {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Date".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date" })
    }
}

/// A `time::OffsetDateTime` serialised with `time::serde::rfc3339`.
pub struct DateTimeSchema;

impl JsonSchema for DateTimeSchema {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "DateTime".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date-time" })
    }
}
