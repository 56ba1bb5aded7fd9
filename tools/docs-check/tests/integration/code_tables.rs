//! Tables in the docs whose rows the code decides but whose cells are prose: the tools the
//! architecture describes and the input limits. Each is compared with the code here (`make
//! test`); a fixture with wrong rows proves each comparison can fail. The tables the code
//! writes whole are generated (generated.rs).

use std::collections::BTreeMap;

use agent::TurnErrorCode;
use docs_check::{limit_mismatches, table};
use schemars::JsonSchema;
use serde_json::Value;
use shared::http::error::ErrorCode;

const ARCHITECTURE: &str = include_str!("../../../../docs/architecture.md");
const SECURITY: &str = include_str!("../../../../docs/security.md");
const WRONG: &str = include_str!("../fixtures/wrong-tables.md");

const TOOLS: &[&str] = &["tool", "does"];
const INPUT_LIMITS: &[&str] = &["what", "limit", "answer"];

type Rows = BTreeMap<String, Vec<String>>;

/// The first backticked word of a cell: `` `travel` (default) `` → `travel`.
fn name(cell: &str) -> String {
    cell.split('`').nth(1).unwrap_or(cell).to_owned()
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
