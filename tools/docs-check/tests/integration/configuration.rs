//! `docs/configuration.md` against the code: every variable a binary reads is documented
//! with the code's default, no documented variable is read by nothing, and every template
//! parameter's default is the template's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::CommandFactory;
use docs_check::{config_mismatches, config_rows, template_defaults};
use shared::config::{Env, VarDefault};

fn repo_file(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs every function's configuration readers (and kb-ingest's key lookup) against `env`, ignoring their errors (the
/// reads are what counts).
fn read_all(env: &Env) {
    let _ = chat_router::Config::from_env(env);
    let _ = tool_worker::Config::from_env(env);
    let _ = seatsaero_search::Config::from_env(env);
    let _ = cash_search::Config::from_env(env);
    let _ = kb_retrieve::Config::from_env(env);
    let _ = mcp_server::config::Config::from_env(env);
    let _ = agent::profiles::AgentCatalog::from_env(env);
    let _ = shared::http::auth::AuthConfig::from_env(env);
    let _ = shared::http::route_access::AccessConfig::from_env(env);
    let _ = shared::config::secrets_cache_ttl(env);
    let _ = kb_ingest::cli::direct_api_key(env);
    let _ = shared::metrics::Metrics::stdout("docs-check", env);
    let _ = shared::telemetry::TelemetryConfig::from_env(env);
}

/// What the functions read through `Env`, with their defaults. Required variables
/// are filled in round by round, so readers behind an early error are reached too.
fn function_reads() -> BTreeMap<String, VarDefault> {
    let mut vars: BTreeMap<String, String> =
        BTreeMap::from([("JWT_SECRET_NAME".to_owned(), "jwt".to_owned())]);
    let mut reads = BTreeMap::new();
    for _ in 0..8 {
        let env = Env::from_pairs(vars.clone()).recording();
        read_all(&env);
        // Defaults as read with the variable unset: the first time a name is seen.
        for (name, default) in env.reads() {
            reads.entry(name).or_insert(default);
        }
        let missing: Vec<String> = reads
            .iter()
            .filter(|(name, d)| **d == VarDefault::Required && !vars.contains_key(*name))
            .map(|(name, _)| name.clone())
            .collect();
        if missing.is_empty() {
            return reads;
        }
        for name in missing {
            let value = if name.ends_with("_URL") || name.ends_with("_URLS") {
                "http://127.0.0.1:9/x".to_owned()
            } else {
                "x".to_owned()
            };
            vars.insert(name, value);
        }
    }
    panic!("required variables kept appearing: {reads:?}");
}

/// What the command-line tools read through clap's `env`, with their defaults.
fn cli_reads() -> BTreeMap<String, VarDefault> {
    let mut reads = BTreeMap::new();
    for command in [kb_ingest::cli::Args::command(), chat::args::Args::command()] {
        for arg in command.get_arguments() {
            let Some(name) = arg.get_env().and_then(|n| n.to_str()) else {
                continue;
            };
            let default = match arg.get_default_values() {
                [] => VarDefault::Unset,
                [value, ..] if value.is_empty() => VarDefault::Unset,
                [value, ..] => VarDefault::Value(value.to_string_lossy().into_owned()),
            };
            reads.entry(name.to_owned()).or_insert(default);
        }
    }
    reads
}

/// Read by the AWS SDK or the log filter, not through the project's configuration code.
fn read_outside_the_code(name: &str) -> bool {
    name.starts_with("AWS_") || name == "RUST_LOG"
}

#[test]
fn every_variable_is_documented_with_the_code_s_default() {
    let documented = config_rows(&repo_file("docs/configuration.md"), "variable");
    assert!(documented.len() > 30, "the table was not found");
    let functions = function_reads();
    // A variable both a function and a tool read is documented with the function's default.
    let mut code = cli_reads();
    code.extend(functions);
    let mut problems = config_mismatches(&documented, &code);
    problems.extend(
        documented
            .keys()
            .filter(|name| !code.contains_key(*name) && !read_outside_the_code(name))
            .map(|name| format!("{name} is documented but nothing reads it")),
    );
    assert!(
        problems.is_empty(),
        "docs/configuration.md disagrees with the code:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_template_parameter_is_documented_with_its_default() {
    let documented = config_rows(&repo_file("docs/configuration.md"), "parameter");
    let template = template_defaults(&repo_file("template.yaml"));
    assert!(!template.is_empty(), "no Parameters in template.yaml");
    let mut problems = config_mismatches(&documented, &template);
    problems.extend(
        documented
            .keys()
            .filter(|name| !template.contains_key(*name))
            .map(|name| format!("{name} is documented but not a template parameter")),
    );
    assert!(
        problems.is_empty(),
        "docs/configuration.md disagrees with template.yaml:\n{}",
        problems.join("\n")
    );
}
