//! Tables in the docs that state what the code decides: the agent profiles and their tools,
//! the tools, the input limits and the routes (the error codes' tables are generated:
//! generated.rs). Each is compared with the code
//! here (`make test`), so a change to one without the other fails; a fixture with wrong
//! rows proves each comparison can fail.

use std::collections::BTreeMap;

use agent::TurnErrorCode;
use agent::profiles::{AgentCatalog, ToolChoiceMode};
use docs_check::{limit_mismatches, row_mismatches, table};
use schemars::JsonSchema;
use serde_json::Value;
use shared::http::error::ErrorCode;

const ARCHITECTURE: &str = include_str!("../../../../docs/architecture.md");
const API: &str = include_str!("../../../../docs/api.md");
const SECURITY: &str = include_str!("../../../../docs/security.md");
const OPENAPI: &str = include_str!("../../../../docs/openapi.json");
const WRONG: &str = include_str!("../fixtures/wrong-tables.md");

const PROFILES: &[&str] = &["profile", "`tool_choice`", "`handoffs`"];
const TOOLS: &[&str] = &["tool", "does"];
const INPUT_LIMITS: &[&str] = &["what", "limit", "answer"];

type Rows = BTreeMap<String, Vec<String>>;

/// The first backticked word of a cell: `` `travel` (default) `` → `travel`.
fn name(cell: &str) -> String {
    cell.split('`').nth(1).unwrap_or(cell).to_owned()
}

/// A cell listing names: `` `a`, `b` `` → `a, b`; `none` stays.
fn names(cell: &str) -> String {
    let listed: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
    if listed.is_empty() {
        cell.to_owned()
    } else {
        listed.join(", ")
    }
}

fn documented_profiles(markdown: &str) -> Rows {
    table(markdown, PROFILES)
        .iter()
        .map(|row| (name(&row[0]), vec![name(&row[1]), names(&row[2])]))
        .collect()
}

fn list_or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn code_profiles() -> Rows {
    let catalog = AgentCatalog::built_in().expect("config/agents.toml loads");
    catalog
        .profiles()
        .map(|p| {
            let choice = match &p.tool_choice {
                ToolChoiceMode::Auto => "auto".to_owned(),
                ToolChoiceMode::Required => "required".to_owned(),
                ToolChoiceMode::None => "none".to_owned(),
                ToolChoiceMode::Tool(tool) => tool.as_str().to_owned(),
            };
            (
                p.name.clone(),
                vec![choice, list_or_none(p.handoffs.clone())],
            )
        })
        .collect()
}

/// The tools the table describes.
fn documented_tools(markdown: &str) -> Vec<String> {
    table(markdown, TOOLS)
        .iter()
        .map(|row| name(&row[0]))
        .collect()
}

/// Documented tools the deployment does not register (`agent_tools::tools!`). The table
/// need not list every tool: a team's own tools are theirs to describe.
fn unknown_tools(documented: &[String]) -> Vec<String> {
    documented
        .iter()
        .filter(|name| {
            !agent::tools::CATALOG
                .iter()
                .any(|t| t.name.as_str() == *name)
        })
        .map(|name| format!("tools: `{name}` is documented but not registered"))
        .collect()
}

/// The string values a type serialises to, from its JSON Schema (`enum` or `const`s).
fn serialised_names<T: JsonSchema>() -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(c)) = map.get("const") {
                    out.push(c.clone());
                }
                if let Some(Value::Array(items)) = map.get("enum") {
                    out.extend(items.iter().filter_map(|v| v.as_str().map(str::to_owned)));
                }
                map.values().for_each(|v| collect(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    let mut names = Vec::new();
    collect(&schema, &mut names);
    names.sort();
    names.dedup();
    names
}

pub(crate) fn code_http_errors() -> Rows {
    serialised_names::<ErrorCode>()
        .into_iter()
        .map(|code| {
            let parsed: ErrorCode =
                serde_json::from_value(Value::String(code.clone())).expect("a code parses back");
            (code, vec![parsed.status().to_string()])
        })
        .collect()
}

pub(crate) fn code_turn_errors() -> Rows {
    serialised_names::<TurnErrorCode>()
        .into_iter()
        .map(|code| (code, Vec::new()))
        .collect()
}

/// `2048` → `2,048`, as the docs write numbers.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What security.md's input-limits table must say, from the constants that enforce it.
fn code_input_limits() -> Vec<(&'static str, Vec<String>)> {
    use chat_router::validate::{DEFAULT_PAGE, MAX_CURSOR_LEN, MAX_ID_LEN, MAX_PAGE};
    use shared::domain::tool_args::{AskGptArgs, KnowledgeBaseArgs};
    vec![
        (
            "any JSON request body",
            vec![format!("{} KiB", shared::http::MAX_BODY_BYTES / 1024)],
        ),
        (
            "bearer token",
            vec![format!(
                "{} KiB",
                shared::http::auth::MAX_TOKEN_BYTES / 1024
            )],
        ),
        (
            "audit page `limit`",
            vec![
                format!("from 1 to {MAX_PAGE}"),
                format!("(default {DEFAULT_PAGE})"),
            ],
        ),
        (
            "ids in paths and bodies (`chat_id`, `call_id`, `turn_id`), audit `cursor`",
            vec![
                format!("ids: 1–{MAX_ID_LEN}"),
                format!("at most {} characters", thousands(MAX_CURSOR_LEN)),
            ],
        ),
        (
            "tool arguments from the model",
            vec![
                format!(
                    "`ask_gpt` query ≤ {}",
                    thousands(AskGptArgs::MAX_QUERY_CHARS)
                ),
                format!("context ≤ {}", thousands(AskGptArgs::MAX_CONTEXT_CHARS)),
                format!(
                    "kb query ≤ {}",
                    thousands(KnowledgeBaseArgs::MAX_QUERY_CHARS)
                ),
            ],
        ),
        (
            "tool calls per model step",
            vec![format!(
                "at most {} stored",
                agent::MAX_CALLS_STORED_PER_STEP
            )],
        ),
        (
            "upstream response bodies",
            vec![format!(
                "at most {} MB",
                shared::upstream::MAX_BODY_BYTES / (1024 * 1024)
            )],
        ),
        (
            "knowledge-base query",
            vec![
                format!(
                    "at most {} characters",
                    thousands(kb_retrieve::handler::MAX_QUERY_CHARS)
                ),
                format!("clamped to 1–{}", kb_retrieve::handler::MAX_TOP_K),
            ],
        ),
    ]
}

#[test]
fn the_input_limits_table_states_the_code_s_limits() {
    let problems = limit_mismatches(&table(SECURITY, INPUT_LIMITS), &code_input_limits());
    assert!(
        problems.is_empty(),
        "security.md input limits: {problems:#?}"
    );
}

/// Every `METHOD /path` of an entry point's routes cell.
fn routes_cell(markdown: &str, entry_point: &str) -> Vec<String> {
    let header = ["entry point", "stack output", "routes", "auth"];
    let rows = table(markdown, &header);
    let mut routes: Vec<String> = rows
        .iter()
        .filter(|row| row[0] == entry_point)
        .flat_map(|row| {
            row[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    routes.sort();
    routes
}

/// The chat-router's routes in the OpenAPI document (which its own test checks against the
/// router's code).
fn router_routes() -> Vec<String> {
    let document: Value = serde_json::from_str(OPENAPI).expect("docs/openapi.json parses");
    let mut routes = Vec::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        let tool_route = ["/flights", "/kb", "/internal"]
            .iter()
            .any(|p| path.starts_with(p));
        for method in item.as_object().into_iter().flatten().map(|(m, _)| m) {
            if !tool_route && ["get", "post", "delete", "put", "patch"].contains(&method.as_str()) {
                routes.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    routes.sort();
    routes
}

#[test]
fn api_md_lists_every_route_of_the_chat_router() {
    assert_eq!(
        routes_cell(API, "chat-router Function URL"),
        router_routes()
    );
    let wrong = routes_cell(WRONG, "chat-router Function URL");
    assert!(!wrong.is_empty() && wrong != router_routes(), "{wrong:?}");
}

#[test]
fn the_profile_table_is_config_agents_toml() {
    let problems = row_mismatches(
        "architecture.md profiles",
        &documented_profiles(ARCHITECTURE),
        &code_profiles(),
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_tool_table_describes_registered_tools() {
    let documented = documented_tools(ARCHITECTURE);
    assert!(documented.len() >= 5, "{documented:?}");
    let problems = unknown_tools(&documented);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The fixture gets one row of each table wrong (and leaves rows out): each comparison says
/// what differs.
#[test]
fn wrong_tables_are_reported() {
    let profiles = row_mismatches("profiles", &documented_profiles(WRONG), &code_profiles());
    assert!(
        profiles
            .iter()
            .any(|p| p.contains("`travel` is documented as")),
        "{profiles:#?}"
    );
    assert!(
        profiles.iter().any(|p| p.contains("no row for `support`")),
        "{profiles:#?}"
    );
    let tools = unknown_tools(&documented_tools(WRONG));
    assert_eq!(
        tools,
        ["tools: `book_hotel` is documented but not registered"],
        "{tools:#?}"
    );
    let limits = limit_mismatches(&table(WRONG, INPUT_LIMITS), &code_input_limits());
    assert!(
        limits
            .iter()
            .any(|p| p.contains("`bearer token`: the code says \"16 KiB\"")),
        "{limits:#?}"
    );
    assert!(
        limits
            .iter()
            .any(|p| p.contains("no row `any JSON request body`")),
        "{limits:#?}"
    );
}
