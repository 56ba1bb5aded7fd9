//! Checks that keep the README and `docs/` true, run by CI:
//!
//! - relative links point at files that exist;
//! - every fenced shell block is tagged: ```` ```sh ```` blocks are run by CI exactly as
//!   written ([`shell_blocks`], `docs-check run`), ```` ```sh aws ```` blocks need an AWS
//!   account and are only syntax-checked;
//! - each default in `docs/configuration.md` matches the code ([`config_rows`] against
//!   `shared::config::Env::recording`; see `tests/integration/configuration.rs`) and each template
//!   parameter's default matches `template.yaml` ([`template_defaults`]);
//! - link fragments name a heading of their page ([`anchors`]);
//! - one fact, one place: defaults, routes, error codes and long sentences are written in one
//!   page only ([`facts`]).

pub mod anchors;
pub mod facts;
pub mod generate;
pub mod measurements;

use std::collections::BTreeMap;
use std::path::Path;

use shared::config::VarDefault;

/// A fenced code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The info string's first word (`sh`, `text`, `rust`, ...), empty when none.
    pub lang: String,
    /// The info string's other words (`aws`).
    pub tags: Vec<String>,
    pub body: String,
    /// `<!-- file: PATH -->` on the line before the fence: the block is quoted from PATH.
    pub quoted_from: Option<String>,
}

impl Block {
    pub fn is_shell(&self) -> bool {
        matches!(self.lang.as_str(), "sh" | "bash" | "shell" | "console")
    }

    /// A shell block CI runs as written.
    pub fn runs_in_ci(&self) -> bool {
        self.lang == "sh" && self.tags.is_empty()
    }

    /// A shell block that needs an AWS account.
    pub fn needs_aws(&self) -> bool {
        self.lang == "sh" && self.tags.iter().any(|t| t == "aws")
    }
}

/// The fenced blocks of a Markdown text, in order.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, Block)> = None;
    let mut previous = "";
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        let quoted_from = previous
            .trim()
            .strip_prefix("<!-- file:")
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(|path| path.trim().to_owned());
        previous = line;
        match open.take() {
            None => {
                let fence: String = trimmed.chars().take_while(|c| *c == '`').collect();
                if fence.len() >= 3 {
                    let mut words = trimmed[fence.len()..].split_whitespace();
                    let lang = words.next().unwrap_or_default().to_owned();
                    let tags = words.map(str::to_owned).collect();
                    let block = Block {
                        line: i + 1,
                        lang,
                        tags,
                        body: String::new(),
                        quoted_from,
                    };
                    open = Some((i, fence, block));
                }
            }
            Some((start, fence, mut block)) => {
                if trimmed.starts_with(&fence) && trimmed.trim_matches('`').is_empty() {
                    blocks.push(block);
                } else {
                    block.body.push_str(line);
                    block.body.push('\n');
                    open = Some((start, fence, block));
                }
            }
        }
    }
    blocks
}

/// The shell blocks CI runs, in order.
pub fn shell_blocks(markdown: &str) -> Vec<Block> {
    blocks(markdown)
        .into_iter()
        .filter(Block::runs_in_ci)
        .collect()
}

/// Problems with the blocks' tags: a shell block that is neither run nor marked as needing
/// AWS is a command nobody checks.
pub fn untagged_shell_blocks(markdown: &str) -> Vec<String> {
    blocks(markdown)
        .iter()
        .filter(|b| b.is_shell() && !b.runs_in_ci() && !b.needs_aws())
        .map(|b| {
            format!(
                "line {}: shell block `{} {}` is neither ```sh (run by CI) nor ```sh aws",
                b.line,
                b.lang,
                b.tags.join(" ")
            )
        })
        .collect()
}

/// Quoted blocks whose lines do not all stand, in order, in the file they name (blank lines
/// and indentation aside): the code shown in a guide must be the repository's code.
pub fn stale_quotes(markdown: &str, root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for block in blocks(markdown) {
        let Some(path) = &block.quoted_from else {
            continue;
        };
        let Ok(source) = std::fs::read_to_string(root.join(path)) else {
            problems.push(format!(
                "line {}: quotes {path}, which does not exist",
                block.line
            ));
            continue;
        };
        let mut lines = source.lines().map(str::trim).filter(|l| !l.is_empty());
        let missing = block
            .body
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .find(|wanted| !lines.any(|l| l == *wanted));
        if let Some(line) = missing {
            problems.push(format!(
                "line {}: `{line}` is not in {path} (or not in this order)",
                block.line
            ));
        }
    }
    problems
}

/// The trimmed cells of a table line (`| a | b |` → `a`, `b`).
pub fn cells(line: &str) -> Vec<&str> {
    line.trim()
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect()
}

/// Relative link targets outside code blocks, with their lines: `[text](target)`.
pub fn relative_links(markdown: &str) -> Vec<(usize, String)> {
    link_targets(markdown)
        .into_iter()
        .filter(|(_, target)| {
            let is_external = target.contains("://") || target.starts_with("mailto:");
            !is_external && !target.starts_with('#')
        })
        .collect()
}

/// Every link target outside code blocks, with its line: `[text](target)`.
pub fn link_targets(markdown: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_code = false;
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].trim();
            let target = target.split_whitespace().next().unwrap_or_default();
            if !target.is_empty() {
                links.push((i + 1, target.to_owned()));
            }
            rest = &rest[end..];
        }
    }
    links
}

/// Relative links of `markdown` (a file in `dir`) whose file does not exist.
pub fn broken_links(markdown: &str, dir: &Path) -> Vec<String> {
    relative_links(markdown)
        .into_iter()
        .filter(|(_, target)| {
            let path = target.split('#').next().unwrap_or_default();
            !dir.join(path).exists()
        })
        .map(|(line, target)| format!("line {line}: broken link to {target}"))
        .collect()
}

/// The rows of every table whose header starts with `| <first> | default |`: name → the
/// documented default (`required`, `unset`, or a value in backticks).
pub fn config_rows(markdown: &str, first: &str) -> BTreeMap<String, VarDefault> {
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in markdown.lines() {
        let cells = cells(line);
        if !line.trim_start().starts_with('|') {
            in_table = false;
            continue;
        }
        if cells.len() >= 2 && cells[0] == first && cells[1] == "default" {
            in_table = true;
            continue;
        }
        if !in_table || cells.len() < 2 || cells[0].starts_with("---") {
            continue;
        }
        let name = cells[0].trim_matches('`').to_owned();
        let default = match cells[1] {
            "required" => VarDefault::Required,
            "unset" => VarDefault::Unset,
            value => VarDefault::Value(value.trim_matches('`').to_owned()),
        };
        rows.insert(name, default);
    }
    rows
}

/// A default as the settings tables write it: `required`, `unset` or the value in backticks.
pub fn show_default(default: &VarDefault) -> String {
    match default {
        VarDefault::Required => "required".into(),
        VarDefault::Unset => "unset".into(),
        VarDefault::Value(v) => format!("`{v}`"),
    }
}

/// The `Parameters` of a SAM/CloudFormation template and their defaults, read line by line
/// (the template's `!Ref` tags are not plain YAML).
pub fn template_defaults(template: &str) -> BTreeMap<String, VarDefault> {
    let mut params = BTreeMap::new();
    let mut in_params = false;
    let mut current: Option<String> = None;
    for line in template.lines() {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            in_params = line.trim_end() == "Parameters:";
            current = None;
            continue;
        }
        if !in_params || line.trim_start().starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let text = line.trim();
        if indent == 2 && text.ends_with(':') {
            let name = text.trim_end_matches(':').to_owned();
            params.insert(name.clone(), VarDefault::Required);
            current = Some(name);
        } else if let (Some(name), Some(value)) = (&current, text.strip_prefix("Default:")) {
            let value = value.trim().trim_matches('"').trim_matches('\'').to_owned();
            params.insert(name.clone(), VarDefault::Value(value));
        }
    }
    params
}

/// The rows of every table whose header is `header`, as trimmed cells.
pub fn table(markdown: &str, header: &[&str]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in markdown.lines() {
        if !line.trim_start().starts_with('|') {
            in_table = false;
            continue;
        }
        let cells = cells(line);
        if cells == header {
            in_table = true;
        } else if in_table && !cells[0].starts_with("---") {
            rows.push(cells.into_iter().map(str::to_owned).collect());
        }
    }
    rows
}

/// Rows of a limits table (first cell → second cell) that do not state what the code says:
/// each `(row, texts)` expectation needs its row, and each text in that row's limit cell.
pub fn limit_mismatches(rows: &[Vec<String>], expected: &[(&str, Vec<String>)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (what, texts) in expected {
        let Some(row) = rows
            .iter()
            .find(|row| row.first().is_some_and(|c| c == what))
        else {
            problems.push(format!("no row `{what}`"));
            continue;
        };
        let limit = row.get(1).map(String::as_str).unwrap_or_default();
        for text in texts.iter().filter(|text| !limit.contains(text.as_str())) {
            problems.push(format!(
                "`{what}`: the code says {text:?}, the row says {limit:?}"
            ));
        }
    }
    problems
}
