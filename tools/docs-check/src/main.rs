//! `docs-check check FILE...`: links and their fragments resolve, shell blocks are tagged and
//! parse, quoted code is the repository's, and each fact is written in one page only (run
//! from the repository root, with `docs/configuration.md` and `docs/api.md` among the files).
//! `docs-check run FILE...`: runs every ```` ```sh ```` block, in order, exactly as written
//! (each in `bash -euo pipefail` from the repository root); stops at the first failure.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use docs_check::anchors::broken_anchors;
use docs_check::facts::{
    API_PAGE, SETTINGS_PAGE, first_cells, foreign_rows, repeated_sentences, restated_defaults,
};
use docs_check::measurements;
use docs_check::{
    Block, blocks, broken_links, config_rows, shell_blocks, stale_quotes, untagged_shell_blocks,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, files) = match args.split_first() {
        Some((command, files)) if !files.is_empty() => (command.as_str(), files),
        _ => return usage(),
    };
    let result = match command {
        "check" => check(files),
        "run" => run(files),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(problems) => {
            for problem in problems {
                eprintln!("docs-check: {problem}");
            }
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: docs-check check|run FILE.md...");
    ExitCode::from(2)
}

fn read(file: &str) -> Result<String, Vec<String>> {
    std::fs::read_to_string(file).map_err(|e| vec![format!("{file}: {e}")])
}

fn check(files: &[String]) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut pages = Vec::new();
    for file in files {
        pages.push((file.trim_start_matches("./").to_owned(), read(file)?));
    }
    problems.extend(one_fact_one_place(&pages));
    for (file, text) in &pages {
        let dir = Path::new(file).parent().unwrap_or(Path::new("."));
        let checked = blocks(text);
        let found = broken_links(text, dir)
            .into_iter()
            .chain(broken_anchors(text, dir))
            .chain(untagged_shell_blocks(text))
            .chain(stale_quotes(text, Path::new(".")))
            .chain(
                checked
                    .iter()
                    .filter(|b| b.runs_in_ci() || b.needs_aws())
                    .filter_map(syntax_error),
            );
        problems.extend(found.map(|p| format!("{file}: {p}")));
    }
    let blocks: usize = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .map(|t| blocks(&t).iter().filter(|b| b.is_shell()).count())
        .sum();
    // Not a failure: a figure whose code changed may still hold, but it is listed.
    if let Some((_, text)) = pages.iter().find(|(p, _)| p == measurements::PAGE) {
        for note in measurements::stale_figures(text, Path::new(".")) {
            eprintln!("docs-check: note: {}: {note}", measurements::PAGE);
        }
    }
    eprintln!(
        "docs-check: {} files, {blocks} shell blocks, {} problems",
        files.len(),
        problems.len()
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Defaults, routes, error codes and sentences written in more than one page. The owning
/// pages must be among `pages`: their tables say what the facts are.
fn one_fact_one_place(pages: &[(String, String)]) -> Vec<String> {
    let page = |name: &str| {
        pages
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, t)| t.as_str())
    };
    let (Some(settings_page), Some(api_page)) = (page(SETTINGS_PAGE), page(API_PAGE)) else {
        return vec![format!(
            "check needs {SETTINGS_PAGE} and {API_PAGE} among its files: they own the facts"
        )];
    };
    let mut defaults = config_rows(settings_page, "variable");
    defaults.extend(config_rows(settings_page, "parameter"));
    let settings = defaults.keys().cloned().collect();
    let codes = first_cells(api_page, "code");
    let mut problems = repeated_sentences(pages);
    for (name, text) in pages {
        let restated = if name == SETTINGS_PAGE {
            Vec::new()
        } else {
            restated_defaults(text, &defaults)
        };
        let found = restated
            .into_iter()
            .chain(foreign_rows(text, name, &codes, &settings));
        problems.extend(found.map(|p| format!("{name}: {p}")));
    }
    problems
}

/// `bash -n` on the block.
fn syntax_error(block: &Block) -> Option<String> {
    let output = Command::new("bash")
        .args(["-n", "-c", &block.body])
        .output();
    match output {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "line {}: the shell block does not parse: {}",
            block.line,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run bash: {e}")),
    }
}

fn run(files: &[String]) -> Result<(), Vec<String>> {
    for file in files {
        let text = read(file)?;
        for block in shell_blocks(&text) {
            println!(
                "\n\x1b[1;36m==> {file}:{}\x1b[0m\n{}",
                block.line,
                block.body.trim_end()
            );
            let started = Instant::now();
            let status = Command::new("bash")
                .args(["-euo", "pipefail", "-c", &block.body])
                .status()
                .map_err(|e| vec![format!("cannot run bash: {e}")])?;
            // CI's closing table has one row per run of this; the blocks' own times are here.
            println!(
                "\x1b[1;36m<== {file}:{} took {:.0} s\x1b[0m",
                block.line,
                started.elapsed().as_secs_f64()
            );
            if !status.success() {
                return Err(vec![format!(
                    "{file}:{}: the shell block failed ({status})",
                    block.line
                )]);
            }
        }
    }
    Ok(())
}
