//! `tools/list`: the served tools with the JSON Schemas the model sees, in the configured
//! order (MCP clients may cache the list: it changes only with a deploy).

use std::sync::Arc;

use agent::llm::ToolSpec;
use rmcp::model::{CacheScope, ListToolsResult, Tool};

/// How long a client may keep the list: it changes only with a deploy.
pub const LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// One MCP tool per spec whose parameters are a JSON object schema; a spec that is not
/// (which the registry never builds) is left out and logged rather than sent malformed.
pub fn tools(specs: &[ToolSpec]) -> Vec<Tool> {
    specs
        .iter()
        .filter_map(|spec| match spec.parameters.as_object() {
            Some(schema) => Some(Tool::new(
                spec.name.clone(),
                spec.description.clone(),
                Arc::new(schema.clone()),
            )),
            None => {
                tracing::error!(tool = %spec.name, "tool schema is not an object; not listed");
                None
            }
        })
        .collect()
}

/// The whole list in one page, with its cache hint.
pub fn list_result(specs: &[ToolSpec]) -> ListToolsResult {
    ListToolsResult::with_all_items(tools(specs))
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
            parameters,
        }
    }

    #[test]
    fn the_model_schema_is_the_listed_schema() {
        let schema = json!({"type": "object", "properties": {"origin": {"type": "string"}},
                            "required": ["origin"]});
        let specs = [
            spec("search_flights", schema.clone()),
            spec("broken", json!("not a schema")),
            spec("search_knowledge_base", json!({"type": "object"})),
        ];
        let result = list_result(&specs);
        let listed = serde_json::to_value(&result).unwrap_or_default();
        let tools = listed["tools"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["search_flights", "search_knowledge_base"]);
        assert_eq!(tools[0]["inputSchema"], schema);
        assert_eq!(tools[0]["description"], json!("search_flights does things"));
        assert_eq!(listed["ttlMs"], json!(LIST_TTL_MS), "{listed}");
    }
}
