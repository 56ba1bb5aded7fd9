//! The dataset: cases in TOML files (`tools/evals/cases/*.toml`, each a list of
//! `[[cases]]`), their JSON Schema (`tools/evals/case.schema.json`) derived from these types.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, Result};

/// What a case tests; the report has a row per category.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Which tool a request needs (award value, memory, general knowledge).
    ToolChoice,
    /// The flight search's arguments: airports from city names, dates relative to today,
    /// cabins, passengers, programmes, flexible windows, return legs.
    Arguments,
    /// Small talk and requests that need no tool.
    NoTool,
    /// Questions the knowledge base answers.
    Knowledge,
    /// Requests that belong to another agent profile.
    Handoff,
    /// Tools that wait for the user's approval (fare alerts).
    Approval,
    /// Messages that try to steer the model into a tool call it must not make.
    Injection,
}

impl Category {
    /// Its name in the dataset and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolChoice => "tool_choice",
            Self::Arguments => "arguments",
            Self::NoTool => "no_tool",
            Self::Knowledge => "knowledge",
            Self::Handoff => "handoff",
            Self::Approval => "approval",
            Self::Injection => "injection",
        }
    }
}

/// The language a case's message is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English.
    En,
    /// German.
    De,
}

/// One message and what the model's first step must do with it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique across the dataset; comparisons between runs go by it.
    pub id: String,
    /// What it tests.
    pub category: Category,
    /// The message's language.
    pub lang: Lang,
    /// The agent profile that answers (`config/agents.toml`); default: the default profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The user's message, as sent.
    pub message: String,
    /// What the first model step must do.
    pub expect: Expect,
}

/// What the first model step must do: call a tool (with these arguments) or none, and
/// never call some tools.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The tool it must call: a name, `none` for no tool call, or `{ any_of = [...] }`.
    /// Absent: any behaviour but the `never` tools passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ExpectedTool>,
    /// Arguments of that call, by name; a dotted name reaches into an object
    /// (`"max_price.amount"`). Arguments not named are not checked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, ArgMatcher>,
    /// Tools it must not call (injection cases).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never: Vec<String>,
}

/// The tool a case expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExpectedTool {
    /// One of these tools.
    AnyOf {
        /// The tools that pass.
        any_of: Vec<String>,
    },
    /// This tool; `none`: no tool call.
    Named(String),
}

/// The word for "no tool call" in [`ExpectedTool::Named`].
pub const NO_TOOL: &str = "none";

impl ExpectedTool {
    /// Whether a call of `name` is the expected one.
    pub fn accepts(&self, name: &str) -> bool {
        match self {
            Self::Named(n) => n == name,
            Self::AnyOf { any_of } => any_of.iter().any(|n| n == name),
        }
    }

    /// Whether it expects no tool call.
    pub fn is_none(&self) -> bool {
        matches!(self, Self::Named(n) if n == NO_TOOL)
    }
}

impl std::fmt::Display for ExpectedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Named(n) => f.write_str(n),
            Self::AnyOf { any_of } => write!(f, "one of {}", any_of.join(", ")),
        }
    }
}

/// How one argument is checked. Strings compare without regard to case, spaces, `-` and
/// `_` ("Premium Economy" is `PREMIUM_ECONOMY`); numbers by value; lists as sets (order is
/// free).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ArgMatcher {
    /// A date, as a relative expression ([`crate::dates`]): `+14d`, `fri`, `fri+7`, `03-15`,
    /// alternatives with `|`.
    Date {
        /// The expression.
        date: String,
    },
    /// Any of these values.
    AnyOf {
        /// The values that pass.
        any_of: Vec<Value>,
    },
    /// A text that contains each of these (case-insensitive), or a list with an item that
    /// contains each.
    Contains {
        /// The pieces that must appear.
        contains: Vec<String>,
    },
    /// Absent, null, or this value (for arguments with a default, e.g. `pax` 1).
    OrAbsent {
        /// The value that passes besides absence.
        or_absent: Value,
    },
    /// Absent or null.
    Absent {
        /// Always `true`.
        absent: bool,
    },
    /// Exactly this value (as compared above).
    Exact(Value),
}

/// A file of cases.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The cases, as `[[cases]]` tables.
    pub cases: Vec<Case>,
}

/// Reads every `*.toml` file of `dir` (sorted by name) and checks the dataset: ids unique,
/// dates parse, no arguments without an expected tool.
pub fn load_dir(dir: &Path) -> Result<Vec<Case>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::Dataset(format!("{}: {e}", dir.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Error::Dataset(format!("{}: {e}", file.display())))?;
        let parsed: CaseFile = toml::from_str(&text)
            .map_err(|e| Error::Dataset(format!("{}: {e}", file.display())))?;
        cases.extend(parsed.cases);
    }
    check(&cases)?;
    Ok(cases)
}

/// The dataset's own rules.
pub fn check(cases: &[Case]) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for case in cases {
        if !seen.insert(case.id.as_str()) {
            return Err(Error::Dataset(format!(
                "case id `{}` appears twice",
                case.id
            )));
        }
        if case.message.trim().is_empty() {
            return Err(Error::Dataset(format!("case `{}` has no message", case.id)));
        }
        let calls_a_tool = case.expect.tool.as_ref().is_some_and(|t| !t.is_none());
        if !case.expect.args.is_empty() && !calls_a_tool {
            return Err(Error::Dataset(format!(
                "case `{}` checks arguments but expects no tool call",
                case.id
            )));
        }
        if case.expect.tool.is_none() && case.expect.never.is_empty() {
            return Err(Error::Dataset(format!(
                "case `{}` expects nothing: give `tool` or `never`",
                case.id
            )));
        }
        for (name, matcher) in &case.expect.args {
            if let ArgMatcher::Date { date } = matcher {
                crate::dates::parse(date).map_err(|e| {
                    Error::Dataset(format!("case `{}`, argument {name}: {e}", case.id))
                })?;
            }
        }
    }
    Ok(())
}

/// The JSON Schema of a case file, as committed in `tools/evals/case.schema.json`.
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(CaseFile)).unwrap_or(Value::Null)
}
