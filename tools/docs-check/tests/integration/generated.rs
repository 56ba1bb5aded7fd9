//! The reference tables the code owns, written by `make docs` (this module with `DOCS_WRITE=1`)
//! and checked here: a committed page that differs fails and names the row. The settings
//! (default, who reads them, the template parameter behind them), the template's parameters,
//! its secrets, its functions with their log groups and alarms, the tools' limits, and the error
//! codes of the HTTP envelope (with their statuses) and of a turn's `error` event.
//!
//! "Read by" comes from running each binary's start-up (`Deps::from_env`, the command-line
//! tools' argument parsers) against an environment that records what is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{CommandFactory, Parser};
use docs_check::generate::{Order, Owned, apply};
use docs_check::{show_default, template_defaults};
use serde_json::Value;
use shared::config::{Env, VarDefault};

const CONFIGURATION: &str = "docs/configuration.md";
const OPERATIONS: &str = "docs/operations.md";
const API: &str = "docs/api.md";
const SECURITY: &str = "docs/security.md";

/// The binaries whose reads the settings table lists, in its order.
const FUNCTIONS: [&str; 6] = [
    "chat-router",
    "tool-worker",
    "mcp-server",
    "seatsaero-search",
    "cash-search",
    "kb-retrieve",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn writing() -> bool {
    std::env::var_os("DOCS_WRITE").is_some_and(|v| !v.is_empty())
}

/// Starts `function` as its `main` does, up to serving; what it read before an error counts,
/// and the error is returned (it may name a variable to fill in).
async fn start(function: &str, env: &Env) -> Option<String> {
    fn err<T, E: std::fmt::Display>(r: Result<T, E>) -> Option<String> {
        r.err().map(|e| e.to_string())
    }
    match function {
        "chat-router" => err(chat_router::Deps::from_env(env).await),
        "tool-worker" => err(tool_worker::Deps::from_env(env).await),
        "mcp-server" => err(mcp_server::deps::from_env(env).await),
        "seatsaero-search" => err(seatsaero_search::Deps::from_env(env).await),
        "cash-search" => err(cash_search::Deps::from_env(env).await),
        "kb-retrieve" => err(kb_retrieve::handler::Deps::from_env(env).await),
        other => panic!("no start-up for {other}"),
    }
}

/// The switches that make a function read more: each is tried on its own, and a variable
/// read under any of them is read by the function.
const SWITCHES: &[&[(&str, &str)]] = &[
    &[],
    &[("PUBLIC_TOOL_ROUTES", "true")],
    &[("CASH_PROVIDER", "amadeus")],
    &[("LLM_PROVIDER", "bedrock")],
    &[("KB_BACKEND", "bedrock")],
    &[("EMBEDDINGS_PROVIDER", "bedrock")],
    &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")],
];

/// A value that passes the checks of a variable the code needs.
fn filler(name: &str) -> &'static str {
    if name.ends_with("_URL") || name.ends_with("_URLS") {
        "http://127.0.0.1:9/x"
    } else {
        "x"
    }
}

/// What `function` reads at start-up under `switch`, with the defaults. Variables it needs
/// (required ones, and those its error names) are filled in round by round, so reads behind
/// an early error are reached too.
async fn reads_under(function: &str, switch: &[(&str, &str)]) -> BTreeMap<String, VarDefault> {
    let mut vars: BTreeMap<String, String> = switch
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .chain([("JWT_SECRET_NAME".to_owned(), "jwt".to_owned())])
        .collect();
    let mut reads: BTreeMap<String, VarDefault> = BTreeMap::new();
    for _ in 0..12 {
        let env = Env::from_pairs(vars.clone()).recording();
        let error = start(function, &env).await.unwrap_or_default();
        for (name, default) in env.reads() {
            reads.entry(name).or_insert(default);
        }
        let missing: Vec<String> = reads
            .iter()
            .filter(|(name, d)| {
                !vars.contains_key(*name)
                    && (**d == VarDefault::Required || error.contains(name.as_str()))
            })
            .map(|(name, _)| name.clone())
            .collect();
        if missing.is_empty() {
            return reads;
        }
        for name in missing {
            let value = filler(&name);
            vars.insert(name, value.to_owned());
        }
    }
    panic!("{function}: required variables kept appearing: {reads:?}");
}

/// What `function` reads under any switch; the defaults as read without one.
async fn function_reads(function: &str) -> BTreeMap<String, VarDefault> {
    let mut reads = BTreeMap::new();
    for switch in SWITCHES {
        for (name, default) in reads_under(function, switch).await {
            reads.entry(name).or_insert(default);
        }
    }
    reads
}

/// What a command-line tool reads through clap's `env`, with the defaults.
fn cli_reads(command: clap::Command) -> BTreeMap<String, VarDefault> {
    let mut reads = BTreeMap::new();
    let mut commands = vec![command];
    while let Some(command) = commands.pop() {
        commands.extend(command.get_subcommands().cloned());
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

/// Every binary with what it reads, in the table's order.
async fn reads_by_binary() -> Vec<(&'static str, BTreeMap<String, VarDefault>)> {
    let mut all = Vec::new();
    for function in FUNCTIONS {
        all.push((function, function_reads(function).await));
    }
    let mut ingest = cli_reads(kb_ingest::cli::Args::command());
    for switch in SWITCHES {
        let env = Env::from_pairs(switch.iter().copied()).recording();
        let _ = kb_ingest::cli::direct_api_key(&env);
        let args = kb_ingest::cli::Args::try_parse_from(["kb-ingest", "--table", "x", "docs"])
            .unwrap_or_else(|e| panic!("kb-ingest's arguments: {e}"));
        let _ = args.embeddings_config(&env);
        for (name, default) in env.reads() {
            ingest.entry(name).or_insert(default);
        }
    }
    all.push(("kb-ingest", ingest));
    all.push(("chat", cli_reads(chat::args::Args::command())));
    all.push(("dev-stack", cli_reads(dev_stack::cli::Cli::command())));
    all
}

/// Read by the AWS SDK or the log filter, not through the project's configuration code: the
/// page writes these rows whole.
fn read_outside_the_code(name: &str) -> bool {
    name.starts_with("AWS_") || name == "RUST_LOG"
}

/// `infra/docs/template_facts.py`: what the template decides, as JSON.
fn template_facts() -> Value {
    let root = root();
    let python = root.join(".local/venv/bin/python");
    let python = if python.exists() {
        python
    } else {
        PathBuf::from("python3")
    };
    let out = Command::new(&python)
        .arg(root.join("infra/docs/template_facts.py"))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    assert!(
        out.status.success(),
        "infra/docs/template_facts.py failed (it needs cfn-lint: ./infra/local/install.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("template facts are JSON")
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn ticked(names: &[String]) -> String {
    if names.is_empty() {
        "—".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The entries of a JSON array (none when it is not one).
fn items(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

async fn settings(facts: &Value) -> Owned {
    let by_binary = reads_by_binary().await;
    let mut defaults: BTreeMap<String, VarDefault> = BTreeMap::new();
    let mut readers: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (binary, reads) in &by_binary {
        for (name, default) in reads {
            defaults
                .entry(name.clone())
                .or_insert_with(|| default.clone());
            readers.entry(name.clone()).or_default().push(binary);
        }
    }
    let parameters = &facts["variables"];
    let rows = defaults
        .iter()
        .filter(|(name, _)| !read_outside_the_code(name))
        .map(|(name, default)| {
            let params = strings(&parameters[name.as_str()]);
            (
                name.clone(),
                vec![
                    show_default(default),
                    readers[name].join(", "),
                    ticked(&params),
                ],
            )
        })
        .collect();
    Owned::new(
        "settings",
        &[
            "variable",
            "default",
            "read by",
            "template parameter",
            "meaning",
        ],
        3,
        Order::Page,
        rows,
    )
    // The SDK's and the log filter's rows: the page writes them.
    .keeping(aws_rows().into_iter().collect())
}

/// The page's rows of variables read outside the project's code (the SDK's, the log filter).
fn aws_rows() -> Vec<String> {
    let page = std::fs::read_to_string(root().join(CONFIGURATION)).unwrap_or_default();
    page.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|n| read_outside_the_code(n))
        .map(str::to_owned)
        .collect()
}

fn parameters(facts: &Value) -> Owned {
    let template = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    let mut sets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (variable, params) in facts["variables"].as_object().into_iter().flatten() {
        for param in strings(params) {
            sets.entry(param).or_default().push(variable.clone());
        }
    }
    let rows = template_defaults(&template)
        .into_iter()
        .map(|(name, default)| {
            let variables = sets.get(&name).cloned().unwrap_or_default();
            (name, vec![show_default(&default), ticked(&variables)])
        })
        .collect();
    Owned::new(
        "parameters",
        &["parameter", "default", "sets", "meaning"],
        2,
        Order::Page,
        rows,
    )
    // A parameter that only sets a variable is explained by the variable's row.
    .prose_optional()
}

fn secrets(facts: &Value) -> Owned {
    let rows = items(&facts["secrets"])
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_owned(),
                vec![
                    ticked(&strings(&s["variables"])),
                    strings(&s["readable_by"]).join(", "),
                ],
            )
        })
        .collect();
    Owned::new(
        "secrets",
        &["secret", "named by", "readable by", "holds"],
        2,
        Order::Code,
        rows,
    )
}

fn functions(facts: &Value) -> Owned {
    let rows = items(&facts["functions"])
        .map(|f| {
            let name = f["resource"].as_str().unwrap_or_default().to_owned();
            let binary = f["binary"].as_str().unwrap_or_default();
            let what = if f["hook"].as_bool() == Some(true) {
                format!("{binary} (pre-traffic hook)")
            } else {
                binary.to_owned()
            };
            (
                name,
                vec![
                    what,
                    f["memory"].as_str().unwrap_or_default().to_owned(),
                    f["timeout"].as_str().unwrap_or_default().to_owned(),
                    format!("`{}`", f["log_group"].as_str().unwrap_or("—")),
                    ticked(&strings(&f["alarms"])),
                ],
            )
        })
        .collect();
    Owned::new(
        "functions",
        &[
            "resource",
            "binary",
            "memory",
            "timeout",
            "log group",
            "alarms",
        ],
        5,
        Order::Code,
        rows,
    )
}

fn tools() -> Owned {
    use agent::profiles::AgentCatalog;
    use agent::tools::{Approval, CATALOG, McpExposure};
    let catalog = AgentCatalog::built_in().expect("config/agents.toml loads");
    let rows = CATALOG
        .iter()
        .map(|info| {
            let s = catalog.tool_settings(info.name);
            let limit = s.rate_limit.map_or("none".to_owned(), |l| {
                format!("{} per {} s", l.max, l.window.whole_seconds())
            });
            let retry = s.retry.map_or("the deployment's".to_owned(), |r| {
                format!("{} attempts, {} s", r.max_attempts, r.base_delay.as_secs())
            });
            let cache = s
                .cache_ttl
                .map_or("no".to_owned(), |t| format!("{} s", t.as_secs()));
            let approval = match s.approval {
                Approval::Never => "no",
                Approval::Always => "always",
            };
            let mcp = match info.mcp {
                McpExposure::Served => "yes",
                McpExposure::NotServed(_) => "no",
            };
            (
                info.name.as_str().to_owned(),
                vec![
                    format!("{} s", s.timeout.as_secs_f64()),
                    limit,
                    retry,
                    cache,
                    approval.to_owned(),
                    mcp.to_owned(),
                ],
            )
        })
        .collect();
    Owned::new(
        "tools",
        &[
            "tool",
            "timeout",
            "rate limit per user",
            "retries",
            "result cached",
            "approval",
            "MCP",
        ],
        6,
        Order::Code,
        rows,
    )
}

/// What each function's role may do, from its policies in the template.
fn iam(facts: &Value) -> Owned {
    let rows = items(&facts["functions"])
        .map(|f| {
            (
                f["resource"].as_str().unwrap_or_default().to_owned(),
                vec![
                    f["binary"].as_str().unwrap_or_default().to_owned(),
                    strings(&f["permissions"]).join("; "),
                ],
            )
        })
        .collect();
    Owned::new(
        "iam",
        &["resource", "binary", "its role may"],
        2,
        Order::Code,
        rows,
    )
}

/// Every route of the OpenAPI document (generated from the handlers' types) with what it
/// does and the statuses it answers, but the three every route may answer.
fn routes() -> Owned {
    const EVERY_ROUTE: [&str; 3] = ["500", "502", "504"];
    let text = std::fs::read_to_string(root().join("docs/openapi.json")).expect("openapi.json");
    let document: Value = serde_json::from_str(&text).expect("openapi.json parses");
    let mut rows = Vec::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            let statuses: Vec<&str> = op["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(status, _)| status.as_str())
                .filter(|status| !EVERY_ROUTE.contains(status))
                .collect();
            rows.push((
                format!("{} {path}", method.to_uppercase()),
                vec![
                    op["summary"].as_str().unwrap_or_default().to_owned(),
                    statuses.join(", "),
                ],
            ));
        }
    }
    Owned::new(
        "routes",
        &["route", "does", "answers"],
        2,
        Order::Code,
        rows,
    )
}

/// The agent profiles of `config/agents.toml`: the default, how hard each pushes the model to
/// call a tool, and whom it may hand off to.
fn profiles() -> Owned {
    use agent::profiles::AgentCatalog;
    let catalog = AgentCatalog::built_in().expect("config/agents.toml loads");
    let default = catalog.profile(None).map(|p| p.name.clone());
    let choice = |c: &agent::llm::ToolChoice| match c {
        agent::llm::ToolChoice::Auto => "`auto`".to_owned(),
        agent::llm::ToolChoice::Required => "`required`".to_owned(),
        agent::llm::ToolChoice::None => "`none`".to_owned(),
        agent::llm::ToolChoice::Tool(name) => format!("`{name}`"),
    };
    let rows = catalog
        .profiles()
        .map(|p| {
            let (first, later) = (p.tool_choice.for_step(0), p.tool_choice.for_step(1));
            let tool_choice = if first == later {
                choice(&first)
            } else {
                format!("{} (first step only)", choice(&first))
            };
            let handoffs = if p.handoffs.is_empty() {
                "none".to_owned()
            } else {
                ticked(&p.handoffs)
            };
            let is_default = if default.as_ref() == Some(&p.name) {
                "yes"
            } else {
                ""
            };
            (
                p.name.clone(),
                vec![is_default.to_owned(), tool_choice, handoffs],
            )
        })
        .collect();
    Owned::new(
        "profiles",
        &["profile", "default", "`tool_choice`", "`handoffs`"],
        3,
        Order::Page,
        rows,
    )
}

/// The error envelope's codes with their statuses, and the turn's `error` codes.
fn error_codes() -> [Owned; 2] {
    let http = crate::code_tables::code_http_errors().into_iter().collect();
    let turn = crate::code_tables::code_turn_errors()
        .into_keys()
        .map(|code| (code, Vec::new()))
        .collect();
    [
        Owned::new(
            "http-errors",
            &["code", "status", "produced when"],
            1,
            Order::Page,
            http,
        ),
        Owned::new("turn-errors", &["code", "when"], 0, Order::Page, turn),
    ]
}

fn pages(tables: Vec<(&'static str, Owned)>) -> BTreeMap<&'static str, Vec<Owned>> {
    let mut pages: BTreeMap<&'static str, Vec<Owned>> = BTreeMap::new();
    for (page, table) in tables {
        pages.entry(page).or_default().push(table);
    }
    pages
}

#[tokio::test]
async fn the_reference_tables_are_what_the_code_generates() {
    // Each function's start-up runs here, kb-retrieve's index load among them: only against
    // the emulators or an address where nothing listens, never AWS.
    let local = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|url| url.starts_with("http://127.0.0.1")));
    assert!(
        local,
        "point the AWS SDK at the emulators first (`source .local/run/env`); `make test` and `make docs` do"
    );
    let facts = template_facts();
    let tables = pages(vec![
        (CONFIGURATION, settings(&facts).await),
        (CONFIGURATION, parameters(&facts)),
        (CONFIGURATION, secrets(&facts)),
        (CONFIGURATION, tools()),
        (OPERATIONS, functions(&facts)),
        (SECURITY, iam(&facts)),
    ]);
    let mut tables = tables;
    tables.entry(API).or_default().push(routes());
    tables.entry(API).or_default().extend(error_codes());
    tables
        .entry("docs/architecture.md")
        .or_default()
        .push(profiles());
    let root = root();
    let problems: Vec<String> = tables
        .iter()
        .flat_map(|(page, tables)| apply(Path::new(&root), page, tables, writing()))
        .collect();
    assert!(
        problems.is_empty(),
        "the docs' generated tables differ from the code; `make docs` writes them:\n{}",
        problems.join("\n")
    );
}

/// The fixture's `limits` table: one row states another timeout than the code, one row the
/// code no longer has, one row is missing, and one has no prose.
fn fixture_table() -> Owned {
    Owned::new(
        "limits",
        &["tool", "timeout", "what it does"],
        1,
        Order::Page,
        vec![
            ("search".to_owned(), vec!["12 s".to_owned()]),
            ("ask".to_owned(), vec!["5 s".to_owned()]),
            ("new_tool".to_owned(), vec!["1 s".to_owned()]),
        ],
    )
}

#[test]
fn a_wrong_generated_table_is_reported_by_row_and_rewritten() {
    let page = include_str!("../fixtures/wrong-generated.md");
    let table = fixture_table();
    let checked = table.regenerate("wrong-generated.md", page);
    let problems = checked.problems.join("\n");
    for expected in [
        "row `search` says | `search` | 10 s | Finds flights. |, the code | `search` | 12 s | Finds flights. |",
        "row `gone` is not in the code",
        "no row `new_tool`, which the code has",
        "row `new_tool` has no text in column \"what it does\"",
    ] {
        assert!(
            problems.contains(expected),
            "{expected:?} not in:\n{problems}"
        );
    }
    // Written, the table is the code's, the prose kept, the text around it untouched.
    let written = checked.text;
    assert!(written.contains("| `search` | 12 s | Finds flights. |"));
    assert!(written.contains("| `ask` | 5 s | Answers from the model. |"));
    assert!(!written.contains("`gone`"));
    assert!(written.starts_with("# A page\n") && written.ends_with("Text after.\n"));
    let again = table.regenerate("wrong-generated.md", &written);
    assert_eq!(again.text, written, "a second run changes nothing");
    assert_eq!(
        again.problems,
        vec![
            "wrong-generated.md: `limits` table: row `new_tool` has no text in column \"what it does\": write it"
                .to_owned()
        ]
    );
}
