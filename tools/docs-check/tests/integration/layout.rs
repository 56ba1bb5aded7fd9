//! architecture.md's crate map and file map against the workspace: every crate has a row in
//! the crate map and every row names a crate; every path of the file map exists, and so does
//! every file or folder its rows name inside a mapped folder. A fixture with wrong rows proves
//! both comparisons can fail.

use std::path::{Path, PathBuf};

use docs_check::table;

const ARCHITECTURE: &str = include_str!("../../../../docs/architecture.md");
const WRONG: &str = include_str!("../fixtures/wrong-layout.md");

const CRATES: &[&str] = &["crate", "what", "used by"];
const FILES: &[&str] = &["path", "what"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The backticked words of a cell.
fn quoted(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The workspace's member folders, globs (`functions/*`) expanded.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let list = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap();
    let mut members = Vec::new();
    for entry in list.split('"').skip(1).step_by(2) {
        match entry.strip_suffix("/*") {
            Some(parent) => {
                for dir in std::fs::read_dir(root.join(parent)).unwrap() {
                    let dir = dir.unwrap().path();
                    if dir.join("Cargo.toml").is_file() {
                        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                        members.push(format!("{parent}/{name}"));
                    }
                }
            }
            None => members.push(entry.to_owned()),
        }
    }
    members.sort();
    members
}

/// What is wrong with a crate map: members without a row, rows without a member. A row's
/// first backticked word is the crate's folder; `functions/*` covers every function.
fn crate_map_problems(markdown: &str, members: &[String]) -> Vec<String> {
    let rows: Vec<String> = table(markdown, CRATES)
        .iter()
        .filter_map(|row| quoted(&row[0]).first().map(|s| (*s).to_owned()))
        .collect();
    let covers = |row: &str, member: &str| match row.strip_suffix("/*") {
        Some(parent) => member.starts_with(&format!("{parent}/")),
        None => row == member,
    };
    let mut problems = Vec::new();
    for member in members {
        if !rows.iter().any(|row| covers(row, member)) {
            problems.push(format!("crate {member} has no row in the crate map"));
        }
    }
    for row in &rows {
        if !members.iter().any(|member| covers(row, member)) {
            problems.push(format!(
                "the crate map's row {row} is no crate of the workspace"
            ));
        }
    }
    problems
}

/// Whether `name` (a file or a folder ending in `/`) is somewhere under `dir`.
fn found_under(dir: &Path, name: &str) -> bool {
    let name = name.trim_end_matches('/');
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        entry.file_name() == name || (path.is_dir() && found_under(&path, name))
    })
}

/// What is wrong with a file map: paths that do not exist, and names of files or folders
/// (`x.rs`, `x/`) that a mapped folder's row names but the folder does not hold.
fn file_map_problems(markdown: &str, root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for row in table(markdown, FILES) {
        // Whole paths, and names beside the first one (`a/b.rs`, `c.rs`: `a/c.rs`).
        let paths: Vec<&str> = quoted(&row[0])
            .into_iter()
            .filter(|p| p.contains('/') && !p.contains(['*', '<']))
            .collect();
        let Some(first) = paths.first() else {
            continue;
        };
        let beside = Path::new(first.trim_end_matches('/'))
            .parent()
            .unwrap_or(Path::new(""));
        for path in &paths {
            let whole = path.trim_end_matches('/').contains('/');
            let path = if whole {
                PathBuf::from(path)
            } else {
                beside.join(path)
            };
            if !root.join(&path).exists() {
                problems.push(format!("the file map's {} does not exist", path.display()));
            }
        }
        // Names in the description, for a row of one folder.
        let [folder] = paths.as_slice() else {
            continue;
        };
        if !folder.ends_with('/') || !folder.trim_end_matches('/').contains('/') {
            continue;
        }
        for name in quoted(&row[1]) {
            let stem = name.strip_suffix('/').unwrap_or(name);
            let file_or_folder = name.ends_with(".rs") || name.ends_with(".md") || name != stem;
            let plain = !stem.is_empty() && !stem.contains(['/', ' ', '<', '*']);
            if file_or_folder && plain && !found_under(&root.join(folder), name) {
                problems.push(format!("the file map's {folder} holds no {name}"));
            }
        }
    }
    problems
}

#[test]
fn the_crate_map_lists_every_crate_of_the_workspace() {
    let root = root();
    let problems = crate_map_problems(ARCHITECTURE, &members(&root));
    assert!(problems.is_empty(), "docs/architecture.md: {problems:#?}");
}

#[test]
fn every_path_of_the_file_map_exists() {
    let problems = file_map_problems(ARCHITECTURE, &root());
    assert!(problems.is_empty(), "docs/architecture.md: {problems:#?}");
}

#[test]
fn wrong_maps_are_reported() {
    let root = root();
    let crates = crate_map_problems(WRONG, &members(&root));
    assert!(crates.contains(&"crate agent has no row in the crate map".to_owned()));
    assert!(
        crates.contains(
            &"the crate map's row shared/nowhere is no crate of the workspace".to_owned()
        )
    );
    let files = file_map_problems(WRONG, &root);
    assert_eq!(
        files,
        [
            "the file map's shared/domain/src/nowhere.rs does not exist",
            "the file map's agent/src/turn/ holds no gone.rs",
        ]
    );
}
