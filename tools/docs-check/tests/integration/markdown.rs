//! The Markdown checks on small texts and on a fixture with known problems.

use std::path::Path;

use docs_check::{
    blocks, broken_links, config_rows, shell_blocks, stale_quotes, template_defaults,
    untagged_shell_blocks,
};
use shared::config::VarDefault;

const FIXTURE: &str = include_str!("../fixtures/broken.md");

#[test]
fn blocks_keep_their_language_tags_and_body() {
    let text = "intro\n```sh\nmake dev\n```\n\n```sh aws\nsam deploy\n```\n````text\n```sh\nnot a block\n```\n````\n";
    let found = blocks(text);
    assert_eq!(found.len(), 3);
    assert_eq!((found[0].line, found[0].lang.as_str()), (2, "sh"));
    assert_eq!(found[0].body, "make dev\n");
    assert!(found[1].needs_aws() && !found[1].runs_in_ci());
    assert_eq!(found[2].lang, "text");
    assert_eq!(
        shell_blocks(text).len(),
        1,
        "only the untagged sh block runs"
    );
}

#[test]
fn the_fixture_s_problems_are_all_found() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let links = broken_links(FIXTURE, &dir);
    assert_eq!(links.len(), 1, "{links:?}");
    assert!(links[0].contains("missing.md"));
    let untagged = untagged_shell_blocks(FIXTURE);
    assert_eq!(untagged.len(), 1, "{untagged:?}");
    assert!(untagged[0].contains("bash"));
}

/// A deliberately broken row: the fixture documents `MAX_TOOL_STEPS` with a default the
/// code does not have, and leaves out a variable the code reads.
#[test]
fn a_wrong_documented_default_and_a_missing_row_are_reported() {
    let documented = config_rows(FIXTURE, "variable");
    assert_eq!(
        documented.get("MAX_TOOL_STEPS"),
        Some(&VarDefault::Value("5".into()))
    );
    assert_eq!(documented.get("CHATS_TABLE"), Some(&VarDefault::Required));
    assert_eq!(documented.get("AGENTS_FILE"), Some(&VarDefault::Unset));
}

#[test]
fn template_parameters_and_their_defaults() {
    let template = "AWSTemplateFormatVersion: '2010-09-09'\nParameters:\n  Stage:\n    Type: String\n    Default: dev\n  JwtIssuer:\n    Type: String\n  EmbeddingsBaseUrl:\n    Type: String\n    Default: \"\"\nResources:\n  Table:\n    Default: no\n";
    let params = template_defaults(template);
    assert_eq!(params.len(), 3);
    assert_eq!(params["Stage"], VarDefault::Value("dev".into()));
    assert_eq!(params["JwtIssuer"], VarDefault::Required);
    assert_eq!(
        params["EmbeddingsBaseUrl"],
        VarDefault::Value(String::new())
    );
}

#[test]
fn quoted_code_must_stand_in_its_file_in_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let good =
        "<!-- file: src/lib.rs -->\n```rust\npub struct Block {\n    pub line: usize,\n```\n";
    assert!(stale_quotes(good, root).is_empty());
    let reordered =
        "<!-- file: src/lib.rs -->\n```rust\n    pub line: usize,\npub struct Block {\n```\n";
    let problems = stale_quotes(reordered, root);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("pub struct Block {"));
    let missing = "<!-- file: src/nope.rs -->\n```rust\nfn x() {}\n```\n";
    assert!(stale_quotes(missing, root)[0].contains("does not exist"));
}

#[test]
fn figures_name_their_command_and_commit_and_are_flagged_when_their_code_changed() {
    use docs_check::measurements::{bench_paths, figures, stale_figures};
    // 9a79f48 is an ancestor of every later commit; docs/ changed after it, the page's own
    // bench table's paths below did too, `LICENSE-MIT` did not.
    let page = "\
| what | figure | command | measured |
| --- | --- | --- | --- |
| docs size | 148 KB | `wc -c docs/*.md` | 2026-12-01, at `9a79f48` |
| licence | 1 file | `ls LICENSE-MIT` | 2026-12-01, at `9a79f48` |
| old | needs measuring again | `ls` | 2026-11-01, at `9a79f48` |
| undated | 1 | `true` | 2026-11-01 |

| command | code it measures |
| --- | --- |
| `wc -c docs/*.md` | `docs` |
| `ls LICENSE-MIT` | `LICENSE-MIT` |
";
    let rows = figures(page);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].command, "wc -c docs/*.md");
    assert_eq!(rows[0].commit.as_deref(), Some("9a79f48"));
    assert_eq!(rows[3].commit, None);
    assert_eq!(bench_paths(page)["wc -c docs/*.md"], vec!["docs"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let notes = stale_figures(page, &root);
    assert!(
        notes[0].starts_with("\"docs size\" (at 9a79f48):")
            && notes[0].ends_with("changed docs since"),
        "{notes:?}"
    );
    assert_eq!(notes[1], "\"old\": marked as needing measuring again");
    assert_eq!(notes[2], "\"undated\": names no commit");
    assert_eq!(
        notes.len(),
        3,
        "the licence row's code did not change: {notes:?}"
    );
}
