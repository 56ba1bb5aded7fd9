//! The committed docs/openapi.json is what the code generates, and names every route of the
//! chat-router with the methods it answers.

use std::collections::BTreeSet;
use std::path::Path;

use openapi::{DOCUMENT_PATH, FUNCTION_KEY, REGENERATE, document, render};
use serde_json::Value;

fn committed_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(DOCUMENT_PATH);
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn committed_document_is_current() {
    let generated = document().unwrap();
    let committed: Value = serde_json::from_str(&committed_text()).unwrap_or(Value::Null);
    assert!(
        committed == generated,
        "{DOCUMENT_PATH} differs from what the code generates: run `{REGENERATE}` and commit it"
    );
    assert_eq!(
        committed_text(),
        render(&generated),
        "{DOCUMENT_PATH} is not formatted as written: run `{REGENERATE}`"
    );
}

#[test]
fn router_paths_match_the_router() {
    let doc = document().unwrap();
    let mut names = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if item[FUNCTION_KEY] != "chat-router" {
            continue;
        }
        // Sample ids for the templates' parameters; under a prefix, as the router sees them.
        let concrete = path
            .split('/')
            .map(|s| if s.starts_with('{') { "X1" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        let (name, methods) =
            chat_router::handler::route_summary(&format!("/lambda-url/chat-router{concrete}"))
                .unwrap_or_else(|| {
                    panic!("{path} is documented but the router has no route for it")
                });
        let mut answered: Vec<String> = methods.iter().map(|m| m.as_str().to_lowercase()).collect();
        answered.sort();
        let mut documented: Vec<String> = item
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| ["get", "post", "put", "patch", "delete"].contains(&k.as_str()))
            .cloned()
            .collect();
        documented.sort();
        assert_eq!(
            documented, answered,
            "{path}: documented methods differ from the router's"
        );
        names.insert(name);
    }
    assert_eq!(
        names.len(),
        chat_router::handler::ROUTE_COUNT,
        "the router has routes the document does not name; documented: {names:?}"
    );
}
