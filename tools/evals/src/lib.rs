//! Evals of tool calling against a real model (`make eval`, docs/evals.md): a dataset of
//! cases in English and German ([`case`]), run through the real runtime ([`run`]), scored
//! exactly and explained per case ([`score`]), reported as a table per category, a JSON file
//! and the regressions since the previous run ([`report`]).

#![deny(missing_docs)]

pub mod case;
pub mod cli;
pub mod dates;
pub mod report;
pub mod run;
pub mod score;

use std::path::{Path, PathBuf};

use futures::StreamExt;

use crate::case::Case;
use crate::report::{CaseResult, Run};
use crate::run::Runner;

/// What can go wrong in a run (a case's model failure is a result, not an error).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The dataset does not load or breaks its rules.
    #[error("dataset: {0}")]
    Dataset(String),
    /// The runtime could not be built or failed (stores, configuration).
    #[error("runtime: {0}")]
    Runtime(#[from] shared::Error),
    /// A report could not be read or written.
    #[error("report {path}: {message}")]
    Report {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs `cases` on `runner`, `parallel` at a time, in dataset order in the result;
/// `progress` hears of each case as it ends.
pub async fn run_all(
    runner: &Runner,
    cases: &[Case],
    parallel: usize,
    mut progress: impl FnMut(usize, &CaseResult),
) -> Result<Run> {
    let started_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut results = futures::stream::iter(cases)
        .map(|case| async move {
            let observed = runner.run(case).await?;
            let verdict = score::score(case, &observed, runner.today);
            Ok::<_, Error>(CaseResult::new(case, observed, verdict))
        })
        .buffered(parallel.max(1));
    let mut done = Vec::with_capacity(cases.len());
    while let Some(result) = results.next().await {
        let result = result?;
        progress(done.len() + 1, &result);
        done.push(result);
    }
    Ok(Run {
        model: runner.model.clone(),
        stand_in: runner.stand_in,
        today: runner.today.to_string(),
        started_at,
        cases: done,
    })
}

/// Writes `run` as pretty JSON to `path` (its directory made when missing).
pub fn write_run(run: &Run, path: &Path) -> Result<()> {
    let failed = |message: String| Error::Report {
        path: path.display().to_string(),
        message,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
    }
    let text = serde_json::to_string_pretty(run).map_err(|e| failed(e.to_string()))?;
    std::fs::write(path, text + "\n").map_err(|e| failed(e.to_string()))
}

/// Reads a run written by [`write_run`].
pub fn read_run(path: &Path) -> Result<Run> {
    let failed = |message: String| Error::Report {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| failed(e.to_string()))
}

/// The case files' JSON Schema as committed (`tools/evals/case.schema.json`).
pub fn schema_text() -> String {
    serde_json::to_string_pretty(&case::schema()).unwrap_or_default() + "\n"
}

/// The dataset shipped in the repository.
pub fn dataset_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}
