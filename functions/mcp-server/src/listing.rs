//! `tools/list`: the served tools with the JSON Schemas the model sees, in the configured
//! order (MCP clients may cache the list: it changes only with a deploy).

use std::sync::Arc;

use agent::llm::ToolSpec;
use rmcp::model::{CacheScope, ListToolsResult, Tool};
use serde_json::Value;

/// How long a client may keep the list: it changes only with a deploy.
pub const LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// A served tool as MCP lists it: the spec the model sees and, where the tool has a type
/// for its result's data, that data's schema. `None` for a spec whose parameters are not a
/// JSON object schema (which the registry never builds): logged rather than sent malformed.
pub fn tool(spec: &ToolSpec, output_schema: Option<&Value>) -> Option<Tool> {
    let Some(schema) = spec.parameters.as_object() else {
        tracing::error!(tool = %spec.name, "tool schema is not an object; not listed");
        return None;
    };
    let mut tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema.clone()),
    );
    // MCP wants an object schema here; anything else is left out, not sent.
    tool.output_schema = output_schema
        .and_then(Value::as_object)
        .filter(|o| o.get("type").and_then(Value::as_str) == Some("object"))
        .map(|o| Arc::new(o.clone()));
    Some(tool)
}

/// The whole list in one page, with its cache hint.
pub fn list_result(tools: &[Tool]) -> ListToolsResult {
    ListToolsResult::with_all_items(tools.to_vec())
        .with_ttl_ms(LIST_TTL_MS)
        .with_cache_scope(CacheScope::Public)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, parameters: serde_json::Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("{name} does things"),
            parameters: parameters.into(),
        }
    }

    #[test]
    fn the_model_schema_is_the_listed_schema_with_the_result_schema_beside_it() {
        let schema = json!({"type": "object", "properties": {"origin": {"type": "string"}},
                            "required": ["origin"]});
        let output = json!({"type": "object", "properties": {"results": {"type": "array"}}});
        let tools: Vec<Tool> = [
            tool(&spec("search_flights", schema.clone()), Some(&output)),
            tool(&spec("broken", json!("not a schema")), None),
            // Not an object schema: listed without one rather than malformed.
            tool(
                &spec("search_knowledge_base", json!({"type": "object"})),
                Some(&json!({"type": "array"})),
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        let listed = serde_json::to_value(list_result(&tools)).unwrap_or_default();
        let tools = listed["tools"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["search_flights", "search_knowledge_base"]);
        assert_eq!(tools[0]["inputSchema"], schema);
        assert_eq!(tools[0]["outputSchema"], output);
        assert!(tools[1].get("outputSchema").is_none(), "{listed}");
        assert_eq!(tools[0]["description"], json!("search_flights does things"));
        assert_eq!(listed["ttlMs"], json!(LIST_TTL_MS), "{listed}");
    }
}
