//! Figures whose code changed after they were measured. Each row of docs/measurements.md
//! names its command and the commit it ran at ("at `abc1234`"); the page's "What each bench
//! measures" table names the paths each command exercises. A row whose paths have commits
//! after its own is flagged: its figure may no longer hold.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::table;

/// The page that owns the figures.
pub const PAGE: &str = "docs/measurements.md";

const FIGURES: &[&str] = &["what", "figure", "command", "measured"];
const BENCHES: &[&str] = &["command", "code it measures"];

/// A row of the figures' tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    pub what: String,
    pub command: String,
    pub commit: Option<String>,
    /// The row says so itself ("needs measuring again").
    pub stale_already: bool,
}

/// The backticked texts of a cell, in order.
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The first code span of a cell, or the cell.
fn first_code(cell: &str) -> String {
    code_spans(cell)
        .into_iter()
        .next()
        .unwrap_or_else(|| cell.trim().to_owned())
}

/// The commit a "measured" cell names: "2026-11-29, at `9ae47b5`" or "at 9ae47b5".
fn commit_of(cell: &str) -> Option<String> {
    let after = cell.rsplit_once("at ")?.1;
    let hash: String = after
        .trim_matches(|c: char| c == '`' || c.is_whitespace())
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (hash.len() >= 7).then_some(hash)
}

/// Every figure of the page.
pub fn figures(markdown: &str) -> Vec<Figure> {
    table(markdown, FIGURES)
        .into_iter()
        .map(|row| Figure {
            what: row[0].clone(),
            command: first_code(&row[2]),
            commit: commit_of(&row[3]),
            stale_already: row[1].contains("needs measuring again"),
        })
        .collect()
}

/// Command → the paths it measures.
pub fn bench_paths(markdown: &str) -> BTreeMap<String, Vec<String>> {
    table(markdown, BENCHES)
        .into_iter()
        .map(|row| (first_code(&row[0]), code_spans(&row[1])))
        .collect()
}

/// Rows of the page that need a second look: no commit, no paths for their command, or
/// commits to their paths after theirs (from `git log` in `root`).
pub fn stale_figures(markdown: &str, root: &Path) -> Vec<String> {
    let paths = bench_paths(markdown);
    let mut notes = Vec::new();
    for figure in figures(markdown) {
        let what: String = figure.what.chars().take(60).collect();
        if figure.stale_already {
            notes.push(format!("\"{what}\": marked as needing measuring again"));
            continue;
        }
        let Some(commit) = &figure.commit else {
            notes.push(format!("\"{what}\": names no commit"));
            continue;
        };
        let Some(measured) = paths.get(&figure.command) else {
            notes.push(format!(
                "\"{what}\": its command is not in \"What each bench measures\""
            ));
            continue;
        };
        match commits_since(root, commit, measured) {
            Ok(0) => {}
            Ok(n) => notes.push(format!(
                "\"{what}\" (at {commit}): {n} commits changed {} since",
                measured.join(", ")
            )),
            Err(e) => notes.push(format!("\"{what}\": {e}")),
        }
    }
    notes
}

fn commits_since(root: &Path, commit: &str, paths: &[String]) -> Result<usize, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-list", "--count", &format!("{commit}..HEAD"), "--"])
        .args(paths)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git cannot count commits since {commit}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("git's count: {e}"))
}
