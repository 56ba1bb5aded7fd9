//! `evals`: the command `make eval` runs.

use std::path::PathBuf;

use clap::Parser;

use crate::case::{self, Case};
use crate::report;
use crate::run::{Model, Runner};
use crate::{Result, read_run, run_all, write_run};

/// Runs the tool-calling evals against the configured model (or the offline stand-in) and
/// reports a table per category, a JSON file and the changes since the previous run.
#[derive(Debug, Parser)]
#[command(name = "evals")]
pub struct Args {
    /// The dataset: a directory of case files.
    #[arg(long, default_value_os_t = crate::dataset_dir())]
    pub cases: PathBuf,
    /// Only cases of this category or whose id starts with this (repeatable).
    #[arg(long)]
    pub only: Vec<String>,
    /// At most this many cases (after `--only`).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Cases run at a time.
    #[arg(long, default_value_t = 4)]
    pub parallel: usize,
    /// Where the runs are kept: each as `run-<time>.json`, the newest also as `latest.json`.
    #[arg(long, default_value = ".local/evals")]
    pub dir: PathBuf,
    /// The run to compare with; default: `<dir>/latest.json` when there is one.
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// Only load and check the dataset.
    #[arg(long)]
    pub check_dataset: bool,
    /// Write the case files' JSON Schema to `tools/evals/case.schema.json` and stop.
    #[arg(long)]
    pub write_schema: bool,
}

/// Picks the cases `args` asks for.
pub fn select(cases: Vec<Case>, args: &Args) -> Vec<Case> {
    let picked = cases.into_iter().filter(|c| {
        args.only.is_empty()
            || args
                .only
                .iter()
                .any(|o| c.category.as_str() == o || c.id.starts_with(o.as_str()))
    });
    match args.limit {
        Some(n) => picked.take(n).collect(),
        None => picked.collect(),
    }
}

/// Runs the command.
pub async fn main(args: Args) -> Result<()> {
    if args.write_schema {
        let path = crate::dataset_dir().with_file_name("case.schema.json");
        std::fs::write(&path, crate::schema_text()).map_err(|e| crate::Error::Report {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        println!("wrote {}", path.display());
        return Ok(());
    }
    let cases = select(case::load_dir(&args.cases)?, &args);
    if args.check_dataset {
        println!("{} cases, the dataset checks out", cases.len());
        return Ok(());
    }
    let vars: Vec<(String, String)> = std::env::vars().collect();
    let model = Model::from_env(&shared::config::Env::from_pairs(vars.clone()));
    let runner = Runner::start(vars, model).await?;
    eprintln!(
        "running {} cases against {}{}",
        cases.len(),
        runner.model,
        if runner.stand_in {
            " (offline stand-in)"
        } else {
            ""
        }
    );
    let total = cases.len();
    let run = run_all(&runner, &cases, args.parallel, |n, result| {
        let mark = if result.verdict.passed {
            "ok  "
        } else {
            "FAIL"
        };
        eprintln!("[{n:>3}/{total}] {mark} {}", result.id);
    })
    .await?;
    println!("{}", run.render());
    let previous = args
        .compare
        .clone()
        .or_else(|| Some(args.dir.join("latest.json")).filter(|p| p.exists()));
    if let Some(path) = previous {
        let before = read_run(&path)?;
        println!("{}", report::compare(&before, &run).render(&before, &run));
    }
    let stamp = run.started_at.replace(':', "-");
    let file = args.dir.join(format!("run-{stamp}.json"));
    write_run(&run, &file)?;
    write_run(&run, &args.dir.join("latest.json"))?;
    println!("written: {} (and latest.json beside it)", file.display());
    Ok(())
}
