//! A tool's JSON Schema, derived from its Rust argument type, and the validator the
//! pipeline checks LLM arguments with.

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use agent_core::llm::ToolSpec;
use shared::Error;
use shared::Result;
use shared::domain::tool_call::ToolName;

/// Most validation errors reported back to the LLM at once; more only add noise.
const MAX_REPORTED_ERRORS: usize = 5;

/// How a schema's validator is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// As JSON Schema Draft 7, formats as annotations (as 2020-12 has them): what the
    /// derived schemas are compiled as when they use no keyword whose meaning changed
    /// after Draft 7 ([`Dialect::of_derived`]). A Draft 7 validator compiles in a fifth of
    /// a 2020-12 one's time, and the first one spares building 2020-12's own meta-schema
    /// validator: about 5 ms of a flight turn's first call, on the bench machine.
    Draft7,
    /// As the schema's `$schema` says (2020-12 without one).
    Declared,
}

/// Keywords that Draft 7 does not know or reads otherwise than 2020-12.
const AFTER_DRAFT_7: [&str; 13] = [
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveAnchor",
    "$recursiveRef",
    "$vocabulary",
    "dependentRequired",
    "dependentSchemas",
    "maxContains",
    "minContains",
    "prefixItems",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// What may stand beside a `$ref` in Draft 7, which ignores its siblings: annotations.
const ANNOTATIONS: [&str; 7] = [
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

impl Dialect {
    /// The dialect a derived schema compiles as: Draft 7 unless a keyword in it means
    /// something else there (or nothing), or a `$ref` has siblings Draft 7 would ignore.
    pub fn of_derived(schema: &Value) -> Self {
        fn same_in_draft_7(value: &Value) -> bool {
            match value {
                Value::Object(object) => {
                    let ref_alone = !object.contains_key("$ref")
                        || object
                            .keys()
                            .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()));
                    let array_items = object.get("items").is_some_and(Value::is_array);
                    ref_alone
                        && !array_items
                        && object.keys().all(|k| !AFTER_DRAFT_7.contains(&k.as_str()))
                        && object.values().all(same_in_draft_7)
                }
                Value::Array(items) => items.iter().all(same_in_draft_7),
                _ => true,
            }
        }
        if same_in_draft_7(schema) {
            Self::Draft7
        } else {
            Self::Declared
        }
    }
}

/// A tool's schema as offered to the model, and the validator of its arguments.
pub struct ToolSchema {
    /// Name, description and parameters, as the model is offered them.
    pub spec: ToolSpec,
    /// How its validator compiles.
    dialect: Dialect,
    /// Compiled at the first check, not at cold start: a container compiles only the
    /// validators of the tools it runs (the flight schema's patterns cost most).
    validator: OnceLock<std::result::Result<jsonschema::Validator, String>>,
    /// How to derive the JSON Schema of the result's structured data, where the tool has a
    /// type for it (MCP's `outputSchema`). Only the mcp-server lists it and the model never
    /// sees it, so it is derived at its first read ([`ToolSchema::output`]), not by every
    /// function that registers the tool.
    output: Option<fn() -> Result<Value>>,
    /// The output schema, once derived.
    output_schema: OnceLock<std::result::Result<Value, String>>,
}

impl ToolSchema {
    /// The schema of `T` in OpenAI function form: no `$schema`/`title` noise, the type's
    /// description as the tool's description.
    pub fn of<T: JsonSchema>(name: ToolName) -> Result<Self> {
        Self::named::<T>(name.as_str())
    }

    /// As [`ToolSchema::of`], for a tool the turn offers under a name of its own (a
    /// handoff's `transfer_to_<agent>`).
    pub fn named<T: JsonSchema>(name: &str) -> Result<Self> {
        Self::described(name, bare_schema::<T>()?)
    }

    /// The same, announcing `O` as the shape of the result's structured data.
    pub fn with_output<O: JsonSchema>(mut self) -> Result<Self> {
        self.output = Some(bare_schema::<O>);
        Ok(self)
    }

    /// The JSON Schema of the result's structured data, where the tool has a type for it
    /// (deriving it the first time).
    pub fn output(&self) -> Result<Option<&Value>> {
        let Some(derive) = self.output else {
            return Ok(None);
        };
        self.output_schema
            .get_or_init(|| derive().map_err(|e| e.to_string()))
            .as_ref()
            .map(Some)
            .map_err(|e| Error::Config(format!("output schema of {}: {e}", self.spec.name)))
    }

    /// A schema that came as JSON (an external MCP server's `inputSchema`). It is compiled
    /// now, so a schema that does not compile is refused here; it compiles without fetching
    /// anything: a `$ref` to another document fails, as it should.
    pub fn from_json(name: &str, description: String, parameters: Value) -> Result<Self> {
        let schema = Self::build(name, description, parameters, Dialect::Declared)?;
        schema.validator()?;
        Ok(schema)
    }

    fn build(name: &str, description: String, parameters: Value, dialect: Dialect) -> Result<Self> {
        Ok(Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description,
                parameters: Arc::new(parameters),
            },
            dialect,
            validator: OnceLock::new(),
            output: None,
            output_schema: OnceLock::new(),
        })
    }

    /// How its validator compiles.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The compiled validator (compiling it the first time).
    pub fn validator(&self) -> Result<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| {
                let options = match self.dialect {
                    Dialect::Draft7 => jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft7)
                        .should_validate_formats(false),
                    Dialect::Declared => jsonschema::options(),
                };
                options
                    .build(&self.spec.parameters)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| Error::Config(format!("schema of {}: {e}", self.spec.name)))
    }

    /// As [`ToolSchema::of`] with no required fields, for a tool that gathers its arguments
    /// over several turns: what is missing is asked for instead of refused. (Compiled once:
    /// a validator costs cold-start time, the flight schema's patterns most.)
    pub fn gathering<T: JsonSchema>(name: ToolName) -> Result<Self> {
        let mut parameters = bare_schema::<T>()?;
        if let Some(object) = parameters.as_object_mut() {
            object.remove("required");
        }
        Self::described(name.as_str(), parameters)
    }

    /// A derived schema whose top-level description becomes the tool's.
    fn described(name: &str, mut parameters: Value) -> Result<Self> {
        let description = parameters
            .as_object_mut()
            .and_then(|object| object.remove("description"))
            .and_then(|d| d.as_str().map(str::to_owned))
            .unwrap_or_default();
        let dialect = Dialect::of_derived(&parameters);
        Self::build(name, description, parameters, dialect)
    }

    /// Validates `args` against the schema, then deserialises them. Errors name the
    /// offending fields so the LLM can fix its call.
    pub fn parse<T: DeserializeOwned>(&self, args: &Value) -> Result<T> {
        let problems: Vec<String> = self
            .validator()?
            .iter_errors(args)
            .take(MAX_REPORTED_ERRORS)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{}: {e}", path.trim_start_matches('/').replace('/', "."))
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(Error::Invalid(problems.join("; ")));
        }
        serde_json::from_value(args.clone()).map_err(|e| Error::Invalid(e.to_string()))
    }
}

/// `T`'s JSON Schema without the `$schema` and `title` noise.
fn bare_schema<T: JsonSchema>() -> Result<Value> {
    let mut schema = serde_json::to_value(schemars::schema_for!(T))?;
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::domain::flight::FlightSearchInput;

    #[test]
    fn the_output_schema_is_derived_at_its_first_read() {
        use shared::domain::tool_output::FlightSearchOutput;
        let without = ToolSchema::of::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS).unwrap();
        assert_eq!(without.output().unwrap(), None);
        let with = without.with_output::<FlightSearchOutput>().unwrap();
        assert!(
            with.output_schema.get().is_none(),
            "derived before it was read"
        );
        let derived = bare_schema::<FlightSearchOutput>().unwrap();
        assert_eq!(with.output().unwrap(), Some(&derived));
        assert_eq!(derived["type"], "object");
    }

    #[test]
    /// Seed 000 §2.2's parameters, with §5.1's children, infants and flexibility.
    fn flight_schema_has_the_seed_parameters() {
        let schema = ToolSchema::of::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS).unwrap();
        let params = &schema.spec.parameters;
        let mut required: Vec<&str> = params["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["cabin", "depart_date", "destination", "origin"]);
        let mut props: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
        props.sort_unstable();
        assert_eq!(
            props,
            [
                "award_only",
                "cabin",
                "children",
                "constraints",
                "depart_date",
                "destination",
                "flexibility",
                "infants",
                "loyalty_programs",
                "origin",
                "pax",
                "return_date",
                "reuse_last_request"
            ]
        );
        assert!(!schema.spec.description.is_empty());
        assert!(params.get("$schema").is_none());

        // The tool gathers a request over turns: nothing is required, the rest still holds.
        let gathering =
            ToolSchema::gathering::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS).unwrap();
        assert_eq!(gathering.spec.description, schema.spec.description);
        assert!(gathering.spec.parameters.get("required").is_none());
        gathering
            .parse::<Value>(&json!({"destination": "JFK"}))
            .unwrap();
        assert!(
            gathering
                .parse::<Value>(&json!({"origin": "FRANKFURT"}))
                .is_err()
        );
    }

    #[test]
    fn a_derived_schema_judges_as_draft_7_what_2020_12_would() {
        let samples = [
            json!({"origin": "FRA", "destination": "JFK", "depart_date": "2027-03-01", "cabin": "BUSINESS"}),
            json!({"origin": "FRANKFURT", "destination": "JF", "depart_date": "soon", "cabin": "business"}),
            json!({"origin": "FRA", "destination": "JFK", "depart_date": "2027-03-01", "cabin": "FIRST",
                   "pax": 12, "children": -1, "flexibility": 4, "loyalty_programs": ["", "Flying Blue"],
                   "constraints": {"alliances": ["a", "b", "c", "d"], "max_taxes": -5}}),
            json!({"origin": null, "award_only": "yes", "return_date": 7}),
            json!([]),
        ];
        for schema in [
            ToolSchema::of::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS).unwrap(),
            ToolSchema::gathering::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS).unwrap(),
        ] {
            assert_eq!(schema.dialect(), Dialect::Draft7);
            let latest = jsonschema::validator_for(&schema.spec.parameters).unwrap();
            for args in &samples {
                let errors = |v: &jsonschema::Validator| -> Vec<String> {
                    let mut errors: Vec<String> = v
                        .iter_errors(args)
                        .map(|e| format!("{}: {e}", e.instance_path()))
                        .collect();
                    errors.sort();
                    errors
                };
                assert_eq!(
                    errors(schema.validator().unwrap()),
                    errors(&latest),
                    "{args}"
                );
            }
        }
    }

    #[test]
    fn a_ref_with_siblings_or_a_newer_keyword_keeps_the_declared_dialect() {
        let draft_7 = json!({"type": "object", "$defs": {"code": {"type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/code", "description": "an annotation"}}});
        assert_eq!(Dialect::of_derived(&draft_7), Dialect::Draft7);
        for newer in [
            json!({"properties": {"a": {"$ref": "#/$defs/code", "maxLength": 3}}}),
            json!({"properties": {"a": {"prefixItems": [{"type": "string"}]}}}),
            json!({"anyOf": [{"type": "object", "unevaluatedProperties": false}]}),
            json!({"properties": {"a": {"items": [{"type": "string"}]}}}),
        ] {
            assert_eq!(Dialect::of_derived(&newer), Dialect::Declared, "{newer}");
        }
    }

    #[test]
    fn invalid_arguments_name_the_field() {
        let schema = ToolSchema::of::<FlightSearchInput>(ToolName::SEARCH_FLIGHTS).unwrap();
        let err = schema
            .parse::<FlightSearchInput>(&json!({
                "origin": "FRANKFURT", "destination": "JFK",
                "depart_date": "2025-06-01", "cabin": "BUSINESS"
            }))
            .unwrap_err();
        assert!(err.to_string().contains("origin"), "{err}");
        let err = schema
            .parse::<FlightSearchInput>(&json!({"origin": "FRA"}))
            .unwrap_err();
        assert!(err.to_string().contains("destination"), "{err}");
    }
}
